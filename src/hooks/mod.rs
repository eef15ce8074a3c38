//! User hooks: external programs that may deny a call the permission layer let through
//! (`pre_tool_call`), narrow what the model learns of a call that ran (`post_tool_call`), add
//! context when a session starts (`session_start`), add context to or refuse a user prompt
//! (`user_prompt`), or hear about a denied call (`permission_denied`).
//!
//! Owns: running one hook for one event. The hook runs with the manifest's folder as its working
//! directory, in the session's sandbox (its own session and process group, the Landlock domain,
//! `$TMPDIR`; every process it starts dies when the hook ends), with a JSON object on stdin:
//! `{"event", "callId", "tool", "input", "decision"}` before a call, `{"event", "callId",
//! "tool", "input", "result": {"content", "isError"}}` after it, `{"event", "sessionId",
//! "source", "workspace"}` at session start, `{"event", "sessionId", "turnId", "prompt",
//! "skill"}` before a prompt, `{"event", "sessionId", "turnId", "callId", "tool", "input",
//! "deniedBy", "reason"}` after a denial. Before a call it answers on stdout
//! `{"action":"continue"}` or `{"action":"deny","message":"..."}`, or exits with code 2 to deny
//! with its stderr as the message. After a call it answers `continue`, `replace` (`content`, and
//! `isError` which can only become true), `note` (`message`, appended for the model) or
//! `withhold` (the result is replaced by an error naming the hook; exit code 2 is the same, with
//! stderr as the message). At session start it answers `continue` or `context` (`text`, at most
//! [`CONTEXT_CAP`] bytes); before a prompt `continue`, `context` or `refuse` (`message`; exit
//! code 2 is the same, with stderr as the message). After a denial its answer is ignored.
//! Anything else (a timeout, a signal, another exit code, output that is empty, not JSON or too
//! large, an unknown action) fails closed: before a call it denies, after a call it withholds
//! the result, before a prompt it refuses the prompt, at session start the session gets no
//! context from it (the runtime reports the failure); after a denial it is only logged. See
//! `docs/hooks.md`.
//!
//! Must not touch: the decision, or the session. A hook can only continue, deny or narrow; the
//! runtime calls hooks only for calls the permission hook allowed (and post hooks only for calls
//! that ran), so a hook can never turn a deny into an allow. What a hook's answer does to the
//! session (history, the model's view, the turn) is the runtime's.

use std::os::fd::OwnedFd;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use wildmatch::WildMatch;

use crate::manifest::HookConfig;
use crate::protocol::Decision;
use crate::sandbox::gate::ExecJudge;
use crate::sandbox::{Sandbox, Started};

/// At most this much of a hook's stdout and of its stderr is kept; the rest is drained.
pub const OUTPUT_CAP: usize = 64 * 1024;
/// At most this many characters of a hook's message go into the denial text.
const MESSAGE_CAP: usize = 2000;
/// The largest `context` text a `session_start` or `user_prompt` hook may give, in bytes; a
/// larger one is a failure of the hook.
pub const CONTEXT_CAP: usize = 16 * 1024;

#[derive(Debug, Clone)]
pub struct UserHook {
    pub config: HookConfig,
    tools: Vec<WildMatch>,
    sandbox: Arc<Sandbox>,
    /// The exec gate's judge for every process the hook starts (when the gate is on).
    gate: Option<Arc<dyn ExecJudge>>,
}

/// What a hook said about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Continue,
    Deny(String),
}

/// What a `post_tool_call` hook said about a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    /// The result as it is.
    Keep,
    /// Another text; an error if the result was one or the hook says so.
    Replace { content: String, is_error: bool },
    /// The result, and a note for the model after it.
    Note(String),
    /// The result is not shown to the model; this says why.
    Withhold(String),
}

/// What a `session_start` or `user_prompt` hook said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompted {
    /// Nothing to add.
    Continue,
    /// Text for the model (at most [`CONTEXT_CAP`] bytes).
    Context(String),
    /// The prompt is not sent (`user_prompt` only); this says why.
    Refuse(String),
}

/// How a hook ended and what it printed.
struct Spoken {
    status: ExitStatus,
    stdout: Vec<u8>,
    stdout_more: bool,
    stderr: Vec<u8>,
}

/// How a hook failed to give a verdict (the call is then denied).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookFailure {
    #[error("could not be started: {0}")]
    Spawn(String),
    #[error("did not answer within {0} s and was killed")]
    Timeout(u64),
    #[error("was killed by signal {0}")]
    Signal(i32),
    #[error("exited with code {code}{}", stderr_note(stderr))]
    Exit { code: i32, stderr: String },
    #[error(
        "printed nothing on stdout (expected a JSON answer such as {{\"action\":\"continue\"}})"
    )]
    Empty,
    #[error("printed more than {} KiB on stdout", OUTPUT_CAP / 1024)]
    TooLarge,
    #[error(
        "answered a context of {0} bytes, more than the {kib} KiB a hook may add; send less text",
        kib = CONTEXT_CAP / 1024
    )]
    ContextTooLarge(usize),
    #[error("printed output that is not a valid answer ({why}): {excerpt}")]
    Garbage { why: String, excerpt: String },
    #[error("failed while talking to it: {0}")]
    Io(String),
    #[error(
        "ran `{line}`, which the exec gate stopped before it ran: {reason}; the hook's other \
         processes were ended"
    )]
    Stopped { line: String, reason: String },
}

fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

/// The hook's stdout answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    action: String,
    #[serde(default)]
    message: Option<String>,
    /// `replace` only.
    #[serde(default)]
    content: Option<String>,
    /// `replace` only.
    #[serde(default)]
    is_error: Option<bool>,
    /// `context` only.
    #[serde(default)]
    text: Option<String>,
}

/// Reads at most [`OUTPUT_CAP`] bytes and drains the rest, so a chatty hook never blocks on a
/// full pipe. Returns the bytes kept and whether more were written.
async fn read_capped<R: AsyncRead + Unpin>(mut reader: R) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut more = false;
    let mut buf = [0u8; 8192];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            return Ok((kept, more));
        }
        let room = OUTPUT_CAP.saturating_sub(kept.len());
        if n > room {
            more = true;
        }
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
}

/// `text` trimmed and cut to [`MESSAGE_CAP`] characters.
fn capped(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= MESSAGE_CAP {
        return text.to_string();
    }
    let mut out: String = text.chars().take(MESSAGE_CAP).collect();
    out.push_str(" [truncated]");
    out
}

impl UserHook {
    pub fn new(config: HookConfig) -> UserHook {
        let tools = config
            .tools
            .iter()
            .map(|p| WildMatch::new_case_insensitive(p))
            .collect();
        UserHook {
            config,
            tools,
            sandbox: Arc::new(Sandbox::off()),
            gate: None,
        }
    }

    /// Runs the hook in `sandbox` (the session's) instead of none.
    pub fn with_sandbox(mut self, sandbox: Arc<Sandbox>) -> UserHook {
        self.sandbox = sandbox;
        self
    }

    /// Decides every exec of the processes the hook starts with `judge` when the sandbox's
    /// exec gate is on ([`Sandbox::gate_on`]).
    pub fn with_gate(mut self, judge: Arc<dyn ExecJudge>) -> UserHook {
        self.gate = Some(judge);
        self
    }

    /// Whether the hook runs for calls of `tool`: its `tools` patterns (wildmatch,
    /// case-insensitive), or every tool when it has none.
    pub fn applies_to(&self, tool: &str) -> bool {
        self.tools.is_empty() || self.tools.iter().any(|p| p.matches(tool))
    }

    /// How denial texts name the hook: its command and manifest line.
    pub fn label(&self) -> String {
        let mut command = self.config.command.join(" ");
        if command.chars().count() > 120 {
            command = command.chars().take(117).collect::<String>() + "...";
        }
        format!(
            "hook `{command}` (hooks.{} at line {})",
            self.config.event.key(),
            self.config.line
        )
    }

    /// A `post_tool_call` hook's word on a call's result. A hook that fails withholds it.
    pub async fn after(
        &self,
        call_id: &str,
        tool: &str,
        input: &serde_json::Value,
        content: &str,
        is_error: bool,
    ) -> After {
        let payload = serde_json::json!({
            "event": "post_tool_call",
            "callId": call_id,
            "tool": tool,
            "input": input,
            "result": { "content": content, "isError": is_error },
        });
        let said = self.talk(&payload).await.and_then(|spoken| {
            after_verdict(
                spoken.status,
                &spoken.stdout,
                spoken.stdout_more,
                &spoken.stderr,
            )
        });
        match said {
            Ok(After::Withhold(message)) => After::Withhold(if message.is_empty() {
                format!("the result was withheld by {} (no message)", self.label())
            } else {
                format!("the result was withheld by {}: {message}", self.label())
            }),
            Ok(After::Note(note)) => After::Note(format!("[note from {}] {note}", self.label())),
            Ok(other) => other,
            Err(failure) => After::Withhold(format!(
                "the result was withheld: {} {failure}; a hook that fails withholds the result",
                self.label()
            )),
        }
    }

    /// A `session_start` hook's context for the session (`source` is `new` or `resume`):
    /// `Ok(None)` when it adds none, `Err(text)` (naming the hook) when it failed.
    pub async fn session_start(
        &self,
        session_id: &str,
        source: &str,
        workspace: &std::path::Path,
    ) -> Result<Option<String>, String> {
        let payload = serde_json::json!({
            "event": "session_start",
            "sessionId": session_id,
            "source": source,
            "workspace": workspace,
        });
        let said = self
            .talk(&payload)
            .await
            .and_then(|spoken| prompted(&spoken, false));
        match said {
            Ok(Prompted::Continue) => Ok(None),
            Ok(Prompted::Context(text)) => Ok(Some(text)),
            // `prompted` gives no refusal here; an exit code 2 is a failure.
            Ok(Prompted::Refuse(_)) => Err(format!(
                "{} cannot refuse a session; the session starts without its context",
                self.label()
            )),
            Err(failure) => Err(format!(
                "{} {failure}; the session starts without its context",
                self.label()
            )),
        }
    }

    /// A `user_prompt` hook's word on the turn's prompt: `Ok(Some(text))` adds context for the
    /// model, `Err(text)` (naming the hook) refuses the prompt: the hook refused it, or failed
    /// (fail closed).
    pub async fn user_prompt(
        &self,
        session_id: &str,
        turn_id: &str,
        prompt: &str,
        skill: Option<&str>,
    ) -> Result<Option<String>, String> {
        let payload = serde_json::json!({
            "event": "user_prompt",
            "sessionId": session_id,
            "turnId": turn_id,
            "prompt": prompt,
            "skill": skill,
        });
        let said = self
            .talk(&payload)
            .await
            .and_then(|spoken| prompted(&spoken, true));
        match said {
            Ok(Prompted::Continue) => Ok(None),
            Ok(Prompted::Context(text)) => Ok(Some(text)),
            Ok(Prompted::Refuse(message)) if message.is_empty() => Err(format!(
                "the prompt was refused by {} (no message)",
                self.label()
            )),
            Ok(Prompted::Refuse(message)) => Err(format!(
                "the prompt was refused by {}: {message}",
                self.label()
            )),
            Err(failure) => Err(format!(
                "the prompt was refused: {} {failure}; a hook that fails refuses the prompt",
                self.label()
            )),
        }
    }

    /// Tells a `permission_denied` hook about a denied call. Its answer is ignored; `Err(text)`
    /// (naming the hook) says how it failed, for the log.
    pub async fn denied(&self, payload: &serde_json::Value) -> Result<(), String> {
        let failed = |failure: HookFailure| format!("{} {failure}", self.label());
        let spoken = self.talk(payload).await.map_err(failed)?;
        match exit_code(spoken.status).map_err(failed)? {
            0 => Ok(()),
            code => Err(failed(HookFailure::Exit {
                code,
                stderr: capped(&String::from_utf8_lossy(&spoken.stderr)),
            })),
        }
    }

    /// `Err(text)` denies the call: the hook denied it, or failed to answer (fail closed).
    pub async fn check(
        &self,
        call_id: &str,
        tool: &str,
        input: &serde_json::Value,
        decision: &Decision,
    ) -> Result<(), String> {
        let payload = serde_json::json!({
            "event": "pre_tool_call",
            "callId": call_id,
            "tool": tool,
            "input": input,
            "decision": decision,
        });
        match self.run(&payload).await {
            Ok(Verdict::Continue) => Ok(()),
            Ok(Verdict::Deny(message)) => Err(if message.is_empty() {
                format!("denied by {} (no message)", self.label())
            } else {
                format!("denied by {}: {message}", self.label())
            }),
            Err(failure) => Err(format!(
                "denied: {} {failure}; a hook that fails denies the call",
                self.label()
            )),
        }
    }

    /// Runs the hook once with `payload` on stdin and reads its verdict.
    pub async fn run(&self, payload: &serde_json::Value) -> Result<Verdict, HookFailure> {
        let spoken = self.talk(payload).await?;
        verdict(
            spoken.status,
            &spoken.stdout,
            spoken.stdout_more,
            &spoken.stderr,
        )
    }

    /// Runs the hook once with `payload` on stdin: how it ended and what it printed.
    async fn talk(&self, payload: &serde_json::Value) -> Result<Spoken, HookFailure> {
        let Some((program, args)) = self.config.command.split_first() else {
            return Err(HookFailure::Spawn("the command is empty".into()));
        };
        let io = |e: std::io::Error| HookFailure::Io(e.to_string());
        let judge = self.gate.clone().filter(|_| self.sandbox.gate_on());
        // ETXTBSY: the script was just written and another thread's fork still holds it open
        // for writing; that clears within milliseconds.
        let mut attempts = 0;
        let (process, limit, stdin, stdout, stderr) = loop {
            let (child_in, stdin) = std::io::pipe().map_err(io)?;
            let (stdout, child_out) = std::io::pipe().map_err(io)?;
            let (stderr, child_err) = std::io::pipe().map_err(io)?;
            let mut command = self.sandbox.command(program).into_std();
            // First: it replaces the environment with the session's.
            let limit = self.sandbox.prepare_std(&mut command, judge.is_some());
            command
                .args(args)
                .stdin(Stdio::from(OwnedFd::from(child_in)))
                .stdout(Stdio::from(OwnedFd::from(child_out)))
                .stderr(Stdio::from(OwnedFd::from(child_err)));
            if self.config.dir.is_dir() {
                command.current_dir(&self.config.dir);
            }
            // The command (with the child's ends of the pipes) is consumed here.
            match Started::spawn(command, judge.clone()) {
                Ok(process) => break (process, limit, stdin, stdout, stderr),
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempts < 5 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(HookFailure::Spawn(format!("{program}: {e}"))),
            }
        };
        // Dropped unfinished (the turn dropped the check), it kills every process of the hook;
        // the hook's cgroup (`limit`, declared first) is removed after them.
        let mut process = process;
        process.contain(limit.contained());
        let pipes = (
            pipe::Sender::from_owned_fd(OwnedFd::from(stdin)),
            pipe::Receiver::from_owned_fd(OwnedFd::from(stdout)),
            pipe::Receiver::from_owned_fd(OwnedFd::from(stderr)),
        );
        let (mut stdin, stdout, stderr) = match pipes {
            (Ok(i), Ok(o), Ok(e)) => (i, o, e),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                process.finish().await;
                return Err(io(e));
            }
        };
        let input = serde_json::to_vec(payload).map_err(|e| HookFailure::Io(e.to_string()))?;
        let write = async move {
            // A hook that exits without reading its input is fine: ignore a broken pipe.
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
            drop(stdin);
        };
        let talk = async {
            let (_, out, err, status) = tokio::join!(
                write,
                read_capped(stdout),
                read_capped(stderr),
                process.wait()
            );
            (out, err, status)
        };
        let timeout = self.config.timeout;
        let talked = tokio::time::timeout(timeout, talk).await;
        // Whatever the hook left running dies now, before its verdict counts.
        let (_, stopped) = process.finish().await;
        limit.remove().await;
        if let Some(s) = stopped.first() {
            return Err(HookFailure::Stopped {
                line: s.line.clone(),
                reason: s.reason.clone(),
            });
        }
        let (out, err, status) = match talked {
            Ok(done) => done,
            Err(_) => return Err(HookFailure::Timeout(secs(timeout))),
        };
        let status = status.map_err(io)?;
        let (stdout, stdout_more) = out.map_err(io)?;
        let (stderr, _) = err.map_err(io)?;
        Ok(Spoken {
            status,
            stdout,
            stdout_more,
            stderr,
        })
    }
}

fn secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The exit code of a hook that ended normally; a signal or an unknown status fails it.
fn exit_code(status: ExitStatus) -> Result<i32, HookFailure> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ok(code),
        (None, Some(signal)) => Err(HookFailure::Signal(signal)),
        (None, None) => Err(HookFailure::Io("the hook's exit status is unknown".into())),
    }
}

/// The stdout answer of a hook that exited 0.
fn answer(stdout: &[u8], stdout_more: bool) -> Result<Answer, HookFailure> {
    if stdout_more {
        return Err(HookFailure::TooLarge);
    }
    let text = String::from_utf8_lossy(stdout);
    if text.trim().is_empty() {
        return Err(HookFailure::Empty);
    }
    serde_json::from_str(text.trim()).map_err(|e| garbage(&text, e.to_string()))
}

fn garbage(text: &str, why: String) -> HookFailure {
    HookFailure::Garbage {
        why,
        excerpt: capped(&text.chars().take(200).collect::<String>()),
    }
}

/// A post hook's word from how it ended and what it printed.
fn after_verdict(
    status: ExitStatus,
    stdout: &[u8],
    stdout_more: bool,
    stderr: &[u8],
) -> Result<After, HookFailure> {
    let stderr = capped(&String::from_utf8_lossy(stderr));
    match exit_code(status)? {
        0 => {}
        2 => return Ok(After::Withhold(stderr)),
        code => return Err(HookFailure::Exit { code, stderr }),
    }
    let answer = answer(stdout, stdout_more)?;
    let text = || String::from_utf8_lossy(stdout).into_owned();
    match answer.action.as_str() {
        "continue" => Ok(After::Keep),
        "replace" => {
            let Some(content) = answer.content else {
                return Err(garbage(&text(), "\"replace\" needs \"content\"".into()));
            };
            Ok(After::Replace {
                content,
                is_error: answer.is_error.unwrap_or(false),
            })
        }
        "note" => Ok(After::Note(capped(
            answer.message.as_deref().unwrap_or_default(),
        ))),
        "withhold" => Ok(After::Withhold(capped(
            answer.message.as_deref().unwrap_or_default(),
        ))),
        other => Err(garbage(
            &text(),
            format!(
                "unknown action \"{other}\"; after a call a hook may answer \"continue\", \
                 \"replace\", \"note\" or \"withhold\""
            ),
        )),
    }
}

/// A `session_start` (`refuse` false) or `user_prompt` hook's word from how it ended and what
/// it printed.
fn prompted(spoken: &Spoken, refuse: bool) -> Result<Prompted, HookFailure> {
    let stderr = capped(&String::from_utf8_lossy(&spoken.stderr));
    match exit_code(spoken.status)? {
        0 => {}
        2 if refuse => return Ok(Prompted::Refuse(stderr)),
        code => return Err(HookFailure::Exit { code, stderr }),
    }
    let answer = answer(&spoken.stdout, spoken.stdout_more)?;
    let text = || String::from_utf8_lossy(&spoken.stdout).into_owned();
    match answer.action.as_str() {
        "continue" => Ok(Prompted::Continue),
        "context" => {
            let Some(context) = answer.text else {
                return Err(garbage(&text(), "\"context\" needs \"text\"".into()));
            };
            if context.len() > CONTEXT_CAP {
                return Err(HookFailure::ContextTooLarge(context.len()));
            }
            Ok(Prompted::Context(context))
        }
        "refuse" if refuse => Ok(Prompted::Refuse(capped(
            answer.message.as_deref().unwrap_or_default(),
        ))),
        other => Err(garbage(
            &text(),
            if refuse {
                format!(
                    "unknown action \"{other}\"; before a prompt a hook may answer \"continue\", \
                     \"context\" or \"refuse\""
                )
            } else {
                format!(
                    "unknown action \"{other}\"; at session start a hook may answer \
                     \"continue\" or \"context\""
                )
            },
        )),
    }
}

/// The verdict from how the hook ended and what it printed.
fn verdict(
    status: ExitStatus,
    stdout: &[u8],
    stdout_more: bool,
    stderr: &[u8],
) -> Result<Verdict, HookFailure> {
    let stderr = capped(&String::from_utf8_lossy(stderr));
    match exit_code(status)? {
        0 => {}
        2 => {
            return Ok(Verdict::Deny(if stderr.is_empty() {
                "(exit code 2, nothing on stderr)".into()
            } else {
                stderr
            }))
        }
        code => return Err(HookFailure::Exit { code, stderr }),
    }
    let answer = answer(stdout, stdout_more)?;
    match answer.action.as_str() {
        "continue" => Ok(Verdict::Continue),
        "deny" => Ok(Verdict::Deny(capped(
            answer.message.as_deref().unwrap_or_default(),
        ))),
        other => Err(garbage(
            &String::from_utf8_lossy(stdout),
            format!("unknown action \"{other}\"; a hook may answer only \"continue\" or \"deny\""),
        )),
    }
}

#[cfg(test)]
mod tests;
