//! Protected paths: pod's own configuration and state, which the model must never rewrite on
//! its own authority.
//!
//! The pod builds the list at start-up ([`Protected::new`]): the manifest and every other
//! configuration file it reads, hook programs, skill folders and the session state folder. A
//! write-kind subject (`file_write`, `edit`, or a shell redirection target) at or below one of
//! them is never allowed by a rule, the default or a session grant: at best it asks, with a note
//! saying it is pod's own configuration, and it is never offered `allow_session`. Without an
//! approver an ask fails closed, so such a write is denied. A write target that cannot be read
//! statically (`> $F`) might be one of them, so it asks too.
//!
//! Must not touch: rules and subject extraction. It only tightens decisions already made.

use std::path::{Path, PathBuf};

use super::path;
use pod_protocol::{Action, SubjectDecision};

/// Tools whose subjects write the file they name.
const WRITE_KINDS: [&str; 2] = ["file_write", "edit"];

/// One protected file or folder, and what it is (shown to the model and the approver).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedPath {
    /// Absolute; a folder protects everything below it.
    pub path: PathBuf,
    /// What it is, such as "the manifest" or "a hook program".
    pub what: String,
}

/// The protected paths of a pod, each kept as written and as resolved through symlinks.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    entries: Vec<ProtectedPath>,
}

impl Protected {
    /// The protected set from `paths` (absolute); each is also protected at its
    /// symlink-resolved location.
    pub fn new(paths: Vec<ProtectedPath>) -> Protected {
        let mut entries: Vec<ProtectedPath> = Vec::new();
        for p in paths {
            let lexical = path::normalize(&p.path);
            let resolved = path::resolve(&lexical);
            for candidate in [lexical, resolved] {
                if !entries.iter().any(|e| e.path == candidate) {
                    entries.push(ProtectedPath {
                        path: candidate,
                        what: p.what.clone(),
                    });
                }
            }
        }
        Protected { entries }
    }

    /// The protected paths, for explanations and tests.
    pub fn paths(&self) -> &[ProtectedPath] {
        &self.entries
    }

    /// What protects the path subject `text` (as rules see paths), if anything.
    pub fn find(&self, text: &str, workspace: &Path) -> Option<&ProtectedPath> {
        let absolute = path::absolute(text, workspace);
        self.entries.iter().find(|e| absolute.starts_with(&e.path))
    }

    /// True when a write of subject `s` is protected: its path is protected, or it cannot be
    /// read and so might be.
    pub fn covers(&self, s: &SubjectDecision, workspace: &Path) -> bool {
        self.reason(s, workspace).is_some()
    }

    fn reason(&self, s: &SubjectDecision, workspace: &Path) -> Option<String> {
        if self.entries.is_empty() || !WRITE_KINDS.contains(&s.tool.to_ascii_lowercase().as_str()) {
            return None;
        }
        if s.opaque {
            return Some(
                "the write target cannot be read statically and may be pod's own configuration or state"
                    .to_string(),
            );
        }
        self.find(&s.subject, workspace).map(|p| {
            format!(
                "pod's own configuration: {} is {}; only a person may approve writing it, once",
                path::display(&p.path, workspace),
                p.what
            )
        })
    }

    /// Tightens every protected write subject to at least `ask`, with the reason as its note.
    pub(super) fn tighten(&self, subjects: &mut [SubjectDecision], workspace: &Path) {
        for s in subjects.iter_mut() {
            if let Some(why) = self.reason(s, workspace) {
                if s.action < Action::Ask {
                    s.action = Action::Ask;
                }
                s.note = Some(match s.note.take() {
                    Some(note) if !note.contains(&why) => format!("{note}; {why}"),
                    _ => why,
                });
            }
        }
    }
}

impl super::Policy {
    /// This policy with `protected` as its protected paths.
    pub fn with_protected(mut self, protected: Protected) -> super::Policy {
        self.protected = protected;
        self
    }

    pub fn protected(&self) -> &Protected {
        &self.protected
    }

    /// True when `s` is a write of a protected path (or of a target that may be one): it never
    /// gets a session grant.
    pub fn protects(&self, s: &SubjectDecision) -> bool {
        self.protected.covers(s, &self.workspace)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Policy, RuleSpec, Rules};
    use super::*;
    use serde_json::json;

    fn protected_policy(dir: &Path) -> Policy {
        let rules =
            Rules::compile(Action::Allow, vec![RuleSpec::new("*", "*", Action::Allow)]).unwrap();
        Policy::new(Some(rules), dir.to_path_buf()).with_protected(Protected::new(vec![
            ProtectedPath {
                path: dir.join("pod.toml"),
                what: "the manifest".into(),
            },
            ProtectedPath {
                path: dir.join("skills"),
                what: "a skill folder".into(),
            },
        ]))
    }

    #[test]
    fn writes_to_protected_paths_ask_whatever_the_rules_say() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(ws.join("pod.toml"), ws.join("alias")).unwrap();
        let p = protected_policy(&ws);
        for (tool, input) in [
            ("file_write", json!({"path": "pod.toml", "content": "x"})),
            (
                "edit",
                json!({"path": "./pod.toml", "old": "a", "new": "b"}),
            ),
            ("file_write", json!({"path": "alias", "content": "x"})),
            (
                "file_write",
                json!({"path": "skills/x/SKILL.md", "content": "x"}),
            ),
            ("bash", json!({"command": "echo x > pod.toml"})),
            ("bash", json!({"command": "echo x > $F"})),
        ] {
            let d = p.decide(tool, &input);
            assert_eq!(d.decision, Action::Ask, "{tool} {input}: {d:#?}");
            assert!(
                d.subjects
                    .iter()
                    .any(|s| p.protects(s) && s.action == Action::Ask),
                "{d:#?}"
            );
        }
        // Reading them, and writing elsewhere, is up to the rules.
        assert_eq!(
            p.decide("read", &json!({"path": "pod.toml"})).decision,
            Action::Allow
        );
        assert_eq!(
            p.decide(
                "file_write",
                &json!({"path": "src/pod.toml", "content": "x"})
            )
            .decision,
            Action::Allow
        );
    }
}
