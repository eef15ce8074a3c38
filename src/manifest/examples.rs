//! Rules that carry their own tests: a rule's `examples = { match = [...], not_match = [...] }`,
//! decided at load with the rules of the rule's own file (docs/permissions.md, "Examples").
//!
//! Owns: turning an example into its tool's input and saying whether the rule decided it as it
//! says. Must not touch: deciding (that is `Policy::decide`'s, called here as everywhere).

use std::path::Path;

use super::RuleExample;
use crate::builtin::{Builtin, SubjectKind};
use crate::permission::Policy;
use crate::protocol::{Action, Decision};

/// The input of `tool` an example stands for: a command line for `bash`, a path for the others.
pub fn input(tool: Builtin, example: &str) -> serde_json::Value {
    match tool.subject_kind() {
        SubjectKind::Shell => serde_json::json!({ "command": example }),
        _ => serde_json::json!({ "path": example }),
    }
}

/// What decided a call, for messages: the first subject's rule (`file:line`) or the default.
pub fn decided_by(decision: &Decision) -> String {
    let deciding = decision
        .subjects
        .iter()
        .find(|s| s.action == decision.decision)
        .or(decision.subjects.first());
    match deciding.and_then(|s| s.rule.as_ref()) {
        Some(rule) => match (&rule.file, rule.line) {
            (Some(file), Some(line)) => format!("the rule at {file}:{line}"),
            _ => format!("rule {} ({} \"{}\")", rule.index, rule.tool, rule.pattern),
        },
        None => "the default".into(),
    }
}

/// Whether the rule at `index` (0-based) of `policy`'s rules decides every `match` example as
/// its action says and no `not_match` example; the problem, naming the example, when not.
pub fn check(policy: &Policy, index: usize, example: &RuleExample) -> Result<(), String> {
    let Some(tool) = Builtin::from_name(&example.tool) else {
        return Err(format!(
            "examples need a rule naming one built-in tool ({}); this rule's tool is \"{}\"",
            Builtin::names().join(", "),
            example.tool
        ));
    };
    let by_this = |d: &Decision| {
        d.subjects
            .iter()
            .any(|s| s.rule.as_ref().is_some_and(|r| r.index == index + 1))
    };
    for text in &example.matches {
        let decision = policy.decide(tool.name(), &input(tool, text));
        if !by_this(&decision) || decision.decision != example.action {
            return Err(format!(
                "match example \"{text}\" is decided {} by {}, not {} by this rule",
                word(decision.decision),
                decided_by(&decision),
                word(example.action)
            ));
        }
    }
    for text in &example.not_match {
        let decision = policy.decide(tool.name(), &input(tool, text));
        if by_this(&decision) {
            return Err(format!(
                "not_match example \"{text}\" is decided {} by this rule",
                word(decision.decision)
            ));
        }
    }
    Ok(())
}

/// The policy a file's examples are decided with: its own rules, nothing protected.
pub fn policy(rules: &crate::permission::Rules, workspace: &Path) -> Policy {
    Policy::new(Some(rules.clone()), workspace.to_path_buf())
}

fn word(action: Action) -> &'static str {
    match action {
        Action::Allow => "allow",
        Action::Deny => "deny",
        Action::Ask => "ask",
    }
}
