//! The `bash` tool: runs `bash -c <command>` in the workspace.
//!
//! Owns: spawning the shell with stdin closed in the session's sandbox (its own session and
//! process group, the Landlock domain, `$TMPDIR`), gathering stdout and stderr into one stream in
//! the order they were written (both go to one pipe), capping that output (head and tail kept),
//! saying which writes the sandbox refused, and ending the call: on timeout, on cancel, and once
//! the shell itself has exited, every process the command started is killed (see
//! `sandbox::reaper`), so none outlives the call.
//!
//! With the exec gate on ([`Sandbox::gate_on`]) and a judge in the context
//! ([`ToolContext::exec_gate`]), the shell is started under the gate instead:
//! every exec of the call is decided on its real argv, and the result names each exec the gate
//! stopped. One `std::process::Command`, prepared by [`Sandbox::prepare_std`], goes to
//! [`Started::spawn`], the seam it shares with hooks.
//!
//! Concurrency: `concurrent()` is true. Calls of one model response may run side by side; each
//! runs in its own session and Landlock domain, and killing one never touches another's live
//! shell. Two commands touching the same files at once is the model's own affair, as with a
//! human running two terminals.

use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::common::{parse_input, schema_of, HeadTail};
use super::{Presentation, Tool, ToolContext, ToolKind, ToolOutput};
use crate::sandbox::gate::Stopped;
use crate::sandbox::planted::Change;
use crate::sandbox::{Sandbox, Started};

/// Default timeout of one command.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Longest timeout a call may ask for.
pub const MAX_TIMEOUT_SECS: u64 = 24 * 3600;
/// Bytes of combined output kept (head and tail); the middle is cut with a note.
pub const OUTPUT_CAP: usize = 30_000;
/// How long output is still read after the shell exited, before its group is killed.
const DRAIN_GRACE: Duration = Duration::from_millis(200);
/// How long output is still read after the group was killed.
const KILL_GRACE: Duration = Duration::from_secs(1);

/// Input of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command line, run as `bash -c <command>` in the workspace with no standard input.
    pub command: String,
    /// Seconds before the command and every process it started are killed (default 120).
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_secs: Option<u64>,
}

pub struct Bash;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited,
    TimedOut,
    Cancelled,
}

fn describe_status(status: &std::process::ExitStatus) -> (String, bool) {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => (format!("exit code: {code}"), code != 0),
        (None, Some(sig)) => (format!("killed by signal {sig}"), true),
        (None, None) => ("exit status unknown".to_string(), true),
    }
}

#[async_trait]
impl Tool for Bash {
    fn name(&self) -> &'static str {
        "bash"
    }

    fn description(&self) -> &'static str {
        "Run a shell command with `bash -c` in the workspace. Standard input is closed. stdout \
         and stderr are combined in the order written; long output keeps its head and tail. The \
         result ends with the exit code; a non-zero exit is an error. On timeout (default 120 s) \
         the command and every process it started are killed; background processes do not \
         outlive the command."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<BashInput>()
    }

    fn example(&self) -> &str {
        "'{\"command\":\"git status\"}'"
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        match BashInput::deserialize(input) {
            Ok(i) => Presentation {
                kind: ToolKind::Execute,
                title: Some(i.command),
                ..Presentation::other()
            },
            Err(_) => Presentation {
                kind: ToolKind::Execute,
                ..Presentation::other()
            },
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let input: BashInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let timeout = input.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if timeout == 0 || timeout > MAX_TIMEOUT_SECS {
            return ToolOutput::error(format!(
                "invalid input: field `timeout_secs` must be between 1 and {MAX_TIMEOUT_SECS} \
                 (got {timeout})"
            ));
        }
        if input.command.trim().is_empty() {
            return ToolOutput::error("invalid input: field `command` must not be empty");
        }
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("cancelled before the command started");
        }
        run_command(&input.command, Duration::from_secs(timeout), ctx).await
    }
}

async fn run_command(command: &str, timeout: Duration, ctx: &ToolContext) -> ToolOutput {
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return ToolOutput::error(format!("cannot create output pipe: {e}")),
    };
    let writer2 = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => return ToolOutput::error(format!("cannot create output pipe: {e}")),
    };
    let judge = ctx.exec_gate.clone().filter(|_| ctx.sandbox.gate_on());
    let mut cmd = ctx.sandbox.command("bash").into_std();
    // First: it replaces the environment with the session's.
    // Held until every process of the call is gone: the call's cgroup (its process limit).
    let limit = ctx.sandbox.prepare_std(&mut cmd, judge.is_some());
    // Under `network = "proxy"`: the call's way out, and what it reached (the admission ends
    // with the call, and so do its connections).
    let admission = ctx
        .proxy
        .as_ref()
        .map(|p| p.admit(&ctx.call_id, ctx.asks.clone(), ctx.connections.clone()));
    for (name, value) in admission.iter().flat_map(|a| a.env()) {
        cmd.env(name, value);
    }
    cmd.arg("-c")
        .arg(command)
        .current_dir(&ctx.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::from(OwnedFd::from(writer)))
        .stderr(Stdio::from(OwnedFd::from(writer2)))
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat");
    // The Command holds the write ends; it is dropped (moved) here so EOF comes when the
    // processes end.
    let spawned = Started::spawn(cmd, judge);
    let mut process = match spawned {
        Ok(p) => p,
        Err(e) => return ToolOutput::error(format!("cannot start bash: {e}")),
    };
    process.contain(limit.contained());
    let mut rx = match pipe::Receiver::from_owned_fd(OwnedFd::from(reader)) {
        Ok(r) => r,
        Err(e) => {
            process.finish().await;
            return ToolOutput::error(format!("cannot read command output: {e}"));
        }
    };

    let mut out = HeadTail::new(OUTPUT_CAP);
    let mut buf = vec![0u8; 16 * 1024];
    let mut eof = false;
    let mut status = None;
    let mut ending = Ending::Exited;
    let mut killed = false;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    // Set once the shell exited (or the call was killed): how long output is still awaited.
    let mut drain: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;

    loop {
        if eof && status.is_some() {
            break;
        }
        tokio::select! {
            read = rx.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => out.push(&buf[..n]),
            },
            st = process.wait(), if status.is_none() => {
                status = Some(st);
                if !killed {
                    drain = Some(Box::pin(tokio::time::sleep(DRAIN_GRACE)));
                }
            },
            _ = &mut deadline, if !killed => {
                ending = Ending::TimedOut;
                process.kill();
                killed = true;
                drain = Some(Box::pin(tokio::time::sleep(KILL_GRACE)));
            },
            _ = ctx.cancel.cancelled(), if !killed => {
                ending = Ending::Cancelled;
                process.kill();
                killed = true;
                drain = Some(Box::pin(tokio::time::sleep(KILL_GRACE)));
            },
            _ = async {
                match drain.as_mut() {
                    Some(d) => d.await,
                    None => std::future::pending().await,
                }
            }, if drain.is_some() => {
                if killed {
                    // Something outside the call still holds the pipe: stop reading.
                    break;
                }
                // The shell exited but processes it started keep the output open.
                process.kill();
                killed = true;
                drain = Some(Box::pin(tokio::time::sleep(KILL_GRACE)));
            },
        }
    }
    // The shell is gone or killed; no process of the call lives on, and leftovers are reaped.
    let (last, stopped) = process.finish().await;
    if let Some(st) = last {
        status = Some(st);
    }
    let reached = limit.reached();
    limit.remove().await;

    let empty = out.is_empty();
    let mut text = out.finish();
    if !empty && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&sandbox_note(&ctx.sandbox, &text));
    if let Some(n) = reached {
        text.push_str(&format!(
            "[sandbox: the call reached its limit of {n} processes and threads ([sandbox] \
             max_processes = {n}); a fork past it failed with EAGAIN (\"Resource temporarily \
             unavailable\")]\n"
        ));
    }
    // A file left that pod could neither rename nor remove: the result is an error, and says
    // so first, where a client or the model cannot miss it.
    let mut left = Vec::new();
    for planted in ctx.sandbox.set_aside_planted() {
        if planted.moved_to.is_none() && planted.change != Change::Removed {
            left.push(planted.path.display().to_string());
        }
        text.push_str(&planted_note(&planted));
    }
    if !left.is_empty() {
        text.insert_str(
            0,
            &format!(
                "[sandbox: WARNING: this call left {} where tools outside the sandbox would \
                 run what it holds, and pod could neither set it aside nor remove it; remove it \
                 before running git, direnv or an editor here]\n",
                left.join(", ")
            ),
        );
    }
    if let Some(summary) = admission.as_ref().and_then(|a| a.summary()) {
        text.push_str(&summary);
        text.push('\n');
    }
    drop(admission);
    if !stopped.is_empty() {
        text.push_str(&gate_note(&stopped));
        return ToolOutput::error(text);
    }

    let mut output = match ending {
        Ending::TimedOut => {
            text.push_str(&format!(
                "timed out after {} s; the command and its processes were killed",
                timeout.as_secs()
            ));
            ToolOutput::error(text)
        }
        Ending::Cancelled => {
            text.push_str("cancelled; the command and its processes were killed");
            ToolOutput::error(text)
        }
        Ending::Exited => match status {
            Some(Ok(st)) => {
                let (line, is_error) = describe_status(&st);
                text.push_str(&line);
                ToolOutput {
                    content: text,
                    is_error,
                }
            }
            Some(Err(e)) => {
                text.push_str(&format!("cannot get the exit status: {e}"));
                ToolOutput::error(text)
            }
            None => {
                text.push_str("exit status unknown");
                ToolOutput::error(text)
            }
        },
    };
    output.is_error |= !left.is_empty();
    output
}

/// What the exec gate stopped: each exec, who ran it and the rule, then the call's end.
fn gate_note(stopped: &[Stopped]) -> String {
    const SHOWN: usize = 5;
    let mut note = String::new();
    for s in stopped.iter().take(SHOWN) {
        note.push_str(&format!(
            "exec stopped by the exec gate before it ran: `{}` (run by {}): {}\n",
            s.line,
            if s.by.is_empty() { "?" } else { &s.by },
            s.reason
        ));
    }
    if stopped.len() > SHOWN {
        note.push_str(&format!("(and {} more)\n", stopped.len() - SHOWN));
    }
    note.push_str("the command's other processes were ended");
    note
}

/// What the result says of a file set aside at the call's end ([`crate::sandbox::planted`],
/// [`crate::sandbox::repos`]).
fn planted_note(p: &crate::sandbox::planted::Planted) -> String {
    let plain = ["a ", "its ", "naming "];
    let what = if plain.iter().any(|s| p.held.starts_with(s)) {
        p.held.clone()
    } else {
        format!("holding `{}`", p.held)
    };
    let found = match p.change {
        Change::Appeared | Change::Removed => format!(
            "{} appeared after the session opened, made by a call ({what})",
            p.path.display()
        ),
        Change::Found | Change::Rewritten => format!("{} ({what})", p.path.display()),
    };
    if p.change == Change::Removed {
        tracing::warn!("sandbox: removed {found}: it could not be renamed");
        return format!(
            "[sandbox: {found}; {}, and could not be renamed, so pod removed it]\n",
            p.reader
        );
    }
    match &p.moved_to {
        Some(to) => {
            tracing::warn!(
                "sandbox: set aside {found}, left by a call, as {}",
                to.display()
            );
            let rewritten = if p.change == Change::Rewritten {
                ", and wrote in its place a config with only its settings that run nothing"
            } else {
                ""
            };
            format!(
                "[sandbox: {found}; {}, so pod set it aside as {}{rewritten}]\n",
                p.reader,
                to.display()
            )
        }
        None => format!(
            "[sandbox: {found}; {}, and pod could not set it aside: remove it before using that \
             tool here]\n",
            p.reader
        ),
    }
}

/// Lines naming what the sandbox refused, as far as `output` tells (empty when nothing).
fn sandbox_note(sandbox: &Sandbox, output: &str) -> String {
    const SHOWN: usize = 5;
    let mut note = String::new();
    if sandbox.blocked_network(output) {
        note.push_str(match sandbox.info().network {
            crate::protocol::NetworkAccess::Proxy => {
                "network connection blocked by the sandbox ([sandbox] network = \"proxy\": only \
                 pod's proxy, named in HTTP_PROXY, is reachable)\n"
            }
            _ => "network connection blocked by the sandbox ([sandbox] network = \"deny\")\n",
        });
    }
    if let Some(full) = sandbox.tmpdir_full(output) {
        note.push_str(&full);
    }
    let blocked = sandbox.blocked_writes(output);
    if blocked.is_empty() {
        return note;
    }
    for path in blocked.iter().take(SHOWN) {
        note.push_str(&format!(
            "write outside the workspace blocked by the sandbox: {path}\n"
        ));
    }
    if blocked.len() > SHOWN {
        note.push_str(&format!("(and {} more)\n", blocked.len() - SHOWN));
    }
    note.push_str(&format!(
        "(commands may write only in: {}; [sandbox] writable in the manifest adds folders)\n",
        sandbox.writable_shown().join(", ")
    ));
    note
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Instant;

    #[tokio::test]
    async fn runs_in_workspace_and_reports_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(dir.path());
        let out = Bash.run(json!({"command": "echo hi; pwd"}), &c).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.starts_with("hi\n"), "{}", out.content);
        assert!(out.content.contains(&dir.path().display().to_string()));
        assert!(out.content.ends_with("exit code: 0"), "{}", out.content);

        let out = Bash
            .run(json!({"command": "echo out; echo err >&2; exit 3"}), &c)
            .await;
        assert!(out.is_error);
        assert_eq!(out.content, "out\nerr\nexit code: 3");
    }

    #[tokio::test]
    async fn already_cancelled_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(dir.path());
        c.cancel.cancel();
        let out = Bash.run(json!({"command": "touch ran"}), &c).await;
        assert!(out.is_error && out.content.contains("cancelled"));
        assert!(!dir.path().join("ran").exists());
    }

    #[tokio::test]
    async fn stdin_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let out = Bash
            .run(
                json!({"command": "cat; echo done"}),
                &ToolContext::new(dir.path()),
            )
            .await;
        assert_eq!(out.content, "done\nexit code: 0");
    }

    /// A `sleep` argument no other test (or run) uses: `30.<pid><n>` seconds, far longer than
    /// any of these calls may last, so a call that waited for it is told apart by its time.
    fn marker(n: u32) -> String {
        format!("30.{}{n}", std::process::id())
    }

    /// Live processes whose argv holds `marker` (the call's shell and its `sleep`s; a zombie
    /// has no argv).
    fn holders(marker: &str) -> usize {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| {
                std::fs::read(entry.path().join("cmdline")).is_ok_and(|argv| {
                    argv.split(|b| *b == 0)
                        .any(|arg| String::from_utf8_lossy(arg).contains(marker))
                })
            })
            .count()
    }

    /// Waits until `done` holds, failing after 10 s; the pause only paces the poll.
    async fn wait_until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn timeout_kills_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let m = marker(1);
        let start = Instant::now();
        let out = Bash
            .run(
                json!({"command": format!("echo started; sleep {m}; touch late"), "timeout_secs": 1}),
                &ToolContext::new(dir.path()),
            )
            .await;
        assert!(out.is_error);
        assert!(out.content.contains("started"), "{}", out.content);
        assert!(
            out.content.contains("timed out after 1 s"),
            "{}",
            out.content
        );
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the call waited for the sleep"
        );
        // Once no process of the call is left, nothing can still make `late`.
        wait_until("the call's processes are gone", || holders(&m) == 0).await;
        assert!(!dir.path().join("late").exists());
    }

    #[tokio::test]
    async fn cancel_kills_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(dir.path());
        let token = c.cancel.clone();
        let (m, m2) = (marker(2), marker(3));
        let start = Instant::now();
        // Cancels once both sleeps run (the call is under way), however long that takes.
        let (a, b) = (m.clone(), m2.clone());
        let canceller = tokio::spawn(async move {
            let sleeping = |m: &str| {
                std::fs::read_dir("/proc")
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| {
                        std::fs::read(e.path().join("cmdline"))
                            .is_ok_and(|argv| argv == format!("sleep\0{m}\0").as_bytes())
                    })
            };
            wait_until("both sleeps run", || sleeping(&a) && sleeping(&b)).await;
            token.cancel();
        });
        let out = Bash
            .run(
                json!({"command": format!("(sleep {m}; touch late) & sleep {m2}; touch late2")}),
                &c,
            )
            .await;
        canceller.await.unwrap();
        assert!(out.is_error);
        assert!(out.content.contains("cancelled"), "{}", out.content);
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the call waited for the sleep"
        );
        wait_until("the call's processes are gone", || {
            holders(&m) == 0 && holders(&m2) == 0
        })
        .await;
        assert!(!dir.path().join("late").exists());
        assert!(!dir.path().join("late2").exists());
    }

    #[tokio::test]
    async fn background_process_does_not_hold_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let m = marker(4);
        let start = Instant::now();
        let out = Bash
            .run(
                json!({"command": format!("(sleep {m}; touch late) & echo quick")}),
                &ToolContext::new(dir.path()),
            )
            .await;
        assert_eq!(out.content, "quick\nexit code: 0");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the call waited for the sleep"
        );
        // The background process is killed with the call: it never gets to `touch late`.
        wait_until("the background process is gone", || holders(&m) == 0).await;
        assert!(!dir.path().join("late").exists());
    }

    #[tokio::test]
    async fn long_output_is_cut_in_the_middle() {
        let dir = tempfile::tempdir().unwrap();
        let out = Bash
            .run(
                json!({"command": "echo FIRST; head -c 100000 /dev/zero | tr '\\0' x; echo; echo LAST"}),
                &ToolContext::new(dir.path()),
            )
            .await;
        assert!(!out.is_error);
        assert!(out.content.starts_with("FIRST\n"));
        assert!(out.content.contains("LAST\nexit code: 0"));
        assert!(out.content.contains(" bytes cut ...]"), "no cut note");
        assert!(out.content.len() < OUTPUT_CAP + 200);
    }

    #[tokio::test]
    async fn bad_input_names_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(dir.path());
        let out = Bash.run(json!({}), &c).await;
        assert!(
            out.is_error && out.content.contains("command"),
            "{}",
            out.content
        );
        let out = Bash.run(json!({"command": 1}), &c).await;
        assert!(
            out.is_error && out.content.contains("`command`"),
            "{}",
            out.content
        );
        let out = Bash
            .run(json!({"command": "true", "timeout_secs": "5"}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("`timeout_secs`"),
            "{}",
            out.content
        );
        let out = Bash
            .run(json!({"command": "true", "timeout_secs": 0}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("`timeout_secs`"),
            "{}",
            out.content
        );
        let out = Bash
            .run(json!({"command": "true", "timeout_secs": 100000}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("`timeout_secs`"),
            "{}",
            out.content
        );
    }
}
