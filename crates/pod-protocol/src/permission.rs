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
    /// Line of the rule's `[[permissions.rule]]` header in its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The configuration file the rule is written in: the project's `pod.toml` or the user's
    /// configuration (docs/manifest.md, "Layered configuration").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
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
    /// True when the input is malformed for the tool (a missing or mistyped field): denied
    /// whatever the rules say, and `note` says what is wrong.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub invalid: bool,
    /// Why the subject is opaque or invalid, or why the default was tightened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where a subject line names a rule's place, for a rule that does not carry its file.
#[derive(Debug, Clone, Copy)]
pub enum RuleAt<'a> {
    /// `at pod.toml:14`.
    File(&'a str),
    /// `at line 14`.
    Line,
}

impl SubjectDecision {
    /// What decided this subject, in words: `rule 3 (bash "git *")` (with the action inside the
    /// parentheses when `action` is true), `default_action = "ask"` when the default is what it
    /// got, `the permission layer` when neither did (an input of the wrong type is denied, an
    /// opaque command asks, whatever the default says), and `no [permissions] section` when the
    /// layer is off. `default` is the manifest's `default_action` (`None`: the layer is off).
    ///
    /// The one renderer of a decision: the model's denial texts, `pod explain` and `pod chat`
    /// all put subjects into words through it.
    pub fn decided_by(&self, default: Option<Action>, action: bool) -> String {
        if self.invalid && self.rule.is_none() {
            return "the permission layer (a malformed input is denied whatever the rules say)"
                .to_string();
        }
        match (&self.rule, default) {
            (Some(rule), _) if action => format!(
                "rule {} ({} \"{}\" {})",
                rule.index, rule.tool, rule.pattern, self.action
            ),
            (Some(rule), _) => format!("rule {} ({} \"{}\")", rule.index, rule.tool, rule.pattern),
            (None, Some(d)) if d == self.action => format!("default_action = \"{d}\""),
            (None, Some(_)) => "the permission layer".to_string(),
            (None, None) => "no [permissions] section".to_string(),
        }
    }

    /// The subject as the model reads it in a denial: `rule 1 (bash "rm *" deny) for bash
    /// `rm -rf build`` and the note, if any.
    pub fn for_model(&self, default: Option<Action>) -> String {
        format!(
            "{} for {} `{}`{}",
            self.decided_by(default, true),
            self.tool,
            self.subject,
            self.note_suffix()
        )
    }

    /// The subject on one line for a person: `bash `git push`: ask by rule 5 (* "*") at
    /// pod.toml:36 [opaque] (note)`.
    pub fn line(&self, default: Option<Action>, at: RuleAt<'_>) -> String {
        let rule_file = self.rule.as_ref().and_then(|r| r.file.as_deref());
        let place = match (self.rule.as_ref().and_then(|r| r.line), rule_file, at) {
            (Some(line), Some(file), _) | (Some(line), None, RuleAt::File(file)) => {
                format!(" at {file}:{line}")
            }
            (Some(line), None, RuleAt::Line) => format!(" at line {line}"),
            (None, ..) => String::new(),
        };
        let opaque = if self.opaque { " [opaque]" } else { "" };
        format!(
            "{} `{}`: {} by {}{place}{opaque}{}",
            self.tool,
            self.subject,
            self.action,
            self.decided_by(default, false),
            self.note_suffix()
        )
    }

    fn note_suffix(&self) -> String {
        self.note
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    }
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
    /// Allow, and for the rest of the session every command matching the request's `prefixes`
    /// (`cargo test *`): offered only when the engine computed them.
    AllowPrefix,
    /// `allow_prefix`, kept: the request's `prefixes` are written as allow rules to a file of
    /// the user's, beside the user's configuration, for this project (never its `pod.toml`).
    AllowProject,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(rule: Option<RuleRef>, action: Action, opaque: bool) -> SubjectDecision {
        SubjectDecision {
            tool: "bash".into(),
            subject: "rm -rf build".into(),
            action,
            rule,
            opaque,
            invalid: false,
            note: None,
        }
    }

    #[test]
    fn one_renderer_for_the_model_explain_and_clients() {
        let rule = RuleRef {
            index: 1,
            tool: "bash".into(),
            pattern: "rm *".into(),
            line: Some(14),
            message: None,
            file: None,
        };
        let ruled = subject(Some(rule), Action::Deny, false);
        assert_eq!(
            ruled.for_model(Some(Action::Allow)),
            "rule 1 (bash \"rm *\" deny) for bash `rm -rf build`"
        );
        assert_eq!(
            ruled.line(Some(Action::Allow), RuleAt::File("pod.toml")),
            "bash `rm -rf build`: deny by rule 1 (bash \"rm *\") at pod.toml:14"
        );
        assert_eq!(
            ruled.line(None, RuleAt::Line),
            "bash `rm -rf build`: deny by rule 1 (bash \"rm *\") at line 14"
        );
        // An opaque command asks whatever the default says: the default is not named.
        let opaque = subject(None, Action::Ask, true);
        assert_eq!(
            opaque.line(Some(Action::Allow), RuleAt::Line),
            "bash `rm -rf build`: ask by the permission layer [opaque]"
        );
        let by_default = subject(None, Action::Ask, false);
        assert!(by_default
            .for_model(Some(Action::Ask))
            .starts_with("default_action = \"ask\" for bash"));
        assert!(subject(None, Action::Allow, false)
            .line(None, RuleAt::Line)
            .ends_with("allow by no [permissions] section"));
    }
}
