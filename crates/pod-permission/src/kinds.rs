//! Rules follow the kind of access, not only the tool's name.
//!
//! `edit` writes a file (and reads it first), `grep` reads files, `glob` lists them. So the rules
//! written for the plain tools of each kind also govern them: a `file_write` rule also decides
//! `edit`, a `read` rule also decides `edit`, `grep` and `glob`, besides the rules naming those
//! tools themselves. For a call, each path subject gets one extra subject per governing tool when
//! a rule of that tool (one that does not also name the called tool, such as `"*"`) matches it;
//! a governing tool whose rules say nothing adds nothing, so its default never applies twice.
//! The call's decision is the strictest as always: a `file_write "*.env" deny` denies `edit .env`
//! whatever the edit rules say.
//!
//! Inside a walk (`grep`, `glob`) each file the walk meets is a subject of its own: a file whose
//! first matching `read` rule (or rule of the walking tool) denies it is never searched and
//! never listed ([`Policy::withholding`]).
//!
//! Must not touch: subject extraction (`mod.rs`, `shell/`) or the file system.

use super::{Policy, Rule, Rules, Subject};
use crate::builtin::Builtin;
use pod_protocol::{Action, RuleRef, SubjectDecision};

/// The tools whose rules govern `tool`'s path subjects besides its own rules
/// ([`Builtin::governed_by`]); none for a tool that is not built in.
pub fn governing(tool: &str) -> &'static [Builtin] {
    Builtin::from_name(tool).map_or(&[], Builtin::governed_by)
}

/// Why a governing tool's rules apply, for explanations.
fn reason(kind: &str, tool: &str) -> String {
    let what = match kind {
        "file_write" => "write-kind",
        _ => "read-kind",
    };
    format!("{what} rule: {kind} rules also govern {tool}")
}

impl Rules {
    /// The first rule for `kind` that does not also name `tool`, whose pattern matches `text`.
    /// A rule naming both (such as `tool = "*"`) already decided `tool`'s own subject.
    pub(super) fn first_of_kind(&self, tool: &str, kind: &str, text: &str) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.tool.matches(kind) && !r.tool.matches(tool) && r.pattern.matches(text))
    }

    /// The first rule whose tool matches `tool` and whose pattern matches `text`.
    fn first_of(&self, tool: &str, text: &str) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.tool.matches(tool) && r.pattern.matches(text))
    }
}

/// The extra subjects of a call of `tool`: for each of its clean path subjects, one per
/// governing tool whose rules match it.
pub(super) fn governed(
    rules: Option<&Rules>,
    tool: &str,
    subjects: &[Subject],
) -> Vec<SubjectDecision> {
    let (Some(rules), kinds) = (rules, governing(tool)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for s in subjects
        .iter()
        .filter(|s| s.tool == tool && s.problem.is_none())
    {
        for kind in kinds.iter().map(|b| b.name()) {
            if let Some(rule) = rules.first_of_kind(tool, kind, &s.text) {
                out.push(SubjectDecision {
                    tool: kind.to_string(),
                    subject: s.text.clone(),
                    action: rule.spec.action,
                    rule: Some(rule.reference()),
                    opaque: false,
                    invalid: false,
                    note: Some(reason(kind, tool)),
                });
            }
        }
    }
    out
}

impl Policy {
    /// The rule that keeps a file a walk of `tool` meets (`grep` searching, `glob` listing) out
    /// of its result: the first rule matching the file's path (`text`, as rules see paths) among
    /// the rules of `tool` itself or of a governing tool, when that rule denies. Defaults never
    /// withhold: the walk itself was allowed.
    pub fn withholding(&self, tool: &str, text: &str) -> Option<RuleRef> {
        let rules = self.rules.as_ref()?;
        std::iter::once(tool)
            .chain(governing(tool).iter().map(|b| b.name()))
            .filter_map(|t| rules.first_of(t, text))
            .find(|r| r.spec.action == Action::Deny)
            .map(Rule::reference)
    }

    /// The first rule of `tool` matching `text` that denies it, if that is the rule deciding it;
    /// used to find the files a `read` rule denies.
    pub fn denying_rule(&self, tool: &str, text: &str) -> Option<RuleRef> {
        let rule = self.rules.as_ref()?.first_of(tool, text)?;
        (rule.spec.action == Action::Deny).then(|| rule.reference())
    }

    /// True when some rule for `tool` denies: without one, no file needs checking.
    pub fn has_deny_rules(&self, tool: &str) -> bool {
        self.rules.as_ref().is_some_and(|rules| {
            rules
                .rules
                .iter()
                .any(|r| r.spec.action == Action::Deny && r.tool.matches(tool))
        })
    }

    /// Absolute path patterns of the deny rules for `tool` (for the hard-link walk, which
    /// visits the folders they name besides the workspace).
    pub fn deny_patterns(&self, tool: &str) -> Vec<String> {
        self.rules
            .as_ref()
            .map(|rules| {
                rules
                    .rules
                    .iter()
                    .filter(|r| r.spec.action == Action::Deny && r.tool.matches(tool))
                    .map(|r| r.spec.pattern.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::RuleSpec;
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn policy(rules: &[(&str, &str, Action)], default: Action) -> Policy {
        let specs = rules
            .iter()
            .map(|(tool, pattern, action)| RuleSpec::new(*tool, *pattern, *action))
            .collect();
        let rules = Rules::compile(default, specs).unwrap();
        Policy::new(Some(rules), PathBuf::from("/w"))
    }

    #[test]
    fn a_write_rule_denies_edit_whatever_the_edit_rules_say() {
        let p = policy(
            &[
                ("edit", "*", Action::Allow),
                ("file_write", "*.env", Action::Deny),
                ("*", "*", Action::Ask),
            ],
            Action::Allow,
        );
        let d = p.decide("edit", &json!({"path": ".env"}));
        assert_eq!(d.decision, Action::Deny, "{d:#?}");
        assert!(d
            .subjects
            .iter()
            .any(|s| s.tool == "file_write" && s.rule.as_ref().is_some_and(|r| r.index == 2)));
        // A catch-all rule naming both tools does not add a second subject: the edit allow
        // stands for paths no write rule of its own names.
        let d = p.decide("edit", &json!({"path": "src/a.rs"}));
        assert_eq!(d.decision, Action::Allow, "{d:#?}");
        assert_eq!(d.subjects.len(), 1);
    }

    #[test]
    fn read_rules_govern_grep_glob_and_edit_roots() {
        let p = policy(&[("read", "secrets/*", Action::Deny)], Action::Allow);
        for tool in ["grep", "glob", "edit"] {
            let d = p.decide(tool, &json!({"path": "secrets/key", "pattern": "x"}));
            assert_eq!(d.decision, Action::Deny, "{tool}: {d:#?}");
        }
        assert_eq!(
            p.decide("grep", &json!({"pattern": "x"})).decision,
            Action::Allow
        );
        assert_eq!(
            p.decide("file_write", &json!({"path": "secrets/key"}))
                .decision,
            Action::Allow
        );
    }

    #[test]
    fn a_walk_withholds_what_read_rules_deny_in_first_match_order() {
        let p = policy(
            &[
                ("read", "config/public.env", Action::Allow),
                ("read", "*.env", Action::Deny),
                ("grep", "vendor/*", Action::Deny),
                ("*", "*", Action::Ask),
            ],
            Action::Deny,
        );
        assert_eq!(p.withholding("grep", ".env").map(|r| r.index), Some(2));
        assert_eq!(p.withholding("grep", "config/public.env"), None);
        assert_eq!(p.withholding("grep", "src/main.rs"), None);
        assert_eq!(
            p.withholding("grep", "vendor/x.rs").map(|r| r.index),
            Some(3)
        );
        assert_eq!(p.withholding("glob", "vendor/x.rs"), None);
        assert_eq!(p.withholding("glob", "a/b.env").map(|r| r.index), Some(2));
    }
}
