//! `pod chat`: an interactive terminal client. It spawns `pod serve` (this same executable) as a
//! child and speaks the protocol to it like any other client.
//!
//! Owns: the child process, the terminal dialogue (user messages, streamed text, tool calls and
//! results, approval prompts, Ctrl-C) and the bundled example manifest. Must not touch: the
//! server, the engine or the protocol types; everything goes over the wire.
//!
//! Transport: it reuses [`crate::client`] (the jsonrpsee client on NDJSON stdio) rather than a
//! hand-written loop, so the chat is also a running test of the public Rust client: requests
//! (`run`, `permissionReply`, `cancel`, `shutdown`) are concurrent `ClientT::request` calls, events
//! arrive through [`crate::client::events`]. A `run` answers only after its turn's last event, so
//! a turn is over once its response has arrived and `turnEnded` has been printed.
//!
//! Input is line-oriented in every case: a background thread reads stdin lines; each line at the
//! idle prompt is one user message; while a permission request is shown, the next line is its
//! answer (`y`, `a`, `n [message]`). On a terminal the prompts (`you>`) are printed too. EOF quits
//! cleanly: `shutdown`, then the child exits (it is killed if it does not within two seconds); the
//! end of a piped stdin at an approval prompt says `no answer: denied` (the shutdown denies the
//! request).
//!
//! Presentation: an approval prompt names each subject's rule by file and line and says how long
//! the request has (`expires in 300 s`); errors are sentences (a JSON-RPC error is its message and
//! code); a turn's error is printed once.
//! Ctrl-C during a turn sends `cancel`; a second Ctrl-C in the same turn quits. At the idle
//! prompt a first Ctrl-C says how to quit and a second one in a row quits. On a terminal,
//! Ctrl-D at an approval prompt denies that request and the chat goes on; at the idle prompt
//! it quits. The child runs in its own process group so the terminal's Ctrl-C reaches only
//! the chat, which decides what to do with it.
//!
//! Without `--manifest` the chat uses `examples/pod.toml` (embedded): it is written to a fresh
//! temporary folder with `workspace` set to the current directory (line numbers unchanged), so
//! `!ls` lists the user's files, and the folder is removed at exit. Sessions are logged where
//! `pod serve` logs them: the per-user state folder (`pod sessions` lists them).

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::core::client::{Client, ClientT, Subscription};
use serde::Serialize;
use serde_json::json;
use tokio::sync::mpsc;

use crate::client::{connect, events, JsonParams};
use crate::protocol::{
    Action, CallResult, CancelResult, EmptyResult, Event, InitializeResult, Mode, NetworkAccess,
    PermissionRequest, ReplyDecision, RuleAt, RunResult, SandboxKind, SetModeResult, StopReason,
    TrustStatus, WorkspaceTrust,
};

/// How the bundled example is named where a rule is cited (its line numbers are kept).
const EXAMPLE_NAME: &str = "examples/pod.toml";

/// The example manifest bundled into the binary, used when `--manifest` is not given.
pub const EXAMPLE_MANIFEST: &str = include_str!("../examples/pod.toml");

/// How long quitting waits for `shutdown`'s answer and then for the child to exit.
const QUIT_WAIT: Duration = Duration::from_secs(2);

/// Longest tool result shown, in lines.
const RESULT_LINES: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("cannot find this executable to start `pod serve`: {0}")]
    CurrentExe(std::io::Error),
    #[error("cannot read the current directory: {0}")]
    CurrentDir(std::io::Error),
    #[error("cannot write the bundled example manifest to {path}: {source}")]
    Example {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the bundled example manifest has no `workspace = ...` line")]
    ExampleWorkspace,
    #[error("cannot start `pod serve`: {0}")]
    Spawn(std::io::Error),
    #[error("`pod serve` has no {0} pipe")]
    Pipe(&'static str),
    #[error("{0}")]
    Params(#[from] serde_json::Error),
    #[error("{method} failed: {}", rpc_error_text(source))]
    Rpc {
        method: &'static str,
        source: jsonrpsee::core::client::Error,
    },
    #[error("the pod closed the connection")]
    Closed,
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// `pod chat`: runs the dialogue; returns the process exit code.
/// `pod chat [--manifest FILE] [--resume ID]`.
pub fn main(manifest: Option<&Path>, resume: Option<&str>) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pod chat: {}", ChatError::Runtime(e));
            return 1;
        }
    };
    let code = match runtime.block_on(chat(manifest, resume)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("pod chat: {e}");
            1
        }
    };
    // The stdin reader thread may still be parked in a read; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(50));
    code
}

/// A temporary folder holding the bundled manifest; removed on drop.
struct ExampleDir(PathBuf);

impl Drop for ExampleDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The example manifest with its `workspace` line pointing at `workspace` (a TOML string).
pub fn example_manifest_for(workspace: &Path) -> Result<String, ChatError> {
    let quoted = toml::Value::String(workspace.display().to_string()).to_string();
    let mut replaced = false;
    // The example's `[model]` is commented out (lines kept): the offline model is the default
    // anyway, and a user's own `[model]` (their configuration) must win over a demo's.
    let mut in_model = false;
    let lines: Vec<String> = EXAMPLE_MANIFEST
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with('[') {
                in_model = trimmed.starts_with("[model]");
            }
            if in_model && !trimmed.is_empty() && !trimmed.starts_with('#') {
                format!("# {line}")
            } else if !replaced && trimmed.starts_with("workspace") && line.contains('=') {
                replaced = true;
                format!("workspace = {quoted}")
            } else {
                line.to_string()
            }
        })
        .collect();
    if !replaced {
        return Err(ChatError::ExampleWorkspace);
    }
    Ok(lines.join("\n") + "\n")
}

fn write_example() -> Result<(ExampleDir, PathBuf), ChatError> {
    let cwd = std::env::current_dir().map_err(ChatError::CurrentDir)?;
    let text = example_manifest_for(&cwd)?;
    let dir = std::env::temp_dir().join(format!("pod-chat-{}", uuid::Uuid::new_v4().simple()));
    let path = dir.join("pod.toml");
    let io = |source| ChatError::Example {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let guard = ExampleDir(dir);
    std::fs::write(&path, text).map_err(io)?;
    Ok((guard, path))
}

/// One line of user input, or the end of it.
enum Input {
    Line(String),
    Eof,
}

/// Reads stdin lines on a plain thread (a parked blocking read must not hold up exit).
/// On a terminal, Ctrl-D is an end of input that can be followed by more: the reader goes on
/// (the dialogue decides what each one means); anywhere else the first end is the last.
fn spawn_stdin_reader(tty: bool) -> mpsc::UnboundedReceiver<Input> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut line = String::new();
        loop {
            line.clear();
            match stdin.read_line(&mut line) {
                Ok(0) if tty => {
                    if tx.send(Input::Eof).is_err() {
                        return;
                    }
                }
                Ok(0) | Err(_) => {
                    let _ = tx.send(Input::Eof);
                    return;
                }
                Ok(_) => {
                    let text = line.trim_end_matches(['\n', '\r']).to_string();
                    if tx.send(Input::Line(text)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// What ended a turn or the dialogue.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    Continue,
    Quit,
}

struct Chat {
    client: Arc<Client>,
    events: Subscription<Event>,
    input: mpsc::UnboundedReceiver<Input>,
    tty: bool,
    /// Text printed without a final newline yet (streamed deltas).
    mid_line: bool,
    /// The pod's `default_action` (from `initialize`), to say what decided a subject.
    default_action: Option<Action>,
    /// The manifest file as rules are cited (`pod.toml:40`).
    rules_file: String,
    /// The temporary copy of the bundled example, when the chat runs on it: rules written there
    /// are cited as `examples/pod.toml` (its lines are the example's).
    example_copy: Option<String>,
}

async fn chat(manifest: Option<&Path>, resume: Option<&str>) -> Result<(), ChatError> {
    // The manifest given, else `./pod.toml` as `pod serve` would take it, else the bundled
    // example (an offline demo with rules worth trying).
    let local = Path::new("pod.toml");
    let manifest = manifest.or_else(|| local.is_file().then_some(local));
    let (example, manifest, rules_file) = match manifest {
        Some(path) => (None, path.to_path_buf(), path.display().to_string()),
        None => {
            let (dir, path) = write_example()?;
            (Some(dir), path, EXAMPLE_NAME.to_string())
        }
    };
    let exe = std::env::current_exe().map_err(ChatError::CurrentExe)?;
    let mut command = tokio::process::Command::new(exe);
    command.arg("serve").arg("--manifest").arg(&manifest);
    if let Some(id) = resume {
        command.arg("--resume").arg(id);
    }
    // The bundled example is pod's own file: the chat vouches for it.
    if example.is_some() {
        command.arg("--trust");
    }
    let example_copy = example.as_ref().map(|_| manifest.display().to_string());
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(ChatError::Spawn)?;
    let stdin = child.stdin.take().ok_or(ChatError::Pipe("stdin"))?;
    let stdout = child.stdout.take().ok_or(ChatError::Pipe("stdout"))?;
    let client = Arc::new(connect(stdin, stdout));
    let events = events(&client).await.map_err(|source| ChatError::Rpc {
        method: "event subscription",
        source,
    })?;
    let tty = std::io::stdin().is_terminal();
    let mut chat = Chat {
        client,
        events,
        input: spawn_stdin_reader(tty),
        tty,
        mid_line: false,
        default_action: None,
        rules_file,
        example_copy,
    };
    let result = chat.dialogue().await;
    chat.quit().await;
    match tokio::time::timeout(QUIT_WAIT, child.wait()).await {
        Ok(_) => {}
        Err(_) => {
            let _ = child.kill().await;
        }
    }
    result
}

impl Chat {
    async fn request<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: serde_json::Value,
    ) -> Result<T, ChatError> {
        request(&self.client, method, params).await
    }

    async fn dialogue(&mut self) -> Result<(), ChatError> {
        let init: InitializeResult = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": crate::protocol::PROTOCOL_VERSION,
                    "clientInfo": {"name": "pod chat", "version": env!("CARGO_PKG_VERSION")},
                    "capabilities": {"approval": {}},
                }),
            )
            .await?;
        self.default_action = init.permissions.default_action;
        self.banner(&init);
        if !self.decide_trust(&init.workspace_trust).await? {
            return Ok(());
        }
        let mut ctrl_c = Box::pin(tokio::signal::ctrl_c());
        // Ctrl-C at the idle prompt: the first one says how to quit, a second one in a row quits.
        let mut interrupted = false;
        loop {
            if self.tty {
                print!("you> ");
                flush();
            }
            let line = tokio::select! {
                input = self.input.recv() => input.unwrap_or(Input::Eof),
                _ = &mut ctrl_c => {
                    ctrl_c = Box::pin(tokio::signal::ctrl_c());
                    if interrupted {
                        self.say("^C again: quitting");
                        return Ok(());
                    }
                    interrupted = true;
                    self.say("^C: nothing to cancel (Ctrl-D or Ctrl-C again quits)");
                    continue;
                }
            };
            interrupted = false;
            ctrl_c = Box::pin(tokio::signal::ctrl_c());
            let text = match line {
                Input::Eof => return Ok(()),
                Input::Line(text) => text,
            };
            if text.trim().is_empty() {
                continue;
            }
            if !self.tty {
                self.say(&format!("you> {text}"));
            }
            if let Some(mode) = text.trim().strip_prefix("/mode") {
                self.set_mode(mode.trim()).await?;
                continue;
            }
            if self.turn(text).await? == Next::Quit {
                return Ok(());
            }
        }
    }

    fn banner(&mut self, init: &InitializeResult) {
        let p = &init.permissions;
        let permissions = if p.enabled {
            let default = p.default_action.map(|a| a.to_string()).unwrap_or_default();
            format!("{} rules, default {default}", p.rules)
        } else {
            "off".to_string()
        };
        let s = &init.sandbox;
        let sandbox = match (s.kind, s.enforced) {
            (SandboxKind::None, _) => "off".to_string(),
            (SandboxKind::Namespaces, _) => format!(
                "namespaces + seccomp{}",
                if s.network == NetworkAccess::Deny {
                    ", no network"
                } else {
                    ""
                }
            ),
            (SandboxKind::Landlock, true) => format!(
                "landlock ABI {}, enforced{}",
                s.abi,
                if s.network == NetworkAccess::Deny {
                    ", no TCP"
                } else {
                    ""
                }
            ),
            (SandboxKind::Landlock, false) => "NOT enforced on this kernel".to_string(),
        };
        // `[pod] name` when the manifest sets one other than the default.
        let name = match init.pod_info.name.as_str() {
            "pod" => String::new(),
            name => format!("{name}, "),
        };
        self.say(&format!(
            "pod chat: {name}pod {}, session {}{}, {} tools, permissions: {permissions}, sandbox: {sandbox}",
            init.pod_info.version,
            init.session.id,
            if init.session.resumed { " (resumed)" } else { "" },
            init.tools.len()
        ));
        let c = &init.configuration;
        let model = match &c.model {
            Some(model) => format!("{} {model}", c.provider),
            None => c.provider.clone(),
        };
        let files = if c.built_in_defaults {
            "pod's built-in defaults".to_string()
        } else if c.files.is_empty() {
            self.rules_file.clone()
        } else {
            let shown: Vec<&str> = c
                .files
                .iter()
                .map(|f| match &self.example_copy {
                    Some(copy) if f == copy => EXAMPLE_NAME,
                    _ => f.as_str(),
                })
                .collect();
            shown.join(" over ")
        };
        let mode = match p.mode {
            Mode::Default => String::new(),
            other => format!("; mode: {}", other.as_str()),
        };
        self.say(&format!("configuration: {files}; model: {model}{mode}"));
        if let Some(warning) = &p.warning {
            self.say(&format!("WARNING: {warning}"));
        }
        self.say(
            "One message per line (with the offline model, `!cmd` runs a shell command; \
             `/mode NAME` sets the mode). Ctrl-C cancels a turn, Ctrl-D quits.",
        );
    }

    /// `/mode NAME`: sets the session's mode (`/mode` alone lists them).
    async fn set_mode(&mut self, name: &str) -> Result<(), ChatError> {
        let names: Vec<&str> = Mode::ALL.iter().map(|m| m.as_str()).collect();
        let Some(mode) = Mode::from_name(name) else {
            self.say(&format!(
                "modes: {} (/mode NAME sets one)",
                names.join(", ")
            ));
            return Ok(());
        };
        match request::<SetModeResult>(&self.client, "setMode", json!({ "mode": mode })).await {
            Ok(set) => self.say(&format!("mode: {}", set.mode.as_str())),
            Err(e) => self.say(&format!("(mode not set: {e})")),
        }
        Ok(())
    }

    /// When the project's folder is untrusted and its configuration would run or widen
    /// something, names exactly what, and asks once: trust it (kept), for this session only,
    /// or not (kept, so the next chat does not ask again). False when input ended meanwhile.
    async fn decide_trust(&mut self, trust: &WorkspaceTrust) -> Result<bool, ChatError> {
        let folder = trust.folder.clone().unwrap_or_default();
        if trust.available_decisions.is_empty() {
            return Ok(true);
        }
        if trust.declined {
            self.say(&format!(
                "{folder} is not trusted (you declined): {} settings of its configuration are \
                 ignored (`pod trust {folder}` to trust it)",
                trust.ignored.len()
            ));
            return Ok(true);
        }
        let why = if trust.changed.is_empty() {
            String::new()
        } else {
            format!(
                " (changed since you trusted it: {})",
                trust.changed.join(", ")
            )
        };
        self.say(&format!(
            "{folder} is not trusted{why}. Its configuration would:"
        ));
        for ignored in &trust.ignored {
            self.say(&format!("  {} ({})", ignored.what, ignored.place));
        }
        loop {
            self.say("Trust this folder? [y]es / [s]ession only / [n]o (its restrictions apply either way): ");
            let Some(Input::Line(line)) = self.input.recv().await else {
                return Ok(false);
            };
            let decision = match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => "trust_cwd",
                "s" | "session" => "trust_session",
                "n" | "no" | "" => "decline",
                _ => continue,
            };
            let result: InitializeResult = self
                .request(
                    "trust/apply",
                    json!({ "decision": decision, "cwd": folder }),
                )
                .await?;
            self.default_action = result.permissions.default_action;
            let now = &result.workspace_trust;
            let state = match now.status {
                TrustStatus::Trusted => "trusted",
                TrustStatus::Session => "trusted for this session",
                TrustStatus::Untrusted => "not trusted",
            };
            self.say(&format!(
                "{folder}: {state}; {} tools, permissions: {} rules",
                result.tools.len(),
                result.permissions.rules
            ));
            return Ok(true);
        }
    }

    /// Runs one turn: starts `run`, renders its events, answers permission requests.
    async fn turn(&mut self, text: String) -> Result<Next, ChatError> {
        let client = self.client.clone();
        let run = tokio::spawn(async move {
            request::<RunResult>(
                &client,
                "run",
                json!({"input": [{"type": "text", "text": text}]}),
            )
            .await
        });
        tokio::pin!(run);
        let mut run_result: Option<RunResult> = None;
        let mut turn_ended = false;
        let mut pending: VecDeque<PermissionRequest> = VecDeque::new();
        let mut asked: Option<String> = None;
        let mut cancelled = false;
        // Set when `turnEnded` carried the turn's error: the run result repeats it.
        let mut error_shown = false;
        let mut ctrl_c = Box::pin(tokio::signal::ctrl_c());
        while run_result.is_none() || !turn_ended {
            if asked.is_none() {
                if let Some(request) = pending.front() {
                    self.show_request(request);
                    asked = Some(request.request_id.clone());
                }
            }
            tokio::select! {
                biased;
                event = self.events.next() => match event {
                    Some(Ok(event)) => {
                        if let Event::TurnEnded { error, .. } = &event {
                            turn_ended = true;
                            error_shown |= error.is_some();
                        }
                        self.show_event(event, &mut pending, &mut asked);
                    }
                    Some(Err(e)) => self.say(&format!("(unreadable event: {e})")),
                    None => return Err(ChatError::Closed),
                },
                result = &mut run, if run_result.is_none() => {
                    match result {
                        Ok(Ok(result)) => {
                            // `turnEnded` comes first and usually carries the same error.
                            if let (Some(error), false) = (&result.error, error_shown) {
                                self.say(&format!("(turn error: {error})"));
                                error_shown = true;
                            }
                            run_result = Some(result);
                        }
                        Ok(Err(e)) => return Err(e),
                        Err(_) => return Err(ChatError::Closed),
                    }
                }
                input = self.input.recv(), if asked.is_some() => {
                    let line = match input {
                        Some(Input::Line(line)) => line,
                        // Ctrl-D on a terminal answers this request no; the chat goes on.
                        Some(Input::Eof) if self.tty => {
                            if let Some(request) = pending.pop_front() {
                                self.say("^D: denied");
                                let params = json!({
                                    "requestId": request.request_id,
                                    "decision": ReplyDecision::Deny,
                                });
                                if let Err(e) = self
                                    .request::<EmptyResult>("permissionReply", params)
                                    .await
                                {
                                    self.say(&format!("(reply not taken: {e})"));
                                }
                            }
                            asked = None;
                            continue;
                        }
                        _ => {
                            // Quitting shuts the pod down, which denies the pending request.
                            self.say("no answer: denied");
                            return Ok(Next::Quit);
                        }
                    };
                    if self.tty {
                        // The terminal echoed the answer and its newline.
                        self.mid_line = false;
                    } else {
                        self.say(&line);
                    }
                    match parse_answer(&line) {
                        Some((decision, message)) => {
                            let Some(request) = pending.pop_front() else { continue };
                            asked = None;
                            let mut params = json!({
                                "requestId": request.request_id,
                                "decision": decision,
                            });
                            if let Some(message) = message {
                                params["message"] = json!(message);
                            }
                            // A request resolved meanwhile (timeout) answers -32004: say so.
                            if let Err(e) = self
                                .request::<EmptyResult>("permissionReply", params)
                                .await
                            {
                                self.say(&format!("(reply not taken: {e})"));
                            }
                        }
                        None => {
                            self.say("answer y (yes once), a (always this session) or n [message]");
                            asked = None;
                        }
                    }
                }
                _ = &mut ctrl_c => {
                    ctrl_c = Box::pin(tokio::signal::ctrl_c());
                    if cancelled {
                        self.say("^C again: quitting");
                        return Ok(Next::Quit);
                    }
                    cancelled = true;
                    self.say("^C: cancelling the turn (Ctrl-C again quits)");
                    let _: CancelResult = self.request("cancel", json!({})).await?;
                }
            }
        }
        self.end_line();
        Ok(Next::Continue)
    }

    fn show_event(
        &mut self,
        event: Event,
        pending: &mut VecDeque<PermissionRequest>,
        asked: &mut Option<String>,
    ) {
        match event {
            Event::TextDelta { text, .. } => {
                print!("{text}");
                flush();
                self.mid_line = !text.ends_with('\n');
            }
            Event::ToolCall {
                call_id,
                tool,
                input,
                ..
            } => self.say(&format!("[call {call_id}] {}", call_summary(&tool, &input))),
            Event::ToolResult(CallResult {
                call_id,
                is_error,
                content,
                denied_by,
                ..
            }) => {
                let head = match (is_error, denied_by) {
                    (false, _) => "ok".to_string(),
                    (true, Some(by)) => format!("ERROR, denied by {}", wire(&by)),
                    (true, None) => "ERROR".to_string(),
                };
                self.say(&format!(
                    "[result {call_id}] {head}{}",
                    indent_block(&content)
                ));
            }
            Event::PermissionRequest(request) => pending.push_back(request),
            Event::PermissionResolved {
                request_id,
                call_id,
                decision,
                by,
                ..
            } => {
                // A request resolved without our answer (timeout, cancel, grant) is no longer asked.
                if let Some(at) = pending.iter().position(|r| r.request_id == request_id) {
                    pending.remove(at);
                    if asked.as_deref() == Some(request_id.as_str()) {
                        *asked = None;
                    }
                }
                self.say(&format!(
                    "[permission {call_id}] {} by {}",
                    wire(&decision),
                    wire(&by)
                ));
            }
            Event::TurnEnded {
                stop_reason, error, ..
            } => {
                self.end_line();
                if stop_reason != StopReason::EndTurn {
                    let why = error.map(|e| format!(": {e}")).unwrap_or_default();
                    self.say(&format!("(turn ended: {}{why})", wire(&stop_reason)));
                }
            }
            Event::TurnStarted { .. } | Event::Status { .. } => {}
        }
    }

    fn show_request(&mut self, request: &PermissionRequest) {
        self.say(&format!(
            "[approval needed {}] {}",
            request.call_id,
            call_summary(&request.tool, &request.input)
        ));
        for subject in &request.subjects {
            let line = self
                .cited(subject)
                .line(self.default_action, RuleAt::File(&self.rules_file));
            self.say(&format!("  {line}"));
        }
        self.say(&format!("  reason: {}", request.reason));
        if let Some(expires) = &request.expires_at {
            let now = time::OffsetDateTime::now_utc();
            self.say(&format!("  {}", expiry_text(expires, now)));
        }
        if request.options.contains(&ReplyDecision::AllowProject) {
            print!(
                "[y]es once / [a]lways this session / [p]refix: always `{}` / [P]roject: \
                 always, in this project / [n]o (+ optional message): ",
                request.prefixes.join("`, `")
            );
        } else if request.options.contains(&ReplyDecision::AllowPrefix) {
            print!(
                "[y]es once / [a]lways this session / [p]refix: always `{}` / [n]o (+ optional message): ",
                request.prefixes.join("`, `")
            );
        } else {
            print!("[y]es once / [a]lways this session / [n]o (+ optional message): ");
        }
        flush();
        self.mid_line = true;
        if !self.tty {
            // Line-oriented use echoes the answer on the same line.
            self.mid_line = false;
        }
    }

    /// `subject` with a rule of the bundled example's temporary copy cited as the example.
    fn cited(
        &self,
        subject: &crate::protocol::SubjectDecision,
    ) -> crate::protocol::SubjectDecision {
        let mut subject = subject.clone();
        if let (Some(copy), Some(rule)) = (&self.example_copy, subject.rule.as_mut()) {
            if rule.file.as_deref() == Some(copy.as_str()) {
                rule.file = Some(EXAMPLE_NAME.to_string());
            }
        }
        subject
    }

    /// Ends the dialogue: `shutdown` (answered before the pod exits), bounded in time.
    async fn quit(&mut self) {
        self.end_line();
        let shutdown = self.request::<EmptyResult>("shutdown", json!({}));
        let _ = tokio::time::timeout(QUIT_WAIT, shutdown).await;
    }

    fn say(&mut self, line: &str) {
        self.end_line();
        println!("{line}");
    }

    fn end_line(&mut self) {
        if self.mid_line {
            println!();
            self.mid_line = false;
        }
    }
}

async fn request<T: serde::de::DeserializeOwned>(
    client: &Client,
    method: &'static str,
    params: serde_json::Value,
) -> Result<T, ChatError> {
    client
        .request(method, JsonParams::new(&params)?)
        .await
        .map_err(|source| ChatError::Rpc { method, source })
}

/// `y` / `yes`, `a` / `always`, `p` / `prefix`, `P` / `project`, `n` / `no` optionally followed
/// by a message for the model.
fn parse_answer(line: &str) -> Option<(ReplyDecision, Option<String>)> {
    let line = line.trim();
    let (word, rest) = line
        .split_once(char::is_whitespace)
        .map(|(w, r)| (w, r.trim()))
        .unwrap_or((line, ""));
    if word == "P" || word.eq_ignore_ascii_case("project") {
        return Some((ReplyDecision::AllowProject, None));
    }
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" => Some((ReplyDecision::AllowOnce, None)),
        "a" | "always" => Some((ReplyDecision::AllowSession, None)),
        "p" | "prefix" => Some((ReplyDecision::AllowPrefix, None)),
        "n" | "no" => Some((
            ReplyDecision::Deny,
            (!rest.is_empty()).then(|| rest.to_string()),
        )),
        _ => None,
    }
}

/// `bash: ls -l` for shell commands, `read {"path":"a"}` for other tools.
fn call_summary(tool: &str, input: &serde_json::Value) -> String {
    match input.get("command").and_then(|c| c.as_str()) {
        Some(command) if tool == "bash" => format!("bash: {command}"),
        _ => format!("{tool} {input}"),
    }
}

/// `expires in 300 s` for a request's `expiresAt` (RFC 3339), from `now`; the time itself when
/// it cannot be read.
fn expiry_text(expires_at: &str, now: time::OffsetDateTime) -> String {
    let format = time::format_description::well_known::Rfc3339;
    match time::OffsetDateTime::parse(expires_at, &format) {
        Ok(at) => match (at - now).as_seconds_f64().round() {
            secs if secs >= 1.0 => format!("expires in {secs:.0} s"),
            _ => "expires now".to_string(),
        },
        Err(_) => format!("expires at {expires_at}"),
    }
}

/// A client error as a sentence: a JSON-RPC error is its message and code (the library's own
/// rendering is a debug dump), a lost connection says so.
fn rpc_error_text(error: &jsonrpsee::core::client::Error) -> String {
    use jsonrpsee::core::client::Error;
    match error {
        Error::Call(object) => format!("{} (error {})", object.message(), object.code()),
        Error::RestartNeeded(_) | Error::ServiceDisconnect => {
            "the pod closed the connection".to_string()
        }
        other => other.to_string(),
    }
}

/// A result's content after its status: one line inline, more lines indented below.
fn indent_block(content: &str) -> String {
    let lines: Vec<&str> = content.lines().collect();
    match lines.as_slice() {
        [] => String::new(),
        [one] => format!(": {one}"),
        many => {
            let mut out = String::new();
            for line in many.iter().take(RESULT_LINES) {
                out.push_str("\n    ");
                out.push_str(line);
            }
            if many.len() > RESULT_LINES {
                out.push_str(&format!(
                    "\n    ... ({} more lines)",
                    many.len() - RESULT_LINES
                ));
            }
            out
        }
    }
}

/// The wire spelling of an enum value (`allow_once`, `session_grant`, ...).
fn wire<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_string(),
    }
}

fn flush() {
    let _ = std::io::stdout().flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse() {
        assert_eq!(parse_answer("y"), Some((ReplyDecision::AllowOnce, None)));
        assert_eq!(
            parse_answer(" A "),
            Some((ReplyDecision::AllowSession, None))
        );
        assert_eq!(
            parse_answer("n too risky"),
            Some((ReplyDecision::Deny, Some("too risky".into())))
        );
        assert_eq!(parse_answer("no"), Some((ReplyDecision::Deny, None)));
        assert_eq!(parse_answer("P"), Some((ReplyDecision::AllowProject, None)));
        assert_eq!(parse_answer("p"), Some((ReplyDecision::AllowPrefix, None)));
        assert_eq!(parse_answer("maybe"), None);
    }

    #[test]
    fn expiry_is_a_duration_from_now() {
        let now = time::OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let format = time::format_description::well_known::Rfc3339;
        let at = |secs: f64| {
            (now + time::Duration::seconds_f64(secs))
                .format(&format)
                .unwrap()
        };
        assert_eq!(expiry_text(&at(299.9996), now), "expires in 300 s");
        assert_eq!(expiry_text(&at(42.2), now), "expires in 42 s");
        assert_eq!(expiry_text(&at(0.2), now), "expires now");
        assert_eq!(expiry_text(&at(-5.0), now), "expires now");
        assert_eq!(expiry_text("soon", now), "expires at soon");
    }

    #[test]
    fn rpc_errors_read_as_sentences() {
        // The error object type is private to jsonrpsee's client; it deserializes like the wire.
        let object = serde_json::json!({
            "code": -32603,
            "message": "internal error: cannot open the pod: the key variable K is not set",
        });
        let error = jsonrpsee::core::client::Error::Call(serde_json::from_value(object).unwrap());
        let chat = ChatError::Rpc {
            method: "initialize",
            source: error,
        };
        assert_eq!(
            chat.to_string(),
            "initialize failed: internal error: cannot open the pod: the key variable K is not set (error -32603)"
        );
    }

    #[test]
    fn the_example_points_at_the_workspace_and_keeps_its_lines() {
        let text = example_manifest_for(Path::new("/tmp/x \"y\"")).unwrap();
        assert_eq!(text.lines().count(), EXAMPLE_MANIFEST.lines().count());
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(parsed["pod"]["workspace"].as_str(), Some("/tmp/x \"y\""));
        // The user's own model is not overridden by the demo's.
        assert!(parsed.get("model").is_none(), "{text}");
        assert!(EXAMPLE_MANIFEST.contains("[model]"));
    }
}
