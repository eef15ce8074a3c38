//! Approvers: who answers an `ask`.
//!
//! [`Approver::FailClosed`] (the default) denies every ask at once. [`Approver::Client`] hands
//! asks to a client through [`Approvals`], a registry of pending requests shared by the turn
//! (which registers a request and waits) and the server (which delivers `permissionReply`, or
//! closes everything on disconnect / shutdown). The first answer wins; later ones are errors.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::protocol::{ReplyDecision, ResolvedBy};

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
    },
    /// The connection went away or the pod is shutting down: denied.
    Closed(ResolvedBy),
}

/// Why a reply was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("no permission request {0} exists")]
    Unknown(String),
    #[error("permission request {0} is already resolved")]
    AlreadyResolved(String),
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
    closed: Option<ResolvedBy>,
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
            let _ = pending.answer.send(Answer::Client { decision, message });
        }
        Ok(())
    }

    /// Marks a request resolved by the pod itself (timeout, cancel).
    pub fn finish(&self, request_id: &str) {
        let mut registry = self.lock();
        registry.pending.remove(request_id);
        registry.resolved.insert(request_id.to_string());
    }

    /// Resolves every pending request as denied by `by` and answers later ones at once.
    pub fn close(&self, by: ResolvedBy) {
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
                message: None
            }
        );
    }

    #[tokio::test]
    async fn close_denies_pending_and_future_requests() {
        let approvals = Approvals::new();
        let rx = approvals.register("a", vec![ReplyDecision::Deny]);
        approvals.close(ResolvedBy::Disconnect);
        assert_eq!(rx.await.unwrap(), Answer::Closed(ResolvedBy::Disconnect));
        let rx = approvals.register("b", vec![ReplyDecision::Deny]);
        assert_eq!(rx.await.unwrap(), Answer::Closed(ResolvedBy::Disconnect));
    }
}
