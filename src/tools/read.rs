//! The `read` tool: returns a text file's lines, numbered like `cat -n`.
//!
//! Owns: line ranges (`offset` = first line, 1-based; `limit` = number of lines), the size
//! guards (a whole-file read of a file over 10 MiB is refused; output over 100 KB is cut with a
//! note telling where to continue), and the handling of odd files (missing, folders, binary
//! files with NUL bytes are errors; other non-UTF-8 text is shown lossily with a note).
//!
//! Output format: each line is `{number:>6}\t{text}` (as `cat -n`), so the numbers are not part
//! of the text; `edit` wants the text after the tab.
//!
//! The file is opened at the target the runtime pinned and checked, following no symlink
//! ([`confined::open_read`]), and a file with several hard links is refused when another of its
//! names is read-denied ([`FileRules::check_links`]). When the editor serves files
//! ([`super::EditorFiles`]), the text of that same target comes from the editor, after the same
//! hard-link check on disk, and is numbered and capped the same way.
//!
//! Memory: a line is never held whole. Lines before `offset` are only counted, and of a line in
//! range at most the output cap is kept, so a read holds about twice the cap whatever the file's
//! longest line (a 200 MB file of one line read with `limit: 1` reads only its first 100 KB).

use std::io::{BufRead, BufReader};
use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::common::{display, parse_input, resolve, schema_of};
use super::{confined, Location, Presentation, Tool, ToolContext, ToolKind, ToolOutput};
use crate::permission::FileRules;

/// Files larger than this are read only with `offset` or `limit`.
pub const MAX_WHOLE_FILE: u64 = 10 * 1024 * 1024;
/// Output larger than this is cut (at a line end) with a note.
pub const OUTPUT_CAP: usize = 100_000;
/// How much of the start of a file is checked for NUL bytes.
const BINARY_PROBE: usize = 8 * 1024;

/// Input of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The file to read: relative to the workspace, or absolute.
    pub path: String,
    /// First line to return, 1-based (default 1).
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// Number of lines to return (default: to the end of the file).
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

pub struct Read;

#[async_trait]
impl Tool for Read {
    fn name(&self) -> &'static str {
        "read"
    }

    fn description(&self) -> &'static str {
        "Read a text file. Lines come numbered like `cat -n` (number, tab, text); the numbers \
         are not part of the file. `offset` is the first line (1-based), `limit` the number of \
         lines. Files over 10 MiB need a range; output over 100 KB is cut with a note saying \
         which offset to continue from."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<ReadInput>()
    }

    fn example(&self) -> &str {
        "'{\"path\":\"src/main.rs\",\"offset\":10,\"limit\":20}'"
    }

    fn read_only(&self) -> bool {
        true
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        let Ok(i) = ReadInput::deserialize(input) else {
            return Presentation {
                kind: ToolKind::Read,
                ..Presentation::other()
            };
        };
        Presentation {
            kind: ToolKind::Read,
            title: Some(format!("read {}", i.path)),
            locations: vec![Location {
                line: i.offset.and_then(|l| u32::try_from(l).ok()),
                path: i.path,
            }],
            change: None,
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let input: ReadInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        if input.offset == Some(0) {
            return ToolOutput::error(
                "invalid input: field `offset` is 1-based: must be at least 1",
            );
        }
        if input.limit == Some(0) {
            return ToolOutput::error("invalid input: field `limit` must be at least 1");
        }
        let path = match resolve(&ctx.workspace, "path", &input.path) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let shown = display(&ctx.workspace, &path);
        let target = ctx.target(&path);
        let files = ctx.files.clone();
        let cancel = ctx.cancel.clone();
        if let Some(editor) = ctx.editor_reads() {
            let read = read_from_editor(editor.as_ref(), &target.path, &shown, &files, &cancel);
            let text = match read.await {
                Ok(text) => text,
                Err(msg) => return ToolOutput::error(msg),
            };
            let len = text.len() as u64;
            let reader = std::io::Cursor::new(text.into_bytes());
            return match lines_of(reader, len, &shown, input.offset, input.limit, &cancel) {
                Ok(text) => ToolOutput::ok(text),
                Err(msg) => ToolOutput::error(msg),
            };
        }
        let job = tokio::task::spawn_blocking(move || {
            read_lines(
                &target.path,
                &shown,
                input.offset,
                input.limit,
                &cancel,
                &files,
            )
        });
        match job.await {
            Ok(Ok(text)) => ToolOutput::ok(text),
            Ok(Err(msg)) => ToolOutput::error(msg),
            Err(e) => ToolOutput::error(format!("read failed: {e}")),
        }
    }
}

fn read_lines(
    path: &Path,
    shown: &str,
    offset: Option<u64>,
    limit: Option<u64>,
    cancel: &tokio_util::sync::CancellationToken,
    files: &FileRules,
) -> Result<String, String> {
    let cannot_read = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => format!("file not found: {shown}"),
        _ => format!("cannot read {shown}: {}", confined::describe(&e)),
    };
    let file = confined::open_read(path).map_err(cannot_read)?;
    let meta = file.metadata().map_err(cannot_read)?;
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory, not a file (use glob to list its files)"
        ));
    }
    files
        .check_links(path, &meta)
        .map_err(|denial| format!("permission denied: {denial}"))?;
    lines_of(
        BufReader::with_capacity(64 * 1024, file),
        meta.len(),
        shown,
        offset,
        limit,
        cancel,
    )
}

/// The editor's text of the pinned `path`, after the checks a read from disk makes: a file on
/// disk with another, read-denied name (a hard link) is refused, and so is a path that no
/// longer opens as the plain file that was checked; a file the disk does not have (an unsaved
/// buffer) is the editor's to answer.
pub(crate) async fn read_from_editor(
    editor: &dyn super::EditorFiles,
    path: &Path,
    shown: &str,
    files: &std::sync::Arc<FileRules>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<String, String> {
    let (checked, files, shown_owned) = (path.to_path_buf(), files.clone(), shown.to_string());
    // Opening, `fstat` and (for a file with several links) the link walk block: off the thread.
    tokio::task::spawn_blocking(move || check_on_disk(&checked, &shown_owned, &files))
        .await
        .map_err(|e| format!("cannot read {shown}: {e}"))??;
    tokio::select! {
        text = editor.read(path) => text.map_err(|e| format!("cannot read {shown}: {e}")),
        () = cancel.cancelled() => Err("cancelled".to_string()),
    }
}

/// What a read from disk would refuse about `path` before the editor is asked for it.
fn check_on_disk(path: &Path, shown: &str, files: &FileRules) -> Result<(), String> {
    match confined::open_read(path) {
        Ok(file) => {
            let meta = file
                .metadata()
                .map_err(|e| format!("cannot read {shown}: {}", confined::describe(&e)))?;
            if meta.is_dir() {
                return Err(format!(
                    "{shown} is a directory, not a file (use glob to list its files)"
                ));
            }
            files
                .check_links(path, &meta)
                .map_err(|denial| format!("permission denied: {denial}"))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {shown}: {}", confined::describe(&e))),
    }
    Ok(())
}

/// Numbered lines of a text of `len` bytes read from `reader` (a file, or the editor's text).
fn lines_of(
    reader: impl BufRead,
    len: u64,
    shown: &str,
    offset: Option<u64>,
    limit: Option<u64>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<String, String> {
    let mut reader = reader;
    if len > MAX_WHOLE_FILE && offset.is_none() && limit.is_none() {
        return Err(format!(
            "{shown} is {} bytes, over the {} MiB limit for a whole-file read; give `offset` \
             and `limit` to read part of it",
            len,
            MAX_WHOLE_FILE / 1024 / 1024
        ));
    }

    // Binary check on the first bytes.
    let head = reader
        .fill_buf()
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let probe = &head[..head.len().min(BINARY_PROBE)];
    if probe.contains(&0) {
        return Err(format!(
            "{shown} looks like a binary file (it contains NUL bytes, {len} bytes in all); not shown"
        ));
    }
    if len == 0 {
        return Ok(format!("({shown} is empty)"));
    }

    let first = offset.unwrap_or(1);
    let last = limit.map(|l| first.saturating_add(l - 1));
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::Interrupted {
            "cancelled".to_string()
        } else {
            format!("cannot read {shown}: {e}")
        }
    };
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number: u64 = 0;
    let mut lossy = false;
    let mut cut_at: Option<u64> = None;
    loop {
        let wanted = number + 1 >= first;
        // Enough to know that the line does not fit in what is left of the output.
        let keep = wanted.then_some(OUTPUT_CAP + 32);
        let Some(Line { cut }) = next_line(&mut reader, &mut line, keep, cancel).map_err(io)?
        else {
            break;
        };
        number += 1;
        if number.is_multiple_of(4096) && cancel.is_cancelled() {
            return Err("cancelled".to_string());
        }
        if !wanted {
            continue;
        }
        if let Some(last) = last {
            if number > last {
                break;
            }
        }
        if !cut && line.ends_with(b"\n") {
            line.pop();
            if line.ends_with(b"\r") {
                line.pop();
            }
        }
        let text = match std::str::from_utf8(&line) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            // A character split by the cut is not an encoding error.
            Err(e) if cut && e.error_len().is_none() => std::borrow::Cow::Borrowed(
                std::str::from_utf8(&line[..e.valid_up_to()]).unwrap_or(""),
            ),
            Err(_) => {
                lossy = true;
                String::from_utf8_lossy(&line)
            }
        };
        let entry = format!("{number:>6}\t{text}\n");
        if out.len() + entry.len() > OUTPUT_CAP {
            cut_at = Some(number);
            if out.is_empty() {
                // A single huge line: show its start.
                let mut end = OUTPUT_CAP.min(entry.len());
                while !entry.is_char_boundary(end) {
                    end -= 1;
                }
                out.push_str(&entry[..end]);
                out.push('\n');
                cut_at = Some(number + 1);
            }
            break;
        }
        out.push_str(&entry);
    }

    if number < first {
        return Ok(format!(
            "{shown} has {number} lines; offset {first} is past the end"
        ));
    }
    if lossy {
        out.push_str("[note: the file is not valid UTF-8; invalid bytes are shown as \u{FFFD}]\n");
    }
    if let Some(next) = cut_at {
        out.push_str(&format!(
            "[output cut at {} KB; continue with offset={next}]\n",
            OUTPUT_CAP / 1000
        ));
    }
    Ok(out)
}

/// What [`next_line`] read.
struct Line {
    /// The line was longer than what was kept; the rest of it was not read.
    cut: bool,
}

/// Reads the next line (with its `\n`) into `line`, keeping at most `keep` bytes of it, or
/// none with `keep: None` (the line is skipped, read to its end). A kept line longer than
/// `keep` is cut and the rest of it left unread: the caller stops there. `None` at the end of
/// the file. Checks `cancel` between reads (an `Interrupted` error).
fn next_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    keep: Option<usize>,
    cancel: &tokio_util::sync::CancellationToken,
) -> std::io::Result<Option<Line>> {
    line.clear();
    let mut any = false;
    loop {
        if cancel.is_cancelled() {
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(Line { cut: false }));
        }
        any = true;
        let (chunk, ends) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..=at], true),
            None => (buf, false),
        };
        let used = chunk.len();
        if let Some(keep) = keep {
            let room = keep - line.len();
            if used > room {
                line.extend_from_slice(&chunk[..room]);
                reader.consume(room);
                return Ok(Some(Line { cut: true }));
            }
            line.extend_from_slice(chunk);
        }
        reader.consume(used);
        if ends {
            return Ok(Some(Line { cut: false }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;

    #[tokio::test]
    async fn whole_file_and_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        fs::write(dir.path().join("f.txt"), body).unwrap();
        let c = ToolContext::new(dir.path());

        let out = Read.run(json!({"path": "f.txt"}), &c).await;
        assert!(!out.is_error);
        assert!(out.content.starts_with("     1\tline 1\n"));
        assert!(out.content.ends_with("    10\tline 10\n"));

        let out = Read
            .run(json!({"path": "f.txt", "offset": 3, "limit": 2}), &c)
            .await;
        assert_eq!(out.content, "     3\tline 3\n     4\tline 4\n");

        let out = Read.run(json!({"path": "f.txt", "offset": 9}), &c).await;
        assert_eq!(out.content, "     9\tline 9\n    10\tline 10\n");

        let out = Read.run(json!({"path": "f.txt", "limit": 1}), &c).await;
        assert_eq!(out.content, "     1\tline 1\n");

        let abs = dir.path().join("f.txt").display().to_string();
        let out = Read.run(json!({"path": abs, "offset": 10}), &c).await;
        assert_eq!(out.content, "    10\tline 10\n");

        let out = Read.run(json!({"path": "f.txt", "offset": 11}), &c).await;
        assert!(!out.is_error);
        assert!(out.content.contains("past the end"), "{}", out.content);
    }

    #[tokio::test]
    async fn odd_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(dir.path());
        let out = Read.run(json!({"path": "nope.txt"}), &c).await;
        assert!(
            out.is_error && out.content.contains("not found"),
            "{}",
            out.content
        );

        fs::create_dir(dir.path().join("sub")).unwrap();
        let out = Read.run(json!({"path": "sub"}), &c).await;
        assert!(
            out.is_error && out.content.contains("directory"),
            "{}",
            out.content
        );

        fs::write(dir.path().join("bin"), b"abc\0def").unwrap();
        let out = Read.run(json!({"path": "bin"}), &c).await;
        assert!(
            out.is_error && out.content.contains("binary"),
            "{}",
            out.content
        );

        fs::write(dir.path().join("latin1"), b"caf\xe9\n").unwrap();
        let out = Read.run(json!({"path": "latin1"}), &c).await;
        assert!(!out.is_error);
        assert!(out.content.contains("caf\u{FFFD}"));
        assert!(out.content.contains("not valid UTF-8"));

        fs::write(dir.path().join("empty"), b"").unwrap();
        let out = Read.run(json!({"path": "empty"}), &c).await;
        assert!(!out.is_error && out.content.contains("empty"));
    }

    #[tokio::test]
    async fn big_output_is_cut_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (1..=20_000).map(|i| format!("line number {i}\n")).collect();
        fs::write(dir.path().join("big.txt"), body).unwrap();
        let out = Read
            .run(json!({"path": "big.txt"}), &ToolContext::new(dir.path()))
            .await;
        assert!(!out.is_error);
        assert!(out.content.len() <= OUTPUT_CAP + 100);
        let note = out.content.lines().last().unwrap();
        assert!(
            note.starts_with("[output cut at 100 KB; continue with offset="),
            "{note}"
        );
        let next: u64 = note
            .trim_start_matches("[output cut at 100 KB; continue with offset=")
            .trim_end_matches(']')
            .parse()
            .unwrap();
        let last_shown = format!("{:>6}\tline number {}\n", next - 1, next - 1);
        assert!(out.content.contains(&last_shown));
    }

    #[tokio::test]
    async fn huge_file_needs_a_range() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("huge.txt");
        let f = fs::File::create(&p).unwrap();
        f.set_len(MAX_WHOLE_FILE + 1).unwrap();
        drop(f);
        // Sparse file of NULs would be binary; write a text start over it.
        {
            use std::io::{Seek, Write};
            let mut f = fs::OpenOptions::new().write(true).open(&p).unwrap();
            f.seek(std::io::SeekFrom::Start(0)).unwrap();
            f.write_all(&b"hello\n".repeat(2000)).unwrap();
        }
        let c = ToolContext::new(dir.path());
        let out = Read.run(json!({"path": "huge.txt"}), &c).await;
        assert!(
            out.is_error && out.content.contains("offset"),
            "{}",
            out.content
        );
        let out = Read.run(json!({"path": "huge.txt", "limit": 2}), &c).await;
        assert_eq!(out.content, "     1\thello\n     2\thello\n");
    }

    #[tokio::test]
    async fn bad_input_names_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(dir.path());
        for (input, field) in [
            (json!({}), "path"),
            (json!({"path": 3}), "`path`"),
            (json!({"path": "a", "offset": 0}), "`offset`"),
            (json!({"path": "a", "limit": 0}), "`limit`"),
            (json!({"path": "a", "limit": "ten"}), "`limit`"),
            (json!({"path": ""}), "`path`"),
        ] {
            let out = Read.run(input.clone(), &c).await;
            assert!(out.is_error, "{input}");
            assert!(out.content.contains(field), "{input}: {}", out.content);
        }
    }

    #[tokio::test]
    async fn a_line_longer_than_the_cap_is_cut_without_being_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        // 1 MB of two-byte characters on one line, then a short line.
        let mut body = "é".repeat(500_000);
        body.push_str("\nsecond\n");
        fs::write(dir.path().join("long.txt"), &body).unwrap();
        let c = ToolContext::new(dir.path());
        let out = Read.run(json!({"path": "long.txt", "limit": 1}), &c).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.len() <= OUTPUT_CAP + 100);
        assert!(out.content.starts_with("     1\téé"));
        // A character cut in half by the cap is not an encoding problem.
        assert!(
            !out.content.contains("not valid UTF-8"),
            "{}",
            &out.content[..200]
        );
        assert!(out.content.contains("continue with offset=2"));
        // The next line is found after it.
        let out = Read.run(json!({"path": "long.txt", "offset": 2}), &c).await;
        assert_eq!(out.content, "     2\tsecond\n");
    }

    #[test]
    fn next_line_keeps_at_most_what_it_is_asked_for() {
        let data = format!("{}\nb\n", "a".repeat(10_000));
        let mut reader = BufReader::with_capacity(64, data.as_bytes());
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut line = Vec::new();
        let got = next_line(&mut reader, &mut line, Some(100), &cancel).unwrap();
        assert!(got.is_some_and(|l| l.cut));
        assert_eq!(line.len(), 100);
        // Skipping reads to the end of a line without keeping it.
        let mut reader = BufReader::with_capacity(64, data.as_bytes());
        let got = next_line(&mut reader, &mut line, None, &cancel).unwrap();
        assert!(got.is_some_and(|l| !l.cut) && line.is_empty());
        let got = next_line(&mut reader, &mut line, Some(100), &cancel).unwrap();
        assert!(got.is_some_and(|l| !l.cut));
        assert_eq!(line, b"b\n");
        assert!(next_line(&mut reader, &mut line, Some(100), &cancel)
            .unwrap()
            .is_none());
        cancel.cancel();
        let mut reader = BufReader::new(data.as_bytes());
        assert!(next_line(&mut reader, &mut line, None, &cancel).is_err());
    }
}
