//! The offline model: deterministic, no network, the default provider.
//!
//! On a user message: each line `!<shell command>` becomes a `bash` call, each line
//! `@<tool> <json object>` a call of that tool (several lines: several calls in one response, in
//! order); every other line is echoed back as the reply. After tool results it ends the turn with
//! one summary line per call (`bash: ok`, `bash: error: permission denied ...`).
//!
//! With `scenario = "file.toml"` in `[model]`, the n-th response of the session is the n-th
//! `[[step]]` of the file (text and calls); once the steps run out, the rules above apply.
//!
//! Usage is counted in words (whitespace-separated), so clients and the conformance kit can
//! check that it reaches them: input, the words of every user message of the conversation;
//! output, the words of the reply plus one per tool call.

use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{
    Message, Model, ModelError, ModelRequest, ModelResponse, ModelStop, TextSink, ToolCall,
};
use crate::manifest::ModelConfig;
use crate::protocol::Usage;

#[derive(Debug, Default)]
pub struct Offline {
    steps: Vec<Step>,
}

/// One scripted response of a scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    #[serde(default)]
    text: String,
    #[serde(default)]
    calls: Vec<StepCall>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepCall {
    tool: String,
    #[serde(default = "empty_object")]
    input: serde_json::Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    #[serde(default)]
    step: Vec<Step>,
}

impl Offline {
    pub fn from_config(config: &ModelConfig) -> Result<Offline, ModelError> {
        match &config.scenario {
            Some(path) => Offline::with_scenario(path),
            None => Ok(Offline::default()),
        }
    }

    /// Loads a scenario file; errors name the file, line and column.
    pub fn with_scenario(path: &Path) -> Result<Offline, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ModelError::Config(format!("{}: cannot read scenario: {e}", path.display()))
        })?;
        let scenario: Scenario = toml::from_str(&text).map_err(|e| {
            let (line, col) =
                crate::manifest::line_col(&text, e.span().map(|s| s.start).unwrap_or(0));
            ModelError::Config(format!(
                "{}:{line}:{col}: {}",
                path.display(),
                e.message().trim()
            ))
        })?;
        Ok(Offline {
            steps: scenario.step,
        })
    }

    fn respond_now(&self, messages: &[Message]) -> ModelResponse {
        let mut response = self.answer(messages);
        response.usage = usage(messages, &response);
        response
    }

    fn answer(&self, messages: &[Message]) -> ModelResponse {
        let assistant_turns = messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        if let Some(step) = self.steps.get(assistant_turns) {
            let tool_calls: Vec<ToolCall> = step
                .calls
                .iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: call_id(messages.len(), i),
                    name: c.tool.clone(),
                    input: c.input.clone(),
                })
                .collect();
            return response(step.text.clone(), tool_calls);
        }
        match messages.last() {
            Some(Message::ToolResults { results }) => {
                let calls = match messages.iter().rev().nth(1) {
                    Some(Message::Assistant { tool_calls, .. }) => tool_calls.as_slice(),
                    _ => &[],
                };
                let summary: Vec<String> = results
                    .iter()
                    .map(|r| {
                        let tool = calls
                            .iter()
                            .find(|c| c.id == r.call_id)
                            .map(|c| c.name.as_str())
                            .unwrap_or("tool");
                        if r.is_error {
                            let first = r.content.lines().next().unwrap_or("").trim();
                            format!("{tool}: error: {first}")
                        } else {
                            format!("{tool}: ok")
                        }
                    })
                    .collect();
                response(summary.join("\n"), Vec::new())
            }
            Some(Message::User { text }) => {
                crate::testing::maybe_panic(text, crate::testing::MODEL_MARKER);
                parse_user_text(text, messages.len())
            }
            _ => response(String::new(), Vec::new()),
        }
    }
}

/// The words of every user message sent, and of the reply plus one per call.
fn usage(messages: &[Message], response: &ModelResponse) -> Usage {
    let words = |text: &str| text.split_whitespace().count() as u64;
    let input = messages
        .iter()
        .map(|m| match m {
            Message::User { text } => words(text),
            _ => 0,
        })
        .sum();
    Usage {
        input_tokens: input,
        output_tokens: words(&response.text) + response.tool_calls.len() as u64,
    }
}

fn call_id(message_index: usize, i: usize) -> String {
    format!("call_{message_index}_{i}")
}

fn response(text: String, tool_calls: Vec<ToolCall>) -> ModelResponse {
    let stop = if tool_calls.is_empty() {
        ModelStop::EndTurn
    } else {
        ModelStop::ToolUse
    };
    ModelResponse {
        text,
        tool_calls,
        stop,
        usage: Usage::default(),
    }
}

fn parse_user_text(text: &str, message_index: usize) -> ModelResponse {
    let mut echo = Vec::new();
    let mut calls = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(command) = trimmed.strip_prefix('!') {
            calls.push((
                "bash".to_string(),
                serde_json::json!({ "command": command }),
            ));
        } else if let Some(rest) = trimmed.strip_prefix('@') {
            let (tool, json) = rest.split_once(char::is_whitespace).unwrap_or((rest, "{}"));
            match serde_json::from_str::<serde_json::Value>(json.trim()) {
                Ok(input @ serde_json::Value::Object(_)) => calls.push((tool.to_string(), input)),
                Ok(_) => echo.push(format!(
                    "offline model: the input of @{tool} must be a JSON object"
                )),
                Err(e) => echo.push(format!(
                    "offline model: cannot read the input of @{tool}: {e}"
                )),
            }
        } else {
            echo.push(line.to_string());
        }
    }
    let tool_calls = calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, input))| ToolCall {
            id: call_id(message_index, i),
            name,
            input,
        })
        .collect();
    response(echo.join("\n"), tool_calls)
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

#[async_trait]
impl Model for Offline {
    async fn respond(
        &self,
        request: ModelRequest<'_>,
        deltas: &dyn TextSink,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let response = self.respond_now(request.messages);
        if !response.text.is_empty() {
            deltas.push(&response.text);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bang_and_at_lines_become_calls_in_order_and_other_lines_echo() {
        let r = parse_user_text("hello\n!git status\n@read {\"path\": \"a\"}\n@bad nope", 0);
        assert_eq!(r.stop, ModelStop::ToolUse);
        let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["bash", "read"]);
        assert_eq!(r.tool_calls[0].input["command"], "git status");
        assert_eq!(r.tool_calls[1].input["path"], "a");
        assert!(r
            .text
            .starts_with("hello\noffline model: cannot read the input of @bad"));
    }

    #[test]
    fn results_are_summarized_one_line_per_call() {
        let model = Offline::default();
        let calls = vec![
            ToolCall {
                id: "a".into(),
                name: "bash".into(),
                input: serde_json::json!({}),
            },
            ToolCall {
                id: "b".into(),
                name: "read".into(),
                input: serde_json::json!({}),
            },
        ];
        let messages = vec![
            Message::User { text: "x".into() },
            Message::Assistant {
                text: String::new(),
                tool_calls: calls,
            },
            Message::ToolResults {
                results: vec![
                    super::super::ToolResult {
                        call_id: "a".into(),
                        content: "permission denied: x\nmore".into(),
                        is_error: true,
                    },
                    super::super::ToolResult {
                        call_id: "b".into(),
                        content: "data".into(),
                        is_error: false,
                    },
                ],
            },
        ];
        let r = model.respond_now(&messages);
        assert_eq!(r.text, "bash: error: permission denied: x\nread: ok");
        assert_eq!(r.stop, ModelStop::EndTurn);
        // One user word in; seven words out.
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (1, 7));
    }

    #[test]
    fn usage_counts_user_words_in_and_reply_words_and_calls_out() {
        let model = Offline::default();
        let messages = vec![Message::User {
            text: "hello  kit\n!git status".into(),
        }];
        let r = model.respond_now(&messages);
        assert_eq!(r.text, "hello  kit");
        // In: hello, kit, !git, status. Out: hello, kit and one call.
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (4, 3));
    }
}
