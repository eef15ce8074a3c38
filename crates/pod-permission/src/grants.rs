//! Session grants: what `allow_session` replies have allowed for the rest of the session.
//!
//! A grant is keyed by the tool whose rules asked and the exact normalized subject text. It only
//! ever answers an `ask`: a subject a rule or the default denies stays denied.
//!
//! Grants read back from a session log are re-validated ([`SessionGrants::restore`]): the log is
//! a file, and a grant is only restored when the subject could have been granted under the rules
//! in force now.

use std::collections::HashSet;

use super::{prefix, Pattern, Policy, SubjectKind};
use pod_protocol::{Action, Decision, SubjectDecision};

/// A grant of a session log that resume did not restore, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedGrant {
    pub tool: String,
    pub subject: String,
    pub reason: String,
}

#[derive(Debug, Clone, Default)]
pub struct SessionGrants {
    granted: HashSet<(String, String)>,
    /// `allow_prefix` grants of shell commands: the pattern as shown, and compiled.
    prefixes: Vec<(String, Pattern)>,
}

impl SessionGrants {
    /// True when `decision` is an `ask` and every subject that asked is granted. A grant never
    /// covers an opaque subject: the same text can be opaque in another line (`notes` after
    /// `ln -sf .env notes`), and what the engine cannot read is never allowed.
    pub fn covers(&self, decision: &Decision) -> bool {
        decision.decision == Action::Ask
            && decision
                .subjects
                .iter()
                .filter(|s| s.action == Action::Ask)
                .all(|s| !s.opaque && self.contains(&s.tool, &s.subject))
    }

    /// Whether a prefix grant covers `subject` of `tool` (shell subjects only).
    fn prefixed(&self, tool: &str, subject: &str) -> bool {
        tool.eq_ignore_ascii_case("bash") && self.prefixes.iter().any(|(_, p)| p.matches(subject))
    }

    /// The patterns `allow_prefix` would add for `decision`: one per asking subject, each a
    /// shell command whose program takes a prefix (`prefix.rs`); `None` when any asking subject
    /// is not one, or is opaque.
    pub fn prefixes_for(decision: &Decision) -> Option<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for s in decision.subjects.iter().filter(|s| s.action == Action::Ask) {
            if s.opaque || !s.tool.eq_ignore_ascii_case("bash") {
                return None;
            }
            let p = prefix::prefix(&s.subject)?;
            if !out.contains(&p) {
                out.push(p);
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// Adds prefix grants (patterns [`SessionGrants::prefixes_for`] produced); returns the new
    /// ones.
    pub fn grant_prefixes(&mut self, patterns: &[String]) -> Vec<String> {
        let mut added = Vec::new();
        for p in patterns {
            if prefix::is_prefix(p) && !self.prefixes.iter().any(|(q, _)| q == p) {
                self.prefixes.push((p.clone(), Pattern::new(p)));
                added.push(p.clone());
            }
        }
        added
    }

    pub fn contains(&self, tool: &str, subject: &str) -> bool {
        self.granted
            .contains(&(tool.to_ascii_lowercase(), subject.to_string()))
            || self.prefixed(tool, subject)
    }

    /// Records the asking subjects of `decision`, grouped by tool, and returns them (for the
    /// session log).
    pub fn grant(&mut self, decision: &Decision) -> Vec<(String, Vec<String>)> {
        let mut by_tool: Vec<(String, Vec<String>)> = Vec::new();
        for s in decision
            .subjects
            .iter()
            .filter(|s| s.action == Action::Ask && !s.opaque)
        {
            self.insert(&s.tool, &s.subject);
            match by_tool.iter_mut().find(|(t, _)| *t == s.tool) {
                Some((_, list)) => list.push(s.subject.clone()),
                None => by_tool.push((s.tool.clone(), vec![s.subject.clone()])),
            }
        }
        by_tool
    }

    pub fn insert(&mut self, tool: &str, subject: &str) {
        self.granted
            .insert((tool.to_ascii_lowercase(), subject.to_string()));
    }
}

impl SessionGrants {
    /// The grants of a resumed session: each `(tool, subject)` is restored only when the subject
    /// could have been granted now. It must be what the tool's input yields as one subject of
    /// its own (a shell grant must read as exactly that one command), and it must not be opaque
    /// or unparsed (never offered a session grant), denied by a rule or the default, or a write
    /// of pod's own files. The others are returned with the reason.
    pub fn restore<'a>(
        policy: &Policy,
        grants: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> (SessionGrants, Vec<DroppedGrant>) {
        let mut restored = SessionGrants::default();
        let mut dropped = Vec::new();
        for (tool, subject) in grants {
            match grantable(policy, tool, subject) {
                Ok(()) => restored.insert(tool, subject),
                Err(reason) => dropped.push(DroppedGrant {
                    tool: tool.to_string(),
                    subject: subject.to_string(),
                    reason,
                }),
            }
        }
        (restored, dropped)
    }

    /// Restores the prefix grants of a session log: a pattern is kept only when it is one the
    /// engine produces; the others are returned with the reason.
    pub fn restore_prefixes<'a>(
        &mut self,
        patterns: impl IntoIterator<Item = &'a str>,
    ) -> Vec<DroppedGrant> {
        let mut dropped = Vec::new();
        for p in patterns {
            if prefix::is_prefix(p) {
                self.grant_prefixes(&[p.to_string()]);
            } else {
                dropped.push(DroppedGrant {
                    tool: "bash".into(),
                    subject: p.to_string(),
                    reason: "it is not a prefix pod grants (the program and its subcommand, then \
                             `*`)"
                        .into(),
                });
            }
        }
        dropped
    }
}

/// Why `subject` could not have been granted for `tool` under `policy`, if it could not.
fn grantable(policy: &Policy, tool: &str, subject: &str) -> Result<(), String> {
    let tool = tool.to_ascii_lowercase();
    let kind = SubjectKind::of(&tool);
    let input = match kind {
        SubjectKind::Shell => serde_json::json!({ "command": subject }),
        SubjectKind::Path | SubjectKind::SearchRoot => serde_json::json!({ "path": subject }),
        // An MCP call's subjects depend on its server's annotations, not known before the
        // servers start: its grants are asked again rather than guessed at.
        SubjectKind::Mcp => {
            return Err(
                "grants of MCP tools are not restored (their decision depends on the tool's \
                 annotations, known only once the server runs)"
                    .into(),
            )
        }
        // A network grant is of a host and port, as its subject reads.
        SubjectKind::Network => {
            let (host, port) = match subject.rsplit_once(':') {
                Some((h, p)) if !h.ends_with(':') && p.bytes().all(|b| b.is_ascii_digit()) => {
                    (h, p.parse::<u16>().map_err(|e| e.to_string())?)
                }
                _ => (subject, 443),
            };
            serde_json::json!({ "host": host, "port": port })
        }
        SubjectKind::Url => {
            return Err("a web_fetch call's subjects are network subjects".into());
        }
        SubjectKind::Nothing => return Err("a plan call has no subjects to grant".into()),
        SubjectKind::Json => match serde_json::from_str::<serde_json::Value>(subject) {
            Ok(value @ serde_json::Value::Object(_)) => value,
            _ => return Err("it is not the JSON input of a call of this tool".into()),
        },
    };
    let decision = policy.decide(&tool, &input);
    let own: Vec<&SubjectDecision> = decision
        .subjects
        .iter()
        .filter(|s| s.tool.eq_ignore_ascii_case(&tool) && s.subject == subject)
        .collect();
    let found = match (kind, own.as_slice()) {
        // Exactly this one command (the files it writes are subjects of their own tools).
        (SubjectKind::Shell, [one])
            if decision
                .subjects
                .iter()
                .filter(|s| s.tool.eq_ignore_ascii_case(&tool))
                .count()
                == 1 =>
        {
            *one
        }
        (SubjectKind::Shell, _) => {
            return Err(format!(
                "as a command line it reads as {} subject(s), not as exactly this one command",
                decision
                    .subjects
                    .iter()
                    .filter(|s| s.tool.eq_ignore_ascii_case(&tool))
                    .count()
            ))
        }
        (_, [first, ..]) => *first,
        (_, []) => return Err("it is not a subject this tool's input yields".into()),
    };
    if found.opaque {
        return Err(
            "its effect cannot be read statically (opaque or unparsed), which is never granted for a session"
                .into(),
        );
    }
    if found.action == Action::Deny {
        return Err(match &found.rule {
            Some(r) => format!(
                "rule {} ({} \"{}\" deny) now denies it",
                r.index, r.tool, r.pattern
            ),
            None => "the rules now deny it".into(),
        });
    }
    if policy.protects(found) {
        return Err(
            "it writes pod's own configuration or state, which is never granted for a session"
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Protected, ProtectedPath, RuleSpec, Rules};
    use super::*;
    use std::path::PathBuf;

    fn policy() -> Policy {
        let spec = |tool: &str, pattern: &str, action| RuleSpec::new(tool, pattern, action);
        let rules = Rules::compile(
            Action::Ask,
            vec![
                spec("bash", "rm *", Action::Deny),
                spec("read", "*.env", Action::Deny),
            ],
        )
        .unwrap();
        Policy::new(Some(rules), PathBuf::from("/w")).with_protected(Protected::new(vec![
            ProtectedPath {
                path: PathBuf::from("/w/pod.toml"),
                what: "the manifest".into(),
            },
        ]))
    }

    #[test]
    fn only_grants_that_could_have_been_made_are_restored() {
        let p = policy();
        let grants = [
            ("bash", "touch a"),
            ("BASH", "git push"),
            ("file_write", "out.txt"),
            ("read", "notes/a.md"),
            ("bash", "eval touch pwned"),
            ("bash", "touch a; touch b"),
            ("bash", "rm -rf victim"),
            ("bash", "git status\nrm -rf victim\n)"),
            ("read", ".env"),
            ("file_write", "pod.toml"),
            ("edit", "/w/pod.toml"),
            ("bash", "python3 -c 'import os'"),
            ("mcp_tool", "not json"),
        ];
        let (restored, dropped) = SessionGrants::restore(&p, grants);
        let kept: Vec<(&str, &str)> = grants
            .iter()
            .copied()
            .filter(|(t, s)| restored.contains(t, s))
            .collect();
        assert_eq!(
            kept,
            vec![
                ("bash", "touch a"),
                ("BASH", "git push"),
                ("file_write", "out.txt"),
                ("read", "notes/a.md"),
            ]
        );
        assert_eq!(dropped.len(), grants.len() - kept.len(), "{dropped:#?}");
        let reason = |subject: &str| {
            dropped
                .iter()
                .find(|d| d.subject == subject)
                .map(|d| d.reason.clone())
                .unwrap_or_default()
        };
        assert!(reason("eval touch pwned").contains("opaque"));
        assert!(reason("touch a; touch b").contains("2 subject(s)"));
        assert!(reason("rm -rf victim").contains("rule 1"));
        assert!(reason(".env").contains("rule 2"));
        assert!(reason("pod.toml").contains("pod's own configuration"));
        assert!(reason("not json").contains("JSON"));
    }

    fn ask(subject: &str, opaque: bool) -> Decision {
        Decision {
            decision: Action::Ask,
            subjects: vec![SubjectDecision {
                tool: "file_write".into(),
                subject: subject.into(),
                action: Action::Ask,
                rule: None,
                opaque,
                invalid: false,
                note: None,
            }],
        }
    }

    #[test]
    fn a_grant_never_covers_an_opaque_subject_of_the_same_text() {
        let mut grants = SessionGrants::default();
        grants.grant(&ask("notes", false));
        assert!(grants.covers(&ask("notes", false)));
        assert!(!grants.covers(&ask("notes", true)));
        let mut grants = SessionGrants::default();
        assert!(grants.grant(&ask("notes", true)).is_empty());
        assert!(!grants.contains("file_write", "notes"));
    }
}
