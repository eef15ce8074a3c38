//! One MCP server tool as a pod [`Tool`]: `tools/call` with a timeout, cancellation that reaches
//! the server, and the result projected as pod's results are.
//!
//! A call that the turn cancels or that passes `tool_timeout_secs` is abandoned: `rmcp` sends
//! the server `notifications/cancelled` for it when its future is dropped, and the call gets an
//! error result at once, whatever the server does next. A server that exits during a call, or
//! closes the connection, gives an error result naming the exit. An `isError` result is an
//! error result (`is_error: true`), as a failed built-in tool's.
//!
//! Must not touch: the server's lifetime (`server.rs`), decisions.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::ServiceError;

use super::server::{Listed, Server};
use crate::protocol::ToolAnnotations;
use crate::tools::common::HeadTail;
use crate::tools::{Tool, ToolContext, ToolOutput};

/// Most bytes of a result's text kept for the model (half from its start, half from its end).
pub const OUTPUT_CAP: usize = 100_000;

/// How long a call whose connection closed waits to learn that the server exited, for a
/// message that says how.
const EXIT_WAIT: Duration = Duration::from_secs(1);

pub struct McpTool {
    server: Arc<Server>,
    listed: Listed,
}

impl McpTool {
    pub fn new(server: Arc<Server>, listed: Listed) -> McpTool {
        McpTool { server, listed }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.listed.name
    }

    fn description(&self) -> &str {
        &self.listed.description
    }

    fn input_schema(&self) -> serde_json::Value {
        self.listed.input_schema.clone()
    }

    fn annotations(&self) -> Option<&ToolAnnotations> {
        self.listed.annotations.as_ref()
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let server = self.server.name();
        let tool = &self.listed.tool;
        let serde_json::Value::Object(arguments) = input else {
            return ToolOutput::error(
                "invalid input: an MCP tool takes a JSON object of arguments",
            );
        };
        let Some(peer) = self.server.peer() else {
            return ToolOutput::error(self.server.unavailable(tool));
        };
        let timeout = self.server.config().tool_timeout;
        let params = CallToolRequestParams::new(tool.clone()).with_arguments(arguments);
        // Dropping this future before its answer sends the server `notifications/cancelled`.
        let call = peer.call_tool(params);
        tokio::select! {
            result = call => match result {
                Ok(result) => project(result),
                Err(ServiceError::McpError(e)) => ToolOutput::error(format!(
                    "MCP server {server} refused the call of {tool}: {} (error {})",
                    e.message, e.code.0
                )),
                Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                    let state = self.server.settled(EXIT_WAIT).await;
                    ToolOutput::error(format!(
                        "{} during the call of {tool}; the call has no result",
                        self.server.exit_text(&state)
                    ))
                }
                Err(e) => ToolOutput::error(format!(
                    "MCP server {server}: the call of {tool} failed: {e}"
                )),
            },
            () = tokio::time::sleep(timeout) => ToolOutput::error(format!(
                "MCP server {server}: {tool} did not answer within {} s (tool_timeout_secs), \
                 so the call was cancelled",
                timeout.as_secs()
            )),
            () = ctx.cancel.cancelled() => ToolOutput::error(
                "cancelled: the turn was cancelled before this call finished (the MCP server \
                 was told to cancel it)",
            ),
        }
    }
}

/// MCP's annotations in pod's protocol type.
pub fn annotations(a: rmcp::model::ToolAnnotations) -> ToolAnnotations {
    ToolAnnotations {
        title: a.title,
        read_only_hint: a.read_only_hint,
        destructive_hint: a.destructive_hint,
        idempotent_hint: a.idempotent_hint,
        open_world_hint: a.open_world_hint,
    }
}

/// A `tools/call` result as text for the model: each content block in order (text as it is,
/// other kinds described), the structured content when there is no content, and `isError` as
/// pod's `is_error`. At most [`OUTPUT_CAP`] bytes are kept.
pub fn project(result: CallToolResult) -> ToolOutput {
    let mut out = HeadTail::new(OUTPUT_CAP);
    let mut first = true;
    let mut push = |text: &str| {
        if !first {
            out.push(b"\n");
        }
        first = false;
        out.push(text.as_bytes());
    };
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => push(&t.text),
            ContentBlock::Image(i) => push(&format!(
                "[image: {}, {} bytes of base64]",
                i.mime_type,
                i.data.len()
            )),
            ContentBlock::Audio(a) => push(&format!(
                "[audio: {}, {} bytes of base64]",
                a.mime_type,
                a.data.len()
            )),
            ContentBlock::ResourceLink(r) => {
                push(&format!("[resource link: {} ({})]", r.uri, r.name))
            }
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    push(&format!("[resource {uri}]\n{text}"))
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => push(&format!(
                    "[resource {uri}: {}, {} bytes of base64]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                )),
                _ => push("[a resource of a kind pod does not show]"),
            },
            _ => push("[content of a kind pod does not show]"),
        }
    }
    if result.content.is_empty() {
        if let Some(structured) = &result.structured_content {
            push(&structured.to_string());
        }
    }
    let text = out.finish();
    if result.is_error == Some(true) {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_become_text_and_is_error_carries_over() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("one"),
            ContentBlock::image("aGk=", "image/png"),
        ]);
        let out = project(result.clone());
        assert_eq!(
            out,
            ToolOutput::ok("one\n[image: image/png, 4 bytes of base64]")
        );
        result.is_error = Some(true);
        assert!(project(result).is_error);
        let big = CallToolResult::success(vec![ContentBlock::text("x".repeat(3 * OUTPUT_CAP))]);
        let out = project(big);
        assert!(
            out.content.len() < OUTPUT_CAP + 100,
            "{}",
            out.content.len()
        );
        assert!(out.content.contains("bytes cut"));
    }
}
