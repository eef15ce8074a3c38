//! `post_tool_call` hooks through the real binary and a loopback provider: what the hook does
//! to a result is what the model receives in its next request, and a hook that fails withholds
//! the result instead of letting it through.

use crate::common;

use common::provider::{self, Api, Provider};
use common::{Framing, PodProcess, Workspace};
use serde_json::json;

const SECRET: &str = "sk-live-4242424242";

/// A redacting hook: replaces the secret in every bash result.
const REDACT: &str = r#"import json, sys
call = json.load(sys.stdin)
assert call["event"] == "post_tool_call"
text = call["result"]["content"].replace("sk-live-4242424242", "[redacted]")
print(json.dumps({"action": "replace", "content": text}))
"#;

/// One bash call that prints the secret, then the model's final text; returns the second
/// request's body (the one carrying the call's result) and the tool result pod reported.
fn run_with_hook(hook: &str) -> (String, serde_json::Value) {
    let api = Api::Anthropic;
    let provider = Provider::start(vec![
        provider::sse(api.calls(&[("c1", "bash", json!({"command": "cat creds.txt"}))])),
        provider::sse(api.text("done")),
    ]);
    let rest = "[permissions]\ndefault_action = \"allow\"\n\n\
                [[hooks.post_tool_call]]\ncommand = [\"python3\", \"hooks/post.py\"]\ntools = [\"bash\"]\n";
    let ws = Workspace::with_manifest(&provider::manifest(api, &provider, "", rest));
    std::fs::write(ws.path("key"), "test-key").unwrap();
    std::fs::create_dir_all(ws.path("hooks")).unwrap();
    std::fs::write(ws.path("hooks/post.py"), hook).unwrap();
    std::fs::write(ws.path("creds.txt"), format!("token={SECRET}\n")).unwrap();
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let result = pod.call("run", json!({"input": [{"type": "text", "text": "go"}]}));
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let tool_result = pod.wait_event_type("toolResult");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    (requests[1].to_string(), tool_result)
}

#[test]
fn a_redacting_post_hook_keeps_the_secret_from_the_model() {
    let (sent, result) = run_with_hook(REDACT);
    assert!(
        !sent.contains(SECRET),
        "the secret reached the provider: {sent}"
    );
    assert!(sent.contains("token=[redacted]"), "{sent}");
    assert!(!result.to_string().contains(SECRET), "{result}");
    assert_eq!(result["isError"], false);
}

#[test]
fn a_post_hook_that_crashes_withholds_the_result() {
    let (sent, result) = run_with_hook("import sys\nsys.exit(3)\n");
    assert!(
        !sent.contains(SECRET),
        "the secret reached the provider: {sent}"
    );
    assert!(sent.contains("withheld"), "{sent}");
    assert_eq!(result["isError"], true, "{result}");
}

#[test]
fn an_untrusted_projects_post_hook_never_runs() {
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\n[[hooks.post_tool_call]]\ncommand = [\"sh\", \"-c\", \"touch ran; echo '{\\\"action\\\":\\\"continue\\\"}'\"]\n",
    );
    let mut pod = PodProcess::spawn_untrusted(&ws, Framing::Lines, &[], &[]);
    let init = pod.initialize(true);
    assert!(
        init.to_string().contains("on tool results"),
        "the ignored hook is listed: {init}"
    );
    pod.call(
        "run",
        json!({"input": [{"type": "text", "text": "@read {\"path\": \"pod.toml\"}"}]}),
    );
    assert!(!ws.path("ran").exists(), "the untrusted hook ran");
}
