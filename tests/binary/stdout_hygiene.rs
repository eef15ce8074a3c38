//! Stdout hygiene under failure (`docs/hardening.md`, item 5): a panic inside the provider or a
//! tool never writes to stdout and never kills the connection. The panics are armed with
//! `POD_TEST_PANIC=1` (see `src/testing.rs`); stdout is read raw and every byte of it must belong
//! to a protocol message.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{check_event_rules, items_of, Workspace};
use serde_json::{json, Value};

struct Raw {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Every stdout line, parsed.
    seen: Vec<Value>,
    next: u64,
}

impl Raw {
    fn spawn(ws: &Workspace) -> Raw {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
            .args(["serve", "--trust", "--manifest"])
            .arg(ws.manifest())
            .env("POD_TEST_PANIC", "1")
            .env("RUST_BACKTRACE", "0")
            .env("XDG_STATE_HOME", ws.state_home())
            .current_dir(ws.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pod");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(format!("<not UTF-8: {e}>"));
                        return;
                    }
                }
            }
        });
        Raw {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
            next: 0,
        }
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next += 1;
        let text = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        let stdin = self.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{text}").expect("write");
        stdin.flush().expect("flush");
        self.next
    }

    /// Reads stdout until the response to `id`; every line must be a protocol message.
    fn until_response(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + *common::WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no response to {id}; seen: {:#?}", self.seen));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            assert_eq!(v["jsonrpc"], "2.0", "not a protocol message: {line}");
            let event = v["method"] == "event" && v.get("id").is_none();
            let response =
                v.get("id").is_some() && (v.get("result").is_some() ^ v.get("error").is_some());
            assert!(event || response, "not a protocol message: {line}");
            self.seen.push(v.clone());
            if v["id"] == id {
                return v;
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        let r = self.until_response(id);
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {r}"))
    }

    fn events(&self) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|v| v["method"] == "event")
            .map(|v| v["params"].clone())
            .collect()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(input: &str) -> Value {
    json!({"input": [{"type": "text", "text": input}]})
}

#[test]
fn a_panic_in_the_provider_or_a_tool_ends_the_turn_with_error_and_the_connection_lives() {
    let ws = Workspace::with_manifest(
        r#"[pod]
name = "panic"
[model]
provider = "offline"
[tools]
enabled = ["bash", "read"]
[permissions]
default_action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "echo ask*"
action = "ask"

[[permissions.rule]]
tool = "read"
pattern = "ask*"
action = "ask"
"#,
    );
    std::fs::write(ws.path("a.txt"), "hello\n").unwrap_or_default();
    let mut pod = Raw::spawn(&ws);
    pod.call(
        "initialize",
        json!({"protocolVersion": 1, "capabilities": {"approval": {}}}),
    );

    // The provider panics.
    let r = pod.call("run", text("POD_TEST_PANIC:model"));
    assert_eq!(r["stopReason"], "error", "{r}");
    assert!(
        r["error"].as_str().unwrap_or("").contains("panicked"),
        "{r}"
    );

    // The next run works.
    let r = pod.call("run", text("!echo fine"));
    assert_eq!(r["stopReason"], "end_turn", "{r}");

    // A tool panics after an earlier call of the same response ran: the open call is closed.
    let r = pod.call(
        "run",
        text("@read {\"path\":\"a.txt\"}\n@read {\"path\":\"POD_TEST_PANIC:tool\"}"),
    );
    assert_eq!(r["stopReason"], "error", "{r}");
    let turn_id = r["turnId"].as_str().unwrap_or("").to_string();
    let turn: Vec<Value> = pod
        .events()
        .into_iter()
        .filter(|e| e["turnId"] == turn_id)
        .collect();
    let kinds: Vec<&str> = turn.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds.last(), Some(&"turnEnded"), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "toolCall").count(),
        kinds.iter().filter(|k| **k == "toolResult").count(),
        "{kinds:?}"
    );

    // History holds a result for every call, and the turn's end, even after the panics.
    let history = pod.call("history", json!({}));
    let calls = items_of(&history, "toolCall").len();
    let results = items_of(&history, "toolResult").len();
    assert_eq!(calls, results, "{history}");
    let ended: Vec<&Value> = items_of(&history, "turnEnded");
    assert!(ended
        .iter()
        .any(|e| e["turnId"] == turn_id && e["stopReason"] == "error"));

    // A tool panics while another call of the same response waits for approval: the request
    // gets its one `permissionResolved` (denied, by cancel) and a late reply is `-32004`. The
    // asking call is a `read` (decided at once, in call order) rather than a `bash` call, whose
    // command is parsed on another thread and may still be parsing when the panic ends the turn.
    let r = pod.call(
        "run",
        text("@read {\"path\":\"ask.txt\"}\n@read {\"path\":\"POD_TEST_PANIC:tool\"}"),
    );
    assert_eq!(r["stopReason"], "error", "{r}");
    let turn_id = r["turnId"].as_str().unwrap_or("").to_string();
    let events = pod.events();
    let request = events
        .iter()
        .find(|e| e["type"] == "permissionRequest" && e["turnId"] == turn_id)
        .cloned()
        .unwrap_or_else(|| panic!("no permissionRequest in {events:#?}"));
    let resolved: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "permissionResolved" && e["requestId"] == request["requestId"])
        .collect();
    assert_eq!(resolved.len(), 1, "{events:#?}");
    assert_eq!(resolved[0]["decision"], "deny");
    assert_eq!(resolved[0]["by"], "cancel");
    let id = pod.send(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "allow_once"}),
    );
    let late = pod.until_response(id);
    assert_eq!(late["error"]["code"], -32004, "{late}");
    assert_eq!(late["error"]["data"]["state"], "resolved", "{late}");

    // And the connection still runs turns, with tools.
    let r = pod.call("run", text("@read {\"path\":\"a.txt\"}"));
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    check_event_rules(&pod.events(), true);

    // stdin EOF: a clean exit; stderr carries the panic messages, stdout never did.
    pod.stdin = None;
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = pod.child.try_wait().expect("try_wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "pod did not exit");
        // Paces the poll for the exit; the deadline above decides.
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
    // Every line left, up to the end of stdout (the pod is gone, so it comes at once), however
    // slowly the reader thread gets them.
    while let Ok(line) = pod.lines.recv_timeout(*common::WAIT) {
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0");
    }
    let mut stderr = String::new();
    if let Some(mut e) = pod.child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    assert!(stderr.contains("POD_TEST_PANIC:model"), "stderr: {stderr}");
}

#[test]
fn without_the_variable_the_markers_are_plain_text() {
    let ws = Workspace::new(300);
    let mut pod = common::PodProcess::spawn(&ws, common::Framing::Lines);
    pod.initialize(true);
    let r = pod.call("run", text("POD_TEST_PANIC:model"));
    assert_eq!(r["stopReason"], "end_turn", "{r}");
}
