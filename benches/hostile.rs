//! pod under a hostile model or client: peak memory, CPU and process counts of `pod serve` against
//! a scripted loopback provider, for the before/after tables of `docs/hardening.md` ("Bounds
//! under a hostile model or client").
//! Bounds are asserted in `tests/binary/bounds.rs`; the costs are measured here, never timed in
//! tests.
//!
//! `cargo bench --bench hostile` runs every scenario; `cargo bench --bench hostile -- delta calls`
//! runs the named ones: `delta` (one 100 MB text delta), `trickle` (a 20 MB unfinished SSE line,
//! then one byte every 2 ms, while the client sends `history`), `stall` (a client that stops
//! reading stdout for 40 s while the model streams), `calls` (2,000 `bash` calls in one
//! response), `read` (a 200 MB one-line file read with `limit: 1`, once and four times in one
//! response), `errbody` (a 400 whose body is 300 MB).
//!
//! `POD_BENCH_POD=/path/to/pod` measures another build (e.g. main before the change); add
//! `POD_BENCH_LEGACY=1` when that build predates the manifest keys this bench sets
//! (`max_response_bytes`, `max_tool_calls`, `[tools] max_parallel`), so its manifests omit them.
//! `POD_BENCH_STALL_SECS` shortens the stall (default 40).
//!
//! Figures: CPU is the pod's user + system time from `/proc/<pid>/stat` for the turn; peak RSS is
//! `VmHWM` (the whole life of the process, idle is about 7 MiB); processes are the pod's children
//! counted every 2 ms from `/proc`.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it only checks that it starts.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn pod_binary() -> std::ffi::OsString {
    std::env::var_os("POD_BENCH_POD").unwrap_or_else(|| env!("CARGO_BIN_EXE_pod").into())
}

fn legacy() -> bool {
    std::env::var_os("POD_BENCH_LEGACY").is_some()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("hostile: not run in test mode (use `cargo bench --bench hostile`)");
        return;
    }
    let wanted: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let on = |name: &str| wanted.is_empty() || wanted.contains(&name);
    println!(
        "pod hostile bench: {} ({}), {} cores",
        pod_binary().to_string_lossy(),
        if legacy() {
            "legacy manifests"
        } else {
            "current manifests"
        },
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    if on("delta") {
        delta();
    }
    if on("trickle") {
        trickle();
    }
    if on("stall") {
        stall();
    }
    if on("calls") {
        calls();
    }
    if on("read") {
        read();
    }
    if on("errbody") {
        errbody();
    }
}

// ---------------------------------------------------------------------------------------------
// The scripted provider

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Provider {
    Anthropic,
    Openai,
}

impl Provider {
    fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
        }
    }
}

/// What the provider writes on the n-th connection (0-based), after the status line and headers
/// it writes itself. Bytes written are counted in `sent`.
type Script = dyn Fn(usize, &mut Counted) -> std::io::Result<()> + Send + Sync;

struct Counted<'a> {
    socket: &'a mut TcpStream,
    sent: &'a AtomicU64,
}

impl Counted<'_> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.socket.write_all(bytes)?;
        self.sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// `n` bytes of `a`, in 64 KiB writes.
    fn fill(&mut self, n: usize) -> std::io::Result<()> {
        let chunk = vec![b'a'; 64 * 1024];
        let mut left = n;
        while left > 0 {
            let k = left.min(chunk.len());
            self.put(&chunk[..k])?;
            left -= k;
        }
        Ok(())
    }

    fn sse_head(&mut self) -> std::io::Result<()> {
        self.put(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
    }
}

struct Mock {
    base: String,
    sent: Arc<AtomicU64>,
}

impl Mock {
    fn start(script: Arc<Script>) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let sent = Arc::new(AtomicU64::new(0));
        let counter = sent.clone();
        std::thread::spawn(move || {
            for (n, socket) in listener.incoming().enumerate() {
                let Ok(mut socket) = socket else { return };
                let (script, sent) = (script.clone(), counter.clone());
                std::thread::spawn(move || {
                    if read_request(&mut socket).is_ok() {
                        let mut out = Counted {
                            socket: &mut socket,
                            sent: &sent,
                        };
                        let _ = script(n, &mut out);
                    }
                    let _ = socket.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        Mock { base, sent }
    }
}

fn read_request(socket: &mut TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        let n = socket.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(())
}

fn ev(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// Everything of an Anthropic text response but its deltas: (head, tail).
fn a_frame() -> (String, String) {
    let head = ev(
        "message_start",
        &json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
    ) + &ev(
        "content_block_start",
        &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    let tail = ev(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    ) + &ev(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
    ) + &ev("message_stop", &json!({"type": "message_stop"}));
    (head, tail)
}

/// The opening and closing of one text delta whose text is written between them.
fn delta_parts(provider: Provider) -> (&'static str, &'static str) {
    match provider {
        Provider::Anthropic => (
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
            "\"}}\n\n",
        ),
        Provider::Openai => ("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"", "\"}}]}\n\n"),
    }
}

fn o_finish(reason: &str) -> String {
    format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
    )
}

/// A whole short text response.
fn text_response(provider: Provider, out: &mut Counted, text: &str) -> std::io::Result<()> {
    out.sse_head()?;
    let (open, close) = delta_parts(provider);
    match provider {
        Provider::Anthropic => {
            let (head, tail) = a_frame();
            out.put(format!("{head}{open}{text}{close}{tail}").as_bytes())
        }
        Provider::Openai => out.put(format!("{open}{text}{close}{}", o_finish("stop")).as_bytes()),
    }
}

/// One response of `calls` tool calls, each of `tool` with `input`.
fn calls_response(
    provider: Provider,
    out: &mut Counted,
    calls: usize,
    tool: &str,
    input: &Value,
) -> std::io::Result<()> {
    out.sse_head()?;
    let mut body = String::new();
    match provider {
        Provider::Anthropic => {
            body += &ev(
                "message_start",
                &json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
            );
            for i in 0..calls {
                body += &ev(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": tool, "input": {}}}),
                );
                body += &ev(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
                );
                body += &ev(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": i}),
                );
            }
            body += &ev(
                "message_delta",
                &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}}),
            );
            body += &ev("message_stop", &json!({"type": "message_stop"}));
        }
        Provider::Openai => {
            for i in 0..calls {
                body += &format!(
                    "data: {}\n\n",
                    json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function", "function": {"name": tool, "arguments": input.to_string()}}]}}]})
                );
            }
            body += &o_finish("tool_calls");
        }
    }
    out.put(body.as_bytes())
}

// ---------------------------------------------------------------------------------------------
// The client side

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    /// A workspace whose manifest points `provider` at `mock`; `model_extra` and `tools_extra`
    /// are added to `[model]` / `[tools]` unless the build is legacy.
    fn new(provider: Provider, mock: &Mock, model_extra: &str, tools_extra: &str) -> Workspace {
        let dir = tempfile::tempdir().expect("tempdir");
        let (model_extra, tools_extra) = if legacy() {
            ("", "")
        } else {
            (model_extra, tools_extra)
        };
        std::fs::write(dir.path().join("key"), "bench-key").expect("key");
        let manifest = format!(
            "[pod]\nname = \"bench\"\nmax_steps = 4\n\n[model]\nprovider = \"{}\"\nmodel = \"m\"\nbase_url = \"{}\"\napi_key_file = \"key\"\nmax_retries = 0\ntimeout_secs = 120\n{model_extra}\n\n[tools]\nenabled = [\"bash\", \"read\"]\n{tools_extra}\n",
            provider.name(),
            mock.base
        );
        std::fs::write(dir.path().join("pod.toml"), manifest).expect("manifest");
        Workspace { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A `pod serve` child. Its stdout is read by a thread once `reading` starts; until then nobody
/// reads it (a stalled client).
struct Pod {
    child: Child,
    stdin: ChildStdin,
    stdout: Option<BufReader<ChildStdout>>,
    messages: Option<mpsc::Receiver<Value>>,
    next_id: u64,
}

impl Pod {
    fn spawn(ws: &Workspace) -> Pod {
        let mut child = Command::new(pod_binary())
            .arg("serve")
            .arg("--manifest")
            .arg(ws.path().join("pod.toml"))
            .current_dir(ws.path())
            // Session logs stay in the throwaway workspace (older builds write there anyway).
            .env("XDG_STATE_HOME", ws.path().join(".state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn pod");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout"));
        let mut pod = Pod {
            child,
            stdin,
            stdout: Some(stdout),
            messages: None,
            next_id: 0,
        };
        let id = pod.send("initialize", json!({"protocolVersion": 1}));
        let mut line = String::new();
        pod.stdout
            .as_mut()
            .expect("stdout")
            .read_line(&mut line)
            .expect("initialize answer");
        let v: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(v["id"], id, "{v}");
        assert!(v.get("result").is_some(), "initialize failed: {v}");
        pod
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let text =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.stdin
            .write_all(format!("{text}\n").as_bytes())
            .expect("write");
        self.stdin.flush().expect("flush");
        self.next_id
    }

    /// From now on a thread reads stdout.
    fn start_reading(&mut self) {
        let Some(mut stdout) = self.stdout.take() else {
            return;
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            loop {
                line.clear();
                match stdout.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let Ok(v) = serde_json::from_str::<Value>(&line) else {
                            continue;
                        };
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        self.messages = Some(rx);
    }

    /// Waits for the response to `id` (events are counted, other replies dropped).
    fn response(&mut self, id: u64, limit: Duration) -> Option<(Value, usize)> {
        self.start_reading();
        let rx = self.messages.as_ref()?;
        let deadline = Instant::now() + limit;
        let mut events = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = rx.recv_timeout(left).ok()?;
            if v["method"] == "event" {
                events += 1;
            } else if v["id"] == id {
                return Some((v, events));
            }
        }
    }

    fn run(&mut self, text: &str) -> u64 {
        self.send("run", json!({"input": [{"type": "text", "text": text}]}))
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// User + system CPU seconds of a process so far.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state is 0, utime is 11, stime is 12.
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks as f64 / hz
}

fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

/// The number of live children of `pid`, sampled every 2 ms until `stop`; returns the maximum.
fn count_children(pid: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut peak = 0;
        let children = format!("/proc/{pid}/task/{pid}/children");
        while !stop.load(Ordering::Relaxed) {
            let n = std::fs::read_to_string(&children)
                .map(|s| s.split_whitespace().count())
                .unwrap_or(0);
            peak = peak.max(n);
            std::thread::sleep(Duration::from_millis(2));
        }
        peak
    })
}

/// How a turn ended, in a few words.
fn outcome(response: &Option<(Value, usize)>) -> String {
    match response {
        None => "no answer in time".into(),
        Some((v, _)) => {
            let r = &v["result"];
            let mut s = r["stopReason"].as_str().unwrap_or("?").to_string();
            if let Some(e) = r["error"].as_str() {
                let e: String = e.chars().take(110).collect();
                s.push_str(&format!(" ({e})"));
            }
            s
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/// One text delta of 10 MB, then of 100 MB.
fn delta() {
    println!("\n## delta: one text delta of 10 MB, then of 100 MB");
    for (provider, size) in [
        (Provider::Anthropic, 10_000_000),
        (Provider::Openai, 10_000_000),
        (Provider::Anthropic, 100_000_000),
        (Provider::Openai, 100_000_000),
    ] {
        for extra in ["", "max_response_bytes = 268435456"] {
            if legacy() && !extra.is_empty() {
                continue;
            }
            let script: Arc<Script> = Arc::new(move |n, out: &mut Counted| {
                if n > 0 {
                    return text_response(provider, out, "done");
                }
                out.sse_head()?;
                let (open, close) = delta_parts(provider);
                let (head, tail) = a_frame();
                if provider == Provider::Anthropic {
                    out.put(head.as_bytes())?;
                }
                out.put(open.as_bytes())?;
                out.fill(size)?;
                out.put(close.as_bytes())?;
                match provider {
                    Provider::Anthropic => out.put(tail.as_bytes()),
                    Provider::Openai => out.put(o_finish("stop").as_bytes()),
                }
            });
            let mock = Mock::start(script);
            let ws = Workspace::new(provider, &mock, extra, "");
            let mut pod = Pod::spawn(&ws);
            let (cpu0, t) = (cpu_secs(pod.pid()), Instant::now());
            let id = pod.run("go");
            let answer = pod.response(id, Duration::from_secs(300));
            let (cpu, wall) = (cpu_secs(pod.pid()) - cpu0, t.elapsed());
            println!(
                "  {:<9} {:>3} MB {:<34} cpu {cpu:6.2} s  wall {:6.2} s  peak RSS {:>8}  -> {}",
                provider.name(),
                size / 1_000_000,
                if extra.is_empty() {
                    "(default limits)"
                } else {
                    extra
                },
                wall.as_secs_f64(),
                mib(status_kib(pod.pid(), "VmHWM:")),
                outcome(&answer)
            );
        }
    }
}

/// A 20 MB unfinished line, then one byte every 2 ms for 10 s, while the client asks `history`
/// every 50 ms and times the answers.
fn trickle() {
    const LINE: usize = 20_000_000;
    const TRICKLE: Duration = Duration::from_secs(10);
    println!(
        "\n## trickle: a {} MB unfinished SSE line, then 1 byte / 2 ms for {} s; `history` every 50 ms",
        LINE / 1_000_000,
        TRICKLE.as_secs()
    );
    for provider in [Provider::Anthropic, Provider::Openai] {
        for extra in ["", "max_response_bytes = 67108864"] {
            if legacy() && !extra.is_empty() {
                continue;
            }
            let script: Arc<Script> = Arc::new(move |n, out: &mut Counted| {
                if n > 0 {
                    return text_response(provider, out, "done");
                }
                out.sse_head()?;
                let (open, close) = delta_parts(provider);
                let (head, tail) = a_frame();
                if provider == Provider::Anthropic {
                    out.put(head.as_bytes())?;
                }
                out.put(open.as_bytes())?;
                out.fill(LINE)?;
                let start = Instant::now();
                while start.elapsed() < TRICKLE {
                    out.put(b"a")?;
                    std::thread::sleep(Duration::from_millis(2));
                }
                out.put(close.as_bytes())?;
                match provider {
                    Provider::Anthropic => out.put(tail.as_bytes()),
                    Provider::Openai => out.put(o_finish("stop").as_bytes()),
                }
            });
            let mock = Mock::start(script);
            let ws = Workspace::new(provider, &mock, extra, "");
            let mut pod = Pod::spawn(&ws);
            pod.start_reading();
            let cpu0 = cpu_secs(pod.pid());
            let run = pod.run("go");
            // Give the 20 MB time to arrive, then sample.
            std::thread::sleep(Duration::from_millis(1500));
            let mut latencies = Vec::new();
            let mut answer = None;
            let deadline = Instant::now() + TRICKLE;
            let rx = pod.messages.take().expect("reading");
            'outer: while Instant::now() < deadline {
                let t = Instant::now();
                let id = pod.send("history", json!({}));
                loop {
                    let Ok(v) = rx.recv_timeout(Duration::from_secs(15)) else {
                        break 'outer;
                    };
                    if v["id"] == run {
                        answer = Some((v, 0));
                    } else if v["id"] == id {
                        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                        break;
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            pod.messages = Some(rx);
            if answer.is_none() {
                answer = pod.response(run, Duration::from_secs(60));
            }
            let cpu = cpu_secs(pod.pid()) - cpu0;
            latencies.sort_by(f64::total_cmp);
            let pct = |p: f64| {
                latencies
                    .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
                    .copied()
                    .unwrap_or(f64::NAN)
            };
            println!(
                "  {:<9} {:<32} history p50 {:7.2} ms  max {:7.2} ms ({} asks)  cpu {cpu:5.2} s  peak RSS {:>8}  -> {}",
                provider.name(),
                if extra.is_empty() { "(default limits)" } else { extra },
                pct(0.5),
                pct(1.0),
                latencies.len(),
                mib(status_kib(pod.pid(), "VmHWM:")),
                outcome(&answer)
            );
        }
    }
}

/// The model streams text as fast as it can; the client reads nothing for `POD_BENCH_STALL_SECS`.
fn stall() {
    let secs: u64 = std::env::var("POD_BENCH_STALL_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    println!("\n## stall: the client stops reading stdout for {secs} s while the model streams");
    let provider = Provider::Anthropic;
    let script: Arc<Script> = Arc::new(move |n, out: &mut Counted| {
        if n > 0 {
            return text_response(provider, out, "done");
        }
        out.sse_head()?;
        let (head, _) = a_frame();
        out.put(head.as_bytes())?;
        let text = "x".repeat(1000);
        let event = ev(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        );
        let mut batch = String::new();
        for _ in 0..64 {
            batch.push_str(&event);
        }
        loop {
            out.put(batch.as_bytes())?;
        }
    });
    let mock = Mock::start(script);
    // The cap on a response's text would end this turn early; lift it so only backpressure acts.
    let ws = Workspace::new(provider, &mock, "max_response_bytes = 4294967295", "");
    let mut pod = Pod::spawn(&ws);
    let run = pod.run("go");
    let start = Instant::now();
    let mut samples = Vec::new();
    for i in 1..=4 {
        let at = Duration::from_secs(secs * i / 4);
        std::thread::sleep(at.saturating_sub(start.elapsed()));
        samples.push(format!(
            "{:>3} s: RSS {:>8}, provider sent {:>6} MB",
            at.as_secs(),
            mib(status_kib(pod.pid(), "VmRSS:")),
            mock.sent.load(Ordering::Relaxed) / 1_000_000
        ));
    }
    let peak = status_kib(pod.pid(), "VmHWM:");
    let cancel = pod.send("cancel", json!({}));
    let t = Instant::now();
    let cancelled = pod.response(cancel, Duration::from_secs(120));
    let drained = t.elapsed();
    let answer = pod.response(run, Duration::from_secs(120));
    for s in samples {
        println!("  {s}");
    }
    println!(
        "  peak RSS {}; once reading again: cancel answered after {:.2} s ({} events before it), run -> {}",
        mib(peak),
        drained.as_secs_f64(),
        cancelled.as_ref().map_or(0, |c| c.1),
        outcome(&answer)
    );
}

/// 2,000 `bash` calls in one response (layer off: all allowed).
fn calls() {
    const CALLS: usize = 2000;
    println!("\n## calls: {CALLS} `bash` calls in one response, all allowed");
    for provider in [Provider::Anthropic, Provider::Openai] {
        for (model_extra, tools_extra) in [
            ("", ""),
            ("max_tool_calls = 2000", ""),
            ("max_tool_calls = 2000", "max_parallel = 64"),
        ] {
            if legacy() && !model_extra.is_empty() {
                continue;
            }
            let script: Arc<Script> = Arc::new(move |n, out: &mut Counted| {
                if n > 0 {
                    return text_response(provider, out, "done");
                }
                calls_response(
                    provider,
                    out,
                    CALLS,
                    "bash",
                    &json!({"command": "echo hi; sleep 0.05"}),
                )
            });
            let mock = Mock::start(script);
            let ws = Workspace::new(provider, &mock, model_extra, tools_extra);
            let mut pod = Pod::spawn(&ws);
            let stop = Arc::new(AtomicBool::new(false));
            let counter = count_children(pod.pid(), stop.clone());
            let (cpu0, t) = (cpu_secs(pod.pid()), Instant::now());
            let id = pod.run("go");
            let answer = pod.response(id, Duration::from_secs(600));
            let (cpu, wall) = (cpu_secs(pod.pid()) - cpu0, t.elapsed());
            stop.store(true, Ordering::Relaxed);
            let peak_children = counter.join().unwrap_or(0);
            let settings = [model_extra, tools_extra]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(", ");
            println!(
                "  {:<9} {:<40} peak children {peak_children:>5}  cpu {cpu:6.2} s  wall {:6.2} s  peak RSS {:>8}  events {:>5}  -> {}",
                provider.name(),
                if settings.is_empty() { "(default limits)".to_string() } else { settings },
                wall.as_secs_f64(),
                mib(status_kib(pod.pid(), "VmHWM:")),
                answer.as_ref().map_or(0, |a| a.1),
                outcome(&answer)
            );
        }
    }
}

/// A 200 MB file of one line, read with `limit: 1` by one call, then by four in one response.
fn read() {
    const SIZE: usize = 200_000_000;
    println!(
        "\n## read: a {} MB one-line file, `limit: 1`",
        SIZE / 1_000_000
    );
    let provider = Provider::Anthropic;
    for calls in [1usize, 4] {
        let script: Arc<Script> = Arc::new(move |n, out: &mut Counted| {
            if n > 0 {
                return text_response(provider, out, "done");
            }
            calls_response(
                provider,
                out,
                calls,
                "read",
                &json!({"path": "big.txt", "limit": 1}),
            )
        });
        let mock = Mock::start(script);
        let ws = Workspace::new(provider, &mock, "", "");
        write_big_line(&ws.path().join("big.txt"), SIZE);
        let mut pod = Pod::spawn(&ws);
        let (cpu0, t) = (cpu_secs(pod.pid()), Instant::now());
        let id = pod.run("go");
        let answer = pod.response(id, Duration::from_secs(300));
        let (cpu, wall) = (cpu_secs(pod.pid()) - cpu0, t.elapsed());
        println!(
            "  {calls} call(s): cpu {cpu:5.2} s  wall {:5.2} s  peak RSS {:>8}  -> {}",
            wall.as_secs_f64(),
            mib(status_kib(pod.pid(), "VmHWM:")),
            outcome(&answer)
        );
    }
}

fn write_big_line(path: &PathBuf, size: usize) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let chunk = vec![b'z'; 1 << 20];
    let mut left = size;
    while left > 0 {
        let k = left.min(chunk.len());
        file.write_all(&chunk[..k]).expect("write");
        left -= k;
    }
    file.write_all(b"\n").expect("write");
}

/// A 400 whose body is 300 MB of text.
fn errbody() {
    const SIZE: usize = 300_000_000;
    println!("\n## errbody: HTTP 400 with a {} MB body", SIZE / 1_000_000);
    for provider in [Provider::Anthropic, Provider::Openai] {
        let script: Arc<Script> = Arc::new(move |_, out: &mut Counted| {
            out.put(
                format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {SIZE}\r\nconnection: close\r\n\r\n"
                )
                .as_bytes(),
            )?;
            out.fill(SIZE)
        });
        let mock = Mock::start(script);
        let ws = Workspace::new(provider, &mock, "", "");
        let mut pod = Pod::spawn(&ws);
        let (cpu0, t) = (cpu_secs(pod.pid()), Instant::now());
        let id = pod.run("go");
        let answer = pod.response(id, Duration::from_secs(300));
        let (cpu, wall) = (cpu_secs(pod.pid()) - cpu0, t.elapsed());
        println!(
            "  {:<9} cpu {cpu:5.2} s  wall {:5.2} s  peak RSS {:>8}  provider sent {:>4} MB  -> {}",
            provider.name(),
            wall.as_secs_f64(),
            mib(status_kib(pod.pid(), "VmHWM:")),
            mock.sent.load(Ordering::Relaxed) / 1_000_000,
            outcome(&answer)
        );
    }
}
