//! History items: what `history` returns and what the session log stores, one per line.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, DeniedBy, RuleRef, StopReason, SubjectDecision};

/// Who settled a permission decision recorded in history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// A `[[permissions.rule]]` entry (see the subjects for which).
    Rule,
    /// `default_action`.
    Default,
    /// No `[permissions]` section: the layer is off.
    Disabled,
    /// An `ask` with no approver connected. Spelled `failClosed`, as `askMode` spells it;
    /// logs written before that said `fail_closed`, which still reads.
    #[serde(rename = "failClosed", alias = "fail_closed")]
    FailClosed,
    Client,
    SessionGrant,
    Cancel,
    Timeout,
    Disconnect,
    Shutdown,
    /// The session's mode: `accept-edits` allowed an edit, `unattended` denied an ask.
    Mode,
}

/// A tool call's result: the same in history (`toolResult` item) and on the wire (`toolResult`
/// event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallResult {
    pub turn_id: String,
    pub call_id: String,
    pub is_error: bool,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_by: Option<DeniedBy>,
}

/// One entry of the session's history, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Item {
    UserMessage {
        turn_id: String,
        text: String,
    },
    /// A skill whose instructions entered this turn's context.
    SkillActivated {
        turn_id: String,
        name: String,
    },
    AssistantText {
        turn_id: String,
        text: String,
    },
    ToolCall {
        turn_id: String,
        /// The pod's id for the call, unique in the session.
        call_id: String,
        /// The model provider's id for the call, when it differs from `callId` (the provider
        /// repeated an id, or gave none); it is what the provider gets back with the result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_call_id: Option<String>,
        tool: String,
        input: serde_json::Value,
    },
    ToolResult(CallResult),
    /// The permission layer's final word on a call: `allow` or `deny`, and who settled it.
    PermissionDecision {
        turn_id: String,
        call_id: String,
        decision: Action,
        by: DecidedBy,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        subjects: Vec<SubjectDecision>,
    },
    /// An `allow_session` reply: these subjects of this tool no longer ask in this session.
    SessionGrant {
        tool: String,
        subjects: Vec<String>,
        /// Patterns of an `allow_prefix` reply (shell commands), besides exact subjects.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        prefixes: Vec<String>,
        /// The workspace the grant was given in: a resumed session restores it only there
        /// (absent in logs of older pods, whose grants are restored in any workspace).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workspace: Option<std::path::PathBuf>,
    },
    /// The user approved a call with an edited input (`permissionReply` with `input`): what ran.
    InputAmended {
        turn_id: String,
        call_id: String,
        input: serde_json::Value,
    },
    /// An exec one of a `bash` call's own shells made that the shell analysis did not predict
    /// (the exec gate saw it): an analysis bug, counted by `pod sessions` and `pod check`.
    AnalysisMismatch {
        turn_id: String,
        call_id: String,
        /// The exec's argv as one shell-quoted line.
        command: String,
        argv: Vec<String>,
    },
    /// One connection (a `CONNECT` tunnel) or plain-HTTP request a call's processes made
    /// through pod's network proxy (`[sandbox] network = "proxy"`), written when it ended, or
    /// when the call ended if it was still open. At most 200 per call; the rest are counted in
    /// one `networkConnectionsOmitted`.
    NetworkConnection {
        turn_id: String,
        call_id: String,
        /// The `network` subject the rules decided: the host, with `:port` unless the port is
        /// 80 or 443 (an unreadable target as it came, escaped).
        host: String,
        /// The port asked for (0 when the target was unreadable).
        port: u16,
        /// The HTTP method of a plain `http://` request; absent for a `CONNECT` tunnel, whose
        /// requests are inside TLS.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        method: Option<String>,
        /// The rules' word, an ask settled: `allow` or `deny`. An allowed connection may still
        /// have been refused after it (`refused`: `blocked-address`, `connect-failed`, …).
        decision: Action,
        /// Who settled the decision: `rule`, `default`, `disabled`, or for an ask `client`,
        /// `sessionGrant`, `mode`, `failClosed`, `timeout`, `cancel`, …; absent when no rule was
        /// consulted (an unreadable request, a host no DNS name can be).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<DecidedBy>,
        /// The rule that decided, with its file and line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<RuleRef>,
        /// Why nothing was connected, as the `x-proxy-error` the client got: `blocked-by-rule`,
        /// `blocked-by-ask`, `blocked-by-approval`, `invalid-host`, `blocked-address`,
        /// `resolve-failed`, `connect-failed`, `bad-request`, `limit`. Absent: connected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
        /// The refusal in words (what the client read in the `403` body), or a note on an
        /// allowed connection (closed when the call ended).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Bytes sent upstream (the forwarded request head included) and received back.
        bytes_up: u64,
        bytes_down: u64,
    },
    /// The connections of a call past the 200 that `networkConnection` items record.
    NetworkConnectionsOmitted {
        turn_id: String,
        call_id: String,
        count: u64,
    },
    /// The session's mode changed (`setMode`, ACP's `session/set_mode`, a chat command).
    ModeChanged {
        mode: super::Mode,
    },
    TurnEnded {
        turn_id: String,
        stop_reason: StopReason,
    },
    /// Context a `session_start` hook (no `turnId`: the model sees it on every request of the
    /// session) or a `user_prompt` hook (with the turn's prompt) added for the model.
    HookContext {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn_id: Option<String>,
        /// `session_start` or `user_prompt`.
        event: String,
        /// The hook: its command and manifest line.
        hook: String,
        text: String,
    },
    /// A `session_start` hook that failed: the session started without its context.
    HookFailed {
        /// `session_start`.
        event: String,
        /// What went wrong, naming the hook.
        error: String,
    },
    /// A `user_prompt` hook refused the turn's prompt (or failed, which refuses it): the prompt
    /// never reached the model and is not kept in history.
    PromptRefused {
        turn_id: String,
        /// Why, naming the hook.
        message: String,
    },
}
