//! `pod chat` driven over pipes (stdin not a terminal: one message per line, the next line answers
//! an approval prompt), against a temporary workspace holding the example rules.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::Workspace;

/// Runs `pod chat --manifest <ws>/pod.toml` in the workspace with `input` on stdin, then EOF.
fn chat(ws: &Workspace, input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["chat", "--manifest"])
        .arg(ws.manifest())
        .current_dir(ws.dir.path())
        .env("XDG_STATE_HOME", ws.state_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pod chat");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write input");
    drop(stdin);
    let deadline = Instant::now() + common::WAIT;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pod chat did not exit after EOF");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const PROMPT: &str = "[y]es once / [a]lways this session / [n]o (+ optional message): ";

#[test]
fn a_denied_command_shows_the_denial_and_eof_exits_zero() {
    let ws = Workspace::new(300);
    std::fs::create_dir(ws.path("build")).expect("mkdir");
    let out = chat(&ws, "!rm -rf build\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("[call call_1_0] bash: rm -rf build"),
        "{text}"
    );
    assert!(
        text.contains("[result call_1_0] ERROR, denied by permission"),
        "{text}"
    );
    assert!(text.contains("Deleting files is not allowed"), "{text}");
    assert!(!text.contains(PROMPT), "{text}");
    assert!(ws.path("build").exists());
}

#[test]
fn an_ask_answered_yes_runs_the_call() {
    let ws = Workspace::new(300);
    let out = chat(&ws, "!touch made.txt\ny\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("[approval needed call_1_0] bash: touch made.txt"),
        "{text}"
    );
    // Each subject with its decision and rule, and the reason.
    assert!(text.contains("bash `touch made.txt`: ask by "), "{text}");
    assert!(text.contains("  reason: approval required"), "{text}");
    assert!(text.contains(&format!("{PROMPT}y\n")), "{text}");
    assert!(
        text.contains("[permission call_1_0] allow by client"),
        "{text}"
    );
    assert!(text.contains("[result call_1_0] ok"), "{text}");
    assert!(ws.path("made.txt").exists());
}

#[test]
fn no_with_a_message_puts_the_message_in_the_result() {
    let ws = Workspace::new(300);
    let out = chat(&ws, "!touch risky.txt\nn too risky\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("[permission call_1_0] deny by client"),
        "{text}"
    );
    assert!(
        text.contains(
            "[result call_1_0] ERROR, denied by approval: permission denied by the user: too risky"
        ),
        "{text}"
    );
    assert!(!ws.path("risky.txt").exists());
}

#[test]
fn always_answers_the_same_command_later_without_a_prompt() {
    let ws = Workspace::new(300);
    let out = chat(&ws, "!touch again.txt\na\n!touch again.txt\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches(PROMPT).count(), 1, "{text}");
    assert!(text.contains("allow by session_grant"), "{text}");
    assert_eq!(text.matches("] ok").count(), 2, "{text}");
}

#[test]
fn an_unrecognized_answer_asks_again() {
    let ws = Workspace::new(300);
    let out = chat(&ws, "!touch q.txt\nmaybe\ny\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("answer y (yes once)"), "{text}");
    assert_eq!(text.matches(PROMPT).count(), 2, "{text}");
    assert!(ws.path("q.txt").exists());
}

#[test]
fn eof_at_a_prompt_quits_cleanly_without_running_the_call() {
    let ws = Workspace::new(300);
    let out = chat(&ws, "!touch never.txt\n");
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(!ws.path("never.txt").exists());
}

#[test]
fn ctrl_c_during_a_turn_cancels_it() {
    let ws = Workspace::new(300);
    let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["chat", "--manifest"])
        .arg(ws.manifest())
        .current_dir(ws.dir.path())
        .env("XDG_STATE_HOME", ws.state_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn pod chat");
    let mut stdin = child.stdin.take().expect("stdin");
    let out = child.stdout.take().expect("stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let wait_for = |what: &str| -> String {
        let deadline = Instant::now() + common::WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) if line.contains(what) => return line,
                Ok(_) => {}
                Err(_) => panic!("no line containing {what:?}"),
            }
        }
    };
    stdin.write_all(b"!touch c.txt\n").expect("write");
    stdin.flush().expect("flush");
    wait_for("reason: approval required");
    // SAFETY: signalling the child this test spawned.
    let pid = i32::try_from(child.id()).expect("pid");
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    wait_for("cancelling the turn");
    wait_for("deny by cancel");
    wait_for("(turn ended: cancelled)");
    drop(stdin);
    let deadline = Instant::now() + common::WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "pod chat did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    assert!(!ws.path("c.txt").exists());
}
