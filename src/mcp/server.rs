//! One MCP server, for the whole session: over stdio (started through the sandbox) or over
//! streamable HTTP (`http.rs`: reached from pod's own process once the `network` rules allow
//! its host), spoken to with `rmcp`, stopped when the pod stops.
//!
//! Lifetime: [`Server::start`] spawns the program with [`CallProcess::spawn`] (so it runs in the
//! session's Landlock domain, gets a session of its own, and its orphans come back to it, not
//! to the pod), then does the MCP handshake and lists the tools, all under
//! `startup_timeout_secs`. A task then owns the process until it exits or [`Server::stop`] asks
//! (closing its stdin first, then killing every process of it). The process stays listed as
//! started with the reaper while it lives, so the reaper's sweep after each call never takes it
//! for a leftover; its descendants are its own (it is their subreaper), never the pod's
//! children. Its stderr goes to the log, line by line (`pod::mcp` target, `info`), and the last
//! lines are kept for the error that says why it failed or exited. An HTTP server has no
//! process: the gate, the handshake and the listing run under the same `startup_timeout_secs`,
//! and a task then holds the connection until the transport closes or [`Server::stop`] asks.
//!
//! Must not touch: decisions, the wire; a tool call's own handling is `tool.rs`.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::http;
use super::tool::{self, McpTool};
use crate::manifest::{McpServerConfig, McpTransport};
use crate::network::Net;
use crate::permission::mcp::check_tool_name;
use crate::protocol::{McpServerInfo, McpServerState, ToolAnnotations};
use crate::sandbox::{CallProcess, Sandbox};
use crate::tools::Tool;

/// How long a server asked to stop gets to exit after its stdin closed, before it is killed.
const STOP_GRACE: Duration = Duration::from_millis(200);
/// How long a server whose handshake failed is given to show that it exited.
const EXIT_WAIT: Duration = Duration::from_millis(500);
/// How often an HTTP server's connection is looked at, to learn that it closed.
const CLOSED_POLL: Duration = Duration::from_millis(500);
/// Lines of a server's stderr kept for error messages.
const KEPT_LINES: usize = 5;
/// Longest stderr line logged; the rest of it is cut.
const MAX_LINE: usize = 4096;

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Running,
    /// It never ran: why.
    Failed(String),
    /// It ran, then exited or was stopped: how.
    Exited(String),
}

/// A tool as its server listed it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// Pod's name for it, `mcp__SERVER__TOOL`.
    pub name: String,
    /// The name the server knows it by.
    pub tool: String,
    pub description: String,
    pub input_schema: serde_json::Value,
    pub annotations: Option<ToolAnnotations>,
}

pub struct Server {
    config: McpServerConfig,
    state: watch::Sender<State>,
    /// The client end of the connection, while it runs.
    peer: Option<Peer<RoleClient>>,
    listed: Vec<Listed>,
    /// Tools the server listed that cannot be offered, and why.
    left_out: Vec<String>,
    /// Cancelled to stop the server.
    stop: CancellationToken,
}

impl Server {
    /// Starts the server of `config` in `sandbox`; never fails: a server that does not start is
    /// returned in the [`State::Failed`] state, with why.
    pub async fn start(
        config: McpServerConfig,
        sandbox: Arc<Sandbox>,
        net: Arc<Net>,
    ) -> Arc<Server> {
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let stop = CancellationToken::new();
        let failed = |config: McpServerConfig, why: String| {
            tracing::warn!("MCP server {}: {why}", config.name);
            Arc::new(Server {
                config,
                state: watch::Sender::new(State::Failed(why)),
                peer: None,
                listed: Vec::new(),
                left_out: Vec::new(),
                stop: CancellationToken::new(),
            })
        };
        let started = tokio::time::timeout(
            config.startup_timeout,
            connect(&config, &sandbox, &net, stderr.clone()),
        )
        .await;
        let (service, process, tools) = match started {
            Ok(Ok(connected)) => connected,
            Ok(Err((why, process))) => {
                if let Some(process) = process {
                    process.finish().await;
                }
                let why = with_stderr(why, &stderr);
                return failed(config, why);
            }
            Err(_) => {
                // The future (and with it the process, which kills every process of it when
                // dropped unfinished) is gone.
                let why = with_stderr(
                    format!(
                        "did not answer `initialize` and list its tools within {} s \
                         (startup_timeout_secs); it was stopped",
                        config.startup_timeout.as_secs()
                    ),
                    &stderr,
                );
                return failed(config, why);
            }
        };
        let mut listed = Vec::new();
        let mut left_out = Vec::new();
        for t in tools {
            let tool = t.name.to_string();
            let name = match check_tool_name(&config.name, &tool) {
                Ok(full) => full,
                Err(why) => {
                    left_out.push(why);
                    continue;
                }
            };
            if listed
                .iter()
                .any(|l: &Listed| l.name.eq_ignore_ascii_case(&name))
            {
                left_out.push(format!(
                    "tool \"{tool}\": another tool of the server has the same name (in any case)"
                ));
                continue;
            }
            listed.push(Listed {
                name,
                description: t
                    .description
                    .map(|d| d.to_string())
                    .or_else(|| t.title.clone())
                    .unwrap_or_default(),
                input_schema: serde_json::Value::Object((*t.input_schema).clone()),
                annotations: t.annotations.map(tool::annotations),
                tool,
            });
        }
        for why in &left_out {
            tracing::warn!("MCP server {}: {why}; it is not offered", config.name);
        }
        tracing::info!(
            "MCP server {}: running, {} tools",
            config.name,
            listed.len()
        );
        let state = watch::Sender::new(State::Running);
        let server = Arc::new(Server {
            peer: Some(service.peer().clone()),
            config,
            state: state.clone(),
            listed,
            left_out,
            stop: stop.clone(),
        });
        tokio::spawn(lifetime(
            server.config.name.clone(),
            process,
            service,
            stop,
            state,
            stderr,
        ));
        server
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    pub fn state(&self) -> State {
        self.state.borrow().clone()
    }

    /// Waits (at most `wait`) until the server is no longer running; its state then.
    pub async fn settled(&self, wait: Duration) -> State {
        let mut rx = self.state.subscribe();
        let _ = tokio::time::timeout(wait, rx.wait_for(|s| *s != State::Running)).await;
        self.state()
    }

    /// The connection, while the server runs.
    pub fn peer(&self) -> Option<&Peer<RoleClient>> {
        match self.state() {
            State::Running => self.peer.as_ref(),
            _ => None,
        }
    }

    /// The server's tools, as pod tools.
    pub fn tools(self: &Arc<Server>) -> Vec<Arc<dyn Tool>> {
        self.listed
            .iter()
            .map(|l| Arc::new(McpTool::new(self.clone(), l.clone())) as Arc<dyn Tool>)
            .collect()
    }

    pub fn info(&self) -> McpServerInfo {
        let (state, error) = match self.state() {
            State::Running => (McpServerState::Running, None),
            State::Failed(why) => (McpServerState::Failed, Some(why)),
            State::Exited(why) => (McpServerState::Exited, Some(why)),
        };
        let error = match (error, self.left_out.is_empty()) {
            (Some(e), _) => Some(e),
            (None, false) => Some(format!("left out: {}", self.left_out.join("; "))),
            (None, true) => None,
        };
        McpServerInfo {
            name: self.config.name.clone(),
            state,
            tools: match state {
                McpServerState::Running => self.listed.len(),
                _ => 0,
            },
            error,
        }
    }

    /// Why a call of this server's tool `tool` cannot run (the server is not running, or does
    /// not offer that tool).
    pub fn unavailable(&self, tool: &str) -> String {
        let name = &self.config.name;
        match self.state() {
            State::Failed(why) => format!(
                "MCP server {name} is not running, so its tool {tool} cannot be called: it failed \
                 to start: {why}"
            ),
            State::Exited(why) => format!(
                "MCP server {name} is not running, so its tool {tool} cannot be called: {why}"
            ),
            State::Running => {
                let offered: Vec<&str> = self.listed.iter().map(|l| l.tool.as_str()).collect();
                format!(
                    "MCP server {name} has no tool {tool} that pod offers (its tools: {})",
                    offered.join(", ")
                )
            }
        }
    }

    /// A text saying the server exited, with its last stderr lines, once it has.
    pub fn exit_text(&self, state: &State) -> String {
        let name = &self.config.name;
        match state {
            State::Exited(how) | State::Failed(how) => format!("MCP server {name} {how}"),
            State::Running => format!("MCP server {name} closed the connection"),
        }
    }

    /// Stops the server (its stdin closed, then its processes killed) and waits until it has.
    pub async fn stop(&self) {
        self.stop.cancel();
        self.settled(STOP_GRACE + Duration::from_secs(1)).await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The lifetime task kills the processes; without a runtime, dropping the process does.
        self.stop.cancel();
    }
}

type Connected = (
    RunningService<RoleClient, ClientConfig>,
    Option<CallProcess>,
    Vec<rmcp::model::Tool>,
);

/// pod as an MCP client.
fn client() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("pod", env!("CARGO_PKG_VERSION")),
    )
}

/// Spawns the server (or, for a `url` server, passes the gate and connects) and does the
/// handshake; on failure, why, and the process to finish.
async fn connect(
    config: &McpServerConfig,
    sandbox: &Sandbox,
    net: &Net,
    stderr_lines: Arc<Mutex<VecDeque<String>>>,
) -> Result<Connected, (String, Option<CallProcess>)> {
    let (command, args, env, cwd) = match &config.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => (command, args, env, cwd),
        McpTransport::Http { url, headers, .. } => {
            let transport = http::transport(url, headers, net)
                .await
                .map_err(|why| (why, None))?;
            let service = client()
                .serve(transport)
                .await
                .map_err(|e| (format!("the MCP handshake with {url} failed: {e}"), None))?;
            return match service.peer().list_all_tools().await {
                Ok(tools) => Ok((service, None, tools)),
                Err(e) => Err((format!("cannot list its tools: {e}"), None)),
            };
        }
    };
    let mut cmd = sandbox.command(command);
    // First: it replaces the environment with the session's; the server's own `env` goes on top.
    let limit = sandbox.prepare(&mut cmd);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut process =
        CallProcess::spawn(&mut cmd).map_err(|e| (format!("cannot start {command}: {e}"), None))?;
    // The server's cgroup lives as long as its process.
    process.hold(limit);
    let pipes = process
        .child()
        .map(|c| (c.stdin.take(), c.stdout.take(), c.stderr.take()));
    let Some((Some(stdin), Some(stdout), Some(stderr))) = pipes else {
        return Err(("cannot open its stdin and stdout".into(), Some(process)));
    };
    let copier = tokio::spawn(copy_stderr(config.name.clone(), stderr, stderr_lines));
    let service = match client().serve((stdout, stdin)).await {
        Ok(s) => s,
        Err(e) => {
            // The usual reason is that it exited; say so with its status when it did.
            let why = match tokio::time::timeout(EXIT_WAIT, process.wait()).await {
                Ok(Ok(status)) => format!("exited during start-up ({})", describe(status)),
                _ => format!("the MCP handshake failed: {e}"),
            };
            // Its last words, if it wrote any before exiting.
            let _ = tokio::time::timeout(EXIT_WAIT, copier).await;
            return Err((why, Some(process)));
        }
    };
    match service.peer().list_all_tools().await {
        Ok(tools) => Ok((service, Some(process), tools)),
        Err(e) => Err((format!("cannot list its tools: {e}"), Some(process))),
    }
}

/// Owns the process until it exits or the server is stopped, then ends it; for an HTTP server
/// (no process), holds the connection until it closes or the server is stopped.
async fn lifetime(
    name: String,
    process: Option<CallProcess>,
    mut service: RunningService<RoleClient, ClientConfig>,
    stop: CancellationToken,
    state: watch::Sender<State>,
    stderr: Arc<Mutex<VecDeque<String>>>,
) {
    let Some(mut process) = process else {
        let closed = async {
            // rmcp's service ends by itself when the transport gives up (the server went
            // away past the reconnects); it says so only when asked.
            while !service.is_closed() {
                tokio::time::sleep(CLOSED_POLL).await;
            }
        };
        let stopped = tokio::select! {
            () = closed => false,
            () = stop.cancelled() => true,
        };
        if stopped {
            let _ = service.close_with_timeout(STOP_GRACE).await;
            state.send_replace(State::Exited("was stopped by the pod".into()));
            tracing::info!("MCP server {name}: stopped");
        } else {
            let how = "closed the connection; its tools are unavailable for the rest of the \
                       session";
            tracing::warn!("MCP server {name} {how}");
            state.send_replace(State::Exited(how.into()));
        }
        return;
    };
    let exited = tokio::select! {
        status = process.wait() => Some(status),
        () = stop.cancelled() => None,
    };
    match exited {
        Some(status) => {
            let how = with_stderr(
                format!(
                    "exited ({}); its tools are unavailable for the rest of the session",
                    status.map_or_else(|e| e.to_string(), describe)
                ),
                &stderr,
            );
            tracing::warn!("MCP server {name} {how}");
            state.send_replace(State::Exited(how));
            let _ = service.close_with_timeout(STOP_GRACE).await;
        }
        None => {
            // Its stdin closes with the connection: a well-behaved server exits by itself.
            let _ = service.close_with_timeout(STOP_GRACE).await;
            let _ = tokio::time::timeout(STOP_GRACE, process.wait()).await;
            state.send_replace(State::Exited("was stopped by the pod".into()));
            tracing::info!("MCP server {name}: stopped");
        }
    }
    // Kills whatever is left of its processes and reaps them.
    process.finish().await;
}

/// Copies the server's stderr to the log, line by line, keeping the last lines.
async fn copy_stderr(
    name: String,
    stderr: impl AsyncRead + Unpin,
    kept: Arc<Mutex<VecDeque<String>>>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // A line is read in bounded pieces: a server printing without newlines never makes
        // this hold more than MAX_LINE bytes.
        let mut cut = false;
        loop {
            let buf = match reader.fill_buf().await {
                Ok(b) => b,
                Err(_) => return,
            };
            if buf.is_empty() {
                if line.is_empty() {
                    return;
                }
                break;
            }
            let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let room = MAX_LINE.saturating_sub(line.len());
            cut |= chunk.len() > room;
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let used = done.unwrap_or(buf.len());
            reader.consume(used);
            if done.is_some() {
                break;
            }
        }
        let mut text = String::from_utf8_lossy(&line).trim_end().to_string();
        if cut {
            text.push_str(" [line cut]");
        }
        tracing::info!(target: "pod::mcp", "{name}: {text}");
        let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() == KEPT_LINES {
            kept.pop_front();
        }
        kept.push_back(text);
    }
}

/// `why`, with the server's last stderr lines when it wrote any.
fn with_stderr(why: String, stderr: &Mutex<VecDeque<String>>) -> String {
    let kept = stderr.lock().unwrap_or_else(|e| e.into_inner());
    if kept.is_empty() {
        return why;
    }
    let lines: Vec<&str> = kept.iter().map(String::as_str).collect();
    format!("{why}; its last stderr lines: {}", lines.join(" | "))
}

/// An exit status in words.
fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => status.to_string(),
    }
}
