//! The seeds' flows that need the real process, over real pipes with the offline model (`!cmd`
//! lines become bash calls), each transcript checked against protocol.md "Rules the events obey":
//! stdin EOF while an ask is pending (the exit within a second), and `--resume` on the header
//! framing. The protocol and approval flows that need no process are in
//! `tests/engine/approvals.rs`, over an in-memory connection.

use crate::common;

use std::time::{Duration, Instant};

use common::{check_event_rules, items_of, Framing, PodProcess, Workspace};
use serde_json::{json, Value};

fn text(input: &str) -> Value {
    json!({"input": [{"type": "text", "text": input}]})
}

/// Starts a pod with approval on or off; returns it and its `initialize` result.
fn start(ws: &Workspace, approval: bool) -> (PodProcess, Value) {
    let mut pod = PodProcess::spawn(ws, Framing::Lines);
    let init = pod.initialize(approval);
    (pod, init)
}

fn reply(pod: &mut PodProcess, request: &Value, decision: &str, message: Option<&str>) -> Value {
    let mut params = json!({"requestId": request["requestId"], "decision": decision});
    if let Some(m) = message {
        params["message"] = json!(m);
    }
    pod.request("permissionReply", params)
}

#[test]
fn stdin_eof_while_pending_exits_zero_within_a_second_with_the_log_flushed() {
    let ws = Workspace::new(300);
    let (mut pod, _) = start(&ws, true);
    let _run = pod.start("run", text("!touch never.txt"));
    pod.wait_event_type("permissionRequest");
    let closed = Instant::now();
    pod.close_stdin();
    let status = pod.wait_exit(Duration::from_secs(3));
    assert!(status.success(), "{status:?}");
    assert!(
        closed.elapsed() < Duration::from_secs(1),
        "took {:?}",
        closed.elapsed()
    );
    let resolved = pod.wait_event_type("permissionResolved");
    assert_eq!(resolved["by"], "disconnect");
    let logs = ws.session_logs();
    assert_eq!(logs.len(), 1);
    let log = common::read(&logs[0]);
    assert!(log.contains("\"userMessage\""), "{log}");
    assert!(log.contains("\"toolCall\""), "{log}");
    assert!(log.contains("\"disconnect\""), "{log}");
    assert!(!ws.path("never.txt").exists());
    check_event_rules(&pod.events, true);
}

#[test]
fn resume_reports_resumed_keeps_history_and_session_grants() {
    let ws = Workspace::new(300);
    let (mut pod, first) = start(&ws, true);
    let run = pod.start("run", text("!touch kept.txt"));
    let request = pod.wait_event_type("permissionRequest");
    reply(&mut pod, &request, "allow_session", None);
    pod.response(&json!(run));
    pod.call("shutdown", json!({}));
    assert!(pod.wait_exit(Duration::from_secs(2)).success());
    check_event_rules(&pod.events, true);

    let id = first["session"]["id"].as_str().unwrap_or("").to_string();
    let mut pod = PodProcess::spawn_with(&ws, Framing::Headers, &["--resume", &id]);
    let init = pod.initialize(true);
    assert_eq!(
        init["session"],
        json!({"id": id, "resumed": true, "droppedGrants": 0})
    );
    let history = pod.call("history", json!({}));
    let users = items_of(&history, "userMessage");
    assert_eq!(users.len(), 1);
    assert_eq!(users[0]["text"], "!touch kept.txt");
    let run = pod.call("run", text("!touch kept.txt"));
    let events = pod.turn_events(run["turnId"].as_str().unwrap_or(""));
    assert!(!events.iter().any(|e| e["type"] == "permissionRequest"));
    assert!(events
        .iter()
        .any(|e| e["type"] == "permissionResolved" && e["by"] == "session_grant"));
    check_event_rules(&pod.events, true);
}
