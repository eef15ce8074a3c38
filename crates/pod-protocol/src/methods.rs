//! Params and results of the methods a client calls.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, EnvironmentInfo, Item, ReplyDecision, WorkspaceTrust};

/// Name and version of a peer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct PeerInfo {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
}

/// `capabilities.approval`: present as an object means the client answers
/// `permissionRequest` events. Reserved for sub-fields; today always `{}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
pub struct ApprovalCapability {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Omitted, `null` or not an object: the client cannot approve, and every `ask` fails closed.
    #[serde(default, deserialize_with = "lenient_object")]
    pub approval: Option<ApprovalCapability>,
}

/// A capability counts only when it is an object; anything else reads as absent.
fn lenient_object<'de, D>(de: D) -> Result<Option<ApprovalCapability>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = serde_json::Value::deserialize(de)?;
    Ok(value.is_object().then_some(ApprovalCapability {}))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: u32,
    #[serde(default)]
    pub client_info: Option<PeerInfo>,
    /// A malformed value means "no capabilities", never an error.
    #[serde(default, deserialize_with = "lenient_capabilities")]
    pub capabilities: ClientCapabilities,
}

/// Capabilities of the wrong shape read as none.
fn lenient_capabilities<'de, D>(de: D) -> Result<ClientCapabilities, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = serde_json::Value::deserialize(de)?;
    Ok(ClientCapabilities::deserialize(value).unwrap_or_default())
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: String,
    pub resumed: bool,
    /// Session grants of a resumed log that were not restored because the rules in force no
    /// longer allow granting them (each is logged on stderr). Always 0 for a new session.
    #[serde(default)]
    pub dropped_grants: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
    /// An MCP tool's annotations, as its server lists them; absent for built-in tools and for
    /// MCP tools without any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
}

/// What an MCP server says about one of its tools (MCP's `ToolAnnotations`): hints in the
/// server's own words, which pod does not check. An absent hint takes MCP's default:
/// `readOnlyHint` false, `destructiveHint` true, `idempotentHint` false, `openWorldHint` true.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// True: the tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// Only when not read-only. True: it may destroy or overwrite; false: it only adds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Only when not read-only. True: calling it again with the same input changes nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// True: it reaches an open world of external entities (the web, other people's systems).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// Whether an MCP server of the session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpServerState {
    /// It answered `initialize` and listed its tools, which are in `tools`.
    Running,
    /// It did not start (see `error`); calls of its tools get an error result.
    Failed,
    /// It started, then exited (see `error`); calls of its tools get an error result.
    Exited,
}

/// One MCP server of the session (`[mcp.servers.NAME]`), as `initialize` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    pub name: String,
    pub state: McpServerState,
    /// How many of its tools are offered to the model (as `mcp__NAME__TOOL`).
    pub tools: usize,
    /// Why it is not running, or which of its tools were left out and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How an `ask` is resolved on this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AskMode {
    /// The client advertised approval: asks become `permissionRequest` events.
    Client,
    /// No approver: asks are denied at once.
    FailClosed,
}

/// How a session settles what the rules leave to a person (docs/permissions.md, "Modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The rules as written.
    #[default]
    Default,
    /// Only the tools that only read (`read`, `grep`, `glob`) run.
    ReadOnly,
    /// `file_write` and `edit` inside the writable folders run without asking; deny rules and
    /// protected paths still hold.
    AcceptEdits,
    /// A call runs without asking when the kernel bounds everything it can do; offered only
    /// where the kernel can (the namespace sandbox and the exec gate).
    Auto,
    /// Every ask is denied at once (headless runs).
    Unattended,
}

impl Mode {
    /// Every mode, in the order clients list them.
    pub const ALL: [Mode; 5] = [
        Mode::Default,
        Mode::ReadOnly,
        Mode::AcceptEdits,
        Mode::Auto,
        Mode::Unattended,
    ];

    /// The mode's name on the wire and in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::ReadOnly => "read-only",
            Mode::AcceptEdits => "accept-edits",
            Mode::Auto => "auto",
            Mode::Unattended => "unattended",
        }
    }

    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// True when the mode lets less run unasked than `default` (a project may start a session
    /// in it).
    pub fn is_stricter(self) -> bool {
        matches!(self, Mode::ReadOnly | Mode::Unattended)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetModeParams {
    pub mode: Mode,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetModeResult {
    pub mode: Mode,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsInfo {
    pub enabled: bool,
    pub default_action: Option<Action>,
    pub rules: usize,
    pub ask_mode: AskMode,
    /// The session's mode.
    #[serde(default)]
    pub mode: Mode,
    /// The modes `setMode` accepts here (`auto` only where the kernel bounds a call).
    #[serde(default)]
    pub modes: Vec<Mode>,
    /// Set when the layer is off, saying why (a project manifest without `[permissions]`, in a
    /// trusted folder, with no `[permissions]` in the user's configuration either): every tool
    /// call runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Which kernel boundary confines the processes that tool calls and hooks start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SandboxKind {
    /// `[sandbox] mode = "namespaces"` (the default), where this machine can make them: each
    /// call in user, mount, PID, IPC and UTS namespaces of its own (and a network namespace under
    /// `network = "deny"`), with the seccomp filter.
    Namespaces,
    /// `[sandbox] mode = "landlock"`, or the fall-back of `namespaces` where namespaces cannot
    /// be made: a Landlock domain and the seccomp filter, when the kernel has Landlock.
    Landlock,
    /// `[sandbox] mode = "off"`: processes run with the pod's own rights.
    None,
}

/// Whether sandboxed processes may open TCP connections and listen on TCP ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub enum NetworkAccess {
    /// No network boundary.
    #[default]
    Allow,
    /// Under namespaces: an empty network namespace (loopback only) and no Unix sockets; under
    /// Landlock alone: TCP `connect` and `bind` refused (ABI 4+), UDP, DNS and Unix sockets not
    /// covered.
    Deny,
    /// The only TCP connection a process may open is to pod's own proxy, which decides each
    /// host by the `network` rules (docs/permissions.md, "The network"). Held by Landlock ABI
    /// 4+ (TCP to the proxy's port only); UDP and DNS are not covered.
    Proxy,
}

impl NetworkAccess {
    /// The stricter of two settings: `deny` over `proxy` over `allow`.
    pub fn stricter(self, other: NetworkAccess) -> NetworkAccess {
        let rank = |n: NetworkAccess| match n {
            NetworkAccess::Allow => 0,
            NetworkAccess::Proxy => 1,
            NetworkAccess::Deny => 2,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// What the sandbox holds on this machine (docs/permissions.md, "The sandbox").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxInfo {
    /// The kind in force: `namespaces`, `landlock` (configured, or the fall-back where
    /// namespaces cannot be made) or `none` (`mode = "off"`).
    pub kind: SandboxKind,
    /// The kernel's Landlock ABI version, whatever the mode; 0 when it has none.
    pub abi: u32,
    /// True when every process a tool call or hook starts runs in a Landlock domain that holds
    /// the whole write boundary (ABI 3 or newer).
    pub enforced: bool,
    /// The network boundary in force: `deny` only when the kernel enforces it.
    pub network: NetworkAccess,
    /// True when the exec gate is on: every exec a `bash` call's processes make is stopped
    /// before its first instruction and decided on its real argv (docs/permissions.md, "The
    /// exec gate"). Absent in older pods' answers (read as false).
    #[serde(default)]
    pub exec_gate: bool,
    /// Every guarantee held, one sentence each; the ones configured and not held are logged
    /// and listed by `pod check`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guarantees: Vec<String>,
}

/// Where the pod's configuration came from (docs/manifest.md, "Layered configuration").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConfigurationInfo {
    /// The configuration files in effect, the project's `pod.toml` first, then the user's.
    pub files: Vec<String>,
    /// True when no file was found and the pod runs on its built-in defaults (reads inside the
    /// workspace allowed, everything else asks; the offline model).
    pub built_in_defaults: bool,
    /// The model provider: `offline`, `anthropic` or `openai`.
    pub provider: String,
    /// The model name sent to the provider, when one is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The managed files in effect (`/etc/pod/pod.toml`, `/etc/pod/pod.d/*.toml`), which
    /// nothing below can weaken; omitted when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed: Vec<String>,
    /// What the managed layer overrode or refused of the user's and the project's files, each
    /// with its `file:line`; omitted when nothing was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_overrides: Vec<crate::trust::IgnoredSetting>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: u32,
    pub pod_info: PeerInfo,
    pub session: SessionInfo,
    pub tools: Vec<ToolInfo>,
    pub permissions: PermissionsInfo,
    pub sandbox: SandboxInfo,
    /// The MCP servers of the session (omitted when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerInfo>,
    /// Where the configuration came from; absent from pods older than this field.
    #[serde(default)]
    pub configuration: ConfigurationInfo,
    /// Whether the project's configuration is trusted, and what of it is ignored until it is.
    pub workspace_trust: WorkspaceTrust,
    /// What of the pod's environment its tools' processes get (names only).
    pub environment: EnvironmentInfo,
}

/// One piece of user input to a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum InputItem {
    Text {
        text: String,
    },
    /// Activates a skill for this turn: its instructions enter the context and its
    /// `allowed-tools` restrict every tool call of the turn.
    Skill {
        name: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunParams {
    pub input: Vec<InputItem>,
}

/// Why a turn ended. `max_tokens`: the model's reply was cut off at its token limit
/// (`[model] max_tokens`). `refused`: a `user_prompt` hook refused the prompt (or failed, which
/// refuses it), so the model never saw it; `error` says which hook and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    Cancelled,
    MaxSteps,
    MaxTokens,
    /// The conversation passed `[model] max_context_bytes` even with older tool results elided,
    /// or the session's log passed `[pod] max_session_bytes`.
    MaxContext,
    Error,
    Refused,
}

/// Token counts reported by the model provider for a turn (zero for the offline model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub turn_id: String,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub usage: Usage,
}

/// Params of `cancel`, `history` and `shutdown`: an empty object. Whatever is sent is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema, Default)]
pub struct EmptyParams {}

impl<'de> Deserialize<'de> for EmptyParams {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<EmptyParams, D::Error> {
        serde::de::IgnoredAny::deserialize(de).map(|_| EmptyParams {})
    }
}

/// Result of `permissionReply` and `shutdown`: an empty object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
pub struct EmptyResult {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelResult {
    pub cancelled: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionReplyParams {
    pub request_id: String,
    pub decision: ReplyDecision,
    #[serde(default)]
    pub message: Option<String>,
    /// With `allow_once`: the input to run instead (the user edited the call before approving
    /// it). The rules decide it again (a deny still denies), and it is what runs.
    #[serde(default)]
    pub input: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResult {
    pub items: Vec<Item>,
}
