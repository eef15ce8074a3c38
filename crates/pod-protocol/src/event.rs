//! The `event` notification: everything the pod tells the client while a turn runs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    CallResult, ReplyDecision, Resolution, ResolvedBy, StopReason, SubjectDecision,
    ToolAnnotations, Usage,
};

/// What the pod is doing, as reported by `status` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PodState {
    Idle,
    Running,
    AwaitingPermission,
}

/// A call waiting for the client's approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    pub request_id: String,
    pub turn_id: String,
    pub call_id: String,
    pub tool: String,
    pub input: serde_json::Value,
    /// One entry per checked subject, each with its own decision and deciding rule.
    pub subjects: Vec<SubjectDecision>,
    /// Human-readable: which subjects asked and which rule (or default) asked.
    pub reason: String,
    /// The decisions the client may send in `permissionReply`.
    pub options: Vec<ReplyDecision>,
    /// The patterns `allow_prefix` adds (the program and its subcommand, then `*`), when it is
    /// offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<String>,
    /// RFC 3339 time when the request resolves as denied by timeout, or null.
    pub expires_at: Option<String>,
    /// For an MCP tool, its annotations as its server lists them (omitted when it has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
}

/// The params of an `event` notification, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    TurnStarted {
        turn_id: String,
    },
    TextDelta {
        turn_id: String,
        text: String,
    },
    ToolCall {
        turn_id: String,
        call_id: String,
        tool: String,
        input: serde_json::Value,
    },
    PermissionRequest(PermissionRequest),
    PermissionResolved {
        request_id: String,
        turn_id: String,
        call_id: String,
        decision: Resolution,
        by: ResolvedBy,
    },
    ToolResult(CallResult),
    TurnEnded {
        turn_id: String,
        stop_reason: StopReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default)]
        usage: Usage,
    },
    Status {
        state: PodState,
        /// The session's mode (absent from a status a failed turn's clean-up sends).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<super::Mode>,
    },
}
