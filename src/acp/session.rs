//! One ACP session: a [`Pod`] of its own (its manifest, session log, sandbox and grants), its
//! mode, and the turn it runs.
//!
//! Owns: running a `session/prompt` turn and turning its events into `session/update`
//! notifications (through [`updates`]); the ask flow: each permission request of the pod becomes
//! a `session/request_permission` request to the client, whose answer goes back to the pod's
//! [`Approvals`]: the first answer wins, an option that was not offered, a malformed outcome
//! or an error response denies, and a request the pod settles itself (timeout, cancel, a session
//! grant) is withdrawn from the client with `$/cancel_request`; replaying history for
//! `session/load`; modes (the pod's [`Mode`]).
//!
//! Must not touch: decisions (the pod's check chain makes them) and the connection's lifecycle
//! (`agent`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use agent_client_protocol_schema::v1 as acp;
use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::editor::ClientFiles;
use super::peer::{Peer, PeerError};
use super::updates;
use super::AcpError;
use crate::manifest::{Manifest, McpServerConfig};
use crate::permission::Asked;
use crate::protocol::{
    CallResult, Event, InputItem, PermissionRequest, ReplyDecision, RunResult, StopReason,
};
use crate::runtime::{
    Approvals, Approver, EventSink, Mode, Pod, PodError, PodOptions, RunError, TURN_FAILED_TEXT,
};
use crate::server::dispatch::Detach;
use crate::tools::EditorFiles;

/// Events a turn may have produced and not yet sent before it waits (as in `pod serve`).
const EVENT_QUEUE: usize = 32;

/// How ACP names and describes each of pod's modes (docs/acp.md, "Modes").
/// The id of the mode config option.
pub const MODE_OPTION: &str = "mode";

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Default => "Default",
        Mode::ReadOnly => "Read-only",
        Mode::AcceptEdits => "Accept edits",
        Mode::Auto => "Auto",
        Mode::Unattended => "Unattended",
    }
}

fn mode_description(mode: Mode) -> &'static str {
    match mode {
        Mode::Default => "The project's rules (pod.toml) as written: allow, ask and deny.",
        Mode::ReadOnly => {
            "Only read, grep and glob run (and only where the rules let them); every command \
             and every write is denied, whatever the rules say."
        }
        Mode::AcceptEdits => {
            "file_write and edit inside the writable folders run without asking; deny rules \
             and pod's protected files still hold, and everything else asks as the rules say."
        }
        Mode::Auto => {
            "A call runs without asking when the kernel bounds everything it can do; deny rules \
             still deny, and what the kernel cannot bound still asks."
        }
        Mode::Unattended => "Every call the rules would ask about is denied at once.",
    }
}

/// What a turn sends to its session: pod's events, and "this call runs now". (Events are the
/// bulk of the traffic and move unboxed; the small variant costs nothing to pad.)
#[allow(clippy::large_enum_variant)]
enum Out {
    Event(Event),
    Started(String),
}

/// The turn's sink: a bounded channel, so a client that does not read holds the turn back.
struct Sink(mpsc::Sender<Out>);

#[async_trait]
impl EventSink for Sink {
    async fn emit(&self, event: Event) {
        let _ = self.0.send(Out::Event(event)).await;
    }

    fn try_emit(&self, event: Event) -> Result<(), Box<Event>> {
        match self.0.try_send(Out::Event(event)) {
            Err(mpsc::error::TrySendError::Full(Out::Event(event))) => Err(Box::new(event)),
            _ => Ok(()),
        }
    }

    async fn call_started(&self, _turn_id: &str, call_id: &str) {
        let _ = self.0.send(Out::Started(call_id.to_string())).await;
    }
}

pub struct Session {
    pub id: String,
    pub pod: Arc<Pod>,
    /// The editor's MCP servers (`mcpServers`), kept for reopening the session.
    pub mcp_servers: Vec<McpServerConfig>,
    approvals: Approvals,
    workspace: PathBuf,
    peer: Arc<Peer>,
    turn: Mutex<Option<CancellationToken>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Session {
    /// Opens a session's pod: new, or (`resume`) the logged session `resume`, whose grants are
    /// restored under the rules in force, as `pod serve --resume` does. `fs` is what the client
    /// serves of its files; `mcp_servers` are the editor's, started beside the configuration's.
    pub async fn open(
        manifest: Manifest,
        resume: Option<String>,
        mcp_servers: Vec<McpServerConfig>,
        peer: Arc<Peer>,
        fs: &acp::FileSystemCapabilities,
    ) -> Result<Arc<Session>, PodError> {
        let approvals = Approvals::new();
        let id_cell = Arc::new(OnceLock::new());
        let editor = ClientFiles::new(peer.clone(), id_cell.clone(), fs)
            .map(|files| Arc::new(files) as Arc<dyn EditorFiles>);
        let workspace = manifest.workspace.clone();
        let options = PodOptions {
            resume,
            // ACP's permission request is a baseline client method: every client approves.
            approver: Approver::Client(approvals.clone()),
            editor,
            mcp_servers: mcp_servers.clone(),
        };
        let pod = Pod::start(manifest, options).await?;
        let id = pod.session_id().to_string();
        let _ = id_cell.set(id.clone());
        Ok(Arc::new(Session {
            id,
            pod,
            mcp_servers,
            approvals,
            workspace,
            peer,
            turn: Mutex::new(None),
        }))
    }

    /// The modes this session can take, with the current one.
    pub fn modes(&self) -> acp::SessionModeState {
        acp::SessionModeState::new(
            self.pod.mode().as_str(),
            self.pod
                .modes()
                .into_iter()
                .map(|m| {
                    acp::SessionMode::new(m.as_str(), mode_name(m))
                        .description(mode_description(m).to_string())
                })
                .collect(),
        )
    }

    /// The session's config options: its mode, as a select (`session/set_config_option`
    /// with `configId: "mode"` sets it as `session/set_mode` does). The model is not one: a
    /// session's provider comes from the configuration, which a client cannot change.
    pub fn config_options(&self) -> Vec<acp::SessionConfigOption> {
        let choices: Vec<acp::SessionConfigSelectOption> = self
            .pod
            .modes()
            .into_iter()
            .map(|m| {
                acp::SessionConfigSelectOption::new(m.as_str(), mode_name(m))
                    .description(mode_description(m).to_string())
            })
            .collect();
        vec![acp::SessionConfigOption::select(
            MODE_OPTION,
            "Mode",
            self.pod.mode().as_str(),
            choices,
        )
        .category(acp::SessionConfigOptionCategory::Mode)
        .description("How pod's rules apply: which calls run unasked, which ask".to_string())]
    }

    pub fn set_mode(&self, mode: Mode) -> Result<(), AcpError> {
        self.pod
            .set_mode(mode)
            .map_err(|e| AcpError::invalid_params(format!("modeId: {e}")))
    }

    /// What pod adds to `session/new` and `session/load` under `_meta.pod`.
    pub fn info(&self) -> Value {
        json!({
            "configuration": self.pod.configuration_info(),
            "workspace": self.workspace,
            "permissions": self.pod.permissions_info(),
            "sandbox": self.pod.sandbox_info(),
            "tools": self.pod.tools().iter().map(|t| &t.name).collect::<Vec<_>>(),
            "resumed": self.pod.resumed(),
            "droppedGrants": self.pod.dropped_grants(),
            "workspaceTrust": self.pod.workspace_trust(),
            "environment": self.pod.environment(),
        })
    }

    /// True while a prompt runs.
    pub fn busy(&self) -> bool {
        lock(&self.turn).is_some()
    }

    /// Ends the session's pod before it is reopened (`trust/apply`): its MCP servers stop and
    /// its log is flushed.
    pub async fn retire(&self) {
        self.pod.stop_mcp().await;
        self.flush();
    }

    async fn update(&self, update: acp::SessionUpdate) {
        let notification = acp::SessionNotification::new(self.id.clone(), update);
        self.peer.notify("session/update", &notification).await;
    }

    /// Sends the session's history as `session/update`s (for `session/load`).
    pub async fn replay(&self) {
        for update in updates::replay(&self.pod.history(), &self.workspace) {
            self.update(update).await;
        }
    }

    /// Cancels the running turn (`session/cancel`); its pending permission requests resolve as
    /// cancelled.
    pub fn cancel(&self) {
        if let Some(token) = lock(&self.turn).as_ref() {
            token.cancel();
        }
    }

    /// The connection is closing: pending and later asks are denied by `by`, the turn is
    /// cancelled.
    pub fn close(&self, by: Asked) {
        self.approvals.close(by);
        self.cancel();
    }

    pub fn flush(&self) {
        if let Err(e) = self.pod.flush() {
            tracing::error!("session log: {e}");
        }
    }

    fn begin_turn(&self) -> Result<CancellationToken, AcpError> {
        let mut turn = lock(&self.turn);
        if turn.is_some() {
            return Err(AcpError::invalid_request(format!(
                "session {} is already running a prompt; send session/cancel first",
                self.id
            )));
        }
        let token = CancellationToken::new();
        *turn = Some(token.clone());
        Ok(token)
    }

    /// Runs one prompt turn, streaming its updates; answers once the last one is queued.
    pub async fn prompt(
        self: &Arc<Self>,
        input: Vec<InputItem>,
        detach: Detach,
    ) -> Result<acp::PromptResponse, AcpError> {
        let cancel = self.begin_turn()?;
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let pod = self.pod.clone();
        let task = tokio::spawn(async move {
            let sink = Sink(tx);
            pod.run(input, &sink, cancel).await
        });
        let open_calls = self.forward(rx, detach).await;
        *lock(&self.turn) = None;
        match task.await {
            Ok(Ok(result)) => {
                // A refused prompt: the editor shows the hook's reason as the agent's text.
                if result.stop_reason == StopReason::Refused {
                    if let Some(why) = &result.error {
                        self.update(updates::agent_text(why.clone())).await;
                    }
                }
                self.answer(result)
            }
            Ok(Err(e)) => Err(match e {
                RunError::TurnInProgress => AcpError::invalid_request(e.to_string()),
                RunError::UnknownSkill { .. } | RunError::EmptyInput => {
                    AcpError::invalid_params(format!("prompt: {e}"))
                }
            }),
            Err(e) => {
                // The turn panicked: every call it announced gets its one result, then the
                // prompt fails.
                tracing::error!("the turn failed: {e}");
                self.approvals.finish_all();
                for call_id in open_calls {
                    let result = CallResult {
                        turn_id: String::new(),
                        call_id,
                        is_error: true,
                        content: TURN_FAILED_TEXT.to_string(),
                        denied_by: None,
                    };
                    self.update(updates::result(&result, "", &Value::Null, &self.workspace))
                        .await;
                }
                Err(AcpError::internal(format!("the turn failed: {e}")))
            }
        }
    }

    fn answer(&self, result: RunResult) -> Result<acp::PromptResponse, AcpError> {
        let pod = json!({ "turnId": result.turn_id, "usage": result.usage });
        match updates::stop_reason(result.stop_reason) {
            Some(stop) => Ok(acp::PromptResponse::new(stop).meta(updates::meta(pod))),
            None => Err(AcpError::internal(format!(
                "the turn ended with an error: {}",
                result.error.unwrap_or_else(|| "unknown".into())
            ))
            .data(json!({ "pod": pod }))),
        }
    }

    /// Sends the turn's events as updates until the turn ends; returns the calls announced and
    /// never given a result (non-empty only when the turn died).
    async fn forward(
        self: &Arc<Self>,
        mut events: mpsc::Receiver<Out>,
        detach: Detach,
    ) -> Vec<String> {
        let mut calls: HashMap<String, (String, Value)> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        // Permission requests out at the client; dropping the sender withdraws one.
        let mut asks: HashMap<String, oneshot::Sender<()>> = HashMap::new();
        let mut detach = Some(detach);
        while let Some(out) = events.recv().await {
            if let Some(d) = detach.take() {
                d.detach();
            }
            let event = match out {
                Out::Started(call_id) => {
                    if !calls
                        .get(&call_id)
                        .is_some_and(|(t, _)| updates::is_plan(t))
                    {
                        self.update(updates::started(&call_id)).await;
                    }
                    continue;
                }
                Out::Event(event) => event,
            };
            match event {
                Event::TextDelta { text, .. } => self.update(updates::agent_text(text)).await,
                Event::ToolCall {
                    call_id,
                    tool,
                    input,
                    ..
                } => {
                    if !updates::is_plan(&tool) {
                        self.update(updates::tool_call(&call_id, &tool, &input, &self.workspace))
                            .await;
                    }
                    order.push(call_id.clone());
                    calls.insert(call_id, (tool, input));
                }
                Event::PermissionRequest(request) => {
                    if let Some(stop) = self.ask(&request) {
                        asks.insert(request.request_id.clone(), stop);
                    }
                }
                Event::PermissionResolved { request_id, .. } => {
                    // Settled by the client, or by the pod (timeout, cancel, a session grant):
                    // either way nobody waits for the client's answer any more.
                    asks.remove(&request_id);
                }
                Event::ToolResult(result) => {
                    let (tool, input) = calls
                        .remove(&result.call_id)
                        .unwrap_or_else(|| (String::new(), Value::Null));
                    if updates::is_plan(&tool) {
                        if let Some(plan) = updates::plan(&result, &input) {
                            self.update(plan).await;
                        }
                    } else {
                        self.update(updates::result(&result, &tool, &input, &self.workspace))
                            .await;
                    }
                }
                Event::TurnEnded { usage, .. } => {
                    let used = usage.input_tokens.saturating_add(usage.output_tokens);
                    if used > 0 {
                        // pod does not know the model's context window: `size` is 0.
                        let update = acp::UsageUpdate::new(used, 0).meta(updates::meta(json!({
                            "inputTokens": usage.input_tokens,
                            "outputTokens": usage.output_tokens,
                        })));
                        self.update(acp::SessionUpdate::UsageUpdate(update)).await;
                    }
                }
                Event::TurnStarted { .. } | Event::Status { .. } => {}
            }
        }
        if let Some(d) = detach.take() {
            d.detach();
        }
        order.retain(|id| calls.contains_key(id));
        order
    }

    /// Sends `session/request_permission` for `request`; the returned sender withdraws it when
    /// dropped. The answer goes to the pod's approvals.
    fn ask(&self, request: &PermissionRequest) -> Option<oneshot::Sender<()>> {
        let params = updates::permission_request(&self.id, request);
        let approvals = self.approvals.clone();
        let request_id = request.request_id.clone();
        let outgoing = match self.peer.request("session/request_permission", &params) {
            Ok(outgoing) => outgoing,
            Err(e) => {
                let _ = approvals.unusable(&request_id, e.to_string());
                return None;
            }
        };
        let offered = request.options.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            tokio::select! {
                answer = outgoing.answer::<acp::RequestPermissionResponse>() => {
                    settle(&approvals, &request_id, &offered, answer);
                }
                // The pod settled it first: dropping `outgoing` withdraws it from the client.
                _ = stopped => {}
            }
        });
        Some(stop)
    }
}

/// Gives the client's answer to the pod: a selected option that was offered is that decision;
/// `cancelled` is a refusal; anything else (an option not offered, a malformed result, an
/// error response, a lost connection) is an unusable answer, which denies.
fn settle(
    approvals: &Approvals,
    request_id: &str,
    offered: &[ReplyDecision],
    answer: Result<acp::RequestPermissionResponse, PeerError>,
) {
    let settled = match answer {
        Ok(response) => match response.outcome {
            acp::RequestPermissionOutcome::Selected(selected) => {
                let option = selected.option_id.0.as_ref();
                // An edited input rides in `_meta.pod.input` (of the outcome, or the response).
                let input = [selected.meta.as_ref(), response.meta.as_ref()]
                    .into_iter()
                    .flatten()
                    .find_map(|m| m.get("pod").and_then(|p| p.get("input")).cloned());
                match updates::decision(option, offered) {
                    Some(decision) => approvals.reply_with(request_id, decision, None, input),
                    None => approvals.unusable(
                        request_id,
                        format!("it selected option {option:?}, which was not offered"),
                    ),
                }
            }
            acp::RequestPermissionOutcome::Cancelled => approvals.reply(
                request_id,
                ReplyDecision::Deny,
                Some("the request was cancelled in the client".into()),
            ),
            _ => approvals.unusable(request_id, "an outcome pod does not know".into()),
        },
        Err(e) => approvals.unusable(request_id, e.to_string()),
    };
    if let Err(e) = settled {
        // Already settled by the pod (cancel, timeout, a grant): the first answer won.
        tracing::debug!("permission answer not used: {e}");
    }
}
