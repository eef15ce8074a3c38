//! `echo` (a test-only example tool, to measure what adding a tool touches).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::common::{parse_input, schema_of};
use super::{Presentation, Tool, ToolContext, ToolKind, ToolOutput};

/// Input of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EchoInput {
    /// The text to say back.
    pub text: String,
}

pub struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }

    fn description(&self) -> &'static str {
        "Say the text back."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<EchoInput>()
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        Presentation {
            kind: ToolKind::Other,
            title: EchoInput::deserialize(input).ok().map(|i| format!("echo {}", i.text)),
            ..Presentation::other()
        }
    }

    async fn run(&self, input: serde_json::Value, _ctx: &ToolContext) -> ToolOutput {
        match parse_input::<EchoInput>(input) {
            Ok(i) => ToolOutput::ok(i.text),
            Err(e) => ToolOutput::error(e.to_string()),
        }
    }
}
