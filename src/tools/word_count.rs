//! The `word_count` tool (a test-only example, issue 24's measure of adding a tool): the lines,
//! words and bytes of one file, as `wc` counts them.
//!
//! Owns: its typed input, its presentation and its count. The file is opened at the target the
//! runtime pinned and checked, following no symlink ([`confined::open_read`]).
//!
//! Must not touch: permission decisions (its path is a `SubjectKind::Path` subject, governed by
//! `read` rules as well as its own).

use std::io::Read as _;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::common::{display, parse_input, resolve, schema_of};
use super::{confined, Location, Presentation, Tool, ToolContext, ToolKind, ToolOutput};

/// Input of `word_count`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WordCountInput {
    /// The file to count: relative to the workspace, or absolute.
    pub path: String,
}

pub struct WordCount;

#[async_trait]
impl Tool for WordCount {
    fn name(&self) -> &'static str {
        "word_count"
    }

    fn description(&self) -> &'static str {
        "Count the lines, words and bytes of a file, as `wc` does."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<WordCountInput>()
    }

    fn example(&self) -> &str {
        "'{\"path\":\"README.md\"}'"
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        let Ok(i) = WordCountInput::deserialize(input) else {
            return Presentation {
                kind: ToolKind::Read,
                ..Presentation::other()
            };
        };
        Presentation {
            kind: ToolKind::Read,
            title: Some(format!("word_count {}", i.path)),
            locations: vec![Location {
                path: i.path,
                line: None,
            }],
            change: None,
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let input: WordCountInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let path = match resolve(&ctx.workspace, "path", &input.path) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let shown = display(&ctx.workspace, &path);
        let target = ctx.target(&path);
        let mut bytes = Vec::new();
        let read = confined::open_read(&target.path).and_then(|mut f| f.read_to_end(&mut bytes));
        if let Err(e) = read {
            return ToolOutput::error(format!("{shown}: {}", confined::describe(&e)));
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines = bytes.iter().filter(|&&b| b == b'\n').count();
        let words = text.split_whitespace().count();
        ToolOutput::ok(format!("{lines} {words} {} {shown}", bytes.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn counts_lines_words_and_bytes_and_names_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one two\nthree\n").unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = WordCount.run(json!({"path": "a.txt"}), &ctx).await;
        assert_eq!(out, ToolOutput::ok("2 3 14 a.txt"));
        let out = WordCount.run(json!({"path": "gone.txt"}), &ctx).await;
        assert!(out.is_error && out.content.contains("gone.txt"), "{out:?}");
        let out = WordCount.run(json!({"file": "a.txt"}), &ctx).await;
        assert!(out.is_error && out.content.contains("path"), "{out:?}");
    }
}
