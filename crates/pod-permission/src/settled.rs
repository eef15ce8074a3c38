//! Who settled a permission decision: the engine's own word for it, apart from the wire's.
//!
//! Owns: [`Settled`] (who settled a call's or a connection's decision) and [`Asked`] (who
//! ended an ask's request). The runtime settles asks and the network proxy records who settled
//! each connection, both in these words; `runtime::wire` is the one place they are spelled as
//! the wire's `DecidedBy`, `ResolvedBy`, `Resolution` and `DeniedBy`, so a change here changes
//! the schema only through that mapping.
//!
//! Must not touch: the wire's words for these (`pod-protocol`'s `DecidedBy` and its kin are
//! never named in code here), deciding.

use pod_protocol::Decision;

/// Who settled a permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Settled {
    /// A rule decided (the subjects say which).
    Rule,
    /// `default_action` decided: no rule matched the deciding subjects.
    Default,
    /// No `[permissions]` section: the layer is off and lets everything through. A call then
    /// records no decision at all; a connection through the network proxy records this.
    Disabled,
    /// The session's mode: `accept-edits` or `auto` allowed an ask, `unattended` denied it.
    Mode,
    /// An ask with no approver connected: denied at once, nobody was asked.
    FailClosed,
    /// An ask whose request ended, and who ended it.
    Asked(Asked),
}

/// Who ended an ask's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Asked {
    /// The client answered (a decision, or an answer that could not be used).
    Client,
    /// A session grant covers it, given before or while it waited.
    Grant,
    /// The turn was cancelled.
    Cancel,
    /// Nobody answered within `ask_timeout_secs`.
    Timeout,
    /// The client went away.
    Disconnect,
    /// The pod shut down.
    Shutdown,
}

impl Settled {
    /// Who settled a decision that asks nobody (an allow or a deny): a rule when one of the
    /// deciding subjects has one, else the default.
    pub fn ruled(decision: &Decision) -> Settled {
        if decision
            .subjects
            .iter()
            .filter(|s| s.action == decision.decision)
            .any(|s| s.rule.is_some())
        {
            Settled::Rule
        } else {
            Settled::Default
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pod_protocol::{Action, RuleRef, SubjectDecision};

    fn subject(action: Action, rule: bool) -> SubjectDecision {
        SubjectDecision {
            tool: "bash".into(),
            subject: "ls".into(),
            action,
            rule: rule.then(|| RuleRef {
                index: 1,
                tool: "bash".into(),
                pattern: "*".into(),
                line: None,
                file: None,
                message: None,
            }),
            opaque: false,
            invalid: false,
            note: None,
        }
    }

    /// Only the subjects that produced the decision count: a rule allowing one subject does
    /// not make a default's deny of another the rule's.
    #[test]
    fn ruled_looks_at_the_deciding_subjects() {
        let decision = |decision, subjects| Decision { decision, subjects };
        assert_eq!(
            Settled::ruled(&decision(
                Action::Deny,
                vec![subject(Action::Allow, true), subject(Action::Deny, false)]
            )),
            Settled::Default
        );
        assert_eq!(
            Settled::ruled(&decision(
                Action::Deny,
                vec![subject(Action::Deny, false), subject(Action::Deny, true)]
            )),
            Settled::Rule
        );
        assert_eq!(
            Settled::ruled(&decision(Action::Allow, Vec::new())),
            Settled::Default
        );
    }
}
