//! Bounds, second round (docs/hardening.md, "Bounds under a hostile model or client"): a stream
//! that sends bytes but no events, and one that goes silent between events, end the turn with a
//! clear error naming the setting; `max_steps` has a ceiling.

use crate::common;

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

/// A scripted reply: the SSE body of `text`.
fn reply(body: String) -> Arc<Script> {
    Arc::new(move |out: &mut Out| {
        out.sse_head()?;
        out.put(body.as_bytes())
    })
}

#[test]
fn older_tool_results_are_elided_to_fit_the_context_budget() {
    let api = Api::Anthropic;
    let read = |id: &str, file: &str| reply(api.calls(&[(id, "read", json!({"path": file}))]));
    let provider = Provider::start(vec![
        read("t1", "one.txt"),
        read("t2", "two.txt"),
        read("t3", "three.txt"),
        reply(api.text("done")),
    ]);
    let ws = workspace(api, &provider, "max_context_bytes = 100000");
    std::fs::OpenOptions::new()
        .append(true)
        .open(ws.manifest())
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, b"[permissions]\ndefault_action = \"allow\"\n")
        })
        .expect("rules");
    for name in ["one.txt", "two.txt", "three.txt"] {
        std::fs::write(ws.path(name), format!("{name}\n{}\n", "x".repeat(40_000))).expect("file");
    }
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let result: Value = pod.call("run", json!({"input": [{"type": "text", "text": "read"}]}));
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    // The last request: the first result elided (with a note), the latest whole, under budget.
    let last = requests[3]["messages"].to_string();
    assert!(last.contains("was elided by pod"), "{last}");
    assert!(
        !last.contains("one.txt\\n"),
        "the first result was still sent"
    );
    assert!(
        last.contains("three.txt\\n"),
        "the latest result was elided"
    );
    assert!(last.len() < 130_000, "{}", last.len());
    // History keeps every result whole.
    let history = pod.call("history", json!({}));
    let results = common::items_of(&history, "toolResult");
    assert!(results
        .iter()
        .all(|r| r["content"].as_str().is_some_and(|c| c.len() > 40_000)));
}

#[test]
fn a_step_too_large_for_the_budget_ends_the_turn_with_max_context() {
    let api = Api::Anthropic;
    let provider = Provider::start(vec![
        reply(api.calls(&[
            ("t1", "read", json!({"path": "a.txt"})),
            ("t2", "read", json!({"path": "b.txt"})),
        ])),
        reply(api.text("never asked")),
    ]);
    let ws = workspace(api, &provider, "max_context_bytes = 50000");
    std::fs::OpenOptions::new()
        .append(true)
        .open(ws.manifest())
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, b"[permissions]\ndefault_action = \"allow\"\n")
        })
        .expect("rules");
    for name in ["a.txt", "b.txt"] {
        std::fs::write(ws.path(name), "y".repeat(40_000)).expect("file");
    }
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let result: Value = pod.call("run", json!({"input": [{"type": "text", "text": "read"}]}));
    assert_eq!(result["stopReason"], "max_context", "{result}");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("[model] max_context_bytes (50000)"),
        "{error}"
    );
    assert_eq!(provider.requests().len(), 1, "no request past the budget");
}

#[test]
fn a_session_whose_log_passed_its_budget_takes_no_more_steps() {
    let ws = Workspace::with_manifest(
        "[pod]\nmax_session_bytes = 2000\n[model]\nprovider = \"offline\"\n\
         [permissions]\ndefault_action = \"allow\"\n",
    );
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let first: Value = pod.call(
        "run",
        json!({"input": [{"type": "text", "text": format!("!echo {}", "z".repeat(3000))}]}),
    );
    // The step that wrote past the budget finished; the next one is not taken.
    assert_eq!(first["stopReason"], "max_context", "{first}");
    let error = first["error"].as_str().unwrap_or_default();
    assert!(error.contains("[pod] max_session_bytes (2000)"), "{error}");
    let second: Value = pod.call("run", json!({"input": [{"type": "text", "text": "hi"}]}));
    assert_eq!(second["stopReason"], "max_context", "{second}");
}

/// The peak resident memory of `pid` (VmHWM), in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn fifty_steps_of_128_reads_stay_within_the_budget() {
    // The attack of the second round: every step 128 reads of 100 KB files, for 50 steps. It
    // took pod to 3.7 GB and sent 16 GB in one turn; now the first step that does not fit ends
    // the turn.
    let mut scenario = String::new();
    for _ in 0..50 {
        scenario.push_str("[[step]]\ncalls = [");
        for i in 0..128 {
            scenario.push_str(&format!(
                "{{ tool = \"read\", input = {{ path = \"f{}.txt\" }} }},",
                i % 16
            ));
        }
        scenario.push_str("]\n");
    }
    let ws = Workspace::with_manifest(
        "[model]\nprovider = \"offline\"\nscenario = \"scenario.toml\"\n\
         [permissions]\ndefault_action = \"allow\"\n",
    );
    std::fs::write(ws.path("scenario.toml"), scenario).expect("scenario");
    for i in 0..16 {
        std::fs::write(ws.path(&format!("f{i}.txt")), "r".repeat(100_000)).expect("file");
    }
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let result: Value = pod.call("run", json!({"input": [{"type": "text", "text": "go"}]}));
    assert_eq!(result["stopReason"], "max_context", "{result}");
    let peak = peak_kib(pod.pid());
    eprintln!("peak RSS {peak} KiB");
    assert!(peak < 400 * 1024, "peak RSS {peak} KiB");
    let log: u64 = ws
        .session_logs()
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    eprintln!("log {log} bytes");
    assert!(log < 40 * 1024 * 1024, "log {log} bytes");
}
