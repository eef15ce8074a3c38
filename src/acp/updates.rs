//! What pod's events and history look like in ACP: tool calls (title, kind, locations, raw
//! input, a diff for writes), their updates, permission options, stop reasons, and a session's
//! history replayed for `session/load` (docs/acp.md, "Mapping").
//!
//! Owns: the mapping, as plain functions from pod types to the official schema's types; what
//! pod adds under `_meta.pod`.
//!
//! Must not touch: sending (the session does) and deciding anything.

use std::path::Path;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{json, Value};

use crate::permission::path;
use crate::protocol::{CallResult, Item, PermissionRequest, ReplyDecision, StopReason};
use crate::tools::{self, Presentation, ToolKind};

/// The `_meta` object with pod's own fields under `pod`.
pub fn meta(pod: Value) -> acp::Meta {
    let mut meta = acp::Meta::new();
    meta.insert("pod".into(), pod);
    meta
}

fn text(text: impl Into<String>) -> acp::ContentBlock {
    acp::ContentBlock::Text(acp::TextContent::new(text))
}

/// A chunk of the agent's reply.
pub fn agent_text(chunk: impl Into<String>) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(text(chunk)))
}

/// The `plan` tool's calls are shown as ACP's plan, not as tool calls.
pub fn is_plan(tool: &str) -> bool {
    tool == "plan"
}

/// The plan a `plan` call recorded (when it ran and its input is a valid plan), as ACP's
/// `plan` update: every step with its status, replacing the previous plan.
pub fn plan(result: &CallResult, input: &Value) -> Option<acp::SessionUpdate> {
    use tools::plan::{Priority, Status};
    if result.is_error {
        return None;
    }
    let entries = tools::plan::entries(input)?
        .into_iter()
        .map(|e| {
            let priority = match e.priority {
                Priority::High => acp::PlanEntryPriority::High,
                Priority::Medium => acp::PlanEntryPriority::Medium,
                Priority::Low => acp::PlanEntryPriority::Low,
            };
            let status = match e.status {
                Status::Pending => acp::PlanEntryStatus::Pending,
                Status::InProgress => acp::PlanEntryStatus::InProgress,
                Status::Completed => acp::PlanEntryStatus::Completed,
            };
            acp::PlanEntry::new(e.content, priority, status)
        })
        .collect();
    Some(acp::SessionUpdate::Plan(acp::Plan::new(entries)))
}

/// A chunk of the user's message (history replay).
pub fn user_text(chunk: impl Into<String>) -> acp::SessionUpdate {
    acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(text(chunk)))
}

/// ACP's kind of a call: the tool's own (bash executes, read reads, file_write and edit edit,
/// grep and glob search); anything else is `other`.
pub fn kind(tool: &str, input: &Value) -> acp::ToolKind {
    kind_of(&tools::present(tool, input))
}

fn kind_of(presentation: &Presentation) -> acp::ToolKind {
    match presentation.kind {
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Search => acp::ToolKind::Search,
        ToolKind::Fetch => acp::ToolKind::Fetch,
        ToolKind::Other => acp::ToolKind::Other,
    }
}

/// The title: the subject the permission layer reads, as written (the command line of a
/// `bash` call, the path of a file tool, the pattern and root of a search), cut to one line.
pub fn title(tool: &str, input: &Value) -> String {
    let shown = tools::present(tool, input)
        .title
        .unwrap_or_else(|| format!("{tool} {input}"));
    // A title is one line in an editor's list; the whole input is in `rawInput`.
    let first = shown.lines().next().unwrap_or("");
    let mut title: String = first.chars().take(200).collect();
    if title.len() < shown.len() {
        title.push('…');
    }
    title
}

/// The files a call touches, as absolute paths (with the first line for a ranged read).
pub fn locations(presentation: &Presentation, workspace: &Path) -> Vec<acp::ToolCallLocation> {
    presentation
        .locations
        .iter()
        .map(|l| acp::ToolCallLocation::new(path::absolute(&l.path, workspace)).line(l.line))
        .collect()
}

/// The change a write proposes: the new content of a `file_write`, the replaced text of an
/// `edit` (the snippet, not the whole file: pod does not read a file to show a diff, so a
/// diff never shows what the rules would not let the model read).
pub fn diff(tool: &str, input: &Value, workspace: &Path) -> Option<acp::Diff> {
    let change = tools::present(tool, input).change?;
    let diff = acp::Diff::new(path::absolute(&change.path, workspace), change.new);
    Some(match change.old {
        Some(old) => diff.old_text(old),
        None => diff,
    })
}

/// A tool call as first announced: pending, with its input.
pub fn tool_call(call_id: &str, tool: &str, input: &Value, workspace: &Path) -> acp::SessionUpdate {
    let content: Vec<acp::ToolCallContent> = diff(tool, input, workspace)
        .map(acp::ToolCallContent::Diff)
        .into_iter()
        .collect();
    let presentation = tools::present(tool, input);
    acp::SessionUpdate::ToolCall(
        acp::ToolCall::new(call_id.to_string(), title(tool, input))
            .name(tool.to_string())
            .kind(kind_of(&presentation))
            .status(acp::ToolCallStatus::Pending)
            .content(content)
            .locations(locations(&presentation, workspace))
            .raw_input(input.clone()),
    )
}

/// The call passed its checks and runs.
pub fn started(call_id: &str) -> acp::SessionUpdate {
    acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(
        call_id.to_string(),
        acp::ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
    ))
}

/// A call's result: `completed`, or `failed` for an error or a denial, with the text the model
/// got (for a denial, the rule and its message, exactly as pod's `toolResult`) and, for a
/// write that happened, its diff.
pub fn result(
    result: &CallResult,
    tool: &str,
    input: &Value,
    workspace: &Path,
) -> acp::SessionUpdate {
    let mut content = vec![acp::ToolCallContent::from(text(result.content.clone()))];
    if !result.is_error {
        content.extend(diff(tool, input, workspace).map(acp::ToolCallContent::Diff));
    }
    let status = if result.is_error {
        acp::ToolCallStatus::Failed
    } else {
        acp::ToolCallStatus::Completed
    };
    let mut pod = json!({ "isError": result.is_error });
    if let Some(by) = result.denied_by {
        pod["deniedBy"] = json!(by);
    }
    acp::SessionUpdate::ToolCallUpdate(
        acp::ToolCallUpdate::new(
            result.call_id.clone(),
            acp::ToolCallUpdateFields::new()
                .status(status)
                .content(content)
                .raw_output(json!({ "content": result.content, "isError": result.is_error })),
        )
        .meta(meta(pod)),
    )
}

/// The option id and kind for each decision pod offers.
fn option(decision: ReplyDecision) -> acp::PermissionOption {
    match decision {
        ReplyDecision::AllowOnce => acp::PermissionOption::new(
            "allow_once",
            "Allow once",
            acp::PermissionOptionKind::AllowOnce,
        ),
        ReplyDecision::AllowSession => acp::PermissionOption::new(
            "allow_always",
            "Allow for this session",
            acp::PermissionOptionKind::AllowAlways,
        ),
        ReplyDecision::AllowPrefix => acp::PermissionOption::new(
            "allow_prefix",
            "Allow commands like this for this session",
            acp::PermissionOptionKind::AllowAlways,
        ),
        ReplyDecision::AllowProject => acp::PermissionOption::new(
            "allow_project",
            "Always allow commands like this in this project",
            acp::PermissionOptionKind::AllowAlways,
        ),
        ReplyDecision::Deny => acp::PermissionOption::new(
            "reject_once",
            "Reject",
            acp::PermissionOptionKind::RejectOnce,
        ),
    }
}

/// The decision an option id stands for, when it was one of `offered`.
pub fn decision(option_id: &str, offered: &[ReplyDecision]) -> Option<ReplyDecision> {
    offered
        .iter()
        .copied()
        .find(|d| option(*d).option_id.0.as_ref() == option_id)
}

/// `session/request_permission` for a pod permission request: the options pod offers, the
/// reason (which rule asked, for which subjects) as the tool call's content, and the request's
/// details under `_meta.pod`.
pub fn permission_request(
    session_id: &str,
    request: &PermissionRequest,
) -> acp::RequestPermissionRequest {
    let tool_call = acp::ToolCallUpdate::new(
        request.call_id.clone(),
        acp::ToolCallUpdateFields::new()
            .title(title(&request.tool, &request.input))
            .kind(kind(&request.tool, &request.input))
            .content(vec![acp::ToolCallContent::from(text(
                request.reason.clone(),
            ))]),
    );
    acp::RequestPermissionRequest::new(
        session_id.to_string(),
        tool_call,
        request.options.iter().copied().map(option).collect(),
    )
    .meta(meta(json!({
        "requestId": request.request_id,
        "reason": request.reason,
        "subjects": request.subjects,
        "expiresAt": request.expires_at,
        "prefixes": request.prefixes,
    })))
}

/// ACP's stop reason for a turn that ended normally; `None` for pod's `error`, which ACP
/// reports as a JSON-RPC error.
pub fn stop_reason(stop: StopReason) -> Option<acp::StopReason> {
    match stop {
        StopReason::EndTurn => Some(acp::StopReason::EndTurn),
        StopReason::Cancelled => Some(acp::StopReason::Cancelled),
        StopReason::MaxSteps => Some(acp::StopReason::MaxTurnRequests),
        StopReason::MaxTokens | StopReason::MaxContext => Some(acp::StopReason::MaxTokens),
        // A `user_prompt` hook refused the prompt: the session tells the editor why first.
        StopReason::Refused => Some(acp::StopReason::Refusal),
        StopReason::Error => None,
    }
}

/// A session's history as the updates `session/load` replays: the user's messages, the
/// agent's text, and each tool call with its result.
pub fn replay(items: &[Item], workspace: &Path) -> Vec<acp::SessionUpdate> {
    let mut calls: Vec<(&str, &str, &Value)> = Vec::new();
    let mut out = Vec::new();
    for item in items {
        match item {
            Item::UserMessage { text, .. } => out.push(user_text(text.clone())),
            Item::AssistantText { text, .. } => out.push(agent_text(text.clone())),
            Item::ToolCall {
                call_id,
                tool,
                input,
                ..
            } => {
                calls.push((call_id, tool, input));
                if !is_plan(tool) {
                    out.push(tool_call(call_id, tool, input, workspace));
                }
            }
            Item::ToolResult(r) => {
                let (tool, input) = calls
                    .iter()
                    .rev()
                    .find(|(id, _, _)| *id == r.call_id)
                    .map(|(_, t, i)| (*t, *i))
                    .unwrap_or(("", &Value::Null));
                if is_plan(tool) {
                    out.extend(plan(r, input));
                } else {
                    out.push(result(r, tool, input, workspace));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::DeniedBy;

    fn wire(update: &acp::SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap()
    }

    #[test]
    fn tool_calls_get_kind_title_locations_and_a_diff_for_writes() {
        let ws = Path::new("/w");
        let bash = wire(&tool_call(
            "c1",
            "bash",
            &json!({"command": "ls -l\necho"}),
            ws,
        ));
        assert_eq!(bash["sessionUpdate"], "tool_call");
        assert_eq!(
            (&bash["kind"], &bash["title"], &bash["status"]),
            // `pending` is the schema's default, which it leaves out.
            (&json!("execute"), &json!("ls -l…"), &Value::Null)
        );
        assert_eq!(bash["rawInput"]["command"], "ls -l\necho");
        let edit = wire(&tool_call(
            "c2",
            "edit",
            &json!({"path": "src/a.rs", "old": "x", "new": "y"}),
            ws,
        ));
        assert_eq!(edit["kind"], "edit");
        assert_eq!(edit["locations"], json!([{"path": "/w/src/a.rs"}]));
        assert_eq!(
            edit["content"],
            json!([{"type": "diff", "path": "/w/src/a.rs", "oldText": "x", "newText": "y"}])
        );
        let read = wire(&tool_call(
            "c3",
            "read",
            &json!({"path": "/etc/x", "offset": 3}),
            ws,
        ));
        assert_eq!(
            (&read["kind"], &read["locations"]),
            (&json!("read"), &json!([{"path": "/etc/x", "line": 3}]))
        );
        assert_eq!(
            wire(&tool_call("c4", "grep", &json!({"pattern": "a"}), ws))["kind"],
            "search"
        );
        // `other` is the schema's default kind, which the schema crate leaves out of the wire.
        let other = wire(&tool_call("c5", "mcp_x", &json!({}), ws));
        assert_eq!(other.get("kind"), None, "{other}");
        assert_eq!(other["title"], "mcp_x {}");
    }

    #[test]
    fn a_denied_result_is_failed_and_names_the_rule() {
        let denied = CallResult {
            turn_id: "t".into(),
            call_id: "c1".into(),
            is_error: true,
            content: "permission denied: rule 1 (bash \"rm *\" deny) for bash `rm x`".into(),
            denied_by: Some(DeniedBy::Permission),
        };
        let v = wire(&result(
            &denied,
            "bash",
            &json!({"command": "rm x"}),
            Path::new("/w"),
        ));
        assert_eq!(v["sessionUpdate"], "tool_call_update");
        assert_eq!(v["status"], "failed");
        assert_eq!(v["content"][0]["content"]["text"], denied.content);
        assert_eq!(v["_meta"]["pod"]["deniedBy"], "permission");
    }

    #[test]
    fn options_map_both_ways_and_only_offered_ones_count() {
        let offered = [ReplyDecision::AllowOnce, ReplyDecision::Deny];
        assert_eq!(
            decision("allow_once", &offered),
            Some(ReplyDecision::AllowOnce)
        );
        assert_eq!(decision("reject_once", &offered), Some(ReplyDecision::Deny));
        assert_eq!(decision("allow_always", &offered), None);
        assert_eq!(decision("anything", &offered), None);
        let all = [
            ReplyDecision::AllowOnce,
            ReplyDecision::AllowSession,
            ReplyDecision::Deny,
        ];
        assert_eq!(
            decision("allow_always", &all),
            Some(ReplyDecision::AllowSession)
        );
        assert_eq!(
            serde_json::to_value(option(ReplyDecision::AllowSession)).unwrap(),
            json!({"optionId": "allow_always", "name": "Allow for this session", "kind": "allow_always"})
        );
    }

    #[test]
    fn stop_reasons_map_and_error_is_not_one() {
        assert_eq!(
            stop_reason(StopReason::MaxSteps),
            Some(acp::StopReason::MaxTurnRequests)
        );
        assert_eq!(
            stop_reason(StopReason::MaxTokens),
            Some(acp::StopReason::MaxTokens)
        );
        assert_eq!(
            stop_reason(StopReason::Refused),
            Some(acp::StopReason::Refusal)
        );
        assert_eq!(stop_reason(StopReason::Error), None);
    }
}
