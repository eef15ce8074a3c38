//! The permission vocabulary shared by the wire, the session log and `pod explain --json`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a rule (or the default) says about a subject. Ordered by strictness:
/// `Allow < Ask < Deny`, so the decision of a call is the maximum over its subjects.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Ask,
    Deny,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rule that decided a subject: its 1-based position among the manifest's
/// `[[permissions.rule]]` entries, its `tool` and `pattern`, and where it is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleRef {
    pub index: usize,
    pub tool: String,
    pub pattern: String,
    /// Line of the rule's `[[permissions.rule]]` header in the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The rule's `message`, shown to the model when it denies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The decision for one subject of a call, with what decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubjectDecision {
    /// The tool whose rules were consulted: the called tool, or `file_write` / `read` for a
    /// shell redirection target.
    pub tool: String,
    /// The normalized subject text the patterns were matched against.
    pub subject: String,
    pub action: Action,
    /// The rule that decided, or `null` when `defaultAction` did.
    pub rule: Option<RuleRef>,
    /// True when the subject's effect cannot be read statically (see permissions.md).
    pub opaque: bool,
    /// Why the subject is opaque, or why the default was tightened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The permission layer's verdict on one tool call: the strictest of its subjects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub decision: Action,
    pub subjects: Vec<SubjectDecision>,
}

/// Which check of the chain produced an error result instead of running the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeniedBy {
    /// A rule or the default said `deny`, or an `ask` failed closed.
    Permission,
    /// An `ask` was refused, timed out, cancelled or lost its approver.
    Approval,
    Hook,
    Skill,
    Scope,
}

/// The decisions a client may send in `permissionReply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplyDecision {
    AllowOnce,
    AllowSession,
    Deny,
}

/// How a permission request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Resolution {
    Allow,
    Deny,
}

/// Who ended a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedBy {
    Client,
    SessionGrant,
    Cancel,
    Timeout,
    Disconnect,
    Shutdown,
}
