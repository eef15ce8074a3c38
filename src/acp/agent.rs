//! The ACP agent of one connection: the [`Service`] the dispatcher calls, with the methods of
//! ACP v1 that pod implements and the connection's sessions.
//!
//! Owns: the lifecycle (`initialize` first and once; the client's capabilities), reading each
//! method's params into the official schema's types (`ClientRequest::from_method_and_params`:
//! a missing or mistyped field is `-32602` naming it), and the methods: `initialize`,
//! `session/new` (a pod per session, configured for its `cwd`), `session/load` (history
//! replayed, grants restored under the rules in force), `session/resume` (the same without
//! the replay), `session/close`, `session/list`, `session/prompt`, `session/cancel`,
//! `session/set_mode` and `session/set_config_option` (the mode). Responses to the agent's own requests go to the
//! [`Peer`].
//!
//! Must not touch: the bytes (the transport) and what a turn does (`session`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol_schema::v1 as acp;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::peer::Peer;
use super::session::Session;
use super::updates;
use super::AcpError;
use crate::manifest::mcp::{check_header, check_url};
use crate::manifest::trust::Decision;
use crate::manifest::{Manifest, McpServerConfig, McpTransport, Trust, TrustStore, Vouch};
use crate::permission::mcp::check_server_name;
use crate::permission::Asked;
use crate::protocol::{InputItem, TrustDecision};
use crate::runtime::{Mode, PodError};
use crate::server::dispatch::{Detach, Reply, Service};
use crate::session::SessionError;

/// The methods pod answers, as the schema names them (and `trust/apply` of the ACP
/// workspace-trust proposal, which the schema does not have yet).
const METHODS: [&str; 11] = [
    "initialize",
    "session/new",
    "session/load",
    "session/resume",
    "session/close",
    "session/list",
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
    "session/cancel",
    "trust/apply",
];

/// `trust/apply`'s params (ACP workspace-trust proposal).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApplyTrust {
    cwd: PathBuf,
    decision: TrustDecision,
    #[serde(default)]
    session_id: Option<String>,
}

/// One connection's state.
pub struct Agent {
    peer: Arc<Peer>,
    /// `pod acp --state-dir`: where every session's log goes.
    state_dir: Option<PathBuf>,
    /// Set by `initialize`.
    client: Mutex<Option<acp::ClientCapabilities>>,
    /// The client's `clientInfo` (`name version`), for the decision log.
    client_name: Mutex<Option<String>>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Folders trusted for this process only (`trust_session`).
    session_trust: Mutex<Vec<PathBuf>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The dispatcher's view of the agent.
pub struct AgentService(pub Arc<Agent>);

impl Service for AgentService {
    fn call(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        detach: Detach,
    ) -> Option<BoxFuture<'static, Reply>> {
        if !METHODS.contains(&method) {
            return None;
        }
        let agent = self.0.clone();
        let method = method.to_string();
        Some(Box::pin(async move {
            let params: Value = match params {
                Some(raw) => serde_json::from_str(raw.get())
                    .map_err(|e| AcpError::invalid_params(e.to_string()))?,
                None => Value::Null,
            };
            Ok(agent.handle(&method, params, detach).await?)
        }))
    }

    fn response(&self, id: &RawValue, outcome: Reply) -> bool {
        self.0.peer.respond(id, outcome)
    }
}

fn raw<T: Serialize>(value: &T) -> Result<Box<RawValue>, AcpError> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| AcpError::internal(format!("cannot serialize the result: {e}")))
}

impl Agent {
    pub fn new(peer: Arc<Peer>, state_dir: Option<PathBuf>) -> Arc<Agent> {
        Arc::new(Agent {
            peer,
            state_dir,
            client: Mutex::new(None),
            client_name: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            session_trust: Mutex::new(Vec::new()),
        })
    }

    async fn handle(
        self: &Arc<Self>,
        method: &str,
        params: Value,
        detach: Detach,
    ) -> Result<Box<RawValue>, AcpError> {
        if method == "session/cancel" {
            let acp::ClientNotification::CancelNotification(cancel) =
                acp::ClientNotification::from_method_and_params(method, &params)
                    .map_err(|e| AcpError::invalid_params(e.to_string()))?
            else {
                return Err(AcpError::invalid_params("session/cancel".into()));
            };
            if let Ok(session) = self.session(&cancel.session_id) {
                session.cancel();
            }
            return raw(&Value::Null);
        }
        if method == "trust/apply" {
            if lock(&self.client).is_none() {
                return Err(AcpError::invalid_request(
                    "trust/apply before initialize: call initialize first".into(),
                ));
            }
            let params: ApplyTrust = serde_json::from_value(params)
                .map_err(|e| AcpError::invalid_params(format!("trust/apply: {e}")))?;
            return raw(&self.apply_trust(params).await?);
        }
        let request = acp::ClientRequest::from_method_and_params(method, &params)
            .map_err(|e| AcpError::invalid_params(e.to_string()))?;
        if !matches!(request, acp::ClientRequest::InitializeRequest(_))
            && lock(&self.client).is_none()
        {
            return Err(AcpError::invalid_request(format!(
                "{method} before initialize: call initialize first"
            )));
        }
        match request {
            acp::ClientRequest::InitializeRequest(r) => raw(&with_trust_capability(
                serde_json::to_value(self.initialize(r)?)
                    .map_err(|e| AcpError::internal(format!("cannot serialize the result: {e}")))?,
            )),
            acp::ClientRequest::NewSessionRequest(r) => raw(&self.new_session(r).await?),
            acp::ClientRequest::LoadSessionRequest(r) => raw(&self.load_session(r).await?),
            acp::ClientRequest::ResumeSessionRequest(r) => raw(&self.resume_session(r).await?),
            acp::ClientRequest::CloseSessionRequest(r) => raw(&self.close_session(r).await?),
            acp::ClientRequest::SetSessionConfigOptionRequest(r) => {
                raw(&self.set_config_option(r)?)
            }
            acp::ClientRequest::ListSessionsRequest(r) => raw(&self.list_sessions(r)?),
            acp::ClientRequest::PromptRequest(r) => raw(&self.prompt(r, detach).await?),
            acp::ClientRequest::SetSessionModeRequest(r) => raw(&self.set_mode(r)?),
            _ => Err(AcpError::method_not_found(method)),
        }
    }

    fn initialize(
        &self,
        request: acp::InitializeRequest,
    ) -> Result<acp::InitializeResponse, AcpError> {
        let mut client = lock(&self.client);
        if client.is_some() {
            return Err(AcpError::invalid_request(
                "initialize was already called on this connection".into(),
            ));
        }
        if let Some(info) = &request.client_info {
            tracing::info!(name = %info.name, version = %info.version, "client connected");
            *lock(&self.client_name) = Some(format!("{} {}", info.name, info.version));
        }
        *client = Some(request.client_capabilities);
        // pod speaks v1; a client asking for another version gets v1 and decides.
        let capabilities = acp::AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(acp::PromptCapabilities::new().embedded_context(true))
            // Streamable HTTP servers, under the session's network rules; not the old SSE one.
            .mcp_capabilities(acp::McpCapabilities::new().http(true))
            .session_capabilities(
                acp::SessionCapabilities::new()
                    .list(acp::SessionListCapabilities::new())
                    .resume(acp::SessionResumeCapabilities::new())
                    .close(acp::SessionCloseCapabilities::new()),
            );
        Ok(
            acp::InitializeResponse::new(agent_client_protocol_schema::ProtocolVersion::V1)
                .agent_capabilities(capabilities)
                .agent_info(
                    acp::Implementation::new("pod", env!("CARGO_PKG_VERSION"))
                        .title("pod".to_string()),
                ),
        )
    }

    fn session(&self, id: &acp::SessionId) -> Result<Arc<Session>, AcpError> {
        lock(&self.sessions)
            .get(id.0.as_ref())
            .cloned()
            .ok_or_else(|| AcpError::session_not_found(id.0.as_ref()))
    }

    /// The configuration for a session in `cwd` (absolute): its `pod.toml` layered over the
    /// user's configuration, or built-in defaults (docs/manifest.md), with `--state-dir` applied and the
    /// sandbox's `required` checked.
    fn manifest(&self, cwd: &Path) -> Result<Manifest, AcpError> {
        if !cwd.is_absolute() {
            return Err(AcpError::invalid_params(format!(
                "cwd: {} is not an absolute path",
                cwd.display()
            )));
        }
        let trusted_here = cwd
            .canonicalize()
            .is_ok_and(|real| lock(&self.session_trust).contains(&real));
        let vouch = if trusted_here {
            Vouch::Session
        } else {
            Vouch::Store
        };
        let mut manifest = Manifest::discover(cwd, vouch).map_err(|e| {
            AcpError::internal(format!(
                "cannot configure a session in {}: {e}",
                cwd.display()
            ))
        })?;
        if let Some(folder) = &self.state_dir {
            manifest.set_state_dir(folder);
        }
        crate::sandbox::check_required(&manifest.sandbox)
            .map_err(|e| AcpError::internal(format!("{}: {e}", manifest.path.display())))?;
        Ok(manifest)
    }

    fn fs(&self) -> acp::FileSystemCapabilities {
        lock(&self.client)
            .as_ref()
            .map(|c| c.fs.clone())
            .unwrap_or_default()
    }

    /// The MCP servers an editor offers in `session/new` or `session/load`, to start beside the
    /// configuration's (one named like a configured server replaces it, and keeps the
    /// configured server's `default_action`: the editor picks the program, never looser
    /// rules). pod starts stdio servers and streamable HTTP servers (their host under the
    /// session's `network` rules, with the headers the editor gives: the editor is the user's
    /// own client), as its `mcpCapabilities` say; an SSE server is refused, naming the entry.
    fn mcp_servers(
        servers: &[acp::McpServer],
        manifest: &Manifest,
    ) -> Result<Vec<McpServerConfig>, AcpError> {
        let cwd = &manifest.workspace;
        let mut out: Vec<McpServerConfig> = Vec::new();
        for (i, server) in servers.iter().enumerate() {
            let (name, mut config) = match server {
                acp::McpServer::Stdio(stdio) => {
                    let name = &stdio.name;
                    let Some(command) = stdio.command.to_str() else {
                        return Err(AcpError::invalid_params(format!(
                            "mcpServers[{i}].command: not valid UTF-8"
                        )));
                    };
                    let mut config = McpServerConfig::stdio(
                        name,
                        command,
                        stdio.args.clone(),
                        cwd.to_path_buf(),
                    );
                    if let McpTransport::Stdio { env, .. } = &mut config.transport {
                        env.extend(stdio.env.iter().map(|v| (v.name.clone(), v.value.clone())));
                    }
                    (name, config)
                }
                acp::McpServer::Http(http) => {
                    let name = &http.name;
                    check_url(&http.url).map_err(|why| {
                        AcpError::invalid_params(format!("mcpServers[{i}].url: {why}"))
                    })?;
                    let mut headers = Vec::new();
                    for (j, h) in http.headers.iter().enumerate() {
                        check_header(&h.name, &h.value).map_err(|why| {
                            AcpError::invalid_params(format!("mcpServers[{i}].headers[{j}]: {why}"))
                        })?;
                        headers.push((h.name.clone(), h.value.clone()));
                    }
                    let config = McpServerConfig::http(name, &http.url, headers, cwd.to_path_buf());
                    (name, config)
                }
                _ => {
                    return Err(AcpError::invalid_params(format!(
                        "mcpServers[{i}]: pod starts MCP servers over stdio and streamable HTTP \
                         only (its mcpCapabilities advertise http, not sse)"
                    )))
                }
            };
            check_server_name(name)
                .map_err(|why| AcpError::invalid_params(format!("mcpServers[{i}].name: {why}")))?;
            if out.iter().any(|s| s.name.eq_ignore_ascii_case(name)) {
                return Err(AcpError::invalid_params(format!(
                    "mcpServers[{i}].name: \"{name}\" is offered twice (names match in any case)"
                )));
            }
            if let Some(configured) = manifest
                .mcp
                .servers
                .iter()
                .find(|s| s.name.eq_ignore_ascii_case(name))
            {
                config.defaults = configured.defaults;
            }
            out.push(config);
        }
        Ok(out)
    }

    /// Tells a session's pod which client connected (the decision log names it).
    fn name_client(&self, session: &Session) {
        if let Some(name) = lock(&self.client_name).clone() {
            session.pod.set_client_name(name);
        }
    }

    async fn new_session(&self, request: acp::NewSessionRequest) -> Result<Value, AcpError> {
        let manifest = self.manifest(&request.cwd)?;
        let servers = Self::mcp_servers(&request.mcp_servers, &manifest)?;
        let session = Session::open(manifest, None, servers, self.peer.clone(), &self.fs())
            .await
            .map_err(|e| AcpError::internal(format!("cannot open the session: {e}")))?;
        self.name_client(&session);
        let response = acp::NewSessionResponse::new(session.id.clone())
            .modes(session.modes())
            .config_options(session.config_options())
            .meta(updates::meta(session.info()));
        let response = with_workspace_trust(response, &session, &request.cwd)?;
        lock(&self.sessions).insert(session.id.clone(), session);
        Ok(response)
    }

    async fn load_session(&self, request: acp::LoadSessionRequest) -> Result<Value, AcpError> {
        let session = self
            .reopen(&request.session_id, &request.cwd, &request.mcp_servers)
            .await?;
        session.replay().await;
        let response = acp::LoadSessionResponse::new()
            .modes(session.modes())
            .config_options(session.config_options())
            .meta(updates::meta(session.info()));
        self.opened(session, response, &request.cwd)
    }

    /// `session/resume`: `session/load` without the replay (the editor kept the conversation).
    async fn resume_session(&self, request: acp::ResumeSessionRequest) -> Result<Value, AcpError> {
        let session = self
            .reopen(&request.session_id, &request.cwd, &request.mcp_servers)
            .await?;
        let response = acp::ResumeSessionResponse::new()
            .modes(session.modes())
            .config_options(session.config_options())
            .meta(updates::meta(session.info()));
        self.opened(session, response, &request.cwd)
    }

    /// A loaded or resumed session joins the connection; its response gains `workspaceTrust`.
    fn opened<T: Serialize>(
        &self,
        session: Arc<Session>,
        response: T,
        cwd: &Path,
    ) -> Result<Value, AcpError> {
        let response = with_workspace_trust(response, &session, cwd)?;
        lock(&self.sessions).insert(session.id.clone(), session);
        Ok(response)
    }

    /// `session/close`: the session's asks are denied, its turn cancelled, its MCP servers
    /// stopped and its log flushed; it leaves the connection (`session/load` reopens it).
    async fn close_session(
        &self,
        request: acp::CloseSessionRequest,
    ) -> Result<acp::CloseSessionResponse, AcpError> {
        let id = request.session_id.0.to_string();
        let Some(session) = lock(&self.sessions).remove(&id) else {
            return Err(AcpError::session_not_found(&id));
        };
        session.close(Asked::Cancel);
        session.retire().await;
        Ok(acp::CloseSessionResponse::new())
    }

    /// `session/set_config_option`: `mode` is the one option (see `Session::config_options`).
    fn set_config_option(
        &self,
        request: acp::SetSessionConfigOptionRequest,
    ) -> Result<acp::SetSessionConfigOptionResponse, AcpError> {
        let session = self.session(&request.session_id)?;
        let config = request.config_id.0.as_ref();
        if config != super::session::MODE_OPTION {
            return Err(AcpError::invalid_params(format!(
                "configId: unknown config option {config:?} (options: {})",
                super::session::MODE_OPTION
            )));
        }
        let acp::SessionConfigOptionValue::ValueId { value } = &request.value else {
            return Err(AcpError::invalid_params(
                "value: the mode option takes a value id (one of its options), not a boolean"
                    .into(),
            ));
        };
        let id = value.0.as_ref();
        let mode = Mode::from_name(id).ok_or_else(|| {
            let modes: Vec<&str> = session.pod.modes().iter().map(|m| m.as_str()).collect();
            AcpError::invalid_params(format!(
                "value: unknown mode {id:?} (modes: {})",
                modes.join(", ")
            ))
        })?;
        session.set_mode(mode)?;
        Ok(acp::SetSessionConfigOptionResponse::new(
            session.config_options(),
        ))
    }

    /// Opens a logged session again for `session/load` or `session/resume`.
    async fn reopen(
        &self,
        session_id: &acp::SessionId,
        cwd: &Path,
        mcp_servers: &[acp::McpServer],
    ) -> Result<Arc<Session>, AcpError> {
        let id = session_id.0.to_string();
        if lock(&self.sessions).contains_key(&id) {
            return Err(AcpError::invalid_request(format!(
                "session {id} is already open on this connection"
            )));
        }
        let manifest = self.manifest(cwd)?;
        let servers = Self::mcp_servers(mcp_servers, &manifest)?;
        let session = Session::open(
            manifest,
            Some(id.clone()),
            servers,
            self.peer.clone(),
            &self.fs(),
        )
        .await
        .map_err(|e| match e {
            PodError::Session(SessionError::NotFound { .. } | SessionError::BadId(_)) => {
                AcpError::session_not_found(&id).message(e.to_string())
            }
            e => AcpError::internal(format!("cannot load session {id}: {e}")),
        })?;
        self.name_client(&session);
        Ok(session)
    }

    /// `trust/apply`: records the user's decision about `cwd`'s project (or, `trust_session`,
    /// keeps it for this process) and, given a session, reopens it with the configuration now
    /// in force. Refused for a decision not offered, a session of another folder or one running
    /// a prompt.
    async fn apply_trust(&self, request: ApplyTrust) -> Result<Value, AcpError> {
        let manifest = self.manifest(&request.cwd)?;
        let trust = manifest.trust.clone();
        let Some(folder) = trust.folder.clone() else {
            return Err(AcpError::invalid_params(format!(
                "cwd: nothing to trust in {}: it has no pod.toml",
                request.cwd.display()
            )));
        };
        let offered = crate::runtime::workspace_trust(&trust).available_decisions;
        if !offered.contains(&request.decision) {
            return Err(AcpError::invalid_params(format!(
                "decision: {:?} is not available for {} (available: {:?})",
                request.decision,
                folder.display(),
                offered
            )));
        }
        let session = match &request.session_id {
            Some(id) => {
                let session = self.session(&acp::SessionId::new(id.clone()))?;
                if session.pod.manifest().trust.folder.as_ref() != Some(&folder) {
                    return Err(AcpError::invalid_params(format!(
                        "sessionId: session {id} does not work in {}",
                        folder.display()
                    )));
                }
                if session.busy() {
                    return Err(AcpError::invalid_request(format!(
                        "session {id} is running a prompt; apply trust when it ends"
                    )));
                }
                Some(session)
            }
            None if request.decision == TrustDecision::TrustSession => {
                return Err(AcpError::invalid_params(
                    "sessionId: trust_session needs the session it applies to".into(),
                ))
            }
            None => None,
        };
        let record = |decision: Decision| {
            let print = trust.fingerprint.clone().unwrap_or_default();
            TrustStore::default_location()
                .and_then(|store| store.record(&folder, &print, decision))
                .map_err(|e| AcpError::internal(e.to_string()))
        };
        match request.decision {
            TrustDecision::TrustCwd => record(Decision::Trusted)?,
            TrustDecision::TrustSession => lock(&self.session_trust).push(folder.clone()),
            TrustDecision::Decline => record(Decision::Declined)?,
        }
        let now = self.manifest(&request.cwd)?;
        if let (Some(old), true) = (session, request.decision != TrustDecision::Decline) {
            let mode = old.pod.mode();
            old.retire().await;
            let mut manifest = now.clone();
            manifest.pod.state_dir = old.pod.manifest().pod.state_dir.clone();
            manifest.pod.state_root = old.pod.manifest().pod.state_root.clone();
            let reopened = Session::open(
                manifest,
                Some(old.id.clone()),
                old.mcp_servers.clone(),
                self.peer.clone(),
                &self.fs(),
            )
            .await
            .map_err(|e| AcpError::internal(format!("cannot reopen session {}: {e}", old.id)))?;
            self.name_client(&reopened);
            if let Err(e) = reopened.pod.set_mode(mode) {
                tracing::warn!("the reopened session keeps its configured mode: {e}");
            }
            tracing::info!(session = %old.id, "trust applied: the session reopened");
            lock(&self.sessions).insert(old.id.clone(), reopened);
        }
        Ok(json!({
            "workspaceTrust": rfd_trust(&now.trust, &request.cwd),
            "_meta": { "pod": { "workspaceTrust": crate::runtime::workspace_trust(&now.trust) } },
        }))
    }

    fn list_sessions(
        &self,
        request: acp::ListSessionsRequest,
    ) -> Result<acp::ListSessionsResponse, AcpError> {
        let cwd = match request.cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir().map_err(|e| {
                AcpError::internal(format!("no cwd given and no current folder: {e}"))
            })?,
        };
        let manifest = self.manifest(&cwd)?;
        let mut found = crate::session::list(&manifest.sessions_dir())
            .map_err(|e| AcpError::internal(e.to_string()))?;
        found.reverse();
        let sessions = found
            .into_iter()
            .map(|s| {
                let updated = s.modified.and_then(|m| {
                    time::OffsetDateTime::from(m)
                        .format(&time::format_description::well_known::Rfc3339)
                        .ok()
                });
                acp::SessionInfo::new(s.id, cwd.clone()).updated_at(updated)
            })
            .collect();
        Ok(acp::ListSessionsResponse::new(sessions))
    }

    async fn prompt(
        &self,
        request: acp::PromptRequest,
        detach: Detach,
    ) -> Result<acp::PromptResponse, AcpError> {
        let session = self.session(&request.session_id)?;
        let input = request
            .prompt
            .into_iter()
            .enumerate()
            .map(|(i, block)| input_item(i, block))
            .collect::<Result<Vec<_>, _>>()?;
        session.prompt(input, detach).await
    }

    fn set_mode(
        &self,
        request: acp::SetSessionModeRequest,
    ) -> Result<acp::SetSessionModeResponse, AcpError> {
        let session = self.session(&request.session_id)?;
        let id = request.mode_id.0.as_ref();
        let modes: Vec<&str> = session.pod.modes().iter().map(|m| m.as_str()).collect();
        let mode = Mode::from_name(id).ok_or_else(|| {
            AcpError::invalid_params(format!(
                "modeId: unknown mode {id:?} (modes: {})",
                modes.join(", ")
            ))
        })?;
        session.set_mode(mode)?;
        Ok(acp::SetSessionModeResponse::new())
    }

    /// The connection is gone (or shutting down): every session's pending asks are denied,
    /// turns cancelled, requests to the client failed.
    pub fn close(&self, by: Asked) {
        for session in lock(&self.sessions).values() {
            session.close(by);
        }
        self.peer.close();
    }

    /// Flushes every session's log (before exit).
    pub fn flush(&self) {
        for session in lock(&self.sessions).values() {
            session.flush();
        }
    }
}

/// `initialize`'s result with `agentCapabilities.sessionCapabilities.workspaceTrust: {}` (the
/// ACP workspace-trust proposal's capability, which the schema does not have yet).
fn with_trust_capability(mut result: Value) -> Value {
    if let Some(caps) = result
        .get_mut("agentCapabilities")
        .and_then(Value::as_object_mut)
    {
        let session = caps
            .entry("sessionCapabilities")
            .or_insert_with(|| json!({}));
        if let Some(session) = session.as_object_mut() {
            session.insert("workspaceTrust".into(), json!({}));
        }
    }
    result
}

/// A lifecycle response with the session's `workspaceTrust` in the proposal's shape.
fn with_workspace_trust<T: Serialize>(
    response: T,
    session: &Session,
    cwd: &Path,
) -> Result<Value, AcpError> {
    let mut value = serde_json::to_value(response)
        .map_err(|e| AcpError::internal(format!("cannot serialize the result: {e}")))?;
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "workspaceTrust".into(),
            rfd_trust(&session.pod.manifest().trust, cwd),
        );
    }
    Ok(value)
}

/// The ACP proposal's `WorkspaceTrustState`: the status and, when there is a decision to make,
/// the folder, the files whose settings are ignored, and the decisions `trust/apply` accepts.
fn rfd_trust(trust: &Trust, cwd: &Path) -> Value {
    let wire = crate::runtime::workspace_trust(trust);
    let mut state = json!({ "status": wire.status });
    if !wire.available_decisions.is_empty() {
        let mut paths: Vec<String> = trust
            .ignored
            .iter()
            .map(|i| i.file.display().to_string())
            .collect();
        paths.sort();
        paths.dedup();
        state["details"] = json!({
            "cwd": cwd,
            "ignoredPaths": paths,
            "availableDecisions": wire.available_decisions,
        });
    }
    state
}

/// A prompt block as pod's input: text as is; an embedded text resource as text naming its
/// URI; a resource link as a line naming it. Images, audio and binary resources are not
/// advertised, so they are refused.
fn input_item(index: usize, block: acp::ContentBlock) -> Result<InputItem, AcpError> {
    let text = match block {
        acp::ContentBlock::Text(t) => t.text,
        acp::ContentBlock::ResourceLink(link) => {
            format!("[resource: {} <{}>]", link.name, link.uri)
        }
        acp::ContentBlock::Resource(resource) => match resource.resource {
            acp::EmbeddedResourceResource::TextResourceContents(r) => {
                format!("[resource {}]\n{}\n[end of {}]", r.uri, r.text, r.uri)
            }
            _ => {
                return Err(AcpError::invalid_params(format!(
                    "prompt[{index}]: binary resources are not supported (embeddedContext covers text resources)"
                )))
            }
        },
        acp::ContentBlock::Image(_) => {
            return Err(AcpError::invalid_params(format!(
                "prompt[{index}]: images are not supported (promptCapabilities.image is false)"
            )))
        }
        acp::ContentBlock::Audio(_) => {
            return Err(AcpError::invalid_params(format!(
                "prompt[{index}]: audio is not supported (promptCapabilities.audio is false)"
            )))
        }
        _ => {
            return Err(AcpError::invalid_params(format!(
                "prompt[{index}]: a content type pod does not know"
            )))
        }
    };
    Ok(InputItem::Text { text })
}
