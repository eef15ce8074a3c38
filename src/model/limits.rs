//! What one model response may cost: its size, its number of tool calls, its duration.
//!
//! Owns: the limits of `[model]` (`max_response_bytes`, `max_tool_calls`,
//! `response_timeout_secs`) as the providers apply them, and the running count of one response
//! ([`Budget`]). Must not touch: HTTP or the provider formats; the providers call the budget as
//! text and tool input arrive, so a response over a limit ends while it streams, before it costs
//! more memory.

use std::time::Duration;

use super::ModelError;
use crate::manifest::ModelConfig;

/// The limits of one response, from the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Text plus tool-call inputs (names, ids and argument JSON), in bytes.
    pub max_response_bytes: usize,
    pub max_tool_calls: usize,
    /// From sending the request to the last event, retries included, not counting the time
    /// the pod waits for a slow client to read.
    pub response_timeout: Duration,
    /// Longest the stream may go without an event.
    pub idle_timeout: Duration,
}

impl Limits {
    pub(crate) fn from_config(config: &ModelConfig) -> Limits {
        Limits {
            max_response_bytes: config.max_response_bytes,
            max_tool_calls: config.max_tool_calls,
            response_timeout: config.response_timeout,
            idle_timeout: config.idle_timeout,
        }
    }

    /// The stream went `idle_timeout` without an event.
    pub(crate) fn idle(&self, provider: &'static str) -> ModelError {
        ModelError::Limit {
            provider,
            message: format!(
                "its stream sent no event for {} s (model.idle_timeout_secs)",
                self.idle_timeout.as_secs()
            ),
        }
    }

    /// The stream sent more than `max_response_bytes` of bytes that are not events.
    pub(crate) fn chatter(&self, provider: &'static str) -> ModelError {
        ModelError::Limit {
            provider,
            message: format!(
                "its stream sent more than {} bytes that are not events (keep-alives, comments; \
                 model.max_response_bytes)",
                self.max_response_bytes
            ),
        }
    }

    /// Largest line or event of the stream: twice the response limit, since JSON escaping can
    /// make text longer on the wire than it is, plus room for the event's own fields.
    pub(crate) fn max_event_bytes(&self) -> usize {
        self.max_response_bytes
            .saturating_mul(2)
            .saturating_add(64 * 1024)
    }

    pub(crate) fn timed_out(&self, provider: &'static str) -> ModelError {
        ModelError::Limit {
            provider,
            message: format!(
                "it took longer than {} s (model.response_timeout_secs)",
                self.response_timeout.as_secs()
            ),
        }
    }
}

/// What one response has used of its limits so far.
#[derive(Debug)]
pub(crate) struct Budget {
    provider: &'static str,
    limits: Limits,
    bytes: usize,
    calls: usize,
}

impl Budget {
    pub(crate) fn new(provider: &'static str, limits: Limits) -> Budget {
        Budget {
            provider,
            limits,
            bytes: 0,
            calls: 0,
        }
    }

    /// Counts `n` more bytes of text or tool input.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<(), ModelError> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.limits.max_response_bytes {
            return Err(ModelError::Limit {
                provider: self.provider,
                message: format!(
                    "its text and tool inputs passed {} bytes (model.max_response_bytes)",
                    self.limits.max_response_bytes
                ),
            });
        }
        Ok(())
    }

    /// Counts one more tool call.
    pub(crate) fn call(&mut self) -> Result<(), ModelError> {
        self.calls += 1;
        if self.calls > self.limits.max_tool_calls {
            return Err(ModelError::Limit {
                provider: self.provider,
                message: format!(
                    "it holds more than {} tool calls (model.max_tool_calls)",
                    self.limits.max_tool_calls
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(bytes: usize, calls: usize) -> Limits {
        Limits {
            max_response_bytes: bytes,
            max_tool_calls: calls,
            response_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn the_budget_refuses_past_each_limit_and_names_the_setting() {
        let mut b = Budget::new("anthropic", limits(10, 2));
        assert!(b.bytes(6).is_ok());
        assert!(b.bytes(4).is_ok());
        let e = b.bytes(1).unwrap_err().to_string();
        assert!(e.contains("model.max_response_bytes"), "{e}");
        assert!(b.call().is_ok() && b.call().is_ok());
        let e = b.call().unwrap_err().to_string();
        assert!(e.contains("more than 2 tool calls"), "{e}");
        // Counting never wraps.
        let mut b = Budget::new("openai", limits(usize::MAX, 1));
        assert!(b.bytes(usize::MAX).is_ok());
        assert!(b.bytes(usize::MAX).is_ok());
    }
}
