//! The shared half of the provider tests: a loopback mock of a model provider's HTTP API (a
//! tiny HTTP/1.1 server on 127.0.0.1:0 serving scripted responses: status, headers, SSE bodies,
//! possibly cut mid-event or stalled, recording every request it receives), and helpers that
//! run a provider or a whole pod against it. No network.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use pod::manifest::{ModelConfig, Provider};
use pod::model::{Message, Model, ModelError, ModelRequest, ModelResponse, ToolCall, ToolResult};
use pod::protocol::ToolInfo;

/// One scripted response.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Keep the connection open after the body (the stream stalls).
    pub stall: bool,
}

impl Reply {
    /// A complete SSE body; the connection closes after it.
    pub fn sse(body: impl Into<String>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into(),
            stall: false,
        }
    }

    /// SSE body, then the server stops sending but keeps the connection open.
    pub fn sse_stall(body: impl Into<String>) -> Reply {
        Reply {
            stall: true,
            ..Reply::sse(body)
        }
    }

    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
            stall: false,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct Mock {
    pub base: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Mock {
    /// Serves `replies` in order, one per connection (the last one repeats).
    pub async fn start(replies: Vec<Reply>) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            let mut n = 0usize;
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies[n.min(replies.len() - 1)].clone();
                n += 1;
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let _ = serve(socket, reply, recorded).await;
                });
            }
        });
        Mock { base, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

pub async fn serve(
    mut socket: TcpStream,
    reply: Reply,
    recorded: Arc<Mutex<Vec<Recorded>>>,
) -> std::io::Result<()> {
    // Read the head, then Content-Length bytes of body.
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .unwrap_or("")
        .split(' ')
        .nth(1)
        .unwrap_or("")
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    recorded.lock().unwrap().push(Recorded {
        path,
        headers,
        body,
    });

    // Close-delimited body (no Content-Length): the stream ends when the socket closes.
    let mut out = format!("HTTP/1.1 {} Mock\r\nconnection: close\r\n", reply.status);
    for (n, v) in &reply.headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&reply.body);
    socket.write_all(out.as_bytes()).await?;
    socket.flush().await?;
    if reply.stall {
        // The scripted stall itself (the client's timeout must end it), not a wait for anything.
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
    socket.shutdown().await
}

pub fn key_file() -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "test-key-123\n").unwrap();
    file
}

pub fn config(provider: Provider, base: &str, key: &tempfile::NamedTempFile) -> ModelConfig {
    ModelConfig {
        provider,
        model: Some("test-model".into()),
        base_url: Some(base.to_string()),
        api_key_env: None,
        api_key_file: Some(key.path().to_path_buf()),
        max_tokens: 1000,
        system: Some("be brief".into()),
        scenario: None,
        timeout: Duration::from_secs(10),
        max_retries: 2,
        ..ModelConfig::default()
    }
}

pub fn tools() -> Vec<ToolInfo> {
    vec![ToolInfo {
        name: "bash".into(),
        description: "Run a command".into(),
        input_schema: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        annotations: None,
    }]
}

pub fn user(text: &str) -> Vec<Message> {
    vec![Message::User { text: text.into() }]
}

/// A conversation whose last message is a denied (error) tool result.
pub fn denied_conversation() -> Vec<Message> {
    vec![
        Message::User {
            text: "delete it".into(),
        },
        Message::Assistant {
            text: "Deleting.".into(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "bash".into(),
                input: json!({"command": "rm -rf x"}),
            }],
        },
        Message::ToolResults {
            results: vec![ToolResult {
                call_id: "call_1".into(),
                content: "permission denied: rm is not allowed".into(),
                is_error: true,
            }],
        },
    ]
}

pub async fn run(
    model: &dyn Model,
    messages: &[Message],
) -> (Result<ModelResponse, ModelError>, Vec<String>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let tools = tools();
    let request = ModelRequest {
        system: Some("be brief"),
        messages,
        tools: &tools,
        max_tokens: 1000,
    };
    let result = model.respond(request, &tx, &cancel).await;
    drop(tx);
    let mut deltas = Vec::new();
    while let Some(d) = rx.recv().await {
        deltas.push(d);
    }
    (result, deltas)
}

/// Runs the request, stalls are expected: cancels after the first delta and measures.
pub async fn cancel_after_first_delta(
    model: Box<dyn Model>,
) -> (Result<ModelResponse, ModelError>, Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let task = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let tools = tools();
            let messages = user("hi");
            let request = ModelRequest {
                system: None,
                messages: &messages,
                tools: &tools,
                max_tokens: 100,
            };
            model.respond(request, &tx, &cancel).await
        })
    };
    let first = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("first delta in time");
    assert_eq!(first.as_deref(), Some("Hel"));
    let start = Instant::now();
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(2), task)
        .await
        .expect("respond returns after cancel")
        .unwrap();
    (result, start.elapsed())
}

/// What one end-to-end deny turn left behind.
pub struct DenyTurn {
    /// Keeps the workspace alive while the test inspects it.
    pub _dir: tempfile::TempDir,
    pub ws: std::path::PathBuf,
    pub pod: std::sync::Arc<pod::runtime::Pod>,
    pub result: pod::protocol::RunResult,
    pub events: Vec<pod::protocol::Event>,
}

/// Writes a manifest for `provider` pointing at `mock` (the key `test-key-e2e` in a key file)
/// with `bash "rm *"` denied, creates `build/keep.txt`, and runs one turn.
pub async fn deny_turn(provider: &str, mock: &Mock) -> DenyTurn {
    // A key file, not a variable: `std::env::set_var` would change the environment of every
    // test of this binary (they share one process) while other threads read it.
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "test-key-e2e").unwrap();
    let manifest = format!(
        r#"
[model]
provider = "{provider}"
model = "test-model"
base_url = "{base}"
api_key_file = "{key}"
timeout_secs = 10
max_retries = 0

[permissions]
default_action = "allow"
[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
message = "Deleting files is not allowed in this workspace."
"#,
        base = mock.base,
        key = key.display(),
    );
    std::fs::write(ws.join("pod.toml"), manifest).unwrap();
    std::fs::create_dir(ws.join("build")).unwrap();
    std::fs::write(ws.join("build/keep.txt"), "x").unwrap();
    let mut manifest = pod::manifest::Manifest::load(&ws.join("pod.toml")).unwrap();
    // Session logs beside the workspace, in the same temporary folder.
    manifest.set_state_dir(&dir.path().join("state"));
    let pod = pod::runtime::Pod::open(manifest, pod::runtime::PodOptions::default()).unwrap();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        pod.run(
            vec![pod::protocol::InputItem::Text {
                text: "clean the build folder".into(),
            }],
            &tx,
            CancellationToken::new(),
        ),
    )
    .await
    .expect("the turn finishes")
    .unwrap();
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    DenyTurn {
        _dir: dir,
        ws,
        pod,
        result,
        events,
    }
}

/// The assertions both providers share: the command did not run, history holds the denial, the
/// turn ended normally, the final text streamed as `textDelta`s, and usage adds up.
pub fn assert_denied_turn(turn: &DenyTurn, call_id: &str, parts: &[&str], usage: (u64, u64)) {
    use pod::protocol::{CallResult, DeniedBy, Event, Item, StopReason};

    assert_eq!(
        turn.result.stop_reason,
        StopReason::EndTurn,
        "{:?}",
        turn.result.error
    );
    assert!(
        turn.ws.join("build/keep.txt").exists(),
        "the denied command ran"
    );

    let history = turn.pod.history();
    let results: Vec<_> = history
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult(CallResult {
                call_id,
                is_error,
                content,
                denied_by,
                ..
            }) => Some((call_id.clone(), *is_error, content.clone(), *denied_by)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "{history:?}");
    let (id, is_error, content, denied_by) = &results[0];
    assert_eq!(id, call_id);
    assert!(is_error);
    assert_eq!(*denied_by, Some(DeniedBy::Permission));
    assert!(content.starts_with("permission denied"), "{content}");
    assert!(content.contains("rm -rf build"), "{content}");

    let final_text: String = parts.concat();
    let last_text = history.iter().rev().find_map(|i| match i {
        Item::AssistantText { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert_eq!(last_text.as_deref(), Some(final_text.as_str()));

    let deltas: Vec<&str> = turn
        .events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, parts);
    assert!(turn.events.iter().any(|e| matches!(
        e,
        Event::ToolResult(CallResult { call_id: c, is_error: true, denied_by: Some(DeniedBy::Permission), .. })
            if c == call_id
    )));
    assert!(turn.events.iter().any(|e| matches!(
        e,
        Event::TurnEnded {
            stop_reason: StopReason::EndTurn,
            ..
        }
    )));

    assert_eq!(turn.result.usage.input_tokens, usage.0);
    assert_eq!(turn.result.usage.output_tokens, usage.1);
}

/// Runs one text-only turn against `mock` through a whole pod (the key in a key file, as in
/// [`deny_turn`]); returns its result.
pub async fn text_turn(provider: &str, mock: &Mock) -> pod::protocol::RunResult {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "test-key-max-tokens").unwrap();
    let manifest = format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"test-model\"\nbase_url = \"{base}\"\n\
         api_key_file = \"{key}\"\ntimeout_secs = 10\nmax_retries = 0\n",
        base = mock.base,
        key = key.display(),
    );
    std::fs::write(ws.join("pod.toml"), manifest).unwrap();
    let mut manifest = pod::manifest::Manifest::load(&ws.join("pod.toml")).unwrap();
    manifest.set_state_dir(&dir.path().join("state"));
    let pod = pod::runtime::Pod::open(manifest, pod::runtime::PodOptions::default()).unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    tokio::time::timeout(
        Duration::from_secs(20),
        pod.run(
            vec![pod::protocol::InputItem::Text {
                text: "write a long essay".into(),
            }],
            &tx,
            CancellationToken::new(),
        ),
    )
    .await
    .expect("the turn finishes")
    .unwrap()
}
