//! The check chain every tool call passes before it runs, as PreToolCall hooks in this order:
//! the client's restriction (ACP's `read-only` mode, when set), skill restriction, the built-in permission hook (always first of the hooks, registered by the
//! pod itself, never removable by configuration; `approval.rs` settles its asks), user hooks,
//! scope (which pins the location a path tool opens).
//!
//! A check continues, denies with a text naming itself (and, for rules, the rule's index,
//! pattern and message), or, for the permission hook only, asks. The texts to the model live
//! here so that every denial reads the same way.
//!
//! Must not touch: running the tool (`turn.rs`) or deciding (`permission`): the chain only
//! applies decisions.

use super::calls::Call;
use super::pin;
use super::turn::Turn;
use super::{wire, Mode, Pod};
use crate::hooks::UserHook;
use crate::protocol::{Action, Decision, DeniedBy, Item, SubjectDecision};
use crate::skills::Skill;
use crate::tools::Target;

/// One PreToolCall hook of the chain.
pub(super) enum Check<'a> {
    /// The session's `read-only` mode: narrows, never grants.
    ReadOnly,
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

/// Why the chain stopped a call.
pub(super) enum Stop {
    Denied(Denial),
    Cancelled,
}

/// What the chain decided for a call.
pub(super) struct Checked {
    /// The location a path tool opens (pinned by the scope check), or why the call does not run.
    pub verdict: Result<Option<Target>, Stop>,
    /// The permission layer's final word, recorded in history before the result (layer on only).
    pub item: Option<Item>,
    /// The call as approved with an edited input (`permissionReply` with `input`): what runs.
    pub amended: Option<Call>,
}

impl Pod {
    /// Runs the chain for `call`, whose permission decision is `decision`.
    pub(super) async fn check(
        &self,
        turn: &Turn<'_>,
        original: &Call,
        first: &Decision,
    ) -> Checked {
        let (call, decision) = (original, first);
        let mut chain = Vec::new();
        if self.mode() == Mode::ReadOnly {
            chain.push(Check::ReadOnly);
        }
        if let Some(skill) = &turn.skill {
            chain.push(Check::Skill(skill));
        }
        chain.push(Check::Permission);
        chain.extend(
            self.hooks
                .iter()
                .filter(|h| h.applies_to(&call.name))
                .map(Check::User),
        );
        chain.push(Check::Scope);

        let mut decision_item = None;
        let mut target = None;
        // An approval with an edited input: the checks after the permission hook see it.
        let mut amended: Option<(Call, Decision)> = None;
        for check in chain {
            let (call, decision) = match &amended {
                Some((c, d)) => (c, d),
                None => (call, decision),
            };
            let verdict = match check {
                Check::ReadOnly => restricted(Mode::ReadOnly, &call.name),
                Check::Skill(skill) => skill
                    .check(&call.name, decision)
                    .map_err(|text| Denial::new(DeniedBy::Skill, text)),
                Check::Permission => {
                    // Boxed (as is the hook below): the state of an await lives in this future,
                    // and a response's calls are all created up front, so a large inline state
                    // (18 KB before) was allocated and copied per call.
                    let settled = Box::pin(self.permission_hook(turn, call, decision)).await;
                    let (verdict, edited) = match settled {
                        Some(settled) => {
                            decision_item =
                                Some(wire::decision_item(turn, call, decision, &settled));
                            let by = wire::denied_by(settled.by);
                            (
                                settled.verdict.map_err(|text| Denial::new(by, text)),
                                settled.input,
                            )
                        }
                        None => (Ok(()), None),
                    };
                    match (verdict, edited) {
                        (Ok(()), Some(input)) => {
                            let (verdict, next) = self.amend(turn, call, input).await;
                            amended = next;
                            verdict
                        }
                        (verdict, _) => verdict,
                    }
                }
                // Dropping a hook's future on cancel kills its process group. A hook runs in a
                // slot, as a tool does.
                Check::User(hook) => tokio::select! {
                    verdict = Box::pin(async {
                        let _slot = self.slots.acquire().await;
                        hook.check(&call.id, &call.name, &call.input, decision).await
                    }) => {
                        verdict.map_err(|text| Denial::new(DeniedBy::Hook, text))
                    }
                    () = turn.cancel.cancelled() => return Checked {
                        verdict: Err(Stop::Cancelled),
                        item: decision_item,
                        amended: None,
                    },
                },
                // Pins the location the tool opens: the one the permission layer decided.
                Check::Scope => pin::pin(
                    &call.name,
                    call.kind,
                    &call.input,
                    decision,
                    &self.manifest.workspace,
                    &self.scope,
                )
                .map(|pinned| target = pinned),
            };
            if let Err(denial) = verdict {
                return Checked {
                    verdict: Err(Stop::Denied(denial)),
                    item: decision_item,
                    amended: None,
                };
            }
            if turn.cancel.is_cancelled() {
                return Checked {
                    verdict: Err(Stop::Cancelled),
                    item: decision_item,
                    amended: None,
                };
            }
        }
        Checked {
            verdict: Ok(target),
            item: decision_item,
            amended: amended.map(|(c, _)| c),
        }
    }

    /// The call with the input the user edited before approving: recorded in history, and
    /// decided by the rules again. A deny still denies; what the user approved (an allow or an
    /// ask) runs, once.
    async fn amend(
        &self,
        turn: &Turn<'_>,
        call: &Call,
        input: serde_json::Value,
    ) -> (Result<(), Denial>, Option<(Call, Decision)>) {
        self.record(Item::InputAmended {
            turn_id: turn.id.clone(),
            call_id: call.id.clone(),
            input: input.clone(),
        });
        let edited = Call {
            input,
            ..call.clone()
        };
        let annotations = self
            .toolbox
            .get(&call.name)
            .and_then(|t| t.annotations().cloned());
        let decision = self.decide(&edited, annotations.as_ref()).await;
        if decision.decision == Action::Deny {
            let default = self.policy.rules().map(|r| r.default_action());
            let text = format!(
                "{} (the input as edited before approval)",
                denied_text(&decision, default)
            );
            return (Err(Denial::new(DeniedBy::Permission, text)), None);
        }
        (Ok(()), Some((edited, decision)))
    }
}

/// The session's mode applied to a call of `tool` before anything else: read-only lets through
/// only the tools known to read (`read`, `grep`, `glob`); everything else, unknown tools
/// included, is denied. Checked at the head of the chain, and again just before the tool runs
/// (`turn.rs`). The other modes act on asks (`approval.rs`).
pub(super) fn restricted(mode: Mode, tool: &str) -> Result<(), Denial> {
    match mode {
        Mode::ReadOnly => match crate::tools::builtin(tool) {
            Some(t) if t.read_only() => Ok(()),
            _ => Err(Denial::new(
                DeniedBy::Permission,
                format!(
                    "permission denied: the session is in read-only mode, so {tool} is not run; \
                     only read, grep and glob run in this mode"
                ),
            )),
        },
        Mode::Default | Mode::AcceptEdits | Mode::Auto | Mode::Unattended => Ok(()),
    }
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
    let mut parts: Vec<String> = deciding(decision).map(|s| s.for_model(default)).collect();
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
    let parts: Vec<String> = deciding(decision).map(|s| s.for_model(default)).collect();
    format!("approval required: {}", parts.join("; "))
}

/// Text for an ask in an unattended session.
pub(super) fn unattended_text(decision: &Decision, default: Option<Action>) -> String {
    format!(
        "permission denied: {}, and the session is unattended (mode \"unattended\"), so every \
         ask is denied",
        ask_reason(decision, default)
    )
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

pub(super) fn unusable_text(why: &str) -> String {
    format!("permission denied: the client's answer to the approval request could not be used ({why}), so the call was not run")
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
