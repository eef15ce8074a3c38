//! `session_start`, `user_prompt` and `permission_denied` hooks through the real binary and a
//! loopback provider: the context a hook adds is what the provider receives, a prompt a hook
//! refuses (or that a failing hook refuses) never reaches the provider, a denied call is told
//! to its `permission_denied` hook without the turn waiting for it, and an untrusted project's
//! hooks never run.

use crate::common;

use common::provider::{self, Api, Provider};
use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

const PROMPT: &str = "please summarize PROMPT-7781";

/// A workspace for `provider` with `hooks` (TOML) after an allow-all `[permissions]`, and each
/// `(name, body)` of `scripts` written as `hooks/<name>`.
fn workspace(
    provider: &Provider,
    permissions: &str,
    hooks: &str,
    scripts: &[(&str, &str)],
) -> Workspace {
    let rest = format!("[permissions]\n{permissions}\n\n{hooks}\n");
    let ws = Workspace::with_manifest(&provider::manifest(Api::Anthropic, provider, "", &rest));
    std::fs::write(ws.path("key"), "test-key").unwrap();
    std::fs::create_dir_all(ws.path("hooks")).unwrap();
    for (name, body) in scripts {
        std::fs::write(ws.path(&format!("hooks/{name}")), body).unwrap();
    }
    ws
}

/// One prompt to a pod of `ws`: the `run` result.
fn run(ws: &Workspace) -> (PodProcess, Value) {
    let mut pod = PodProcess::spawn(ws, Framing::Lines);
    pod.initialize(false);
    let result = pod.call("run", json!({"input": [{"type": "text", "text": PROMPT}]}));
    (pod, result)
}

fn hook(event: &str, script: &str) -> String {
    format!("[[hooks.{event}]]\ncommand = [\"python3\", \"hooks/{script}\"]\n")
}

#[test]
fn a_session_start_hooks_context_reaches_every_request() {
    let provider = Provider::start(vec![
        provider::sse(Api::Anthropic.calls(&[("c1", "read", json!({"path": "pod.toml"}))])),
        provider::sse(Api::Anthropic.text("done")),
    ]);
    let start = r#"import json, sys
event = json.load(sys.stdin)
assert event["event"] == "session_start", event
assert event["sessionId"], event
print(json.dumps({"action": "context", "text": "CTX-START source=" + event["source"]}))
"#;
    let ws = workspace(
        &provider,
        "default_action = \"allow\"",
        &hook("session_start", "start.py"),
        &[("start.py", start)],
    );
    let (_pod, result) = run(&ws);
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for request in &requests {
        let system = request["system"].to_string();
        assert!(system.contains("CTX-START source=new"), "{request}");
    }
}

#[test]
fn a_session_start_hook_that_fails_leaves_the_session_without_its_context() {
    let provider = Provider::start(vec![provider::sse(Api::Anthropic.text("done"))]);
    let ws = workspace(
        &provider,
        "default_action = \"allow\"",
        &hook("session_start", "start.py"),
        &[("start.py", "print('not json')\n")],
    );
    let (mut pod, result) = run(&ws);
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(
        !requests[0].to_string().contains("not json"),
        "{}",
        requests[0]
    );
    let history = pod.call("history", json!({}));
    let failed = common::items_of(&history, "hookFailed");
    assert_eq!(failed.len(), 1, "{history}");
    let error = failed[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("hooks.session_start at line"), "{error}");
}

#[test]
fn a_resumed_session_gets_its_start_context_afresh_and_keeps_its_prompt_context() {
    let provider = Provider::start(vec![
        provider::sse(Api::Anthropic.text("one")),
        provider::sse(Api::Anthropic.text("two")),
    ]);
    let start = r#"import json, sys
event = json.load(sys.stdin)
print(json.dumps({"action": "context", "text": "CTX-START source=" + event["source"]}))
"#;
    let prompt = r#"import json, sys
event = json.load(sys.stdin)
print(json.dumps({"action": "context", "text": "CTX-PROMPT for " + event["turnId"]}))
"#;
    let hooks = format!(
        "{}{}",
        hook("session_start", "start.py"),
        hook("user_prompt", "prompt.py")
    );
    let ws = workspace(
        &provider,
        "default_action = \"allow\"",
        &hooks,
        &[("start.py", start), ("prompt.py", prompt)],
    );
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let init = pod.initialize(false);
    let session = init["session"]["id"].as_str().expect("id").to_string();
    let first = pod.call("run", json!({"input": [{"type": "text", "text": PROMPT}]}));
    assert_eq!(first["stopReason"], "end_turn", "{first}");
    pod.close_stdin();
    assert!(pod.wait_exit(*common::WAIT).success());
    let mut pod = PodProcess::spawn_with(&ws, Framing::Lines, &["--resume", &session]);
    let init = pod.initialize(false);
    assert_eq!(init["session"]["resumed"], true, "{init}");
    let second = pod.call("run", json!({"input": [{"type": "text", "text": "again"}]}));
    assert_eq!(second["stopReason"], "end_turn", "{second}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let system = requests[1]["system"].to_string();
    assert!(system.contains("CTX-START source=resume"), "{system}");
    assert!(!system.contains("source=new"), "{system}");
    let messages = requests[1]["messages"].to_string();
    for turn in [&first["turnId"], &second["turnId"]] {
        let context = format!("CTX-PROMPT for {}", turn.as_str().unwrap_or_default());
        assert_eq!(messages.matches(&context).count(), 1, "{messages}");
    }
}

#[test]
fn a_user_prompt_hooks_context_reaches_the_provider_with_the_prompt() {
    let provider = Provider::start(vec![provider::sse(Api::Anthropic.text("done"))]);
    let prompt = r#"import json, sys
event = json.load(sys.stdin)
assert event["event"] == "user_prompt", event
assert event["prompt"] == "please summarize PROMPT-7781", event
print(json.dumps({"action": "context", "text": "CTX-PROMPT for " + event["turnId"]}))
"#;
    let ws = workspace(
        &provider,
        "default_action = \"allow\"",
        &hook("user_prompt", "prompt.py"),
        &[("prompt.py", prompt)],
    );
    let (_pod, result) = run(&ws);
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let messages = requests[0]["messages"].to_string();
    assert!(messages.contains("PROMPT-7781"), "{messages}");
    let turn = result["turnId"].as_str().unwrap_or_default();
    assert!(
        messages.contains(&format!("CTX-PROMPT for {turn}")),
        "{messages}"
    );
}

/// A prompt a `user_prompt` hook refuses: the provider is never asked, the client is told
/// why (the `run` result and `turnEnded`), and the prompt is not kept in history.
fn refused_by(script: &str) -> (String, Value) {
    let provider = Provider::start(vec![provider::sse(Api::Anthropic.text("done"))]);
    let ws = workspace(
        &provider,
        "default_action = \"allow\"",
        &hook("user_prompt", "prompt.py"),
        &[("prompt.py", script)],
    );
    let (mut pod, result) = run(&ws);
    assert_eq!(result["stopReason"], "refused", "{result}");
    let ended = pod.wait_event_type("turnEnded");
    assert_eq!(ended["stopReason"], "refused", "{ended}");
    assert_eq!(ended["error"], result["error"], "{ended}");
    assert_eq!(provider.requests().len(), 0, "the provider was asked");
    let history = pod.call("history", json!({}));
    assert!(
        !history.to_string().contains("PROMPT-7781"),
        "the refused prompt is in history: {history}"
    );
    assert_eq!(
        common::items_of(&history, "promptRefused").len(),
        1,
        "{history}"
    );
    let error = result["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("hooks.user_prompt at line"), "{error}");
    (error, history)
}

#[test]
fn a_user_prompt_hook_that_refuses_keeps_the_prompt_from_the_model() {
    let (error, _) = refused_by(
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({\"action\": \"refuse\", \"message\": \"no ticket numbers\"}))\n",
    );
    assert!(error.contains("no ticket numbers"), "{error}");
}

#[test]
fn a_user_prompt_hook_exiting_2_refuses_with_its_stderr() {
    let (error, _) =
        refused_by("import sys\nsys.stderr.write('frozen for the release')\nsys.exit(2)\n");
    assert!(error.contains("frozen for the release"), "{error}");
}

#[test]
fn a_user_prompt_hook_that_crashes_refuses_the_prompt() {
    let (error, _) = refused_by("import sys\nsys.exit(1)\n");
    assert!(error.contains("exited with code 1"), "{error}");
    assert!(error.contains("fails refuses the prompt"), "{error}");
}

#[test]
fn a_user_prompt_hook_printing_garbage_refuses_the_prompt() {
    let (error, _) = refused_by("print('{not json')\n");
    assert!(error.contains("not a valid answer"), "{error}");
}

#[test]
fn a_denied_call_is_told_to_the_permission_denied_hook_without_the_turn_waiting() {
    let provider = Provider::start(vec![
        provider::sse(Api::Anthropic.calls(&[("c1", "bash", json!({"command": "rm -rf build"}))])),
        provider::sse(Api::Anthropic.text("done")),
    ]);
    // Writes what it saw, then waits for `release` (up to its timeout) before it ends: a turn
    // that waited for it could not end before the test creates `release`.
    let denied = r#"import json, os, sys, time
seen = sys.stdin.read()
with open("denied.tmp", "w") as f:
    f.write(seen)
os.rename("denied.tmp", "denied.json")
deadline = time.time() + 60
while not os.path.exists("release") and time.time() < deadline:
    time.sleep(0.02)
open("finished", "w").close()
"#;
    let hooks = format!(
        "{}timeout_secs = 60\ntools = [\"bash\"]\n",
        hook("permission_denied", "denied.py")
    );
    let ws = workspace(
        &provider,
        "default_action = \"allow\"\n\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"rm *\"\naction = \"deny\"",
        &hooks,
        &[("denied.py", denied)],
    );
    let (mut pod, result) = run(&ws);
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let tool_result = pod.wait_event_type("toolResult");
    assert_eq!(tool_result["deniedBy"], "permission", "{tool_result}");
    assert!(
        !ws.path("finished").exists(),
        "the turn waited for the permission_denied hook"
    );
    common::wait_until("the permission_denied hook wrote what it saw", || {
        ws.path("denied.json").exists()
    });
    let seen: Value = serde_json::from_str(&common::read(&ws.path("denied.json"))).unwrap();
    assert_eq!(seen["event"], "permission_denied", "{seen}");
    assert_eq!(seen["tool"], "bash", "{seen}");
    assert_eq!(seen["callId"], tool_result["callId"], "{seen}");
    assert_eq!(seen["input"]["command"], "rm -rf build", "{seen}");
    assert_eq!(seen["deniedBy"], "permission", "{seen}");
    assert!(
        seen["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("permission denied"),
        "{seen}"
    );
    std::fs::write(ws.path("release"), "").unwrap();
    common::wait_until("the permission_denied hook ended", || {
        ws.path("finished").exists()
    });
}

#[test]
fn an_untrusted_projects_prompt_and_session_hooks_never_run() {
    let touch = |event: &str| {
        format!(
            "[[hooks.{event}]]\ncommand = [\"sh\", \"-c\", \"touch ran-{event}; echo '{{\\\"action\\\":\\\"continue\\\"}}'\"]\n"
        )
    };
    let ws = Workspace::with_manifest(&format!(
        "[pod]\nname = \"t\"\n[permissions]\ndefault_action = \"deny\"\n{}{}{}",
        touch("session_start"),
        touch("user_prompt"),
        touch("permission_denied")
    ));
    let mut pod = PodProcess::spawn_untrusted(&ws, Framing::Lines, &[], &[]);
    let init = pod.initialize(false);
    let listed = init.to_string();
    for what in [
        "when a session starts",
        "before each prompt",
        "after denied calls",
    ] {
        assert!(
            listed.contains(what),
            "the ignored hook is not listed ({what}): {init}"
        );
    }
    // A stricter project setting holds untrusted: the call is denied.
    let result = pod.call(
        "run",
        json!({"input": [{"type": "text", "text": "@bash {\"command\": \"touch x\"}"}]}),
    );
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let tool_result = pod.wait_event_type("toolResult");
    assert!(tool_result["deniedBy"].is_string(), "{tool_result}");
    for event in ["session_start", "user_prompt", "permission_denied"] {
        assert!(
            !ws.path(&format!("ran-{event}")).exists(),
            "the untrusted {event} hook ran"
        );
    }
    pod.close_stdin();
    assert!(pod.wait_exit(*common::WAIT).success());
    // The control: trusted, the same hooks run (so their absence above means something).
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    pod.call(
        "run",
        json!({"input": [{"type": "text", "text": "@bash {\"command\": \"touch x\"}"}]}),
    );
    assert!(ws.path("ran-session_start").exists());
    assert!(ws.path("ran-user_prompt").exists());
    common::wait_until("the trusted permission_denied hook ran", || {
        ws.path("ran-permission_denied").exists()
    });
}

#[test]
fn pod_check_names_the_event_of_a_hook_whose_script_is_missing() {
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\n[[hooks.user_prompt]]\ncommand = [\"python3\", \"hooks/gone.py\"]\n",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("check")
        .arg(ws.manifest())
        .env("XDG_STATE_HOME", ws.state_home())
        .env("POD_CONFIG", "")
        .output()
        .expect("pod check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("hooks.user_prompt: hooks/gone.py does not exist")
            && text.contains("refuse every prompt"),
        "{text}"
    );
}
