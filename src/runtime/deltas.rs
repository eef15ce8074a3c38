//! Text from the model on its way to `textDelta` events, paced by the client.
//!
//! Owns: [`Deltas`], the buffer between a provider (which pushes text as its stream arrives)
//! and the turn's forwarder (which turns it into events). Must not touch: the wire or the
//! provider formats.
//!
//! Pacing: once [`ROOM`] bytes wait in the buffer, [`TextSink::room`] holds the provider back
//! (it reads no more of its stream), so a client that stops reading slows the model instead of
//! letting text pile up in memory. Pieces are kept apart so that each can become its own event
//! while the client keeps up; the forwarder joins them when it cannot (see `pod::turn`).

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::Notify;

use crate::model::TextSink;

/// Bytes of text that may wait for the forwarder before the provider is held back.
pub(super) const ROOM: usize = 64 * 1024;

#[derive(Default)]
struct Pending {
    pieces: VecDeque<String>,
    bytes: usize,
    closed: bool,
}

/// See the module header. One producer (the provider) and one consumer (the forwarder).
#[derive(Default)]
pub(super) struct Deltas {
    pending: Mutex<Pending>,
    /// Wakes the forwarder: text arrived, or the stream ended.
    arrived: Notify,
    /// Wakes the provider: the forwarder took text.
    taken: Notify,
}

impl Deltas {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every piece waiting, oldest first; waits for one. `None` once closed and drained.
    pub(super) async fn take(&self) -> Option<Vec<String>> {
        loop {
            {
                let mut pending = self.lock();
                if !pending.pieces.is_empty() {
                    pending.bytes = 0;
                    let pieces = pending.pieces.drain(..).collect();
                    drop(pending);
                    self.taken.notify_one();
                    return Some(pieces);
                }
                if pending.closed {
                    return None;
                }
            }
            // `notify_one` keeps a permit when nobody waits yet, so a push between the check
            // above and this wait is not lost.
            self.arrived.notified().await;
        }
    }

    /// No more text will come (the response ended, or failed).
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.arrived.notify_one();
    }

    #[cfg(test)]
    fn waiting_bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[async_trait]
impl TextSink for Deltas {
    fn push(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        {
            let mut pending = self.lock();
            pending.bytes = pending.bytes.saturating_add(text.len());
            pending.pieces.push_back(text.to_string());
        }
        self.arrived.notify_one();
    }

    async fn room(&self) {
        loop {
            if self.lock().bytes < ROOM {
                return;
            }
            self.taken.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn the_provider_waits_for_room_and_pieces_come_out_in_order() {
        let deltas = Deltas::default();
        deltas.push("a");
        deltas.push("b");
        assert_eq!(deltas.take().await, Some(vec!["a".into(), "b".into()]));
        // Over the room: `room` waits until the forwarder takes the text.
        deltas.push(&"x".repeat(ROOM));
        let waited = tokio::time::timeout(Duration::from_millis(50), deltas.room()).await;
        assert!(waited.is_err(), "room() returned with {ROOM} bytes waiting");
        let (_, taken) = tokio::join!(deltas.room(), async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            deltas.take().await
        });
        assert_eq!(taken.map(|p| p.concat().len()), Some(ROOM));
        assert_eq!(deltas.waiting_bytes(), 0);
        deltas.push("tail");
        deltas.close();
        assert_eq!(deltas.take().await, Some(vec!["tail".into()]));
        assert_eq!(deltas.take().await, None);
    }
}
