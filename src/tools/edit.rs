//! The `edit` tool: replaces exact text in a file.
//!
//! Owns: exact-match replacement of `old` by `new` (no regex, no whitespace folding), refusing
//! when `old` is empty, absent, or occurs several times without `replace_all` (the error says how
//! many times), and writing the result atomically like `file_write`. The file is opened at the
//! target the runtime pinned and checked, following no symlink ([`confined`]); a file with
//! several hard links is refused when another of its names is read-denied (an edit tells whether
//! text occurs in it). When the editor serves files, the text is read and/or written through it
//! ([`super::EditorFiles`]), on the same target.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use std::io::Read as _;

use super::common::{display, parse_input, resolve, schema_of};

/// The largest file `edit` reads, and the largest it writes (docs/manifest.md, "Limits"): an
/// edit holds the text and its result, so its memory is a small multiple of this, whatever
/// `replace_all` multiplies.
pub const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;
use super::{
    confined, Change, Location, Presentation, Target, Tool, ToolContext, ToolKind, ToolOutput,
};
use crate::permission::FileRules;

/// Input of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The file to change: relative to the workspace, or absolute. It must exist.
    pub path: String,
    /// The exact text to replace (not a regex; whitespace and line ends count). Must occur
    /// exactly once unless `replace_all` is true.
    pub old: String,
    /// The text to put in its place.
    pub new: String,
    /// Replace every occurrence of `old` instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

pub struct Edit;

#[async_trait]
impl Tool for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn description(&self) -> &'static str {
        "Replace exact text in a file: `old` must occur exactly once (include surrounding lines \
         to make it unique), or set `replace_all` to replace every occurrence. Text from read \
         output must be taken without its line-number prefix. The file is written atomically."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<EditInput>()
    }

    fn example(&self) -> &str {
        "'{\"path\":\"src/main.rs\",\"old\":\"foo\",\"new\":\"bar\"}'"
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        let Ok(i) = EditInput::deserialize(input) else {
            return Presentation {
                kind: ToolKind::Edit,
                ..Presentation::other()
            };
        };
        Presentation {
            kind: ToolKind::Edit,
            title: Some(format!("edit {}", i.path)),
            locations: vec![Location {
                path: i.path.clone(),
                line: None,
            }],
            change: Some(Change {
                path: i.path,
                old: Some(i.old),
                new: i.new,
            }),
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let input: EditInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        if input.old.is_empty() {
            return ToolOutput::error(
                "invalid input: field `old` must not be empty (use file_write to create a file)",
            );
        }
        if input.old == input.new {
            return ToolOutput::error("invalid input: fields `old` and `new` are the same");
        }
        let path = match resolve(&ctx.workspace, "path", &input.path) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let shown = display(&ctx.workspace, &path);
        let target = ctx.target(&path);
        let files = ctx.files.clone();
        if ctx.editor_reads().is_some() || ctx.editor_writes().is_some() {
            return match edit_in_editor(&target, &shown, &input, ctx).await {
                Ok(msg) => ToolOutput::ok(msg),
                Err(msg) => ToolOutput::error(msg),
            };
        }
        let job = tokio::task::spawn_blocking(move || edit_file(&target, &shown, &input, &files));
        match job.await {
            Ok(Ok(msg)) => ToolOutput::ok(msg),
            Ok(Err(msg)) => ToolOutput::error(msg),
            Err(e) => ToolOutput::error(format!("edit failed: {e}")),
        }
    }
}

fn edit_file(
    target: &Target,
    shown: &str,
    input: &EditInput,
    files: &FileRules,
) -> Result<String, String> {
    let text = read_text(target, shown, files)?;
    let (updated, count) = replace(&text, shown, input)?;
    confined::write_atomic(&target.beneath, &target.path, updated.as_bytes()).map_err(|e| {
        format!(
            "cannot write {shown}: {}; nothing changed",
            confined::describe(&e)
        )
    })?;
    Ok(replaced(count, shown))
}

/// The edit with the editor's text and/or through the editor's write (whichever it serves),
/// on the same pinned target.
async fn edit_in_editor(
    target: &Target,
    shown: &str,
    input: &EditInput,
    ctx: &ToolContext,
) -> Result<String, String> {
    let text = match ctx.editor_reads() {
        Some(editor) => {
            let read = super::read::read_from_editor(
                editor.as_ref(),
                &target.path,
                shown,
                &ctx.files,
                &ctx.cancel,
            );
            read.await?
        }
        None => {
            let (t, s, files) = (target.clone(), shown.to_string(), ctx.files.clone());
            tokio::task::spawn_blocking(move || read_text(&t, &s, &files))
                .await
                .map_err(|e| format!("edit failed: {e}"))??
        }
    };
    let (updated, count) = replace(&text, shown, input)?;
    match ctx.editor_writes() {
        Some(editor) => {
            tokio::select! {
                written = editor.write(&target.path, &updated) => written
                    .map_err(|e| format!("cannot write {shown}: {e}; nothing changed"))?,
                () = ctx.cancel.cancelled() => return Err("cancelled".to_string()),
            }
        }
        None => {
            let (t, s) = (target.clone(), shown.to_string());
            tokio::task::spawn_blocking(move || {
                confined::write_atomic(&t.beneath, &t.path, updated.as_bytes()).map_err(|e| {
                    format!(
                        "cannot write {s}: {}; nothing changed",
                        confined::describe(&e)
                    )
                })
            })
            .await
            .map_err(|e| format!("edit failed: {e}"))??;
        }
    }
    Ok(replaced(count, shown))
}

fn replaced(count: usize, shown: &str) -> String {
    format!(
        "replaced {count} occurrence{} in {shown}",
        if count == 1 { "" } else { "s" }
    )
}

/// The file's text from disk, opened at the pinned target following no symlink.
fn read_text(target: &Target, shown: &str, files: &FileRules) -> Result<String, String> {
    let cannot_read = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => format!("file not found: {shown}"),
        _ => format!("cannot read {shown}: {}", confined::describe(&e)),
    };
    let file = confined::open_read(&target.path).map_err(cannot_read)?;
    let meta = file.metadata().map_err(cannot_read)?;
    if meta.is_dir() {
        return Err(format!("{shown} is a directory, not a file"));
    }
    files
        .check_links(&target.path, &meta)
        .map_err(|denial| format!("permission denied: {denial}"))?;
    if meta.len() > MAX_EDIT_BYTES {
        return Err(too_large(shown, meta.len(), "is"));
    }
    let mut bytes = Vec::new();
    // The size can grow after the check: read at most one byte past the limit.
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot_read)?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(too_large(shown, bytes.len() as u64, "is"));
    }
    String::from_utf8(bytes)
        .map_err(|_| format!("{shown} is not valid UTF-8 text; edit works on text files only"))
}

/// Why a file is not edited: it, or what the edit would make of it, passes the limit.
fn too_large(shown: &str, bytes: u64, what: &str) -> String {
    format!(
        "{shown} {what} {bytes} bytes, more than edit handles ({MAX_EDIT_BYTES} bytes); nothing \
         changed (for larger changes, write the file with a command)"
    )
}

/// `text` with `old` replaced by `new`, and how many times; refused before anything is built
/// when the result would pass [`MAX_EDIT_BYTES`].
fn replace(text: &str, shown: &str, input: &EditInput) -> Result<(String, usize), String> {
    let count = text.matches(input.old.as_str()).count();
    let replaced_count = if input.replace_all {
        count
    } else {
        count.min(1)
    };
    let grows = (input.new.len() as u64).saturating_sub(input.old.len() as u64);
    let result = (text.len() as u64).saturating_add(grows.saturating_mul(replaced_count as u64));
    if result > MAX_EDIT_BYTES {
        return Err(too_large(shown, result, "would become"));
    }
    let updated = match count {
        0 => {
            return Err(format!(
                "`old` was not found in {shown} (it must match exactly, whitespace included); \
                 nothing changed"
            ))
        }
        1 => text.replacen(input.old.as_str(), &input.new, 1),
        n if !input.replace_all => {
            return Err(format!(
                "`old` occurs {n} times in {shown}; add surrounding text to make it unique, or \
                 set `replace_all` to replace all {n}; nothing changed"
            ))
        }
        _ => text.replace(input.old.as_str(), &input.new),
    };
    Ok((updated, count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;

    #[tokio::test]
    async fn an_edit_that_would_pass_the_limit_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        // 100 KB of `a`, each replaced by 10 KB: a 1 GB result, refused before it is built.
        fs::write(&p, "a".repeat(100_000)).unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = Edit
            .run(
                json!({"path": "f.txt", "old": "a", "new": "b".repeat(10_000), "replace_all": true}),
                &ctx,
            )
            .await;
        assert!(out.is_error, "{out:?}");
        assert!(
            out.content.contains("would become 1000000000 bytes"),
            "{}",
            out.content
        );
        assert_eq!(fs::metadata(&p).unwrap().len(), 100_000);
        // A file over the limit is not read at all.
        let big = dir.path().join("big.txt");
        fs::File::create(&big)
            .unwrap()
            .set_len(MAX_EDIT_BYTES + 1)
            .unwrap();
        let out = Edit
            .run(json!({"path": "big.txt", "old": "x", "new": "y"}), &ctx)
            .await;
        assert!(
            out.is_error && out.content.contains("more than edit handles"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn single_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.rs");
        fs::write(&p, "fn a() {}\nfn b() {}\n").unwrap();
        let out = Edit
            .run(
                json!({"path": "f.rs", "old": "fn b() {}", "new": "fn c() {}"}),
                &ToolContext::new(dir.path()),
            )
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "replaced 1 occurrence in f.rs");
        assert_eq!(fs::read_to_string(&p).unwrap(), "fn a() {}\nfn c() {}\n");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file left"
        );
    }

    #[tokio::test]
    async fn zero_and_multiple_matches() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        fs::write(&p, "x = 1\nx = 1\nx = 1\n").unwrap();
        let c = ToolContext::new(dir.path());

        let out = Edit
            .run(json!({"path": "f.txt", "old": "y = 1", "new": "y = 2"}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("not found"),
            "{}",
            out.content
        );

        let out = Edit
            .run(json!({"path": "f.txt", "old": "x = 1", "new": "x = 2"}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("3 times"),
            "{}",
            out.content
        );
        assert_eq!(fs::read_to_string(&p).unwrap(), "x = 1\nx = 1\nx = 1\n");

        let out = Edit
            .run(
                json!({"path": "f.txt", "old": "x = 1", "new": "x = 2", "replace_all": true}),
                &c,
            )
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "replaced 3 occurrences in f.txt");
        assert_eq!(fs::read_to_string(&p).unwrap(), "x = 2\nx = 2\nx = 2\n");
    }

    #[tokio::test]
    async fn bad_input_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(dir.path());
        fs::write(dir.path().join("f"), "abc").unwrap();
        let out = Edit
            .run(json!({"path": "f", "old": "", "new": "x"}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("`old`"),
            "{}",
            out.content
        );
        let out = Edit
            .run(
                json!({"path": "f", "old": "a", "new": "b", "replace_all": "yes"}),
                &c,
            )
            .await;
        assert!(
            out.is_error && out.content.contains("`replace_all`"),
            "{}",
            out.content
        );
        let out = Edit.run(json!({"path": "f", "old": "a"}), &c).await;
        assert!(
            out.is_error && out.content.contains("new"),
            "{}",
            out.content
        );
        let out = Edit
            .run(json!({"path": "missing", "old": "a", "new": "b"}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("not found"),
            "{}",
            out.content
        );
        fs::write(dir.path().join("bin"), b"\xff\xfe a").unwrap();
        let out = Edit
            .run(json!({"path": "bin", "old": "a", "new": "b"}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("UTF-8"),
            "{}",
            out.content
        );
    }
}
