//! The exec gate through the real `pod serve` over real pipes, with the payload running: every
//! case below reaches an `execve` of `rm` (or a program no rule allows), and the test looks for
//! the side effect afterwards (the victim folder is still there, the marker the command would
//! write after it is absent), besides the tool result naming the stopped exec and its rule.
//!
//! Most cases run with the shell analysis switched off (`POD_TEST_NO_ANALYSIS=1`, which exists
//! in debug builds only: `src/testing.rs`), so every call is allowed up front and the gate alone
//! holds the rules; the classes include ones the analysis decides right today. The others prove
//! that an allowed build-like command still works under the gate with the same output and exit
//! codes, that an allow-list holds at exec time for the call's own shells, and that every exec
//! the analysis did not predict is recorded (`analysisMismatch`) and counted by `pod sessions`.

use crate::common;

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
"#;

const ALLOW_LIST: &str = r#"
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
pattern = "make *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "echo *"
action = "allow"
"#;

const NO_ANALYSIS: &[(&str, &str)] = &[("POD_TEST_NO_ANALYSIS", "1")];

fn start(ws: &Workspace, env: &[(&str, &str)]) -> (PodProcess, Value) {
    let mut pod = PodProcess::spawn_env(ws, Framing::Lines, &[], env);
    let init = pod.initialize(false);
    assert_eq!(
        init["sandbox"]["execGate"], true,
        "the exec gate is off on this machine: {}",
        init["sandbox"]
    );
    (pod, init)
}

/// Runs one turn of one bash call; returns its `toolResult`.
fn run(pod: &mut PodProcess, command: &str) -> Value {
    let run = pod.call(
        "run",
        json!({"input": [{"type": "text", "text": format!("!{command}")}]}),
    );
    assert_eq!(run["stopReason"], "end_turn", "{run}");
    let turn = run["turnId"].as_str().unwrap_or_default().to_string();
    let mut results: Vec<Value> = pod
        .turn_events(&turn)
        .into_iter()
        .filter(|e| e["type"] == "toolResult")
        .collect();
    assert_eq!(results.len(), 1, "{results:#?}");
    results.remove(0)
}

fn content(result: &Value) -> &str {
    result["content"].as_str().unwrap_or_default()
}

/// A workspace with a `victim` folder holding a file.
fn workspace(manifest: &str) -> Workspace {
    let ws = Workspace::with_manifest(manifest);
    std::fs::create_dir(ws.path("victim")).expect("victim");
    std::fs::write(ws.path("victim/data"), "keep").expect("victim data");
    ws
}

fn assert_held(ws: &Workspace, result: &Value, command: &str) {
    let text = content(result);
    assert_eq!(
        std::fs::read_to_string(ws.path("victim/data"))
            .ok()
            .as_deref(),
        Some("keep"),
        "the victim is gone after `{command}`: {text}"
    );
    assert!(
        !ws.path("marker").exists(),
        "the call went on after the stop: `{command}`: {text}"
    );
    assert_eq!(result["isError"], true, "`{command}`: {text}");
    assert!(
        text.contains("exec stopped by the exec gate"),
        "`{command}`: {text}"
    );
    assert!(text.contains("rm *"), "the rule is not named: {text}");
}

#[test]
fn the_gate_alone_stops_rm_whoever_runs_it() {
    let ws = workspace(DENY_LIST);
    std::fs::write(ws.path("script.sh"), "#!/bin/sh\nrm -rf victim\n").expect("script");
    let (mut pod, _) = start(&ws, NO_ANALYSIS);
    let mut cases = vec![
        // What the analysis decides right today, and what it cannot see.
        "rm -rf victim; touch marker".to_string(),
        "/bin/rm -rf victim; touch marker".to_string(),
        "bash -c 'rm -rf victim'; touch marker".to_string(),
        "find . -maxdepth 1 -name victim -exec rm -rf {} +; touch marker".to_string(),
        "echo victim | xargs rm -rf; touch marker".to_string(),
        "sh script.sh; touch marker".to_string(),
        "chmod +x script.sh && ./script.sh; touch marker".to_string(),
        "/lib64/ld-linux-x86-64.so.2 /bin/rm -rf victim; touch marker".to_string(),
        // The loader running rm under another name: a link, or a descriptor.
        "ln -sf /bin/rm ./zz && /lib64/ld-linux-x86-64.so.2 ./zz -rf victim; touch marker"
            .to_string(),
        "exec 3</bin/rm; /lib64/ld-linux-x86-64.so.2 /proc/self/fd/3 -rf victim; touch marker"
            .to_string(),
        "cp /bin/rm ./other && /lib64/ld-linux-x86-64.so.2 ./other -rf victim; touch marker"
            .to_string(),
        "cp /bin/rm ./copy && ./copy -rf victim; touch marker".to_string(),
        "ln -s /bin/rm ./link && ./link -rf victim; touch marker".to_string(),
        "(exec -a cleaner /bin/rm -rf victim); touch marker".to_string(),
        "git -c alias.x='!rm -rf victim' x; touch marker".to_string(),
        "setarch x86_64 /bin/rm -rf victim; touch marker".to_string(),
        "time -- /bin/rm -rf victim; touch marker".to_string(),
        // `env` searches PATH: an exec that fails in each folder before the one that loads.
        "env rm -rf victim; touch marker".to_string(),
    ];
    if Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status()
        .is_ok()
    {
        // posix_spawn (a vfork child sharing its parent's memory), and a thread's exec (the
        // thread becomes the process; its siblings are gone by the exec stop).
        cases.push(
            r#"python3 -c 'import subprocess; subprocess.run(["rm", "-rf", "victim"])'; touch marker"#
                .to_string(),
        );
        cases.push(
            r#"python3 -c 'import os, threading; t = threading.Thread(target=lambda: os.execv("/bin/rm", ["rm", "-rf", "victim"])); t.start(); t.join()'; touch marker"#
                .to_string(),
        );
    }
    if Command::new("busybox").arg("true").status().is_ok() {
        cases.push("busybox rm -rf victim; touch marker".to_string());
    }
    for command in &cases {
        let result = run(&mut pod, command);
        assert_held(&ws, &result, command);
    }
}

#[test]
fn a_git_hook_is_bound_by_the_deny_rules() {
    let ws = workspace(DENY_LIST);
    let (mut pod, _) = start(&ws, NO_ANALYSIS);
    // Planted and run in one call: a hook a call leaves in a repository it made is set aside
    // when the call ends (`sandbox::repos`), so a later call would find none.
    let command = "git init -q && printf '#!/bin/sh\\nrm -rf victim\\n' > .git/hooks/pre-commit \
                   && chmod +x .git/hooks/pre-commit && \
                   git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x; \
                   touch marker";
    let result = run(&mut pod, command);
    assert_held(&ws, &result, command);
    assert!(content(&result).contains("hooks.pod-planted"), "{result}");
    // The hook's shell is git's child, not one of the call's shells.
    assert!(
        content(&result).contains("`rm -rf victim` (run by "),
        "{result}"
    );
    assert!(!content(&result).contains("(run by bash)"), "{result}");
}

#[test]
fn an_allowed_build_runs_unchanged_under_the_gate() {
    let ws = workspace(DENY_LIST);
    std::fs::write(
        ws.path("Makefile"),
        "all:\n\tfor i in 1 2 3 4 5 6 7 8 9 10; do /bin/true; done\n\t@echo built\n",
    )
    .expect("Makefile");
    let command = "for i in $(seq 40); do /bin/echo -n .; done; echo; make -s all; \
                   sh -c 'echo out; echo err >&2; exit 3'";
    let mut outputs = Vec::new();
    for env in [NO_ANALYSIS, &[]] {
        let (mut pod, _) = start(&ws, env);
        outputs.push(run(&mut pod, command));
    }
    // The same command with the gate off.
    let off = Workspace::with_manifest(&format!("{DENY_LIST}\n[sandbox]\nexec_gate = false\n"));
    std::fs::copy(ws.path("Makefile"), off.path("Makefile")).expect("Makefile");
    let mut pod = PodProcess::spawn(&off, Framing::Lines);
    let init = pod.initialize(false);
    assert_eq!(init["sandbox"]["execGate"], false, "{init}");
    let ungated = run(&mut pod, command);
    let expected = format!("{}\nbuilt\nout\nerr\nexit code: 3", ".".repeat(40));
    assert_eq!(content(&ungated), expected, "{ungated}");
    for gated in outputs {
        assert_eq!(content(&gated), expected, "{gated}");
        assert_eq!(gated["isError"], true);
    }
}

#[test]
fn an_allow_list_holds_at_exec_time_and_mismatches_are_recorded() {
    let ws = workspace(ALLOW_LIST);
    std::fs::write(ws.path("Makefile"), "all:\n\t@ls victim\n\t@echo made\n").expect("Makefile");
    let (mut pod, _) = start(&ws, NO_ANALYSIS);
    // A shell-made exec no rule allows is stopped; what make runs itself is held to deny rules
    // only (ls runs).
    let stopped = run(&mut pod, "ls victim; touch marker");
    assert!(!ws.path("marker").exists(), "{stopped}");
    assert!(
        content(&stopped).contains("exec stopped by the exec gate before it ran: `ls victim`"),
        "{stopped}"
    );
    let made = run(&mut pod, "make -s all");
    assert_eq!(content(&made), "data\nmade\nexit code: 0", "{made}");
    drop(pod);
    let logs = ws.session_logs();
    let log = common::read(logs.last().expect("a session log"));
    let mismatches: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|item| item["type"] == "analysisMismatch")
        .collect();
    assert!(
        mismatches
            .iter()
            .any(|m| m["command"] == "ls victim" && m["argv"] == json!(["ls", "victim"])),
        "{mismatches:#?}"
    );
    assert!(
        mismatches.iter().any(|m| m["command"] == "make -s all"),
        "{mismatches:#?}"
    );
    // make's own `sh -c` and `ls` are program-made: never a mismatch.
    assert!(
        !mismatches.iter().any(|m| m["argv"][0] == "sh"),
        "{mismatches:#?}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["sessions", "--manifest", "pod.toml"])
        .current_dir(ws.path("."))
        .env("XDG_STATE_HOME", ws.state_home())
        .output()
        .expect("pod sessions");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("analysis mismatches: {}", mismatches.len())),
        "{text}"
    );
}

#[test]
fn what_the_analysis_predicts_is_no_mismatch() {
    let ws = workspace(DENY_LIST);
    let (mut pod, _) = start(&ws, &[]);
    let result = run(&mut pod, "ls victim && cat victim/data | wc -c");
    assert_eq!(content(&result), "data\n4\nexit code: 0", "{result}");
    drop(pod);
    let logs = ws.session_logs();
    let log = common::read(logs.last().expect("a session log"));
    assert!(!log.contains("analysisMismatch"), "{log}");
}

/// The gate holds in both sandbox modes: under namespaces the traced first process is `bwrap`,
/// whose exec of the call's own `bash -c` is the call's first shell (neither decided nor a
/// mismatch), and every exec after it is decided as under Landlock.
#[test]
fn the_gate_holds_inside_the_namespaces_and_under_landlock() {
    for mode in ["namespaces", "landlock"] {
        let ws = workspace(&format!("{DENY_LIST}\n[sandbox]\nmode = \"{mode}\"\n"));
        let (mut pod, init) = start(&ws, NO_ANALYSIS);
        let kind = init["sandbox"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if mode == "namespaces" && kind != "namespaces" {
            eprintln!("exec_gate: no namespaces on this machine ({init}); landlock only");
            continue;
        }
        let ok = run(&mut pod, "echo fine");
        assert_eq!(ok["isError"], false, "{mode}: {ok}");
        assert!(content(&ok).contains("fine"), "{mode}: {ok}");
        let command = "find . -maxdepth 1 -name victim -exec rm -rf {} +; touch marker";
        let result = run(&mut pod, command);
        assert_held(&ws, &result, command);
    }
}

/// `pod serve` under another tracer (`strace -f`, which attaches to every child first), with
/// `lines` on stdin: its stdout, lines parsed. Bounded by `timeout` so a hang fails the test.
fn serve_under_strace(ws: &Workspace, lines: &[Value]) -> Vec<Value> {
    use std::io::Write as _;
    let mut child = Command::new("timeout")
        .args(["60", "strace", "-f", "-qq", "-o", "/dev/null"])
        .arg(env!("CARGO_BIN_EXE_pod"))
        .args(["serve", "--trust", "--manifest"])
        .arg(ws.manifest())
        .env("POD_CONFIG", "")
        .env("POD_MANAGED_DIR", common::NO_MANAGED_DIR)
        .env("XDG_STATE_HOME", ws.state_home())
        .current_dir(ws.dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("strace is needed (apt-get install strace; .ci/run installs it)");
    let mut stdin = child.stdin.take().expect("stdin");
    for line in lines {
        writeln!(stdin, "{line}").expect("write");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Where ptrace is taken (pod itself traced by another tracer), `exec_gate = true` refuses to
/// start, saying why and what to do, and runs nothing; the default starts without the gate and
/// says so in `initialize`; `pod check` says which of the two it will be.
#[test]
fn without_ptrace_a_required_gate_refuses_and_the_default_says_it_is_off() {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": 1, "clientInfo": {"name": "t", "version": "0"}, "capabilities": {}}});
    let run = json!({"jsonrpc": "2.0", "id": 2, "method": "run", "params":
        {"input": [{"type": "text", "text": "!touch ran-marker"}]}});

    let required = Workspace::with_manifest(&format!("{DENY_LIST}\n[sandbox]\nexec_gate = true\n"));
    let out = serve_under_strace(&required, &[initialize.clone(), run.clone()]);
    let answer = out
        .iter()
        .find(|m| m["id"] == 1)
        .expect("an answer to initialize");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("exec_gate = true"), "{answer}");
    assert!(message.contains("ptrace"), "{answer}");
    assert!(!required.dir.path().join("ran-marker").exists());

    let default = Workspace::with_manifest(DENY_LIST);
    let out = serve_under_strace(&default, &[initialize, run]);
    let answer = out
        .iter()
        .find(|m| m["id"] == 1)
        .expect("an answer to initialize");
    assert_eq!(answer["result"]["sandbox"]["execGate"], false, "{answer}");

    let check = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null"])
        .arg(env!("CARGO_BIN_EXE_pod"))
        .arg("check")
        .arg(required.manifest())
        .env("POD_CONFIG", "")
        .env("POD_MANAGED_DIR", common::NO_MANAGED_DIR)
        .output()
        .expect("strace");
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        text.contains("exec gate: REQUIRED but unavailable"),
        "{text}"
    );
}

/// A hook's own command is the user's configuration and is not judged; what it runs (here a
/// script of the workspace, as a test runner runs code the model wrote) is held to the deny
/// rules like any program a call runs: the exec is stopped, the hook fails, so the call it was
/// checking is denied, and the victim stays. With the gate off the same hook removes it.
#[test]
fn what_a_hook_runs_is_bound_by_the_deny_rules() {
    for gate in [true, false] {
        let ws = workspace(&format!(
            "{DENY_LIST}\n[sandbox]\nexec_gate = {gate}\n\n[[hooks.pre_tool_call]]\n\
             command = [\"sh\", \"check.sh\"]\n"
        ));
        std::fs::write(
            ws.path("check.sh"),
            "rm -rf victim\ntouch marker\necho '{\"action\":\"continue\"}'\n",
        )
        .expect("hook script");
        let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &[]);
        let init = pod.initialize(false);
        assert_eq!(init["sandbox"]["execGate"], gate, "{}", init["sandbox"]);
        let result = run(&mut pod, "echo checked-call-ran");
        let text = content(&result);
        if gate {
            assert_eq!(
                std::fs::read_to_string(ws.path("victim/data"))
                    .ok()
                    .as_deref(),
                Some("keep"),
                "the hook's rm ran: {text}"
            );
            assert!(!ws.path("marker").exists(), "the hook went on: {text}");
            assert_eq!(result["isError"], true, "{result}");
            assert!(!text.contains("checked-call-ran"), "{result}");
            assert!(
                text.contains("exec gate") && text.contains("rm -rf victim"),
                "the stopped exec is not named: {text}"
            );
            assert!(text.contains("rm *"), "the rule is not named: {text}");
        } else {
            assert!(!ws.path("victim").exists(), "{text}");
            assert!(ws.path("marker").exists(), "{text}");
            assert!(text.contains("checked-call-ran"), "{result}");
        }
    }
}
