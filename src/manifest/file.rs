//! The manifest file format (`pod.toml`) as serde types: exactly what may be written, nothing
//! resolved. `schema/manifest.schema.json` is generated from these types, so their doc comments
//! are the schema's descriptions.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
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
    /// What a managed file (`/etc/pod/pod.toml`, `/etc/pod/pod.d/*.toml`) locks for every layer
    /// below it (docs/manifest.md, "Layers"). Only a managed file may hold it.
    pub managed: Option<ManagedSection>,
    /// The decision log (docs/audit.md). Only a managed file or the user's configuration may
    /// hold it.
    pub audit: Option<AuditSection>,
}

/// `[managed]`: the locks an administrator puts on the layers below.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct ManagedSection {
    /// Commands, hooks and MCP servers always run inside the sandbox, and pod refuses to start
    /// where the kernel cannot enforce it (`[sandbox] mode = "off"` below is overridden).
    pub require_sandbox: Option<bool>,
    /// The modes a session may start in or be switched to; default: every mode.
    pub allowed_modes: Option<Vec<crate::protocol::Mode>>,
    /// Only the managed files' `[[permissions.rule]]`s apply: the rules of the user's and the
    /// project's files, and the project grants, are refused.
    pub allow_managed_rules_only: Option<bool>,
    /// Only the managed files' hooks run.
    pub allow_managed_hooks_only: Option<bool>,
    /// Only the managed files' `network` rules allow or ask for a host: the network allow and
    /// ask rules of the user's and the project's files (and their project grants) are refused,
    /// their network deny rules still apply, and a host no managed rule allows is denied.
    pub allowed_domains_only: Option<bool>,
    /// When set, an MCP server of a lower layer (or a client's) starts only if an entry
    /// matches it.
    #[schemars(with = "Option<Vec<McpServerMatch>>")]
    pub allowed_mcp_servers: Option<Vec<Spanned<McpServerMatch>>>,
    /// An MCP server of a lower layer (or a client's) that an entry matches never starts.
    #[schemars(with = "Option<Vec<McpServerMatch>>")]
    pub denied_mcp_servers: Option<Vec<Spanned<McpServerMatch>>>,
}

/// Which MCP servers an `allowed_mcp_servers` / `denied_mcp_servers` entry matches: every field
/// given must match.
#[derive(Debug, Deserialize, JsonSchema, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct McpServerMatch {
    /// Wildmatch over the server's name, case-insensitive.
    pub name: Option<String>,
    /// Wildmatch over the server's command line: its program and arguments joined by spaces
    /// (`npx -y @modelcontextprotocol/server-filesystem *`). A `url` server has no command, so
    /// an entry with `command` never matches one.
    pub command: Option<String>,
    /// Wildmatch over a streamable HTTP server's `url` (`https://mcp.example.com/*`). A stdio
    /// server has no URL, so an entry with `url` never matches one.
    pub url: Option<String>,
}

/// `[audit]`: where the decision log goes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditSection {
    /// The log file (JSON lines), `~/` expanded, relative to the file's folder.
    pub path: String,
    /// Bytes the log may reach before it is rotated to `PATH.1` (one older file is kept).
    /// Default 64 MiB.
    pub max_bytes: Option<u64>,
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
    /// HTTP request timeout in seconds. Default 120; a request that timed out is retried once.
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
    /// For a `tool = "network"` rule: the HTTP methods it decides (`["GET", "HEAD"]`), for
    /// plain `http://` requests through the proxy and `web_fetch` (GET). Such a rule never
    /// decides a CONNECT tunnel (HTTPS), whose requests are inside TLS. Default: every request
    /// and tunnel.
    #[schemars(with = "Option<Vec<String>>")]
    pub methods: Option<Spanned<Vec<String>>>,
    /// Inputs this rule must decide and inputs it must not, checked at load.
    #[schemars(with = "Option<RuleExamples>")]
    pub examples: Option<Spanned<RuleExamples>>,
}

/// A rule's own tests: each `match` entry must be decided by this rule, as its action says; no
/// `not_match` entry may be decided by it. An entry is the rule's tool's input: a command line
/// for `bash`, a path for the others.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct RuleExamples {
    #[serde(rename = "match", default)]
    pub matches: Vec<String>,
    #[serde(default)]
    pub not_match: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillsSection {
    /// Folders holding `<name>/SKILL.md`, relative to the manifest's folder.
    pub directories: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    /// User hooks run after the built-in permission hook, in this order.
    #[serde(default)]
    #[schemars(with = "Vec<HookEntry>")]
    pub pre_tool_call: Vec<Spanned<HookEntry>>,
    /// Hooks that see each call's result after it ran, before the model does: they may keep
    /// it, replace its text, mark it an error or add a note (docs/hooks.md).
    #[serde(default)]
    #[schemars(with = "Vec<HookEntry>")]
    pub post_tool_call: Vec<Spanned<HookEntry>>,
    /// Hooks run when a session starts or is resumed: they may add context the model sees on
    /// every request of the session (docs/hooks.md). They take no `tools`.
    #[serde(default)]
    #[schemars(with = "Vec<HookEntry>")]
    pub session_start: Vec<Spanned<HookEntry>>,
    /// Hooks run before each user prompt goes to the model: they may add context or refuse
    /// the prompt; one that fails refuses it (docs/hooks.md). They take no `tools`.
    #[serde(default)]
    #[schemars(with = "Vec<HookEntry>")]
    pub user_prompt: Vec<Spanned<HookEntry>>,
    /// Hooks told about each denied call (by a rule, a person, a mode, a hook, a timeout):
    /// a notification whose answer is ignored (docs/hooks.md).
    #[serde(default)]
    #[schemars(with = "Vec<HookEntry>")]
    pub permission_denied: Vec<Spanned<HookEntry>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// The program and its arguments (resolved against the manifest's folder when relative).
    pub command: Vec<String>,
    /// Seconds before the hook is killed and counted as failed (a call denied, a result
    /// withheld, a prompt refused: docs/hooks.md). Default 10.
    pub timeout_secs: Option<u64>,
    /// Wildmatch patterns of tool names the hook applies to. Default: every tool. Only hooks
    /// about calls (`pre_tool_call`, `post_tool_call`, `permission_denied`) take it.
    pub tools: Option<Vec<String>>,
}

/// The kernel boundary around every process a tool call or a hook starts (docs/manifest.md).
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// namespaces (default): each call in namespaces of its own (bubblewrap) with a seccomp
    /// filter, falling back to Landlock where namespaces cannot be made; landlock: a Landlock
    /// domain and the seccomp filter only; off: processes run with the pod's own rights.
    pub mode: Option<SandboxMode>,
    /// true: the pod refuses to start when this machine cannot enforce the sandbox as
    /// configured; "namespaces": refuses unless calls run in namespaces; "landlock": refuses
    /// unless at least the Landlock write boundary holds. Default false (the pod starts, warns,
    /// and reports what holds).
    pub required: Option<RequiredSetting>,
    /// allow (default) or deny: deny gives each call an empty network namespace (loopback only:
    /// no TCP, UDP, DNS) and refuses Unix sockets; under Landlock alone, only TCP connect and
    /// bind are refused (ABI 4+).
    pub network: Option<NetworkAccess>,
    /// Extra folders processes may write in, besides `[scope].writable` and the session's
    /// `$TMPDIR`: relative to the workspace, absolute, or under `~` (the home folder).
    #[schemars(with = "Option<Vec<String>>")]
    pub writable: Option<Vec<Spanned<String>>>,
    /// An allow-list of what of the home folder commands, hooks and MCP servers may see: when
    /// set (even empty), `$HOME` is an empty read-only folder inside the sandbox with only these
    /// paths bound back, read-only (the workspace and writable folders stay as they are).
    /// Entries are absolute or under `~`. Needs the namespace sandbox.
    #[schemars(with = "Option<Vec<String>>")]
    pub readable: Option<Vec<Spanned<String>>>,
    /// The environment of commands, hooks and MCP servers beyond pod's base set (PATH, HOME,
    /// USER, LANG, LC_*, TERM, TZ, ...): variables of the pod's environment to pass, and values
    /// to set. Names that look like secrets (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`,
    /// `*CREDENTIAL*`, `AWS_*`, ...) pass only when the user's configuration names them exactly.
    pub env: Option<EnvSection>,
    /// true: every exec of a `bash` call's processes is stopped before its first instruction
    /// and decided on its real argv (the exec gate, docs/permissions.md); the pod refuses to
    /// start where ptrace is unavailable. false: off. Default: on where ptrace works.
    pub exec_gate: Option<bool>,
    /// The most processes and threads one call (a command, a hook, an MCP server) may have at
    /// once, counted by a pids cgroup: a fork past it fails with EAGAIN. Default 4096. Layered:
    /// the smaller of the user's and the project's; the managed layer's is a ceiling; an
    /// untrusted project may only lower it. Held where pod can make a pids cgroup (a delegated
    /// one on cgroup v2; `pod check` says).
    #[schemars(range(min = 1))]
    pub max_processes: Option<u32>,
    /// The most the session's `$TMPDIR` may hold, its calls, hooks and MCP servers together:
    /// bytes as an integer, or a string with a unit ("512M", "1G"; K, M, G and T are powers of
    /// 1024), from 1M to 1T. Default "1G". Under namespaces `$TMPDIR` is then a tmpfs of that
    /// size (in memory), and a write past it fails with ENOSPC. Layered: the smaller of the
    /// user's and the project's; an untrusted project may only lower it. Not held under
    /// Landlock or where each call makes namespaces of its own (`pod check` says).
    #[schemars(with = "Option<SizeSetting>")]
    pub max_tmpdir_size: Option<Spanned<toml::Value>>,
}

/// A size in the manifest: bytes, or a number with a unit (`"512M"`, `"1G"`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SizeSetting {
    /// Bytes.
    Bytes(u64),
    /// A whole number followed by K, M, G or T (powers of 1024; `KiB`, `MiB`, `GiB` and `TiB`
    /// too).
    Text(String),
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

/// How processes started by tool calls and hooks are confined, weakest first.
#[derive(
    Debug, Deserialize, Serialize, JsonSchema, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// No confinement: processes run with the pod's own rights.
    Off,
    /// A Landlock domain and the seccomp filter per call, where the kernel has Landlock.
    Landlock,
    /// Namespaces of its own per call (bubblewrap), the seccomp filter, and a fall-back to
    /// Landlock where namespaces cannot be made.
    #[default]
    Namespaces,
}

/// `[sandbox] required`: a boolean, or the level below which the pod refuses to start.
#[derive(Debug, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(untagged)]
pub enum RequiredSetting {
    /// true: everything configured must hold; false: nothing is required.
    All(bool),
    /// At least this level must hold.
    Level(RequiredLevel),
}

impl<'de> Deserialize<'de> for RequiredSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RequiredSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false, \"namespaces\" or \"landlock\"")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<RequiredSetting, E> {
                Ok(RequiredSetting::All(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RequiredSetting, E> {
                match v {
                    "namespaces" => Ok(RequiredSetting::Level(RequiredLevel::Namespaces)),
                    "landlock" => Ok(RequiredSetting::Level(RequiredLevel::Landlock)),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A level `[sandbox] required` names.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RequiredLevel {
    /// Calls run in namespaces of their own.
    Namespaces,
    /// At least Landlock's write boundary holds.
    Landlock,
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
    /// The URL of a streamable HTTP server (`https://…/mcp`), instead of `command`. pod
    /// connects to it from its own process, so its host must be allowed by the `network` rules.
    pub url: Option<String>,
    /// HTTP headers sent with every request to a `url` server (`Authorization = "Bearer …"`).
    /// Only in your own configuration or a managed file: a project's `headers` is a load error,
    /// so a project can never make pod send your credentials anywhere.
    pub headers: Option<BTreeMap<String, String>>,
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
