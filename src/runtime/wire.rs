//! The engine's outcomes in the wire's words: the one place who settled a decision
//! ([`Settled`], [`Asked`], the engine's) becomes the protocol's `DecidedBy`, `ResolvedBy`,
//! `Resolution` and `DeniedBy`, and a proxy's report becomes a history item.
//!
//! The protocol's enums are fixed (clients depend on their spellings); the engine's may change
//! freely. A change that should reach the schema is made here, on purpose.
//!
//! Must not touch: settling (`approval.rs`), deciding (`permission`), writing anything (items
//! and events built here are recorded and sent by their callers).

use super::approval::Settlement;
use super::calls::Call;
use super::turn::Turn;
use crate::network::Report;
use crate::permission::{Asked, Settled};
use crate::protocol::{Action, DecidedBy, Decision, DeniedBy, Event, Item, Resolution, ResolvedBy};

/// The `permissionDecision` item of a call the permission layer settled.
pub(super) fn decision_item(
    turn: &Turn<'_>,
    call: &Call,
    decision: &Decision,
    settled: &Settlement,
) -> Item {
    Item::PermissionDecision {
        turn_id: turn.id.clone(),
        call_id: call.id.clone(),
        decision: if settled.verdict.is_ok() {
            Action::Allow
        } else {
            Action::Deny
        },
        by: decided_by(settled.by),
        request_id: settled.request_id.clone(),
        subjects: decision.subjects.clone(),
    }
}

/// The `permissionResolved` event of a request `by` ended, allowed or not.
pub(super) fn resolved_event(
    turn: &Turn<'_>,
    call: &Call,
    request_id: &str,
    by: Asked,
    allowed: bool,
) -> Event {
    Event::PermissionResolved {
        request_id: request_id.to_string(),
        turn_id: turn.id.clone(),
        call_id: call.id.clone(),
        decision: resolution(allowed),
        by: resolved_by(by),
    }
}

/// `permissionDecision`'s (and `networkConnection`'s) `by`.
pub(super) fn decided_by(by: Settled) -> DecidedBy {
    match by {
        Settled::Rule => DecidedBy::Rule,
        Settled::Default => DecidedBy::Default,
        Settled::Disabled => DecidedBy::Disabled,
        Settled::Mode => DecidedBy::Mode,
        Settled::FailClosed => DecidedBy::FailClosed,
        Settled::Asked(asked) => match asked {
            Asked::Client => DecidedBy::Client,
            Asked::Grant => DecidedBy::SessionGrant,
            Asked::Cancel => DecidedBy::Cancel,
            Asked::Timeout => DecidedBy::Timeout,
            Asked::Disconnect => DecidedBy::Disconnect,
            Asked::Shutdown => DecidedBy::Shutdown,
        },
    }
}

/// `permissionResolved`'s `by`.
pub(super) fn resolved_by(by: Asked) -> ResolvedBy {
    match by {
        Asked::Client => ResolvedBy::Client,
        Asked::Grant => ResolvedBy::SessionGrant,
        Asked::Cancel => ResolvedBy::Cancel,
        Asked::Timeout => ResolvedBy::Timeout,
        Asked::Disconnect => ResolvedBy::Disconnect,
        Asked::Shutdown => ResolvedBy::Shutdown,
    }
}

/// `permissionResolved`'s `decision`.
fn resolution(allowed: bool) -> Resolution {
    if allowed {
        Resolution::Allow
    } else {
        Resolution::Deny
    }
}

/// `toolResult`'s `deniedBy` for a call the permission layer stopped: `approval` once a
/// request was made, `permission` when nobody was asked (a rule, the default, the mode, no
/// approver).
pub(super) fn denied_by(by: Settled) -> DeniedBy {
    match by {
        Settled::Asked(_) => DeniedBy::Approval,
        Settled::Rule
        | Settled::Default
        | Settled::Disabled
        | Settled::Mode
        | Settled::FailClosed => DeniedBy::Permission,
    }
}

/// The history item of what the proxy reported of a call.
pub(super) fn connection_item(turn: &Turn<'_>, call: &Call, report: Report) -> Item {
    match report {
        Report::Connection(e) => {
            let e = *e;
            Item::NetworkConnection {
                turn_id: turn.id.clone(),
                call_id: call.id.clone(),
                host: e.subject,
                port: e.port,
                method: e.method,
                decision: e.decision,
                by: e.by.map(decided_by),
                rule: e.rule,
                refused: e.refused.as_ref().map(|r| r.code.to_string()),
                reason: e.refused.map(|r| r.text).or(e.note),
                bytes_up: e.up,
                bytes_down: e.down,
            }
        }
        Report::Omitted(count) => Item::NetworkConnectionsOmitted {
            turn_id: turn.id.clone(),
            call_id: call.id.clone(),
            count,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASKED: [Asked; 6] = [
        Asked::Client,
        Asked::Grant,
        Asked::Cancel,
        Asked::Timeout,
        Asked::Disconnect,
        Asked::Shutdown,
    ];

    fn word<T: serde::Serialize>(value: T) -> String {
        serde_json::to_value(value)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    }

    /// The words the wire has always used, for every way a decision is settled: `disabled`
    /// included (the proxy records it for a connection when the layer is off), and a request's
    /// end spelled the same in `permissionResolved` and in the item.
    #[test]
    fn every_outcome_keeps_its_wire_word() {
        let settled = [
            (Settled::Rule, "rule"),
            (Settled::Default, "default"),
            (Settled::Disabled, "disabled"),
            (Settled::Mode, "mode"),
            (Settled::FailClosed, "failClosed"),
        ];
        for (by, want) in settled {
            assert_eq!(word(decided_by(by)), want, "{by:?}");
            assert_eq!(denied_by(by), DeniedBy::Permission, "{by:?}");
        }
        let asked = [
            "client",
            "session_grant",
            "cancel",
            "timeout",
            "disconnect",
            "shutdown",
        ];
        for (by, want) in ASKED.into_iter().zip(asked) {
            assert_eq!(word(decided_by(Settled::Asked(by))), want, "{by:?}");
            assert_eq!(word(resolved_by(by)), want, "{by:?}");
            assert_eq!(denied_by(Settled::Asked(by)), DeniedBy::Approval, "{by:?}");
        }
        assert_eq!(word(resolution(true)), "allow");
        assert_eq!(word(resolution(false)), "deny");
    }
}
