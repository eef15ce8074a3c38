//! Shared HTTP plumbing of the network providers (Anthropic, OpenAI-compatible).
//!
//! Owns: the API key lookup (`api_key_env` / `api_key_file`; the key is never logged and never
//! put in an error message), the `reqwest` client with its connect and read timeouts, sending a
//! request with retries (exponential backoff with jitter on 429 / 5xx / connection errors,
//! honoring `retry-after` in seconds, at most `max_retries` retries), extracting the API's error
//! message from an error body, the SSE parser, and reading an SSE body under cancellation.
//!
//! Must not touch: the provider JSON formats (each provider module owns its own), permissions,
//! tools, the turn loop.
//!
//! Cancellation: every await here (sending, backoff sleeps, reading an error body, each stream
//! chunk) is raced against the cancellation token; once it fires the call returns
//! [`ModelError::Cancelled`] and the response / stream is dropped, closing the connection.

use std::time::Duration;

use futures::StreamExt;
use rand::Rng;
use reqwest::{RequestBuilder, Response, StatusCode};
use tokio_util::sync::CancellationToken;

use super::ModelError;
use crate::manifest::ModelConfig;

/// First backoff delay; doubled per retry, capped at [`BACKOFF_CAP`], then jittered.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// A `retry-after` longer than this is clamped to it.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);
/// Connect timeout upper bound (the configured timeout is used when it is shorter).
const CONNECT_TIMEOUT_CAP: Duration = Duration::from_secs(30);
/// Error bodies are cut to this many characters in messages.
const ERROR_BODY_LIMIT: usize = 500;

/// Where the API key comes from when the manifest names neither `api_key_env` nor
/// `api_key_file`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DefaultKey {
    /// Read this environment variable; missing is a configuration error.
    Env(&'static str),
    /// No key: requests go without authentication (local servers).
    None,
}

/// The API key: `api_key_env` first, then `api_key_file`, then the provider's default.
/// Errors name the variable or file, never the key.
pub(crate) fn api_key(
    config: &ModelConfig,
    provider: &'static str,
    default: DefaultKey,
) -> Result<Option<String>, ModelError> {
    if let Some(var) = &config.api_key_env {
        return env_key(var, provider, "model.api_key_env").map(Some);
    }
    if let Some(path) = &config.api_key_file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ModelError::Config(format!(
                "{provider}: cannot read the API key file {} (model.api_key_file): {}",
                path.display(),
                e.kind()
            ))
        })?;
        let key = text.trim();
        if key.is_empty() {
            return Err(ModelError::Config(format!(
                "{provider}: the API key file {} (model.api_key_file) is empty",
                path.display()
            )));
        }
        return Ok(Some(key.to_string()));
    }
    match default {
        DefaultKey::Env(var) => env_key(
            var,
            provider,
            "the default; set model.api_key_env or model.api_key_file to change it",
        )
        .map(Some),
        DefaultKey::None => Ok(None),
    }
}

fn env_key(var: &str, provider: &'static str, origin: &str) -> Result<String, ModelError> {
    match std::env::var(var) {
        Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_string()),
        Ok(_) => Err(ModelError::Config(format!(
            "{provider}: the API key environment variable {var} ({origin}) is empty"
        ))),
        Err(_) => Err(ModelError::Config(format!(
            "{provider}: the API key environment variable {var} ({origin}) is not set"
        ))),
    }
}

/// The model name; required for the network providers.
pub(crate) fn model_name(
    config: &ModelConfig,
    provider: &'static str,
) -> Result<String, ModelError> {
    match config.model.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => Ok(m.to_string()),
        _ => Err(ModelError::Config(format!(
            "{provider}: model.model is required (the model name sent to the API)"
        ))),
    }
}

/// `base_url` without a trailing slash, or the provider's default.
pub(crate) fn base_url(config: &ModelConfig, default: &str) -> String {
    config
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .unwrap_or(default)
        .trim_end_matches('/')
        .to_string()
}

/// A client with retries for one provider.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    provider: &'static str,
    max_retries: u32,
}

impl Http {
    /// Connect timeout: the configured timeout capped at 30 s. Read timeout: the configured
    /// timeout, applied to each read (so a long stream is fine, a stalled one is not).
    pub(crate) fn new(config: &ModelConfig, provider: &'static str) -> Result<Http, ModelError> {
        let timeout = if config.timeout.is_zero() {
            Duration::from_secs(300)
        } else {
            config.timeout
        };
        let client = reqwest::Client::builder()
            .connect_timeout(timeout.min(CONNECT_TIMEOUT_CAP))
            .read_timeout(timeout)
            .user_agent(concat!("pod/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ModelError::Config(format!("{provider}: cannot build the HTTP client: {e}"))
            })?;
        Ok(Http {
            client,
            provider,
            max_retries: config.max_retries,
        })
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends the request built by `build` (called once per attempt) and returns the first
    /// successful response. Retries 429, 5xx and connection errors; any other error status is
    /// an [`ModelError::Api`] carrying the API's message.
    pub(crate) async fn send(
        &self,
        build: impl Fn() -> RequestBuilder,
        cancel: &CancellationToken,
    ) -> Result<Response, ModelError> {
        let provider = self.provider;
        let mut retries = 0u32;
        loop {
            let attempt = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                r = build().send() => r,
            };
            let wait = match attempt {
                Ok(response) => {
                    let status = response.status();
                    if status.is_success() {
                        return Ok(response);
                    }
                    let retryable =
                        status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
                    let retry_after = retry_after(&response);
                    if !retryable || retries >= self.max_retries {
                        let body = read_body(response, cancel).await?;
                        let mut message = api_message(&body);
                        if retryable {
                            message.push_str(&format!(" (gave up after {} attempts)", retries + 1));
                        }
                        return Err(ModelError::Api {
                            provider,
                            status: status.as_u16(),
                            message,
                        });
                    }
                    tracing::warn!(
                        provider,
                        status = status.as_u16(),
                        retries,
                        "retrying model request"
                    );
                    retry_after.unwrap_or_else(|| backoff(retries))
                }
                Err(e) => {
                    let retryable = e.is_connect() || e.is_timeout() || e.is_request();
                    if !retryable || retries >= self.max_retries {
                        let mut message = error_chain(&e);
                        if retryable && retries > 0 {
                            message.push_str(&format!(" (gave up after {} attempts)", retries + 1));
                        }
                        return Err(ModelError::Transport { provider, message });
                    }
                    tracing::warn!(
                        provider,
                        retries,
                        "retrying model request after a connection error"
                    );
                    backoff(retries)
                }
            };
            retries += 1;
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// `retry-after` in seconds (integer or decimal), clamped to a minute.
fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?;
    let secs: f64 = value.to_str().ok()?.trim().parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some(Duration::from_secs_f64(secs).min(RETRY_AFTER_CAP))
}

/// Exponential backoff with jitter: base * 2^retry, capped, times a random factor in [0.5, 1.5).
fn backoff(retry: u32) -> Duration {
    let exp = BACKOFF_BASE
        .saturating_mul(1u32 << retry.min(16))
        .min(BACKOFF_CAP);
    let factor: f64 = rand::thread_rng().gen_range(0.5..1.5);
    exp.mul_f64(factor)
}

/// Reads an error body (bounded by the read timeout) under cancellation.
async fn read_body(response: Response, cancel: &CancellationToken) -> Result<String, ModelError> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ModelError::Cancelled),
        body = response.text() => Ok(body.unwrap_or_default()),
    }
}

/// What the API said in an error body: `error.message` (Anthropic, OpenAI), `error` as a
/// string (llama.cpp, Ollama), `message`, or else the body itself, cut short.
pub(crate) fn api_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(body) {
        let found = json
            .pointer("/error/message")
            .and_then(|v| v.as_str())
            .or_else(|| json.get("error").and_then(|v| v.as_str()))
            .or_else(|| json.get("message").and_then(|v| v.as_str()))
            .or_else(|| json.get("detail").and_then(|v| v.as_str()));
        if let Some(message) = found {
            let kind = json.pointer("/error/type").and_then(|v| v.as_str());
            return match kind {
                Some(kind) if !kind.is_empty() => format!("{kind}: {message}"),
                _ => message.to_string(),
            };
        }
    }
    let body = body.trim();
    if body.is_empty() {
        return "(empty error body)".to_string();
    }
    let mut cut: String = body.chars().take(ERROR_BODY_LIMIT).collect();
    if cut.len() < body.len() {
        cut.push_str("...");
    }
    cut
}

/// An error and its sources, joined with ": ".
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    message
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SseEvent {
    /// The `event:` field; empty when absent (the default type, "message").
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// An incremental SSE parser (the WHATWG event-stream format): `event:` and `data:` fields,
/// multi-line data, `:` comments, `id:` / `retry:` ignored, lines ended by LF, CRLF or CR.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// A field line was seen since the last dispatch.
    pending: bool,
}

impl SseParser {
    pub(crate) fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds bytes; returns the events completed by them.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.buf.len() {
            match self.buf[i] {
                b'\n' => {
                    let line = self.buf[start..i].to_vec();
                    self.line(&line, &mut events);
                    i += 1;
                    start = i;
                }
                b'\r' => {
                    if i + 1 == self.buf.len() {
                        // Could be the first half of CRLF: wait for the next byte.
                        break;
                    }
                    let line = self.buf[start..i].to_vec();
                    self.line(&line, &mut events);
                    i += if self.buf[i + 1] == b'\n' { 2 } else { 1 };
                    start = i;
                }
                _ => i += 1,
            }
        }
        self.buf.drain(..start);
        events
    }

    /// At the end of the body: completes a line held back for a possible CRLF. An event still
    /// unfinished afterwards is incomplete (see [`SseParser::is_mid_event`]) and is discarded.
    pub(crate) fn finish(&mut self) -> Vec<SseEvent> {
        if self.buf.last() == Some(&b'\r') {
            self.push(b"\n")
        } else {
            Vec::new()
        }
    }

    /// Whether bytes or fields of an unfinished event are buffered.
    pub(crate) fn is_mid_event(&self) -> bool {
        self.pending || !self.buf.is_empty()
    }

    fn line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) {
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            if self.has_data {
                events.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            self.pending = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.find(':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => {
                self.event = value.to_string();
                self.pending = true;
            }
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                self.pending = true;
            }
            _ => {}
        }
    }
}

/// What the provider's event handler says after an event.
pub(crate) enum Flow {
    Continue,
    /// The response is complete; stop reading.
    Done,
}

/// Reads the SSE body of `response`, calling `on_event` for each event, until the handler says
/// [`Flow::Done`] (returns `Ok(true)`) or the body ends (returns `Ok(false)` when it ended
/// between events; an end mid-event is a transport error). Cancellation drops the stream.
pub(crate) async fn read_sse(
    response: Response,
    provider: &'static str,
    cancel: &CancellationToken,
    mut on_event: impl FnMut(SseEvent) -> Result<Flow, ModelError>,
) -> Result<bool, ModelError> {
    let mut stream = response.bytes_stream();
    let mut parser = SseParser::new();
    loop {
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            chunk = stream.next() => chunk,
        };
        match chunk {
            Some(Ok(bytes)) => {
                for event in parser.push(&bytes) {
                    if let Flow::Done = on_event(event)? {
                        return Ok(true);
                    }
                }
            }
            Some(Err(e)) => {
                return Err(ModelError::Transport {
                    provider,
                    message: format!(
                        "stream ended before the response finished: {}",
                        error_chain(&e)
                    ),
                })
            }
            None => {
                for event in parser.finish() {
                    if let Flow::Done = on_event(event)? {
                        return Ok(true);
                    }
                }
                if parser.is_mid_event() {
                    return Err(ended_early(provider));
                }
                return Ok(false);
            }
        }
    }
}

/// The transport error for a stream that ended before the response was complete.
pub(crate) fn ended_early(provider: &'static str) -> ModelError {
    ModelError::Transport {
        provider,
        message: "stream ended before the response finished".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(parser: &mut SseParser, chunks: &[&str]) -> Vec<SseEvent> {
        chunks
            .iter()
            .flat_map(|c| parser.push(c.as_bytes()))
            .collect()
    }

    #[test]
    fn sse_event_and_data() {
        let mut p = SseParser::new();
        let events = feed(&mut p, &["event: a\ndata: {\"x\":1}\n\n"]);
        assert_eq!(
            events,
            vec![SseEvent {
                event: "a".into(),
                data: "{\"x\":1}".into()
            }]
        );
        assert!(!p.is_mid_event());
    }

    #[test]
    fn sse_multiline_data_comments_crlf_split_chunks() {
        let mut p = SseParser::new();
        let events = feed(
            &mut p,
            &[
                ": keepalive\r\n",
                "data: one\r",
                "\ndata:two\r\n",
                "\r",
                "\ndata: x\r\rdata: y\n\n",
            ],
        );
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: String::new(),
                    data: "one\ntwo".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "x".into()
                },
                SseEvent {
                    event: String::new(),
                    data: "y".into()
                },
            ]
        );
    }

    #[test]
    fn sse_mid_event_detected() {
        let mut p = SseParser::new();
        assert!(feed(&mut p, &["event: a\ndata: {\"x\""]).is_empty());
        assert!(p.is_mid_event());
        let mut q = SseParser::new();
        feed(&mut q, &["event: a\n"]);
        assert!(q.is_mid_event());
    }

    #[test]
    fn sse_event_without_data_is_not_dispatched() {
        let mut p = SseParser::new();
        assert!(feed(&mut p, &["event: ping\n\n"]).is_empty());
    }

    #[test]
    fn api_message_shapes() {
        assert_eq!(
            api_message(
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad thing"}}"#
            ),
            "invalid_request_error: bad thing"
        );
        assert_eq!(
            api_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(api_message("plain text"), "plain text");
        assert_eq!(api_message(""), "(empty error body)");
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        for retry in 0..40 {
            let d = backoff(retry);
            assert!(d <= BACKOFF_CAP.mul_f64(1.5));
        }
        assert!(backoff(0) < Duration::from_millis(400));
    }
}
