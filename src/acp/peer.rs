//! The client as a peer: ACP is two-way, and the agent sends requests of its own
//! (`session/request_permission`, `fs/read_text_file`, `fs/write_text_file`) and notifications
//! (`session/update`, `$/cancel_request`).
//!
//! Owns: numbering the agent's requests, matching the client's responses to them (the
//! dispatcher hands every response here), withdrawing a request nobody waits for any more with
//! `$/cancel_request`, and failing every pending request once the connection is gone. Messages
//! are built from the official schema's envelope types and leave through the transport's one
//! writer ([`Outbox`]): requests at once, notifications paced (they wait for room, as pod v1's
//! events do).
//!
//! Must not touch: what a request means (the session and the editor files decide that).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol_schema::v1 as acp;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::protocol::ErrorObject;
use crate::server::dispatch::Reply;
use crate::server::transport::Outbox;

/// Why a request to the client got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    /// The client answered with a JSON-RPC error.
    #[error("the client answered with error {code}: {message}")]
    Answered { code: i32, message: String },
    /// The result is not what the protocol says for this method.
    #[error("the client's result is malformed: {0}")]
    Malformed(String),
    /// The connection is gone (or going).
    #[error("the client is no longer connected")]
    Closed,
}

/// Requests sent and not answered, by the id the agent gave them.
#[derive(Default)]
struct Pending {
    waiting: HashMap<i64, oneshot::Sender<Reply>>,
}

/// The agent's side of the two-way connection.
pub struct Peer {
    out: Outbox,
    next: AtomicI64,
    pending: Mutex<Pending>,
    closed: AtomicBool,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("next", &self.next.load(Ordering::SeqCst))
            .field("closed", &self.closed.load(Ordering::SeqCst))
            .finish()
    }
}

/// A request on its way: await [`Outgoing::answer`]; dropped unanswered, it is withdrawn
/// (`$/cancel_request`), so the client can close its dialog or stop its work.
pub struct Outgoing {
    peer: Arc<Peer>,
    id: i64,
    answer: Option<oneshot::Receiver<Reply>>,
}

impl Peer {
    pub fn new(out: Outbox) -> Arc<Peer> {
        Arc::new(Peer {
            out,
            next: AtomicI64::new(0),
            pending: Mutex::new(Pending::default()),
            closed: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        // Poisoning means a panic elsewhere; the map stays meaningful.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends the request `method` with `params` at once.
    pub fn request<P: Serialize>(
        self: &Arc<Self>,
        method: &str,
        params: &P,
    ) -> Result<Outgoing, PeerError> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let message = acp::JsonRpcMessage::wrap(acp::Request {
            id: acp::RequestId::Number(id),
            method: method.into(),
            params: Some(params),
        });
        let text = serde_json::to_string(&message)
            .map_err(|e| PeerError::Malformed(format!("cannot serialize {method}: {e}")))?;
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.lock();
            if self.closed.load(Ordering::SeqCst) {
                return Err(PeerError::Closed);
            }
            pending.waiting.insert(id, tx);
        }
        self.out.send(text);
        Ok(Outgoing {
            peer: self.clone(),
            id,
            answer: Some(rx),
        })
    }

    /// Sends the notification `method` once there is room in the outbox.
    pub async fn notify<P: Serialize>(&self, method: &str, params: &P) {
        let message = acp::JsonRpcMessage::wrap(acp::Notification {
            method: method.into(),
            params: Some(params),
        });
        match serde_json::to_string(&message) {
            Ok(text) => self.out.send_paced(text).await,
            Err(e) => tracing::error!("cannot serialize {method}: {e}"),
        }
    }

    /// Takes a response from the client. Every response is consumed: one to a request that
    /// was withdrawn, or that never existed, is logged and dropped.
    pub fn respond(&self, id: &RawValue, reply: Reply) -> bool {
        let sender = serde_json::from_str::<i64>(id.get())
            .ok()
            .and_then(|id| self.lock().waiting.remove(&id));
        match sender {
            Some(tx) => {
                let _ = tx.send(reply);
            }
            None => tracing::debug!("response to no pending request (id {})", id.get()),
        }
        true
    }

    /// Withdraws request `id`: nobody waits for it now. The client is told with
    /// `$/cancel_request`; its late answer is dropped.
    fn withdraw(&self, id: i64) {
        if self.lock().waiting.remove(&id).is_none() {
            return;
        }
        let message = acp::JsonRpcMessage::wrap(acp::Notification {
            method: "$/cancel_request".into(),
            params: Some(acp::CancelRequestNotification::new(acp::RequestId::Number(
                id,
            ))),
        });
        if let Ok(text) = serde_json::to_string(&message) {
            self.out.send(text);
        }
    }

    /// The connection is gone: every pending request fails with [`PeerError::Closed`], and so
    /// does every later one.
    pub fn close(&self) {
        let mut pending = self.lock();
        self.closed.store(true, Ordering::SeqCst);
        pending.waiting.clear();
    }
}

impl Outgoing {
    /// The id the request went out with.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The client's answer, read into `R`.
    pub async fn answer<R: DeserializeOwned>(mut self) -> Result<R, PeerError> {
        let Some(answer) = self.answer.take() else {
            return Err(PeerError::Closed);
        };
        let reply = answer.await.map_err(|_| PeerError::Closed)?;
        match reply {
            Ok(result) => serde_json::from_str::<R>(result.get())
                .map_err(|e| PeerError::Malformed(e.to_string())),
            Err(ErrorObject { code, message, .. }) => Err(PeerError::Answered { code, message }),
        }
    }
}

impl Drop for Outgoing {
    fn drop(&mut self) {
        // Answered (or given up by `answer`): already out of the map, so this does nothing.
        self.peer.withdraw(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn raw(v: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&v).unwrap()
    }

    #[tokio::test]
    async fn a_response_reaches_its_request_and_errors_and_garbage_are_told_apart() {
        let (out, mut queue) = Outbox::channel();
        let peer = Peer::new(out);
        let first = peer.request("x/one", &json!({"a": 1})).unwrap();
        let second = peer.request("x/two", &json!({})).unwrap();
        let third = peer.request("x/three", &json!({})).unwrap();
        let sent: Value = serde_json::from_str(&queue.recv().await.unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({"jsonrpc": "2.0", "id": 0, "method": "x/one", "params": {"a": 1}})
        );
        assert!(peer.respond(&raw(json!(1)), Ok(raw(json!({"n": 2})))));
        assert!(peer.respond(
            &raw(json!(0)),
            Err(ErrorObject {
                code: -32603,
                message: "no".into(),
                data: None
            })
        ));
        assert!(peer.respond(&raw(json!(2)), Ok(raw(json!("not an object")))));
        assert_eq!(
            first.answer::<Value>().await,
            Err(PeerError::Answered {
                code: -32603,
                message: "no".into()
            })
        );
        assert_eq!(second.answer::<Value>().await, Ok(json!({"n": 2})));
        #[derive(Debug, serde::Deserialize)]
        struct Obj {
            #[allow(dead_code)]
            n: i64,
        }
        assert!(matches!(
            third.answer::<Obj>().await,
            Err(PeerError::Malformed(_))
        ));
        // A response nobody waits for is consumed.
        assert!(peer.respond(&raw(json!(99)), Ok(raw(json!({})))));
    }

    #[tokio::test]
    async fn a_dropped_request_is_withdrawn_and_close_fails_the_rest() {
        let (out, mut queue) = Outbox::channel();
        let peer = Peer::new(out);
        let asked = peer.request("x/ask", &json!({})).unwrap();
        let waiting = peer.request("x/wait", &json!({})).unwrap();
        drop(asked);
        let mut texts = Vec::new();
        while let Some(t) = queue.try_recv() {
            texts.push(serde_json::from_str::<Value>(&t).unwrap());
        }
        assert_eq!(
            texts.last(),
            Some(
                &json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 0}})
            )
        );
        peer.close();
        assert_eq!(waiting.answer::<Value>().await, Err(PeerError::Closed));
        assert!(matches!(
            peer.request("x/late", &json!({})),
            Err(PeerError::Closed)
        ));
        // Nothing more was sent: a request that failed at close is not withdrawn.
        assert!(queue.try_recv().is_none());
    }
}
