//! The `plan` tool: the model's plan for the task, as a list of steps with a status, which a
//! client shows (ACP's `plan` session update; a `toolCall` like any other on pod's protocol).
//!
//! Owns: the plan's typed input and its bounds ([`MAX_ENTRIES`] steps, [`MAX_TEXT`] characters
//! each), and the short summary the model gets back. Each call sends the whole plan: it
//! replaces the one before.
//!
//! Must not touch: anything outside the conversation. The call has no permission subjects
//! (`SubjectKind::Nothing`: nothing to decide); enabling the tool by name is the choice.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{parse_input, schema_of};
use super::{Presentation, Tool, ToolContext, ToolKind, ToolOutput};

/// Steps in one plan at most.
pub const MAX_ENTRIES: usize = 50;
/// Characters of one step's text at most.
pub const MAX_TEXT: usize = 500;

/// Input of `plan`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanInput {
    /// Every step of the plan, in order (the whole plan: it replaces the previous one).
    pub entries: Vec<PlanEntry>,
}

/// One step.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PlanEntry {
    /// What the step does, in a sentence.
    pub content: String,
    pub status: Status,
    /// Default: medium.
    #[serde(default)]
    pub priority: Priority,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    High,
    #[default]
    Medium,
    Low,
}

/// The plan of a call's input when it is a valid one (for front-ends that show it).
pub fn entries(input: &serde_json::Value) -> Option<Vec<PlanEntry>> {
    let input = PlanInput::deserialize(input).ok()?;
    check(&input).ok()?;
    Some(input.entries)
}

fn check(input: &PlanInput) -> Result<(), String> {
    if input.entries.len() > MAX_ENTRIES {
        return Err(format!(
            "invalid input: field `entries` has {} steps; a plan has at most {MAX_ENTRIES}",
            input.entries.len()
        ));
    }
    for (i, e) in input.entries.iter().enumerate() {
        if e.content.trim().is_empty() {
            return Err(format!(
                "invalid input: field `entries[{i}].content` is empty"
            ));
        }
        if e.content.chars().count() > MAX_TEXT {
            return Err(format!(
                "invalid input: field `entries[{i}].content` is longer than {MAX_TEXT} characters"
            ));
        }
    }
    Ok(())
}

pub struct Plan;

#[async_trait]
impl Tool for Plan {
    fn name(&self) -> &'static str {
        "plan"
    }

    fn description(&self) -> &'static str {
        "Record your plan for the task as a list of steps, each pending, in_progress or \
         completed, for the user to follow. Send the whole plan each time (it replaces the \
         previous one) and update it as steps are done. At most 50 steps of 500 characters."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<PlanInput>()
    }

    fn example(&self) -> &str {
        "'{\"entries\":[{\"content\":\"Run the tests\",\"status\":\"in_progress\"}]}'"
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        let title = entries(input).map(|e| format!("plan ({} steps)", e.len()));
        Presentation {
            kind: ToolKind::Other,
            title,
            ..Presentation::other()
        }
    }

    async fn run(&self, input: serde_json::Value, _ctx: &ToolContext) -> ToolOutput {
        let input: PlanInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        if let Err(e) = check(&input) {
            return ToolOutput::error(e);
        }
        let count = |s: Status| input.entries.iter().filter(|e| e.status == s).count();
        ToolOutput::ok(format!(
            "plan recorded: {} steps ({} completed, {} in progress, {} pending)",
            input.entries.len(),
            count(Status::Completed),
            count(Status::InProgress),
            count(Status::Pending)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_plan_is_checked_and_summed_up() {
        let ctx = ToolContext::new("/");
        let out = Plan
            .run(
                json!({"entries": [
                    {"content": "read the code", "status": "completed"},
                    {"content": "fix the bug", "status": "in_progress", "priority": "high"},
                    {"content": "run the tests", "status": "pending"}
                ]}),
                &ctx,
            )
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out
            .content
            .contains("3 steps (1 completed, 1 in progress, 1 pending)"));

        let bad = Plan
            .run(
                json!({"entries": [{"content": "x", "status": "started"}]}),
                &ctx,
            )
            .await;
        assert!(
            bad.is_error && bad.content.contains("status"),
            "{}",
            bad.content
        );
        let empty = Plan
            .run(
                json!({"entries": [{"content": " ", "status": "pending"}]}),
                &ctx,
            )
            .await;
        assert!(
            empty.content.contains("entries[0].content"),
            "{}",
            empty.content
        );
        let many: Vec<_> = (0..51)
            .map(|i| json!({"content": format!("step {i}"), "status": "pending"}))
            .collect();
        let long = Plan.run(json!({ "entries": many }), &ctx).await;
        assert!(
            long.is_error && long.content.contains("at most 50"),
            "{}",
            long.content
        );
        assert_eq!(entries(&json!({ "entries": [] })), Some(Vec::new()));
    }
}
