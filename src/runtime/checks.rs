//! The check chain every tool call passes before it runs, as PreToolCall hooks in the spec's
//! order: skill restriction, the built-in permission hook (always first of the hooks, registered
//! by the pod itself, never removable by configuration), user hooks, scope.
//!
//! A check continues, denies with a text naming itself (and, for rules, the rule's index,
//! pattern and message), or, for the permission hook only, asks. The texts to the model live
//! here so that every denial reads the same way.

use crate::hooks::UserHook;
use crate::protocol::{Action, Decision, DeniedBy, SubjectDecision};
use crate::skills::Skill;

/// One PreToolCall hook of the chain.
pub(super) enum Check<'a> {
    Skill(&'a Skill),
    Permission,
    User(&'a UserHook),
    Scope,
}

/// What the chain decided for a call that does not run.
#[derive(Debug, Clone)]
pub(super) struct Denial {
    pub by: DeniedBy,
    pub text: String,
}

impl Denial {
    pub fn new(by: DeniedBy, text: String) -> Denial {
        Denial { by, text }
    }
}

/// `` `subject` `` plus which rule or default decided it. A subject no rule decided is named
/// after the default only when the default is what it got: an input of the wrong type is
/// denied, and an opaque command asks, whatever the default says.
fn describe(s: &SubjectDecision, default: Option<Action>) -> String {
    let who = match (&s.rule, default) {
        (Some(r), _) => format!(
            "rule {} ({} \"{}\" {})",
            r.index, r.tool, r.pattern, s.action
        ),
        (None, Some(d)) if d == s.action => format!("default_action = \"{d}\""),
        (None, _) => "the permission layer".to_string(),
    };
    let note = s
        .note
        .as_deref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    format!("{who} for {} `{}`{note}", s.tool, s.subject)
}

/// The subjects that produced the call's decision (the strictest ones).
fn deciding(decision: &Decision) -> impl Iterator<Item = &SubjectDecision> {
    decision
        .subjects
        .iter()
        .filter(move |s| s.action == decision.decision)
}

/// Text for a call the rules (or the default) deny.
pub(super) fn denied_text(decision: &Decision, default: Option<Action>) -> String {
    let mut parts: Vec<String> = deciding(decision).map(|s| describe(s, default)).collect();
    parts.dedup();
    let messages: Vec<&str> = deciding(decision)
        .filter_map(|s| s.rule.as_ref().and_then(|r| r.message.as_deref()))
        .collect();
    let mut text = format!("permission denied: {}", parts.join("; "));
    for m in messages {
        text.push('\n');
        text.push_str(m);
    }
    text
}

/// Human-readable reason of a permission request: which subjects asked, and why.
pub(super) fn ask_reason(decision: &Decision, default: Option<Action>) -> String {
    let parts: Vec<String> = deciding(decision).map(|s| describe(s, default)).collect();
    format!("approval required: {}", parts.join("; "))
}

/// Text for an ask with no approver connected.
pub(super) fn fail_closed_text(decision: &Decision, default: Option<Action>) -> String {
    format!(
        "permission denied: {}, but no approver is connected (the client did not advertise \
         capabilities.approval), so the call was not run",
        ask_reason(decision, default)
    )
}

pub(super) fn refused_text(message: Option<&str>) -> String {
    match message {
        Some(m) if !m.trim().is_empty() => format!("permission denied by the user: {m}"),
        _ => "permission denied by the user".to_string(),
    }
}

pub(super) fn timeout_text(secs: u64) -> String {
    format!("permission denied: nobody answered the approval request within {secs} s")
}

pub(super) const CANCELLED_TEXT: &str =
    "cancelled: the turn was cancelled before this call finished";
pub(super) const DISCONNECT_TEXT: &str =
    "permission denied: the client disconnected before answering the approval request";
pub(super) const SHUTDOWN_TEXT: &str =
    "permission denied: the pod shut down before the approval request was answered";
