//! Model providers: the conversation as the model sees it, and the [`Model`] trait each provider
//! implements (offline, Anthropic Messages, OpenAI-compatible Chat Completions).
//!
//! Owns: the provider-neutral message types, mapping them to each API, streaming text deltas,
//! HTTP retries, the limits of one response. Must not touch: permissions, tools, the session
//! log, the wire protocol. A provider gets the conversation and returns one response; the turn
//! loop owns everything else.
//!
//! Ids: a [`ToolCall::id`] here is always the provider's own id, the one its API wants back with
//! the result. The pod gives each call its own session-unique id on top (see `pod::turn`).

pub mod anthropic;
mod http;
mod limits;
pub mod offline;
pub mod openai;
mod sse;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::manifest::{ModelConfig, Provider};
use crate::protocol::{ToolInfo, Usage};

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Provider-assigned id (offline: generated); pairs the call with its result. Not unique:
    /// a broken or hostile model may repeat one.
    pub id: String,
    pub name: String,
    pub input: serde_json::Value,
}

/// A tool result as the model sees it. `is_error` is kept end to end: Anthropic gets it as
/// `tool_result.is_error`; OpenAI, which has no such flag, gets it marked in the content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    User {
        text: String,
    },
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// The results of the previous assistant message's calls, in call order.
    ToolResults {
        results: Vec<ToolResult>,
    },
}

/// Everything a provider needs for one response.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    pub system: Option<&'a str>,
    pub messages: &'a [Message],
    pub tools: &'a [ToolInfo],
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelStop {
    EndTurn,
    ToolUse,
    MaxTokens,
    /// Anything else the provider reported, verbatim.
    Other(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop: ModelStop,
    pub usage: Usage,
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the model request was cancelled")]
    Cancelled,
    #[error("model configuration: {0}")]
    Config(String),
    /// The configuration needs something of the environment it does not find (an API key
    /// variable that is not set or empty): `pod check` warns, `pod serve` cannot open.
    #[error("model configuration: {0}")]
    Environment(String),
    /// The API answered with an error status; `message` is what the API said.
    #[error("{provider} API error {status}: {message}")]
    Api {
        provider: &'static str,
        status: u16,
        message: String,
    },
    /// The connection failed or the stream broke.
    #[error("{provider} connection: {message}")]
    Transport {
        provider: &'static str,
        message: String,
    },
    /// The response could not be understood.
    #[error("{provider} response: {message}")]
    Protocol {
        provider: &'static str,
        message: String,
    },
    /// The response went past one of the `[model]` limits; `message` names the setting.
    #[error("{provider} response refused: {message}")]
    Limit {
        provider: &'static str,
        message: String,
    },
}

/// Where a provider sends text as it streams.
#[async_trait]
pub trait TextSink: Send + Sync {
    /// Text that just arrived.
    fn push(&self, text: &str);

    /// Resolves once the consumer can take more text. A provider reads no more of its stream
    /// until then, so a slow consumer slows the stream instead of letting text pile up.
    async fn room(&self) {}
}

/// Every piece as it arrives, with no pacing (tests, and callers that read deltas at once).
impl TextSink for mpsc::UnboundedSender<String> {
    fn push(&self, text: &str) {
        // The receiver may be gone when nobody listens for deltas; that is fine.
        let _ = self.send(text.to_string());
    }
}

#[async_trait]
pub trait Model: Send + Sync {
    /// One model response. Text is also sent piece by piece to `deltas` as it arrives, at the
    /// pace `deltas` allows. Returns `Err(Cancelled)` promptly once `cancel` fires (dropping any
    /// HTTP stream).
    async fn respond(
        &self,
        request: ModelRequest<'_>,
        deltas: &dyn TextSink,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError>;
}

/// How deep a tool call's input may nest (objects and arrays): deeper, the whole response is
/// refused when it is read. The session log writes each input one level deeper inside its item,
/// and reads lines back up to serde_json's limit of 128 levels, so whatever pod accepts it can
/// read back.
pub const MAX_INPUT_DEPTH: usize = 64;

/// The most values (objects, arrays, strings, numbers... each key's value counted) one tool
/// call's input may hold. An input is copied into history, its event, the model's view and the
/// log, so each value costs several allocations: 760,000 keys in 7.5 MB held 658 MB.
pub const MAX_INPUT_VALUES: usize = 100_000;

/// `response`, unless a tool call's input nests deeper than [`MAX_INPUT_DEPTH`] or holds more
/// than [`MAX_INPUT_VALUES`] values: then a limit error naming it, and nothing of the response
/// is kept.
pub fn within_shape(response: ModelResponse) -> Result<ModelResponse, ModelError> {
    for call in &response.tool_calls {
        let (depth, values) = shape(&call.input);
        let problem = if depth > MAX_INPUT_DEPTH {
            format!("nests deeper than {MAX_INPUT_DEPTH} levels")
        } else if values > MAX_INPUT_VALUES {
            format!("holds more than {MAX_INPUT_VALUES} values")
        } else {
            continue;
        };
        return Err(ModelError::Limit {
            provider: "model",
            message: format!(
                "the input of tool call {} ({}) {problem}",
                call.id, call.name
            ),
        });
    }
    Ok(response)
}

/// How deep `value` nests (a scalar is 0, `[]` and `{}` are 1) and how many values it holds,
/// without recursion.
fn shape(value: &serde_json::Value) -> (usize, usize) {
    let mut deepest = 0;
    let mut values = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        values += 1;
        let children: Box<dyn Iterator<Item = &serde_json::Value>> = match v {
            serde_json::Value::Array(items) => Box::new(items.iter()),
            serde_json::Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        deepest = deepest.max(d + 1);
        stack.extend(children.map(|c| (c, d + 1)));
    }
    (deepest, values)
}

/// The model a manifest asks for.
pub fn from_config(config: &ModelConfig) -> Result<Box<dyn Model>, ModelError> {
    match config.provider {
        Provider::Offline => Ok(Box::new(offline::Offline::from_config(config)?)),
        Provider::Anthropic => Ok(Box::new(anthropic::Anthropic::from_config(config)?)),
        Provider::Openai => Ok(Box::new(openai::OpenAi::from_config(config)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> serde_json::Value {
        let mut v = serde_json::json!(1);
        for _ in 0..levels {
            v = serde_json::json!([v]);
        }
        v
    }

    #[test]
    fn inputs_deeper_than_the_limit_refuse_the_response() {
        assert_eq!(shape(&serde_json::json!(1)), (0, 1));
        assert_eq!(shape(&serde_json::json!({"a": [1, {"b": []}]})), (4, 5));
        let response = |input| ModelResponse {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                input,
            }],
            stop: ModelStop::ToolUse,
            usage: Default::default(),
        };
        assert!(within_shape(response(nested(MAX_INPUT_DEPTH))).is_ok());
        let refused = within_shape(response(nested(MAX_INPUT_DEPTH + 1))).unwrap_err();
        assert!(
            refused.to_string().contains("nests deeper than 64 levels"),
            "{refused}"
        );
        let wide: serde_json::Map<String, serde_json::Value> = (0..MAX_INPUT_VALUES)
            .map(|i| (format!("k{i}"), serde_json::json!(i)))
            .collect();
        let refused = within_shape(response(serde_json::Value::Object(wide))).unwrap_err();
        assert!(
            refused.to_string().contains("more than 100000 values"),
            "{refused}"
        );
    }
}
