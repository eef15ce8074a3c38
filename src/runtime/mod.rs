//! The runtime: [`Pod`], one session of an agent, usable as a library before any server exists.
//!
//! Owns: the session state (history, the model's view of the conversation, session grants, the
//! client's mode), the turn loop (`turn`), the check chain every tool call passes
//! (`checks`), who answers asks ([`approval`]), and when the `session_start`, `user_prompt`
//! and `permission_denied` hooks run and what their answers do to the session (the system
//! prompt, the turn, history).
//!
//! Must not touch: the wire. Events leave through an [`EventSink`]; the server decides how they
//! are written. Decisions come from `permission`, never from here.
//!
//! Bounds: at most `[tools] max_parallel` calls run at once (their hooks and tool run each hold
//! a slot; shell analyses run one at a time anyway); an [`EventSink`] may make the turn wait,
//! and the model stream waits with it (`deltas`).

pub mod approval;
mod calls;
mod checks;
mod context;
mod deltas;
mod execs;
mod pin;
mod turn;
mod wire;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use tokio::sync::mpsc;

pub use crate::protocol::Mode;
pub use approval::{Answer, Approvals, Approver, ReplyError};
pub use turn::TURN_FAILED_TEXT;

use crate::hooks::UserHook;
use crate::manifest::{HookEvent, Trust};
use crate::manifest::{Manifest, McpServerConfig};
use crate::mcp::McpServers;
use crate::model::{self, Message, Model, ModelError};
use crate::network::{Net, Proxy};
use crate::permission::{DroppedGrant, FileRules, Policy, SessionGrants};
use crate::protocol::{
    AskMode, ConfigurationInfo, EnvironmentInfo, Event, IgnoredSetting, Item, McpServerInfo,
    PermissionsInfo, SandboxInfo, ToolInfo, TrustDecision, TrustStatus, WorkspaceTrust,
};
use crate::sandbox::{Sandbox, SandboxError};
use crate::scope::Scope;
use crate::session::{SessionError, SessionLog};
use crate::skills::{SkillError, Skills};
use crate::tools::{EditorFiles, Toolbox};

/// Where a pod sends its events, in order. A closed receiver is fine: events are then dropped.
#[async_trait]
pub trait EventSink: Send + Sync {
    /// Sends one event; may wait while the receiver is behind (the turn waits with it).
    async fn emit(&self, event: Event);

    /// Sends one event only if that needs no wait; gives it back otherwise.
    fn try_emit(&self, event: Event) -> Result<(), Box<Event>>;

    /// The call passed every check and its tool starts now. Not an event of protocol v1 (whose
    /// clients learn it from the absence of a request); a front-end that shows progress, as ACP
    /// does with `in_progress`, listens here.
    async fn call_started(&self, turn_id: &str, call_id: &str) {
        let _ = (turn_id, call_id);
    }
}

/// Never waits: events queue without limit (library use, tests).
#[async_trait]
impl EventSink for mpsc::UnboundedSender<Event> {
    async fn emit(&self, event: Event) {
        let _ = self.send(event);
    }

    fn try_emit(&self, event: Event) -> Result<(), Box<Event>> {
        let _ = self.send(event);
        Ok(())
    }
}

/// Waits while the channel is full: the server's sink, so a client that does not read holds
/// the turn back.
#[async_trait]
impl EventSink for mpsc::Sender<Event> {
    async fn emit(&self, event: Event) {
        let _ = self.send(event).await;
    }

    fn try_emit(&self, event: Event) -> Result<(), Box<Event>> {
        match self.try_send(event) {
            Err(mpsc::error::TrySendError::Full(event)) => Err(Box::new(event)),
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
        }
    }
}

#[derive(Default)]
pub struct PodOptions {
    /// Resume this session id instead of starting a new one.
    pub resume: Option<String>,
    pub approver: Approver,
    /// MCP servers to start besides the manifest's (a front-end's, such as ACP's `mcpServers`);
    /// one named like a manifest's server replaces it. Only [`Pod::start`] starts servers.
    pub mcp_servers: Vec<McpServerConfig>,
    /// The client's editor buffers, when it serves them (ACP `fs/*`): `read`, `file_write` and
    /// `edit` go through it once the checks pass.
    pub editor: Option<Arc<dyn EditorFiles>>,
}

/// Why a mode cannot be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mode {mode}: {why}", mode = mode.as_str())]
pub struct ModeError {
    pub mode: Mode,
    pub why: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PodError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Skill(#[from] SkillError),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("[permissions] {0}")]
    Mode(#[from] ModeError),
    #[error("[audit] {0} (pod does not run without the decision log it is configured to keep)")]
    Audit(#[from] crate::session::audit::AuditError),
    #[error("network = \"proxy\": the proxy cannot serve the calls' network namespace: {0}")]
    Proxy(std::io::Error),
}

/// Why `run` refused to start a turn.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("a turn is already running")]
    TurnInProgress,
    #[error("unknown skill \"{name}\" (known skills: {})", if known.is_empty() { "none".to_string() } else { known.join(", ") })]
    UnknownSkill { name: String, known: Vec<String> },
    #[error("run needs at least one input item")]
    EmptyInput,
}

/// The wire's view of a configuration's trust: the decisions a client may apply are offered
/// only when the project is untrusted and something of it is ignored.
pub fn workspace_trust(trust: &Trust) -> WorkspaceTrust {
    let decide = trust.status == TrustStatus::Untrusted && !trust.ignored.is_empty();
    WorkspaceTrust {
        status: trust.status,
        folder: trust.folder.as_ref().map(|f| f.display().to_string()),
        ignored: trust
            .ignored
            .iter()
            .map(|i| IgnoredSetting {
                what: i.what.clone(),
                place: i.place.clone(),
            })
            .collect(),
        changed: trust.changed.clone(),
        declined: trust.declined,
        available_decisions: if decide {
            vec![
                TrustDecision::TrustCwd,
                TrustDecision::TrustSession,
                TrustDecision::Decline,
            ]
        } else {
            Vec::new()
        },
    }
}

/// Session state shared by the turn and the methods served while it runs.
struct State {
    log: SessionLog,
    items: Vec<Item>,
    messages: Vec<Message>,
    grants: SessionGrants,
    turn_running: bool,
    /// Every call id the session has used: a new call never reuses one.
    call_ids: HashSet<String>,
}

pub struct Pod {
    manifest: Manifest,
    /// Shared with the blocking thread that parses shell commands.
    policy: Arc<Policy>,
    /// The rules' view of files the tools meet (walks, hard links).
    files: Arc<FileRules>,
    scope: Scope,
    toolbox: Toolbox,
    tool_infos: Vec<ToolInfo>,
    model: Box<dyn Model>,
    skills: Skills,
    hooks: Vec<UserHook>,
    /// `post_tool_call` hooks, in order: each sees the result the one before left.
    post_hooks: Vec<UserHook>,
    /// `session_start` hooks, run once by [`Pod::start`].
    start_hooks: Vec<UserHook>,
    /// `user_prompt` hooks, in order, before each turn's prompt goes to the model.
    prompt_hooks: Vec<UserHook>,
    /// `permission_denied` hooks, told about each denied call (detached from the turn).
    denied_hooks: Vec<UserHook>,
    /// Bounds how many denials' `permission_denied` hooks run at once (`[tools] max_parallel`).
    denied_slots: Arc<tokio::sync::Semaphore>,
    /// The system prompt every request carries: the manifest's, then the context the
    /// `session_start` hooks added.
    system: Option<String>,
    /// Bounds every process the tools, hooks and MCP servers start; its `$TMPDIR` goes when the
    /// pod drops.
    sandbox: Arc<Sandbox>,
    /// The `network` rules applied to hosts (web_fetch, the proxy).
    net: Arc<Net>,
    /// The session's proxy, under `[sandbox] network = "proxy"`.
    proxy: Option<Arc<Proxy>>,
    /// The programs deny and ask rules name, known by content to the exec gate.
    exec_ids: Arc<crate::sandbox::gate::Identities>,
    /// The session's MCP servers, whose tools are in `toolbox`.
    mcp: McpServers,
    approver: Approver,
    /// What an ask offers and how long it waits, from the manifest.
    ask: approval::AskPolicy,
    editor: Option<Arc<dyn EditorFiles>>,
    /// The session's mode, set by the manifest and the client while the session runs; read at
    /// each call's checks.
    mode: Mutex<Mode>,
    resumed: bool,
    /// Session grants of the resumed log that the rules in force no longer allow.
    dropped_grants: usize,
    session_id: String,
    state: Mutex<State>,
    /// Held while a non-concurrent tool runs; taken after a slot, never before.
    exclusive: tokio::sync::Mutex<()>,
    /// `[tools] max_parallel` slots: one per hook run or tool run under way.
    slots: tokio::sync::Semaphore,
    /// `[audit]`: the decision log every decision of the session is appended to.
    audit: Option<crate::session::audit::AuditLog>,
    /// The client that connected (`name version` of its `initialize`), for the decision log.
    client: Mutex<Option<String>>,
}

impl Pod {
    /// Builds a pod from a manifest: tools, model, skills, hooks, and a new or resumed session.
    /// It starts no MCP server and runs no `session_start` hook: [`Pod::start`] does.
    pub fn open(manifest: Manifest, options: PodOptions) -> Result<Arc<Pod>, PodError> {
        if !manifest.mcp.servers.is_empty() || !options.mcp_servers.is_empty() {
            tracing::warn!(
                "Pod::open starts no MCP servers (Pod::start does): their tools are not offered"
            );
        }
        if manifest
            .hooks
            .iter()
            .any(|h| h.event == HookEvent::SessionStart)
        {
            tracing::warn!(
                "Pod::open runs no session_start hooks (Pod::start does): their context is not added"
            );
        }
        Ok(Arc::new(Pod::build(manifest, options, Vec::new())?))
    }

    /// [`Pod::open`], with the MCP servers of the manifest and of `options.mcp_servers` started
    /// in the session's sandbox, in parallel, each under its start-up timeout. A server that
    /// fails does not fail the pod: it is reported in [`Pod::mcp_servers`] and the log, and
    /// calls of its tools get an error result.
    pub async fn start(manifest: Manifest, mut options: PodOptions) -> Result<Arc<Pod>, PodError> {
        let mut extra = std::mem::take(&mut options.mcp_servers);
        // A client's servers pass the managed layer's locks as the configuration's did.
        extra.retain(|server| match manifest.managed.locks.refuses(server) {
            Some(why) => {
                tracing::warn!("MCP server \"{}\" refused: {why}", server.name);
                false
            }
            None => true,
        });
        let mut configs: Vec<McpServerConfig> = manifest
            .mcp
            .servers
            .iter()
            .filter(|c| !extra.iter().any(|e| e.name.eq_ignore_ascii_case(&c.name)))
            .cloned()
            .collect();
        configs.extend(extra.iter().cloned());
        let mut pod = Pod::build(manifest, options, extra)?;
        let servers = crate::mcp::start(&configs, &pod.sandbox, &pod.net).await;
        pod.toolbox = std::mem::take(&mut pod.toolbox).with(servers.tools());
        pod.tool_infos = pod.toolbox.info();
        pod.mcp = servers;
        pod.session_started().await;
        Ok(Arc::new(pod))
    }

    /// Runs the `session_start` hooks in manifest order (`source`: `new`, or `resume` for a
    /// resumed session) and adds the context they give to the system prompt. A hook that fails
    /// adds nothing: the session starts without it, the failure is logged on stderr and
    /// recorded in history (`hookFailed`), and the hooks after it still run. The session is not
    /// refused: such a hook can only add what the model is told, so without it the model knows
    /// less, never may more (docs/hooks.md).
    async fn session_started(&mut self) {
        if self.start_hooks.is_empty() {
            return;
        }
        let source = if self.resumed { "resume" } else { "new" };
        let mut added = Vec::new();
        for hook in &self.start_hooks {
            let said = hook
                .session_start(&self.session_id, source, &self.manifest.workspace)
                .await;
            match said {
                Ok(None) => {}
                Ok(Some(text)) => {
                    self.record(Item::HookContext {
                        turn_id: None,
                        event: HookEvent::SessionStart.key().into(),
                        hook: hook.label(),
                        text: text.clone(),
                    });
                    added.push(text);
                }
                Err(error) => {
                    tracing::warn!(session = %self.session_id, "{error}");
                    self.record(Item::HookFailed {
                        event: HookEvent::SessionStart.key().into(),
                        error,
                    });
                }
            }
        }
        if !added.is_empty() {
            let mut system = self.system.take().unwrap_or_default();
            for text in added {
                if !system.is_empty() {
                    system.push_str("\n\n");
                }
                system.push_str(&text);
            }
            self.system = Some(system);
        }
    }

    /// The pod without its MCP servers; `extra` are the servers a front-end adds (for the
    /// permission layer, which must know them before the session's grants are restored).
    fn build(
        manifest: Manifest,
        options: PodOptions,
        extra: Vec<McpServerConfig>,
    ) -> Result<Pod, PodError> {
        let model = model::from_config(&manifest.model)?;
        let skills = Skills::load(&manifest.skill_dirs)?;
        let toolbox = Toolbox::builtin(&manifest.tools.enabled);
        let sessions = manifest.sessions_dir();
        let (log, items, resumed) = match &options.resume {
            Some(id) => {
                let resumed = SessionLog::resume(&sessions, id, &manifest.workspace)?;
                for warning in &resumed.warnings {
                    tracing::warn!("{warning}");
                }
                (resumed.log, resumed.items, true)
            }
            None => (SessionLog::create(&sessions)?, Vec::new(), false),
        };
        let policy = Arc::new(
            manifest
                .policy()
                .with_mcp(extra.iter().map(McpServerConfig::rules)),
        );
        // The log is a file: every grant in it is checked against the rules in force now. A
        // grant given in another workspace (a shared state folder, or `pod acp`'s
        // `session/load` with another `cwd`) is not this project's: a command or a relative
        // path means something else here.
        let mut elsewhere = Vec::new();
        let (grants, mut dropped) = SessionGrants::restore(
            &policy,
            items.iter().flat_map(|item| match item {
                Item::SessionGrant {
                    workspace: Some(given),
                    tool,
                    subjects,
                    ..
                } if *given != manifest.workspace => {
                    elsewhere.extend(subjects.iter().map(|s| DroppedGrant {
                        tool: tool.clone(),
                        subject: s.clone(),
                        reason: format!(
                            "it was given in the workspace {}, not in {}",
                            given.display(),
                            manifest.workspace.display()
                        ),
                    }));
                    Vec::new()
                }
                Item::SessionGrant { tool, subjects, .. } => subjects
                    .iter()
                    .map(|s| (tool.as_str(), s.as_str()))
                    .collect::<Vec<_>>(),
                _ => Vec::new(),
            }),
        );
        dropped.extend(elsewhere);
        let mut grants = grants;
        dropped.extend(
            grants.restore_prefixes(items.iter().flat_map(|item| match item {
                Item::SessionGrant {
                    prefixes,
                    workspace,
                    ..
                } if workspace.as_ref().is_none_or(|w| *w == manifest.workspace) => {
                    prefixes.iter().map(String::as_str).collect::<Vec<_>>()
                }
                _ => Vec::new(),
            })),
        );
        for d in &dropped {
            tracing::warn!(
                "resume: session grant for {} `{}` not restored: {}",
                d.tool,
                d.subject,
                d.reason
            );
        }
        let call_ids: HashSet<String> = items
            .iter()
            .filter_map(|item| match item {
                Item::ToolCall { call_id, .. } => Some(call_id.clone()),
                _ => None,
            })
            .collect();
        let messages = calls::messages_from_items(&items);
        let protected: Vec<std::path::PathBuf> = manifest
            .protected_paths()
            .into_iter()
            .map(|p| p.path)
            .collect();
        let net = Arc::new(Net::new(policy.clone()));
        // No proxy (it could not start): the sandbox then allows no TCP port at all.
        let proxy = (manifest.sandbox.network == crate::protocol::NetworkAccess::Proxy)
            .then(|| match Proxy::start(net.clone()) {
                Ok(proxy) => Some(Arc::new(proxy)),
                Err(e) => {
                    tracing::warn!("network = \"proxy\": the proxy cannot start ({e}), so calls reach no network");
                    None
                }
            })
            .flatten();
        let sandbox = Arc::new(Sandbox::open_guarded(
            &manifest.sandbox,
            &manifest.workspace,
            &manifest.scope.writable,
            log.id(),
            crate::sandbox::Guard {
                protected: &protected,
                state_root: Some(&manifest.pod.state_root),
                state_dir: Some(&manifest.pod.state_dir),
                policy: Some(&policy),
            },
            proxy.as_ref().map(|p| p.port()),
        )?);
        if let (Some(proxy), Some(listener)) = (&proxy, sandbox.proxy_listener()) {
            proxy.serve_inside(listener).map_err(PodError::Proxy)?;
        }
        let exec_ids = Arc::new(if sandbox.gate_on() {
            let programs = policy.exec_programs("bash");
            crate::sandbox::gate::Identities::new(programs.iter().map(String::as_str))
        } else {
            crate::sandbox::gate::Identities::default()
        });
        // What a hook starts is held to the deny and ask rules of `bash` (the hook's own
        // command is the user's configuration and is not judged).
        let hook_judge = Arc::new(execs::CallJudge::for_hook(
            policy.clone(),
            "bash",
            exec_ids.clone(),
        ));
        let hooks_of = |event: HookEvent| -> Vec<UserHook> {
            manifest
                .hooks
                .iter()
                .filter(|h| h.event == event)
                .cloned()
                .map(|h| {
                    UserHook::new(h)
                        .with_sandbox(sandbox.clone())
                        .with_gate(hook_judge.clone())
                })
                .collect()
        };
        let hooks = hooks_of(HookEvent::PreToolCall);
        let post_hooks = hooks_of(HookEvent::PostToolCall);
        let start_hooks = hooks_of(HookEvent::SessionStart);
        let prompt_hooks = hooks_of(HookEvent::UserPrompt);
        let denied_hooks = hooks_of(HookEvent::PermissionDenied);
        let audit = match &manifest.audit {
            Some(config) => {
                let log =
                    crate::session::audit::AuditLog::new(config.path.clone(), config.max_bytes);
                log.check()?;
                Some(log)
            }
            None => None,
        };
        if manifest.permission_settings.mode == Mode::Auto {
            if let Some(missing) = sandbox.unbounded() {
                return Err(ModeError {
                    mode: Mode::Auto,
                    why: format!("calls cannot run unasked here, since {missing}"),
                }
                .into());
            }
        }
        Ok(Pod {
            ask: approval::AskPolicy::of(&manifest),
            exec_ids,
            files: Arc::new(FileRules::new(policy.clone())),
            policy,
            scope: {
                let scope = Scope::new(&manifest.workspace, &manifest.scope.writable);
                match (&manifest.sandbox.readable, std::env::var_os("HOME")) {
                    (Some(readable), Some(home)) if !home.is_empty() => {
                        scope.hiding(std::path::Path::new(&home), readable)
                    }
                    _ => scope,
                }
            },
            tool_infos: toolbox.info(),
            toolbox,
            model,
            skills,
            hooks,
            post_hooks,
            start_hooks,
            prompt_hooks,
            denied_hooks,
            system: manifest.model.system.clone(),
            denied_slots: Arc::new(tokio::sync::Semaphore::new(manifest.tools.max_parallel)),
            sandbox,
            net,
            proxy,
            mcp: McpServers::none(),
            approver: options.approver,
            editor: options.editor,
            mode: Mutex::new(manifest.permission_settings.mode),
            resumed,
            dropped_grants: dropped.len(),
            session_id: log.id().to_string(),
            state: Mutex::new(State {
                log,
                items,
                messages,
                grants,
                turn_running: false,
                call_ids,
            }),
            exclusive: tokio::sync::Mutex::new(()),
            slots: tokio::sync::Semaphore::new(manifest.tools.max_parallel),
            audit,
            client: Mutex::new(None),
            manifest,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Poisoning only means a panic elsewhere; the state itself stays consistent per item.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// How many session grants of the resumed log were not restored (logged on stderr).
    pub fn dropped_grants(&self) -> usize {
        self.dropped_grants
    }

    pub fn tools(&self) -> &[ToolInfo] {
        &self.tool_infos
    }

    /// The session's MCP servers and their states, for `initialize`.
    pub fn mcp_servers(&self) -> Vec<McpServerInfo> {
        self.mcp.info()
    }

    /// Stops the MCP servers (at shutdown): calls of their tools get an error result from then
    /// on.
    pub async fn stop_mcp(&self) {
        self.mcp.stop().await;
    }

    /// What the sandbox holds for this session.
    pub fn sandbox_info(&self) -> SandboxInfo {
        self.sandbox.info()
    }

    pub fn configuration_info(&self) -> ConfigurationInfo {
        let manifest = &self.manifest;
        ConfigurationInfo {
            files: manifest
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect(),
            built_in_defaults: manifest.is_defaults(),
            provider: manifest.model.provider.as_str().to_string(),
            model: manifest.model.model.clone(),
            managed: manifest
                .managed
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect(),
            managed_overrides: manifest
                .managed
                .overrides
                .iter()
                .map(|o| crate::protocol::IgnoredSetting {
                    what: o.what.clone(),
                    place: o.place.clone(),
                })
                .collect(),
        }
    }

    pub fn permissions_info(&self) -> PermissionsInfo {
        let rules = self.policy.rules();
        PermissionsInfo {
            enabled: rules.is_some(),
            default_action: rules.map(|r| r.default_action()),
            rules: rules.map(|r| r.len()).unwrap_or(0),
            ask_mode: match self.approver {
                Approver::Client(_) => AskMode::Client,
                Approver::FailClosed => AskMode::FailClosed,
            },
            warning: self.manifest.permissions_off(),
            mode: self.mode(),
            modes: self.modes(),
        }
    }

    /// Whether the project's configuration is trusted, and what of it is ignored.
    pub fn workspace_trust(&self) -> WorkspaceTrust {
        workspace_trust(&self.manifest.trust)
    }

    /// What of the pod's environment the tools' processes get (names only).
    pub fn environment(&self) -> EnvironmentInfo {
        self.sandbox.environment()
    }

    /// The session's items in order.
    pub fn history(&self) -> Vec<Item> {
        self.state().items.clone()
    }

    /// The mode in force (read when a call's checks start and again before it runs).
    pub fn mode(&self) -> Mode {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The modes this pod can be set to: every mode but `auto`, which needs the kernel to bound
    /// every call, where it cannot.
    pub fn modes(&self) -> Vec<Mode> {
        Mode::ALL
            .into_iter()
            .filter(|m| *m != Mode::Auto || self.auto_refused().is_none())
            .filter(|m| self.manifest.managed.locks.allows_mode(*m))
            .collect()
    }

    /// Why `auto` cannot be set here, when it cannot: what of the kernel's bounds is missing.
    fn auto_refused(&self) -> Option<String> {
        self.sandbox
            .unbounded()
            .map(|missing| format!("calls cannot run unasked here, since {missing}"))
    }

    /// Sets the mode for later calls (a call already past its checks is not affected); records
    /// the change in history. `auto` is refused, with the reason, where the kernel cannot bound
    /// every call.
    pub fn set_mode(&self, mode: Mode) -> Result<(), ModeError> {
        if !self.manifest.managed.locks.allows_mode(mode) {
            let place = self
                .manifest
                .managed
                .files
                .first()
                .map(|f| f.display().to_string())
                .unwrap_or_default();
            return Err(ModeError {
                mode,
                why: format!(
                    "the managed configuration ({place}) does not allow it (allowed_modes)"
                ),
            });
        }
        if mode == Mode::Auto {
            if let Some(why) = self.auto_refused() {
                return Err(ModeError { mode, why });
            }
        }
        let changed = {
            let mut current = self.mode.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *current, mode) != mode
        };
        if changed {
            tracing::info!(session = %self.session_id, mode = mode.as_str(), "mode set");
            self.record(Item::ModeChanged { mode });
        }
        Ok(())
    }

    pub fn turn_running(&self) -> bool {
        self.state().turn_running
    }

    /// Flushes and fsyncs the session log (before exit).
    pub fn flush(&self) -> Result<(), SessionError> {
        self.state().log.sync()
    }

    /// Appends an item to history and the log. A log write failure is reported, not fatal: the
    /// turn goes on and the item stays in memory.
    fn record(&self, item: Item) {
        let mut state = self.state();
        if let Err(e) = state.log.append(&item) {
            tracing::error!("session log: {e}");
        }
        if let Some(audit) = &self.audit {
            if let Some(entry) = self.audit_entry(&item, &state.items) {
                if let Err(e) = audit.append(entry) {
                    tracing::error!("{e}");
                }
            }
        }
        state.items.push(item);
    }

    /// Records the client that connected, named in the decision log when it answers an ask.
    pub fn set_client(&self, name: &str, version: &str) {
        self.set_client_name(format!("{name} {version}"));
    }

    /// [`Pod::set_client`] with the name as [`Pod::client`] gives it (a reopened pod keeps it).
    pub fn set_client_name(&self, name: String) {
        *self.client.lock().unwrap_or_else(|e| e.into_inner()) = Some(name);
    }

    /// The client that connected, `name version`, when it said.
    pub fn client(&self) -> Option<String> {
        self.client
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The decision-log line of a history item: a permission decision, a connection the
    /// network proxy decided, or a denial of a later check (hook, skill, scope).
    fn audit_entry(
        &self,
        item: &Item,
        before: &[Item],
    ) -> Option<crate::session::audit::AuditEntry> {
        use crate::protocol::{DecidedBy, DeniedBy};
        use crate::session::audit::{subjects, AuditEntry};
        let tool_of = |call: &str| {
            before.iter().rev().find_map(|i| match i {
                Item::ToolCall { call_id, tool, .. } if call_id == call => Some(tool.clone()),
                _ => None,
            })
        };
        let time = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let by_name = |by: DecidedBy| {
            serde_json::to_value(by)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        };
        match item {
            Item::PermissionDecision {
                turn_id,
                call_id,
                decision,
                by,
                request_id,
                subjects: list,
            } => {
                let (kept, omitted) = subjects(list, *by);
                let client = (*by == DecidedBy::Client)
                    .then(|| {
                        self.client
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .clone()
                    })
                    .flatten()
                    .or_else(|| (*by == DecidedBy::Client).then(|| "a client".to_string()));
                Some(AuditEntry {
                    seq: 0,
                    time,
                    session: self.session_id.clone(),
                    turn: turn_id.clone(),
                    call: call_id.clone(),
                    tool: tool_of(call_id)
                        .or_else(|| list.first().map(|s| s.tool.clone()))
                        .unwrap_or_default(),
                    decision: *decision,
                    by: by_name(*by),
                    client,
                    request: request_id.clone(),
                    subjects: kept,
                    subjects_omitted: omitted,
                    prev: String::new(),
                })
            }
            // Each connection the proxy decided for a call's processes, with its rule.
            Item::NetworkConnection {
                turn_id,
                call_id,
                host,
                decision,
                by: Some(by),
                rule,
                ..
            } => {
                let subject_by = match rule {
                    Some(r) => match (&r.file, r.line) {
                        (Some(file), Some(line)) => format!("{file}:{line}"),
                        (Some(file), None) => file.clone(),
                        _ => format!("rule {}", r.index),
                    },
                    None if *by == DecidedBy::SessionGrant => "grant".into(),
                    None => "default".into(),
                };
                Some(AuditEntry {
                    seq: 0,
                    time,
                    session: self.session_id.clone(),
                    turn: turn_id.clone(),
                    call: call_id.clone(),
                    tool: crate::permission::network::NETWORK.into(),
                    decision: *decision,
                    by: by_name(*by),
                    client: (*by == DecidedBy::Client)
                        .then(|| self.client().unwrap_or_else(|| "a client".into())),
                    request: None,
                    subjects: vec![crate::session::audit::AuditSubject {
                        subject: host
                            .chars()
                            .take(crate::session::audit::MAX_SUBJECT_CHARS)
                            .collect(),
                        action: *decision,
                        by: subject_by,
                    }],
                    subjects_omitted: 0,
                    prev: String::new(),
                })
            }
            Item::ToolResult(result) => {
                let by = match result.denied_by? {
                    DeniedBy::Hook => "hook",
                    DeniedBy::Skill => "skill",
                    DeniedBy::Scope => "scope",
                    DeniedBy::Permission | DeniedBy::Approval => return None,
                };
                Some(AuditEntry {
                    seq: 0,
                    time,
                    session: self.session_id.clone(),
                    turn: result.turn_id.clone(),
                    call: result.call_id.clone(),
                    tool: tool_of(&result.call_id).unwrap_or_default(),
                    decision: crate::protocol::Action::Deny,
                    by: by.into(),
                    client: None,
                    request: None,
                    subjects: Vec::new(),
                    subjects_omitted: 0,
                    prev: String::new(),
                })
            }
            _ => None,
        }
    }
}
