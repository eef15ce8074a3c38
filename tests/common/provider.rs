//! A scripted model provider on 127.0.0.1:0 for tests that drive the real binary: plain threads
//! and blocking sockets, one scripted reply per connection, every request body recorded, every
//! byte written counted (a reply whose client went away stops at its next write).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// Writes a reply's body; returns when done or when a write fails.
pub type Script = dyn Fn(&mut Out) -> std::io::Result<()> + Send + Sync;

/// The writing end of one reply.
pub struct Out<'a> {
    socket: &'a mut TcpStream,
    sent: &'a AtomicU64,
}

impl Out<'_> {
    pub fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.socket.write_all(bytes)?;
        self.sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// `n` bytes of `a`, in 64 KiB writes.
    pub fn fill(&mut self, n: usize) -> std::io::Result<()> {
        let chunk = vec![b'a'; 64 * 1024];
        let mut left = n;
        while left > 0 {
            let k = left.min(chunk.len());
            self.put(&chunk[..k])?;
            left -= k;
        }
        Ok(())
    }

    /// The status line and headers of a `200 text/event-stream` reply.
    pub fn sse_head(&mut self) -> std::io::Result<()> {
        self.head(200, "text/event-stream")
    }

    pub fn head(&mut self, status: u16, content_type: &str) -> std::io::Result<()> {
        self.put(
            format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
    }
}

pub struct Provider {
    pub base: String,
    requests: Arc<Mutex<Vec<Value>>>,
    sent: Arc<AtomicU64>,
    /// Replies whose script returned (finished, or stopped at a failed write).
    ended: Arc<AtomicUsize>,
    /// Replies whose script stopped at a failed write: the pod hung up first.
    cut: Arc<AtomicUsize>,
}

impl Provider {
    /// Serves `scripts` in order, one per connection (the last one repeats).
    pub fn start(scripts: Vec<Arc<Script>>) -> Provider {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let sent = Arc::new(AtomicU64::new(0));
        let ended = Arc::new(AtomicUsize::new(0));
        let cut = Arc::new(AtomicUsize::new(0));
        let (r, s, e, c) = (requests.clone(), sent.clone(), ended.clone(), cut.clone());
        std::thread::spawn(move || {
            for (n, socket) in listener.incoming().enumerate() {
                let Ok(mut socket) = socket else { return };
                let script = scripts[n.min(scripts.len() - 1)].clone();
                let (r, s, e, c) = (r.clone(), s.clone(), e.clone(), c.clone());
                std::thread::spawn(move || {
                    if let Ok(body) = read_request(&mut socket) {
                        r.lock().unwrap_or_else(|p| p.into_inner()).push(body);
                        let mut out = Out {
                            socket: &mut socket,
                            sent: &s,
                        };
                        if script(&mut out).is_err() {
                            c.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    let _ = socket.shutdown(std::net::Shutdown::Both);
                    e.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        Provider {
            base,
            requests,
            sent,
            ended,
            cut,
        }
    }

    /// The JSON bodies of the requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    pub fn ended(&self) -> usize {
        self.ended.load(Ordering::SeqCst)
    }

    pub fn cut(&self) -> usize {
        self.cut.load(Ordering::SeqCst)
    }
}

fn read_request(socket: &mut TcpStream) -> std::io::Result<Value> {
    socket.set_read_timeout(Some(Duration::from_secs(10)))?;
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
    Ok(serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null))
}

/// Which API a script speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Anthropic,
    Openai,
}

pub const BOTH_APIS: [Api; 2] = [Api::Anthropic, Api::Openai];

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::Anthropic => "anthropic",
            Api::Openai => "openai",
        }
    }

    /// `[model]` of a manifest for this API at `base`, with `extra` lines; the key is read
    /// from the file `key` next to the manifest (see [`manifest`]).
    pub fn model_section(self, base: &str, extra: &str) -> String {
        format!(
            "[model]\nprovider = \"{}\"\nmodel = \"m\"\nbase_url = \"{base}\"\napi_key_file = \"key\"\nmax_retries = 0\ntimeout_secs = 10\n{extra}\n",
            self.name()
        )
    }

    /// What comes before the first delta of a text response.
    pub fn text_open(self) -> String {
        match self {
            Api::Anthropic => {
                ev(
                    "message_start",
                    json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
                ) + &ev(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                )
            }
            Api::Openai => String::new(),
        }
    }

    /// One text delta event.
    pub fn delta(self, text: &str) -> String {
        match self {
            Api::Anthropic => ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ),
            Api::Openai => data(json!({"choices": [{"index": 0, "delta": {"content": text}}]})),
        }
    }

    /// The raw start of a text delta event whose text is written after it, unfinished.
    pub fn delta_prefix(self) -> &'static str {
        match self {
            Api::Anthropic => "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"",
            Api::Openai => "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
        }
    }

    /// What ends a text response.
    pub fn text_close(self) -> String {
        match self {
            Api::Anthropic => {
                ev(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ) + &ev(
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
                ) + &ev("message_stop", json!({"type": "message_stop"}))
            }
            Api::Openai => {
                data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
                    + "data: [DONE]\n\n"
            }
        }
    }

    /// A whole text response.
    pub fn text(self, text: &str) -> String {
        self.text_open() + &self.delta(text) + &self.text_close()
    }

    /// A whole response of tool calls: (provider id, tool, input) each.
    pub fn calls(self, calls: &[(&str, &str, Value)]) -> String {
        match self {
            Api::Anthropic => {
                let mut body = ev(
                    "message_start",
                    json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
                );
                for (i, (id, tool, input)) in calls.iter().enumerate() {
                    body += &ev(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": id, "name": tool, "input": {}}}),
                    );
                    body += &ev(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
                    );
                    body += &ev(
                        "content_block_stop",
                        json!({"type": "content_block_stop", "index": i}),
                    );
                }
                body + &ev(
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}}),
                ) + &ev("message_stop", json!({"type": "message_stop"}))
            }
            Api::Openai => {
                let mut body = String::new();
                for (i, (id, tool, input)) in calls.iter().enumerate() {
                    body += &data(
                        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": tool, "arguments": input.to_string()}}]}}]}),
                    );
                }
                body + &data(
                    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
                ) + "data: [DONE]\n\n"
            }
        }
    }

    /// A keep-alive the stream may send between events.
    pub fn ping(self) -> String {
        match self {
            Api::Anthropic => ev("ping", json!({"type": "ping"})),
            Api::Openai => ": keep-alive\n\n".to_string(),
        }
    }
}

pub fn ev(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

pub fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

/// A script that answers with `body` as an event stream.
pub fn sse(body: String) -> Arc<Script> {
    Arc::new(move |out: &mut Out| {
        out.sse_head()?;
        out.put(body.as_bytes())
    })
}

/// A whole manifest for `api` at `provider`: `[model]` with `model_extra`, then `rest`.
pub fn manifest(api: Api, provider: &Provider, model_extra: &str, rest: &str) -> String {
    format!(
        "[pod]\nname = \"t\"\n\n{}\n{rest}\n",
        api.model_section(&provider.base, model_extra)
    )
}
