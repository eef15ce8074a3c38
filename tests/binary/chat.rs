//! `pod chat` driven over pipes (stdin not a terminal: one message per line, the next line answers
//! an approval prompt), against a temporary workspace holding the example rules.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use common::provider::{Out, Provider};
use common::Workspace;

/// Runs `pod chat --manifest <ws>/pod.toml` in the workspace with `input` on stdin, then EOF.
fn chat(ws: &Workspace, input: &str) -> Output {
    chat_with(ws, &[], input)
}

/// `pod chat --manifest M <args>` with `input` on stdin, then EOF.
fn chat_with(ws: &Workspace, args: &[&str], input: &str) -> Output {
    ws.trust();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["chat", "--manifest"])
        .arg(ws.manifest())
        .args(args)
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
    let deadline = Instant::now() + *common::WAIT;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pod chat did not exit after EOF");
        }
        // Paces the poll for the exit; the deadline decides.
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The test manifest plus a `bash "touch *"` ask rule (rule 4); returns it and the rule's line.
fn manifest_with_touch_rule() -> (String, usize) {
    let mut text = common::manifest_text(300);
    text.push_str(
        "\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"touch *\"\naction = \"ask\"\n",
    );
    let line = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[permissions.rule]]")
        .map(|(i, _)| i + 1)
        .last()
        .unwrap_or(0);
    (text, line)
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
    // The banner says what the sandbox holds.
    assert!(text.contains(", sandbox: namespaces + seccomp"), "{text}");
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
fn eof_at_a_prompt_says_denied_and_quits_without_running_the_call() {
    let ws = Workspace::new(300);
    let out = chat(&ws, "!touch never.txt\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("{PROMPT}no answer: denied\n")),
        "{text}"
    );
    assert!(!ws.path("never.txt").exists());
}

#[test]
fn an_approval_prompt_cites_the_rule_by_file_and_line_and_says_how_long_it_has() {
    let (manifest, line) = manifest_with_touch_rule();
    let ws = Workspace::with_manifest(&manifest);
    let out = chat(&ws, "!touch cited.txt\ny\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    let cited = format!(
        "  bash `touch cited.txt`: ask by rule 4 (bash \"touch *\") at {}:{line}\n",
        ws.manifest().display()
    );
    assert!(text.contains(&cited), "{cited}\n{text}");
    // ask_timeout_secs = 300, shown as a duration, not a timestamp.
    assert!(
        text.contains("  expires in 300 s\n") || text.contains("  expires in 299 s\n"),
        "{text}"
    );
    assert!(!text.contains("expires:"), "{text}");
    // The banner names the pod by its manifest's [pod] name.
    assert!(text.starts_with("pod chat: test, pod "), "{text}");
}

#[test]
fn a_pod_that_cannot_open_is_one_sentence_on_stderr() {
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\nworkspace = \".\"\n\n[model]\nprovider = \"anthropic\"\n\
         model = \"m\"\napi_key_env = \"POD_TEST_CHAT_KEY_THAT_IS_NOT_SET\"\n",
    );
    let out = chat(&ws, "hello\n");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("pod chat: "))
        .unwrap_or_default();
    assert!(line.starts_with("pod chat: initialize failed: "), "{err}");
    assert!(line.contains("POD_TEST_CHAT_KEY_THAT_IS_NOT_SET"), "{err}");
    assert!(!err.contains("ErrorObject"), "{err}");
}

#[test]
fn a_turn_error_is_printed_once_and_an_html_page_is_summarised() {
    let page: &[u8] = b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n\
                        <body><h1>502 Bad Gateway</h1><hr>nginx</body></html>\n";
    let provider = Provider::start(vec![Arc::new(move |out: &mut Out| {
        out.head(502, "text/html")?;
        out.put(page)
    })]);
    let ws = Workspace::with_manifest(&format!(
        "[pod]\nname = \"t\"\nworkspace = \".\"\n\n[model]\nprovider = \"openai\"\n\
         model = \"m\"\nbase_url = \"{}/v1\"\nmax_retries = 0\n",
        provider.base
    ));
    let out = chat(&ws, "hello\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let error = "openai API error 502: an HTML page: 502 Bad Gateway";
    assert_eq!(text.matches(error).count(), 1, "{text}");
    assert!(!text.contains("<html"), "{text}");
}

/// `pod chat` with its stdin on a terminal (a pseudo-terminal this test holds) and its stdout on
/// a pipe: `input` is typed, then the terminal hangs up.
#[cfg(target_os = "linux")]
fn chat_on_a_terminal(ws: &Workspace, input: &str) -> Output {
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two new descriptors into the given integers.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    ws.trust();
    let child = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["chat", "--manifest"])
        .arg(ws.manifest())
        .current_dir(ws.dir.path())
        .env("XDG_STATE_HOME", ws.state_home())
        .stdin(Stdio::from(slave))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pod chat");
    let mut terminal = std::fs::File::from(master);
    terminal.write_all(input.as_bytes()).expect("type");
    // The terminal echoes what is typed: drain it so its buffer never fills.
    let mut echo = terminal.try_clone().expect("clone");
    std::thread::spawn(move || std::io::copy(&mut echo, &mut std::io::sink()));
    let (tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    // Ctrl-D at the start of a line: EOF after the lines above, in order.
    terminal.write_all(&[4]).expect("ctrl-d");
    match done.recv_timeout(*common::WAIT) {
        Ok(out) => out.expect("output"),
        Err(_) => panic!("pod chat did not exit on a terminal"),
    }
}

#[cfg(target_os = "linux")]
#[test]
fn on_a_terminal_no_blank_line_follows_an_answer() {
    let (manifest, _) = manifest_with_touch_rule();
    let ws = Workspace::with_manifest(&manifest);
    let out = chat_on_a_terminal(&ws, "!touch typed.txt\ny\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(ws.path("typed.txt").exists(), "{text}");
    // The answer and its newline are the terminal's echo: the chat's next line follows the
    // prompt directly on its stdout, with no newline of its own in between.
    assert!(
        text.contains(&format!("{PROMPT}[permission call_1_0] allow by client\n")),
        "{text}"
    );
    assert!(!text.contains("\n\n"), "{text:?}");
}

/// `pod chat --resume ID` goes on with a session: the banner says so, and an "always" answer
/// given before holds.
#[test]
fn chat_resume_goes_on_with_the_session_and_its_grants() {
    let (manifest, _) = manifest_with_touch_rule();
    let ws = Workspace::with_manifest(&manifest);
    let first = stdout(&chat(&ws, "!touch one.txt\na\n"));
    assert!(ws.path("one.txt").exists(), "{first}");
    let id = first
        .split("session ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .expect("the session id in the banner")
        .to_string();
    std::fs::remove_file(ws.path("one.txt")).expect("rm");
    // The same command again, resumed: no prompt (EOF at one would deny it).
    let out = chat_with(&ws, &["--resume", &id], "!touch one.txt\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains(&format!("session {id} (resumed)")), "{text}");
    assert!(!text.contains(PROMPT), "{text}");
    assert!(ws.path("one.txt").exists(), "{text}");
}

/// On a terminal, Ctrl-D at an approval prompt denies that request and the chat goes on; at
/// the idle prompt it quits.
#[cfg(target_os = "linux")]
#[test]
fn on_a_terminal_ctrl_d_at_an_approval_denies_and_the_chat_goes_on() {
    let (manifest, _) = manifest_with_touch_rule();
    let ws = Workspace::with_manifest(&manifest);
    let out = chat_on_a_terminal(&ws, "!touch refused.txt\n\x04!touch kept.txt\ny\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("^D: denied"), "{text}");
    assert!(!ws.path("refused.txt").exists(), "{text}");
    assert!(
        ws.path("kept.txt").exists(),
        "the chat did not go on: {text}"
    );
}

#[test]
fn ctrl_c_during_a_turn_cancels_it() {
    let ws = Workspace::new(300);
    ws.trust();
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
        let deadline = Instant::now() + *common::WAIT;
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
    let deadline = Instant::now() + *common::WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "pod chat did not exit");
        // Paces the poll for the exit; the deadline decides.
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    assert!(!ws.path("c.txt").exists());
}

#[test]
fn an_untrusted_folder_is_asked_about_once_naming_what_it_would_do() {
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\n[permissions]\ndefault_action = \"ask\"\n\
         [[permissions.rule]]\ntool = \"bash\"\npattern = \"touch *\"\naction = \"allow\"\n",
    );
    let run = |input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
            .args(["chat", "--manifest"])
            .arg(ws.manifest())
            .current_dir(ws.dir.path())
            .env("XDG_STATE_HOME", ws.state_home())
            .env("POD_CONFIG", "")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pod chat");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("write input");
        drop(stdin);
        child.wait_with_output().expect("chat output")
    };
    // Declined: the allow rule stays out, so `touch` asks, and EOF at the prompt denies it.
    let out = run("n\n!touch declined.txt\n");
    let text = stdout(&out);
    assert!(
        text.contains("is not trusted. Its configuration would:"),
        "{text}"
    );
    assert!(text.contains("allows bash \"touch *\" (rule 1)"), "{text}");
    assert!(!ws.path("declined.txt").exists(), "{text}");
    // The next chat does not ask again; trusting it with `pod trust` lets the rule in.
    let out = run("!touch still_declined.txt\n");
    let text = stdout(&out);
    assert!(text.contains("(you declined)"), "{text}");
    assert!(!ws.path("still_declined.txt").exists(), "{text}");
    ws.trust();
    let out = run("!touch trusted.txt\n");
    let text = stdout(&out);
    assert!(!text.contains("Trust this folder?"), "{text}");
    assert!(ws.path("trusted.txt").exists(), "{text}");
}

#[test]
fn answering_yes_trusts_the_folder_and_applies_its_rules_at_once() {
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\n[permissions]\ndefault_action = \"ask\"\n\
         [[permissions.rule]]\ntool = \"bash\"\npattern = \"touch *\"\naction = \"allow\"\n",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["chat", "--manifest"])
        .arg(ws.manifest())
        .current_dir(ws.dir.path())
        .env("XDG_STATE_HOME", ws.state_home())
        .env("POD_CONFIG", "")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn pod chat");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"y\n!touch after_yes.txt\n")
        .expect("write input");
    drop(stdin);
    let out = child.wait_with_output().expect("chat output");
    let text = stdout(&out);
    assert!(
        text.contains(": trusted; 6 tools, permissions: 1 rules"),
        "{text}"
    );
    assert!(ws.path("after_yes.txt").exists(), "{text}");
}
