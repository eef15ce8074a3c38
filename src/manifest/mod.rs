//! The pod manifest (`pod.toml`): reading, validating and resolving it.
//!
//! Owns: the file format (`file`), error messages that name file, line, column and key, path
//! resolution relative to the manifest's folder, and compiling `[permissions]` into
//! `Rules`(crate::permission::Rules) at load, so an invalid rule is a load error.
//!
//! Must not touch: the runtime. A [`Manifest`] is plain resolved data; nothing here runs tools,
//! starts hooks or talks to a model.

mod error;
mod examples;
pub mod file;
pub mod grants;
mod layers;
pub mod managed;
pub mod mcp;
mod permissions;
mod sandbox_section;
mod sections;
mod shown;
pub mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::{line_col, ManifestError};
pub use examples::{decided_by as example_decided_by, input as example_input};
pub use file::{Provider, RequiredLevel, RequiredSetting, SandboxMode};
pub use layers::{user_config_path, CONFIG_ENV, DEFAULTS, PROJECT_FILE};
pub use managed::{managed_dir, Managed, MANAGED_DIR, MANAGED_ENV};
pub use mcp::{McpConfig, McpHeaders, McpServerConfig, McpTransport};
pub use permissions::PermissionSettings;
pub use sandbox_section::{
    human_size, shown_size, EnvConfig, Required, SandboxConfig, DEFAULT_MAX_PROCESSES,
    DEFAULT_MAX_TMPDIR_SIZE,
};
pub use sections::{PodSettings, ScopeConfig, ToolsConfig};
pub use trust::{Ignored, Trust, TrustStore, Vouch};

use crate::builtin::Builtin;
use crate::permission::{Policy, Protected, ProtectedPath, RuleSpec, Rules};
use crate::protocol::Action;

/// Default model requests per turn.
pub const DEFAULT_MAX_STEPS: u32 = 50;
/// The most model requests a turn may be configured to make.
pub const MAX_STEPS: u32 = 1000;
/// Default `[model] max_response_bytes`.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// Default `[model] max_tool_calls`.
pub const DEFAULT_MAX_TOOL_CALLS: usize = 128;
/// Default `[model] response_timeout_secs`.
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(1800);
/// Default `[model] max_context_bytes`.
pub const DEFAULT_MAX_CONTEXT_BYTES: usize = 8 * 1024 * 1024;
/// Default `[pod] max_session_bytes`.
pub const DEFAULT_MAX_SESSION_BYTES: u64 = 512 * 1024 * 1024;
/// Default `[model] timeout_secs`: connecting (at most 30 s of it) and each read. A request
/// that times out is retried once, so a hung endpoint fails within about four minutes.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Default `[model] idle_timeout_secs`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Default `[tools] max_parallel`: twice the cores this process may use, between 4 and 64
/// (tool calls mostly wait on processes and files, not on a core).
pub fn default_max_parallel() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.saturating_mul(2).clamp(4, 64)
}

/// A loaded, validated manifest with every path resolved.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The manifest file.
    pub path: PathBuf,
    /// The manifest's folder: relative paths in the manifest start here.
    pub dir: PathBuf,
    /// The tool root (canonical): `[pod] workspace`, the project's alone.
    pub workspace: PathBuf,
    /// `[pod]` but `workspace`: [`PodSettings`].
    pub pod: PodSettings,
    pub model: ModelConfig,
    /// `[tools]`: [`ToolsConfig`].
    pub tools: ToolsConfig,
    /// `[scope]`: [`ScopeConfig`].
    pub scope: ScopeConfig,
    /// `[permissions]`, compiled; `None` when the section is absent (the layer is off).
    pub permissions: Option<Rules>,
    /// Line of the `[permissions]` header.
    pub permissions_line: Option<usize>,
    /// `[permissions]` but its rules (`mode`, `ask_timeout_secs`): [`PermissionSettings`].
    pub permission_settings: PermissionSettings,
    /// `[skills].directories`, absolute.
    pub skill_dirs: Vec<PathBuf>,
    pub hooks: Vec<HookConfig>,
    /// `[sandbox]`.
    pub sandbox: SandboxConfig,
    /// `[mcp]`: the MCP servers to start.
    pub mcp: McpConfig,
    /// Where each section's settings came from: section name (`model`, `permissions`, …) ->
    /// the files that set it, the project's first. A section no file sets has its built-in
    /// defaults.
    pub origins: BTreeMap<&'static str, Vec<PathBuf>>,
    /// Every configuration file in effect, the project's first (docs/manifest.md, "Layered
    /// configuration"). Empty when pod runs on its built-in defaults.
    pub files: Vec<PathBuf>,
    /// Whether the project's configuration is trusted, and what of it was ignored
    /// (docs/permissions.md, "Trust"). A manifest loaded on its own (`Manifest::load`) is
    /// trusted: its caller vouches for it.
    pub trust: Trust,
    /// Pod's own files named by parts of the configuration that were ignored (an untrusted
    /// project's hook programs): still protected, so nothing changes them unasked before the
    /// user decides.
    pub extra_protected: Vec<ProtectedPath>,
    /// Lines of the settings that trust may ignore (`model`, `pod.state_dir`, `pod.workspace`,
    /// `sandbox`, `scope`, `skills`, `permissions.default_action`), for naming them.
    pub lines: BTreeMap<&'static str, usize>,
    /// The managed layer (`/etc/pod`): its files, its locks, what it overrode or refused.
    /// In one managed file as read, only `locks` is set.
    pub managed: Managed,
    /// `[audit]`: the decision log, when a managed file or the user's configuration sets one.
    pub audit: Option<AuditConfig>,
    /// The examples of every rule in effect, as written (each was checked at load).
    pub examples: Vec<RuleExample>,
}

/// `[audit]`, resolved.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditConfig {
    /// The log file, absolute.
    pub path: PathBuf,
    /// Bytes before it rotates to `PATH.1`.
    pub max_bytes: u64,
}

/// Default `[audit] max_bytes`: 64 MiB.
pub const DEFAULT_AUDIT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// One rule's `examples`, as written and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleExample {
    /// The file and line of the rule.
    pub file: PathBuf,
    pub line: usize,
    pub tool: String,
    pub pattern: String,
    pub action: Action,
    /// Inputs the rule decides.
    pub matches: Vec<String>,
    /// Inputs it does not.
    pub not_match: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelConfig {
    #[serde(serialize_with = "shown::provider")]
    pub provider: Provider,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub api_key_file: Option<PathBuf>,
    pub max_tokens: u32,
    pub system: Option<String>,
    pub scenario: Option<PathBuf>,
    #[serde(rename = "timeout_secs", serialize_with = "shown::secs")]
    pub timeout: Duration,
    pub max_retries: u32,
    pub max_response_bytes: usize,
    pub max_tool_calls: usize,
    #[serde(rename = "response_timeout_secs", serialize_with = "shown::secs")]
    pub response_timeout: Duration,
    /// Longest a response's stream may go without an event.
    #[serde(rename = "idle_timeout_secs", serialize_with = "shown::secs")]
    pub idle_timeout: Duration,
    /// Most bytes of conversation sent at each step (older tool results elided beyond).
    pub max_context_bytes: usize,
    /// Whether the provider's default key variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`) may
    /// be read. False when the `[model]` in force came from a project and names its own
    /// `base_url`: pod never sends the user's key to an endpoint another layer chose, so such a
    /// project names its key itself (`api_key_env` / `api_key_file`).
    #[serde(skip)]
    pub default_key: bool,
}

impl Default for ModelConfig {
    /// `[model]` as an empty section reads: the offline model and the default limits.
    fn default() -> ModelConfig {
        ModelConfig {
            provider: Provider::Offline,
            model: None,
            base_url: None,
            api_key_env: None,
            api_key_file: None,
            max_tokens: 4096,
            system: None,
            scenario: None,
            timeout: Duration::from_secs(300),
            max_retries: 3,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_context_bytes: DEFAULT_MAX_CONTEXT_BYTES,
            default_key: true,
        }
    }
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before a call the permission layer let through: may deny it.
    PreToolCall,
    /// After a call ran, before the model sees its result: may narrow the result.
    PostToolCall,
    /// When a session starts or is resumed: may add context for the model.
    SessionStart,
    /// Before a user prompt goes to the model: may add context or refuse the prompt.
    UserPrompt,
    /// After a call was denied, by whatever denied it: a notification, its answer ignored.
    PermissionDenied,
}

impl HookEvent {
    /// The manifest's name for it: `hooks.pre_tool_call`, `hooks.session_start`, ...
    pub fn key(self) -> &'static str {
        match self {
            HookEvent::PreToolCall => "pre_tool_call",
            HookEvent::PostToolCall => "post_tool_call",
            HookEvent::SessionStart => "session_start",
            HookEvent::UserPrompt => "user_prompt",
            HookEvent::PermissionDenied => "permission_denied",
        }
    }

    /// Whether the hook is about tool calls, so that its `tools` patterns mean something.
    pub fn per_call(self) -> bool {
        match self {
            HookEvent::PreToolCall | HookEvent::PostToolCall | HookEvent::PermissionDenied => true,
            HookEvent::SessionStart | HookEvent::UserPrompt => false,
        }
    }
}

/// A user hook (`[[hooks.pre_tool_call]]`, `[[hooks.post_tool_call]]`,
/// `[[hooks.session_start]]`, `[[hooks.user_prompt]]` or `[[hooks.permission_denied]]`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct HookConfig {
    #[serde(skip)]
    pub event: HookEvent,
    /// Program and arguments; a program written as a relative path is resolved against the
    /// manifest's folder.
    pub command: Vec<String>,
    #[serde(rename = "timeout_secs", serialize_with = "shown::secs")]
    pub timeout: Duration,
    /// Wildmatch patterns of tool names (case-insensitive); empty means every tool.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Line of the hook's `[[hooks.<event>]]` header.
    #[serde(skip)]
    pub line: usize,
    /// The manifest's folder: the hook runs with it as its working directory.
    #[serde(skip)]
    pub dir: PathBuf,
    /// The file the hook is written in, when it comes from one.
    #[serde(skip)]
    pub file: Option<PathBuf>,
}

impl Manifest {
    /// Reads and validates the manifest at `path`.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Manifest::parse(&text, path)
    }

    /// Validates manifest `text` as if read from `path` (whose folder anchors relative paths).
    /// The result is the file as written: its caller vouches for it (`trust` says `session`).
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        Manifest::parse_layer(text, path, Role::Project)
    }

    /// Validates one configuration file in its `role`.
    fn parse_layer(text: &str, path: &Path, role: Role<'_>) -> Result<Manifest, ManifestError> {
        let raw: file::ManifestFile =
            toml::from_str(text).map_err(|e| toml_error(path, text, &e))?;
        let mut origins: BTreeMap<&'static str, Vec<PathBuf>> = BTreeMap::new();
        for (section, present) in [
            ("pod", raw.pod.is_some()),
            ("model", raw.model.is_some()),
            ("tools", raw.tools.is_some()),
            ("scope", raw.scope.is_some()),
            ("permissions", raw.permissions.is_some()),
            ("skills", raw.skills.is_some()),
            ("hooks", raw.hooks.is_some()),
            ("sandbox", raw.sandbox.is_some()),
            ("mcp", raw.mcp.is_some()),
            ("managed", raw.managed.is_some()),
            ("audit", raw.audit.is_some()),
        ] {
            if present {
                origins.insert(section, vec![path.to_path_buf()]);
            }
        }
        let at = |offset: usize, message: String| ManifestError::at(path, text, offset, message);
        let line_of = |offset: usize| line_col(text, offset).0;

        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let dir = dir.canonicalize().unwrap_or(dir);
        let pod = raw.pod.unwrap_or_default();
        let mut lines = BTreeMap::new();
        for (name, section, key) in [
            ("pod.state_dir", "pod", "state_dir"),
            ("pod.workspace", "pod", "workspace"),
            (
                "permissions.default_action",
                "permissions",
                "default_action",
            ),
        ] {
            if let Some(offset) = find_key(text, section, key) {
                lines.insert(name, line_of(offset));
            }
        }
        for section in ["model", "sandbox", "scope", "skills", "tools"] {
            if let Some(offset) = header_offset(text, section) {
                lines.insert(section, line_of(offset));
            }
        }
        if let (Role::Managed(_), Some(offset)) = (role, header_offset(text, "pod")) {
            return Err(at(
                offset,
                "[pod]: the managed layer does not set [pod] (its name, max_steps, \
                 max_session_bytes and state_dir are the user's and the project's); remove the \
                 section, or bound what a session may do with [permissions], [tools] and \
                 [sandbox]"
                    .into(),
            ));
        }
        if let (Role::User(_) | Role::Managed(_), Some(_)) = (role, &pod.workspace) {
            return Err(at(
                key_offset(text, "pod", "workspace"),
                "pod.workspace: only a project's pod.toml names the workspace (the user's \
                 configuration applies to whichever project pod runs in)"
                    .into(),
            ));
        }
        let workspace_raw = pod.workspace.unwrap_or_else(|| ".".into());
        let workspace = match role {
            Role::User(given) | Role::Managed(given) | Role::ProjectIn(given) => {
                given.to_path_buf()
            }
            Role::Project => dir.join(&workspace_raw),
        };
        let workspace = workspace.canonicalize().map_err(|e| {
            at(
                key_offset(text, "pod", "workspace"),
                format!(
                    "pod.workspace: {} is not a usable folder: {e}",
                    workspace.display()
                ),
            )
        })?;
        if !workspace.is_dir() {
            return Err(at(
                key_offset(text, "pod", "workspace"),
                format!("pod.workspace: {} is not a folder", workspace.display()),
            ));
        }

        if pod.max_steps.is_some_and(|n| n == 0 || n > MAX_STEPS) {
            return Err(at(
                key_offset(text, "pod", "max_steps"),
                format!(
                    "pod.max_steps: must be between 1 and {MAX_STEPS} (model requests per turn)"
                ),
            ));
        }
        let (enabled, max_parallel) = match raw.tools {
            None => (None, None),
            Some(section) => (section.enabled, section.max_parallel),
        };
        let at_least_one = |section: &str, key: &str, value: Option<u64>| match value {
            Some(0) => Err(at(
                key_offset(text, section, key),
                format!("{section}.{key}: must be at least 1"),
            )),
            _ => Ok(()),
        };
        at_least_one("tools", "max_parallel", max_parallel.map(u64::from))?;
        let tools_named = sections::ToolsKeys {
            enabled: enabled.is_some(),
            max_parallel: max_parallel.is_some(),
        };
        let max_parallel = max_parallel.map_or_else(default_max_parallel, |n| n as usize);
        let tools = match enabled {
            None => Builtin::default_enabled()
                .into_iter()
                .map(String::from)
                .collect(),
            Some(enabled) => {
                let mut tools = Vec::new();
                for name in enabled {
                    if Builtin::from_name(name.get_ref()).is_none() {
                        return Err(at(
                            name.span().start,
                            format!(
                                "tools.enabled: unknown tool \"{}\"{} (pod has: {})",
                                name.get_ref(),
                                did_you_mean(name.get_ref(), &Builtin::names()),
                                Builtin::names().join(", ")
                            ),
                        ));
                    }
                    if !tools.contains(name.get_ref()) {
                        tools.push(name.into_inner());
                    }
                }
                tools
            }
        };

        let writable = raw
            .scope
            .map(|s| s.writable)
            .unwrap_or_else(|| vec![".".into()])
            .iter()
            .map(|w| match planted_symlink(&workspace, &workspace.join(w)) {
                Some(why) => Err(at(
                    key_offset(text, "scope", "writable"),
                    format!("scope.writable: \"{w}\" {why}"),
                )),
                None => Ok(crate::permission::path::resolve_in(
                    &workspace,
                    Path::new(w),
                )),
            })
            .collect::<Result<_, _>>()?;

        let permission_settings =
            PermissionSettings::resolve(raw.permissions.as_ref().map(|p| p.get_ref()));
        let mut examples: Vec<(usize, RuleExample, usize)> = Vec::new();
        let (permissions, permissions_line) = match raw.permissions {
            None => (None, None),
            Some(section) => {
                let section_offset = section.span().start;
                let header = header_offset(text, "permissions").unwrap_or(section_offset);
                let section = section.into_inner();
                let Some(default_action) = section.default_action else {
                    return Err(at(
                        header,
                        "[permissions] requires default_action (allow, deny or ask)".into(),
                    ));
                };
                let mut specs = Vec::new();
                let mut field_spans = Vec::new();
                for rule in &section.rule {
                    let span = rule.span().start;
                    let r = rule.get_ref();
                    if let Some(ex) = &r.examples {
                        examples.push((
                            ex.span().start,
                            RuleExample {
                                file: path.to_path_buf(),
                                line: line_of(span),
                                tool: r.tool.get_ref().clone(),
                                pattern: r
                                    .pattern
                                    .as_ref()
                                    .map(|p| p.get_ref().clone())
                                    .unwrap_or_else(|| "*".into()),
                                action: r.action,
                                matches: ex.get_ref().matches.clone(),
                                not_match: ex.get_ref().not_match.clone(),
                            },
                            specs.len(),
                        ));
                    }
                    specs.push(RuleSpec {
                        tool: r.tool.get_ref().clone(),
                        pattern: r
                            .pattern
                            .as_ref()
                            .map(|p| p.get_ref().clone())
                            .unwrap_or_else(|| "*".into()),
                        action: r.action,
                        message: r.message.clone(),
                        line: Some(line_of(span)),
                        file: Some(path.display().to_string()),
                        methods: r.methods.as_ref().map(|m| m.get_ref().clone()),
                    });
                    field_spans.push((
                        span,
                        r.tool.span().start,
                        r.pattern.as_ref().map(|p| p.span().start).unwrap_or(span),
                        r.methods.as_ref().map(|m| m.span().start).unwrap_or(span),
                    ));
                }
                let rules =
                    Rules::compile(*default_action.get_ref(), specs).map_err(|(i, e)| {
                        let (_, tool_at, pattern_at, methods_at) = field_spans[i];
                        let offset = match e.field {
                            "tool" => tool_at,
                            "methods" => methods_at,
                            _ => pattern_at,
                        };
                        at(offset, format!("permissions.rule[{}].{e}", i + 1))
                    })?;
                let with = (!examples.is_empty()).then(|| examples::policy(&rules, &workspace));
                for (offset, example, index) in &examples {
                    let Some(policy) = &with else { break };
                    examples::check(policy, *index, example).map_err(|problem| {
                        at(
                            *offset,
                            format!("permissions.rule[{}].examples: {problem}", index + 1),
                        )
                    })?;
                }
                (Some(rules), Some(line_of(header)))
            }
        };

        let skill_dirs = raw
            .skills
            .map(|s| s.directories.iter().map(|d| dir.join(d)).collect())
            .unwrap_or_default();

        let mut hooks = Vec::new();
        let section = raw.hooks.unwrap_or_default();
        let entries = [
            (HookEvent::PreToolCall, section.pre_tool_call),
            (HookEvent::PostToolCall, section.post_tool_call),
            (HookEvent::SessionStart, section.session_start),
            (HookEvent::UserPrompt, section.user_prompt),
            (HookEvent::PermissionDenied, section.permission_denied),
        ]
        .into_iter()
        .flat_map(|(event, list)| list.into_iter().map(move |h| (event, h)));
        for (event, hook) in entries {
            let offset = hook.span().start;
            let line = line_of(offset);
            let hook = hook.into_inner();
            if hook.tools.is_some() && !event.per_call() {
                return Err(at(
                    offset,
                    format!(
                        "hooks.{}.tools: this hook is not about tool calls, so it takes no \
                         `tools`; remove the key (only pre_tool_call, post_tool_call and \
                         permission_denied hooks select tools)",
                        event.key()
                    ),
                ));
            }
            let Some(program) = hook.command.first() else {
                return Err(at(
                    offset,
                    format!(
                        "hooks.{}.command: must name a program (an argv array such as [\"python3\", \"hooks/guard.py\"])",
                        event.key()
                    ),
                ));
            };
            let mut command = hook.command.clone();
            if program.contains('/') && Path::new(program).is_relative() {
                command[0] = dir.join(program).to_string_lossy().into_owned();
            }
            hooks.push(HookConfig {
                event,
                command,
                timeout: Duration::from_secs(hook.timeout_secs.unwrap_or(10)),
                tools: hook.tools.unwrap_or_default(),
                line,
                dir: dir.clone(),
                file: Some(path.to_path_buf()),
            });
        }

        let (state_dir, state_root) = match &pod.state_dir {
            Some(configured) => {
                let folder = crate::permission::path::normalize(&dir.join(configured));
                (folder.clone(), folder)
            }
            None => {
                let root = default_state_root().map_err(|problem| {
                    at(key_offset(text, "pod", "state_dir"), problem.to_string())
                })?;
                (root.join(workspace_key(&workspace)), root)
            }
        };
        let sandbox = match raw.sandbox {
            None => SandboxConfig::default(),
            Some(section) => SandboxConfig {
                mode: section.mode.unwrap_or_default(),
                required: Required::from_setting(section.required),
                network: section.network.unwrap_or_default(),
                writable: section
                    .writable
                    .unwrap_or_default()
                    .iter()
                    .map(|w| {
                        extra_writable(&workspace, w.get_ref())
                            .map_err(|why| at(w.span().start, format!("sandbox.writable: {why}")))
                    })
                    .collect::<Result<_, _>>()?,
                readable: section
                    .readable
                    .map(|list| {
                        list.iter()
                            .map(|r| {
                                readable_path(r.get_ref()).map_err(|why| {
                                    at(r.span().start, format!("sandbox.readable: {why}"))
                                })
                            })
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .transpose()?,
                line: header_offset(text, "sandbox").map(line_of),
                exec_gate: section.exec_gate,
                max_processes: match section.max_processes {
                    Some(0) => {
                        return Err(at(
                            key_offset(text, "sandbox", "max_processes"),
                            "sandbox.max_processes: must be at least 1 (a call's first process \
                             counts)"
                                .to_string(),
                        ))
                    }
                    n => n,
                },
                max_tmpdir_size: section
                    .max_tmpdir_size
                    .map(|v| {
                        sandbox_section::parse_tmpdir_size(v.get_ref()).map_err(|why| {
                            at(v.span().start, format!("sandbox.max_tmpdir_size: {why}"))
                        })
                    })
                    .transpose()?,
                env: section
                    .env
                    .map(|env| {
                        let pass = env.pass.unwrap_or_default();
                        EnvConfig {
                            // Only the user's configuration may pass a secret, by its name.
                            exact: match role {
                                Role::User(_) | Role::Managed(_) => pass
                                    .iter()
                                    .filter(|p| !p.contains(['*', '?', '[']))
                                    .cloned()
                                    .collect(),
                                _ => Vec::new(),
                            },
                            pass,
                            set: env.set.unwrap_or_default().into_iter().collect(),
                            secret: Vec::new(),
                        }
                    })
                    .unwrap_or_default(),
            },
        };

        let mcp = mcp::resolve(
            raw.mcp,
            text,
            path,
            &dir,
            &workspace,
            matches!(role, Role::User(_) | Role::Managed(_)),
        )?;

        let locks = match (raw.managed, role) {
            (None, _) => managed::Locks::default(),
            (Some(section), Role::Managed(_)) => managed_locks(section, text, path)?,
            (Some(_), _) => {
                return Err(at(
                    header_offset(text, "managed").unwrap_or(0),
                    format!(
                        "[managed]: only a managed file ({}/pod.toml or {}/pod.d/*.toml) locks \
                         the layers below it",
                        MANAGED_DIR, MANAGED_DIR
                    ),
                ))
            }
        };
        let audit = match (raw.audit, role) {
            (None, _) => None,
            (Some(section), Role::User(_) | Role::Managed(_)) => {
                let offset = key_offset(text, "audit", "path");
                let file = extra_writable(&dir, &section.path)
                    .map_err(|why| at(offset, format!("audit.path: {why}")))?;
                if section.max_bytes == Some(0) {
                    return Err(at(
                        key_offset(text, "audit", "max_bytes"),
                        "audit.max_bytes: must be at least 1".into(),
                    ));
                }
                Some(AuditConfig {
                    path: file,
                    max_bytes: section.max_bytes.unwrap_or(DEFAULT_AUDIT_MAX_BYTES),
                })
            }
            (Some(_), _) => return Err(at(
                header_offset(text, "audit").unwrap_or(0),
                "[audit]: only a managed file or your own configuration (~/.config/pod/pod.toml) \
                     sets the decision log, so a project cannot turn it off or point it elsewhere"
                    .into(),
            )),
        };

        let model = raw.model.unwrap_or_default();
        at_least_one("model", "max_response_bytes", model.max_response_bytes)?;
        at_least_one(
            "model",
            "max_tool_calls",
            model.max_tool_calls.map(u64::from),
        )?;
        at_least_one(
            "model",
            "response_timeout_secs",
            model.response_timeout_secs,
        )?;
        at_least_one("model", "idle_timeout_secs", model.idle_timeout_secs)?;
        at_least_one("model", "max_context_bytes", model.max_context_bytes)?;
        if let Some(url) = &model.base_url {
            let lower = url.to_ascii_lowercase();
            if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                return Err(at(
                    key_offset(text, "model", "base_url"),
                    format!(
                        "model.base_url: {url:?} has no scheme: write the whole address, e.g. \
                         \"https://{}\"",
                        url.trim_start_matches('/')
                    ),
                ));
            }
        }
        let model = ModelConfig {
            provider: model.provider,
            model: model.model,
            base_url: model.base_url,
            api_key_env: model.api_key_env,
            api_key_file: model.api_key_file.map(|f| dir.join(f)),
            max_tokens: model.max_tokens.unwrap_or(4096),
            system: model.system,
            scenario: model.scenario.map(|f| dir.join(f)),
            timeout: Duration::from_secs(model.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS)),
            max_retries: model.max_retries.unwrap_or(3),
            max_response_bytes: model
                .max_response_bytes
                .map_or(DEFAULT_MAX_RESPONSE_BYTES, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }),
            max_tool_calls: model
                .max_tool_calls
                .map_or(DEFAULT_MAX_TOOL_CALLS, |n| n as usize),
            response_timeout: model
                .response_timeout_secs
                .map_or(DEFAULT_RESPONSE_TIMEOUT, Duration::from_secs),
            idle_timeout: model
                .idle_timeout_secs
                .map_or(DEFAULT_IDLE_TIMEOUT, Duration::from_secs),
            max_context_bytes: model
                .max_context_bytes
                .map_or(DEFAULT_MAX_CONTEXT_BYTES, |n| {
                    usize::try_from(n).unwrap_or(usize::MAX)
                }),
            default_key: true,
        };

        let trust = Trust::vouched(&dir);
        Ok(Manifest {
            path: path.to_path_buf(),
            dir,
            workspace,
            pod: PodSettings {
                name: pod.name.unwrap_or_else(|| "pod".into()),
                max_steps: pod.max_steps.unwrap_or(DEFAULT_MAX_STEPS),
                max_session_bytes: pod.max_session_bytes.unwrap_or(DEFAULT_MAX_SESSION_BYTES),
                state_dir,
                state_root,
            },
            model,
            tools: ToolsConfig {
                enabled: tools,
                max_parallel,
                named: tools_named,
            },
            scope: ScopeConfig { writable },
            permissions,
            permissions_line,
            permission_settings,
            skill_dirs,
            hooks,
            sandbox,
            mcp,
            files: vec![path.to_path_buf()],
            origins,
            trust,
            extra_protected: Vec::new(),
            lines,
            managed: Managed {
                locks,
                ..Managed::default()
            },
            audit,
            examples: examples.into_iter().map(|(_, e, _)| e).collect(),
        }
        .with_key_variables())
    }

    /// Marks the variable `[model]` reads its key from as a secret of the sandbox's
    /// environment (after any layering changed either).
    fn with_key_variables(mut self) -> Manifest {
        self.sandbox.env.secret = self.model.api_key_env.iter().cloned().collect();
        self
    }

    /// Puts the session logs in `folder` (`pod serve --state-dir`); relative to the current
    /// folder.
    pub fn set_state_dir(&mut self, folder: &Path) {
        let folder = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
        let folder = crate::permission::path::normalize(&folder);
        self.pod.state_dir = folder.clone();
        self.pod.state_root = folder;
    }

    /// The folder of this pod's session logs.
    pub fn sessions_dir(&self) -> PathBuf {
        self.pod.state_dir.join("sessions")
    }

    /// The permission policy this manifest declares, protecting [`Manifest::protected_paths`].
    pub fn policy(&self) -> Policy {
        Policy::new(self.permissions.clone(), self.workspace.clone())
            .with_protected(Protected::new(self.protected_paths()))
            .with_mcp(self.mcp.rules())
    }

    /// Pod's own files, which no write gets without a person: the manifest and every other
    /// configuration file it names, hook programs (and the scripts they are given) and MCP
    /// server programs with the folders holding them (unless that is the manifest's folder or
    /// holds the workspace), skill folders and the state folder. A configuration layer added later (a user config file)
    /// adds its file here.
    pub fn protected_paths(&self) -> Vec<ProtectedPath> {
        let entry = |path: PathBuf, what: &str| ProtectedPath {
            path,
            what: what.to_string(),
        };
        let manifest = match self.path.file_name() {
            Some(name) => self.dir.join(name),
            None => self.path.clone(),
        };
        let mut out = vec![entry(manifest, "the manifest")];
        for file in self.files.iter().filter(|f| **f != self.path) {
            out.push(entry(file.clone(), "a configuration file"));
        }
        for file in [&self.model.scenario, &self.model.api_key_file]
            .into_iter()
            .flatten()
        {
            out.push(entry(file.clone(), "a file the manifest configures"));
        }
        // A hook's or a server's folder too: what the program imports or sources from beside
        // itself (Python's modules, a shell's `.`) is part of it. Not the manifest's folder or
        // one that is or holds a writable folder (a script there: `pod check` warns).
        let own_folder = |file: &Path, base: &Path| -> Option<PathBuf> {
            let folder = file.parent()?;
            (folder != base && !self.holds_a_writable_folder(folder)).then(|| folder.to_path_buf())
        };
        for hook in &self.hooks {
            for (i, word) in hook.command.iter().enumerate() {
                let candidate = hook.dir.join(word);
                let named = (i == 0 && word.contains('/')) || (i > 0 && candidate.is_file());
                if named {
                    if let Some(folder) = own_folder(&candidate, &hook.dir) {
                        if !out.iter().any(|e| e.path == folder) {
                            out.push(entry(folder, "a hook program's folder"));
                        }
                    }
                    out.push(entry(candidate, "a hook program"));
                }
            }
        }
        for server in &self.mcp.servers {
            let McpTransport::Stdio {
                command, args, cwd, ..
            } = &server.transport
            else {
                continue;
            };
            let words = std::iter::once((command, self.dir.as_path()))
                .chain(args.iter().map(|a| (a, cwd.as_path())));
            for (i, (word, base)) in words.enumerate() {
                let candidate = base.join(word);
                if (i == 0 && word.contains('/')) || (i > 0 && candidate.is_file()) {
                    if let Some(folder) = own_folder(&candidate, base) {
                        if !out.iter().any(|e| e.path == folder) {
                            out.push(entry(folder, "an MCP server program's folder"));
                        }
                    }
                    out.push(entry(candidate, "an MCP server program"));
                }
            }
        }
        for dir in &self.skill_dirs {
            out.push(entry(dir.clone(), "a skill folder"));
        }
        out.push(entry(self.pod.state_root.clone(), "pod's state folder"));
        if let Ok(store) = TrustStore::default_location() {
            out.push(entry(store.path().to_path_buf(), "pod's trust store"));
        }
        if let Some(file) = grants::path(&self.workspace) {
            if let Some(dir) = file.parent() {
                out.push(entry(dir.to_path_buf(), "pod's project grants"));
            }
        }
        if let Some(audit) = &self.audit {
            out.push(entry(audit.path.clone(), "the decision log"));
            let mut rotated = audit.path.clone().into_os_string();
            rotated.push(".1");
            out.push(entry(PathBuf::from(rotated), "the decision log"));
        }
        out.extend(self.extra_protected.iter().cloned());
        out
    }

    /// Whether `folder` is, or holds, the workspace or another folder calls may write.
    pub fn holds_a_writable_folder(&self, folder: &Path) -> bool {
        std::iter::once(&self.workspace)
            .chain(&self.scope.writable)
            .chain(&self.sandbox.writable)
            .any(|w| w.starts_with(folder))
    }

    /// The lint findings about the rules (`pod check` prints them; `pod serve` logs them at
    /// start, so a rule naming no tool is as loud in both).
    pub fn lint(&self) -> Vec<crate::permission::lint::Finding> {
        let Some(rules) = &self.permissions else {
            return Vec::new();
        };
        let mut findings = crate::permission::lint::lint(
            rules,
            &self.tools.enabled,
            &self.workspace,
            self.permissions_line,
        );
        let servers: Vec<&str> = self.mcp.servers.iter().map(|s| s.name.as_str()).collect();
        findings.extend(crate::permission::lint::mcp_servers(rules, &servers));
        findings
    }

    /// The default action, or `None` when the permission layer is off.
    pub fn default_action(&self) -> Option<Action> {
        self.permissions.as_ref().map(|r| r.default_action())
    }
}

/// What a configuration file is to the pod reading it.
#[derive(Debug, Clone, Copy)]
enum Role<'a> {
    /// A project's manifest: it names the workspace (`[pod] workspace`, default its folder).
    Project,
    /// A project's manifest whose `[pod] workspace` is not taken: the workspace is this.
    ProjectIn(&'a Path),
    /// The user's configuration, working on this (the project's) workspace.
    User(&'a Path),
    /// A managed file (`/etc/pod`), working on this workspace: read as the user's is, and it
    /// may hold `[managed]`.
    Managed(&'a Path),
}

/// A file's `[managed]` section, compiled.
fn managed_locks(
    section: file::ManagedSection,
    text: &str,
    path: &Path,
) -> Result<managed::Locks, ManifestError> {
    let compile = |entries: Option<Vec<toml::Spanned<file::McpServerMatch>>>,
                   key: &str|
     -> Result<Vec<managed::ServerMatch>, ManifestError> {
        entries
            .unwrap_or_default()
            .iter()
            .map(|e| {
                let (line, _) = line_col(text, e.span().start);
                managed::ServerMatch::new(e.get_ref(), format!("{}:{line}", path.display()))
                    .map_err(|why| {
                        ManifestError::at(
                            path,
                            text,
                            e.span().start,
                            format!("managed.{key}: {why}"),
                        )
                    })
            })
            .collect()
    };
    let allowed = section
        .allowed_mcp_servers
        .is_some()
        .then(|| compile(section.allowed_mcp_servers.clone(), "allowed_mcp_servers"))
        .transpose()?;
    if section.allowed_modes.as_ref().is_some_and(Vec::is_empty) {
        return Err(ManifestError::at(
            path,
            text,
            key_offset(text, "managed", "allowed_modes"),
            "managed.allowed_modes: must name at least one mode (default, read-only, \
             accept-edits, auto, unattended)"
                .into(),
        ));
    }
    Ok(managed::Locks {
        require_sandbox: section.require_sandbox.unwrap_or(false),
        allowed_modes: section.allowed_modes,
        rules_only: section.allow_managed_rules_only.unwrap_or(false),
        hooks_only: section.allow_managed_hooks_only.unwrap_or(false),
        domains_only: section.allowed_domains_only.unwrap_or(false),
        allowed_servers: allowed.into_iter().collect(),
        denied_servers: compile(section.denied_mcp_servers, "denied_mcp_servers")?,
    })
}

/// Why no default state folder can be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "pod.state_dir: no state folder for the session logs: set [pod].state_dir, or an absolute \
     XDG_STATE_HOME or HOME"
)]
pub struct NoStateFolder;

/// The per-user folder holding every workspace's state: `$XDG_STATE_HOME/pod`, else
/// `$HOME/.local/state/pod` (only absolute values count, as the XDG spec says).
pub fn default_state_root() -> Result<PathBuf, NoStateFolder> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(state) = absolute("XDG_STATE_HOME") {
        return Ok(state.join("pod"));
    }
    absolute("HOME")
        .map(|home| home.join(".local/state/pod"))
        .ok_or(NoStateFolder)
}

/// The name of a workspace's folder under the state root: its folder name (made safe) and a
/// hash of its full path, so two workspaces never share one: `myproject-3f2a9c1e5b7d8a04`.
pub fn workspace_key(workspace: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let name: String = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    // FNV-1a (64 bits): stable across builds and platforms, unlike std's hasher.
    let hash = workspace
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    format!("{name}-{hash:016x}")
}

/// A `[sandbox].writable` entry as an absolute path, symlinks resolved like `[scope].writable`:
/// `~` and `~/…` start at `$HOME`, relative paths at the workspace.
fn extra_writable(workspace: &Path, raw: &str) -> Result<PathBuf, String> {
    if raw.trim().is_empty() {
        return Err("an entry is empty (name a folder, such as \"~/.cache/cargo\")".into());
    }
    if raw.contains('\0') {
        return Err(format!("{raw:?} contains a NUL byte"));
    }
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| format!("\"{raw}\" starts with ~ but $HOME is not set"))
    };
    let path = if raw == "~" {
        home()?
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home()?.join(rest)
    } else if raw.starts_with('~') {
        return Err(format!(
            "\"{raw}\": only ~ and ~/… are expanded (~user is not); write the path out"
        ));
    } else {
        workspace.join(raw)
    };
    if let Some(why) = planted_symlink(workspace, &path) {
        return Err(format!("\"{raw}\" {why}"));
    }
    Ok(crate::permission::path::resolve_in(workspace, &path))
}

/// Why a writable folder must not be granted as written: on the way to it, as the kernel walks
/// the path (a `..` steps back from where a link led, not from its name), a symlink lies in a
/// folder inside the workspace, which a tool call may have made (`ln -s /elsewhere build` in one
/// session, and the next would open `/elsewhere` to every call). `None` when the walk meets no
/// such link.
fn planted_symlink(workspace: &Path, literal: &Path) -> Option<String> {
    use std::path::Component;
    let inside = crate::permission::path::resolve(workspace);
    let mut at = PathBuf::new();
    for part in literal.components() {
        match part {
            Component::RootDir | Component::Prefix(_) => at.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                at.pop();
            }
            Component::Normal(name) => {
                let next = at.join(name);
                let Ok(meta) = next.symlink_metadata() else {
                    // Missing from here on: nothing further to follow.
                    return None;
                };
                if meta.file_type().is_symlink() {
                    if at.starts_with(&inside) {
                        let target = std::fs::read_link(&next).unwrap_or_default();
                        return Some(format!(
                            "goes through {} -> {}, a symlink inside the workspace, which a \
                             tool call may have made; name the folder it points to instead (or \
                             remove the link)",
                            next.display(),
                            target.display()
                        ));
                    }
                    // A link outside (a symlinked home, `/var`): followed, as the kernel would.
                    at = crate::permission::path::resolve(&next);
                } else {
                    at = next;
                }
            }
        }
    }
    None
}

/// A `[sandbox].readable` entry as an absolute path: `~` and `~/…` start at `$HOME`; a relative
/// path is refused (the workspace is visible anyway: say which folder of `$HOME` you mean).
fn readable_path(raw: &str) -> Result<PathBuf, String> {
    if raw.starts_with('~') || raw.starts_with('/') {
        // The workspace is not consulted for these forms.
        extra_writable(Path::new("/"), raw)
    } else {
        Err(format!(
            "\"{raw}\" is relative; name a path under ~ (\"~/.cargo\") or an absolute one"
        ))
    }
}

/// Turns a toml/serde error into `file:line:col: key: message (did you mean ...)`.
fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> ManifestError {
    let offset = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
    let message = e.message().trim().to_string();
    if let Some(message) = entry_error(text, offset, &message) {
        return ManifestError::at(path, text, offset, message);
    }
    let key = key_path_at(text, offset);
    let hint = unknown_name_hint(&message);
    let message = match key {
        Some(key)
            if !message.contains(&format!("`{}`", key.rsplit('.').next().unwrap_or(&key))) =>
        {
            format!("{key}: {message}{hint}")
        }
        _ => match header_at(text, offset) {
            Some(section) if message.starts_with("unknown field") => {
                format!("[{section}]: {message}{hint}")
            }
            _ => format!("{message}{hint}"),
        },
    };
    ManifestError::at(path, text, offset, message)
}

/// Errors about a whole `[[section]]` entry, which toml reports at its header: a list written
/// with one bracket (`[permissions.rule]`), or an entry missing a field, named by its position
/// (`permissions.rule[2]: missing field `action``).
fn entry_error(text: &str, offset: usize, message: &str) -> Option<String> {
    let line_start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text
        .get(offset..)?
        .find('\n')
        .map_or(text.len(), |i| offset + i);
    let line = text.get(line_start..line_end)?.trim();
    let section = parse_header(line)?;
    if message.starts_with("invalid type: map, expected a sequence") && !line.starts_with("[[") {
        return Some(format!(
            "[{section}] is a list: write each entry as [[{section}]] (two brackets)"
        ));
    }
    if message.starts_with("missing field") && line.starts_with("[[") {
        let n = text
            .get(..line_end)?
            .lines()
            .filter(|l| l.trim().starts_with("[[") && parse_header(l).as_deref() == Some(&section))
            .count();
        return Some(format!("{section}[{n}]: {message}"));
    }
    None
}

/// For "unknown field `x`, expected one of `a`, `b`" (and unknown variants): a "did you mean".
fn unknown_name_hint(message: &str) -> String {
    let unknown = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split('`').next());
    let Some(unknown) = unknown else {
        return String::new();
    };
    let expected = message.split_once("expected").map(|(_, e)| e).unwrap_or("");
    let candidates: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    did_you_mean(unknown, &candidates)
}

/// `" (did you mean \"x\"?)"` when one candidate is close to `word`, else empty.
pub fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(word, c), *c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| format!(" (did you mean \"{c}\"?)"))
        .unwrap_or_default()
}

/// The section header (`[a.b]` or `[[a.b]]`) in force at `offset`.
fn header_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset.min(text.len()))?;
    before.lines().rev().find_map(parse_header)
}

fn parse_header(line: &str) -> Option<String> {
    let line = line.trim();
    let inner = match line.strip_prefix("[[") {
        Some(rest) => rest.split_once("]]")?.0,
        None => line.strip_prefix('[')?.split_once(']')?.0,
    };
    let inner = inner.trim();
    (!inner.is_empty()).then(|| inner.to_string())
}

/// `section.key` for the `key = value` line holding `offset`, when there is one.
fn key_path_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text.get(..offset)?.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line = text.get(start..)?.lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    if key.is_empty() || key.starts_with('[') {
        return None;
    }
    Some(match header_at(text, start) {
        Some(section) => format!("{section}.{key}"),
        None => key.to_string(),
    })
}

/// Byte offset of the header line `[name]`.
fn header_offset(text: &str, name: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if parse_header(line).as_deref() == Some(name) && !line.trim_start().starts_with("[[") {
            return Some(offset + (line.len() - line.trim_start().len()));
        }
        offset += line.len();
    }
    None
}

/// Byte offset of `key = ...` inside `[section]`, or of the section header, or 0.
fn key_offset(text: &str, section: &str, key: &str) -> usize {
    find_key(text, section, key)
        .or_else(|| header_offset(text, section))
        .unwrap_or(0)
}

/// Byte offset of `key = ...` inside `[section]`, when it is written there.
fn find_key(text: &str, section: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    let mut current: Option<String> = None;
    for line in text.split_inclusive('\n') {
        if let Some(h) = parse_header(line) {
            current = Some(h);
        } else if current.as_deref() == Some(section)
            && line.split_once('=').map(|(k, _)| k.trim()) == Some(key)
        {
            return Some(offset + (line.len() - line.trim_start().len()));
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_tmpdir_size_takes_sizes_and_a_bad_one_is_refused_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pod.toml");
        let parse = |value: &str| {
            let text = format!("[pod]\nname = \"t\"\n\n[sandbox]\nmax_tmpdir_size = {value}\n");
            Manifest::parse(&text, &path).map(|m| m.sandbox.max_tmpdir_size)
        };
        for (value, bytes) in [
            ("\"512M\"", 512 << 20),
            ("\"1G\"", 1 << 30),
            ("\"2GiB\"", 2 << 30),
            ("\" 3 g \"", 3 << 30),
            ("\"1T\"", 1 << 40),
            ("1048576", 1 << 20),
            ("\"4096K\"", 4 << 20),
        ] {
            assert_eq!(parse(value).unwrap(), Some(bytes), "{value}");
        }
        let shown = path.display().to_string();
        for (value, why) in [
            ("0", "must be more than 0"),
            ("\"0G\"", "must be more than 0"),
            ("\"lots\"", "\"lots\" is not a size"),
            ("\"1.5G\"", "\"1.5G\" is not a size"),
            ("\"10MB\"", "\"10MB\" is not a size"),
            ("-5", "-5 is negative"),
            ("true", "must be a size"),
            ("4096", "4096 bytes is too small: at least 1M"),
            ("\"2T\"", "2T is too large: at most 1T"),
            ("\"99999999999999999999G\"", "is not a size"),
        ] {
            let err = parse(value).unwrap_err().to_string();
            assert!(err.starts_with(&format!("{shown}:5:")), "{value}: {err}");
            assert!(
                err.contains("sandbox.max_tmpdir_size: ") && err.contains(why),
                "{value}: {err}"
            );
        }
        let text = "[sandbox]\nmode = \"landlock\"\n";
        let m = Manifest::parse(text, &path).unwrap();
        assert_eq!(m.sandbox.max_tmpdir_size, None);
        assert_eq!(m.sandbox.max_tmpdir_size(), DEFAULT_MAX_TMPDIR_SIZE);
    }

    #[test]
    fn a_managed_file_with_a_pod_section_is_refused_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pod.toml");
        let text = "[tools]\nmax_parallel = 2\n\n[pod]\nmax_steps = 5\n";
        let err = Manifest::parse_layer(text, &path, Role::Managed(dir.path()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(":4:") && err.contains("[pod]: the managed layer"),
            "{err}"
        );
        // The same file as the user's is fine.
        assert!(Manifest::parse_layer(text, &path, Role::User(dir.path())).is_ok());
    }

    #[test]
    fn every_hook_event_parses_and_only_call_hooks_take_tools() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pod.toml");
        let text = "[[hooks.session_start]]\ncommand = [\"a\"]\n\
                    [[hooks.user_prompt]]\ncommand = [\"b\"]\ntimeout_secs = 3\n\
                    [[hooks.permission_denied]]\ncommand = [\"c\"]\ntools = [\"bash\"]\n";
        let m = Manifest::parse(text, &path).unwrap();
        let events: Vec<_> = m.hooks.iter().map(|h| (h.event, h.line)).collect();
        assert_eq!(
            events,
            [
                (HookEvent::SessionStart, 1),
                (HookEvent::UserPrompt, 3),
                (HookEvent::PermissionDenied, 6)
            ]
        );
        for event in ["session_start", "user_prompt"] {
            let text = format!("[[hooks.{event}]]\ncommand = [\"a\"]\ntools = [\"bash\"]\n");
            let err = Manifest::parse(&text, &path).unwrap_err().to_string();
            assert!(err.contains(&format!("hooks.{event}.tools")), "{err}");
        }
    }

    #[test]
    fn protected_paths_name_the_configuration_hooks_skills_and_state() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("hooks")).unwrap();
        std::fs::write(ws.join("hooks/guard.py"), "").unwrap();
        let text = "[pod]\nstate_dir = \"state\"\n[skills]\ndirectories = [\"skills\"]\n\
                    [[hooks.pre_tool_call]]\ncommand = [\"python3\", \"hooks/guard.py\", \"-v\"]\n\
                    [[hooks.pre_tool_call]]\ncommand = [\"./hooks/check.sh\"]\n";
        let m = Manifest::parse(text, &ws.join("pod.toml")).unwrap();
        let paths: Vec<(String, String)> = m
            .protected_paths()
            .into_iter()
            // Where the project grants live depends on this machine's user configuration.
            .filter(|p| p.what != "pod's project grants")
            .map(|p| match p.path.file_name() {
                Some(name) if name == trust::STORE_FILE => ("trust.json".into(), p.what),
                _ => (path_text(&p.path, &ws), p.what),
            })
            .collect();
        let want = [
            ("pod.toml", "the manifest"),
            ("hooks", "a hook program's folder"),
            ("hooks/guard.py", "a hook program"),
            ("hooks/check.sh", "a hook program"),
            ("skills", "a skill folder"),
            ("state", "pod's state folder"),
            ("trust.json", "pod's trust store"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(p, w)| (p.to_string(), w.to_string()))
            .collect();
        assert_eq!(paths, want);
        assert_eq!(m.sessions_dir(), ws.join("state/sessions"));
    }

    fn path_text(p: &Path, ws: &Path) -> String {
        crate::permission::path::display(&crate::permission::path::normalize(p), ws)
    }

    #[test]
    fn the_default_state_folder_is_per_workspace_and_stable() {
        let a = workspace_key(Path::new("/home/u/my project"));
        assert!(a.starts_with("my_project-"), "{a}");
        assert_eq!(a, workspace_key(Path::new("/home/u/my project")));
        assert_ne!(a, workspace_key(Path::new("/srv/my project")));
        assert_eq!(a.len(), "my_project-".len() + 16);
    }
}
