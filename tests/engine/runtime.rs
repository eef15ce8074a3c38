//! The pod as a library (`pod::runtime::Pod`): the review's end-to-end deny, result order with
//! mixed decisions, the check chain's denials, scope through symlinks, and session resume after
//! a torn write.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pod::manifest::Manifest;
use pod::protocol::{
    CallResult, DeniedBy, Event, InputItem, Item, ReplyDecision, ResolvedBy, RunResult, StopReason,
};
use pod::runtime::{Approvals, Approver, Pod, PodOptions};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    /// The state folder (session logs), outside the workspace.
    state: tempfile::TempDir,
    manifest: Manifest,
}

fn fixture(manifest: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::write(ws.join("pod.toml"), manifest).unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut manifest = Manifest::load(&ws.join("pod.toml")).unwrap();
    manifest.set_state_dir(state.path());
    Fixture {
        _dir: dir,
        ws,
        state,
        manifest,
    }
}

fn text(t: &str) -> Vec<InputItem> {
    vec![InputItem::Text { text: t.into() }]
}

/// Runs one turn to the end and returns its result and every event.
async fn run(pod: &Arc<Pod>, input: &str) -> (RunResult, Vec<Event>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = pod
        .run(text(input), &tx, CancellationToken::new())
        .await
        .unwrap();
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    (result, events)
}

/// A pod whose asks go to `approvals`, new or resuming `resume`.
fn approving_pod(manifest: &Manifest, approvals: &Approvals, resume: Option<String>) -> Arc<Pod> {
    Pod::open(
        manifest.clone(),
        PodOptions {
            resume,
            approver: Approver::Client(approvals.clone()),
            ..PodOptions::default()
        },
    )
    .unwrap()
}

/// Runs one turn to the end, answering every permission request with `decision` and `message`;
/// returns the result and every event.
async fn run_answering(
    pod: &Arc<Pod>,
    approvals: &Approvals,
    input: &str,
    decision: ReplyDecision,
    message: Option<&str>,
) -> (RunResult, Vec<Event>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let turn = {
        let (pod, input) = (pod.clone(), input.to_string());
        tokio::spawn(async move { pod.run(text(&input), &tx, CancellationToken::new()).await })
    };
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        if let Event::PermissionRequest(req) = &e {
            approvals
                .reply(&req.request_id, decision, message.map(str::to_string))
                .unwrap();
        }
        events.push(e);
    }
    (turn.await.unwrap().unwrap(), events)
}

fn requests(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::PermissionRequest(_)))
        .count()
}

fn tool_results(items: &[Item]) -> Vec<(String, bool, String, Option<DeniedBy>)> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult(CallResult {
                call_id,
                is_error,
                content,
                denied_by,
                ..
            }) => Some((call_id.clone(), *is_error, content.clone(), *denied_by)),
            _ => None,
        })
        .collect()
}

const SEED_RULES: &str = r#"
[permissions]
default_action = "allow"
[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
message = "Deleting files is not allowed in this workspace."
"#;

/// The review's test: manifest with [permissions] -> pod -> the offline model issues a denied
/// bash call -> the file is still there, history holds the is_error result, the turn ends
/// normally, and the model saw the denial.
#[tokio::test]
async fn a_denied_call_does_not_run_and_the_turn_goes_on() {
    let f = fixture(SEED_RULES);
    std::fs::create_dir(f.ws.join("build")).unwrap();
    std::fs::write(f.ws.join("build/keep.txt"), "x").unwrap();
    let pod = Pod::open(f.manifest.clone(), PodOptions::default()).unwrap();
    let (result, events) = run(&pod, "!rm -rf build").await;

    assert_eq!(result.stop_reason, StopReason::EndTurn);
    assert!(
        f.ws.join("build/keep.txt").exists(),
        "the denied command ran"
    );
    let results = tool_results(&pod.history());
    assert_eq!(results.len(), 1);
    let (_, is_error, content, denied_by) = &results[0];
    assert!(is_error);
    assert_eq!(*denied_by, Some(DeniedBy::Permission));
    assert!(
        content
            .starts_with("permission denied: rule 1 (bash \"rm *\" deny) for bash `rm -rf build`"),
        "{content}"
    );
    assert!(content.contains("Deleting files is not allowed in this workspace."));
    // The model got the denial and summarized it: the turn went on after the deny.
    let summary = pod.history().iter().rev().find_map(|i| match i {
        Item::AssistantText { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert!(summary
        .unwrap()
        .starts_with("bash: error: permission denied"));
    assert!(events.iter().any(|e| matches!(
        e,
        Event::TurnEnded {
            stop_reason: StopReason::EndTurn,
            ..
        }
    )));
    // The permission decision is in history, naming the rule.
    assert!(pod.history().iter().any(|i| matches!(i,
        Item::PermissionDecision { decision: pod::protocol::Action::Deny, by: pod::protocol::DecidedBy::Rule, subjects, .. }
            if subjects[0].rule.as_ref().map(|r| r.index) == Some(1))));
}

/// One model response with [denied, allowed, asked-then-approved, allowed-slow]: results are
/// committed in call order although they finish in another order.
#[tokio::test]
async fn results_are_committed_in_call_order() {
    let f = fixture(
        r#"
[permissions]
default_action = "ask"
[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
[[permissions.rule]]
tool = "bash"
pattern = "echo *"
action = "allow"
[[permissions.rule]]
tool = "bash"
pattern = "sleep *"
action = "allow"
"#,
    );
    std::fs::write(f.ws.join("victim"), "x").unwrap();
    let approvals = Approvals::new();
    let pod = approving_pod(&f.manifest, &approvals, None);
    // The `sleep 0.4` only makes the last call finish late: results keep call order whenever
    // each call ends, so it cannot decide the outcome.
    let (result, events) = run_answering(
        &pod,
        &approvals,
        "!rm victim\n!echo allowed\n!touch approved\n!sleep 0.4; echo slow",
        ReplyDecision::AllowOnce,
        None,
    )
    .await;
    assert_eq!(result.stop_reason, StopReason::EndTurn);
    assert_eq!(requests(&events), 1);

    let call_ids: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    let result_ids: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult(CallResult { call_id, .. }) => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(call_ids.len(), 4);
    assert_eq!(result_ids, call_ids, "toolResult events out of call order");
    let history = tool_results(&pod.history());
    let history_ids: Vec<String> = history.iter().map(|r| r.0.clone()).collect();
    assert_eq!(history_ids, call_ids, "history out of call order");
    assert_eq!(history[0].3, Some(DeniedBy::Permission));
    assert!(!history[1].1 && history[1].2.contains("allowed"));
    assert!(!history[2].1, "the approved call failed: {}", history[2].2);
    assert!(!history[3].1 && history[3].2.contains("slow"));
    assert!(f.ws.join("victim").exists());
    assert!(f.ws.join("approved").exists());
    // The ask was resolved by the client, once.
    let resolved: Vec<&Event> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::PermissionResolved {
                    by: ResolvedBy::Client,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(resolved.len(), 1);
}

/// Each check of the chain that this crate owns, denying with its `deniedBy`.
#[tokio::test]
async fn each_check_denies_with_its_name() {
    let f = fixture(
        r#"
[scope]
writable = ["out"]
[permissions]
default_action = "ask"
[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
[[permissions.rule]]
tool = "file_write"
pattern = "*"
action = "allow"
"#,
    );
    std::fs::create_dir(f.ws.join("out")).unwrap();
    let approvals = Approvals::new();
    let pod = approving_pod(&f.manifest, &approvals, None);
    run_answering(
        &pod,
        &approvals,
        "!rm x\n!ls\n@file_write {\"path\": \"elsewhere.txt\", \"content\": \"x\"}\n@file_write {\"path\": \"out/ok.txt\", \"content\": \"x\"}",
        ReplyDecision::Deny,
        Some("not now"),
    )
    .await;
    let r = tool_results(&pod.history());
    assert_eq!(r[0].3, Some(DeniedBy::Permission));
    assert_eq!(r[1].3, Some(DeniedBy::Approval));
    assert_eq!(r[1].2, "permission denied by the user: not now");
    assert_eq!(r[2].3, Some(DeniedBy::Scope));
    assert!(
        r[2].2.starts_with("denied by scope: elsewhere.txt"),
        "{}",
        r[2].2
    );
    assert!(!f.ws.join("elsewhere.txt").exists());
    assert_eq!(r[3].3, None);
    assert!(f.ws.join("out/ok.txt").exists());
}

/// Without an approver an ask fails closed at once with the text the spec requires.
#[tokio::test]
async fn an_ask_without_approver_fails_closed() {
    let f = fixture("[permissions]\ndefault_action = \"ask\"\n");
    let pod = Pod::open(f.manifest.clone(), PodOptions::default()).unwrap();
    let (_, events) = run(&pod, "!touch made").await;
    assert!(!events
        .iter()
        .any(|e| matches!(e, Event::PermissionRequest(_))));
    let r = tool_results(&pod.history());
    assert_eq!(r[0].3, Some(DeniedBy::Permission));
    assert!(r[0].2.contains("approval required"), "{}", r[0].2);
    assert!(r[0].2.contains("default_action = \"ask\""), "{}", r[0].2);
    assert!(r[0].2.contains("no approver is connected"), "{}", r[0].2);
    assert!(!f.ws.join("made").exists());
}

/// Scope refuses a write through a symlink that points outside the writable folders, even when
/// the permission layer is off.
#[tokio::test]
async fn scope_refuses_writes_through_an_outside_symlink() {
    let outside = tempfile::tempdir().unwrap();
    let f = fixture("[scope]\nwritable = [\".\"]\n");
    std::os::unix::fs::symlink(outside.path(), f.ws.join("link")).unwrap();
    let pod = Pod::open(f.manifest.clone(), PodOptions::default()).unwrap();
    run(&pod, "@file_write {\"path\": \"link/escape.txt\", \"content\": \"x\"}\n@edit {\"path\": \"link/escape.txt\", \"old\": \"x\", \"new\": \"y\"}").await;
    let r = tool_results(&pod.history());
    assert_eq!(r[0].3, Some(DeniedBy::Scope));
    assert_eq!(r[1].3, Some(DeniedBy::Scope));
    assert!(!outside.path().join("escape.txt").exists());
}

fn session_file(state: &Path, id: &str) -> PathBuf {
    state.join("sessions").join(format!("{id}.jsonl"))
}

/// A crash mid-write: the log ends in a torn line and a tool call has no result. Resume drops
/// the torn line, closes the orphan with an "interrupted" result, and keeps everything else.
#[tokio::test]
async fn resume_after_a_torn_write_closes_orphans() {
    let f = fixture("");
    let pod = Pod::open(f.manifest.clone(), PodOptions::default()).unwrap();
    run(&pod, "!echo one").await;
    let id = pod.session_id().to_string();
    drop(pod);
    let path = session_file(f.state.path(), &id);
    let log = std::fs::read_to_string(&path).unwrap();
    // Keep everything up to the tool call, then half of the result line: a crash mid-write.
    let lines: Vec<&str> = log.lines().collect();
    let call_at = lines
        .iter()
        .position(|l| l.contains("\"toolCall\""))
        .unwrap();
    let mut torn = lines[..=call_at].join("\n");
    torn.push('\n');
    let result_line = lines[call_at + 1];
    torn.push_str(&result_line[..result_line.len() / 2]);
    std::fs::write(&path, torn).unwrap();

    let pod = Pod::open(
        f.manifest.clone(),
        PodOptions {
            resume: Some(id.clone()),
            approver: Approver::FailClosed,
            ..PodOptions::default()
        },
    )
    .unwrap();
    assert!(pod.resumed());
    let history = pod.history();
    assert_eq!(history.len(), call_at + 2, "{history:#?}");
    let r = tool_results(&history);
    assert_eq!(r.len(), 1);
    assert!(r[0].1 && r[0].2.starts_with("interrupted"));
    // The session goes on, and the repaired log reads back the same.
    run(&pod, "hello").await;
    let n = pod.history().len();
    drop(pod);
    let again = Pod::open(
        f.manifest.clone(),
        PodOptions {
            resume: Some(id),
            approver: Approver::FailClosed,
            ..PodOptions::default()
        },
    )
    .unwrap();
    assert_eq!(again.history().len(), n);
}

/// A session grant from `allow_session` answers the next identical ask without a request, and
/// survives resume.
#[tokio::test]
async fn session_grants_answer_later_asks_and_survive_resume() {
    let f = fixture("[permissions]\ndefault_action = \"ask\"\n");
    let approvals = Approvals::new();
    let pod = approving_pod(&f.manifest, &approvals, None);
    let grant = ReplyDecision::AllowSession;
    let (_, first) = run_answering(&pod, &approvals, "!echo hi", grant, None).await;
    assert_eq!(requests(&first), 1);
    let (_, second) = run_answering(&pod, &approvals, "!echo hi", grant, None).await;
    assert_eq!(requests(&second), 0);
    assert!(second.iter().any(|e| matches!(
        e,
        Event::PermissionResolved {
            by: ResolvedBy::SessionGrant,
            ..
        }
    )));
    // A different command still asks.
    let (_, third) = run_answering(&pod, &approvals, "!echo other", grant, None).await;
    assert_eq!(requests(&third), 1);

    let id = pod.session_id().to_string();
    drop(pod);
    let approvals = Approvals::new();
    let resumed = approving_pod(&f.manifest, &approvals, Some(id));
    let (_, after) = run_answering(&resumed, &approvals, "!echo hi", grant, None).await;
    assert_eq!(requests(&after), 0);
}

/// Cancel while a call waits for approval: the request resolves by cancel, the call gets a
/// result, the turn ends cancelled.
#[tokio::test]
async fn cancel_resolves_pending_asks_and_closes_every_call() {
    let f = fixture("[permissions]\ndefault_action = \"ask\"\n");
    let approvals = Approvals::new();
    let pod = approving_pod(&f.manifest, &approvals, None);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let turn = {
        let (pod, cancel) = (pod.clone(), cancel.clone());
        tokio::spawn(async move { pod.run(text("!touch a\n!touch b"), &tx, cancel).await })
    };
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        if matches!(e, Event::PermissionRequest(_))
            && events
                .iter()
                .filter(|e| matches!(e, Event::PermissionRequest(_)))
                .count()
                == 1
        {
            cancel.cancel();
        }
        events.push(e);
    }
    let result = tokio::time::timeout(Duration::from_secs(5), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(result.stop_reason, StopReason::Cancelled);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(
                e,
                Event::PermissionResolved {
                    by: ResolvedBy::Cancel,
                    ..
                }
            ))
            .count(),
        2
    );
    let r = tool_results(&pod.history());
    assert_eq!(r.len(), 2);
    assert!(r.iter().all(|r| r.1));
    assert!(!f.ws.join("a").exists() && !f.ws.join("b").exists());
    assert_eq!(approvals.pending_count(), 0);
}

/// `max_steps` ends a turn whose model never stops calling tools.
#[tokio::test]
async fn max_steps_ends_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::write(
        ws.join("scenario.toml"),
        "[[step]]\ncalls = [{ tool = \"bash\", input = { command = \"true\" } }]\n".repeat(5),
    )
    .unwrap();
    std::fs::write(
        ws.join("pod.toml"),
        "[pod]\nmax_steps = 3\n[model]\nscenario = \"scenario.toml\"\n",
    )
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut manifest = Manifest::load(&ws.join("pod.toml")).unwrap();
    manifest.set_state_dir(state.path());
    let pod = Pod::open(manifest, PodOptions::default()).unwrap();
    let (result, _) = run(&pod, "go").await;
    assert_eq!(result.stop_reason, StopReason::MaxSteps);
    assert_eq!(tool_results(&pod.history()).len(), 3);
}

/// An `allow_session` answer also settles the other asks of the same turn that it covers: the
/// second identical call resolves by `session_grant` without a reply of its own, and a late reply
/// to it is refused as already resolved.
#[tokio::test]
async fn a_session_grant_settles_other_pending_asks_it_covers() {
    let f = fixture("[permissions]\ndefault_action = \"ask\"\n");
    let approvals = Approvals::new();
    let pod = approving_pod(&f.manifest, &approvals, None);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let turn = {
        let pod = pod.clone();
        tokio::spawn(async move {
            pod.run(
                text("!echo same\n!echo same\n!echo other"),
                &tx,
                CancellationToken::new(),
            )
            .await
        })
    };
    let mut events = Vec::new();
    // (request id, command), in the order the requests arrive (calls ask concurrently).
    let mut asked: Vec<(String, String)> = Vec::new();
    let collect = async {
        while let Some(e) = rx.recv().await {
            if let Event::PermissionRequest(req) = &e {
                let command = req.input["command"].as_str().unwrap_or("").to_string();
                asked.push((req.request_id.clone(), command));
                // Once all three wait: `allow_session` for one `echo same`, `allow_once` for
                // `echo other`, and nothing for the other `echo same`.
                if asked.len() == 3 {
                    let same = asked.iter().position(|(_, c)| c == "echo same").unwrap();
                    let other = asked.iter().position(|(_, c)| c == "echo other").unwrap();
                    approvals
                        .reply(&asked[same].0, ReplyDecision::AllowSession, None)
                        .unwrap();
                    approvals
                        .reply(&asked[other].0, ReplyDecision::AllowOnce, None)
                        .unwrap();
                }
            }
            events.push(e);
        }
    };
    tokio::time::timeout(Duration::from_secs(10), collect)
        .await
        .expect("the turn did not end: the covered ask was not settled by the grant");
    let result = tokio::time::timeout(Duration::from_secs(5), turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(result.stop_reason, StopReason::EndTurn);
    let by_grant: Vec<&Event> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::PermissionResolved {
                    by: ResolvedBy::SessionGrant,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(by_grant.len(), 1, "{events:#?}");
    let Event::PermissionResolved { request_id, .. } = by_grant[0] else {
        unreachable!()
    };
    let covered = asked.iter().find(|(id, _)| id == request_id).unwrap();
    assert_eq!(covered.1, "echo same");
    assert_eq!(
        approvals.reply(request_id, ReplyDecision::Deny, None),
        Err(pod::runtime::ReplyError::AlreadyResolved(
            request_id.clone()
        ))
    );
    let r = tool_results(&pod.history());
    assert_eq!(r.len(), 3);
    assert!(r.iter().all(|r| !r.1), "{r:?}");
}

/// Two asks for the same command, both answered `allow_session` before either settled: the
/// grant is logged once, not once per reply (issue 19).
#[tokio::test]
async fn two_allow_session_replies_for_one_subject_log_one_grant() {
    let f = fixture("[permissions]\ndefault_action = \"ask\"\n");
    let approvals = Approvals::new();
    let pod = approving_pod(&f.manifest, &approvals, None);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let turn = {
        let pod = pod.clone();
        tokio::spawn(async move {
            pod.run(
                text("!echo same\n!echo same"),
                &tx,
                CancellationToken::new(),
            )
            .await
        })
    };
    let mut asked = Vec::new();
    let collect = async {
        while let Some(e) = rx.recv().await {
            if let Event::PermissionRequest(req) = &e {
                asked.push(req.request_id.clone());
                if asked.len() == 2 {
                    // Both replies land before the turn runs again.
                    for id in &asked {
                        approvals
                            .reply(id, ReplyDecision::AllowSession, None)
                            .unwrap();
                    }
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), collect)
        .await
        .expect("the turn did not end");
    let result = turn.await.unwrap().unwrap();
    assert_eq!(result.stop_reason, StopReason::EndTurn);
    assert_eq!(asked.len(), 2);
    let grants: Vec<Item> = pod
        .history()
        .into_iter()
        .filter(|i| matches!(i, Item::SessionGrant { .. }))
        .collect();
    assert_eq!(grants.len(), 1, "{grants:#?}");
    // The session log holds it once too.
    let log = std::fs::read_dir(f.state.path().join("sessions"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert_eq!(log.matches("\"sessionGrant\"").count(), 1, "{log}");
}
