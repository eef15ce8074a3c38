//! Shared HTTP plumbing of the network providers (Anthropic, OpenAI-compatible).
//!
//! Owns: the API key lookup (`api_key_env` / `api_key_file`; the key is never logged and never
//! put in an error message), the `reqwest` client with its connect and read timeouts, sending a
//! request with retries (exponential backoff with jitter on 429 / 5xx / connection errors,
//! honoring `retry-after` in seconds, at most `max_retries` retries), extracting the API's error
//! message from an error body (read up to [`ERROR_BODY_READ`] bytes, never whole), and reading a
//! response's event stream ([`Http::stream`]) under cancellation, the response deadline and the
//! client's pace.
//!
//! Must not touch: the provider JSON formats (each provider module owns its own), SSE framing
//! (`sse`), permissions, tools, the turn loop.
//!
//! Cancellation: every await here (sending, backoff sleeps, reading an error body, each stream
//! chunk) is raced against the cancellation token; once it fires the call returns
//! [`ModelError::Cancelled`] and the response / stream is dropped, closing the connection.
//!
//! Pace: before each chunk of the stream is read, [`TextSink::room`] is awaited, so a client
//! that does not read its events holds the model stream back instead of letting text pile up in
//! memory. Time spent waiting there does not count against `response_timeout_secs`.

use std::time::Duration;

use futures::StreamExt;
use rand::Rng;
use reqwest::{RequestBuilder, Response, StatusCode};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::limits::Limits;
use super::sse::{SseEvent, SseParser};
use super::{ModelError, TextSink};
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
/// At most this much of an error body (or of a body that is not an event stream) is read; the
/// rest is dropped with the connection.
pub(crate) const ERROR_BODY_READ: usize = 64 * 1024;

/// Where the API key comes from when the manifest names neither `api_key_env` nor
/// `api_key_file`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DefaultKey {
    /// Read this environment variable; missing is a configuration error.
    Env(&'static str),
    /// No key: requests go without authentication (local servers).
    None,
    /// The default variable may not be read: the `[model]` in force came from a project and
    /// names its own `base_url` (pod never sends the user's key to an endpoint another layer
    /// chose). An error saying so.
    Withheld,
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
        DefaultKey::Withheld => Err(ModelError::Config(format!(
            "{provider}: model.base_url comes from the project's pod.toml, so pod does not send \
             it your key from the environment; name the key for that endpoint in the same \
             [model] (api_key_env or api_key_file), or move [model] to your user configuration"
        ))),
    }
}

fn env_key(var: &str, provider: &'static str, origin: &str) -> Result<String, ModelError> {
    match std::env::var(var) {
        Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_string()),
        Ok(_) => Err(ModelError::Environment(format!(
            "{provider}: the API key environment variable {var} ({origin}) is empty"
        ))),
        Err(_) => Err(ModelError::Environment(format!(
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
    /// `model.timeout_secs`, for the message of a request that timed out.
    timeout: Duration,
    limits: Limits,
}

/// What the provider's event handler says after an event.
#[derive(Debug)]
pub(crate) enum Flow {
    Continue,
    /// The response is complete; stop reading.
    Done,
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
            // A redirect would carry the conversation (and the key header) to wherever the
            // endpoint points: none is followed; `send` names the new location in its error.
            .redirect(reqwest::redirect::Policy::none())
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
            timeout,
            limits: Limits::from_config(config),
        })
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// One streamed response: sends the request built by `build` (with retries), checks that
    /// the answer is an event stream, and calls `on_event` for each event until it says
    /// [`Flow::Done`] (returns `Ok(true)`) or the body ends (`Ok(false)` when it ended between
    /// events; an end mid-event is a transport error). All of it within the response deadline.
    pub(crate) async fn stream(
        &self,
        build: impl Fn() -> RequestBuilder,
        deltas: &dyn TextSink,
        cancel: &CancellationToken,
        on_event: impl FnMut(SseEvent) -> Result<Flow, ModelError>,
    ) -> Result<bool, ModelError> {
        let mut deadline = later(Instant::now(), self.limits.response_timeout);
        let response = tokio::select! {
            biased;
            r = self.send(build, cancel) => r?,
            () = tokio::time::sleep_until(deadline) => {
                return Err(self.limits.timed_out(self.provider))
            }
        };
        if let Some(kind) = not_an_event_stream(response.headers()) {
            let body = read_body(response, cancel).await?;
            return Err(ModelError::Protocol {
                provider: self.provider,
                message: format!(
                    "expected an event stream (text/event-stream), got a {kind} response: {}",
                    api_message(&body)
                ),
            });
        }
        read_sse(
            response,
            self.provider,
            &mut deadline,
            self.limits,
            deltas,
            cancel,
            on_event,
        )
        .await
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
                    if status.is_redirection() {
                        let to = response
                            .headers()
                            .get(reqwest::header::LOCATION)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("nowhere")
                            .chars()
                            .take(200)
                            .collect::<String>();
                        return Err(ModelError::Api {
                            provider,
                            status: status.as_u16(),
                            message: format!(
                                "the endpoint {} redirects to {to}; pod does not follow \
                                 redirects of model requests (they would carry the \
                                 conversation and the key elsewhere): set model.base_url to \
                                 the address that answers",
                                shown_url(response.url())
                            ),
                        });
                    }
                    let retryable =
                        status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
                    let retry_after = retry_after(&response);
                    if !retryable || retries >= self.max_retries {
                        // A 404 is most often a wrong `base_url`: say where the request went.
                        let url =
                            (status == StatusCode::NOT_FOUND).then(|| shown_url(response.url()));
                        let body = read_body(response, cancel).await?;
                        let mut message = api_message(&body);
                        if let Some(url) = url {
                            message.push_str(&format!(" (URL {url}; check model.base_url)"));
                        }
                        if retryable {
                            message.push_str(&gave_up(retries));
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
                    // An endpoint that accepts and never answers is retried once, not
                    // `max_retries` times: each attempt waits the whole timeout.
                    let limit = if e.is_timeout() {
                        self.max_retries.min(1)
                    } else {
                        self.max_retries
                    };
                    if !retryable || retries >= limit {
                        let mut message = error_chain(&e);
                        if e.is_timeout() {
                            message.push_str(&format!(
                                " (nothing arrived within model.timeout_secs = {} s; raise it \
                                 for a slow endpoint, check model.base_url for a wrong one)",
                                self.timeout.as_secs()
                            ));
                        }
                        if retryable && retries > 0 {
                            message.push_str(&gave_up(retries));
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

/// ` (gave up after N attempts)`, after `retries` retries.
fn gave_up(retries: u32) -> String {
    match retries {
        0 => " (gave up after 1 attempt)".to_string(),
        n => format!(" (gave up after {} attempts)", n + 1),
    }
}

/// The content type of a successful answer that is not an event stream (an HTML page from a
/// proxy, a plain JSON body from a server that ignored `stream: true`); `None` for an event
/// stream, and for a response without a content type (read as a stream).
fn not_an_event_stream(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let kind = headers.get(reqwest::header::CONTENT_TYPE)?;
    let kind = String::from_utf8_lossy(kind.as_bytes()).trim().to_string();
    let essence = kind.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("text/event-stream") {
        None
    } else {
        Some(format!("{kind:?}"))
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

/// Reads at most [`ERROR_BODY_READ`] bytes of a body (bounded by the read timeout) under
/// cancellation; the rest is never read.
async fn read_body(response: Response, cancel: &CancellationToken) -> Result<String, ModelError> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while body.len() < ERROR_BODY_READ {
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            chunk = stream.next() => chunk,
        };
        match chunk {
            Some(Ok(bytes)) => {
                let room = ERROR_BODY_READ - body.len();
                body.extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
            Some(Err(_)) | None => break,
        }
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// `url` as an error message may show it: without its query, fragment and credentials, where a
/// key could hide.
fn shown_url(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    // Both fail only for URLs that cannot carry credentials, which then have none to hide.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

/// What the API said in an error body: `error.message` (Anthropic, OpenAI), `error` as a
/// string (llama.cpp, Ollama), `message`, a summary of an HTML page (a proxy's or a web
/// server's error page), or else the body itself, cut short.
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
    if let Some(summary) = html_summary(body) {
        return summary;
    }
    let mut cut: String = body.chars().take(ERROR_BODY_LIMIT).collect();
    if cut.len() < body.len() {
        cut.push_str("...");
    }
    cut
}

/// Longest summary of an HTML page, in characters.
const HTML_SUMMARY_LIMIT: usize = 200;

/// `an HTML page: <its title>` (or its first line of text) when `body` is an HTML document;
/// a page of markup says nothing more useful than that line.
fn html_summary(body: &str) -> Option<String> {
    // ASCII lowering keeps byte offsets, so positions found in `lower` index `body`.
    let lower = body.to_ascii_lowercase();
    let head = &lower[..lower.len().min(1024)];
    let is_html = lower.starts_with('<')
        && (head.contains("<!doctype html") || head.contains("<html") || head.contains("<body"));
    if !is_html {
        return None;
    }
    let title = lower.find("<title").and_then(|open| {
        let start = open + lower[open..].find('>')? + 1;
        let end = start + lower[start..].find("</title")?;
        body.get(start..end)
    });
    let text = match title.map(squeeze).filter(|t| !t.is_empty()) {
        Some(title) => title,
        None => without_tags(body)
            .lines()
            .map(squeeze)
            .find(|line| !line.is_empty())
            .unwrap_or_default(),
    };
    let mut cut: String = text.chars().take(HTML_SUMMARY_LIMIT).collect();
    if cut.len() < text.len() {
        cut.push_str("...");
    }
    Some(if cut.is_empty() {
        "an HTML page without text".to_string()
    } else {
        format!("an HTML page: {cut}")
    })
}

/// Elements that start a new line of text.
const BLOCK_TAGS: [&str; 22] = [
    "address",
    "article",
    "blockquote",
    "body",
    "br",
    "center",
    "div",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "html",
    "li",
    "main",
    "p",
    "pre",
    "tr",
];

/// Runs of whitespace as one space, trimmed.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text of markup: everything outside `<...>`, with `<head>`, `<script>` and `<style>`
/// elements dropped.
fn without_tags(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let tag = &rest[open..];
        let lower = tag.to_ascii_lowercase();
        let skipped = ["head", "script", "style"].iter().find_map(|name| {
            let opens = lower[1..].starts_with(name)
                && lower[1 + name.len()..].starts_with(|c: char| c == '>' || c.is_whitespace());
            let close = format!("</{name}");
            opens.then(|| lower.find(&close).map(|at| at + close.len()))?
        });
        let from = skipped.unwrap_or(0);
        match tag[from..].find('>') {
            Some(end) => {
                rest = &tag[from + end + 1..];
                let name = lower[1..]
                    .trim_start_matches('/')
                    .split(|c: char| !c.is_ascii_alphanumeric())
                    .next()
                    .unwrap_or("");
                // Block elements end a line; inline ones (`<b>`, `<a>`) are part of it.
                out.push(if BLOCK_TAGS.contains(&name) {
                    '\n'
                } else {
                    ' '
                });
            }
            None => return out,
        }
    }
    out.push_str(rest);
    out
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

/// Reads the SSE body of `response` (see [`Http::stream`]).
async fn read_sse(
    response: Response,
    provider: &'static str,
    deadline: &mut Instant,
    limits: Limits,
    deltas: &dyn TextSink,
    cancel: &CancellationToken,
    mut on_event: impl FnMut(SseEvent) -> Result<Flow, ModelError>,
) -> Result<bool, ModelError> {
    let mut stream = response.bytes_stream();
    let mut parser = SseParser::new(limits.max_event_bytes());
    // Progress is an event: keep-alives and comments keep the connection up, not the turn.
    let mut idle_until = later(Instant::now(), limits.idle_timeout);
    let refused = |e: super::sse::SseError| ModelError::Limit {
        provider,
        message: format!("{e} (twice model.max_response_bytes, plus 64 KiB)"),
    };
    loop {
        // The client's pace: read no more of the stream until the text so far has room.
        let paused = Instant::now();
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            () = deltas.room() => {}
        }
        *deadline = later(*deadline, paused.elapsed());
        idle_until = later(idle_until, paused.elapsed());
        let chunk = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ModelError::Cancelled),
            () = tokio::time::sleep_until(*deadline) => return Err(limits.timed_out(provider)),
            () = tokio::time::sleep_until(idle_until) => return Err(limits.idle(provider)),
            chunk = stream.next() => chunk,
        };
        match chunk {
            Some(Ok(bytes)) => {
                let events = parser.push(&bytes).map_err(refused)?;
                if parser.idle_bytes() > limits.max_response_bytes as u64 {
                    return Err(limits.chatter(provider));
                }
                if !events.is_empty() {
                    idle_until = later(Instant::now(), limits.idle_timeout);
                }
                for event in events {
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
                for event in parser.finish().map_err(refused)? {
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

/// `at + by`, or a century later when that does not fit.
fn later(at: Instant, by: Duration) -> Instant {
    at.checked_add(by)
        .or_else(|| at.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(at)
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
    fn an_html_page_is_summarised_by_its_title_or_first_line() {
        let page = "<!DOCTYPE html>\n<html><head><title>502 Bad\n  Gateway</title>\
                    <style>body { color: red }</style></head>\
                    <body><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>";
        assert_eq!(api_message(page), "an HTML page: 502 Bad Gateway");
        let untitled = "<html>\n<head><script>var x = '<b>';</script></head>\n<body>\n\n  \
                        <p>The <b>service</b> is\n down</p></body></html>";
        assert_eq!(api_message(untitled), "an HTML page: The service is");
        assert_eq!(
            api_message("<html><body></body></html>"),
            "an HTML page without text"
        );
        let long = format!("<html><title>{}</title></html>", "é".repeat(300));
        let summary = api_message(&long);
        assert_eq!(summary.chars().count(), "an HTML page: ".len() + 200 + 3);
        // Not HTML: kept as is.
        assert_eq!(api_message("<not html>"), "<not html>");
    }

    #[test]
    fn a_shown_url_keeps_no_query_or_credentials() {
        let url = reqwest::Url::parse("https://user:secret@api.example.com/v1/chat?key=sk-1#x")
            .expect("a valid URL");
        assert_eq!(shown_url(&url), "https://api.example.com/v1/chat");
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
