//! The approval round trip and the seeds' protocol flows over an in-memory connection
//! ([`super::wire::MemoryPod`]: `pod::server::serve` in this process, no binary, no pipes), with
//! the offline model (`!cmd` lines become bash calls), each transcript checked against
//! protocol.md "Rules the events obey". Moved from `tests/binary/flows.rs` with their
//! assertions unchanged; what needs a real process (stdin EOF and the exit within a second,
//! `--resume` over the header framing) stayed there.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::wire::{
    check_event_rules, has_tool, items_of, processes_in, wait_until, MemoryPod, Workspace,
};

fn text(input: &str) -> Value {
    json!({"input": [{"type": "text", "text": input}]})
}

fn code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or(0)
}

/// Serves a pod with approval on or off; returns it and its `initialize` result.
fn start(ws: &Workspace, approval: bool) -> (MemoryPod, Value) {
    let mut pod = MemoryPod::spawn(ws);
    let init = pod.initialize(approval);
    (pod, init)
}

fn reply(pod: &mut MemoryPod, request: &Value, decision: &str, message: Option<&str>) -> Value {
    let mut params = json!({"requestId": request["requestId"], "decision": decision});
    if let Some(m) = message {
        params["message"] = json!(m);
    }
    pod.request("permissionReply", params)
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn deny_rule_continues_the_turn_and_keeps_the_file() {
    let ws = Workspace::new(300);
    std::fs::create_dir(ws.path("build")).unwrap_or_default();
    let (mut pod, _) = start(&ws, true);
    let run = pod.call("run", text("!rm -rf build"));
    assert_eq!(run["stopReason"], "end_turn");
    let result = pod.wait_event_type("toolResult");
    assert_eq!(result["isError"], true);
    assert_eq!(result["deniedBy"], "permission");
    assert!(result["content"]
        .as_str()
        .unwrap_or("")
        .contains("Deleting files is not allowed"));
    assert!(ws.path("build").exists());
    // The turn went on: the model answered after the denied call.
    let history = pod.call("history", json!({}));
    assert!(!items_of(&history, "assistantText").is_empty());
    check_event_rules(&pod.events, true);
}

#[test]
fn ask_allow_once_runs_the_call() {
    let ws = Workspace::new(300);
    let (mut pod, init) = start(&ws, true);
    let run = pod.start("run", text("!touch made.txt"));
    let status = pod.wait_event("awaitingPermission", |e| e["state"] == "awaitingPermission");
    assert_eq!(status["type"], "status");
    let request = pod.wait_event_type("permissionRequest");
    assert_eq!(request["tool"], "bash");
    assert_eq!(request["input"]["command"], "touch made.txt");
    assert_eq!(
        request["options"],
        json!(["allow_once", "allow_session", "deny"])
    );
    assert!(request["reason"]
        .as_str()
        .unwrap_or("")
        .contains("approval required"));
    assert!(request["subjects"]
        .as_array()
        .is_some_and(|s| !s.is_empty()));
    assert_eq!(
        reply(&mut pod, &request, "allow_once", None)["result"],
        json!({})
    );
    let resolved = pod.wait_event_type("permissionResolved");
    assert_eq!(
        (resolved["decision"].clone(), resolved["by"].clone()),
        (json!("allow"), json!("client"))
    );
    let result = pod.wait_event_type("toolResult");
    assert!(result.get("deniedBy").is_none(), "{result}");
    let response = pod.response(&json!(run));
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(has_tool(&init, "bash"), "{init}");
    assert_eq!(result["isError"], false, "{result}");
    assert!(ws.path("made.txt").exists());
    // The run response came after the turn's last events.
    let last: Vec<&str> = pod
        .events
        .iter()
        .rev()
        .take(2)
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(last, ["status", "turnEnded"]);
    check_event_rules(&pod.events, true);
}

#[test]
fn deny_with_a_message_puts_the_message_in_the_result() {
    let ws = Workspace::new(300);
    let (mut pod, _) = start(&ws, true);
    let run = pod.start("run", text("!touch x"));
    let request = pod.wait_event_type("permissionRequest");
    reply(&mut pod, &request, "deny", Some("use the Makefile instead"));
    let result = pod.wait_event_type("toolResult");
    assert_eq!(result["isError"], true);
    assert_eq!(result["deniedBy"], "approval");
    assert!(result["content"]
        .as_str()
        .unwrap_or("")
        .contains("use the Makefile instead"));
    pod.response(&json!(run));
    check_event_rules(&pod.events, true);
}

#[test]
fn allow_session_answers_the_next_identical_ask() {
    let ws = Workspace::new(300);
    let (mut pod, _) = start(&ws, true);
    let run = pod.start("run", text("!ls -a"));
    let request = pod.wait_event_type("permissionRequest");
    reply(&mut pod, &request, "allow_session", None);
    pod.response(&json!(run));
    let requests_before = pod
        .events
        .iter()
        .filter(|e| e["type"] == "permissionRequest")
        .count();
    let run = pod.call("run", text("!ls -a"));
    let events = pod.turn_events(run["turnId"].as_str().unwrap_or(""));
    assert!(!events.iter().any(|e| e["type"] == "permissionRequest"));
    let resolved: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "permissionResolved")
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["by"], "session_grant");
    assert_eq!(resolved[0]["decision"], "allow");
    assert_eq!(
        pod.events
            .iter()
            .filter(|e| e["type"] == "permissionRequest")
            .count(),
        requests_before
    );
    let history = pod.call("history", json!({}));
    assert_eq!(items_of(&history, "sessionGrant").len(), 1);
    check_event_rules(&pod.events, true);
}

#[test]
fn ask_without_the_capability_fails_closed_without_a_request() {
    let ws = Workspace::new(300);
    let (mut pod, init) = start(&ws, false);
    assert_eq!(init["permissions"]["askMode"], "failClosed");
    let run = pod.call("run", text("!touch x"));
    assert_eq!(run["stopReason"], "end_turn");
    let result = pod.wait_event_type("toolResult");
    assert_eq!(result["isError"], true);
    assert_eq!(result["deniedBy"], "permission");
    assert!(result["content"]
        .as_str()
        .unwrap_or("")
        .contains("no approver is connected"));
    assert!(!ws.path("x").exists());
    // A reply has nothing to answer.
    let r = pod.request(
        "permissionReply",
        json!({"requestId": "perm_x", "decision": "allow_once"}),
    );
    assert_eq!(code(&r), -32004);
    check_event_rules(&pod.events, false);
}

#[test]
fn an_unanswered_request_times_out() {
    let ws = Workspace::new(1);
    let (mut pod, _) = start(&ws, true);
    let started = Instant::now();
    let run = pod.start("run", text("!touch late.txt"));
    let request = pod.wait_event_type("permissionRequest");
    assert!(request["expiresAt"].is_string());
    let resolved = pod.wait_event_type("permissionResolved");
    assert_eq!(
        (resolved["decision"].clone(), resolved["by"].clone()),
        (json!("deny"), json!("timeout"))
    );
    assert!(started.elapsed() >= Duration::from_millis(900));
    let result = pod.wait_event_type("toolResult");
    assert_eq!(result["deniedBy"], "approval");
    pod.response(&json!(run));
    let r = reply(&mut pod, &request, "allow_once", None);
    assert_eq!(code(&r), -32004);
    assert_eq!(r["error"]["data"]["state"], "resolved");
    check_event_rules(&pod.events, true);
}

#[test]
fn cancel_while_pending_denies_and_ends_the_turn_cancelled() {
    let ws = Workspace::new(300);
    let (mut pod, _) = start(&ws, true);
    let run = pod.start("run", text("!touch a\n!touch b"));
    pod.wait_event_type("permissionRequest");
    assert_eq!(pod.call("cancel", json!({})), json!({"cancelled": true}));
    let response = pod.response(&json!(run));
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let resolved: Vec<&Value> = pod
        .events
        .iter()
        .filter(|e| e["type"] == "permissionResolved")
        .collect();
    assert!(!resolved.is_empty());
    assert!(resolved
        .iter()
        .all(|e| e["by"] == "cancel" && e["decision"] == "deny"));
    let results: Vec<&Value> = pod
        .events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["isError"] == true));
    assert_eq!(pod.call("cancel", json!({})), json!({"cancelled": false}));
    // History never holds a call without its result.
    let history = pod.call("history", json!({}));
    assert_eq!(
        items_of(&history, "toolCall").len(),
        items_of(&history, "toolResult").len()
    );
    check_event_rules(&pod.events, true);
}

#[test]
fn unknown_duplicate_and_not_offered_replies() {
    let ws = Workspace::new(300);
    let (mut pod, _) = start(&ws, true);
    let r = pod.request(
        "permissionReply",
        json!({"requestId": "perm_nope", "decision": "deny"}),
    );
    assert_eq!(code(&r), -32004);
    assert_eq!(
        r["error"]["data"],
        json!({"requestId": "perm_nope", "state": "unknown"})
    );
    let run = pod.start("run", text("!touch y"));
    let request = pod.wait_event_type("permissionRequest");
    // A decision outside the options: -32602, and the request stays pending.
    let r = reply(&mut pod, &request, "allow_forever", None);
    assert_eq!(code(&r), -32602);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("`decision`"),
        "{r}"
    );
    assert_eq!(
        pod.call("history", json!({}))["items"]
            .as_array()
            .map(|i| i.iter().any(|i| i["type"] == "toolResult")),
        Some(false)
    );
    assert_eq!(reply(&mut pod, &request, "deny", None)["result"], json!({}));
    let r = reply(&mut pod, &request, "allow_once", None);
    assert_eq!(code(&r), -32004);
    assert_eq!(r["error"]["data"]["requestId"], request["requestId"]);
    assert_eq!(r["error"]["data"]["state"], "resolved");
    pod.response(&json!(run));
    check_event_rules(&pod.events, true);
}

#[test]
fn a_mixed_batch_commits_results_in_call_order() {
    let ws = Workspace::new(300);
    let (mut pod, _) = start(&ws, true);
    // Call 0 asks (answered late, denied); call 1 is denied by rule; call 2 is allowed by rule
    // and finishes first: the ask is answered once call 2's command has run (`done/.git` made)
    // and exited (the pod has no process left).
    let run = pod.start(
        "run",
        text("!touch slow.txt\n!rm -rf build\n!git init -q done"),
    );
    let request = pod.wait_event_type("permissionRequest");
    wait_until("call 2 has run and exited", || {
        ws.path("done/.git").exists() && processes_in(ws.dir.path()) == 0
    });
    reply(&mut pod, &request, "deny", None);
    let response = pod.response(&json!(run));
    let turn_id = response["result"]["turnId"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let events = pod.turn_events(&turn_id);
    let calls: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "toolCall")
        .map(|e| e["callId"].clone())
        .collect();
    let results: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .map(|e| e["callId"].clone())
        .collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls, results);
    let denied: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .map(|e| e["deniedBy"].clone())
        .collect();
    assert_eq!(
        denied,
        vec![json!("approval"), json!("permission"), Value::Null]
    );
    let history = pod.call("history", json!({}));
    let history_results: Vec<Value> = items_of(&history, "toolResult")
        .iter()
        .map(|i| i["callId"].clone())
        .collect();
    assert_eq!(history_results, calls);
    check_event_rules(&pod.events, true);
}

#[test]
fn shutdown_while_pending_answers_first_then_resolves_and_exits() {
    let ws = Workspace::new(300);
    let (mut pod, _) = start(&ws, true);
    let run = pod.start("run", text("!touch never.txt"));
    pod.wait_event_type("permissionRequest");
    let shutdown = pod.start("shutdown", json!({}));
    assert_eq!(pod.response(&json!(shutdown))["result"], json!({}));
    let resolved = pod.wait_event_type("permissionResolved");
    assert_eq!(
        (resolved["decision"].clone(), resolved["by"].clone()),
        (json!("deny"), json!("shutdown"))
    );
    let response = pod.response(&json!(run));
    assert_eq!(response["result"]["stopReason"], "cancelled");
    assert!(pod.wait_exit(Duration::from_secs(2)).success());
    let log = read(&ws.session_logs()[0]);
    assert!(log.contains("\"shutdown\""), "{log}");
    check_event_rules(&pod.events, true);
}

/// A `run` that activates a skill: its `allowed-tools` restrict every call of that turn over the
/// wire (`deniedBy: "skill"`), the manifest still decides what the skill lists, and the next turn
/// without the skill is unrestricted.
#[test]
fn a_skill_restricts_its_turn_over_the_wire() {
    let ws = Workspace::with_manifest(
        "[skills]\ndirectories = [\"skills\"]\n[permissions]\ndefault_action = \"allow\"\n\
         [[permissions.rule]]\ntool = \"bash\"\npattern = \"git push *\"\naction = \"deny\"\n",
    );
    std::fs::create_dir_all(ws.path("skills/notes")).unwrap();
    std::fs::write(
        ws.path("skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Writes notes.\nallowed-tools: Bash(echo *) Bash(git *)\n---\nWrite notes.\n",
    )
    .unwrap();
    let (mut pod, _) = start(&ws, false);
    let with_skill = json!({"input": [
        {"type": "skill", "name": "notes"},
        {"type": "text", "text": "!echo hi\n!touch x\n!git push origin main"},
    ]});
    assert_eq!(pod.call("run", with_skill)["stopReason"], "end_turn");
    let results: Vec<Value> = pod
        .events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .cloned()
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0]["isError"], false);
    assert_eq!(results[1]["deniedBy"], "skill");
    assert!(results[1]["content"]
        .as_str()
        .unwrap_or("")
        .contains("denied by skill \"notes\""));
    assert_eq!(results[2]["deniedBy"], "permission");
    assert!(!ws.path("x").exists());

    assert_eq!(pod.call("run", text("!touch x"))["stopReason"], "end_turn");
    assert!(ws.path("x").exists(), "the next turn was still restricted");
    let history = pod.call("history", json!({}));
    assert_eq!(items_of(&history, "skillActivated").len(), 1);
    check_event_rules(&pod.events, false);
}

/// A command line that made the earlier shell parser crawl (exponential backtracking, found by
/// fuzzing) is read at once now: the call is decided (an unparsed line, so not run), the turn
/// goes on, and the pod keeps serving.
#[test]
fn a_command_that_made_the_old_parser_crawl_is_decided_at_once() {
    let slow = std::fs::read("fuzz/known-slow/shell-quoted-array-index-backtracking").unwrap();
    let slow = String::from_utf8_lossy(&slow).replace('\n', " ");
    let command = format!("{slow}{slow}");
    let ws = Workspace::with_manifest("[permissions]\ndefault_action = \"allow\"\n");
    let (mut pod, _) = start(&ws, false);
    let input = format!("@bash {}", json!({ "command": command }));
    let run = pod.call("run", text(&input));
    assert_eq!(run["stopReason"], "end_turn");
    let result = pod.wait_event_type("toolResult");
    assert_eq!(result["deniedBy"], "permission", "{result}");
    let content = result["content"].as_str().unwrap_or("");
    assert!(content.contains("could not be parsed"), "{content}");
    assert_eq!(
        pod.call("history", json!({}))["items"]
            .as_array()
            .map(|a| a.is_empty()),
        Some(false)
    );
}

/// An opaque command (`eval ...`) is offered only a one-time answer: `allow_session` would
/// approve code nobody can read for the rest of the session. Sending it anyway is -32602 and the
/// request stays pending; a decision that is offered then settles it.
#[test]
fn a_decision_not_offered_is_refused_and_the_request_stays_pending() {
    let ws = Workspace::with_manifest("[permissions]\ndefault_action = \"allow\"\n");
    let (mut pod, _) = start(&ws, true);
    let run = pod.start("run", text("!eval 'touch z'"));
    let request = pod.wait_event_type("permissionRequest");
    assert_eq!(request["options"], json!(["allow_once", "deny"]));
    let r = reply(&mut pod, &request, "allow_session", None);
    assert_eq!(code(&r), -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("not offered"),
        "{r}"
    );
    assert_eq!(
        reply(&mut pod, &request, "allow_once", None)["result"],
        json!({})
    );
    assert_eq!(
        pod.response(&json!(run))["result"]["stopReason"],
        "end_turn"
    );
    assert!(ws.path("z").exists());
    check_event_rules(&pod.events, true);
}
