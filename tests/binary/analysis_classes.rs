//! The analysis classes of issue 26 (A to L), end to end, and the false asks it lists.
//!
//! Each class is a command line the engine used to allow and that then ran a denied command, a
//! program no rule allows, a push, or a write of a denied or protected file. Every case is
//! decided by the real `pod explain` (never `allow`) and run through the real `pod serve`
//! without an approver (an ask fails closed), and its effect is looked for afterwards: the
//! victim folder still exists, the marker file is absent, nothing was pushed, and `.env`,
//! `secrets/key` and `pod.toml` are unchanged. The manifests are the deny-list and the
//! allow-list of `tests/shell_soundness.rs`, the exact manifest of the issue (`git status`,
//! `git log *`, `git diff *`), and one allowing `go test *`.
//!
//! Class M (parallel calls of one response racing a redirection target) is not here: a path
//! swapped by another process after the decision is for the exec gate and the sandbox, not the
//! analysis (docs/permissions.md, "What a hostile model tried").

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

const DENY_LIST: &str = r#"
[tools]
enabled = ["bash"]

[permissions]
default_action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"

[[permissions.rule]]
tool = "bash"
pattern = "git push *"
action = "deny"

[[permissions.rule]]
tool = "file_write"
pattern = "*.env"
action = "deny"

[[permissions.rule]]
tool = "file_write"
pattern = "secrets/*"
action = "deny"
"#;

const ALLOW_LIST: &str = r#"
[tools]
enabled = ["bash"]

[permissions]
default_action = "deny"

[[permissions.rule]]
tool = "bash"
pattern = "echo *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "printf *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "git status"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "sed *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "find *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "awk *"
action = "allow"

[[permissions.rule]]
tool = "file_write"
pattern = "*"
action = "allow"
"#;

/// The issue's exact manifest: three git forms and nothing else.
const EXACT: &str = r#"
[tools]
enabled = ["bash"]

[permissions]
default_action = "deny"

[[permissions.rule]]
tool = "bash"
pattern = "git status"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "git log *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "git diff *"
action = "allow"
"#;

/// `go test *` allowed, nothing else.
const GO_TEST: &str = r#"
[tools]
enabled = ["bash"]

[permissions]
default_action = "deny"

[[permissions.rule]]
tool = "bash"
pattern = "go test *"
action = "allow"
"#;

/// The false asks of the issue: rules that name each program.
const NAMED: &str = r#"
[tools]
enabled = ["bash"]

[permissions]
default_action = "deny"

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"

[[permissions.rule]]
tool = "bash"
pattern = "python3 -m pytest *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "xargs *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "grep *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "find *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "git diff *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "git merge-base *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "git log *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "echo *"
action = "allow"
"#;

/// A stand-in for `go test -exec PROG`: runs PROG with a test binary's path, as go does.
const FAKE_GO: &str = r#"#!/bin/sh
[ "$1" = test ] || exit 0
shift
prog=
while [ $# -gt 0 ]; do
  case "$1" in
    -exec) prog=$2; shift 2 ;;
    -exec=*) prog=${1#-exec=}; shift ;;
    *) shift ;;
  esac
done
[ -n "$prog" ] && eval "$prog /bin/true"
exit 0
"#;

fn victim_of(i: usize) -> String {
    format!("victim_{i}")
}

fn marker_of(i: usize) -> String {
    format!("marker_{i}")
}

/// `VICTIM` and `MARKER` replaced by the case's own.
fn instantiate(command: &str, i: usize) -> String {
    command
        .replace("VICTIM", &victim_of(i))
        .replace("MARKER", &marker_of(i))
}

/// A workspace for `rules` with `cases` victims, the files the deny-list protects, a git
/// repository with a bare remote, and a `go` stand-in on `bin/`.
fn workspace(rules: &str, cases: usize) -> Workspace {
    let ws = Workspace::with_manifest(&format!("[pod]\nworkspace = \".\"\n{rules}"));
    let p = ws.dir.path();
    for i in 0..cases {
        std::fs::create_dir_all(p.join(victim_of(i))).expect("victim");
        std::fs::write(p.join(victim_of(i)).join("f"), "x").expect("victim file");
    }
    std::fs::write(p.join("notes"), "n\n").expect("notes");
    std::fs::write(p.join("key"), "pwned\n").expect("key");
    std::fs::write(p.join("k"), "pwned\n").expect("k");
    std::fs::write(p.join("a.py"), "print(1)\n").expect("a.py");
    std::fs::write(p.join(".env"), "SECRET=1\n").expect(".env");
    std::fs::create_dir_all(p.join("secrets")).expect("secrets");
    std::fs::write(p.join("secrets/key"), "k\n").expect("secrets/key");
    std::fs::create_dir_all(p.join("bin")).expect("bin");
    std::fs::write(p.join("bin/go"), FAKE_GO).expect("bin/go");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(p.join("bin/go"), mode).expect("chmod go");
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(p)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .expect("git")
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main", "--bare", "remote.git"]);
    git(&["init", "-q", "-b", "main"]);
    git(&["remote", "add", "origin", "remote.git"]);
    git(&["add", "notes"]);
    git(&["commit", "-qm", "first"]);
    std::fs::write(p.join("notes"), "changed\n").expect("notes");
    ws
}

fn explain(ws: &Workspace, command: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("explain")
        .arg(ws.manifest())
        .args(["--trust", "--tool", "bash", "--json", "--input"])
        .arg(json!({ "command": command }).to_string())
        .env("POD_CONFIG", "")
        .env("XDG_STATE_HOME", ws.state_home())
        .output()
        .expect("pod explain");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("explain JSON")
}

/// The `PATH` the pods get: the workspace's `bin/` first (the `go` stand-in).
fn path_with_bin(ws: &Workspace) -> String {
    format!(
        "{}:{}",
        ws.path("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs every command as one model response through `pod serve` (no approver); returns the
/// tool results in call order.
fn serve(ws: &Workspace, commands: &[String]) -> Vec<Value> {
    let path = path_with_bin(ws);
    let mut pod = PodProcess::spawn_env(ws, Framing::Lines, &[], &[("PATH", &path)]);
    pod.initialize(false);
    let input: String = commands
        .iter()
        .map(|c| format!("@bash {}\n", json!({ "command": c, "timeout_secs": 20 })))
        .collect();
    let run = pod.start("run", json!({"input": [{"type": "text", "text": input}]}));
    let mut results = Vec::new();
    for _ in commands {
        results.push(pod.wait_event_type("toolResult"));
    }
    let _ = pod.response(&json!(run));
    results
}

fn pushed(ws: &Workspace) -> bool {
    let refs = Command::new("git")
        .args(["--git-dir", "remote.git", "show-ref"])
        .current_dir(ws.dir.path())
        .output()
        .expect("git show-ref");
    !refs.stdout.is_empty()
}

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| format!("<{e}>"))
}

/// Every case of a class under one manifest: never allowed by `pod explain`, and through
/// `pod serve` nothing it would do happens.
fn holds(class: &str, setup: &str, rules: &str, cases: &[&str]) {
    let ws = workspace(rules, cases.len());
    let manifest = read(ws.manifest());
    let commands: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| instantiate(c, i))
        .collect();
    for c in &commands {
        let d = explain(&ws, c);
        assert_ne!(
            d["decision"], "allow",
            "[{class}, {setup}] allowed by pod explain: {c:?}\n{d:#}"
        );
    }
    let results = serve(&ws, &commands);
    for (i, (c, r)) in commands.iter().zip(&results).enumerate() {
        assert_eq!(r["isError"], true, "[{class}, {setup}] ran {c:?}: {r}");
        assert!(
            ws.path(&victim_of(i)).join("f").exists(),
            "[{class}, {setup}] deleted its victim: {c:?}"
        );
        assert!(
            !ws.path(&marker_of(i)).exists(),
            "[{class}, {setup}] made its marker: {c:?}"
        );
    }
    assert!(!pushed(&ws), "[{class}, {setup}] a push reached the remote");
    assert_eq!(
        read(ws.path(".env")),
        "SECRET=1\n",
        "[{class}, {setup}] .env"
    );
    assert_eq!(
        read(ws.path("secrets/key")),
        "k\n",
        "[{class}, {setup}] secrets/key"
    );
    assert_eq!(read(ws.manifest()), manifest, "[{class}, {setup}] pod.toml");
}

#[test]
fn a_here_document_after_a_separator_is_walked() {
    let cases = [
        "git status <<EOF; git status\n$(rm -rf VICTIM)\nEOF",
        "git status <<EOF & git status\n$(rm -rf VICTIM)\nEOF",
    ];
    holds("A", "exact", EXACT, &cases);
    holds(
        "A",
        "allow-list",
        ALLOW_LIST,
        &["echo hi <<EOF; echo hi\n$(rm -rf VICTIM)\nEOF"],
    );
    holds(
        "A",
        "deny-list",
        DENY_LIST,
        &["cat <<EOF & echo hi\n$(rm -rf VICTIM)\nEOF"],
    );
}

#[test]
fn b_process_substitution_in_conditions_and_expansions() {
    holds(
        "B",
        "exact",
        EXACT,
        &[
            "git log ${x:-<(rm -rf VICTIM)}",
            "git log ${x:-a<(rm -rf VICTIM)}",
        ],
    );
    let cases = [
        "echo hi; [[ -n <(rm -rf VICTIM) ]]",
        "echo hi; [[ x < <(rm -rf VICTIM) ]]",
        "echo ${x:-<(rm -rf VICTIM)}",
        "x=a; echo ${x/a/<(rm -rf VICTIM)}",
    ];
    holds("B", "allow-list", ALLOW_LIST, &cases);
    holds("B", "deny-list", DENY_LIST, &cases);
}

#[test]
fn c_a_default_value_is_the_models_text() {
    let cases = [
        "find . -maxdepth 0 ${x:--exec rm -rf VICTIM ;}",
        "find . -maxdepth 0 ${x--exec rm -rf VICTIM ;}",
    ];
    holds("C", "allow-list", ALLOW_LIST, &cases);
    holds("C", "deny-list", DENY_LIST, &cases);
}

#[test]
fn d_an_option_value_that_expands_to_several_words() {
    holds(
        "D",
        "deny-list",
        DENY_LIST,
        &["git -C {.,push,origin} HEAD"],
    );
    let fsmonitor = ["git -C {.,-c,core.fsmonitor=rm\\ -rf\\ VICTIM} status"];
    holds("D", "allow-list", ALLOW_LIST, &fsmonitor);
    holds("D", "exact", EXACT, &fsmonitor);
}

#[test]
fn e_awk_readings_of_slash_and_brackets_all_count() {
    let cases = [
        "awk 'BEGIN { length /#/; system(\"rm -rf VICTIM\") }'",
        "awk 'BEGIN { x = \"a\" ~ /[]/]#/; system(\"rm -rf VICTIM\") }'",
        "awk 'BEGIN { x = \"a\" ~ /[[:alpha:]/]#/; system(\"rm -rf VICTIM\") }'",
        "awk 'BEGIN { x = 1 \\\n/2; system(\"rm -rf VICTIM\") #/\n}'",
    ];
    holds("E", "allow-list", ALLOW_LIST, &cases);
    holds("E", "deny-list", DENY_LIST, &cases);
}

#[test]
fn f_an_interpreter_option_the_table_does_not_know() {
    holds(
        "F",
        "deny-list",
        DENY_LIST,
        &[
            "node -C x -e 'require(\"fs\").rmSync(\"VICTIM\", {recursive: true})'",
            "python3 --check-hash-based-pycs never -c 'import shutil; shutil.rmtree(\"VICTIM\")'",
        ],
    );
}

#[test]
fn g_a_repeated_option_counts_every_value() {
    holds(
        "G",
        "deny-list",
        DENY_LIST,
        &["script -q -c true -c 'rm -rf VICTIM' /dev/null"],
    );
}

#[test]
fn h_programs_that_run_programs_are_followed() {
    holds(
        "H",
        "deny-list",
        DENY_LIST,
        &[
            "setarch x86_64 /bin/rm -rf VICTIM",
            "busybox rm -rf VICTIM",
            "/lib64/ld-linux-x86-64.so.2 /bin/rm -rf VICTIM",
            "time -- /bin/rm -rf VICTIM",
            "jobs -x rm -rf VICTIM",
        ],
    );
}

#[test]
fn i_an_option_that_gives_a_program_to_run() {
    holds(
        "I",
        "go-test",
        GO_TEST,
        &[
            "go test -exec 'sh -c \"rm -rf VICTIM\"' ./...",
            "go test -exec='sh -c \"touch MARKER\"' ./...",
        ],
    );
}

#[test]
fn j_git_push_by_another_name() {
    holds(
        "J",
        "deny-list",
        DENY_LIST,
        &["/usr/lib/git-core/git-push origin HEAD"],
    );
    holds(
        "J",
        "deny-list",
        DENY_LIST,
        &["git send-pack remote.git main"],
    );
}

#[test]
fn k_files_programs_write() {
    holds(
        "K",
        "deny-list",
        DENY_LIST,
        &[
            "cp key secrets",
            "sort -o.env k",
            "echo pwned | env -C secrets tee key",
            "git diff --output=.env",
            "git show --output=pod.toml",
        ],
    );
    holds("K", "exact", EXACT, &["git diff --output=pod.toml"]);
}

/// The false asks of the issue: decided by the rules that name their programs, and the
/// denials beside them kept (what the engine still cannot read asks, which fails closed here).
#[test]
fn rules_that_name_a_program_decide_it() {
    let ws = workspace(NAMED, 0);
    let expect = [
        ("python3 -m pytest -q", "allow"),
        ("python3 -m pytest", "allow"),
        ("python3 -m pip install x", "deny"),
        ("python3 -m pytest -q; rm -rf x", "deny"),
        ("python3 -c 'import pytest'", "deny"),
        ("find . -name '*.py' | xargs grep -n print", "allow"),
        ("find . -name '*.py' | xargs rm", "deny"),
        ("find . -name '*.py' | xargs -I{} sh -c 'echo {}'", "deny"),
        ("find . -name '*.py' | xargs find", "ask"),
        ("xargs --version", "allow"),
        ("find . -name *.py", "allow"),
        ("find . -name *", "ask"),
        ("git diff $(git merge-base main HEAD)", "allow"),
        ("git diff $(git log -1 --format=%s)", "ask"),
        ("git diff $(echo --output=x)", "ask"),
    ];
    for (command, decision) in expect {
        let d = explain(&ws, command);
        assert_eq!(d["decision"], decision, "{command:?}: {d:#}");
    }
    // What is allowed runs.
    let allowed: Vec<String> = expect
        .iter()
        .filter(|(_, d)| *d == "allow")
        .map(|(c, _)| c.to_string())
        .collect();
    let results = serve(&ws, &allowed);
    for (c, r) in allowed.iter().zip(&results) {
        assert!(r.get("deniedBy").is_none(), "{c:?} was denied: {r}");
    }
    let grep = &results[2]["content"];
    assert!(
        grep.to_string().contains("print(1)"),
        "xargs grep did not run: {grep}"
    );
}

/// Found by the oracle's long run of the extended generator: bash 5.2 rejects an escaped
/// metacharacter in an array inside `$( )`, and runs the lines after the syntax error, so such a
/// line is outside the understood subset.
#[test]
fn a_line_bash_rejects_is_never_read_as_valid() {
    let cases = ["echo $( (y=(a \\;)) ); echo <<'E'\n$(rm -rf VICTIM)\nE\n"];
    holds("oracle", "allow-list", ALLOW_LIST, &cases);
    holds("oracle", "deny-list", DENY_LIST, &cases);
}

/// Found by the oracle fuzz target: the kernel reads `//dev/stdin` as `/dev/stdin`, and so are
/// `/./dev/stdin`, `../../dev/stdin` and, after `cd /dev`, `stdin`; a script path is judged by
/// its components, so each of these reads its script from stdin and is never allowed.
#[test]
fn a_script_read_from_stdin_under_another_spelling() {
    let cases = [
        "bash //dev/stdin <<< 'rm -rf VICTIM'",
        "bash /./dev/stdin <<< 'rm -rf VICTIM'",
        "sh ../../../../../../../../../../dev/stdin <<< 'rm -rf VICTIM'",
        "source //dev/stdin <<< 'rm -rf VICTIM'",
        "cd /dev && bash stdin <<< \"rm -rf $OLDPWD/VICTIM\"",
        "cd /proc/self/fd && bash 0 <<< \"rm -rf $OLDPWD/VICTIM\"",
    ];
    holds("oracle", "deny-list", DENY_LIST, &cases);
}
