//! Running one turn in its own task and streaming its events to the client.
//!
//! Owns: the order rule between a turn's events and its `run` response (the response is produced
//! only after the turn's last event is queued), the turn's pace (events go out through
//! [`Outbox::send_paced`], and the turn's event channel holds [`EVENT_QUEUE`] events, so a client
//! that does not read makes the turn wait), and surviving a panic in the turn: the client
//! still gets a `toolResult` for every open call, `turnEnded` with `stopReason: "error"`,
//! `status: idle`, and a normal `run` result, and stdout stays clean.

use std::future::Future;

use serde::Serialize;
use tokio::sync::mpsc;

use super::transport::Outbox;
use crate::protocol::{
    Event, OpenCalls, PodState, Resolution, ResolvedBy, RunResult, StopReason, Usage, EVENT_METHOD,
};
use crate::runtime::{RunError, TURN_FAILED_TEXT};

/// Events a turn may have produced and not yet handed to the outbox before it waits.
pub const EVENT_QUEUE: usize = 32;

#[derive(Serialize)]
struct Notification<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: &'a Event,
}

/// The `event` notification text for `event`.
pub fn notification(event: &Event) -> Option<String> {
    let message = Notification {
        jsonrpc: "2.0",
        method: EVENT_METHOD,
        params: event,
    };
    match serde_json::to_string(&message) {
        Ok(text) => Some(text),
        Err(e) => {
            tracing::error!("cannot serialize event: {e}");
            None
        }
    }
}

/// What the events of a turn told so far: enough to close it if the turn dies.
#[derive(Default)]
struct Seen {
    turn_id: Option<String>,
    open_calls: OpenCalls,
    /// Permission requests sent and not resolved: (request id, call id).
    open_requests: Vec<(String, String)>,
}

impl Seen {
    fn note(&mut self, event: &Event) {
        match event {
            Event::TurnStarted { turn_id } => self.turn_id = Some(turn_id.clone()),
            Event::ToolCall {
                turn_id, call_id, ..
            } => self.open_calls.call(turn_id, call_id),
            Event::ToolResult(result) => self.open_calls.result(&result.call_id),
            Event::PermissionRequest(r) => self
                .open_requests
                .push((r.request_id.clone(), r.call_id.clone())),
            Event::PermissionResolved { request_id, .. } => {
                self.open_requests.retain(|(r, _)| r != request_id)
            }
            _ => {}
        }
    }

    /// The events that end a turn that died, in protocol order.
    fn closing_events(&self, turn_id: &str, error: &str) -> Vec<Event> {
        // Every request gets its one `permissionResolved` (denied, as a cancel would).
        let mut events: Vec<Event> = self
            .open_requests
            .iter()
            .map(|(request_id, call_id)| Event::PermissionResolved {
                request_id: request_id.clone(),
                turn_id: turn_id.to_string(),
                call_id: call_id.clone(),
                decision: Resolution::Deny,
                by: ResolvedBy::Cancel,
            })
            .collect();
        events.extend(
            self.open_calls
                .closing(TURN_FAILED_TEXT)
                .into_iter()
                .map(Event::ToolResult),
        );
        if self.turn_id.is_some() {
            events.push(Event::TurnEnded {
                turn_id: turn_id.to_string(),
                stop_reason: StopReason::Error,
                error: Some(error.to_string()),
                usage: Usage::default(),
            });
        }
        events.push(Event::Status {
            state: PodState::Idle,
            mode: None,
        });
        events
    }
}

fn panic_text(e: tokio::task::JoinError) -> String {
    if e.is_cancelled() {
        return "the turn task was cancelled".into();
    }
    let payload = e.into_panic();
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("internal error: the turn panicked: {detail}")
}

/// Spawns `turn`, forwards `events` (the receiving end of the sink `turn` owns) to `out` in
/// order, and returns the turn's result once the last event is queued. `started` is called at the
/// first event (the turn is under way) or when the turn ends without one.
pub async fn drive<F>(
    turn: F,
    mut events: mpsc::Receiver<Event>,
    out: &Outbox,
    started: impl FnOnce(),
) -> Result<RunResult, RunError>
where
    F: Future<Output = Result<RunResult, RunError>> + Send + 'static,
{
    let task = tokio::spawn(turn);
    let mut started = Some(started);
    let mut seen = Seen::default();
    // The channel closes when the turn's future is dropped: finished or panicked.
    while let Some(event) = events.recv().await {
        if let Some(f) = started.take() {
            f();
        }
        seen.note(&event);
        if let Some(text) = notification(&event) {
            out.send_paced(text).await;
        }
    }
    if let Some(f) = started.take() {
        f();
    }
    match task.await {
        Ok(result) => result,
        Err(e) => {
            let error = panic_text(e);
            tracing::error!("{error}");
            let turn_id = seen
                .turn_id
                .clone()
                .unwrap_or_else(|| format!("turn_{}", uuid::Uuid::new_v4().simple()));
            for event in seen.closing_events(&turn_id, &error) {
                if let Some(text) = notification(&event) {
                    out.send_paced(text).await;
                }
            }
            Ok(RunResult {
                turn_id,
                stop_reason: StopReason::Error,
                error: Some(error),
                usage: Usage::default(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[tokio::test]
    async fn a_panicking_turn_is_closed_and_answers_with_error() {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let (out, mut written) = Outbox::channel();
        let turn = async move {
            let _ = tx
                .send(Event::TurnStarted {
                    turn_id: "t1".into(),
                })
                .await;
            let _ = tx
                .send(Event::ToolCall {
                    turn_id: "t1".into(),
                    call_id: "c1".into(),
                    tool: "bash".into(),
                    input: Value::Null,
                })
                .await;
            if tx.is_closed() {
                return Err(RunError::EmptyInput);
            }
            panic!("boom");
        };
        let result = drive(turn, rx, &out, || {}).await.unwrap();
        assert_eq!(result.stop_reason, StopReason::Error);
        assert_eq!(result.turn_id, "t1");
        assert!(result.error.unwrap_or_default().contains("boom"));
        drop(out);
        let mut types = Vec::new();
        while let Some(text) = written.recv().await {
            let v: Value = serde_json::from_str(&text).unwrap();
            types.push(v["params"]["type"].as_str().unwrap_or("").to_string());
        }
        assert_eq!(
            types,
            [
                "turnStarted",
                "toolCall",
                "toolResult",
                "turnEnded",
                "status"
            ]
        );
    }
}
