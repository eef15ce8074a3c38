//! JSON-RPC 2.0 message handling: the envelope around a [`Service`] that answers method calls.
//!
//! Owns: classifying each incoming text (parse error, invalid request, notification, batch,
//! request, and a response to a request this side sent, which goes to
//! [`Service::response`]), starting the call, echoing the client's id exactly (strings, numbers of any size),
//! and the order rule: a request is started only after the one before it has finished, or has
//! *detached* (see [`Detach`]): `run` detaches once its turn is under way, so `cancel` and
//! `permissionReply` are served while it runs.
//!
//! Must not touch: method semantics (the `methods` module) and bytes (the `transport`). jsonrpsee
//! ships no stdio server, and its method table takes neither our exact ids nor a call that
//! detaches, so this thin layer is ours.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::FutureExt;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

use super::transport::Outbox;
use crate::protocol::{ErrorCode, ErrorObject};

/// What a call answers: the result's JSON text, or an error object.
pub type Reply = Result<Box<RawValue>, ErrorObject>;

/// Answers method calls; the [`Dispatcher`] owns everything around them.
pub trait Service: Send + Sync + 'static {
    /// Starts a call of `method` with its params text (`None`: the request had none). `None`
    /// when no such method exists (`-32601`). A call that runs long fires `detach` once later
    /// requests may be served.
    fn call(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        detach: Detach,
    ) -> Option<BoxFuture<'static, Reply>>;

    /// Takes a response to a request this side sent (ACP's agent-to-client requests). `false`
    /// when the service sends no requests: the message is then an invalid request, as it is
    /// for `pod serve`.
    fn response(&self, id: &RawValue, outcome: Reply) -> bool {
        let _ = (id, outcome);
        false
    }
}

/// How a started call let the dispatcher go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Started {
    Done,
    Detached,
}

/// Handed to each call; fired once, by [`Detach::detach`] or when the call ends.
#[derive(Clone)]
pub struct Detach(Arc<Mutex<Option<oneshot::Sender<Started>>>>);

impl Detach {
    fn fire(&self, how: Started) {
        let sender = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(tx) = sender {
            let _ = tx.send(how);
        }
    }

    /// Called by a long-running method (`run`) once the state change that later requests must
    /// see has happened: the dispatcher then serves the next message while this call goes on.
    pub fn detach(&self) {
        self.fire(Started::Detached);
    }
}

/// A JSON-RPC error response text.
pub fn error_response(id: Option<&RawValue>, error: &ErrorObject) -> String {
    let id = id.map(RawValue::get).unwrap_or("null");
    match serde_json::to_string(error) {
        Ok(error) => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#),
        Err(_) => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{},"message":"internal error"}}}}"#,
            ErrorCode::InternalError.code()
        ),
    }
}

/// Deserializes a member that is present, even when it is `null` (plain `Option` would read a
/// `null` id as absent, turning a request into a notification).
fn present<'de, D: Deserializer<'de>>(de: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(de).map(Some)
}

/// The members of a request object we look at; others are ignored.
#[derive(Deserialize)]
struct RawRequest<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// The most messages one batch may hold (docs/protocol.md, "Transport"): a batch is answered
/// all at once, so what it holds waits in memory until its last call ends.
pub const MAX_BATCH: usize = 1024;

/// One message (or batch element), classified.
enum Entry<'a> {
    Invalid {
        id: Option<&'a RawValue>,
        message: String,
    },
    Notification {
        method: String,
        params: Option<&'a RawValue>,
    },
    Request {
        id: &'a RawValue,
        method: String,
        params: Option<&'a RawValue>,
    },
    /// A response to a request this side sent: no `method`, an id, and `result` or `error`.
    Response { id: &'a RawValue, outcome: Reply },
}

fn first_byte(raw: &RawValue) -> u8 {
    raw.get().bytes().next().unwrap_or(b' ')
}

fn classify(raw: &RawValue) -> Entry<'_> {
    let invalid = |id, message: &str| Entry::Invalid {
        id,
        message: format!("invalid request: {message}"),
    };
    if first_byte(raw) != b'{' {
        return invalid(None, "not an object");
    }
    let Ok(req) = serde_json::from_str::<RawRequest>(raw.get()) else {
        return invalid(None, "not an object");
    };
    // A usable id is echoed even when the rest is invalid; any other id reads as null.
    let id = req
        .id
        .filter(|id| matches!(first_byte(id), b'"' | b'-' | b'0'..=b'9' | b'n'));
    if req.id.is_some() && id.is_none() {
        return invalid(None, "id must be a string, a number or null");
    }
    match req.jsonrpc.map(|v| serde_json::from_str::<&str>(v.get())) {
        Some(Ok("2.0")) => {}
        _ => return invalid(id, "jsonrpc must be \"2.0\""),
    }
    let method = match req.method.map(|m| serde_json::from_str::<String>(m.get())) {
        Some(Ok(m)) => m,
        None => match (id, req.result, req.error) {
            (Some(id), Some(result), None) => {
                return Entry::Response {
                    id,
                    outcome: Ok(result.to_owned()),
                }
            }
            (Some(id), None, Some(error)) => {
                if let Ok(error) = serde_json::from_str::<ErrorObject>(error.get()) {
                    return Entry::Response {
                        id,
                        outcome: Err(error),
                    };
                }
                return invalid(Some(id), "method must be a string");
            }
            _ => return invalid(id, "method must be a string"),
        },
        _ => return invalid(id, "method must be a string"),
    };
    if let Some(p) = req.params {
        if !matches!(first_byte(p), b'{' | b'[') {
            return invalid(id, "params must be an object or an array");
        }
    }
    match id {
        Some(id) => Entry::Request {
            id,
            method,
            params: req.params,
        },
        None => Entry::Notification {
            method,
            params: req.params,
        },
    }
}

/// The response text for a call's reply, with the client's id.
fn render(id: &RawValue, reply: Reply) -> String {
    match reply {
        Ok(result) => format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#,
            id.get(),
            result.get()
        ),
        Err(error) => error_response(Some(id), &error),
    }
}

/// A batch element's answer: known at once, or when its call ends (`None`: a notification).
enum Answer {
    Now(String),
    Later(JoinHandle<Option<String>>),
}

/// Classifies messages and runs requests on a method table; answers go to an [`Outbox`].
pub struct Dispatcher {
    service: Arc<dyn Service>,
    out: Outbox,
    tracker: TaskTracker,
}

impl Dispatcher {
    pub fn new(service: Arc<dyn Service>, out: Outbox) -> Dispatcher {
        Dispatcher {
            service,
            out,
            tracker: TaskTracker::new(),
        }
    }

    /// Every call still running (a detached `run`, a batch waiting for it).
    pub fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    /// Answers a message the transport could not hand over (too large, not UTF-8, bad header).
    pub fn reject(&self, code: ErrorCode, message: &str) {
        self.out
            .send(error_response(None, &ErrorObject::new(code, message)));
    }

    /// Handles one incoming message. Returns once it is answered or its call has detached.
    pub async fn handle(&self, text: &str) {
        let raw = match serde_json::from_str::<&RawValue>(text) {
            Ok(raw) => raw,
            Err(e) => return self.reject(ErrorCode::ParseError, &format!("parse error: {e}")),
        };
        if first_byte(raw) == b'[' {
            return self.batch(raw).await;
        }
        match classify(raw) {
            Entry::Invalid { id, message } => self.out.send(invalid_request(id, message)),
            Entry::Response { id, outcome } => {
                if let Some(text) = self.response(id, outcome) {
                    self.out.send(text);
                }
            }
            Entry::Notification { method, params } => {
                if let Some((started, _)) = self.start(&method, params, None, false) {
                    let _ = started.await;
                }
            }
            Entry::Request { id, method, params } => {
                match self.start(&method, params, Some(id), true) {
                    Some((started, _)) => {
                        let _ = started.await;
                    }
                    None => self.out.send(method_not_found(id, &method)),
                }
            }
        }
    }

    async fn batch(&self, raw: &RawValue) {
        let elements: Vec<&RawValue> = match serde_json::from_str(raw.get()) {
            Ok(e) => e,
            Err(e) => return self.reject(ErrorCode::ParseError, &format!("parse error: {e}")),
        };
        if elements.is_empty() {
            return self.reject(ErrorCode::InvalidRequest, "invalid request: empty batch");
        }
        if elements.len() > MAX_BATCH {
            return self.reject(
                ErrorCode::InvalidRequest,
                &format!(
                    "invalid request: a batch of {} messages; pod takes at most {MAX_BATCH} in one \
                     batch (send the rest in another)",
                    elements.len()
                ),
            );
        }
        let mut answers: Vec<Answer> = Vec::new();
        let mut detached = false;
        for element in elements {
            let answer = match classify(element) {
                Entry::Invalid { id, message } => Some(invalid_request(id, message)),
                Entry::Response { id, outcome } => self.response(id, outcome),
                Entry::Notification { method, params } => {
                    if let Some((started, task)) = self.start(&method, params, None, false) {
                        detached |= started.await == Ok(Started::Detached);
                        answers.push(Answer::Later(task));
                    }
                    None
                }
                Entry::Request { id, method, params } => {
                    match self.start(&method, params, Some(id), false) {
                        Some((started, task)) => {
                            detached |= started.await == Ok(Started::Detached);
                            answers.push(Answer::Later(task));
                            None
                        }
                        None => Some(method_not_found(id, &method)),
                    }
                }
            };
            answers.extend(answer.map(Answer::Now));
        }
        let out = self.out.clone();
        let collect = async move {
            let mut texts = Vec::new();
            for answer in answers {
                match answer {
                    Answer::Now(text) => texts.push(text),
                    Answer::Later(task) => texts.extend(task.await.ok().flatten()),
                }
            }
            // An all-notification batch gets no output at all.
            if !texts.is_empty() {
                out.send(format!("[{}]", texts.join(",")));
            }
        };
        if detached {
            self.tracker.spawn(collect);
        } else {
            collect.await;
        }
    }

    /// Hands a response to the service; the error text when the service takes none.
    fn response(&self, id: &RawValue, outcome: Reply) -> Option<String> {
        (!self.service.response(id, outcome))
            .then(|| invalid_request(Some(id), "invalid request: method must be a string".into()))
    }

    /// Starts a call. `None` when no such method exists. With `send`, the task writes the answer
    /// itself before reporting `Done`; otherwise it returns the text (none for a notification).
    fn start(
        &self,
        method: &str,
        params: Option<&RawValue>,
        id: Option<&RawValue>,
        send: bool,
    ) -> Option<(oneshot::Receiver<Started>, JoinHandle<Option<String>>)> {
        let (tx, started) = oneshot::channel();
        let detach = Detach(Arc::new(Mutex::new(Some(tx))));
        let call = self
            .service
            .call(method, params.map(RawValue::to_owned), detach.clone())?;
        let id = id.map(RawValue::to_owned);
        let out = self.out.clone();
        let task = self.tracker.spawn(async move {
            let text = match AssertUnwindSafe(call).catch_unwind().await {
                Ok(reply) => id.map(|id| render(&id, reply)),
                Err(_) => {
                    tracing::error!("method panicked");
                    let error = ErrorObject::new(ErrorCode::InternalError, "internal error");
                    id.map(|id| error_response(Some(&id), &error))
                }
            };
            if send {
                if let Some(text) = &text {
                    out.send(text.clone());
                }
            }
            detach.fire(Started::Done);
            text
        });
        Some((started, task))
    }
}

fn method_not_found(id: &RawValue, method: &str) -> String {
    let error = ErrorObject::new(
        ErrorCode::MethodNotFound,
        format!("method not found: {method}"),
    );
    error_response(Some(id), &error)
}

fn invalid_request(id: Option<&RawValue>, message: String) -> String {
    error_response(id, &ErrorObject::new(ErrorCode::InvalidRequest, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::transport::Queue;
    use serde_json::{json, Value};

    /// `subtract` (by-position params) and `slow` (detaches, then answers after 50 ms).
    struct Test;

    impl Service for Test {
        fn call(
            &self,
            method: &str,
            params: Option<Box<RawValue>>,
            detach: Detach,
        ) -> Option<BoxFuture<'static, Reply>> {
            let text = params.map(|p| p.get().to_string()).unwrap_or_default();
            let answer = |v: Value| {
                serde_json::value::to_raw_value(&v)
                    .map_err(|e| ErrorObject::new(ErrorCode::InternalError, e.to_string()))
            };
            match method {
                "subtract" => {
                    let [a, b]: [i64; 2] = serde_json::from_str(&text).unwrap_or([0, 0]);
                    Some(Box::pin(async move { answer(json!(a - b)) }))
                }
                "slow" => Some(Box::pin(async move {
                    detach.detach();
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    answer(json!("slow done"))
                })),
                _ => None,
            }
        }
    }

    fn dispatcher() -> (Dispatcher, Queue) {
        let (out, rx) = Outbox::channel();
        (Dispatcher::new(Arc::new(Test), out), rx)
    }

    async fn exchange(text: &str) -> Vec<Value> {
        let (d, mut rx) = dispatcher();
        d.handle(text).await;
        d.tracker.close();
        d.tracker.wait().await;
        drop(d);
        let mut out = Vec::new();
        while let Some(t) = rx.recv().await {
            out.push(serde_json::from_str(&t).unwrap());
        }
        out
    }

    fn err(id: Value, code: ErrorCode) -> (Value, i64) {
        (id, code.code() as i64)
    }

    fn codes(v: &Value) -> (Value, i64) {
        (v["id"].clone(), v["error"]["code"].as_i64().unwrap_or(0))
    }

    #[tokio::test]
    async fn requests_echo_their_id_exactly() {
        let out =
            exchange(r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"a1"}"#).await;
        assert_eq!(out, vec![json!({"jsonrpc":"2.0","id":"a1","result":19})]);
        let (d, mut rx) = dispatcher();
        d.handle(r#"{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":123456789012345678901234567890}"#)
            .await;
        assert_eq!(
            rx.recv().await.unwrap(),
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":0}"#
        );
    }

    #[tokio::test]
    async fn malformed_messages_get_the_standard_errors() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]"#,
                err(json!(null), ErrorCode::ParseError),
            ),
            (
                r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#,
                err(json!(null), ErrorCode::InvalidRequest),
            ),
            (
                r#"{"method":"subtract","id":1}"#,
                err(json!(1), ErrorCode::InvalidRequest),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"subtract","id":{"a":1}}"#,
                err(json!(null), ErrorCode::InvalidRequest),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"subtract","params":5,"id":2}"#,
                err(json!(2), ErrorCode::InvalidRequest),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"foobar","id":"1"}"#,
                err(json!("1"), ErrorCode::MethodNotFound),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"foobar","id":null}"#,
                err(json!(null), ErrorCode::MethodNotFound),
            ),
            ("[]", err(json!(null), ErrorCode::InvalidRequest)),
            ("17", err(json!(null), ErrorCode::InvalidRequest)),
        ];
        for (text, want) in cases {
            let out = exchange(text).await;
            assert_eq!(out.len(), 1, "{text}");
            assert_eq!(codes(&out[0]), want, "{text}");
        }
    }

    #[tokio::test]
    async fn a_response_is_an_invalid_request_unless_the_service_takes_responses() {
        for text in [
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"x"}}"#,
        ] {
            let out = exchange(text).await;
            assert_eq!(out.len(), 1, "{text}");
            assert_eq!(codes(&out[0]), err(json!(7), ErrorCode::InvalidRequest));
        }

        /// Takes every response and remembers it.
        #[derive(Default)]
        struct Taker(Mutex<Vec<(String, Reply)>>);
        impl Service for Taker {
            fn call(
                &self,
                _: &str,
                _: Option<Box<RawValue>>,
                _: Detach,
            ) -> Option<BoxFuture<'static, Reply>> {
                None
            }
            fn response(&self, id: &RawValue, outcome: Reply) -> bool {
                self.0.lock().unwrap().push((id.get().to_string(), outcome));
                true
            }
        }
        let taker = Arc::new(Taker::default());
        let (out, mut rx) = Outbox::channel();
        let d = Dispatcher::new(taker.clone(), out);
        d.handle(r#"{"jsonrpc":"2.0","id":7,"result":{"a":1}}"#)
            .await;
        d.handle(r#"[{"jsonrpc":"2.0","id":"s","error":{"code":-32603,"message":"no"}}]"#)
            .await;
        // A malformed error member is still an invalid request.
        d.handle(r#"{"jsonrpc":"2.0","id":8,"error":5}"#).await;
        let taken = taker.0.lock().unwrap();
        assert_eq!(taken.len(), 2);
        assert_eq!(taken[0].0, "7");
        assert_eq!(
            taken[0].1.as_ref().map(|r| r.get().to_string()).ok(),
            Some(r#"{"a":1}"#.into())
        );
        assert_eq!(taken[1].0, r#""s""#);
        assert_eq!(taken[1].1.as_ref().err().map(|e| e.code), Some(-32603));
        let answer: Value = serde_json::from_str(&rx.try_recv().unwrap()).unwrap();
        assert_eq!(codes(&answer), err(json!(8), ErrorCode::InvalidRequest));
        assert!(rx.try_recv().is_none());
    }

    #[tokio::test]
    async fn notifications_get_nothing() {
        assert!(
            exchange(r#"{"jsonrpc":"2.0","method":"subtract","params":[1,2]}"#)
                .await
                .is_empty()
        );
        assert!(exchange(r#"{"jsonrpc":"2.0","method":"nope"}"#)
            .await
            .is_empty());
        assert!(exchange(r#"[{"jsonrpc":"2.0","method":"subtract","params":[1,2]},{"jsonrpc":"2.0","method":"nope"}]"#).await.is_empty());
    }

    #[tokio::test]
    async fn a_batch_past_the_cap_is_one_error_and_runs_nothing() {
        let one = r#"{"jsonrpc":"2.0","method":"subtract","params":[5,1],"id":1}"#;
        let batch = format!("[{}]", vec![one; MAX_BATCH + 1].join(","));
        let out = exchange(&batch).await;
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0]["error"]["code"], -32600, "{}", out[0]);
        assert!(out[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("at most 1024")));
        let full = format!("[{}]", vec![one; MAX_BATCH].join(","));
        let out = exchange(&full).await;
        assert_eq!(out[0].as_array().map(Vec::len), Some(MAX_BATCH));
    }

    #[tokio::test]
    async fn batches_answer_each_request_in_order() {
        let out = exchange(
            r#"[{"jsonrpc":"2.0","method":"subtract","params":[5,1],"id":"1"},
                {"jsonrpc":"2.0","method":"subtract","params":[7]},
                {"foo":"boo"},
                {"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},
                1]"#,
        )
        .await;
        assert_eq!(out.len(), 1);
        let items = out[0].as_array().unwrap();
        let got: Vec<_> = items
            .iter()
            .map(|v| {
                (
                    v["id"].clone(),
                    v.get("result").cloned(),
                    v["error"]["code"].as_i64(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (json!("1"), Some(json!(4)), None),
                (json!(null), None, Some(-32600)),
                (json!("5"), None, Some(-32601)),
                (json!(null), None, Some(-32600)),
            ]
        );
    }

    #[tokio::test]
    async fn a_detached_call_lets_the_next_message_through_first() {
        let (d, mut rx) = dispatcher();
        d.handle(r#"{"jsonrpc":"2.0","method":"slow","id":1}"#)
            .await;
        d.handle(r#"{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":2}"#)
            .await;
        let first: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        let second: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(
            (first["id"].clone(), second["id"].clone()),
            (json!(2), json!(1))
        );
    }
}
