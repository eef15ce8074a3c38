//! Workspace trust on the wire: whether a project's configuration is in force, what of it is
//! ignored until its user trusts the folder, and the decision a client applies
//! (docs/permissions.md, "Trust"). The shape follows the ACP workspace-trust proposal
//! (`status`, `availableDecisions`, `trust/apply`), with what pod ignores named by setting and
//! place rather than by path alone.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether the project's configuration is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrustStatus {
    /// Its user trusted the folder, and nothing it names changed since.
    Trusted,
    /// Trusted for this process only (`pod serve --trust`, or a `trust_session` decision).
    Session,
    /// Not trusted (or changed since it was): whatever of it would run code, send data or widen
    /// what the user's configuration allows is ignored; its restrictions apply.
    Untrusted,
}

/// A decision a client may apply with `trust/apply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrustDecision {
    /// Trust the folder from now on (kept in the user's state folder, pinned to the content of
    /// the files that define what runs).
    TrustCwd,
    /// Trust it for this process only.
    TrustSession,
    /// Keep it untrusted; remembered, so the client need not ask again until it changes.
    Decline,
}

/// One setting that is ignored: the project's while its folder is untrusted (`workspaceTrust`), or
/// a lower layer's that the managed layer overrode or refused (`configuration.managedOverrides`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IgnoredSetting {
    /// What it would do, in words: `starts MCP server "helper": sh -c …`.
    pub what: String,
    /// Where it is written: `file:line`.
    #[serde(rename = "where")]
    pub place: String,
}

/// The trust state of the session's project (`initialize`, `trust/apply`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTrust {
    pub status: TrustStatus,
    /// The folder whose trust this is (the project manifest's folder); absent when there is no
    /// project configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// What is ignored because the folder is untrusted; empty when nothing is (a project that
    /// only restricts needs no trust).
    #[serde(default)]
    pub ignored: Vec<IgnoredSetting>,
    /// Files that changed since the folder was trusted (relative to it), which is why it is
    /// untrusted again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// True when its user declined to trust this content (a client need not ask again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub declined: bool,
    /// The decisions `trust/apply` accepts now; empty when there is nothing to decide.
    #[serde(default)]
    pub available_decisions: Vec<TrustDecision>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustApplyParams {
    pub decision: TrustDecision,
    /// The folder the client asked its user about; when given, it must be the session's
    /// (`workspaceTrust.folder`), so a decision about another folder is refused.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// The environment tool processes start with (docs/permissions.md, "Secrets"): names only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentInfo {
    /// Variables of the pod's environment that commands, hooks and MCP servers get.
    pub passed: Vec<String>,
    /// Variables of the pod's environment they do not get.
    pub filtered: Vec<String>,
}
