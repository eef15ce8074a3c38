//! Hooks run for real: small `sh` scripts in a temporary folder.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;
use crate::manifest::HookEvent;
use crate::protocol::{Action, SubjectDecision};

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn hook_for(path: &Path, timeout: Duration) -> UserHook {
    UserHook::new(HookConfig {
        event: HookEvent::PreToolCall,
        command: vec![path.to_string_lossy().into_owned()],
        timeout,
        tools: Vec::new(),
        line: 7,
        dir: path.parent().unwrap().to_path_buf(),
        file: None,
    })
}

fn decision() -> Decision {
    Decision {
        decision: Action::Allow,
        subjects: vec![SubjectDecision {
            tool: "bash".into(),
            subject: "git status".into(),
            action: Action::Allow,
            rule: None,
            opaque: false,
            invalid: false,
            note: None,
        }],
    }
}

async fn check(dir: &Path, body: &str) -> Result<(), String> {
    let path = script(dir, "hook.sh", body);
    hook_for(&path, Duration::from_secs(5))
        .check(
            "call_1",
            "bash",
            &serde_json::json!({"command": "git status"}),
            &decision(),
        )
        .await
}

#[test]
fn applies_to_uses_case_insensitive_wildmatch() {
    let hook = |tools: &[&str]| {
        UserHook::new(HookConfig {
            event: HookEvent::PreToolCall,
            command: vec!["true".into()],
            timeout: Duration::from_secs(1),
            tools: tools.iter().map(|s| s.to_string()).collect(),
            line: 3,
            dir: PathBuf::from("."),
            file: None,
        })
    };
    assert!(hook(&[]).applies_to("bash"));
    let h = hook(&["BASH", "file_*"]);
    assert!(h.applies_to("bash"));
    assert!(h.applies_to("file_write"));
    assert!(!h.applies_to("read"));
}

#[test]
fn capped_trims_and_truncates() {
    assert_eq!(capped("  x \n"), "x");
    let long = "a".repeat(MESSAGE_CAP + 10);
    assert!(capped(&long).ends_with("[truncated]"));
}

#[tokio::test]
async fn continue_allows_and_the_hook_gets_the_call_as_json() {
    let tmp = tempfile::tempdir().unwrap();
    let result = check(
        tmp.path(),
        "cat > input.json\necho '{\"action\":\"continue\"}'",
    )
    .await;
    assert_eq!(result, Ok(()));
    // cwd is the configured dir; stdin is the call
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("input.json")).unwrap())
            .unwrap();
    assert_eq!(input["callId"], "call_1");
    assert_eq!(input["tool"], "bash");
    assert_eq!(input["input"]["command"], "git status");
    assert_eq!(input["decision"]["decision"], "allow");
    assert_eq!(input["decision"]["subjects"][0]["subject"], "git status");
}

#[tokio::test]
async fn deny_with_message() {
    let tmp = tempfile::tempdir().unwrap();
    let err = check(
        tmp.path(),
        "echo '{\"action\":\"deny\",\"message\":\"no git on Fridays\"}'",
    )
    .await
    .unwrap_err();
    assert!(err.starts_with("denied by hook `"), "{err}");
    assert!(err.contains("line 7"), "{err}");
    assert!(err.ends_with(": no git on Fridays"), "{err}");
}

#[tokio::test]
async fn exit_2_denies_with_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let err = check(tmp.path(), "echo '  blocked by policy  ' >&2\nexit 2")
        .await
        .unwrap_err();
    assert!(err.starts_with("denied by hook `"), "{err}");
    assert!(err.ends_with(": blocked by policy"), "{err}");
}

#[tokio::test]
async fn timeout_kills_the_group_and_denies() {
    let tmp = tempfile::tempdir().unwrap();
    let pidfile = tmp.path().join("sleep.pid");
    let path = script(
        tmp.path(),
        "slow.sh",
        &format!("sleep 5 &\necho $! > {}\nwait", pidfile.display()),
    );
    let started = Instant::now();
    let err = hook_for(&path, Duration::from_secs(1))
        .check("c", "bash", &serde_json::json!({}), &decision())
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(err.contains("did not answer within 1 s"), "{err}");
    assert!(err.contains("slow.sh"), "{err}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    // the grandchild `sleep` was in the hook's group: it is gone (or a zombie nobody reaped yet)
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let pid = pid.trim();
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim().chars().next();
        if stat.is_empty() || state == Some('Z') {
            break;
        }
        assert!(Instant::now() < deadline, "sleep {pid} still runs: {stat}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn crash_by_signal_denies() {
    let tmp = tempfile::tempdir().unwrap();
    let err = check(tmp.path(), "kill -9 $$").await.unwrap_err();
    assert!(err.contains("was killed by signal 9"), "{err}");
    assert!(err.contains("fails denies"), "{err}");
}

#[tokio::test]
async fn garbage_output_denies() {
    let tmp = tempfile::tempdir().unwrap();
    let err = check(tmp.path(), "echo 'sure, go ahead'")
        .await
        .unwrap_err();
    assert!(err.contains("not a valid answer"), "{err}");
    assert!(err.contains("sure, go ahead"), "{err}");
    // a hook cannot allow
    let err = check(tmp.path(), "echo '{\"action\":\"allow\"}'")
        .await
        .unwrap_err();
    assert!(err.contains("unknown action \"allow\""), "{err}");
}

#[tokio::test]
async fn empty_output_denies() {
    let tmp = tempfile::tempdir().unwrap();
    let err = check(tmp.path(), "true").await.unwrap_err();
    assert!(err.contains("printed nothing"), "{err}");
}

#[tokio::test]
async fn other_nonzero_exit_denies() {
    let tmp = tempfile::tempdir().unwrap();
    let err = check(tmp.path(), "echo oops >&2\nexit 1")
        .await
        .unwrap_err();
    assert!(err.contains("exited with code 1: oops"), "{err}");
}

#[tokio::test]
async fn oversized_output_denies_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let err = check(tmp.path(), "head -c 200000 /dev/zero | tr '\\0' 'x'\necho")
        .await
        .unwrap_err();
    assert!(err.contains("more than 64 KiB"), "{err}");
}

#[tokio::test]
async fn missing_program_denies() {
    let tmp = tempfile::tempdir().unwrap();
    let err = hook_for(&tmp.path().join("nope.sh"), Duration::from_secs(1))
        .check("c", "bash", &serde_json::json!({}), &decision())
        .await
        .unwrap_err();
    assert!(err.contains("could not be started"), "{err}");
}

async fn after(dir: &Path, body: &str, is_error: bool) -> After {
    let path = script(dir, "post.sh", body);
    let mut hook = hook_for(&path, Duration::from_secs(5));
    hook.config.event = HookEvent::PostToolCall;
    hook.after(
        "call_1",
        "bash",
        &serde_json::json!({"command": "cat .env"}),
        "TOKEN=abc",
        is_error,
    )
    .await
}

#[tokio::test]
async fn a_post_hook_keeps_replaces_notes_or_withholds_and_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(
        after(d, r#"echo '{"action":"continue"}'"#, false).await,
        After::Keep
    );
    assert_eq!(
        after(
            d,
            r#"echo '{"action":"replace","content":"TOKEN=[redacted]"}'"#,
            false
        )
        .await,
        After::Replace {
            content: "TOKEN=[redacted]".into(),
            is_error: false
        }
    );
    // The hook read the result it was given on stdin.
    let echoed = after(
        d,
        r#"python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print(json.dumps({"action":"replace","content":r["content"][::-1]}))'"#,
        false,
    )
    .await;
    assert_eq!(
        echoed,
        After::Replace {
            content: "cba=NEKOT".into(),
            is_error: false
        }
    );
    match after(
        d,
        r#"echo '{"action":"note","message":"mind the key"}'"#,
        false,
    )
    .await
    {
        After::Note(n) => assert!(n.contains("mind the key") && n.contains("post_tool_call")),
        other => panic!("{other:?}"),
    }
    match after(d, "echo secret >&2; exit 2", false).await {
        After::Withhold(w) => assert!(w.contains("withheld by") && w.contains("secret")),
        other => panic!("{other:?}"),
    }
    // Every failure withholds: a crash, garbage, an unknown action, a replace without content.
    for body in [
        "exit 1",
        "kill -9 $$",
        "echo not json",
        r#"echo '{"action":"deny"}'"#,
        r#"echo '{"action":"replace"}'"#,
        "",
    ] {
        match after(d, body, false).await {
            After::Withhold(w) => assert!(w.contains("fails withholds"), "{body}: {w}"),
            other => panic!("{body}: {other:?}"),
        }
    }
}

async fn prompt(dir: &Path, body: &str) -> Result<Option<String>, String> {
    let path = script(dir, "prompt.sh", body);
    let mut hook = hook_for(&path, Duration::from_secs(5));
    hook.config.event = HookEvent::UserPrompt;
    hook.user_prompt("session_1", "turn_1", "deploy it", None)
        .await
}

async fn start(dir: &Path, body: &str) -> Result<Option<String>, String> {
    let path = script(dir, "start.sh", body);
    let mut hook = hook_for(&path, Duration::from_secs(5));
    hook.config.event = HookEvent::SessionStart;
    hook.session_start("session_1", "new", dir).await
}

#[tokio::test]
async fn a_user_prompt_hook_continues_adds_context_or_refuses_and_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(prompt(d, r#"echo '{"action":"continue"}'"#).await, Ok(None));
    // The hook read the prompt it was given on stdin.
    let echoed = prompt(
        d,
        r#"python3 -c 'import json,sys; p=json.load(sys.stdin)["prompt"]; print(json.dumps({"action":"context","text":p.upper()}))'"#,
    )
    .await;
    assert_eq!(echoed, Ok(Some("DEPLOY IT".into())));
    let refused = prompt(d, r#"echo '{"action":"refuse","message":"not today"}'"#)
        .await
        .unwrap_err();
    assert!(
        refused.contains("refused by hook") && refused.contains("not today"),
        "{refused}"
    );
    let refused = prompt(d, "echo frozen >&2; exit 2").await.unwrap_err();
    assert!(
        refused.contains("frozen") && refused.contains("hooks.user_prompt"),
        "{refused}"
    );
    // Every failure refuses: a crash, garbage, an unknown action, a context without text or
    // larger than the cap.
    let big = format!(
        r#"python3 -c 'import json; print(json.dumps({{"action":"context","text":"x"*{}}}))'"#,
        CONTEXT_CAP + 1
    );
    for body in [
        "exit 1",
        "kill -9 $$",
        "echo not json",
        r#"echo '{"action":"deny"}'"#,
        r#"echo '{"action":"context"}'"#,
        big.as_str(),
        "",
    ] {
        let why = prompt(d, body).await.unwrap_err();
        assert!(why.contains("fails refuses the prompt"), "{body}: {why}");
    }
}

#[tokio::test]
async fn a_session_start_hook_adds_context_and_cannot_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(
        start(
            d,
            r#"python3 -c 'import json,sys; e=json.load(sys.stdin); print(json.dumps({"action":"context","text":e["source"]}))'"#
        )
        .await,
        Ok(Some("new".into()))
    );
    for body in [
        r#"echo '{"action":"refuse","message":"no"}'"#,
        "echo no >&2; exit 2",
        "exit 1",
    ] {
        let why = start(d, body).await.unwrap_err();
        assert!(why.contains("starts without its context"), "{body}: {why}");
    }
}

#[tokio::test]
async fn a_permission_denied_hooks_answer_is_ignored_but_its_failure_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(dir.path(), "denied.sh", "cat > /dev/null; echo whatever");
    let mut hook = hook_for(&path, Duration::from_secs(5));
    hook.config.event = HookEvent::PermissionDenied;
    let payload = serde_json::json!({"event": "permission_denied"});
    assert_eq!(hook.denied(&payload).await, Ok(()));
    let path = script(dir.path(), "denied.sh", "echo broke >&2; exit 3");
    let why = hook_for(&path, Duration::from_secs(5))
        .denied(&payload)
        .await
        .unwrap_err();
    assert!(why.contains("exited with code 3: broke"), "{why}");
}
