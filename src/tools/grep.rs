//! The `grep` tool: regex search over files, with ripgrep's crates.
//!
//! Owns: compiling the pattern (`grep-regex`, Rust regex syntax, one line at a time), walking the
//! search root with `.gitignore` respected and hidden files skipped (`ignore`), the optional file
//! filter (`globset`: a glob without `/` matches file names, one with `/` matches the path
//! relative to the search root), skipping binary files, and the output: `path:line:text` lines,
//! paths relative to the workspace, capped at 500 matches (and 50 KB) with a note.
//!
//! The walk starts at the search root the runtime pinned. Each file is opened following no
//! symlink ([`confined::open_read`]), and a file the read rules deny (by name, or by another
//! name when it has several hard links) is never searched: the result says how many were
//! withheld and by which rule.
//!
//! Memory: the searcher holds at most [`HEAP_LIMIT`] bytes of a file at once; a file with a
//! longer line is skipped and counted in the note, so one enormous line cannot make a search
//! hold the whole of it.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::common::{self, display, parse_input, schema_of, search_root, Withheld};
use super::{confined, Presentation, Tool, ToolContext, ToolOutput};
use crate::permission::FileRules;

/// At most this many matching lines are listed.
pub const MAX_MATCHES: usize = 500;
/// At most this many bytes of output.
pub const OUTPUT_CAP: usize = 50_000;
/// Longer matching lines are cut to this many bytes.
const MAX_LINE: usize = 500;
/// Most bytes of a file the searcher holds at once (its line buffer); a file with a longer line
/// is skipped.
pub const HEAP_LIMIT: usize = 1024 * 1024;

/// Input of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// Regular expression (Rust regex syntax, e.g. `fn\s+main`, `(?i)todo`), matched against
    /// each line.
    pub pattern: String,
    /// File or folder to search: relative to the workspace, or absolute (default: the
    /// workspace).
    pub path: Option<String>,
    /// Only search files matching this glob: without `/` it matches file names (`*.rs`), with
    /// `/` the path relative to the search folder (`src/**/*.rs`).
    pub glob: Option<String>,
}

pub struct Grep;

#[async_trait]
impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> &'static str {
        "Search file contents with a regular expression (Rust regex syntax). Lists matching \
         lines as `path:line:text`, paths relative to the workspace. Respects .gitignore, skips \
         hidden and binary files. `glob` filters files (`*.rs`, `src/**/*.ts`). At most 500 \
         matches are listed."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<GrepInput>()
    }

    fn example(&self) -> &str {
        "'{\"pattern\":\"TODO\",\"path\":\"src\"}'"
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        let input = GrepInput::deserialize(input).ok();
        Presentation::search(
            "grep",
            input.as_ref().map(|i| (i.pattern.as_str(), i.path.clone())),
        )
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let input: GrepInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        if input.pattern.is_empty() {
            return ToolOutput::error("invalid input: field `pattern` must not be empty");
        }
        let matcher = match RegexMatcherBuilder::new()
            .line_terminator(Some(b'\n'))
            .build(&input.pattern)
        {
            Ok(m) => m,
            Err(e) => {
                return ToolOutput::error(format!(
                    "invalid input: field `pattern` is not a valid regex: {e}"
                ))
            }
        };
        let filter = match input.glob.as_deref() {
            None | Some("") => None,
            Some(g) => match FileFilter::new(g) {
                Ok(f) => Some(f),
                Err(e) => return ToolOutput::error(e),
            },
        };
        let root = match search_root(&ctx.workspace, input.path.as_deref()) {
            Ok(r) => ctx.target(&r).path,
            Err(e) => return ToolOutput::error(e),
        };
        let workspace = ctx.workspace.clone();
        let cancel = ctx.cancel.clone();
        let files = ctx.files.clone();
        let job = tokio::task::spawn_blocking(move || {
            let walk = Walk {
                workspace: &workspace,
                root: &root,
                files: &files,
                cancel: &cancel,
            };
            search(&walk, &matcher, filter.as_ref())
        });
        match job.await {
            Ok(Ok(text)) => ToolOutput::ok(text),
            Ok(Err(e)) => ToolOutput::error(e),
            Err(e) => ToolOutput::error(format!("grep failed: {e}")),
        }
    }
}

/// The `glob` input of grep.
struct FileFilter {
    glob: GlobMatcher,
    by_name: bool,
}

impl FileFilter {
    fn new(glob: &str) -> Result<FileFilter, String> {
        let by_name = !glob.contains('/');
        let glob = glob.strip_prefix("./").unwrap_or(glob);
        let glob = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("invalid input: field `glob` is not a valid glob: {e}"))?
            .compile_matcher();
        Ok(FileFilter { glob, by_name })
    }

    fn accepts(&self, root: &Path, path: &Path) -> bool {
        if self.by_name {
            path.file_name().is_some_and(|n| self.glob.is_match(n))
        } else {
            let rel = path.strip_prefix(root).unwrap_or(path);
            self.glob.is_match(rel)
        }
    }
}

fn cut_line(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    if line.len() <= MAX_LINE {
        return line.to_string();
    }
    let mut end = MAX_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} [... line cut]", &line[..end])
}

/// Where a search walks, and what it consults on the way.
struct Walk<'a> {
    workspace: &'a Path,
    root: &'a Path,
    files: &'a FileRules,
    cancel: &'a CancellationToken,
}

fn search(
    walk: &Walk<'_>,
    matcher: &RegexMatcher,
    filter: Option<&FileFilter>,
) -> Result<String, String> {
    let Walk {
        workspace,
        root,
        files,
        cancel,
    } = *walk;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .heap_limit(Some(HEAP_LIMIT))
        .build();
    let mut out = String::new();
    let mut matches = 0usize;
    let mut full = false;
    let mut unreadable = 0usize;
    let mut long_lines = 0usize;
    let mut withheld = Withheld::default();
    for entry in common::walk(root) {
        if cancel.is_cancelled() {
            return Err("cancelled".to_string());
        }
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        if !entry.file_type.is_some_and(|t| t.is_file()) {
            continue;
        }
        let path: PathBuf = entry.path;
        if let Some(f) = filter {
            if !f.accepts(root, &path) {
                continue;
            }
        }
        if let Some(rule) = files.withheld("grep", &path) {
            withheld.rule(rule);
            continue;
        }
        // The walk met this path; opening it follows nothing a concurrent swap put there.
        let Ok(file) = confined::open_read(&path) else {
            unreadable += 1;
            continue;
        };
        match file.metadata() {
            Ok(meta) => {
                if let Err(denial) = files.check_links(&path, &meta) {
                    withheld.link(denial);
                    continue;
                }
            }
            Err(_) => {
                unreadable += 1;
                continue;
            }
        }
        let shown = display(workspace, &path);
        let result = searcher.search_file(
            matcher,
            &file,
            Lossy(|number, line| {
                if matches >= MAX_MATCHES || out.len() >= OUTPUT_CAP {
                    full = true;
                    return Ok(false);
                }
                matches += 1;
                out.push_str(&format!("{shown}:{number}:{}\n", cut_line(line)));
                Ok(true)
            }),
        );
        match result {
            Ok(()) => {}
            // grep-searcher's error for a line past the heap limit.
            Err(e) if e.to_string().contains("allocation limit") => long_lines += 1,
            Err(_) => unreadable += 1,
        }
        if full {
            break;
        }
    }
    if matches == 0 {
        out.push_str("no matches");
    } else if full {
        out.push_str(&format!(
            "[stopped after {matches} matches; narrow the pattern, path or glob to see more]"
        ));
    }
    if unreadable > 0 {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("[{unreadable} paths could not be read]"));
    }
    if long_lines > 0 {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "[{long_lines} files skipped: a line longer than {} MiB]",
            HEAP_LIMIT / 1024 / 1024
        ));
    }
    if let Some(note) = withheld.note() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&note);
    }
    Ok(out.trim_end_matches('\n').to_string())
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
        fs::write(d.join(".gitignore"), "target/\n*.log\n").unwrap();
        fs::write(d.join("src/main.rs"), "fn main() {\n    // TODO: x\n}\n").unwrap();
        fs::write(d.join("src/sub/lib.rs"), "// todo later\npub fn f() {}\n").unwrap();
        fs::write(d.join("src/notes.txt"), "TODO in text\n").unwrap();
        fs::write(d.join("target/gen.rs"), "// TODO generated\n").unwrap();
        fs::write(d.join("run.log"), "TODO in log\n").unwrap();
        fs::write(d.join("blob.bin"), b"TODO\0binary").unwrap();
        dir
    }

    #[tokio::test]
    async fn respects_gitignore_and_lists_relative_paths() {
        let dir = tree();
        let out = Grep
            .run(json!({"pattern": "TODO"}), &ToolContext::new(dir.path()))
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "src/main.rs:2:    // TODO: x\nsrc/notes.txt:1:TODO in text"
        );
        let out = Grep
            .run(
                json!({"pattern": "(?i)todo", "path": "src/sub"}),
                &ToolContext::new(dir.path()),
            )
            .await;
        assert_eq!(out.content, "src/sub/lib.rs:1:// todo later");
    }

    #[tokio::test]
    async fn glob_filter() {
        let dir = tree();
        let c = ToolContext::new(dir.path());
        let out = Grep
            .run(json!({"pattern": "(?i)todo", "glob": "*.rs"}), &c)
            .await;
        assert_eq!(
            out.content,
            "src/main.rs:2:    // TODO: x\nsrc/sub/lib.rs:1:// todo later"
        );
        let out = Grep
            .run(json!({"pattern": "(?i)todo", "glob": "src/*.rs"}), &c)
            .await;
        assert_eq!(out.content, "src/main.rs:2:    // TODO: x");
        let out = Grep
            .run(json!({"pattern": "TODO", "glob": "*.md"}), &c)
            .await;
        assert!(!out.is_error);
        assert_eq!(out.content, "no matches");
        let out = Grep.run(json!({"pattern": "x", "glob": "a[b"}), &c).await;
        assert!(
            out.is_error && out.content.contains("`glob`"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn explicit_file_and_absolute_path() {
        let dir = tree();
        let abs = dir.path().join("src/main.rs").display().to_string();
        let out = Grep
            .run(
                json!({"pattern": "main", "path": abs}),
                &ToolContext::new(dir.path()),
            )
            .await;
        assert_eq!(out.content, "src/main.rs:1:fn main() {");
    }

    #[tokio::test]
    async fn cap_with_note() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (0..MAX_MATCHES + 50)
            .map(|i| format!("hit {i}\n"))
            .collect();
        fs::write(dir.path().join("many.txt"), body).unwrap();
        let out = Grep
            .run(json!({"pattern": "hit"}), &ToolContext::new(dir.path()))
            .await;
        assert!(!out.is_error);
        assert_eq!(out.content.lines().count(), MAX_MATCHES + 1);
        assert!(out.content.ends_with("to see more]"), "{}", out.content);
    }

    #[tokio::test]
    async fn bad_input() {
        let dir = tree();
        let c = ToolContext::new(dir.path());
        let out = Grep.run(json!({"pattern": "fn ("}), &c).await;
        assert!(
            out.is_error && out.content.contains("not a valid regex"),
            "{}",
            out.content
        );
        let out = Grep.run(json!({"pattern": 1}), &c).await;
        assert!(
            out.is_error && out.content.contains("`pattern`"),
            "{}",
            out.content
        );
        let out = Grep.run(json!({"path": "src"}), &c).await;
        assert!(
            out.is_error && out.content.contains("pattern"),
            "{}",
            out.content
        );
        let out = Grep.run(json!({"pattern": "x", "path": "nope"}), &c).await;
        assert!(
            out.is_error && out.content.contains("not found"),
            "{}",
            out.content
        );
        let out = Grep.run(json!({"pattern": "x", "path": false}), &c).await;
        assert!(
            out.is_error && out.content.contains("`path`"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn a_file_with_an_enormous_line_is_skipped_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let mut long = "x".repeat(2 * HEAP_LIMIT);
        long.push_str(" TODO\n");
        fs::write(dir.path().join("long.txt"), long).unwrap();
        fs::write(dir.path().join("short.txt"), "a TODO\n").unwrap();
        let out = Grep
            .run(json!({"pattern": "TODO"}), &ToolContext::new(dir.path()))
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "short.txt:1:a TODO\n[1 files skipped: a line longer than 1 MiB]"
        );
    }
}
