//! Crash durability (`docs/hardening.md`, item 3): SIGKILL the pod at a random point of a turn
//! that writes files and has asks pending, 20 times over one session (seeded delays, 0-300 ms).
//! Every time, `pod serve --resume <id>` must succeed, `history` must hold a result for every
//! tool call (calls the crash left open are closed as "interrupted"), and every item committed
//! by an earlier completed turn (fsynced at its end) must still be there, unchanged and in order.

use crate::common;

use std::time::{Duration, Instant};

use common::{items_of, Framing, PodProcess, Workspace};
use rand::{rngs::StdRng, Rng, SeedableRng};
use serde_json::{json, Value};

const MANIFEST: &str = r#"[pod]
name = "crash"
workspace = "."

[model]
provider = "offline"

[tools]
enabled = ["bash", "file_write", "read"]

[scope]
writable = ["."]

[permissions]
default_action = "ask"

[[permissions.rule]]
tool = "file_write"
pattern = "*"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "touch *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "sleep *"
action = "allow"
"#;

const RUNS: usize = 20;
const SEED: u64 = 0x90d_c4a5;

fn text(input: &str) -> Value {
    json!({"input": [{"type": "text", "text": input}]})
}

fn items(history: &Value) -> Vec<Value> {
    history["items"].as_array().cloned().unwrap_or_default()
}

/// Every tool call has exactly one result; returns how many results say "interrupted".
fn check_closed(history: &Value) -> usize {
    let calls: Vec<&str> = items_of(history, "toolCall")
        .iter()
        .filter_map(|c| c["callId"].as_str())
        .collect();
    let results = items_of(history, "toolResult");
    for call in &calls {
        let n = results.iter().filter(|r| r["callId"] == *call).count();
        assert_eq!(n, 1, "call {call} has {n} results: {history}");
    }
    assert_eq!(
        calls.len(),
        results.len(),
        "results without calls: {history}"
    );
    results
        .iter()
        .filter(|r| {
            r["content"]
                .as_str()
                .unwrap_or("")
                .starts_with("interrupted")
        })
        .count()
}

#[test]
fn kill_9_at_random_points_never_loses_committed_items() {
    let started = Instant::now();
    let ws = Workspace::with_manifest(MANIFEST);
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut session: Option<String> = None;
    let mut committed: Vec<Value> = Vec::new();
    let (mut interrupted_total, mut delays, mut left) = (0, Vec::new(), Vec::new());
    for run in 0..RUNS {
        let mut pod = match &session {
            None => PodProcess::spawn(&ws, Framing::Lines),
            Some(id) => PodProcess::spawn_with(&ws, Framing::Lines, &["--resume", id]),
        };
        let init = pod.initialize(true);
        match &session {
            None => session = init["session"]["id"].as_str().map(String::from),
            Some(id) => {
                assert_eq!(init["session"]["resumed"], true, "run {run}: {init}");
                assert_eq!(init["session"]["id"], json!(id));
            }
        }
        // After the crash: resumed, every call closed, nothing committed lost.
        let history = pod.call("history", json!({}));
        let interrupted = check_closed(&history);
        let now = items(&history);
        assert!(
            now.len() >= committed.len() && now[..committed.len()] == committed[..],
            "run {run}: committed items changed or lost.\ncommitted: {committed:#?}\nnow: {now:#?}"
        );
        if run > 0 {
            // What the killed turn left: its items, and how many of its calls were closed.
            left.push((now.len() - committed.len(), interrupted - interrupted_total));
        }
        interrupted_total = interrupted;

        // A turn that completes: its items are committed (fsynced at turn end).
        let done = pod.call(
            "run",
            text(&format!(
                "@file_write {{\"path\":\"done_{run}.txt\",\"content\":\"turn {run}\"}}\n!touch done_{run}.touched"
            )),
        );
        assert_eq!(done["stopReason"], "end_turn", "run {run}: {done}");
        assert!(ws.path(&format!("done_{run}.txt")).exists());
        committed = items(&pod.call("history", json!({})));

        // A turn killed at a random point: writes files, runs allowed commands (one slow), asks
        // (the `echo`s match no allow rule). Asks are approved as they come, so depending on the
        // delay the kill lands before the turn starts, while asks are pending, while a tool runs,
        // or after the turn ended. (The random `sleep` and delay choose where the kill lands, by
        // design: what is asserted holds wherever it lands.)
        let crash_input = format!(
            "@file_write {{\"path\":\"crash_{run}_a.txt\",\"content\":\"{}\"}}\n!echo pending {run} > p_{run}.txt\n!sleep 0.{:02}\n!touch crash_{run}.touched\n@file_write {{\"path\":\"crash_{run}_b.txt\",\"content\":\"b\"}}\n!echo second ask {run}",
            "x".repeat(4096),
            rng.gen_range(5..=25u8)
        );
        pod.start("run", text(&crash_input));
        let delay = rng.gen_range(0..=300u64);
        delays.push(delay);
        let deadline = Instant::now() + Duration::from_millis(delay);
        let mut replied = std::collections::HashSet::new();
        while Instant::now() < deadline {
            pod.pump_for(Duration::from_millis(2).min(deadline - Instant::now()));
            let asks: Vec<Value> = pod
                .events
                .iter()
                .filter(|e| e["type"] == "permissionRequest")
                .cloned()
                .collect();
            for ask in asks {
                let id = ask["requestId"].as_str().unwrap_or("").to_string();
                if replied.insert(id.clone()) {
                    pod.start(
                        "permissionReply",
                        json!({"requestId": id, "decision": "allow_once"}),
                    );
                }
            }
        }
        pod.kill9();
    }
    // One last resume after the 20th kill.
    let id = session.unwrap_or_default();
    let mut pod = PodProcess::spawn_with(&ws, Framing::Lines, &["--resume", &id]);
    pod.initialize(true);
    let history = pod.call("history", json!({}));
    let interrupted = check_closed(&history);
    let now = items(&history);
    assert!(now.len() >= committed.len() && now[..committed.len()] == committed[..]);
    left.push((now.len() - committed.len(), interrupted - interrupted_total));
    let turns_done = items_of(&history, "turnEnded")
        .iter()
        .filter(|t| t["stopReason"] == "end_turn")
        .count();
    // The 20 committed turns, plus the killed turns that finished before their kill.
    assert!(turns_done >= RUNS, "every completed turn is in history");
    eprintln!(
        "{RUNS} kills\n  delays ms: {delays:?}\n  (items left by the killed turn, calls closed as interrupted): {left:?}\n  {interrupted} interrupted in all; {} killed turns had ended before the kill; {} items at the end; {:?}",
        turns_done - RUNS,
        now.len(),
        started.elapsed()
    );
}
