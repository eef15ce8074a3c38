//! Issue 19: every cost a hostile model or a slow client controls has a limit. The real binary
//! against scripted loopback providers (`common::provider`), each case for both APIs where the
//! API matters. Each test asserts the bound itself (counts, bytes, a ceiling on processes, that
//! the server still answers), never a time; the costs are measured in `benches/hostile.rs`
//! (`docs/hardening.md`, "Bounds under a hostile model or client").

use crate::common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::provider::{self, Api, Out, Provider, Script, BOTH_APIS};
use common::{check_event_rules, items_of, Framing, PodProcess, Workspace};
use serde_json::{json, Value};

fn text(input: &str) -> Value {
    json!({"input": [{"type": "text", "text": input}]})
}

/// A workspace whose manifest points `api` at `provider`.
fn workspace(api: Api, provider: &Provider, model_extra: &str, rest: &str) -> Workspace {
    let ws = Workspace::with_manifest(&provider::manifest(api, provider, model_extra, rest));
    std::fs::write(ws.path("key"), "test-key").expect("key");
    ws
}

/// Runs one turn and returns its `run` result.
fn run_turn(pod: &mut PodProcess, input: &str) -> Value {
    pod.call("run", text(input))
}

fn error_of(result: &Value) -> String {
    assert_eq!(result["stopReason"], "error", "{result}");
    result["error"].as_str().unwrap_or("").to_string()
}

/// Waits (at most 10 s) until `done` holds.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        // Paces the poll; the condition decides.
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---------------------------------------------------------------------------------------------
// The size of one response

#[test]
fn text_past_max_response_bytes_ends_the_turn_and_the_stream() {
    for api in BOTH_APIS {
        let body: Arc<Script> = Arc::new(move |out: &mut Out| {
            out.sse_head()?;
            out.put(api.text_open().as_bytes())?;
            // 64 MB of text in 4 KB deltas, far past the 10 000-byte limit (and past what
            // socket buffers hold, so a pod that stops reading makes a write fail).
            let delta = api.delta(&"t".repeat(4096));
            for _ in 0..16_000 {
                out.put(delta.as_bytes())?;
            }
            out.put(api.text_close().as_bytes())
        });
        let provider = Provider::start(vec![body]);
        let ws = workspace(api, &provider, "max_response_bytes = 10000", "");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        pod.initialize(false);
        let error = error_of(&run_turn(&mut pod, "go"));
        assert!(
            error.contains("model.max_response_bytes"),
            "{api:?}: {error}"
        );
        // The text that did arrive stayed within the limit.
        let streamed: usize = pod
            .events
            .iter()
            .filter(|e| e["type"] == "textDelta")
            .map(|e| e["text"].as_str().unwrap_or("").len())
            .sum();
        assert!(streamed <= 10_000, "{api:?}: {streamed} bytes streamed");
        // The pod hung up on the stream instead of reading it to the end.
        eventually("the provider's reply to end", || provider.ended() == 1);
        assert_eq!(provider.cut(), 1, "{api:?}: the stream was read to its end");
        assert!(pod.call("history", json!({}))["items"].is_array());
    }
}

#[test]
fn more_tool_calls_than_max_tool_calls_end_the_turn_before_any_runs() {
    for api in BOTH_APIS {
        let calls: Vec<(String, Value)> = (0..10)
            .map(|i| {
                (
                    format!("c{i}"),
                    json!({"command": format!("touch made{i}")}),
                )
            })
            .collect();
        let calls: Vec<(&str, &str, Value)> = calls
            .iter()
            .map(|(id, input)| (id.as_str(), "bash", input.clone()))
            .collect();
        let provider = Provider::start(vec![provider::sse(api.calls(&calls))]);
        let ws = workspace(api, &provider, "max_tool_calls = 3", "");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        pod.initialize(false);
        let error = error_of(&run_turn(&mut pod, "go"));
        assert!(
            error.contains("more than 3 tool calls (model.max_tool_calls)"),
            "{api:?}: {error}"
        );
        assert!(
            !pod.events.iter().any(|e| e["type"] == "toolCall"),
            "{api:?}"
        );
        for i in 0..10 {
            assert!(
                !ws.path(&format!("made{i}")).exists(),
                "{api:?}: a call ran"
            );
        }
        let history = pod.call("history", json!({}));
        assert!(items_of(&history, "toolCall").is_empty(), "{api:?}");
    }
}

#[test]
fn an_sse_line_past_the_limit_is_refused_before_it_ends() {
    for api in BOTH_APIS {
        // A line without end: 64 MB, against a line limit of 2 x 1000 + 64 KiB.
        let body: Arc<Script> = Arc::new(move |out: &mut Out| {
            out.sse_head()?;
            out.put(api.text_open().as_bytes())?;
            out.put(api.delta_prefix().as_bytes())?;
            out.fill(64_000_000)?;
            // The scripted server holds the line open; the pod must refuse it long before.
            std::thread::sleep(Duration::from_secs(20));
            Ok(())
        });
        let provider = Provider::start(vec![body]);
        let ws = workspace(api, &provider, "max_response_bytes = 1000", "");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        pod.initialize(false);
        let error = error_of(&run_turn(&mut pod, "go"));
        assert!(
            error.contains("a line of the event stream is longer than 67536 bytes"),
            "{api:?}: {error}"
        );
        eventually("the provider's reply to end", || provider.ended() == 1);
        assert_eq!(provider.cut(), 1, "{api:?}");
    }
}

#[test]
fn history_answers_while_a_pathological_stream_is_read() {
    for api in BOTH_APIS {
        // A 2 MB line that never ends, then a byte every 2 ms: before the parser kept its scan
        // position, each byte rescanned the whole line.
        let body: Arc<Script> = Arc::new(move |out: &mut Out| {
            out.sse_head()?;
            out.put(api.text_open().as_bytes())?;
            out.put(api.delta_prefix().as_bytes())?;
            out.fill(2_000_000)?;
            loop {
                out.put(b"a")?;
                // The scripted server's pace (a byte every 2 ms), not a wait for anything.
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let provider = Provider::start(vec![body]);
        let ws = workspace(api, &provider, "", "");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        pod.initialize(false);
        let run = pod.start("run", text("go"));
        eventually("2 MB to reach the pod", || provider.sent() > 2_000_000);
        for _ in 0..20 {
            let history = pod.call("history", json!({}));
            assert!(history["items"].is_array(), "{api:?}");
            // Spreads the requests over the stream; each must answer whenever it is sent.
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(pod.call("cancel", json!({}))["cancelled"], true);
        let result = pod.response(&json!(run));
        assert_eq!(result["result"]["stopReason"], "cancelled", "{result}");
        eventually("the stream to be dropped", || provider.cut() == 1);
    }
}

#[test]
fn keep_alives_alone_end_at_the_response_deadline() {
    for api in BOTH_APIS {
        let body: Arc<Script> = Arc::new(move |out: &mut Out| {
            out.sse_head()?;
            out.put(api.text_open().as_bytes())?;
            loop {
                // Well within the 10 s read timeout each time (the scripted server's pace).
                out.put(api.ping().as_bytes())?;
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let provider = Provider::start(vec![body]);
        let ws = workspace(api, &provider, "response_timeout_secs = 1", "");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        pod.initialize(false);
        let error = error_of(&run_turn(&mut pod, "go"));
        assert!(
            error.contains("took longer than 1 s (model.response_timeout_secs)"),
            "{api:?}: {error}"
        );
        eventually("the stream to be dropped", || provider.cut() == 1);
    }
}

#[test]
fn a_success_that_is_not_an_event_stream_names_its_content_type() {
    for api in BOTH_APIS {
        let html: Arc<Script> = Arc::new(|out: &mut Out| {
            out.head(200, "text/html; charset=utf-8")?;
            out.put(b"<html><body>Please sign in to the proxy</body></html>")
        });
        let plain_json: Arc<Script> = Arc::new(|out: &mut Out| {
            out.head(200, "application/json")?;
            out.put(
                json!({"error": {"message": "streaming is off here"}})
                    .to_string()
                    .as_bytes(),
            )
        });
        let provider = Provider::start(vec![html, plain_json]);
        let ws = workspace(api, &provider, "", "");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        pod.initialize(false);
        let error = error_of(&run_turn(&mut pod, "go"));
        assert!(
            error.contains("got a \"text/html; charset=utf-8\" response")
                && error.contains("Please sign in"),
            "{api:?}: {error}"
        );
        let error = error_of(&run_turn(&mut pod, "again"));
        assert!(
            error.contains("\"application/json\"") && error.contains("streaming is off here"),
            "{api:?}: {error}"
        );
    }
}

#[test]
fn an_error_body_is_read_only_up_to_a_limit() {
    const BODY: usize = 32 * 1024 * 1024;
    for api in BOTH_APIS {
        let body: Arc<Script> = Arc::new(|out: &mut Out| {
            out.put(
                format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {BODY}\r\nconnection: close\r\n\r\n"
                )
                .as_bytes(),
            )?;
            out.fill(BODY)
        });
        let provider = Provider::start(vec![body]);
        let ws = workspace(api, &provider, "", "");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        pod.initialize(false);
        let error = error_of(&run_turn(&mut pod, "go"));
        assert!(error.contains("API error 400: aaaa"), "{api:?}: {error}");
        // The pod stopped reading: the provider could not write it all.
        eventually("the provider's reply to end", || provider.ended() == 1);
        assert_eq!(provider.cut(), 1, "{api:?}: the whole body was read");
        assert!(provider.sent() < BODY as u64, "{api:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Calls

/// The first line of a tool result's content (bash adds its exit code after the output).
fn first_line(content: &Value) -> String {
    content
        .as_str()
        .unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

/// The most commands that were between their `s` and `e` lines of `log` at once.
fn most_at_once(log: &str) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for line in log.lines() {
        match line.trim() {
            "s" => {
                now += 1;
                most = most.max(now);
            }
            "e" => now = now.saturating_sub(1),
            _ => {}
        }
    }
    most
}

#[test]
fn no_more_than_max_parallel_calls_run_at_once_and_results_keep_call_order() {
    const CALLS: usize = 40;
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\n\n[model]\nprovider = \"offline\"\n\n[tools]\nmax_parallel = 3\n",
    );
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    // Each call lasts 50 ms so that calls overlap; the slots, not the timing, bound how many.
    let lines: Vec<String> = (0..CALLS)
        .map(|i| format!("!echo s >> log; sleep 0.05; echo e >> log; echo {i}"))
        .collect();
    let result = run_turn(&mut pod, &lines.join("\n"));
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    let log = common::read(&ws.path("log"));
    assert_eq!(log.lines().count(), 2 * CALLS, "{log}");
    let most = most_at_once(&log);
    assert!(
        most <= 3,
        "{most} commands ran at once with max_parallel = 3"
    );
    assert!(
        most >= 2,
        "calls no longer run in parallel ({most} at most)"
    );
    let outputs: Vec<String> = pod
        .events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .map(|e| first_line(&e["content"]))
        .collect();
    let want: Vec<String> = (0..CALLS).map(|i| i.to_string()).collect();
    assert_eq!(outputs, want, "results out of call order");
    check_event_rules(&pod.events, false);
}

#[test]
fn asks_answered_at_once_still_run_at_most_max_parallel_calls() {
    const CALLS: usize = 30;
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\n\n[model]\nprovider = \"offline\"\n\n[tools]\nmax_parallel = 2\n\n[permissions]\ndefault_action = \"ask\"\n",
    );
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(true);
    // Each call lasts 50 ms so that calls overlap; the slots, not the timing, bound how many.
    let lines: Vec<String> = (0..CALLS)
        .map(|i| format!("!echo s >> log; sleep 0.05; echo e >> log; echo {i}"))
        .collect();
    let run = pod.start("run", text(&lines.join("\n")));
    for _ in 0..CALLS {
        let request = pod.wait_event_type("permissionRequest");
        let id = pod.start(
            "permissionReply",
            json!({"requestId": request["requestId"], "decision": "allow_once"}),
        );
        let _ = id;
    }
    let result = pod.response(&json!(run));
    assert_eq!(result["result"]["stopReason"], "end_turn", "{result}");
    let log = common::read(&ws.path("log"));
    assert_eq!(log.lines().count(), 2 * CALLS, "{log}");
    let most = most_at_once(&log);
    assert!(
        most <= 2,
        "{most} commands ran at once with max_parallel = 2"
    );
    check_event_rules(&pod.events, true);
}

#[test]
fn unknown_and_disabled_tools_fail_without_asking() {
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\n\n[model]\nprovider = \"offline\"\n\n[tools]\nenabled = [\"read\"]\n\n[permissions]\ndefault_action = \"ask\"\n",
    );
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(true);
    let result = run_turn(&mut pod, "@nope {\"x\": 1}\n!touch made");
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    assert!(
        !pod.events.iter().any(|e| e["type"] == "permissionRequest"),
        "an unknown tool was asked about"
    );
    let results: Vec<&Value> = pod
        .events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["isError"], true);
        assert!(
            r["content"]
                .as_str()
                .unwrap_or("")
                .starts_with("unknown tool"),
            "{r}"
        );
    }
    assert!(!ws.path("made").exists());
    let history = pod.call("history", json!({}));
    assert!(items_of(&history, "permissionDecision").is_empty());
}

#[test]
fn a_wrong_type_denial_does_not_blame_the_default() {
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\n\n[model]\nprovider = \"offline\"\n\n[permissions]\ndefault_action = \"ask\"\n",
    );
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(true);
    let result = run_turn(&mut pod, "@bash {\"command\": 5}");
    assert_eq!(result["stopReason"], "end_turn", "{result}");
    assert!(!pod.events.iter().any(|e| e["type"] == "permissionRequest"));
    let denial = pod.wait_event_type("toolResult");
    let content = denial["content"].as_str().unwrap_or("");
    assert_eq!(denial["deniedBy"], "permission", "{denial}");
    assert!(content.contains("no string `command`"), "{content}");
    assert!(!content.contains("default_action"), "{content}");
    assert!(content.contains("the permission layer"), "{content}");
}

// ---------------------------------------------------------------------------------------------
// Call identity

/// Every `tool_use` / tool call id of an assistant message is answered by the next message(s).
fn assert_every_call_answered(api: Api, request: &Value) {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    match api {
        Api::Anthropic => {
            for (i, m) in messages.iter().enumerate() {
                if m["role"] != "assistant" {
                    continue;
                }
                let uses: Vec<&Value> = m["content"]
                    .as_array()
                    .map(|c| c.iter().filter(|b| b["type"] == "tool_use").collect())
                    .unwrap_or_default();
                if uses.is_empty() {
                    continue;
                }
                let results: Vec<&Value> = messages
                    .get(i + 1)
                    .and_then(|n| n["content"].as_array())
                    .map(|c| c.iter().filter(|b| b["type"] == "tool_result").collect())
                    .unwrap_or_default();
                let used: Vec<&Value> = uses.iter().map(|u| &u["id"]).collect();
                let answered: Vec<&Value> = results.iter().map(|r| &r["tool_use_id"]).collect();
                assert_eq!(used, answered, "message {i}: {request}");
            }
        }
        Api::Openai => {
            for (i, m) in messages.iter().enumerate() {
                let Some(calls) = m["tool_calls"].as_array() else {
                    continue;
                };
                let used: Vec<&Value> = calls.iter().map(|c| &c["id"]).collect();
                let answered: Vec<&Value> = messages[i + 1..]
                    .iter()
                    .take_while(|n| n["role"] == "tool")
                    .map(|n| &n["tool_call_id"])
                    .collect();
                assert_eq!(used, answered, "message {i}: {request}");
            }
        }
    }
}

#[test]
fn a_repeated_call_id_gets_its_own_identity_and_the_provider_gets_its_id_back() {
    for api in BOTH_APIS {
        let first = api.calls(&[
            ("dup", "bash", json!({"command": "echo one"})),
            ("dup", "bash", json!({"command": "echo two"})),
        ]);
        let provider = Provider::start(vec![provider::sse(first), provider::sse(api.text("done"))]);
        let ws = workspace(api, &provider, "", "");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        pod.initialize(false);
        let result = run_turn(&mut pod, "go");
        assert_eq!(result["stopReason"], "end_turn", "{api:?}: {result}");
        let ids = |kind: &str| -> Vec<String> {
            pod.events
                .iter()
                .filter(|e| e["type"] == kind)
                .map(|e| e["callId"].as_str().unwrap_or("").to_string())
                .collect()
        };
        assert_eq!(ids("toolCall"), ["dup", "dup#2"], "{api:?}");
        assert_eq!(ids("toolResult"), ["dup", "dup#2"], "{api:?}");
        let contents: Vec<String> = pod
            .events
            .iter()
            .filter(|e| e["type"] == "toolResult")
            .map(|e| first_line(&e["content"]))
            .collect();
        assert_eq!(contents, ["one", "two"], "{api:?}");
        check_event_rules(&pod.events, false);
        let history = pod.call("history", json!({}));
        let calls = items_of(&history, "toolCall");
        assert!(calls[0].get("providerCallId").is_none(), "{}", calls[0]);
        assert_eq!(calls[1]["providerCallId"], "dup", "{}", calls[1]);
        // The provider sees its own id on both calls and both results, in order.
        let requests = provider.requests();
        assert_eq!(requests.len(), 2);
        assert_every_call_answered(api, &requests[1]);
        let sent = requests[1].to_string();
        assert!(
            !sent.contains("dup#2"),
            "{api:?}: the pod's id leaked: {sent}"
        );
    }
}

/// The session id of an `initialize` result.
fn session_id(init: &Value) -> String {
    init["session"]["id"].as_str().unwrap_or("").to_string()
}

#[test]
fn a_reused_call_id_left_open_by_a_crash_is_closed_on_resume() {
    for api in BOTH_APIS {
        let provider = Provider::start(vec![
            // Turn 1: call `x` runs and ends.
            provider::sse(api.calls(&[("x", "bash", json!({"command": "echo first"}))])),
            provider::sse(api.text("ok")),
            // Turn 2: the model reuses `x`; the pod dies while it is open (`sleep 5` only keeps
            // it open past the kill).
            provider::sse(api.calls(&[("x", "bash", json!({"command": "sleep 5"}))])),
            // After the resume.
            provider::sse(api.text("resumed")),
        ]);
        let ws = workspace(api, &provider, "", "");
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        let session = session_id(&pod.initialize(false));
        assert_eq!(run_turn(&mut pod, "one")["stopReason"], "end_turn");
        pod.start("run", text("two"));
        let call = pod.wait_event("the second call", |e| {
            e["type"] == "toolCall" && e["input"]["command"] == "sleep 5"
        });
        assert_eq!(call["callId"], "x#2", "{api:?}");
        pod.kill9();

        let mut pod = PodProcess::spawn_with(&ws, Framing::Lines, &["--resume", &session]);
        pod.initialize(false);
        let history = pod.call("history", json!({}));
        let mut results: HashMap<String, usize> = HashMap::new();
        for r in items_of(&history, "toolResult") {
            *results
                .entry(r["callId"].as_str().unwrap_or("").to_string())
                .or_default() += 1;
        }
        for c in items_of(&history, "toolCall") {
            let id = c["callId"].as_str().unwrap_or("");
            assert_eq!(results.get(id), Some(&1), "{api:?}: call {id}: {history}");
        }
        assert_eq!(results.len(), 2, "{api:?}: {history}");
        assert_eq!(run_turn(&mut pod, "three")["stopReason"], "end_turn");
        let requests = provider.requests();
        let last = requests.last().expect("a request after the resume");
        assert_every_call_answered(api, last);
        assert!(last.to_string().contains("interrupted"), "{api:?}: {last}");
    }
}

// ---------------------------------------------------------------------------------------------
// A client that does not read

#[test]
fn a_stalled_client_holds_the_stream_back_and_cancel_still_works() {
    let api = Api::Anthropic;
    // Text as fast as the pod takes it, without end.
    let body: Arc<Script> = Arc::new(move |out: &mut Out| {
        out.sse_head()?;
        out.put(api.text_open().as_bytes())?;
        let batch = api.delta(&"x".repeat(1000)).repeat(64);
        loop {
            out.put(batch.as_bytes())?;
        }
    });
    let provider = Provider::start(vec![body]);
    let ws = workspace(api, &provider, "max_response_bytes = 4000000000", "");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["serve", "--trust"])
        .arg("--manifest")
        .arg(ws.manifest())
        .current_dir(ws.dir.path())
        .env("XDG_STATE_HOME", ws.state_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn pod");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |text: Value| {
        stdin
            .write_all(format!("{text}\n").as_bytes())
            .expect("write");
        stdin.flush().expect("flush");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).expect("initialize");
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "run", "params": text("go")}));
    // Nobody reads stdout from here on. The stream stops being read once the pipe, the outbox
    // and the turn's buffers are full: what the provider got written stops growing.
    eventually("the stream to start", || provider.sent() > 0);
    let mut last = provider.sent();
    let mut still = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while still < 5 {
        assert!(
            Instant::now() < deadline,
            "the stream never stopped: {} bytes",
            provider.sent()
        );
        // The sampling period of "stopped growing": a stall seen early only means fewer bytes
        // streamed, still under the bound, so it cannot turn a pass into a failure.
        std::thread::sleep(Duration::from_millis(200));
        let now = provider.sent();
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    // Held back at a few MB (socket buffers, the outbox, the turn's text): not hundreds.
    assert!(
        last < 32_000_000,
        "{last} bytes read while the client stalled"
    );
    let rss = common::rss_kib(child.id());
    assert!(rss < 128 * 1024, "RSS {rss} KiB with a stalled client");
    // `cancel` is still served with stdout full: the stream is dropped before anyone reads.
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "cancel", "params": {}}));
    eventually("the cancelled stream to be dropped", || provider.cut() == 1);
    // Reading again: everything arrives, the cancel answer and the cancelled run.
    let (mut cancelled, mut run) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(30);
    while run.is_none() {
        assert!(Instant::now() < deadline, "the run did not answer");
        line.clear();
        if stdout.read_line(&mut line).expect("read") == 0 {
            break;
        }
        let v: Value = serde_json::from_str(&line).expect("a protocol message");
        if v["id"] == 3 {
            cancelled = Some(v["result"]["cancelled"].clone());
        } else if v["id"] == 2 {
            run = Some(v["result"]["stopReason"].clone());
        }
    }
    assert_eq!(cancelled, Some(json!(true)));
    assert_eq!(run, Some(json!("cancelled")));
    let _ = child.kill();
    let _ = child.wait();
}
