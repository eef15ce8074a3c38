//! The manifest file format (`pod.toml`) as serde types: exactly what may be written, nothing
//! resolved. `schema/manifest.schema.json` is generated from these types, so their doc comments
//! are the schema's descriptions.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use crate::protocol::{Action, NetworkAccess};

/// A pod manifest.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    pub pod: Option<PodSection>,
    pub model: Option<ModelSection>,
    pub tools: Option<ToolsSection>,
    pub scope: Option<ScopeSection>,
    /// The permission layer. Absent: the layer is off and every tool call runs.
    #[schemars(with = "Option<PermissionsSection>")]
    pub permissions: Option<Spanned<PermissionsSection>>,
    pub skills: Option<SkillsSection>,
    pub hooks: Option<HooksSection>,
    pub sandbox: Option<SandboxSection>,
    /// MCP servers whose tools the model may call.
    pub mcp: Option<McpSection>,
}

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct PodSection {
    /// The pod's name, reported to clients.
    pub name: Option<String>,
    /// The tool root, relative to the manifest's folder. Default: the manifest's folder.
    pub workspace: Option<String>,
    /// Model requests per turn before the turn ends with `max_steps`. Default 50, at most 1000.
    pub max_steps: Option<u32>,
    /// Largest the session's log may grow: past it, no further model request is made (the turn
    /// ends with `max_context`). Default 536870912 (512 MiB).
    pub max_session_bytes: Option<u64>,
    /// The folder holding this pod's session logs (`sessions/<id>.jsonl`), relative to the
    /// manifest's folder. Default: `$XDG_STATE_HOME/pod/<workspace>-<hash>` (or
    /// `~/.local/state/pod/...`), outside the workspace. `pod serve --state-dir` overrides it.
    pub state_dir: Option<String>,
}

/// Which model answers.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// The embedded deterministic model (no network).
    #[default]
    Offline,
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI-compatible Chat Completions (also llama.cpp, Ollama, vLLM).
    Openai,
}

impl Provider {
    /// The name written in the manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Offline => "offline",
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    #[serde(default)]
    pub provider: Provider,
    /// Model name sent to the provider.
    pub model: Option<String>,
    /// API base URL (default: the provider's public endpoint).
    pub base_url: Option<String>,
    /// Environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// File holding the API key (relative to the manifest's folder).
    pub api_key_file: Option<String>,
    /// Upper bound of tokens per model response. Default 4096.
    pub max_tokens: Option<u32>,
    /// System prompt.
    pub system: Option<String>,
    /// Offline model only: a scenario file of scripted responses (relative to the manifest).
    pub scenario: Option<String>,
    /// HTTP request timeout in seconds. Default 300.
    pub timeout_secs: Option<u64>,
    /// Retries on 429 / 5xx / connection reset. Default 3.
    pub max_retries: Option<u32>,
    /// Largest model response: its text plus its tool calls' inputs, in bytes; a stream that
    /// goes past it ends the turn with an error. Default 8388608 (8 MiB).
    pub max_response_bytes: Option<u64>,
    /// Most tool calls in one model response; more end the turn with an error. Default 128.
    pub max_tool_calls: Option<u32>,
    /// Longest one model response may take, from sending the request to its last event
    /// (retries included, time spent waiting for a slow client excluded), in seconds.
    /// Default 1800.
    pub response_timeout_secs: Option<u64>,
    /// Most bytes of conversation sent to the model at each step; beyond it older tool results
    /// are elided (the model is told), and a conversation that still does not fit ends the turn
    /// with `max_context`. Default 8388608 (8 MiB).
    pub max_context_bytes: Option<u64>,
    /// Longest a response's stream may go without an event (bytes that are not events, such as
    /// keep-alive comments, do not count as progress), in seconds. Default 300.
    pub idle_timeout_secs: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsSection {
    /// Built-in tools the model may call: bash, read, file_write, edit, grep, glob. Default:
    /// all six.
    #[schemars(with = "Option<Vec<String>>")]
    pub enabled: Option<Vec<Spanned<String>>>,
    /// Most tool calls running at once (their hooks included); the others of the same response
    /// wait their turn. Default: twice the number of cores, between 4 and 64.
    pub max_parallel: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeSection {
    /// Folders the file tools may write in, relative to the workspace. Default: the workspace.
    pub writable: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionsSection {
    /// What a subject no rule matches gets: allow, deny or ask. Required.
    #[schemars(with = "Action")]
    pub default_action: Option<Spanned<Action>>,
    /// Seconds an `ask` waits for the client before it resolves as denied. Default: no limit.
    pub ask_timeout_secs: Option<u64>,
    /// The mode a session starts in: default, read-only, accept-edits, auto or unattended
    /// (docs/permissions.md, "Modes"). A project's file may only name a stricter one
    /// (read-only, unattended). Default: default.
    pub mode: Option<crate::protocol::Mode>,
    /// Rules in evaluation order; the first whose tool and pattern match decides.
    #[serde(default)]
    #[schemars(with = "Vec<RuleEntry>")]
    pub rule: Vec<Spanned<RuleEntry>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleEntry {
    /// Wildmatch over the tool name, case-insensitive (`*` = every tool).
    #[schemars(with = "String")]
    pub tool: Spanned<String>,
    /// Wildmatch over a subject of the call, case-sensitive. Default `*`.
    #[schemars(with = "Option<String>")]
    pub pattern: Option<Spanned<String>>,
    pub action: Action,
    /// Shown to the model when this rule denies.
    pub message: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillsSection {
    /// Folders holding `<name>/SKILL.md`, relative to the manifest's folder.
    pub directories: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    /// User hooks run after the built-in permission hook, in this order.
    #[serde(default)]
    #[schemars(with = "Vec<HookEntry>")]
    pub pre_tool_call: Vec<Spanned<HookEntry>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// The program and its arguments (resolved against the manifest's folder when relative).
    pub command: Vec<String>,
    /// Seconds before the hook is killed and the call denied. Default 10.
    pub timeout_secs: Option<u64>,
    /// Wildmatch patterns of tool names the hook applies to. Default: every tool.
    pub tools: Option<Vec<String>>,
}

/// The kernel boundary around every process a tool call or a hook starts (docs/manifest.md).
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// landlock (default): processes run in a Landlock domain where the kernel has it; off:
    /// they run with the pod's own rights.
    pub mode: Option<SandboxMode>,
    /// true: the pod refuses to start when the kernel cannot enforce the sandbox as configured.
    /// Default false (the pod starts, warns, and reports `enforced: false`).
    pub required: Option<bool>,
    /// allow (default) or deny: deny makes the kernel refuse TCP connect and bind (Landlock ABI
    /// 4+). UDP, DNS and Unix sockets are not covered.
    pub network: Option<NetworkAccess>,
    /// Extra folders processes may write in, besides `[scope].writable` and the session's
    /// `$TMPDIR`: relative to the workspace, absolute, or under `~` (the home folder).
    #[schemars(with = "Option<Vec<String>>")]
    pub writable: Option<Vec<Spanned<String>>>,
    /// The environment of commands, hooks and MCP servers beyond pod's base set (PATH, HOME,
    /// USER, LANG, LC_*, TERM, TZ, ...): variables of the pod's environment to pass, and values
    /// to set. Names that look like secrets (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`,
    /// `*CREDENTIAL*`, `AWS_*`, ...) pass only when the user's configuration names them exactly.
    pub env: Option<EnvSection>,
    /// true: every exec of a `bash` call's processes is stopped before its first instruction
    /// and decided on its real argv (the exec gate, docs/permissions.md); the pod refuses to
    /// start where ptrace is unavailable. false: off. Default: on where ptrace works.
    pub exec_gate: Option<bool>,
}

/// `[sandbox] env`.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct EnvSection {
    /// Names (wildmatch, case-insensitive) of the pod's variables to pass, such as `CARGO_*`.
    pub pass: Option<Vec<String>>,
    /// Variables to set, whatever the pod's environment holds.
    pub set: Option<BTreeMap<String, String>>,
}

/// How processes started by tool calls and hooks are confined.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// A Landlock domain per call, where the kernel has Landlock.
    #[default]
    Landlock,
    /// No confinement: processes run with the pod's own rights.
    Off,
}

/// Model Context Protocol servers (docs/manifest.md, "MCP servers").
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// The servers by name (`[mcp.servers.NAME]`): each tool TOOL of server NAME is offered to
    /// the model, and matched by rules, as `mcp__NAME__TOOL`. A name holds ASCII letters,
    /// digits, `_` and `-`, no `__`, and neither starts nor ends with `_`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, McpServerEntry>")]
    pub servers: BTreeMap<String, Spanned<McpServerEntry>>,
}

/// One MCP server: a program speaking MCP on its stdin and stdout (`command`), or a
/// streamable HTTP endpoint (`url`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerEntry {
    /// The program to start (stdio). A name without `/` is searched on PATH; a path with `/`
    /// starts at the manifest's folder. It runs inside the sandbox, like commands.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Option<Vec<String>>,
    /// Environment variables set for it, on top of the pod's own environment.
    pub env: Option<BTreeMap<String, String>>,
    /// Its working folder, relative to the manifest's folder. Default: the workspace. Relative
    /// paths in its tools' arguments are read from here.
    pub cwd: Option<String>,
    /// The URL of a streamable HTTP server, instead of `command`.
    pub url: Option<String>,
    /// false: the server is not started and its tools are not offered. Default true.
    pub enabled: Option<bool>,
    /// Seconds the server gets to start, answer `initialize` and list its tools. Default 30.
    pub startup_timeout_secs: Option<u64>,
    /// Seconds one call of its tools may take before it is cancelled. Default 120.
    pub tool_timeout_secs: Option<u64>,
    /// The default for this server's tool calls that no rule matches, by what a tool's
    /// annotations say (each absent entry: `[permissions] default_action`).
    pub default_action: Option<McpDefaultActions>,
}

/// Defaults by a tool's annotations: the server's word, trusted because this manifest names
/// the server.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpDefaultActions {
    /// Tools marked `readOnlyHint: true`.
    pub read_only: Option<Action>,
    /// Tools not read-only and marked `destructiveHint: false` (they only add).
    pub additive: Option<Action>,
    /// Every other tool, those without annotations included.
    pub destructive: Option<Action>,
}
