//! What a test client of `pod serve` keeps of one connection, whatever carries it: the real
//! binary's pipes (`PodProcess` in `tests/common/mod.rs`) or an in-process pod on an in-memory
//! connection (`MemoryPod` in `tests/engine/wire.rs`). It writes requests in a framing, files
//! every message the pod writes (events in arrival order, responses until taken), turns a hang
//! into a test failure (every wait has a deadline), and checks a transcript against
//! protocol.md "Rules the events obey". Shared by the `binary` and `engine` test binaries, so
//! a test moved from one to the other keeps its assertions word for word.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long a wait may go without a message from the pod before the test fails: 10 s, or
/// `POD_TEST_WAIT_SECS` (the run in an emulated VM of `tests/vm/`, many times slower).
pub static WAIT: std::sync::LazyLock<Duration> = std::sync::LazyLock::new(|| {
    let secs = std::env::var("POD_TEST_WAIT_SECS").ok();
    Duration::from_secs(secs.and_then(|s| s.parse().ok()).unwrap_or(10))
});
/// How long one wait may take however much the pod says meanwhile: a session of many calls
/// (`tests/binary/prompts.rs`) takes longer than [`WAIT`] on a loaded machine, but never this.
pub const LONGEST: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Lines,
    Headers,
}

pub const BOTH: [Framing; 2] = [Framing::Lines, Framing::Headers];

/// One connection to a pod and what the pod has said on it so far.
pub struct Conversation {
    /// The pod's input; `None` once closed (EOF for the pod).
    stdin: Option<Box<dyn Write + Send>>,
    /// Each message the pod wrote, parsed (or why it is not a protocol message), in order.
    incoming: mpsc::Receiver<Result<Value, String>>,
    pub framing: Framing,
    next_id: u64,
    /// Every event's params, in arrival order.
    pub events: Vec<Value>,
    /// Index into `events` of the first event `wait_event` has not looked at.
    cursor: usize,
    /// Responses (and batch arrays) not taken yet, in arrival order.
    replies: VecDeque<Value>,
}

impl Conversation {
    /// A connection that writes to `stdin` and reads what arrives on `incoming`.
    pub fn new(
        stdin: Box<dyn Write + Send>,
        incoming: mpsc::Receiver<Result<Value, String>>,
        framing: Framing,
    ) -> Conversation {
        Conversation {
            stdin: Some(stdin),
            incoming,
            framing,
            next_id: 0,
            events: Vec::new(),
            cursor: 0,
            replies: VecDeque::new(),
        }
    }

    /// Closes stdin (EOF for the pod).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Files every message left until the pod's output ends (it is gone, so that comes at
    /// once), however slowly they are read; fails after [`WAIT`] without the end.
    pub fn drain_to_end(&mut self) {
        while let Some(m) = self.receive(*WAIT) {
            self.file(m);
        }
    }

    /// Writes bytes as they are (no framing).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("write to pod");
        stdin.flush().expect("flush to pod");
    }

    /// Writes one message body in this connection's framing.
    pub fn send_raw(&mut self, body: &[u8]) {
        let mut bytes = Vec::new();
        match self.framing {
            Framing::Lines => {
                bytes.extend_from_slice(body);
                bytes.push(b'\n');
            }
            Framing::Headers => {
                bytes.extend(format!("Content-Length: {}\r\n\r\n", body.len()).bytes());
                bytes.extend_from_slice(body);
            }
        }
        self.send_bytes(&bytes);
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// Sends a request with a fresh numeric id; returns the id.
    pub fn start(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and waits for its response (the whole response object).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.response(&json!(id))
    }

    /// The `result` of a request that must succeed.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        match response.get("result") {
            Some(r) => r.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    pub fn initialize(&mut self, approval: bool) -> Value {
        let capabilities = if approval {
            json!({"approval": {}})
        } else {
            json!({})
        };
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientInfo": {"name": "test", "version": "0"},
                   "capabilities": capabilities}),
        )
    }

    /// Receives one message (any kind), failing the test after `timeout`.
    pub fn receive(&mut self, timeout: Duration) -> Option<Value> {
        match self.incoming.recv_timeout(timeout) {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => panic!("pod wrote something that is not a protocol message: {e}"),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Files one message: events into `events`, everything else into `replies`.
    pub fn file(&mut self, message: Value) {
        if message.get("method") == Some(&json!("event")) {
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            assert!(message.get("id").is_none(), "events are notifications");
            self.events.push(message["params"].clone());
        } else {
            self.replies.push_back(message);
        }
    }

    fn take_reply(&mut self, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let at = self.replies.iter().position(pred)?;
        self.replies.remove(at)
    }

    /// Pumps messages until `done` says yes; panics after [`WAIT`] without a message (a pod
    /// that went silent), or after [`LONGEST`] in all.
    fn pump_until<T>(&mut self, what: &str, mut done: impl FnMut(&mut Self) -> Option<T>) -> T {
        let end = Instant::now() + LONGEST;
        loop {
            if let Some(t) = done(self) {
                return t;
            }
            let left = end.saturating_duration_since(Instant::now()).min(*WAIT);
            match self.receive(left) {
                Some(m) => self.file(m),
                None => panic!(
                    "timed out waiting for {what} (no message for {} s, or {} s in all); events \
                     so far: {:#?}",
                    WAIT.as_secs(),
                    LONGEST.as_secs(),
                    self.events
                ),
            }
        }
    }

    /// Waits for the response with this id (any JSON id).
    pub fn response(&mut self, id: &Value) -> Value {
        self.pump_until(&format!("the response to id {id}"), |s| {
            s.take_reply(|r| r.is_object() && r.get("id") == Some(id))
        })
    }

    /// Waits for the next message without a usable id (an `id: null` error or a batch array).
    pub fn next_other(&mut self) -> Value {
        self.pump_until("a response without id", |s| {
            s.take_reply(|r| r.is_array() || r["id"].is_null())
        })
    }

    /// Waits for the next non-event message of any kind.
    pub fn next_reply(&mut self) -> Value {
        self.pump_until("a response", |s| s.replies.pop_front())
    }

    /// Waits for the next not-yet-seen event matching `pred`; returns its params.
    pub fn wait_event(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.pump_until(what, |s| {
            let found = s.events[s.cursor..].iter().position(&pred)?;
            let index = s.cursor + found;
            s.cursor = index + 1;
            Some(s.events[index].clone())
        })
    }

    /// Waits for whichever comes first: the next not-yet-seen event of type `kind` (`Ok`) or the
    /// response to request `id` (`Err`), for a client that answers while a request runs.
    pub fn event_or_response(&mut self, kind: &str, id: &Value) -> Result<Value, Value> {
        self.pump_until(&format!("a {kind} event or the response to {id}"), |s| {
            if let Some(found) = s.events[s.cursor..].iter().position(|e| e["type"] == kind) {
                let index = s.cursor + found;
                s.cursor = index + 1;
                return Some(Ok(s.events[index].clone()));
            }
            s.take_reply(|r| r.is_object() && r.get("id") == Some(id))
                .map(Err)
        })
    }

    pub fn wait_event_type(&mut self, kind: &str) -> Value {
        self.wait_event(kind, |e| e["type"] == kind)
    }

    /// Asserts nothing arrives for `quiet` (used after notifications).
    pub fn assert_silent(&mut self, quiet: Duration) {
        if let Some(m) = self.receive(quiet) {
            panic!("expected no output, got {m}");
        }
    }

    /// Files whatever arrives during `d` (events and replies); never fails.
    pub fn pump_for(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match self.incoming.recv_timeout(left) {
                Ok(Ok(m)) => self.file(m),
                Ok(Err(e)) => panic!("pod wrote something that is not a protocol message: {e}"),
                Err(_) => return,
            }
        }
    }

    /// Every event of one turn.
    pub fn turn_events(&self, turn_id: &str) -> Vec<Value> {
        self.events
            .iter()
            .filter(|e| e["turnId"] == turn_id)
            .cloned()
            .collect()
    }
}

/// The example manifest's rules (`examples/pod.toml`) with a chosen ask timeout:
/// `default_action = "ask"`, `bash "rm *"` deny, `bash "git *"` allow, `*.env` denied.
pub fn manifest_text(ask_timeout_secs: u64) -> String {
    format!(
        r#"[pod]
name = "test"
workspace = "."

[model]
provider = "offline"

[tools]
enabled = ["bash", "read", "file_write", "edit", "grep", "glob"]

[permissions]
default_action = "ask"
ask_timeout_secs = {ask_timeout_secs}

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
message = "Deleting files is not allowed in this workspace."

[[permissions.rule]]
tool = "bash"
pattern = "git *"
action = "allow"

[[permissions.rule]]
tool = "read"
pattern = "*.env"
action = "deny"
"#
    )
}

/// Whether `initialize` lists the tool `name`.
pub fn has_tool(init: &Value, name: &str) -> bool {
    init["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == name))
}

/// Checks every rule of protocol.md "Rules the events obey" on a recorded event stream.
pub fn check_event_rules(events: &[Value], approval: bool) {
    // No permissionRequest without the capability.
    if !approval {
        assert!(
            !events.iter().any(|e| e["type"] == "permissionRequest"),
            "a permissionRequest reached a client without capabilities.approval"
        );
    }
    let mut pending: Vec<String> = Vec::new();
    let mut last_status: Option<String> = None;
    // Per turn: calls in order, results in order, and whether the turn ended.
    let mut calls: HashMap<String, Vec<String>> = HashMap::new();
    let mut results: HashMap<String, Vec<String>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let kind = e["type"].as_str().unwrap_or("");
        let turn = e["turnId"].as_str().unwrap_or("").to_string();
        match kind {
            "status" => {
                let state = e["state"].as_str().unwrap_or("").to_string();
                if !pending.is_empty() {
                    assert_eq!(
                        state, "awaitingPermission",
                        "status while pending, event {i}"
                    );
                }
                last_status = Some(state);
            }
            "permissionRequest" => {
                assert_eq!(
                    last_status.as_deref(),
                    Some("awaitingPermission"),
                    "no awaitingPermission status before request at event {i}"
                );
                pending.push(e["requestId"].as_str().unwrap_or("").to_string());
            }
            "permissionResolved" => {
                let id = e["requestId"].as_str().unwrap_or("");
                if e["by"] != "session_grant" {
                    let at = pending.iter().position(|p| p == id);
                    assert!(
                        at.is_some(),
                        "permissionResolved {id} without a pending request"
                    );
                    if let Some(at) = at {
                        pending.remove(at);
                    }
                }
            }
            "toolCall" => calls
                .entry(turn)
                .or_default()
                .push(e["callId"].as_str().unwrap_or("").to_string()),
            "toolResult" => {
                let call = e["callId"].as_str().unwrap_or("").to_string();
                let done = results.entry(turn.clone()).or_default();
                assert!(!done.contains(&call), "two results for {call}");
                assert!(
                    calls.get(&turn).is_some_and(|c| c.contains(&call)),
                    "result for {call} before its call"
                );
                done.push(call);
            }
            "turnEnded" => {
                let called = calls.get(&turn).cloned().unwrap_or_default();
                let answered = results.get(&turn).cloned().unwrap_or_default();
                assert_eq!(called, answered, "results (in call order) before turnEnded");
            }
            _ => {}
        }
    }
    assert!(pending.is_empty(), "requests never resolved: {pending:?}");
    // Each request resolved exactly once.
    let mut resolved: HashMap<&str, usize> = HashMap::new();
    for e in events.iter().filter(|e| e["type"] == "permissionResolved") {
        *resolved
            .entry(e["requestId"].as_str().unwrap_or(""))
            .or_default() += 1;
    }
    for e in events.iter().filter(|e| e["type"] == "permissionRequest") {
        let id = e["requestId"].as_str().unwrap_or("");
        assert_eq!(resolved.get(id), Some(&1), "request {id} resolved once");
    }
}

/// The history items of one kind.
pub fn items_of<'a>(history: &'a Value, kind: &str) -> Vec<&'a Value> {
    history["items"]
        .as_array()
        .map(|items| items.iter().filter(|i| i["type"] == kind).collect())
        .unwrap_or_default()
}
