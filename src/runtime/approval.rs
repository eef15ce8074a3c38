//! The permission hook and who answers its asks.
//!
//! `Pod::permission_hook` applies the rules' decision to a call; an `ask` is settled by a
//! session grant, the approver, a timeout, or cancellation, each recorded in history.
//!
//! [`Approver::FailClosed`] (the default) denies every ask at once. [`Approver::Client`] hands
//! asks to a client through [`Approvals`], a registry of pending requests shared by the turn
//! (which registers a request and waits) and the server (which delivers `permissionReply`, or
//! closes everything on disconnect / shutdown). The first answer wins; later ones are errors.
//! An answer that is not a usable decision (ACP: an error response, a malformed outcome) denies,
//! as a dropped connection, a timeout and a cancel do: every way an ask can end but a clear
//! "allow" is a deny.
//!
//! An ask in parts: `AskPolicy` (what a request offers and how long it waits, built once
//! from the manifest), `requested` (its event), `wait` (one future: the answer, or who ended
//! the request without one), `AskPolicy::outcome` (the end read as a verdict and a grant, with
//! no effect), then the grants (`grant_session`, `grant_prefixes`: state, items, the project
//! file) and `resolved` (its event). `runtime::wire` spells who settled it for the wire.
//!
//! Must not touch: the wire (events leave through the turn's sink) and the decision itself
//! (`permission`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::calls::Call;
use super::checks;
use super::turn::Turn;
use super::{wire, Mode, Pod};
use crate::permission::{Asked, Policy, SessionGrants, Settled};
use crate::protocol::{Action, Decision, Event, Item, PermissionRequest, PodState, ReplyDecision};
use crate::scope::Scope;

/// Who answers asks for a pod.
#[derive(Clone, Default)]
pub enum Approver {
    /// No approver is connected: every `ask` is denied at once, with a text saying so.
    #[default]
    FailClosed,
    /// A client answers through `permissionReply`.
    Client(Approvals),
}

/// How a pending request ended, as the waiting turn learns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Client {
        decision: ReplyDecision,
        message: Option<String>,
        /// An edited input to run instead (with `allow_once` only).
        input: Option<serde_json::Value>,
    },
    /// The connection went away or the pod is shutting down: denied.
    Closed(Asked),
    /// The client answered, but not with a decision that can be used (an error, a malformed
    /// or unknown outcome): denied, and the text says why.
    Unusable(String),
}

/// How the permission layer settled a call: who settled it, the request that asked (when
/// one was made), the verdict (`Err`: the text the model reads) and an edited input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Settlement {
    pub by: Settled,
    pub request_id: Option<String>,
    pub verdict: Result<(), String>,
    /// An edited input to run instead (`allow_once` with `input`).
    pub input: Option<serde_json::Value>,
}

/// Why a reply was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("no permission request {0} exists")]
    Unknown(String),
    #[error("permission request {0} is already resolved")]
    AlreadyResolved(String),
    #[error("an edited input is approved once: send it with allow_once (request {0})")]
    AmendedNotOnce(String),
    #[error(
        "decision {decision:?} was not offered for request {request_id} (offered: {offered:?})"
    )]
    NotOffered {
        request_id: String,
        decision: ReplyDecision,
        offered: Vec<ReplyDecision>,
    },
}

struct Pending {
    options: Vec<ReplyDecision>,
    answer: oneshot::Sender<Answer>,
}

#[derive(Default)]
struct Registry {
    pending: HashMap<String, Pending>,
    resolved: HashSet<String>,
    /// Set once the connection is gone: new requests are answered at once.
    closed: Option<Asked>,
}

/// Pending permission requests, shared between the turn and the server.
#[derive(Clone, Default)]
pub struct Approvals {
    registry: Arc<Mutex<Registry>>,
}

impl Approvals {
    pub fn new() -> Approvals {
        Approvals::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        // A poisoned lock only means another thread panicked mid-update; the map is still usable.
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a request; the receiver yields the answer. After [`close`](Self::close) the
    /// answer is immediate.
    pub fn register(
        &self,
        request_id: &str,
        options: Vec<ReplyDecision>,
    ) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        let mut registry = self.lock();
        match registry.closed {
            Some(by) => {
                let _ = tx.send(Answer::Closed(by));
                registry.resolved.insert(request_id.to_string());
            }
            None => {
                registry.pending.insert(
                    request_id.to_string(),
                    Pending {
                        options,
                        answer: tx,
                    },
                );
            }
        }
        rx
    }

    /// Delivers a client's reply. Unknown, resolved and not-offered replies are errors; a
    /// not-offered decision leaves the request pending.
    pub fn reply(
        &self,
        request_id: &str,
        decision: ReplyDecision,
        message: Option<String>,
    ) -> Result<(), ReplyError> {
        self.reply_with(request_id, decision, message, None)
    }

    /// [`Approvals::reply`], with `input`: an edited input to run instead (with `allow_once`
    /// only).
    pub fn reply_with(
        &self,
        request_id: &str,
        decision: ReplyDecision,
        message: Option<String>,
        input: Option<serde_json::Value>,
    ) -> Result<(), ReplyError> {
        if input.is_some() && decision != ReplyDecision::AllowOnce {
            return Err(ReplyError::AmendedNotOnce(request_id.to_string()));
        }
        let mut registry = self.lock();
        let Some(pending) = registry.pending.get(request_id) else {
            return Err(if registry.resolved.contains(request_id) {
                ReplyError::AlreadyResolved(request_id.to_string())
            } else {
                ReplyError::Unknown(request_id.to_string())
            });
        };
        if !pending.options.contains(&decision) {
            return Err(ReplyError::NotOffered {
                request_id: request_id.to_string(),
                decision,
                offered: pending.options.clone(),
            });
        }
        if let Some(pending) = registry.pending.remove(request_id) {
            registry.resolved.insert(request_id.to_string());
            // The turn may have stopped waiting (cancel raced the reply); nothing to deliver then.
            let _ = pending.answer.send(Answer::Client {
                decision,
                message,
                input,
            });
        }
        Ok(())
    }

    /// Delivers a client's answer that is not a decision (ACP: an error response, a malformed
    /// outcome, an option that was not offered): the request resolves as denied. Like a reply,
    /// only the first answer counts.
    pub fn unusable(&self, request_id: &str, why: String) -> Result<(), ReplyError> {
        let mut registry = self.lock();
        let Some(pending) = registry.pending.remove(request_id) else {
            return Err(if registry.resolved.contains(request_id) {
                ReplyError::AlreadyResolved(request_id.to_string())
            } else {
                ReplyError::Unknown(request_id.to_string())
            });
        };
        registry.resolved.insert(request_id.to_string());
        let _ = pending.answer.send(Answer::Unusable(why));
        Ok(())
    }

    /// Marks a request resolved by the pod itself (timeout, cancel).
    pub fn finish(&self, request_id: &str) {
        let mut registry = self.lock();
        registry.pending.remove(request_id);
        registry.resolved.insert(request_id.to_string());
    }

    /// Resolves every pending request as denied by `by` and answers later ones at once.
    pub fn close(&self, by: Asked) {
        let mut registry = self.lock();
        registry.closed = Some(by);
        let pending: Vec<(String, Pending)> = registry.pending.drain().collect();
        for (id, p) in pending {
            registry.resolved.insert(id);
            let _ = p.answer.send(Answer::Closed(by));
        }
    }

    /// Marks every pending request resolved without answering it (its waiter is gone: the turn
    /// panicked); a late reply then gets `-32004` `resolved`.
    pub fn finish_all(&self) {
        let mut registry = self.lock();
        let ids: Vec<String> = registry.pending.drain().map(|(id, _)| id).collect();
        registry.resolved.extend(ids);
    }

    pub fn pending_count(&self) -> usize {
        self.lock().pending.len()
    }
}

impl Pod {
    /// Whether `accept-edits` settles this ask: a `file_write` or `edit` whose asking subjects
    /// are all its own writes, inside the writable folders, of no protected path and readable
    /// (not opaque). A deny never reaches here; a read that asks still asks.
    fn accepts_edit(&self, tool: &str, decision: &Decision) -> bool {
        Scope::writes(tool)
            && decision
                .subjects
                .iter()
                .filter(|s| s.action == Action::Ask)
                .all(|s| {
                    Scope::writes(&s.tool)
                        && !s.opaque
                        && !self.policy.protects(s)
                        && self.scope.contains(&crate::permission::path::resolve_in(
                            &self.manifest.workspace,
                            std::path::Path::new(&s.subject),
                        ))
                })
    }

    /// Whether `auto` settles this ask: the kernel bounds everything the call can do (the
    /// sandbox at full strength: namespaces, the exec gate, no network), and none of its asking
    /// subjects is a protected path, an MCP tool's (whose effects happen in its server) or a
    /// host (`web_fetch` connects from pod's own process, which no sandbox bounds; so an ask of
    /// a managed network rule under `allowed_domains_only` reaches a person).
    fn kernel_bounds(&self, tool: &str, decision: &Decision) -> bool {
        self.sandbox.unbounded().is_none()
            && crate::tools::builtin(tool).is_some()
            && decision
                .subjects
                .iter()
                .filter(|s| s.action == Action::Ask)
                .all(|s| {
                    !self.policy.protects(s)
                        && crate::permission::mcp::split(&s.tool).is_none()
                        && s.tool != crate::permission::network::NETWORK
                })
    }

    /// The built-in permission hook: the rules' decision, with an `ask` resolved by a session
    /// grant, the approver, a timeout, or cancellation. `None`: the layer is off (the call goes
    /// through, and nothing is recorded).
    pub(super) async fn permission_hook(
        &self,
        turn: &Turn<'_>,
        call: &Call,
        decision: &Decision,
    ) -> Option<Settlement> {
        let rules = self.policy.rules()?;
        let default = Some(rules.default_action());
        let settled = |by: Settled, request_id: Option<String>, verdict: Result<(), String>| {
            Some(Settlement {
                by,
                request_id,
                verdict,
                input: None,
            })
        };
        match decision.decision {
            Action::Allow => return settled(Settled::ruled(decision), None, Ok(())),
            Action::Deny => {
                let text = checks::denied_text(decision, default);
                return settled(Settled::ruled(decision), None, Err(text));
            }
            Action::Ask => {}
        }
        let request_id = format!("perm_{}", uuid::Uuid::new_v4().simple());
        let covered = self.state().grants.covers(decision);
        if covered {
            turn.emit(wire::resolved_event(
                turn,
                call,
                &request_id,
                Asked::Grant,
                true,
            ))
            .await;
            return settled(Settled::Asked(Asked::Grant), Some(request_id), Ok(()));
        }
        match self.mode() {
            Mode::Unattended => {
                let text = checks::unattended_text(decision, default);
                return settled(Settled::Mode, None, Err(text));
            }
            Mode::AcceptEdits if self.accepts_edit(&call.name, decision) => {
                return settled(Settled::Mode, None, Ok(()));
            }
            Mode::Auto if self.kernel_bounds(&call.name, decision) => {
                return settled(Settled::Mode, None, Ok(()));
            }
            _ => {}
        }
        let approvals = match &self.approver {
            Approver::FailClosed => {
                let text = checks::fail_closed_text(decision, default);
                return settled(Settled::FailClosed, None, Err(text));
            }
            Approver::Client(approvals) => approvals,
        };
        let offer = self.ask.offer(&self.policy, decision);
        let answer = approvals.register(&request_id, offer.options.clone());
        self.requested(turn, call, decision, &request_id, &offer)
            .await;
        let ended = self.wait(turn, decision, answer).await;
        approvals.finish(&request_id);
        let outcome = self.ask.outcome(ended);
        match outcome.grant {
            Grant::None => {}
            Grant::Session => self.grant_session(turn, decision),
            Grant::Prefixes { project } => self.grant_prefixes(turn, &offer.prefixes, project),
        }
        let allowed = outcome.verdict.is_ok();
        self.resolved(turn, call, &request_id, outcome.by, allowed)
            .await;
        Some(Settlement {
            by: Settled::Asked(outcome.by),
            request_id: Some(request_id),
            verdict: outcome.verdict,
            input: outcome.input,
        })
    }

    /// A request made: its event, and the pod awaiting permission if it is the turn's first.
    async fn requested(
        &self,
        turn: &Turn<'_>,
        call: &Call,
        decision: &Decision,
        request_id: &str,
        offer: &Offer,
    ) {
        let expires_at = self.ask.timeout.and_then(|t| {
            let at = time::OffsetDateTime::now_utc() + t;
            at.format(&time::format_description::well_known::Rfc3339)
                .ok()
        });
        if turn.pending.fetch_add(1, Ordering::SeqCst) == 0 {
            turn.status(PodState::AwaitingPermission).await;
        }
        let default = self.policy.rules().map(|r| r.default_action());
        turn.emit(Event::PermissionRequest(PermissionRequest {
            request_id: request_id.to_string(),
            turn_id: turn.id.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            input: call.input.clone(),
            subjects: decision.subjects.clone(),
            reason: checks::ask_reason(decision, default),
            options: offer.options.clone(),
            prefixes: offer.prefixes.clone(),
            expires_at,
            annotations: self
                .toolbox
                .get(&call.name)
                .and_then(|t| t.annotations().cloned()),
        }))
        .await;
    }

    /// The wait for a request's end: the answer, or who ended it without one (the timeout, a
    /// cancel, a dropped registry, a session grant another ask of the turn gave).
    async fn wait(
        &self,
        turn: &Turn<'_>,
        decision: &Decision,
        mut answer: oneshot::Receiver<Answer>,
    ) -> Result<Answer, Asked> {
        let sleep = async {
            match self.ask.timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(sleep);
        let mut grants = turn.grants.subscribe();
        // Biased: an answer already delivered (e.g. `disconnect` just before the turn is
        // cancelled) wins over a cancel that became ready at the same time.
        loop {
            tokio::select! {
                biased;
                answer = &mut answer => break answer.map_err(|_| Asked::Disconnect),
                () = &mut sleep => break Err(Asked::Timeout),
                () = turn.cancel.cancelled() => break Err(Asked::Cancel),
                // Another ask of this turn was answered `allow_session`: it may cover this one.
                Ok(()) = grants.changed() => {
                    if self.state().grants.covers(decision) {
                        break Err(Asked::Grant);
                    }
                }
            }
        }
    }

    /// `allow_session`: the asking subjects granted for the session. Only what is new is
    /// logged: a second `allow_session` for a subject already granted (two asks answered
    /// before either settled) adds nothing.
    fn grant_session(&self, turn: &Turn<'_>, decision: &Decision) {
        let granted = {
            let mut state = self.state();
            let known: Vec<(String, String)> = decision
                .subjects
                .iter()
                .filter(|s| s.action == Action::Ask)
                .filter(|s| state.grants.contains(&s.tool, &s.subject))
                .map(|s| (s.tool.clone(), s.subject.clone()))
                .collect();
            let mut granted = state.grants.grant(decision);
            for (tool, subjects) in &mut granted {
                subjects.retain(|s| !known.contains(&(tool.clone(), s.clone())));
            }
            granted.retain(|(_, subjects)| !subjects.is_empty());
            granted
        };
        for (tool, subjects) in granted {
            self.record(Item::SessionGrant {
                tool,
                subjects,
                prefixes: Vec::new(),
                workspace: Some(self.manifest.workspace.clone()),
            });
        }
        turn.grants.send_modify(|version| *version += 1);
    }

    /// `allow_prefix` and `allow_project`: the prefixes granted for the session; "in this
    /// project" also keeps them as the user's rules (manifest/grants.rs).
    fn grant_prefixes(&self, turn: &Turn<'_>, prefixes: &[String], project: bool) {
        if project {
            for pattern in prefixes {
                match crate::manifest::grants::append(&self.manifest.workspace, "bash", pattern) {
                    Ok((file, line)) => tracing::info!(
                        "project grant: bash \"{pattern}\" allow at {}:{line}",
                        file.display()
                    ),
                    Err(e) => tracing::error!("project grant not kept: {e}"),
                }
            }
        }
        let added = self.state().grants.grant_prefixes(prefixes);
        if !added.is_empty() {
            self.record(Item::SessionGrant {
                tool: "bash".into(),
                subjects: Vec::new(),
                prefixes: added,
                workspace: Some(self.manifest.workspace.clone()),
            });
        }
        turn.grants.send_modify(|version| *version += 1);
    }

    /// A request ended: its event, and the pod running again if it was the turn's last.
    async fn resolved(
        &self,
        turn: &Turn<'_>,
        call: &Call,
        request_id: &str,
        by: Asked,
        allowed: bool,
    ) {
        turn.emit(wire::resolved_event(turn, call, request_id, by, allowed))
            .await;
        if turn.pending.fetch_sub(1, Ordering::SeqCst) == 1 && !turn.cancel.is_cancelled() {
            turn.status(PodState::Running).await;
        }
    }
}

/// What an ask offers and how long it waits: built once from the manifest, applied to each
/// ask's decision.
#[derive(Debug, Clone, Default)]
pub(super) struct AskPolicy {
    /// `ask_timeout_secs`: how long a request waits; `None`: until it is answered.
    pub timeout: Option<Duration>,
    /// Whether "always in this project" can be offered: the project grants file has a place,
    /// and `allow_managed_rules_only` (under which such a grant would never apply) is off.
    pub project_grants: bool,
}

/// The answers a request offers, and the prefixes an `allow_prefix` grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Offer {
    pub options: Vec<ReplyDecision>,
    pub prefixes: Vec<String>,
}

/// What an answered request grants beyond the call itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grant {
    None,
    /// `allow_session`: the asking subjects.
    Session,
    /// `allow_prefix` (`project`: `allow_project`): the offered prefixes.
    Prefixes {
        project: bool,
    },
}

/// How a request ended, read: who ended it, the verdict, what it grants, and the edited
/// input to run instead (`allow_once` with `input`).
#[derive(Debug)]
struct Outcome {
    by: Asked,
    verdict: Result<(), String>,
    grant: Grant,
    input: Option<serde_json::Value>,
}

impl AskPolicy {
    /// The policy `manifest` sets.
    pub fn of(manifest: &crate::manifest::Manifest) -> AskPolicy {
        AskPolicy {
            timeout: manifest
                .permissions
                .as_ref()
                .and(manifest.permission_settings.ask_timeout),
            project_grants: crate::manifest::grants::path(&manifest.workspace).is_some()
                && !manifest.managed.locks.rules_only,
        }
    }

    /// What a request for `decision` offers. A session grant is keyed by exact subject text;
    /// for a subject whose effect cannot be read (`eval ...`, `python -c ...`, an unparsed
    /// line) "always" would approve code nobody can see, and a write of pod's own files is
    /// approved one time at most, so only a one-time answer is offered. A prefix grant is the
    /// engine's (`permission::prefix`): offered only for commands whose program takes one,
    /// never where only a one-time answer is.
    fn offer(&self, policy: &Policy, decision: &Decision) -> Offer {
        let once_only = decision
            .subjects
            .iter()
            .any(|s| s.action == Action::Ask && (s.opaque || policy.protects(s)));
        let prefixes = if once_only {
            Vec::new()
        } else {
            SessionGrants::prefixes_for(decision).unwrap_or_default()
        };
        let mut options = vec![ReplyDecision::AllowOnce];
        if !once_only {
            options.push(ReplyDecision::AllowSession);
        }
        if !prefixes.is_empty() {
            options.push(ReplyDecision::AllowPrefix);
            if self.project_grants {
                options.push(ReplyDecision::AllowProject);
            }
        }
        options.push(ReplyDecision::Deny);
        Offer { options, prefixes }
    }

    /// A request's end read as its outcome: every way but a clear allow denies, with the text
    /// saying why.
    fn outcome(&self, ended: Result<Answer, Asked>) -> Outcome {
        let outcome = |by, verdict, grant| Outcome {
            by,
            verdict,
            grant,
            input: None,
        };
        match ended {
            Ok(Answer::Client {
                decision,
                message,
                input,
            }) => match decision {
                ReplyDecision::AllowOnce => Outcome {
                    input,
                    ..outcome(Asked::Client, Ok(()), Grant::None)
                },
                ReplyDecision::AllowSession => outcome(Asked::Client, Ok(()), Grant::Session),
                ReplyDecision::AllowPrefix => {
                    outcome(Asked::Client, Ok(()), Grant::Prefixes { project: false })
                }
                ReplyDecision::AllowProject => {
                    outcome(Asked::Client, Ok(()), Grant::Prefixes { project: true })
                }
                ReplyDecision::Deny => outcome(
                    Asked::Client,
                    Err(checks::refused_text(message.as_deref())),
                    Grant::None,
                ),
            },
            Ok(Answer::Unusable(why)) => {
                outcome(Asked::Client, Err(checks::unusable_text(&why)), Grant::None)
            }
            Err(Asked::Grant) => outcome(Asked::Grant, Ok(()), Grant::None),
            Ok(Answer::Closed(by)) | Err(by) => {
                let text = match by {
                    Asked::Timeout => {
                        checks::timeout_text(self.timeout.unwrap_or(Duration::ZERO).as_secs())
                    }
                    Asked::Cancel => checks::CANCELLED_TEXT.to_string(),
                    Asked::Shutdown => checks::SHUTDOWN_TEXT.to_string(),
                    Asked::Disconnect | Asked::Client | Asked::Grant => {
                        checks::DISCONNECT_TEXT.to_string()
                    }
                };
                outcome(by, Err(text), Grant::None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn first_reply_wins_and_not_offered_leaves_the_request_pending() {
        let approvals = Approvals::new();
        let rx = approvals.register("r1", vec![ReplyDecision::AllowOnce, ReplyDecision::Deny]);
        assert!(matches!(
            approvals.reply("r1", ReplyDecision::AllowSession, None),
            Err(ReplyError::NotOffered { .. })
        ));
        assert_eq!(approvals.pending_count(), 1);
        approvals
            .reply("r1", ReplyDecision::AllowOnce, None)
            .unwrap();
        assert_eq!(
            approvals.reply("r1", ReplyDecision::Deny, None),
            Err(ReplyError::AlreadyResolved("r1".into()))
        );
        assert_eq!(
            approvals.reply("nope", ReplyDecision::Deny, None),
            Err(ReplyError::Unknown("nope".into()))
        );
        assert_eq!(
            rx.await.unwrap(),
            Answer::Client {
                decision: ReplyDecision::AllowOnce,
                message: None,
                input: None,
            }
        );
    }

    #[tokio::test]
    async fn an_unusable_answer_denies_once_and_the_first_answer_wins() {
        let approvals = Approvals::new();
        let rx = approvals.register("r1", vec![ReplyDecision::AllowOnce, ReplyDecision::Deny]);
        approvals.unusable("r1", "an error".into()).unwrap();
        assert_eq!(
            approvals.reply("r1", ReplyDecision::AllowOnce, None),
            Err(ReplyError::AlreadyResolved("r1".into()))
        );
        assert_eq!(rx.await.unwrap(), Answer::Unusable("an error".into()));
        let rx = approvals.register("r2", vec![ReplyDecision::AllowOnce, ReplyDecision::Deny]);
        approvals
            .reply("r2", ReplyDecision::AllowOnce, None)
            .unwrap();
        assert!(approvals.unusable("r2", "late".into()).is_err());
        assert!(matches!(rx.await.unwrap(), Answer::Client { .. }));
    }

    fn subject(subject: &str, opaque: bool) -> crate::protocol::SubjectDecision {
        crate::protocol::SubjectDecision {
            tool: "bash".into(),
            subject: subject.into(),
            action: Action::Ask,
            rule: None,
            opaque,
            invalid: false,
            note: None,
        }
    }

    /// A readable command is offered every answer (the project's only where its grants can
    /// apply), with its prefix; an opaque one only a one-time answer.
    #[test]
    fn the_offer_follows_the_subjects_and_the_policy() {
        let policy = Policy::new(None, std::path::PathBuf::from("/w"));
        let ask = |subjects| Decision {
            decision: Action::Ask,
            subjects,
        };
        let readable = ask(vec![subject("cargo test --lib", false)]);
        let on = AskPolicy {
            timeout: None,
            project_grants: true,
        };
        let offer = on.offer(&policy, &readable);
        assert_eq!(
            offer.options,
            vec![
                ReplyDecision::AllowOnce,
                ReplyDecision::AllowSession,
                ReplyDecision::AllowPrefix,
                ReplyDecision::AllowProject,
                ReplyDecision::Deny
            ]
        );
        assert!(!offer.prefixes.is_empty(), "{offer:?}");
        let off = AskPolicy::default().offer(&policy, &readable);
        assert!(
            !off.options.contains(&ReplyDecision::AllowProject),
            "{off:?}"
        );
        let opaque = on.offer(&policy, &ask(vec![subject("eval \"$x\"", true)]));
        assert_eq!(
            opaque,
            Offer {
                options: vec![ReplyDecision::AllowOnce, ReplyDecision::Deny],
                prefixes: Vec::new(),
            }
        );
    }

    /// Every end of a request but a clear allow denies; only the answers that grant say so,
    /// and only `allow_once` carries an edited input.
    #[test]
    fn an_outcome_denies_unless_clearly_allowed() {
        let ask = AskPolicy {
            timeout: Some(Duration::from_secs(7)),
            project_grants: true,
        };
        let client = |decision| {
            Ok(Answer::Client {
                decision,
                message: None,
                input: Some(serde_json::json!({"command": "ls"})),
            })
        };
        let once = ask.outcome(client(ReplyDecision::AllowOnce));
        assert_eq!((once.by, once.grant), (Asked::Client, Grant::None));
        assert!(once.verdict.is_ok() && once.input.is_some());
        for (reply, grant) in [
            (ReplyDecision::AllowSession, Grant::Session),
            (
                ReplyDecision::AllowPrefix,
                Grant::Prefixes { project: false },
            ),
            (
                ReplyDecision::AllowProject,
                Grant::Prefixes { project: true },
            ),
        ] {
            let o = ask.outcome(client(reply));
            assert_eq!(
                (o.by, o.grant, o.verdict.is_ok()),
                (Asked::Client, grant, true)
            );
            assert_eq!(o.input, None);
        }
        let denied = ask.outcome(client(ReplyDecision::Deny));
        assert_eq!(denied.verdict, Err(checks::refused_text(None)));
        let unusable = ask.outcome(Ok(Answer::Unusable("bad".into())));
        assert_eq!(unusable.verdict, Err(checks::unusable_text("bad")));
        assert!(ask.outcome(Err(Asked::Grant)).verdict.is_ok());
        let timeout = ask.outcome(Err(Asked::Timeout));
        assert_eq!(timeout.verdict, Err(checks::timeout_text(7)));
        for by in [Asked::Cancel, Asked::Disconnect, Asked::Shutdown] {
            let closed = ask.outcome(Ok(Answer::Closed(by)));
            let ended = ask.outcome(Err(by));
            assert_eq!((closed.by, ended.by), (by, by));
            assert!(closed.verdict.is_err() && closed.verdict == ended.verdict);
            assert_eq!(closed.grant, Grant::None);
        }
    }

    #[tokio::test]
    async fn close_denies_pending_and_future_requests() {
        let approvals = Approvals::new();
        let rx = approvals.register("a", vec![ReplyDecision::Deny]);
        approvals.close(Asked::Disconnect);
        assert_eq!(rx.await.unwrap(), Answer::Closed(Asked::Disconnect));
        let rx = approvals.register("b", vec![ReplyDecision::Deny]);
        assert_eq!(rx.await.unwrap(), Answer::Closed(Asked::Disconnect));
    }
}
