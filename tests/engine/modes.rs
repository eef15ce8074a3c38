//! Modes (docs/permissions.md, "Modes") over an in-memory connection
//! ([`super::wire::MemoryPod`]): `accept-edits` writes inside the writable folders without
//! asking while deny rules and protected paths hold; `unattended` denies every ask at once;
//! `auto` is refused where the network is allowed; a prefix grant and an input edited before
//! approval. Each asserts what happened on disk. Moved from `tests/binary/modes.rs` with their
//! assertions unchanged; what needs the real binary (the user's configuration through
//! `POD_CONFIG`, `pod explain` and `pod grants`, the sandbox that decides `auto`) stayed there.

use serde_json::{json, Value};

use super::wire::{items_of, MemoryPod, Workspace};

const RULES: &str = "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"ask\"\n\
     [[permissions.rule]]\ntool = \"file_write\"\npattern = \"*.env\"\naction = \"deny\"\n";

fn run(pod: &mut MemoryPod, text: &str) -> Value {
    pod.call("run", json!({"input": [{"type": "text", "text": text}]}))
}

/// The `toolResult` events so far, in order.
fn results(pod: &MemoryPod) -> Vec<Value> {
    pod.events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .cloned()
        .collect()
}

fn write_line(path: &str, content: &str) -> String {
    format!("@file_write {}", json!({"path": path, "content": content}))
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn accept_edits_writes_inside_without_asking_and_deny_rules_still_hold() {
    let ws = Workspace::with_manifest(RULES);
    std::fs::create_dir(ws.path("src")).expect("src");
    let mut pod = MemoryPod::spawn(&ws);
    let init = pod.initialize(true);
    assert_eq!(init["permissions"]["mode"], "default", "{init}");
    assert!(
        !init["permissions"]["modes"]
            .as_array()
            .is_some_and(|m| m.contains(&json!("auto"))),
        "auto is offered where the kernel cannot bound a call: {init}"
    );
    let set = pod.call("setMode", json!({"mode": "accept-edits"}));
    assert_eq!(set["mode"], "accept-edits");
    let text = [
        write_line("src/lib.rs", "pub fn f() {}\n"),
        write_line("secret.env", "KEY=1"),
        write_line("pod.toml", "[permissions]\ndefault_action = \"allow\"\n"),
    ]
    .join("\n");
    let id = pod.start("run", json!({"input": [{"type": "text", "text": text}]}));
    // The protected manifest still asks: deny it.
    let request = pod.wait_event_type("permissionRequest");
    assert_eq!(request["input"]["path"], "pod.toml", "{request}");
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "deny"}),
    );
    let result = pod.response(&json!(id));
    assert_eq!(result["result"]["stopReason"], "end_turn", "{result}");
    let results = results(&pod);
    assert_eq!(results[0]["isError"], false, "{results:?}");
    assert_eq!(
        std::fs::read_to_string(ws.path("src/lib.rs")).expect("written"),
        "pub fn f() {}\n"
    );
    assert_eq!(results[1]["deniedBy"], "permission", "{results:?}");
    assert!(
        !ws.path("secret.env").exists(),
        "the deny rule did not hold"
    );
    assert!(
        read(&ws.manifest()).contains("*.env"),
        "pod.toml was rewritten"
    );
    // History says the mode decided the write, and records the change of mode.
    let history = pod.call("history", json!({}));
    assert_eq!(items_of(&history, "modeChanged").len(), 1, "{history}");
    assert!(items_of(&history, "permissionDecision")
        .iter()
        .any(|d| d["by"] == "mode" && d["decision"] == "allow"));
    // A write outside the workspace still asks (and fails closed for a client that says no).
    let outside = tempfile::tempdir().expect("tempdir");
    let path = outside.path().join("x.txt").display().to_string();
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": write_line(&path, "x")}]}),
    );
    let request = pod.wait_event_type("permissionRequest");
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "deny"}),
    );
    pod.response(&json!(id));
    assert!(!outside.path().join("x.txt").exists());
}

#[test]
fn unattended_denies_every_ask_at_once_and_auto_is_refused_here() {
    let ws = Workspace::with_manifest(RULES);
    let mut pod = MemoryPod::spawn(&ws);
    pod.initialize(true);
    let refused = pod.request("setMode", json!({"mode": "auto"}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    // RULES leave the network allowed, so the kernel does not bound every call, whatever else
    // this machine holds (namespaces, the exec gate).
    assert!(message.contains("the network is not denied"), "{message}");
    pod.call("setMode", json!({"mode": "unattended"}));
    run(&mut pod, "!touch made");
    let result = &results(&pod)[0];
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("the session is unattended")),
        "{result}"
    );
    assert!(!ws.path("made").exists());
    assert!(
        !pod.events.iter().any(|e| e["type"] == "permissionRequest"),
        "an unattended session asked"
    );
    // Status events carry the mode.
    assert!(pod
        .events
        .iter()
        .any(|e| e["type"] == "status" && e["mode"] == "unattended"));
}

#[test]
fn a_prefix_grant_covers_the_program_and_subcommand_and_never_an_opaque_form() {
    let ws = Workspace::with_manifest(RULES);
    std::fs::write(ws.path("victim"), "keep").expect("victim");
    let mut pod = MemoryPod::spawn(&ws);
    let init = pod.initialize(true);
    let session = init["session"]["id"].as_str().expect("id").to_string();
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": "!ls -a"}]}),
    );
    let request = pod.wait_event_type("permissionRequest");
    assert_eq!(request["prefixes"], json!(["ls *"]), "{request}");
    assert!(request["options"]
        .as_array()
        .is_some_and(|o| o.contains(&json!("allow_prefix"))));
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "allow_prefix"}),
    );
    pod.response(&json!(id));
    // Other arguments run unasked; an opaque form of the same program still asks (and fails
    // closed here: the reply is a deny), so its payload never runs.
    run(&mut pod, "!ls -l victim");
    let asked = pod
        .events
        .iter()
        .filter(|e| e["type"] == "permissionRequest")
        .count();
    assert_eq!(asked, 1, "ls -l asked again");
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": "!ls $(rm victim)"}]}),
    );
    let request = pod.wait_event("the opaque ask", |e| {
        e["type"] == "permissionRequest" && e["input"]["command"] == "ls $(rm victim)"
    });
    assert!(!request["options"]
        .as_array()
        .is_some_and(|o| o.contains(&json!("allow_prefix"))));
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "deny"}),
    );
    pod.response(&json!(id));
    assert!(ws.path("victim").exists());
    let history = pod.call("history", json!({}));
    let grants = items_of(&history, "sessionGrant");
    assert_eq!(grants.len(), 1, "{history}");
    assert_eq!(grants[0]["prefixes"], json!(["ls *"]));
    drop(pod);
    // A resumed session keeps it.
    let mut resumed = MemoryPod::resume(&ws, &session);
    resumed.initialize(true);
    run(&mut resumed, "!ls -R");
    assert!(
        !resumed
            .events
            .iter()
            .any(|e| e["type"] == "permissionRequest"),
        "the prefix grant was not restored"
    );
}

#[test]
fn an_input_edited_before_approval_is_decided_again_and_is_what_runs() {
    let ws = Workspace::with_manifest(&format!(
        "{RULES}[[permissions.rule]]\ntool = \"bash\"\npattern = \"rm *\"\naction = \"deny\"\n"
    ));
    std::fs::write(ws.path("victim"), "keep").expect("victim");
    let mut pod = MemoryPod::spawn(&ws);
    pod.initialize(true);
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": "!touch wrong-name"}]}),
    );
    let request = pod.wait_event_type("permissionRequest");
    // Only allow_once carries an edit.
    let refused = pod.request(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "allow_session",
               "input": {"command": "touch right-name"}}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "allow_once",
               "input": {"command": "touch right-name"}}),
    );
    pod.response(&json!(id));
    assert!(ws.path("right-name").exists());
    assert!(!ws.path("wrong-name").exists());
    // An edit into something a rule denies is denied.
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": "!touch other"}]}),
    );
    let request = pod.wait_event("the second ask", |e| {
        e["type"] == "permissionRequest" && e["input"]["command"] == "touch other"
    });
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "allow_once",
               "input": {"command": "rm victim"}}),
    );
    pod.response(&json!(id));
    assert!(
        ws.path("victim").exists(),
        "the edited input ran although denied"
    );
    let last = results(&pod).pop().expect("a result");
    assert!(
        last["content"]
            .as_str()
            .is_some_and(|c| c.contains("as edited before approval")),
        "{last}"
    );
    // History records both: the call as the model made it, and the input that was approved.
    let history = pod.call("history", json!({}));
    let amended = items_of(&history, "inputAmended");
    assert_eq!(amended.len(), 2, "{history}");
    assert_eq!(amended[0]["input"]["command"], "touch right-name");
}
