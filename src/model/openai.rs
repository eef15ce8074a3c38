//! The OpenAI-compatible Chat Completions provider (`provider = "openai"`): OpenAI itself and
//! any compatible server (llama.cpp `llama-server`, Ollama, vLLM) through `base_url`.
//!
//! Owns: mapping the provider-neutral conversation to a Chat Completions request
//! (`POST {base_url}/chat/completions`, `stream: true`, `stream_options.include_usage`) and the
//! streamed chunks back to one [`ModelResponse`]. Must not touch: HTTP retries, keys and SSE
//! framing (in `http` and `sse`), permissions, tools, the turn loop.
//!
//! Mapping: the system prompt -> a `system` message; `User` -> `user`; `Assistant` ->
//! `assistant` with `content` (null when empty) and `tool_calls`
//! (`{id, type: "function", function: {name, arguments}}`, arguments as a JSON string);
//! `ToolResults` -> one `role: "tool"` message per result with `tool_call_id`.
//!
//! **Error results.** Chat Completions has no `is_error` flag, so an error result is marked in
//! its content, one way only: the content is prefixed with [`ERROR_MARKER`] (`"[tool error] "`),
//! e.g. `"[tool error] permission denied: ..."`. Successful results are sent unchanged.
//!
//! Stream: `choices[0].delta.content` is sent on `deltas` as it arrives;
//! `choices[0].delta.tool_calls[]` fragments (`index`, `id`, `function.name`,
//! `function.arguments`) are accumulated per `index`, so several parallel calls whose argument
//! fragments interleave are reassembled; arguments that are not valid JSON at the end are a
//! [`ModelError::Protocol`] naming the tool. `finish_reason`: `stop` -> end turn (tool use when
//! calls were streamed, as some local servers report `stop` with calls), `tool_calls` /
//! `function_call` -> tool use, `length` -> max tokens. The usage chunk (`usage.prompt_tokens`,
//! `usage.completion_tokens`) fills [`ModelResponse::usage`]. `data: [DONE]` ends the stream; a
//! body that ends cleanly after a `finish_reason` without `[DONE]` is accepted, any other early
//! end is a transport error. A chunk carrying `error` becomes an [`ModelError::Api`].
//!
//! Key: `api_key_env`, else `api_key_file`, sent as `Authorization: Bearer`. With neither set,
//! the public endpoint (no `base_url`) reads `OPENAI_API_KEY`, and a custom `base_url` (a local
//! server) is called without a key.

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

const PROVIDER: &str = "openai";
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";
/// Prefix of the content of an error tool result (the API has no is_error flag).
pub const ERROR_MARKER: &str = "[tool error] ";

pub struct OpenAi {
    http: Http,
    url: String,
    model: String,
    key: Option<String>,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAi")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl OpenAi {
    pub fn from_config(config: &ModelConfig) -> Result<OpenAi, ModelError> {
        let model = http::model_name(config, PROVIDER)?;
        let default_key = if config.base_url.is_some() {
            DefaultKey::None
        } else if config.default_key {
            DefaultKey::Env(DEFAULT_KEY_ENV)
        } else {
            DefaultKey::Withheld
        };
        let key = http::api_key(config, PROVIDER, default_key)?;
        Ok(OpenAi {
            http: Http::new(config, PROVIDER)?,
            url: format!(
                "{}/chat/completions",
                http::base_url(config, DEFAULT_BASE_URL)
            ),
            model,
            key,
        })
    }

    pub(crate) fn body(&self, request: &ModelRequest<'_>) -> Value {
        let system = request.system.filter(|s| !s.is_empty());
        let mut body = json!({
            "model": self.model,
            "max_tokens": request.max_tokens,
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": messages(system, request.messages),
        });
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.input_schema,
                        },
                    })
                })
                .collect();
        }
        body
    }
}

fn messages(system: Option<&str>, messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = system {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match message {
            Message::User { text } => out.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls } => {
                let mut m = json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { json!(text) },
                });
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {
                                    "name": c.name,
                                    "arguments": c.input.to_string(),
                                },
                            })
                        })
                        .collect();
                }
                out.push(m);
            }
            Message::ToolResults { results } => {
                for r in results {
                    let content = if r.is_error {
                        format!("{ERROR_MARKER}{}", r.content)
                    } else {
                        r.content.clone()
                    };
                    out.push(json!({
                        "role": "tool",
                        "tool_call_id": r.call_id,
                        "content": content,
                    }));
                }
            }
        }
    }
    out
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

struct Assembly {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    finish: Option<String>,
    usage: Usage,
    budget: Budget,
}

impl Assembly {
    fn new(limits: Limits) -> Assembly {
        Assembly {
            text: String::new(),
            calls: BTreeMap::new(),
            finish: None,
            usage: Usage::default(),
            budget: Budget::new(PROVIDER, limits),
        }
    }

    fn event(&mut self, data: &str, deltas: &dyn TextSink) -> Result<Flow, ModelError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| protocol(format!("a stream chunk is not valid JSON ({e})")))?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| error.as_str().map(str::to_string))
                .unwrap_or_else(|| error.to_string());
            let status = error
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (400..600).contains(c))
                .unwrap_or(500);
            return Err(ModelError::Api {
                provider: PROVIDER,
                status,
                message,
            });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            // Reported once, for the whole response: the last report wins.
            let count = |key: &str| usage.get(key).and_then(Value::as_u64);
            if let Some(input) = count("prompt_tokens") {
                self.usage.input_tokens = input;
            }
            if let Some(output) = count("completion_tokens") {
                self.usage.output_tokens = output;
            }
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        let Some(choice) = choices.and_then(|c| c.first()) else {
            return Ok(Flow::Continue);
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                if !text.is_empty() {
                    self.budget.bytes(text.len())?;
                    self.text.push_str(text);
                    deltas.push(text);
                }
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for fragment in calls {
                    self.fragment(fragment)?;
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_string());
        }
        Ok(Flow::Continue)
    }

    /// One piece of a tool call: its id, name or a part of its arguments. Every byte kept
    /// counts against the budget, and every new call.
    fn fragment(&mut self, fragment: &Value) -> Result<(), ModelError> {
        let id = fragment.get("id").and_then(Value::as_str).unwrap_or("");
        let index = match fragment.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            None => self.index_without_index(id),
        };
        if !self.calls.contains_key(&index) {
            self.budget.call()?;
        }
        let call = self.calls.entry(index).or_default();
        if !id.is_empty() && call.id != id {
            self.budget.bytes(id.len())?;
            call.id = id.to_string();
        }
        if let Some(function) = fragment.get("function") {
            if let Some(name) = function.get("name").and_then(Value::as_str) {
                // Names normally arrive whole; some servers split them.
                if call.name != name {
                    self.budget.bytes(name.len())?;
                    call.name.push_str(name);
                }
            }
            match function.get("arguments") {
                Some(Value::String(args)) => {
                    self.budget.bytes(args.len())?;
                    call.arguments.push_str(args);
                }
                // Some servers send the arguments as an object, whole.
                Some(args @ Value::Object(_)) => {
                    let args = args.to_string();
                    self.budget.bytes(args.len())?;
                    call.arguments = args;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The slot of a tool call fragment that has no `index` (some servers omit it): the call
    /// with the same id, a new slot for a new id, else the latest call (a continuation).
    fn index_without_index(&self, id: &str) -> u64 {
        if let Some((index, _)) = self
            .calls
            .iter()
            .find(|(_, c)| !id.is_empty() && c.id == id)
        {
            return *index;
        }
        let next = self
            .calls
            .keys()
            .next_back()
            .map_or(0, |last| last.saturating_add(1));
        if !id.is_empty() || self.calls.is_empty() {
            next
        } else {
            next - 1
        }
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls {
            if call.name.is_empty() {
                return Err(protocol(format!("tool call #{index} has no function name")));
            }
            let input = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.arguments).map_err(|e| {
                    protocol(format!(
                        "the arguments of tool call {} are not valid JSON: {e}",
                        call.name
                    ))
                })?
            };
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            tool_calls.push(ToolCall {
                id,
                name: call.name,
                input,
            });
        }
        let stop = match self.finish.as_deref() {
            Some("stop") if !tool_calls.is_empty() => ModelStop::ToolUse,
            Some("stop") => ModelStop::EndTurn,
            Some("tool_calls") | Some("function_call") => ModelStop::ToolUse,
            Some("length") => ModelStop::MaxTokens,
            Some(other) => ModelStop::Other(other.to_string()),
            None => ModelStop::Other("none".to_string()),
        };
        Ok(ModelResponse {
            text: self.text,
            tool_calls,
            stop,
            usage: self.usage,
        })
    }
}

fn protocol(message: String) -> ModelError {
    ModelError::Protocol {
        provider: PROVIDER,
        message,
    }
}

#[async_trait]
impl Model for OpenAi {
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
                    let mut builder = self
                        .http
                        .client()
                        .post(&self.url)
                        .header("accept", "text/event-stream")
                        .json(&body);
                    if let Some(key) = &self.key {
                        builder = builder.bearer_auth(key);
                    }
                    builder
                },
                deltas,
                cancel,
                |event| assembly.event(&event.data, deltas),
            )
            .await?;
        if !done && assembly.finish.is_none() {
            return Err(http::ended_early(PROVIDER));
        }
        assembly.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolResult;

    fn test_limits() -> Limits {
        Limits {
            max_response_bytes: 1 << 20,
            max_tool_calls: 8,
            response_timeout: std::time::Duration::from_secs(10),
            idle_timeout: std::time::Duration::from_secs(10),
        }
    }

    #[test]
    fn error_results_are_marked() {
        let out = messages(
            Some("sys"),
            &[Message::ToolResults {
                results: vec![
                    ToolResult {
                        call_id: "a".into(),
                        content: "denied".into(),
                        is_error: true,
                    },
                    ToolResult {
                        call_id: "b".into(),
                        content: "fine".into(),
                        is_error: false,
                    },
                ],
            }],
        );
        assert_eq!(out[0]["role"], "system");
        assert_eq!(out[1]["content"], "[tool error] denied");
        assert_eq!(out[2]["content"], "fine");
        assert_eq!(out[2]["tool_call_id"], "b");
    }

    #[test]
    fn fragments_without_index_and_object_arguments() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let mut a = Assembly::new(test_limits());
        for data in [
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"read","arguments":{"path":"x"}}},{"id":"b","function":{"name":"glob","arguments":"{\"pattern\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"\"*\"}"}}]},"finish_reason":"stop"}]}"#,
        ] {
            a.event(data, &tx).unwrap();
        }
        let r = a.finish().unwrap();
        assert_eq!(r.stop, ModelStop::ToolUse);
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].input, json!({"path": "x"}));
        assert_eq!(r.tool_calls[1].id, "b");
        assert_eq!(r.tool_calls[1].input, json!({"pattern": "*"}));
    }

    #[test]
    fn interleaved_fragments_assemble() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let mut a = Assembly::new(test_limits());
        for data in [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"glob","arguments":"{\"pat"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"*\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]},"finish_reason":"tool_calls"}]}"#,
        ] {
            a.event(data, &tx).unwrap();
        }
        let r = a.finish().unwrap();
        assert_eq!(r.stop, ModelStop::ToolUse);
        assert_eq!(r.tool_calls[0].input, json!({"path": "a"}));
        assert_eq!(r.tool_calls[1].input, json!({"pattern": "*"}));
    }

    #[test]
    fn new_calls_and_argument_bytes_count_against_the_limits() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let mut a = Assembly::new(test_limits());
        for i in 0..8u64 {
            let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": format!("c{i}"), "function": {"name": "read", "arguments": ""}}]}}]});
            a.event(&chunk.to_string(), &tx).unwrap();
        }
        // More fragments of a known call are fine; a ninth call is not.
        let more = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 7, "function": {"arguments": "{}"}}]}}]});
        a.event(&more.to_string(), &tx).unwrap();
        let ninth = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": u64::MAX, "function": {"name": "read"}}]}}]});
        let e = a.event(&ninth.to_string(), &tx).unwrap_err().to_string();
        assert!(e.contains("more than 8 tool calls"), "{e}");

        let mut b = Assembly::new(Limits {
            max_response_bytes: 16,
            ..test_limits()
        });
        let args = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "x", "function": {"name": "read", "arguments": "0123456789abcdef"}}]}}]});
        let e = b.event(&args.to_string(), &tx).unwrap_err().to_string();
        assert!(e.contains("model.max_response_bytes"), "{e}");
    }

    #[test]
    fn a_fragment_without_index_after_the_largest_index_does_not_overflow() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let mut a = Assembly::new(test_limits());
        for data in [
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": u64::MAX, "id": "a", "function": {"name": "read", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "b", "function": {"name": "glob", "arguments": "{}"}}]}}]}),
        ] {
            a.event(&data.to_string(), &tx).unwrap();
        }
        assert!(!a.calls.is_empty());
    }
}
