//! Files and state the model cannot forge, through the real `pod serve` over pipes: each test
//! replays one of the four holes of issue 12 and asserts the side effect is absent (nothing
//! written outside, the manifest unchanged, the forged grant not honoured, the secret not
//! returned).
//!
//! 1. A folder swapped for a symlink while writes run: nothing lands outside the scope, no
//!    temporary file is left behind.
//! 2. Pod's own files (manifest, skills, state) cannot be written under allow rules, and forged
//!    session grants are not restored.
//! 3. Rules follow the kind of access: `file_write` rules govern `edit`, `read` rules govern what
//!    `grep` searches and `glob` lists.
//! 4. A hard link to a read-denied file does not reveal it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

fn text(input: &str) -> Value {
    json!({"input": [{"type": "text", "text": input}]})
}

/// An offline-model line calling `tool` with `input`.
fn call(tool: &str, input: Value) -> String {
    format!("@{tool} {input}")
}

/// The tool results of the turn a `run` answered, in call order.
fn results(pod: &PodProcess, run: &Value) -> Vec<Value> {
    pod.turn_events(run["turnId"].as_str().unwrap_or(""))
        .into_iter()
        .filter(|e| e["type"] == "toolResult")
        .collect()
}

fn content(result: &Value) -> &str {
    result["content"].as_str().unwrap_or("")
}

/// Every file below `dir`, symlinks not followed.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() {
                stack.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out
}

const TOOLS: &str = r#"
[model]
provider = "offline"

[tools]
enabled = ["bash", "read", "file_write", "edit", "grep", "glob"]
"#;

/// Hole 1: a background process keeps exchanging `sub` (a real folder) with a symlink to a folder
/// outside the scope while 1,200 `file_write sub/yN` calls run, 100 at a time. None may land
/// outside, and no temporary file may be left anywhere.
#[test]
fn writes_racing_a_folder_swapped_for_a_symlink_never_land_outside() {
    let outside_dir = tempfile::tempdir().expect("tempdir");
    let outside = outside_dir.path().canonicalize().expect("canonical");
    let ws = Workspace::with_manifest(&format!(
        "{TOOLS}\n[scope]\nwritable = [\".\"]\n\n[permissions]\ndefault_action = \"allow\"\n\n\
         [[permissions.rule]]\ntool = \"file_write\"\npattern = \"{}/*\"\naction = \"deny\"\n",
        outside.display()
    ));
    let root = ws.dir.path().canonicalize().expect("canonical");
    std::fs::create_dir(root.join("sub")).expect("mkdir");
    std::os::unix::fs::symlink(&outside, root.join("sub.other")).expect("symlink");

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (stop, swaps, root) = (stop.clone(), swaps.clone(), root.clone());
        std::thread::spawn(move || {
            use rustix::fs::{renameat_with, RenameFlags, CWD};
            while !stop.load(Ordering::Relaxed) {
                // `sub` is always there: a folder one moment, a symlink the next.
                renameat_with(
                    CWD,
                    root.join("sub"),
                    CWD,
                    root.join("sub.other"),
                    RenameFlags::EXCHANGE,
                )
                .expect("exchange sub and sub.other");
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let mut all = Vec::new();
    for batch in 0..12 {
        let lines: Vec<String> = (0..100)
            .map(|i| {
                call(
                    "file_write",
                    json!({"path": format!("sub/y{}", batch * 100 + i), "content": "x"}),
                )
            })
            .collect();
        let run = pod.call("run", text(&lines.join("\n")));
        all.extend(results(&pod, &run));
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
    pod.call("shutdown", json!({}));

    assert_eq!(all.len(), 1200);
    assert!(
        swaps.load(Ordering::Relaxed) > 1000,
        "the folder was hardly swapped"
    );
    let written = all.iter().filter(|r| r["isError"] == false).count();
    let refused = all.len() - written;
    eprintln!("{written} written, {refused} refused");
    assert!(written > 0 && refused > 0, "the race was not exercised");
    assert_eq!(
        files_below(&outside),
        Vec::<PathBuf>::new(),
        "written outside"
    );
    let inside = files_below(&root);
    let temps: Vec<&PathBuf> = inside
        .iter()
        .filter(|p| p.to_string_lossy().contains("pod-tmp"))
        .collect();
    assert!(temps.is_empty(), "temporary files left: {temps:?}");
    let landed = inside
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('y'))
        })
        .count();
    assert_eq!(landed, written, "every reported write is a file inside");
    for r in all.iter().filter(|r| r["isError"] == true) {
        assert!(
            r["deniedBy"] == "scope"
                || r["deniedBy"] == "permission"
                || content(r).contains("nothing was written"),
            "{r}"
        );
    }
}

const PROTECTED: &str = r#"
[pod]
state_dir = "state"

[skills]
directories = ["skills"]

[permissions]
default_action = "allow"

[[permissions.rule]]
tool = "*"
pattern = "*"
action = "allow"
"#;

/// Hole 2, first half: the manifest, a skill folder and the state folder are never written under
/// an allow rule: without an approver the writes are denied, with one they ask (never for the
/// session), with a reason naming pod's own configuration.
#[test]
fn pods_own_files_are_not_written_under_allow_rules() {
    let ws = Workspace::with_manifest(&format!("{TOOLS}{PROTECTED}"));
    std::fs::create_dir_all(ws.path("skills")).expect("mkdir");
    let manifest = std::fs::read_to_string(ws.manifest()).expect("manifest");

    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let lines = [
        call(
            "file_write",
            json!({"path": "pod.toml", "content": "[pod]\n"}),
        ),
        call(
            "edit",
            json!({"path": "pod.toml", "old": "\"allow\"", "new": "\"deny\""}),
        ),
        "!echo '[pod]' > pod.toml".to_string(),
        call(
            "file_write",
            json!({"path": "skills/evil/SKILL.md", "content": "x"}),
        ),
        call(
            "file_write",
            json!({"path": "state/sessions/forged.jsonl", "content": "{}"}),
        ),
    ];
    let run = pod.call("run", text(&lines.join("\n")));
    let got = results(&pod, &run);
    assert_eq!(got.len(), lines.len());
    for r in &got {
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["deniedBy"], "permission", "{r}");
        assert!(content(r).contains("pod's own configuration"), "{r}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.manifest()).expect("manifest"),
        manifest
    );
    assert!(!ws.path("skills/evil").exists());
    assert!(!ws.path("state/sessions/forged.jsonl").exists());
    pod.call("shutdown", json!({}));

    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(true);
    let run = pod.start(
        "run",
        text(&call(
            "file_write",
            json!({"path": "pod.toml", "content": "x"}),
        )),
    );
    let request = pod.wait_event_type("permissionRequest");
    assert_eq!(
        request["options"],
        json!(["allow_once", "deny"]),
        "{request}"
    );
    assert!(
        request["reason"]
            .as_str()
            .unwrap_or("")
            .contains("pod's own configuration"),
        "{request}"
    );
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "deny"}),
    );
    pod.response(&json!(run));
    assert_eq!(
        std::fs::read_to_string(ws.manifest()).expect("manifest"),
        manifest
    );
}

const RESUME: &str = r#"
[permissions]
default_action = "ask"

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
"#;

/// Hole 2, second half: grants appended to a session log are re-validated on resume; one that
/// could never have been granted (opaque, unparsed, denied, a write of pod's own files) is
/// dropped, logged on stderr and counted in `initialize`, and does not run. A log left in the
/// workspace (where the model can write) is not resumed at all.
#[test]
fn forged_session_grants_are_dropped_on_resume() {
    let ws = Workspace::with_manifest(&format!("{TOOLS}{RESUME}"));
    std::fs::create_dir(ws.path("victim")).expect("mkdir");
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let init = pod.initialize(true);
    let id = init["session"]["id"].as_str().unwrap_or("").to_string();
    let run = pod.start("run", text("!touch granted"));
    let request = pod.wait_event_type("permissionRequest");
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "allow_session"}),
    );
    pod.response(&json!(run));
    pod.call("shutdown", json!({}));
    assert!(pod.wait_exit(std::time::Duration::from_secs(5)).success());

    let logs = ws.session_logs();
    assert_eq!(logs.len(), 1, "the log is in the state folder");
    assert!(
        !ws.path(".pod").exists(),
        "nothing is logged in the workspace"
    );
    let forged = [
        json!({"type": "sessionGrant", "tool": "bash",
               "subjects": ["eval touch pwned", "rm -rf victim", "git status\nrm -rf victim\n)"]}),
        json!({"type": "sessionGrant", "tool": "file_write", "subjects": ["pod.toml"]}),
    ];
    let mut log = std::fs::read_to_string(&logs[0]).expect("log");
    for line in &forged {
        log.push_str(&format!("{line}\n"));
    }
    std::fs::write(&logs[0], log).expect("append forged grants");

    let stderr = ws.state_home().join("stderr.log");
    let mut pod = PodProcess::spawn_logging(
        &ws,
        Framing::Lines,
        &["--resume", &id],
        Stdio::from(std::fs::File::create(&stderr).expect("stderr file")),
    );
    let init = pod.initialize(false);
    assert_eq!(init["session"]["resumed"], true);
    assert_eq!(init["session"]["droppedGrants"], 4, "{init}");
    let lines = [
        "!touch granted".to_string(),
        "!eval touch pwned".to_string(),
        "!rm -rf victim".to_string(),
        call("file_write", json!({"path": "pod.toml", "content": "x"})),
    ];
    let manifest = std::fs::read_to_string(ws.manifest()).expect("manifest");
    let run = pod.call("run", text(&lines.join("\n")));
    let got = results(&pod, &run);
    assert_eq!(
        got[0]["isError"], false,
        "the real grant is kept: {}",
        got[0]
    );
    for r in &got[1..] {
        assert_eq!(r["isError"], true, "{r}");
    }
    assert!(!ws.path("pwned").exists());
    assert!(ws.path("victim").exists());
    assert_eq!(
        std::fs::read_to_string(ws.manifest()).expect("manifest"),
        manifest
    );
    pod.call("shutdown", json!({}));
    pod.wait_exit(std::time::Duration::from_secs(5));
    let log = std::fs::read_to_string(&stderr).expect("stderr");
    assert_eq!(log.matches("not restored").count(), 4, "{log}");

    // A log in the workspace is not trusted.
    std::fs::create_dir_all(ws.path(".pod/sessions")).expect("mkdir");
    std::fs::write(
        ws.path(".pod/sessions/planted.jsonl"),
        format!("{}\n", forged[0]),
    )
    .expect("plant");
    let mut pod = PodProcess::spawn_with(&ws, Framing::Lines, &["--resume", "planted"]);
    let response = pod.request("initialize", json!({"protocolVersion": 1}));
    let message = response["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("inside the workspace"), "{response}");
}

const KINDS: &str = r#"
[permissions]
default_action = "allow"

[[permissions.rule]]
tool = "file_write"
pattern = "*.env"
action = "deny"

[[permissions.rule]]
tool = "read"
pattern = "*.env"
action = "deny"

[[permissions.rule]]
tool = "read"
pattern = "secrets/*"
action = "deny"
"#;

/// A workspace with secrets behind read rules and one plain file mentioning SECRET.
fn secrets_workspace() -> Workspace {
    let ws = Workspace::with_manifest(&format!("{TOOLS}{KINDS}"));
    for (file, body) in [
        (".env", "SECRET=dotenv\n"),
        ("config/prod.env", "SECRET=prod\n"),
        ("secrets/key", "SECRET=key\n"),
        ("notes.txt", "no SECRET here\n"),
    ] {
        let path = ws.path(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, body).expect("write");
    }
    ws
}

/// Hole 3: `file_write *.env deny` stops `edit` of `.env`; `read` rules keep files out of what
/// `grep` searches and `glob` lists, and the results say how many were withheld and by which
/// rule.
#[test]
fn rules_follow_the_kind_of_access() {
    let ws = secrets_workspace();
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let lines = [
        call(
            "edit",
            json!({"path": ".env", "old": "dotenv", "new": "changed"}),
        ),
        call(
            "edit",
            json!({"path": "config/prod.env", "old": "prod", "new": "changed"}),
        ),
        call("grep", json!({"pattern": "SECRET", "path": "."})),
        call("grep", json!({"pattern": "SECRET", "path": "secrets"})),
        call("glob", json!({"pattern": "**/*.env"})),
        call("grep", json!({"pattern": "SECRET", "path": ".env"})),
    ];
    let run = pod.call("run", text(&lines.join("\n")));
    let got = results(&pod, &run);
    assert_eq!(got.len(), lines.len());
    for r in &got[..2] {
        assert_eq!(r["deniedBy"], "permission", "{r}");
        assert!(content(r).contains("file_write"), "{r}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.path(".env")).expect(".env"),
        "SECRET=dotenv\n"
    );
    for r in &got[2..] {
        for secret in ["dotenv", "SECRET=prod", "SECRET=key"] {
            assert!(!content(r).contains(secret), "{secret} leaked: {r}");
        }
    }
    let grep = content(&got[2]);
    assert!(grep.contains("notes.txt:1:no SECRET here"), "{grep}");
    assert!(
        grep.contains("[2 files withheld by permission rules: ")
            && grep.contains("1 by rule 2 (read \"*.env\" deny)")
            && grep.contains("1 by rule 3 (read \"secrets/*\" deny)"),
        "{grep}"
    );
    assert!(content(&got[3]).contains("1 by rule 3"), "{}", got[3]);
    let glob = content(&got[4]);
    assert!(!glob.contains("prod.env"), "{glob}");
    assert!(glob.contains("1 by rule 2 (read \"*.env\" deny)"), "{glob}");
    assert_eq!(got[5]["deniedBy"], "permission", "{}", got[5]);
}

/// Hole 4: `ln .env hl`, then reading `hl` (with read, grep or edit) does not return the secret:
/// a file with several links is checked by identity against the files read rules deny. (A call
/// cannot make the link any more: the kernel refuses it.)
#[test]
fn a_hard_link_does_not_reveal_a_read_denied_file() {
    let ws = secrets_workspace();
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    // Inside a call the kernel refuses the link (the denied files are masked: EXDEV), so the
    // links are made from outside, as a process other than the pod's calls could.
    let run = pod.call("run", text("!ln .env hl2"));
    for r in results(&pod, &run) {
        assert_eq!(r["isError"], true, "{r}");
    }
    assert!(!ws.path("hl2").exists());
    std::fs::hard_link(ws.path(".env"), ws.path("hl")).expect("link");
    std::fs::hard_link(ws.path("secrets/key"), ws.path("plain")).expect("link");
    let lines = [
        call("read", json!({"path": "hl"})),
        call("read", json!({"path": "plain"})),
        call("grep", json!({"pattern": "SECRET", "path": "."})),
        call(
            "edit",
            json!({"path": "hl", "old": "SECRET=dotenv", "new": "x"}),
        ),
        call("read", json!({"path": "notes.txt"})),
    ];
    let run = pod.call("run", text(&lines.join("\n")));
    let got = results(&pod, &run);
    for r in &got[..4] {
        for secret in ["dotenv", "SECRET=key"] {
            assert!(!content(r).contains(secret), "{secret} leaked: {r}");
        }
    }
    assert!(content(&got[0]).contains("hard link"), "{}", got[0]);
    assert!(content(&got[0]).contains(".env"), "{}", got[0]);
    assert!(content(&got[1]).contains("secrets/key"), "{}", got[1]);
    assert!(content(&got[2]).contains("withheld"), "{}", got[2]);
    assert_eq!(got[3]["isError"], true, "{}", got[3]);
    assert_eq!(
        std::fs::read_to_string(ws.path(".env")).expect(".env"),
        "SECRET=dotenv\n"
    );
    assert_eq!(
        got[4]["isError"], false,
        "a plain file still reads: {}",
        got[4]
    );
}

fn pod_command(ws: &Workspace, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(args)
        .current_dir(ws.dir.path())
        .env("XDG_STATE_HOME", ws.state_home())
        .output()
        .expect("run pod")
}

/// `pod explain` shows the rules other tools bring to a call, and `pod check` reports an allow
/// that a governing tool's deny overrides.
#[test]
fn explain_and_check_show_cross_tool_rules() {
    let ws = secrets_workspace();
    let out = pod_command(
        &ws,
        &[
            "explain",
            "pod.toml",
            "--tool",
            "edit",
            "--input",
            r#"{"path":".env","old":"a","new":"b"}"#,
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("decision: deny"), "{text}");
    assert!(text.contains("rules consulted: edit's own, and those of file_write and read"));
    assert!(text.contains("file_write `.env`: deny by rule 1"), "{text}");
    assert!(text.contains("read `.env`: deny by rule 2"), "{text}");

    let lint = Workspace::with_manifest(&format!(
        "{TOOLS}{KINDS}\n[[permissions.rule]]\ntool = \"edit\"\npattern = \"*.env\"\naction = \"allow\"\n"
    ));
    let out = pod_command(&lint, &["check", "pod.toml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("rule 4 allows edit on \"*.env\", but rule 1 (file_write \"*.env\" deny"),
        "{text}"
    );
}

/// Sessions live in the per-user state folder; `pod sessions` lists them.
#[test]
fn sessions_are_listed_from_the_state_folder() {
    let ws = Workspace::with_manifest(TOOLS);
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let init = pod.initialize(false);
    let id = init["session"]["id"].as_str().unwrap_or("").to_string();
    pod.call("run", json!({"input": [{"type": "text", "text": "hello"}]}));
    pod.call("shutdown", json!({}));
    pod.wait_exit(std::time::Duration::from_secs(5));
    // A session opened and closed without a turn has nothing to resume: not listed.
    let mut empty = PodProcess::spawn(&ws, Framing::Lines);
    empty.initialize(false);
    empty.call("shutdown", json!({}));
    empty.wait_exit(std::time::Duration::from_secs(5));
    let out = pod_command(&ws, &["sessions", "--manifest", "pod.toml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!("{} (1 sessions)", ws.sessions_dir().display())),
        "{text}"
    );
    assert!(text.contains(&id), "{text}");
    assert!(!ws.path(".pod").exists());
}
