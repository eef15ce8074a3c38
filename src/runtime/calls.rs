//! Call identity: the pod's id for each tool call, and the model's view of a conversation
//! rebuilt from history under the provider's ids.
//!
//! Owns: making call ids unique in a session when a response is read (the provider's id when
//! that is new, else the provider's id with `#2`, `#3`, ... added; `call` when it gave none),
//! and mapping them back. Events, history, the permission layer and hooks use the pod's id; the
//! provider gets its own id back with each result (history keeps it as `providerCallId` when
//! the two differ), so a model that repeats or reuses ids cannot make two calls share a result,
//! and a resumed session closes each call it left open. Must not touch: running calls (`turn`).

use std::collections::{HashMap, HashSet};

use crate::model::{Message, ToolCall, ToolResult};
use crate::permission::SubjectKind;
use crate::protocol::{CallResult, Item};

/// A tool call as the turn handles it.
#[derive(Clone)]
pub(super) struct Call {
    /// The pod's id: unique in the session.
    pub id: String,
    /// The provider's id, sent back with the result.
    pub provider_id: String,
    pub name: String,
    /// How the permission layer reads the input of a tool of this name, found once here for
    /// the checks, the pin and the exec gate.
    pub kind: SubjectKind,
    pub input: serde_json::Value,
}

/// Gives each call of a response its own id, unique among `used` (the session's ids so far),
/// and adds them to it.
pub(super) fn identify(used: &mut HashSet<String>, calls: Vec<ToolCall>) -> Vec<Call> {
    // Next suffix to try per provider id, so many repeats of one id stay linear.
    let mut next: HashMap<String, u64> = HashMap::new();
    calls
        .into_iter()
        .map(|call| {
            let base = if call.id.is_empty() { "call" } else { &call.id };
            let mut id = base.to_string();
            if used.contains(&id) {
                let n = next.entry(base.to_string()).or_insert(2);
                loop {
                    id = format!("{base}#{n}");
                    *n += 1;
                    if !used.contains(&id) {
                        break;
                    }
                }
            }
            used.insert(id.clone());
            Call {
                id,
                provider_id: call.id,
                kind: SubjectKind::of(&call.name),
                name: call.name,
                input: call.input,
            }
        })
        .collect()
}

/// The model's view of a conversation rebuilt from history (for resume), with each call and
/// result under the provider's id for it.
pub(super) fn messages_from_items(items: &[Item]) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    // The pod's call id -> the provider's, where they differ.
    let mut provider_ids: HashMap<&str, &str> = HashMap::new();
    for item in items {
        match item {
            Item::UserMessage { text, .. } => messages.push(Message::User { text: text.clone() }),
            Item::AssistantText { text, .. } => messages.push(Message::Assistant {
                text: text.clone(),
                tool_calls: Vec::new(),
            }),
            Item::ToolCall {
                call_id,
                provider_call_id,
                tool,
                input,
                ..
            } => {
                let id = match provider_call_id {
                    Some(provider) => {
                        provider_ids.insert(call_id, provider);
                        provider.clone()
                    }
                    None => call_id.clone(),
                };
                let call = ToolCall {
                    id,
                    name: tool.clone(),
                    input: input.clone(),
                };
                match messages.last_mut() {
                    Some(Message::Assistant { tool_calls, .. }) => tool_calls.push(call),
                    _ => messages.push(Message::Assistant {
                        text: String::new(),
                        tool_calls: vec![call],
                    }),
                }
            }
            Item::ToolResult(CallResult {
                call_id,
                is_error,
                content,
                ..
            }) => {
                let result = ToolResult {
                    call_id: provider_ids
                        .get(call_id.as_str())
                        .map_or_else(|| call_id.clone(), |p| p.to_string()),
                    content: content.clone(),
                    is_error: *is_error,
                };
                match messages.last_mut() {
                    Some(Message::ToolResults { results }) => results.push(result),
                    _ => messages.push(Message::ToolResults {
                        results: vec![result],
                    }),
                }
            }
            // A `user_prompt` hook's context went with its turn's prompt. A `session_start`
            // hook's (no turn) is in the system prompt, which the hooks give again on resume.
            Item::HookContext {
                turn_id: Some(_),
                text,
                ..
            } => messages.push(Message::User { text: text.clone() }),
            Item::HookContext { turn_id: None, .. }
            | Item::HookFailed { .. }
            | Item::PromptRefused { .. }
            | Item::SkillActivated { .. }
            | Item::PermissionDecision { .. }
            | Item::SessionGrant { .. }
            | Item::ModeChanged { .. }
            | Item::InputAmended { .. }
            | Item::AnalysisMismatch { .. }
            | Item::NetworkConnection { .. }
            | Item::NetworkConnectionsOmitted { .. }
            | Item::TurnEnded { .. } => {}
        }
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            input: serde_json::json!({}),
        }
    }

    #[test]
    fn repeated_reused_and_missing_ids_become_unique() {
        let mut used: HashSet<String> = ["x".to_string(), "x#2".to_string()].into();
        let got = identify(
            &mut used,
            vec![
                call("x"),
                call("y"),
                call("y"),
                call(""),
                call(""),
                call("y#2"),
            ],
        );
        let ids: Vec<&str> = got.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["x#3", "y", "y#2", "call", "call#2", "y#2#2"]);
        let providers: Vec<&str> = got.iter().map(|c| c.provider_id.as_str()).collect();
        assert_eq!(providers, ["x", "y", "y", "", "", "y#2"]);
        assert_eq!(used.len(), 8);
    }

    #[test]
    fn history_is_sent_back_under_the_providers_ids() {
        let item = |call_id: &str, provider: Option<&str>| Item::ToolCall {
            turn_id: "t".into(),
            call_id: call_id.into(),
            provider_call_id: provider.map(str::to_string),
            tool: "bash".into(),
            input: serde_json::json!({}),
        };
        let result = |call_id: &str| {
            Item::ToolResult(CallResult {
                turn_id: "t".into(),
                call_id: call_id.into(),
                is_error: false,
                content: "ok".into(),
                denied_by: None,
            })
        };
        let messages = messages_from_items(&[
            item("dup", None),
            item("dup#2", Some("dup")),
            result("dup"),
            result("dup#2"),
        ]);
        let Message::Assistant { tool_calls, .. } = &messages[0] else {
            panic!("{messages:?}")
        };
        assert!(tool_calls.iter().all(|c| c.id == "dup"));
        let Message::ToolResults { results } = &messages[1] else {
            panic!("{messages:?}")
        };
        assert!(results.iter().all(|r| r.call_id == "dup"));
    }
}
