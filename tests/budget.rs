//! Bounds, second round (docs/hardening.md, "Bounds under a hostile model or client"): a stream
//! that sends bytes but no events, and one that goes silent between events, end the turn with a
//! clear error naming the setting; `max_steps` has a ceiling.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::provider::{self, Api, Out, Provider, Script, BOTH_APIS};
use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

fn workspace(api: Api, provider: &Provider, model_extra: &str) -> Workspace {
    let ws = Workspace::with_manifest(&provider::manifest(api, provider, model_extra, ""));
    std::fs::write(ws.path("key"), "test-key").expect("key");
    ws
}

fn turn_error(pod: &mut PodProcess) -> String {
    let result: Value = pod.call("run", json!({"input": [{"type": "text", "text": "hi"}]}));
    assert_eq!(result["stopReason"], "error", "{result}");
    result["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_stream_of_comments_ends_at_the_response_limit() {
    for api in BOTH_APIS {
        // Keep-alive comments as fast as the pod takes them, never an event.
        let body: Arc<Script> = Arc::new(move |out: &mut Out| {
            out.sse_head()?;
            let line = format!(": {}\n", "k".repeat(1000));
            loop {
                out.put(line.as_bytes())?;
            }
        });
        let provider = Provider::start(vec![body]);
        let ws = workspace(api, &provider, "max_response_bytes = 200000");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        pod.initialize(false);
        let error = turn_error(&mut pod);
        assert!(error.contains("not events"), "{api:?}: {error}");
        assert!(error.contains("model.max_response_bytes"), "{error}");
        // It stopped reading at the limit, not at the end of a huge stream.
        assert!(provider.sent() < 50_000_000, "{}", provider.sent());
    }
}

#[test]
fn a_stream_without_events_ends_at_the_idle_timeout() {
    let api = Api::Anthropic;
    // An event, then keep-alives every 50 ms (so the read timeout never fires), no more events.
    let body: Arc<Script> = Arc::new(move |out: &mut Out| {
        out.sse_head()?;
        out.put(api.text_open().as_bytes())?;
        loop {
            out.put(b": still here\n\n")?;
            // Paces the keep-alives; the outcome is decided by the pod's idle clock.
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let provider = Provider::start(vec![body]);
    let ws = workspace(api, &provider, "idle_timeout_secs = 1");
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let error = turn_error(&mut pod);
    assert!(
        error.contains("no event for 1 s (model.idle_timeout_secs)"),
        "{error}"
    );
}

#[test]
fn max_steps_has_a_ceiling() {
    let ws = Workspace::with_manifest("[pod]\nmax_steps = 4294967295\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("check")
        .arg(ws.manifest())
        .env("XDG_STATE_HOME", ws.state_home())
        .output()
        .expect("pod check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("pod.toml:2:1: pod.max_steps: must be between 1 and 1000"),
        "{text}"
    );
}

/// `{"command": "true", "x": [[…1…]]}` nesting `levels` deep in all.
fn deep_input(levels: usize) -> String {
    let arrays = levels - 1;
    format!(
        "{{\"command\":\"true\",\"x\":{}1{}}}",
        "[".repeat(arrays),
        "]".repeat(arrays)
    )
}

#[test]
fn the_deepest_accepted_input_resumes_and_a_deeper_one_is_refused() {
    let ws = Workspace::with_manifest(
        "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"allow\"\n",
    );
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let init = pod.initialize(false);
    let session = init["session"]["id"].as_str().expect("id").to_string();
    let line = format!("@bash {}", deep_input(64));
    let accepted: Value = pod.call("run", json!({"input": [{"type": "text", "text": line}]}));
    assert_eq!(accepted["stopReason"], "end_turn", "{accepted}");
    let line = format!("@bash {}", deep_input(65));
    let refused: Value = pod.call("run", json!({"input": [{"type": "text", "text": line}]}));
    assert_eq!(refused["stopReason"], "error", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("nests deeper than 64 levels")),
        "{refused}"
    );
    drop(pod);
    // The log holds the 64-deep call one level deeper, and reads back whole.
    let mut resumed = PodProcess::spawn_with(&ws, Framing::Lines, &["--resume", &session]);
    let init = resumed.initialize(false);
    assert_eq!(init["session"]["resumed"], true, "{init}");
    let history = resumed.call("history", json!({}));
    assert_eq!(common::items_of(&history, "toolCall").len(), 1, "{history}");
}
