//! The Anthropic Messages API provider (`provider = "anthropic"`).
//!
//! Owns: mapping the provider-neutral conversation to a Messages API request
//! (`POST {base_url}/v1/messages`, streaming) and the streamed events back to one
//! [`ModelResponse`]. Must not touch: HTTP retries, keys and SSE framing (in `http` and `sse`),
//! permissions, tools, the turn loop.
//!
//! Mapping: `User` -> a user message with the text; `Assistant` -> an assistant message with a
//! `text` block (when non-empty) and one `tool_use` block per call; `ToolResults` -> one user
//! message with a `tool_result` block per result (`tool_use_id`, `content`), and
//! **`is_error: true` on every error result** (synthetic denials included). An assistant message
//! with neither text nor calls is left out (the API rejects empty content).
//!
//! Stream: `message_start` (input usage), `content_block_start` / `content_block_delta`
//! (`text_delta` is sent on `deltas` as it arrives; `input_json_delta` is accumulated per block
//! index) / `content_block_stop`, `message_delta` (stop reason, output usage), `message_stop`
//! (done), `ping` (ignored), `error` (an [`ModelError::Api`] with the API's message). A body that
//! ends before `message_stop` is a transport error. A block index that starts twice in one
//! response is a protocol error (it would otherwise drop the earlier block, a tool call among
//! them). Text, tool inputs and the number of tool calls count against the response's
//! `Budget` as they arrive.
//!
//! Key: `api_key_env`, else `api_key_file`, else the `ANTHROPIC_API_KEY` environment variable;
//! sent as `x-api-key`, never logged.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::http::{self, DefaultKey, Flow, Http};
use super::limits::{Budget, Limits};
use super::{
    Message, Model, ModelError, ModelRequest, ModelResponse, ModelStop, TextSink, ToolCall,
};
use crate::manifest::ModelConfig;
use crate::protocol::Usage;

const PROVIDER: &str = "anthropic";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const DEFAULT_KEY_ENV: &str = "ANTHROPIC_API_KEY";
const API_VERSION: &str = "2023-06-01";

pub struct Anthropic {
    http: Http,
    url: String,
    model: String,
    key: String,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl Anthropic {
    pub fn from_config(config: &ModelConfig) -> Result<Anthropic, ModelError> {
        let model = http::model_name(config, PROVIDER)?;
        let default_key = if config.default_key {
            DefaultKey::Env(DEFAULT_KEY_ENV)
        } else {
            DefaultKey::Withheld
        };
        let key = http::api_key(config, PROVIDER, default_key)?
            .ok_or_else(|| ModelError::Config(format!("{PROVIDER}: an API key is required")))?;
        Ok(Anthropic {
            http: Http::new(config, PROVIDER)?,
            url: format!("{}/v1/messages", http::base_url(config, DEFAULT_BASE_URL)),
            model,
            key,
        })
    }

    /// The request body (public to the crate for tests).
    pub(crate) fn body(&self, request: &ModelRequest<'_>) -> Value {
        let mut body = json!({
            "model": self.model,
            "max_tokens": request.max_tokens,
            "stream": true,
            "messages": messages(request.messages),
        });
        if let Some(system) = request.system {
            if !system.is_empty() {
                body["system"] = json!(system);
            }
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.input_schema,
                    })
                })
                .collect();
        }
        body
    }
}

fn messages(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::User { text } => out.push(json!({
                "role": "user",
                "content": [{"type": "text", "text": text}],
            })),
            Message::Assistant { text, tool_calls } => {
                let mut content = Vec::new();
                if !text.is_empty() {
                    content.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    let input = if call.input.is_object() {
                        call.input.clone()
                    } else {
                        json!({})
                    };
                    content.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": input,
                    }));
                }
                if !content.is_empty() {
                    out.push(json!({"role": "assistant", "content": content}));
                }
            }
            Message::ToolResults { results } => {
                let content: Vec<Value> = results
                    .iter()
                    .map(|r| {
                        let mut block = json!({
                            "type": "tool_result",
                            "tool_use_id": r.call_id,
                            "content": r.content,
                        });
                        if r.is_error {
                            block["is_error"] = json!(true);
                        }
                        block
                    })
                    .collect();
                if !content.is_empty() {
                    out.push(json!({"role": "user", "content": content}));
                }
            }
        }
    }
    out
}

/// One content block being streamed.
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// Most content blocks other than tool calls open at once (text, thinking); real responses
/// open one at a time.
const MAX_OPEN_BLOCKS: usize = 64;

/// The response as assembled from the stream.
struct Assembly {
    text: String,
    /// Blocks started and not stopped yet.
    blocks: BTreeMap<u64, Block>,
    calls: BTreeMap<u64, ToolCall>,
    stop: Option<String>,
    usage: Usage,
    budget: Budget,
}

impl Assembly {
    fn new(limits: Limits) -> Assembly {
        Assembly {
            text: String::new(),
            blocks: BTreeMap::new(),
            calls: BTreeMap::new(),
            stop: None,
            usage: Usage::default(),
            budget: Budget::new(PROVIDER, limits),
        }
    }

    fn text(&mut self, text: &str, deltas: &dyn TextSink) -> Result<(), ModelError> {
        if !text.is_empty() {
            self.budget.bytes(text.len())?;
            self.text.push_str(text);
            deltas.push(text);
        }
        Ok(())
    }

    fn event(&mut self, data: &str, deltas: &dyn TextSink) -> Result<Flow, ModelError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|e| protocol(format!("an event is not valid JSON ({e})")))?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    self.usage(usage);
                }
            }
            "content_block_start" => {
                let index = index(&event)?;
                if self.blocks.contains_key(&index) || self.calls.contains_key(&index) {
                    return Err(protocol(format!(
                        "content block {index} was started twice in one response"
                    )));
                }
                let block = event.get("content_block").unwrap_or(&Value::Null);
                let block = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                        self.text(text, deltas)?;
                        Block::Text
                    }
                    Some("tool_use") => {
                        self.budget.call()?;
                        let (id, name) = (str_field(block, "id"), str_field(block, "name"));
                        self.budget.bytes(id.len() + name.len())?;
                        Block::ToolUse {
                            id,
                            name,
                            json: String::new(),
                        }
                    }
                    _ => Block::Other,
                };
                let open_others = self
                    .blocks
                    .values()
                    .filter(|b| !matches!(b, Block::ToolUse { .. }))
                    .count();
                if !matches!(block, Block::ToolUse { .. }) && open_others >= MAX_OPEN_BLOCKS {
                    return Err(protocol(format!(
                        "more than {MAX_OPEN_BLOCKS} content blocks open at once"
                    )));
                }
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let index = index(&event)?;
                let delta = event.get("delta").unwrap_or(&Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        self.text(text, deltas)?;
                    }
                    Some("input_json_delta") => {
                        let part = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        match self.blocks.get_mut(&index) {
                            Some(Block::ToolUse { json, .. }) => {
                                self.budget.bytes(part.len())?;
                                json.push_str(part);
                            }
                            _ => {
                                return Err(protocol(format!(
                                "input_json_delta for block {index}, which is not a tool_use block"
                            )))
                            }
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = index(&event)?;
                if let Some(Block::ToolUse { id, name, json }) = self.blocks.remove(&index) {
                    let input = if json.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(&json).map_err(|e| {
                            protocol(format!(
                                "the input of tool call {name} ({id}) is not valid JSON: {e}"
                            ))
                        })?
                    };
                    self.calls.insert(index, ToolCall { id, name, input });
                }
            }
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(reason.to_string());
                }
                if let Some(usage) = event.get("usage") {
                    self.usage(usage);
                }
            }
            "message_stop" => return Ok(Flow::Done),
            "error" => {
                let kind = event
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)");
                return Err(ModelError::Api {
                    provider: PROVIDER,
                    status: error_status(kind),
                    message: format!("{kind}: {message}"),
                });
            }
            _ => {} // ping and future event types
        }
        Ok(Flow::Continue)
    }

    /// Usage counts: input includes cache reads and writes; later events override earlier ones.
    fn usage(&mut self, usage: &Value) {
        let count = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(input) = count("input_tokens") {
            self.usage.input_tokens = input
                .saturating_add(count("cache_creation_input_tokens").unwrap_or(0))
                .saturating_add(count("cache_read_input_tokens").unwrap_or(0));
        }
        if let Some(output) = count("output_tokens") {
            self.usage.output_tokens = output;
        }
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        if let Some((_, Block::ToolUse { name, id, .. })) = self
            .blocks
            .iter()
            .find(|(_, b)| matches!(b, Block::ToolUse { .. }))
        {
            return Err(protocol(format!(
                "tool call {name} ({id}) was never finished (no content_block_stop)"
            )));
        }
        let stop = match self.stop.as_deref() {
            Some("end_turn") => ModelStop::EndTurn,
            Some("tool_use") => ModelStop::ToolUse,
            Some("max_tokens") => ModelStop::MaxTokens,
            Some(other) => ModelStop::Other(other.to_string()),
            None => ModelStop::Other("none".to_string()),
        };
        Ok(ModelResponse {
            text: self.text,
            tool_calls: self.calls.into_values().collect(),
            stop,
            usage: self.usage,
        })
    }
}

fn index(event: &Value) -> Result<u64, ModelError> {
    event
        .get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| protocol("a content block event has no index".to_string()))
}

fn str_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The HTTP status the API uses for an error type (for errors sent inside the stream).
fn error_status(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}

fn protocol(message: String) -> ModelError {
    ModelError::Protocol {
        provider: PROVIDER,
        message,
    }
}

#[async_trait]
impl Model for Anthropic {
    async fn respond(
        &self,
        request: ModelRequest<'_>,
        deltas: &dyn TextSink,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let body = self.body(&request);
        let mut assembly = Assembly::new(self.http.limits());
        let done = self
            .http
            .stream(
                || {
                    self.http
                        .client()
                        .post(&self.url)
                        .header("x-api-key", &self.key)
                        .header("anthropic-version", API_VERSION)
                        .header("accept", "text/event-stream")
                        .json(&body)
                },
                deltas,
                cancel,
                |event| assembly.event(&event.data, deltas),
            )
            .await?;
        if !done {
            return Err(http::ended_early(PROVIDER));
        }
        assembly.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolResult;

    #[test]
    fn error_results_carry_is_error() {
        let msgs = vec![
            Message::User { text: "hi".into() },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "t1".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"}),
                }],
            },
            Message::ToolResults {
                results: vec![ToolResult {
                    call_id: "t1".into(),
                    content: "denied".into(),
                    is_error: true,
                }],
            },
        ];
        let out = messages(&msgs);
        assert_eq!(out.len(), 3);
        assert_eq!(out[1]["content"][0]["type"], "tool_use");
        assert_eq!(out[2]["content"][0]["is_error"], true);
        assert_eq!(out[2]["content"][0]["tool_use_id"], "t1");
    }

    fn limits(bytes: usize, calls: usize) -> Limits {
        Limits {
            max_response_bytes: bytes,
            max_tool_calls: calls,
            response_timeout: std::time::Duration::from_secs(10),
            idle_timeout: std::time::Duration::from_secs(10),
        }
    }

    fn feed(a: &mut Assembly, events: &[Value]) -> Result<(), ModelError> {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        for e in events {
            a.event(&e.to_string(), &tx)?;
        }
        Ok(())
    }

    fn tool_block(index: u64, id: &str) -> [Value; 3] {
        [
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": "bash", "input": {}}}),
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": "{\"command\":\"ls\"}"}}),
            json!({"type": "content_block_stop", "index": index}),
        ]
    }

    #[test]
    fn a_block_index_started_twice_is_an_error_not_a_lost_call() {
        let mut a = Assembly::new(limits(1 << 20, 8));
        feed(&mut a, &tool_block(0, "first")).unwrap();
        let e = feed(&mut a, &tool_block(0, "second"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("content block 0 was started twice"), "{e}");
        // Still open (no stop yet) counts too.
        let mut b = Assembly::new(limits(1 << 20, 8));
        let [start, _, _] = tool_block(3, "x");
        feed(&mut b, std::slice::from_ref(&start)).unwrap();
        assert!(feed(&mut b, &[start]).is_err());
    }

    #[test]
    fn calls_and_bytes_count_against_the_limits_as_they_arrive() {
        let mut a = Assembly::new(limits(1 << 20, 2));
        feed(&mut a, &tool_block(0, "a")).unwrap();
        feed(&mut a, &tool_block(1, "b")).unwrap();
        let e = feed(&mut a, &tool_block(2, "c")).unwrap_err().to_string();
        assert!(e.contains("model.max_tool_calls"), "{e}");

        let mut b = Assembly::new(limits(10, 2));
        let text = |t: &str| json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}});
        feed(&mut b, &[json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "12345"}}), text("6789")]).unwrap();
        let e = feed(&mut b, &[text("01")]).unwrap_err().to_string();
        assert!(e.contains("model.max_response_bytes"), "{e}");
        assert_eq!(b.text, "123456789");
    }

    #[test]
    fn open_text_blocks_are_bounded() {
        let mut a = Assembly::new(limits(1 << 20, 2));
        let start = |i: u64| json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}});
        for i in 0..MAX_OPEN_BLOCKS as u64 {
            feed(&mut a, &[start(i)]).unwrap();
        }
        assert!(feed(&mut a, &[start(u64::MAX)]).is_err());
    }

    #[test]
    fn usage_saturates() {
        let mut a = Assembly::new(limits(1 << 20, 2));
        feed(&mut a, &[json!({"type": "message_start", "message": {"usage": {"input_tokens": u64::MAX, "cache_read_input_tokens": 5}}})]).unwrap();
        assert_eq!(a.usage.input_tokens, u64::MAX);
    }
}
