//! pod's own HTTP proxy: the only way out for a call's processes under `[sandbox] network =
//! "proxy"`.
//!
//! Owns: the listener (on `127.0.0.1`, an ephemeral port, one per session; when calls run in a
//! network namespace, the same port inside it instead, and none on the machine's loopback:
//! [`Proxy::serve_inside`]), who may use it (a
//! call's [`Admission`]: a token in the proxy URL its processes get, sent back as
//! `Proxy-Authorization`; the token is void once the call ends, and its connections are
//! closed), reading a request head (at most [`MAX_HEAD`] bytes within [`HEAD_TIMEOUT`]),
//! `CONNECT host:port` tunnels (HTTPS, or anything over TCP), SOCKS5 `CONNECT` on the same port
//! (told apart by its first byte; username and password are the call's credentials), and plain `http://` requests in
//! absolute form (sent on with `Connection: close`, one request per connection), each decided
//! by the `network` rules ([`super::Net`]) and connected only to the checked addresses
//! ([`super::resolve`]), refusals as `403` with an `x-proxy-error` header and the reason as the
//! body, the bounds ([`MAX_CONNECTIONS`] at once, [`MAX_BYTES`] each way per connection), and
//! the record of what each call reached ([`Admission::summary`] for its result, and a
//! [`Report`] of each connection as it ends, or when the call ends for one still open, for
//! whoever runs the call to record).
//!
//! Must not touch: the rules (decided by the permission layer), the sandbox (which lets a
//! call's processes connect to [`Proxy::port`] and nowhere else), processes, the session log
//! (the runtime records the reports).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio_util::sync::CancellationToken;

use super::{Net, Refusal};
use crate::permission::{Asked, Settled};
use crate::protocol::{Action, Decision, RuleRef};

/// A connection the rules ask about, handed to whoever runs the call (the runtime settles it
/// through the normal approval round trip, attributed to the call): the decision, and where
/// the verdict goes: who settled it, and `Err` with the text saying why not.
#[derive(Debug)]
pub struct NetworkAsk {
    pub decision: Decision,
    pub answer: oneshot::Sender<(Option<Settled>, Result<(), String>)>,
}

/// Longest request head read (request line and headers).
pub const MAX_HEAD: usize = 32 * 1024;
/// How long a client may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections served at once per session; more are refused with `503`.
pub const MAX_CONNECTIONS: usize = 64;
/// Bytes forwarded in each direction of one connection before it is closed.
pub const MAX_BYTES: u64 = 4 << 30;
/// Entries kept per call in its record (later ones are counted).
pub const MAX_ENTRIES: usize = 200;

/// One connection a call asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The `network` subject (`host`, or `host:port`), or the raw target when it is refused
    /// as unreadable.
    pub subject: String,
    /// The port asked for (0 for an unreadable target).
    pub port: u16,
    /// The method of a plain `http://` request; `None` for a `CONNECT` tunnel.
    pub method: Option<String>,
    /// The rules' word (`allow` or `deny`, an ask settled), and who settled it (`None`: no
    /// rule was consulted).
    pub decision: Action,
    pub by: Option<Settled>,
    /// The rule that decided.
    pub rule: Option<RuleRef>,
    /// `None`: connected; else why not.
    pub refused: Option<Refusal>,
    /// A note on a connected entry (closed when the call ended).
    pub note: Option<String>,
    /// Bytes sent upstream and back.
    pub up: u64,
    pub down: u64,
}

/// What the proxy reports of a call as it goes, for the session log: each connection once it
/// ended (or when the call ended, for one still open), then how many were past
/// [`MAX_ENTRIES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Connection(Box<Entry>),
    Omitted(u64),
}

/// The live byte counts of an open connection.
#[derive(Debug, Default)]
struct Counts {
    up: AtomicU64,
    down: AtomicU64,
}

#[derive(Debug, Default)]
struct Record {
    entries: Vec<Entry>,
    more: usize,
    /// Connections still piping, by their index in `entries`.
    open: HashMap<usize, Arc<Counts>>,
    /// Set when the call ended: nothing more is reported.
    closed: bool,
}

#[derive(Debug)]
struct Call {
    call_id: String,
    record: Mutex<Record>,
    /// Cancelled when the call ends: its tunnels close.
    ended: CancellationToken,
    /// Where asks go; `None`: an ask is refused (`blocked-by-ask`).
    asks: Option<mpsc::Sender<NetworkAsk>>,
    /// Where finished connections are reported; `None`: only the summary keeps them.
    reports: Option<mpsc::UnboundedSender<Report>>,
}

impl Call {
    /// Records an entry: a refused one is reported at once; a connected one is open until
    /// [`Call::finish`] (its index and live counts returned). `None`: past [`MAX_ENTRIES`].
    fn push(&self, entry: Entry) -> Option<(usize, Arc<Counts>)> {
        let mut record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        if record.entries.len() >= MAX_ENTRIES {
            record.more += 1;
            return None;
        }
        let index = record.entries.len();
        let counts = Arc::new(Counts::default());
        if entry.refused.is_none() {
            record.open.insert(index, counts.clone());
        } else if !record.closed {
            self.report(Report::Connection(Box::new(entry.clone())));
        }
        record.entries.push(entry);
        Some((index, counts))
    }

    /// A connection ended: its counts are final, and it is reported (unless the call's end
    /// reported it already).
    fn finish(&self, index: usize) {
        let mut record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        let Some(counts) = record.open.remove(&index) else {
            return;
        };
        if let Some(e) = record.entries.get_mut(index) {
            e.up = counts.up.load(Ordering::Relaxed);
            e.down = counts.down.load(Ordering::Relaxed);
            self.report(Report::Connection(Box::new(e.clone())));
        }
    }

    /// The call ended: every connection still open is reported with what it moved so far,
    /// then the count past [`MAX_ENTRIES`]; nothing is reported after.
    fn close(&self) {
        let mut record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        if record.closed {
            return;
        }
        record.closed = true;
        let mut open: Vec<(usize, Arc<Counts>)> = record.open.drain().collect();
        open.sort_by_key(|(i, _)| *i);
        for (index, counts) in open {
            if let Some(e) = record.entries.get_mut(index) {
                e.up = counts.up.load(Ordering::Relaxed);
                e.down = counts.down.load(Ordering::Relaxed);
                e.note = Some("still open when the call ended, and closed then".into());
                self.report(Report::Connection(Box::new(e.clone())));
            }
        }
        if record.more > 0 {
            self.report(Report::Omitted(record.more as u64));
        }
    }

    fn report(&self, report: Report) {
        if let Some(tx) = &self.reports {
            // The receiver gone: the call's runner no longer records anything.
            let _ = tx.send(report);
        }
    }
}

#[derive(Debug)]
struct Shared {
    net: Arc<Net>,
    /// By the `Proxy-Authorization` value a call's processes send.
    calls: Mutex<HashMap<String, Arc<Call>>>,
    slots: Arc<Semaphore>,
}

/// The session's proxy. Dropping it stops the listener.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
    /// Stops the listener on the machine's own loopback (a child of `stop`).
    host_stop: CancellationToken,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Proxy {
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime.
    pub fn start(net: Arc<Net>) -> std::io::Result<Proxy> {
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        let addr = std_listener.local_addr()?;
        let proxy = Proxy {
            addr,
            shared: Arc::new(Shared {
                net,
                calls: Mutex::new(HashMap::new()),
                slots: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            }),
            stop: CancellationToken::new(),
            host_stop: CancellationToken::new(),
        };
        proxy.serve(std_listener, proxy.host_stop.clone())?;
        Ok(proxy)
    }

    /// Serves `listener` instead of the listener on the machine's loopback, until the proxy
    /// drops: the one bound on [`Proxy::port`] inside the calls' network namespace
    /// (`Sandbox::proxy_listener`), so the same URL reaches the proxy from there, and no other
    /// process of the machine can reach it (or fill its connection slots).
    pub fn serve_inside(&self, listener: std::net::TcpListener) -> std::io::Result<()> {
        self.serve(listener, self.stop.clone())?;
        self.host_stop.cancel();
        Ok(())
    }

    fn serve(
        &self,
        listener: std::net::TcpListener,
        stopped: CancellationToken,
    ) -> std::io::Result<()> {
        let runtime = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        listener.set_nonblocking(true)?;
        let stop = self.stop.clone();
        let serving = self.shared.clone();
        runtime.spawn(async move {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!("network proxy: cannot listen: {e}");
                    return;
                }
            };
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    () = stopped.cancelled() => return,
                    () = stop.cancelled() => return,
                };
                let Ok((stream, _)) = accepted else { continue };
                let shared = serving.clone();
                let stopped = stop.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        () = serve(stream, &shared) => {}
                        () = stopped.cancelled() => {}
                    }
                });
            }
        });
        Ok(())
    }

    /// The port a call's processes may connect to (the sandbox allows this one only).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Lets the processes of call `call_id` use the proxy until the admission drops; asks go
    /// to `asks`, and each connection, once it ended, to `reports` ([`Report`]).
    pub fn admit(
        &self,
        call_id: &str,
        asks: Option<mpsc::Sender<NetworkAsk>>,
        reports: Option<mpsc::UnboundedSender<Report>>,
    ) -> Admission {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let key = format!("Basic {}", base64(format!("pod:{token}").as_bytes()));
        let call = Arc::new(Call {
            call_id: call_id.to_string(),
            record: Mutex::new(Record::default()),
            ended: CancellationToken::new(),
            asks,
            reports,
        });
        self.shared
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), call.clone());
        Admission {
            shared: self.shared.clone(),
            key,
            url: format!("http://pod:{token}@{}", self.addr),
            call,
        }
    }
}

/// One call's use of the proxy: the environment its processes get, and what they reached.
#[derive(Debug)]
pub struct Admission {
    shared: Arc<Shared>,
    key: String,
    url: String,
    call: Arc<Call>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.shared
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
        self.call.ended.cancel();
        self.call.close();
    }
}

impl Admission {
    /// The variables that send a process's clients through the proxy (both cases: curl reads
    /// only `http_proxy` in lowercase): HTTP and HTTPS to its HTTP side, `ALL_PROXY` to its
    /// SOCKS5 side on the same port (`socks5h`: the client sends the name, pod resolves it),
    /// for what is not HTTP. `NO_PROXY` is empty: nothing goes around it.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let socks = self.url.replacen("http://", "socks5h://", 1);
        for (name, url) in [
            ("HTTP_PROXY", &self.url),
            ("HTTPS_PROXY", &self.url),
            ("ALL_PROXY", &socks),
            ("http_proxy", &self.url),
            ("https_proxy", &self.url),
            ("all_proxy", &socks),
        ] {
            out.push((name, url.clone()));
        }
        out.push(("NO_PROXY", String::new()));
        out.push(("no_proxy", String::new()));
        out
    }

    /// The `Proxy-Authorization` value the call's processes send (what the credentials in
    /// [`Admission::env`]'s URL amount to), for a client that sets the header itself.
    pub fn authorization(&self) -> &str {
        &self.key
    }

    /// What the call's processes asked the proxy for.
    pub fn entries(&self) -> Vec<Entry> {
        let record = self.call.record.lock().unwrap_or_else(|e| e.into_inner());
        record.entries.clone()
    }

    /// The record as lines for the tool result: each host reached or refused (and why), with
    /// bytes. `None` when the call used no network.
    pub fn summary(&self) -> Option<String> {
        let record = self.call.record.lock().unwrap_or_else(|e| e.into_inner());
        if record.entries.is_empty() {
            return None;
        }
        let mut out = String::from("[network, through pod's proxy]");
        for (i, e) in record.entries.iter().enumerate() {
            let method = e
                .method
                .as_deref()
                .map(|m| format!("{m} "))
                .unwrap_or_default();
            // A connection still open says what it moved so far.
            let (up, down) = match record.open.get(&i) {
                Some(c) => (c.up.load(Ordering::Relaxed), c.down.load(Ordering::Relaxed)),
                None => (e.up, e.down),
            };
            match &e.refused {
                None => out.push_str(&format!(
                    "\n  {method}{}: allowed ({up} bytes sent, {down} received)",
                    e.subject
                )),
                Some(why) => out.push_str(&format!(
                    "\n  {method}{}: {} ({})",
                    e.subject, why.text, why.code
                )),
            }
        }
        if record.more > 0 {
            out.push_str(&format!("\n  … and {} more connections", record.more));
        }
        Some(out)
    }
}

/// Standard base64 with padding (for the `Proxy-Authorization` value).
fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(TABLE[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A request head as read: method, target, headers (name, value), and what followed it.
struct Head {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    rest: Vec<u8>,
}

async fn read_head(stream: &mut TcpStream) -> Result<Head, Refusal> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| Refusal::new("bad-request", format!("reading the request: {e}")))?;
        if n == 0 {
            return Err(Refusal::new(
                "bad-request",
                "the client closed the connection",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let head = Head {
                    method: request.method.unwrap_or("").to_string(),
                    target: request.path.unwrap_or("").to_string(),
                    headers: request
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_string(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect(),
                    rest: buf[len..].to_vec(),
                };
                return Ok(head);
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(Refusal::new(
                    "limit",
                    format!("the request head is longer than {MAX_HEAD} bytes"),
                ))
            }
            Err(e) => {
                return Err(Refusal::new(
                    "bad-request",
                    format!("the request is not HTTP/1.x: {e}"),
                ))
            }
        }
    }
}

/// Writes a refusal: the status, `x-proxy-error`, the reason as the body.
async fn refuse(stream: &mut TcpStream, status: &str, refusal: &Refusal, extra: &str) {
    let body = format!("pod proxy: {}\n", refusal.text);
    let head = format!(
        "HTTP/1.1 {status}\r\nx-proxy-error: {}\r\n{extra}Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        refusal.code,
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// `host:port` of a CONNECT target (an IPv6 host in brackets).
fn authority(target: &str, default_port: u16) -> Option<(String, u16)> {
    let (host, port) = match target.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && (!h.contains(':') || h.ends_with(']')) => {
            (h, p.parse::<u16>().ok()?)
        }
        _ => (target, default_port),
    };
    Some((host.to_string(), port))
}

async fn serve(mut client: TcpStream, shared: &Shared) {
    let Ok(_slot) = shared.slots.clone().try_acquire_owned() else {
        let refusal = Refusal::new(
            "limit",
            format!("{MAX_CONNECTIONS} connections are open through the proxy already"),
        );
        refuse(&mut client, "503 Service Unavailable", &refusal, "").await;
        return;
    };
    // SOCKS5 opens with its version byte; an HTTP request with a method's first letter.
    let mut first = [0u8; 1];
    if let Ok(Ok(1)) = tokio::time::timeout(HEAD_TIMEOUT, client.peek(&mut first)).await {
        if first[0] == SOCKS_VERSION {
            return socks(client, shared).await;
        }
    }
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(head)) => head,
        Ok(Err(refusal)) => return refuse(&mut client, "400 Bad Request", &refusal, "").await,
        Err(_) => {
            let refusal = Refusal::new(
                "bad-request",
                format!("no request head within {} s", HEAD_TIMEOUT.as_secs()),
            );
            return refuse(&mut client, "408 Request Timeout", &refusal, "").await;
        }
    };
    let auth = head
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("proxy-authorization"))
        .map(|(_, v)| v.trim().to_string());
    let call = auth.and_then(|a| {
        shared
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&a)
            .cloned()
    });
    let Some(call) = call else {
        let refusal = Refusal::new(
            "proxy-auth-required",
            "this proxy serves the processes of a running tool call only (the credentials in \
             its HTTP_PROXY), and this request carries none that are current",
        );
        return refuse(
            &mut client,
            "407 Proxy Authentication Required",
            &refusal,
            "Proxy-Authenticate: Basic realm=\"pod\"\r\n",
        )
        .await;
    };
    let tunnel = head.method.eq_ignore_ascii_case("CONNECT");
    let target = if tunnel {
        authority(&head.target, 443).map(|(h, p)| (h, p, None))
    } else {
        url::Url::parse(&head.target)
            .ok()
            .filter(|u| u.scheme() == "http")
            .and_then(|u| {
                let (host, port) = super::url_host_port(&u).ok()?;
                let mut path = u.path().to_string();
                if let Some(q) = u.query() {
                    path.push('?');
                    path.push_str(q);
                }
                Some((host, port, Some(path)))
            })
    };
    let Some((host, port, path)) = target else {
        let refusal = Refusal::new(
            "bad-request",
            format!(
                "`{} {}` is neither `CONNECT host:port` nor a request for an absolute http:// URL",
                head.method.escape_debug(),
                head.target.escape_debug()
            ),
        );
        call.push(Entry {
            subject: head.target.escape_debug().to_string(),
            port: 0,
            method: (!tunnel).then(|| head.method.escape_debug().to_string()),
            decision: Action::Deny,
            by: None,
            rule: None,
            refused: Some(refusal.clone()),
            note: None,
            up: 0,
            down: 0,
        });
        return refuse(&mut client, "400 Bad Request", &refusal, "").await;
    };
    let method = (!tunnel).then(|| head.method.clone());
    let (mut upstream, open) = match open_upstream(shared, &call, &host, port, method).await {
        Ok(opened) => opened,
        Err(refusal) => {
            let status = match refusal.code {
                "connect-failed" | "resolve-failed" => "502 Bad Gateway",
                _ => "403 Forbidden",
            };
            return refuse(&mut client, status, &refusal, "").await;
        }
    };
    // However the connection ends (the call's end, the proxy stopping, an error on the way),
    // it is reported once.
    let _finish = Finish(&call, open.as_ref().map(|(i, _)| *i));
    let counts = open.map(|(_, c)| c).unwrap_or_default();
    let mut first = Vec::new();
    if tunnel {
        if client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
    } else {
        first.extend_from_slice(
            format!(
                "{} {} HTTP/1.1\r\n",
                head.method,
                path.unwrap_or_else(|| "/".into())
            )
            .as_bytes(),
        );
        // The host the rules decided is the one the server is told: a `Host` header naming
        // another (a virtual host behind the same address) is replaced, not passed on.
        let shown = if port == 80 {
            host.clone()
        } else {
            format!("{host}:{port}")
        };
        first.extend_from_slice(format!("Host: {shown}\r\n").as_bytes());
        for (name, value) in &head.headers {
            let lower = name.to_ascii_lowercase();
            if matches!(
                lower.as_str(),
                "proxy-authorization" | "proxy-connection" | "connection" | "keep-alive" | "host"
            ) {
                continue;
            }
            first.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        first.extend_from_slice(b"Connection: close\r\n\r\n");
    }
    first.extend_from_slice(&head.rest);
    counts.up.fetch_add(first.len() as u64, Ordering::Relaxed);
    if upstream.write_all(&first).await.is_err() {
        return;
    }
    tokio::select! {
        () = pipe(client, upstream, &counts) => {}
        () = call.ended.cancelled() => {}
    }
}

/// The entry of an open connection in its call's record, when there was room for one.
type Opened = (TcpStream, Option<(usize, Arc<Counts>)>);

/// Decides `host:port` (a plain request's `method`; `None`: a tunnel) for `call`, asking
/// through its runner when the rules ask, and connects to the checked addresses. Records the
/// connection in the call's record either way; `Err`: why nothing was connected.
async fn open_upstream(
    shared: &Shared,
    call: &Arc<Call>,
    host: &str,
    port: u16,
    method: Option<String>,
) -> Result<Opened, Refusal> {
    let decision = shared.net.decide(host, port, method.as_deref());
    let (rule, ruled_by) = ruled(&decision, shared.net.default_action().is_some());
    let (by, decided) = match (&call.asks, decision.decision) {
        (Some(asks), Action::Ask) => ask(asks, call, decision).await,
        (None, Action::Ask) => (
            Some(Settled::FailClosed),
            super::verdict(&decision, shared.net.default_action()),
        ),
        _ => (
            ruled_by,
            super::verdict(&decision, shared.net.default_action()),
        ),
    };
    let subject = match &decided {
        Ok(s) => s.clone(),
        Err(_) => super::subject(host, port).unwrap_or_else(|_| host.escape_debug().to_string()),
    };
    let entry = |decision: Action, refused: Option<Refusal>| Entry {
        subject: subject.clone(),
        port,
        method: method.clone(),
        decision,
        by,
        rule: rule.clone(),
        refused,
        note: None,
        up: 0,
        down: 0,
    };
    let (allowed, upstream) = match decided {
        Ok(_) => (
            Action::Allow,
            match shared.net.resolve(host, port).await {
                Ok(addrs) => super::connect(&addrs).await,
                Err(refusal) => Err(refusal),
            },
        ),
        Err(refusal) => (Action::Deny, Err(refusal)),
    };
    match upstream {
        Ok(upstream) => {
            tracing::info!(call = %call.call_id, %subject, "network proxy allowed");
            Ok((upstream, call.push(entry(Action::Allow, None))))
        }
        Err(refusal) => {
            tracing::info!(call = %call.call_id, %subject, code = refusal.code, "network proxy refused");
            call.push(entry(allowed, Some(refusal.clone())));
            Err(refusal)
        }
    }
}

/// SOCKS5's version byte (RFC 1928), and the reply codes pod sends.
const SOCKS_VERSION: u8 = 5;
const SOCKS_REFUSED_BY_RULES: u8 = 2;
const SOCKS_HOST_UNREACHABLE: u8 = 4;
const SOCKS_COMMAND_UNSUPPORTED: u8 = 7;

/// A SOCKS5 client (`ALL_PROXY=socks5h://…`, RFC 1928): username and password only (RFC
/// 1929: the call's credentials, as in its HTTP proxy URL), `CONNECT` only, then the same
/// decision and connection as an HTTP `CONNECT` ([`open_upstream`]) and a tunnel. The name a
/// client sends is the host decided: bytes no DNS name has (a NUL) make it an invalid host.
async fn socks(mut client: TcpStream, shared: &Shared) {
    let call = match tokio::time::timeout(HEAD_TIMEOUT, socks_hello(&mut client, shared)).await {
        Ok(Some(call)) => call,
        _ => return,
    };
    let target = match tokio::time::timeout(HEAD_TIMEOUT, socks_request(&mut client)).await {
        Ok(Ok(target)) => target,
        Ok(Err(code)) => return socks_reply(&mut client, code).await,
        Err(_) => return,
    };
    let (host, port) = target;
    let (upstream, open) = match open_upstream(shared, &call, &host, port, None).await {
        Ok(opened) => opened,
        Err(refusal) => {
            let code = match refusal.code {
                "connect-failed" | "resolve-failed" => SOCKS_HOST_UNREACHABLE,
                _ => SOCKS_REFUSED_BY_RULES,
            };
            return socks_reply(&mut client, code).await;
        }
    };
    let _finish = Finish(&call, open.as_ref().map(|(i, _)| *i));
    let counts = open.map(|(_, c)| c).unwrap_or_default();
    if client
        .write_all(&[SOCKS_VERSION, 0, 0, 1, 0, 0, 0, 0, 0, 0])
        .await
        .is_err()
    {
        return;
    }
    tokio::select! {
        () = pipe(client, upstream, &counts) => {}
        () = call.ended.cancelled() => {}
    }
}

/// Greeting and authentication: the call whose credentials the client sent, or `None` (the
/// client was told no and the connection is to be closed).
async fn socks_hello(client: &mut TcpStream, shared: &Shared) -> Option<Arc<Call>> {
    let mut head = [0u8; 2];
    client.read_exact(&mut head).await.ok()?;
    let mut methods = vec![0u8; usize::from(head[1])];
    client.read_exact(&mut methods).await.ok()?;
    if !methods.contains(&2) {
        // No acceptable method: only username and password identify a call.
        let _ = client.write_all(&[SOCKS_VERSION, 0xff]).await;
        return None;
    }
    client.write_all(&[SOCKS_VERSION, 2]).await.ok()?;
    let mut version = [0u8; 2];
    client.read_exact(&mut version).await.ok()?;
    let mut user = vec![0u8; usize::from(version[1])];
    client.read_exact(&mut user).await.ok()?;
    let mut len = [0u8; 1];
    client.read_exact(&mut len).await.ok()?;
    let mut password = vec![0u8; usize::from(len[0])];
    client.read_exact(&mut password).await.ok()?;
    let mut pair = user;
    pair.push(b':');
    pair.extend_from_slice(&password);
    let key = format!("Basic {}", base64(&pair));
    let call = shared
        .calls
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned();
    let status = if call.is_some() { 0 } else { 1 };
    client.write_all(&[1, status]).await.ok()?;
    call
}

/// The `CONNECT` request's host and port, or the reply code refusing it.
async fn socks_request(client: &mut TcpStream) -> Result<(String, u16), u8> {
    let mut head = [0u8; 4];
    client
        .read_exact(&mut head)
        .await
        .map_err(|_| SOCKS_COMMAND_UNSUPPORTED)?;
    if head[0] != SOCKS_VERSION || head[1] != 1 {
        return Err(SOCKS_COMMAND_UNSUPPORTED);
    }
    let host = match head[3] {
        1 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a).await.map_err(|_| 1u8)?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a).await.map_err(|_| 1u8)?;
            format!("[{}]", std::net::Ipv6Addr::from(a))
        }
        3 => {
            let mut len = [0u8; 1];
            client.read_exact(&mut len).await.map_err(|_| 1u8)?;
            let mut name = vec![0u8; usize::from(len[0])];
            client.read_exact(&mut name).await.map_err(|_| 1u8)?;
            // Not UTF-8 is no DNS name; a NUL or other odd byte goes on to the rules'
            // host check, which refuses it as an invalid host.
            String::from_utf8(name).map_err(|_| SOCKS_REFUSED_BY_RULES)?
        }
        // Address type not supported.
        _ => return Err(8),
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await.map_err(|_| 1u8)?;
    Ok((host, u16::from_be_bytes(port)))
}

async fn socks_reply(client: &mut TcpStream, code: u8) {
    let _ = client
        .write_all(&[SOCKS_VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0])
        .await;
    let _ = client.shutdown().await;
}

/// Reports a connected entry when dropped ([`Call::finish`]).
struct Finish<'a>(&'a Call, Option<usize>);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        if let Some(index) = self.1 {
            self.0.finish(index);
        }
    }
}

/// The rule that decided a network subject, and who settled a decision that asks nobody:
/// `rule`, `default`, `disabled` (the layer is off), or `None` for a host no rule was matched
/// against (invalid).
fn ruled(decision: &Decision, layer_on: bool) -> (Option<RuleRef>, Option<Settled>) {
    let Some(s) = decision.subjects.first() else {
        return (None, None);
    };
    if !layer_on {
        return (None, Some(Settled::Disabled));
    }
    match &s.rule {
        Some(rule) => (Some(rule.clone()), Some(Settled::Rule)),
        None if s.invalid => (None, None),
        None => (None, Some(Settled::Default)),
    }
}

/// Hands an ask to the call's runner and waits for its verdict (a call that ends first
/// refuses it): who settled it, and the verdict.
async fn ask(
    asks: &mpsc::Sender<NetworkAsk>,
    call: &Call,
    decision: Decision,
) -> (Option<Settled>, Result<String, Refusal>) {
    let subject = decision
        .subjects
        .first()
        .map(|s| s.subject.clone())
        .unwrap_or_default();
    let (tx, rx) = oneshot::channel();
    let gone = || {
        (
            Some(Settled::Asked(Asked::Cancel)),
            Err(Refusal::new(
                "blocked-by-ask",
                "the call ended before the ask was answered",
            )),
        )
    };
    if asks
        .send(NetworkAsk {
            decision,
            answer: tx,
        })
        .await
        .is_err()
    {
        return gone();
    }
    tokio::select! {
        answer = rx => match answer {
            Ok((by, Ok(()))) => (by, Ok(subject)),
            Ok((by, Err(text))) => (by, Err(Refusal::new("blocked-by-approval", text))),
            Err(_) => gone(),
        },
        () = call.ended.cancelled() => gone(),
    }
}

/// Copies both ways until both sides are done or a side passes [`MAX_BYTES`], counting into
/// `counts` as it goes (so a connection cut off when the call ends still says what it moved).
async fn pipe(client: TcpStream, upstream: TcpStream, counts: &Counts) {
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    let up = async {
        copy_counted(&mut cr, &mut uw, &counts.up).await;
        let _ = uw.shutdown().await;
    };
    let down = async {
        copy_counted(&mut ur, &mut cw, &counts.down).await;
        let _ = cw.shutdown().await;
    };
    tokio::join!(up, down);
}

/// Copies `from` to `to` until the end, an error or [`MAX_BYTES`], adding each chunk to
/// `count` as it is read, before it is passed on (so what the other side has seen is always
/// counted, whenever the call's end reads the count).
async fn copy_counted(
    from: &mut (impl AsyncReadExt + Unpin),
    to: &mut (impl AsyncWriteExt + Unpin),
    count: &AtomicU64,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    while total < MAX_BYTES {
        let room = usize::try_from(MAX_BYTES - total)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = match from.read(&mut buf[..room]).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        total += n as u64;
        count.fetch_add(n as u64, Ordering::Relaxed);
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b"pod:abc"), "cG9kOmFiYw==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
    }

    fn entry(subject: &str, refused: bool) -> Entry {
        Entry {
            subject: subject.into(),
            port: 80,
            method: None,
            decision: Action::Allow,
            by: Some(Settled::Rule),
            rule: None,
            refused: refused.then(|| Refusal::new("blocked-by-rule", "denied")),
            note: None,
            up: 0,
            down: 0,
        }
    }

    /// A refused connection is reported at once, a connected one when it ends or when the
    /// call does, each once, with its bytes; past the bound only a count.
    #[test]
    fn each_connection_is_reported_once() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let call = Call {
            call_id: "c".into(),
            record: Mutex::new(Record::default()),
            ended: CancellationToken::new(),
            asks: None,
            reports: Some(tx),
        };
        call.push(entry("denied.test", true));
        let Some((done, counts)) = call.push(entry("done.test", false)) else {
            panic!("kept")
        };
        counts.up.fetch_add(3, Ordering::Relaxed);
        counts.down.fetch_add(5, Ordering::Relaxed);
        let Some((open, counts)) = call.push(entry("open.test", false)) else {
            panic!("kept")
        };
        counts.down.fetch_add(7, Ordering::Relaxed);
        for _ in 3..MAX_ENTRIES + 2 {
            call.push(entry("many.test", true));
        }
        call.finish(done);
        call.finish(done);
        call.close();
        call.finish(open);
        call.close();
        let mut reports = Vec::new();
        while let Ok(r) = rx.try_recv() {
            reports.push(r);
        }
        let connections: Vec<&Entry> = reports
            .iter()
            .filter_map(|r| match r {
                Report::Connection(e) => Some(&**e),
                Report::Omitted(_) => None,
            })
            .collect();
        assert_eq!(connections.len(), MAX_ENTRIES, "{reports:?}");
        let by = |s: &str| connections.iter().filter(|e| e.subject == s).count();
        assert_eq!(
            (by("denied.test"), by("done.test"), by("open.test")),
            (1, 1, 1)
        );
        let done = connections.iter().find(|e| e.subject == "done.test");
        assert_eq!(done.map(|e| (e.up, e.down)), Some((3, 5)));
        let open = connections.iter().find(|e| e.subject == "open.test");
        assert_eq!(open.map(|e| (e.down, e.note.is_some())), Some((7, true)));
        assert_eq!(reports.last(), Some(&Report::Omitted(2)));
    }

    #[test]
    fn connect_targets() {
        assert_eq!(authority("a.test:8443", 443), Some(("a.test".into(), 8443)));
        assert_eq!(authority("[::1]:22", 443), Some(("[::1]".into(), 22)));
        assert_eq!(authority("a.test", 443), Some(("a.test".into(), 443)));
        assert_eq!(authority("a.test:x", 443), None);
    }
}
