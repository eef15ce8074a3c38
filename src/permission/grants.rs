//! Session grants: what `allow_session` replies have allowed for the rest of the session.
//!
//! A grant is keyed by the tool whose rules asked and the exact normalized subject text. It only
//! ever answers an `ask`: a subject a rule or the default denies stays denied.

use std::collections::HashSet;

use crate::protocol::{Action, Decision};

#[derive(Debug, Clone, Default)]
pub struct SessionGrants {
    granted: HashSet<(String, String)>,
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

    pub fn contains(&self, tool: &str, subject: &str) -> bool {
        self.granted
            .contains(&(tool.to_ascii_lowercase(), subject.to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SubjectDecision;

    fn ask(subject: &str, opaque: bool) -> Decision {
        Decision {
            decision: Action::Ask,
            subjects: vec![SubjectDecision {
                tool: "file_write".into(),
                subject: subject.into(),
                action: Action::Ask,
                rule: None,
                opaque,
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
