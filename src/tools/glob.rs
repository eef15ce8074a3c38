//! The `glob` tool: lists files whose path matches a glob.
//!
//! Owns: compiling the glob (`globset`; `*` and `?` stay within one folder, `**` crosses
//! folders, `{a,b}` and `[ab]` work), matching it against each file's path relative to the
//! search folder (`path`, default the workspace) during a `.gitignore`-aware walk that skips
//! hidden files (`ignore`), and listing matches relative to the workspace, sorted, at most 1000
//! with a note saying how many more there were. Only files (and symlinks) are listed, not
//! folders. The walk starts at the folder the runtime pinned, and a file the read rules deny is
//! never listed: the result says how many were withheld and by which rule.
//!
//! Memory: only the first [`MAX_PATHS`] matches in sort order are kept during the walk (the
//! others are counted), so a tree of millions of files costs no more than the output.

use std::path::Path;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::common::{display, parse_input, schema_of, search_root, walk, Withheld};
use super::{Presentation, Tool, ToolContext, ToolOutput};
use crate::permission::FileRules;

/// At most this many paths are listed.
pub const MAX_PATHS: usize = 1000;

/// Input of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// Glob matched against file paths relative to `path`: `*.rs` (top level only),
    /// `**/*.rs` (any depth), `src/**/test_*.py`, `*.{js,ts}`.
    pub pattern: String,
    /// Folder to search: relative to the workspace, or absolute (default: the workspace).
    pub path: Option<String>,
}

pub struct Glob;

#[async_trait]
impl Tool for Glob {
    fn name(&self) -> &'static str {
        "glob"
    }

    fn description(&self) -> &'static str {
        "Find files by path pattern, e.g. `**/*.rs` or `src/*.{js,ts}` (`*` stays within one \
         folder, `**` crosses folders). Lists matching files relative to the workspace, sorted. \
         Respects .gitignore and skips hidden files. At most 1000 paths are listed."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<GlobInput>()
    }

    fn example(&self) -> &str {
        "'{\"pattern\":\"**/*.rs\",\"path\":\"src\"}'"
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        let input = GlobInput::deserialize(input).ok();
        Presentation::search(
            "glob",
            input.as_ref().map(|i| (i.pattern.as_str(), i.path.clone())),
        )
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let input: GlobInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let pattern = input.pattern.strip_prefix("./").unwrap_or(&input.pattern);
        if pattern.is_empty() {
            return ToolOutput::error("invalid input: field `pattern` must not be empty");
        }
        if pattern.starts_with('/') {
            return ToolOutput::error(
                "invalid input: field `pattern` must be relative to the search folder; put the \
                 folder in `path`",
            );
        }
        let matcher = match GlobBuilder::new(pattern).literal_separator(true).build() {
            Ok(g) => g.compile_matcher(),
            Err(e) => {
                return ToolOutput::error(format!(
                    "invalid input: field `pattern` is not a valid glob: {e}"
                ))
            }
        };
        let root = match search_root(&ctx.workspace, input.path.as_deref()) {
            Ok(r) => ctx.target(&r).path,
            Err(e) => return ToolOutput::error(e),
        };
        if !crate::sandbox::tmpfs::reach(&root).is_dir() {
            return ToolOutput::error(format!(
                "invalid input: field `path` must be a folder: {} is a file",
                display(&ctx.workspace, &root)
            ));
        }
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let files = ctx.files.clone();
        let job =
            tokio::task::spawn_blocking(move || find(&workspace, &root, &matcher, &files, &cancel));
        match job.await {
            Ok(Ok(text)) => ToolOutput::ok(text),
            Ok(Err(e)) => ToolOutput::error(e),
            Err(e) => ToolOutput::error(format!("glob failed: {e}")),
        }
    }
}

fn find(
    workspace: &Path,
    root: &Path,
    matcher: &GlobMatcher,
    files: &FileRules,
    cancel: &CancellationToken,
) -> Result<String, String> {
    // A max-heap of the smallest paths seen: its top is the first one to drop.
    let mut found = std::collections::BinaryHeap::new();
    let mut total = 0usize;
    let mut withheld = Withheld::default();
    for entry in walk(root) {
        if cancel.is_cancelled() {
            return Err("cancelled".to_string());
        }
        let Ok(entry) = entry else { continue };
        if entry.depth == 0 || entry.file_type.is_some_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(rel) = entry.path.strip_prefix(root) else {
            continue;
        };
        if matcher.is_match(rel) {
            match files.withheld("glob", &entry.path) {
                Some(rule) => withheld.rule(rule),
                None => {
                    total += 1;
                    found.push(display(workspace, &entry.path));
                    if found.len() > MAX_PATHS {
                        found.pop();
                    }
                }
            }
        }
    }
    let note = withheld.note();
    if found.is_empty() {
        return Ok(match note {
            Some(note) => format!("no files match\n{note}"),
            None => "no files match".to_string(),
        });
    }
    let mut out = found.into_sorted_vec().join("\n");
    if total > MAX_PATHS {
        out.push_str(&format!(
            "\n[{} more not shown ({total} in all); narrow the pattern or path]",
            total - MAX_PATHS
        ));
    }
    if let Some(note) = note {
        out.push('\n');
        out.push_str(&note);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir_all(d.join("src/sub")).unwrap();
        fs::create_dir_all(d.join("target")).unwrap();
        fs::create_dir_all(d.join(".hidden")).unwrap();
        fs::write(d.join(".gitignore"), "target/\n").unwrap();
        for f in [
            "a.rs",
            "src/main.rs",
            "src/b.ts",
            "src/sub/lib.rs",
            "target/gen.rs",
            ".hidden/h.rs",
        ] {
            fs::write(d.join(f), "x").unwrap();
        }
        dir
    }

    #[tokio::test]
    async fn matches_sorted_and_relative() {
        let dir = tree();
        let c = ToolContext::new(dir.path());
        let out = Glob.run(json!({"pattern": "**/*.rs"}), &c).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "a.rs\nsrc/main.rs\nsrc/sub/lib.rs");
        let out = Glob.run(json!({"pattern": "*.rs"}), &c).await;
        assert_eq!(out.content, "a.rs");
        let out = Glob
            .run(json!({"pattern": "*.{rs,ts}", "path": "src"}), &c)
            .await;
        assert_eq!(out.content, "src/b.ts\nsrc/main.rs");
        let abs = dir.path().join("src").display().to_string();
        let out = Glob.run(json!({"pattern": "sub/*", "path": abs}), &c).await;
        assert_eq!(out.content, "src/sub/lib.rs");
        let out = Glob.run(json!({"pattern": "*.md"}), &c).await;
        assert!(!out.is_error);
        assert_eq!(out.content, "no files match");
    }

    #[tokio::test]
    async fn cap_with_note() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..MAX_PATHS + 5 {
            fs::write(dir.path().join(format!("f{i:05}.txt")), "").unwrap();
        }
        let out = Glob
            .run(json!({"pattern": "*.txt"}), &ToolContext::new(dir.path()))
            .await;
        assert!(!out.is_error);
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines.len(), MAX_PATHS + 1);
        assert_eq!(lines[0], "f00000.txt");
        assert!(
            lines[MAX_PATHS].starts_with("[5 more not shown"),
            "{}",
            lines[MAX_PATHS]
        );
    }

    #[tokio::test]
    async fn bad_input() {
        let dir = tree();
        let c = ToolContext::new(dir.path());
        let out = Glob.run(json!({"pattern": "a[b"}), &c).await;
        assert!(
            out.is_error && out.content.contains("not a valid glob"),
            "{}",
            out.content
        );
        let out = Glob.run(json!({"pattern": "/etc/*"}), &c).await;
        assert!(
            out.is_error && out.content.contains("`pattern`"),
            "{}",
            out.content
        );
        let out = Glob.run(json!({}), &c).await;
        assert!(
            out.is_error && out.content.contains("pattern"),
            "{}",
            out.content
        );
        let out = Glob.run(json!({"pattern": "*", "path": 2}), &c).await;
        assert!(
            out.is_error && out.content.contains("`path`"),
            "{}",
            out.content
        );
        let out = Glob.run(json!({"pattern": "*", "path": "a.rs"}), &c).await;
        assert!(
            out.is_error && out.content.contains("folder"),
            "{}",
            out.content
        );
        let out = Glob
            .run(json!({"pattern": "*", "path": "missing"}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("not found"),
            "{}",
            out.content
        );
    }
}
