//! The session log: an append-only JSONL file of history items, `sessions/<id>.jsonl` in the
//! pod's state folder (`Manifest::state_dir`: by default `$XDG_STATE_HOME/pod/<workspace key>`,
//! outside the workspace, so the model's file tools cannot forge what a resumed session trusts).
//!
//! Owns: writing items as the turn goes (one line each, written at once), flushing and fsyncing
//! at each turn end what was written since the last (a new, empty log is not synced: nothing in
//! it is worth the wait), and reading a session back for resume. A torn last line (a crash mid-write)
//! is dropped with a warning; a tool call left without a result is closed with a synthetic
//! "interrupted" error result, so a resumed history never holds an unanswered call (calls are
//! matched to results one by one, see [`OpenCalls`]).
//!
//! `audit.rs` is the decision log (`[audit] path`), which many sessions append to.
//!
//! Must not touch: anything but its own files. This is the only writer in the state folder.

pub mod audit;

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::protocol::{Item, OpenCalls};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session id {0:?} is not valid (letters, digits, '-' and '_' only)")]
    BadId(String),
    #[error("no session {id} in {} (`pod sessions` lists them)", dir.display())]
    NotFound { id: String, dir: PathBuf },
    #[error(
        "session {id} is in {}, inside the workspace, where the model's tools can write it, so it \
         is not trusted; session logs now live in {}: move the file there to resume it",
        found.display(),
        dir.display()
    )]
    InWorkspace {
        id: String,
        found: PathBuf,
        dir: PathBuf,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The text of the synthetic result that closes a call a crash left open.
pub const INTERRUPTED: &str = "interrupted: the pod stopped before this tool call finished";

/// An open session log.
#[derive(Debug)]
pub struct SessionLog {
    id: String,
    path: PathBuf,
    file: File,
    /// Something was written since the last sync. A new log starts clean: an empty file holds
    /// nothing worth an `fdatasync`, so `initialize` and an exit without a turn skip it.
    unsynced: bool,
    /// The log's length in bytes (what was read back, and every line appended since).
    bytes: u64,
}

/// What a resumed session held.
#[derive(Debug)]
pub struct Resumed {
    pub log: SessionLog,
    pub items: Vec<Item>,
    /// Non-fatal problems found while reading (a dropped torn line).
    pub warnings: Vec<String>,
}

/// One session of a sessions folder, for `pod sessions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    pub bytes: u64,
    pub modified: Option<std::time::SystemTime>,
}

impl SessionSummary {
    /// How many `analysisMismatch` items the log holds: execs of a call's own shells that the
    /// shell analysis did not predict (the exec gate records them). 0 when it cannot be read.
    pub fn mismatches(&self) -> usize {
        let Ok(file) = std::fs::File::open(&self.path) else {
            return 0;
        };
        std::io::BufRead::lines(std::io::BufReader::new(file))
            .map_while(Result::ok)
            .filter(|line| line.contains("\"analysisMismatch\""))
            .filter(|line| {
                serde_json::from_str::<Item>(line)
                    .is_ok_and(|item| matches!(item, Item::AnalysisMismatch { .. }))
            })
            .count()
    }
}

/// The sessions in `dir`, oldest first; an absent folder holds none.
pub fn list(dir: &Path) -> Result<Vec<SessionSummary>, SessionError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(SessionError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut out: Vec<SessionSummary> = entries
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_string();
            check_id(&id).ok()?;
            let meta = entry.metadata().ok()?;
            Some(SessionSummary {
                id,
                bytes: meta.len(),
                modified: meta.modified().ok(),
                path,
            })
        })
        .collect();
    out.sort_by(|a, b| a.modified.cmp(&b.modified).then(a.id.cmp(&b.id)));
    Ok(out)
}

/// Creates `dir` (and its parents) readable by its owner only: it holds transcripts.
fn create_private_dir(dir: &Path) -> Result<(), SessionError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| SessionError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

fn check_id(id: &str) -> Result<(), SessionError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(SessionError::BadId(id.to_string()))
    }
}

impl SessionLog {
    /// Starts a new session with a fresh id in the sessions folder `dir`.
    pub fn create(dir: &Path) -> Result<SessionLog, SessionError> {
        let id = uuid::Uuid::new_v4().to_string();
        create_private_dir(dir)?;
        let path = dir.join(format!("{id}.jsonl"));
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(|source| SessionError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(SessionLog {
            id,
            path,
            file,
            unsynced: false,
            bytes: 0,
        })
    }

    /// Opens session `id` of the sessions folder `dir` for appending and reads its items back.
    /// A log left in the workspace by an older pod (`<workspace>/.pod/sessions/`) is refused
    /// with a message saying where it is: the model's tools could have written it.
    pub fn resume(dir: &Path, id: &str, workspace: &Path) -> Result<Resumed, SessionError> {
        check_id(id)?;
        let path = dir.join(format!("{id}.jsonl"));
        if !path.exists() {
            let legacy = workspace.join(".pod/sessions").join(format!("{id}.jsonl"));
            if legacy.exists() {
                return Err(SessionError::InWorkspace {
                    id: id.to_string(),
                    found: legacy,
                    dir: dir.to_path_buf(),
                });
            }
            return Err(SessionError::NotFound {
                id: id.to_string(),
                dir: dir.to_path_buf(),
            });
        }
        let io = |source| SessionError::Io {
            path: path.clone(),
            source,
        };
        let (mut items, valid_len, needs_newline, mut warnings, unreadable) = read_items(&path)?;
        // What cannot be read is kept beside the log, never lost; the session goes on from the
        // last good item.
        if let Some(line) = unreadable {
            let kept = set_aside(&path, valid_len).map_err(io)?;
            warnings.push(format!(
                "{}:{line}: not a session item; the session resumes from the item before it, \
                 and the log from there on is kept in {}",
                path.display(),
                kept.display()
            ));
        }
        let mut file = OpenOptions::new().append(true).open(&path).map_err(io)?;
        // Cut a torn tail so the next append starts on a fresh line.
        file.set_len(valid_len).map_err(io)?;
        if needs_newline {
            file.write_all(b"\n").map_err(io)?;
        }
        let mut log = SessionLog {
            id: id.to_string(),
            path: path.clone(),
            file,
            // The tail may have been cut or completed above: synced below in any case.
            unsynced: true,
            bytes: valid_len + u64::from(needs_newline),
        };
        let orphans = OpenCalls::of_items(&items).closing(INTERRUPTED);
        for closing in orphans.into_iter().map(Item::ToolResult) {
            log.append(&closing)?;
            items.push(closing);
        }
        log.sync()?;
        Ok(Resumed {
            log,
            items,
            warnings,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The log's length in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one item as one line, at once (no user-space buffering).
    pub fn append(&mut self, item: &Item) -> Result<(), SessionError> {
        let mut line = serde_json::to_vec(item).map_err(|e| SessionError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        // Set before writing: a failed write may still have written part of the line.
        self.unsynced = true;
        self.bytes = self.bytes.saturating_add(line.len() as u64);
        self.file
            .write_all(&line)
            .map_err(|source| SessionError::Io {
                path: self.path.clone(),
                source,
            })
    }

    /// Flushes and fsyncs what was written since the last sync (at each turn end, and before
    /// exit); nothing to do when nothing was.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        if !self.unsynced {
            return Ok(());
        }
        self.file
            .flush()
            .and_then(|_| self.file.sync_data())
            .map_err(|source| SessionError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.unsynced = false;
        Ok(())
    }

    /// Whether something was written since the last sync.
    #[cfg(test)]
    fn unsynced(&self) -> bool {
        self.unsynced
    }
}

/// Copies the log from byte `from` on to `<id>.jsonl.unread-<n>` beside it (the first free
/// `n`); returns that file's path. The log itself is cut there by the caller.
fn set_aside(log: &Path, from: u64) -> std::io::Result<PathBuf> {
    use std::io::{Seek, SeekFrom};
    let mut source = File::open(log)?;
    source.seek(SeekFrom::Start(from))?;
    for n in 1.. {
        let kept = log.with_extension(format!("jsonl.unread-{n}"));
        match OpenOptions::new().write(true).create_new(true).open(&kept) {
            Ok(mut out) => {
                std::io::copy(&mut source, &mut out)?;
                out.sync_all()?;
                return Ok(kept);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "no free name for the unreadable part",
    ))
}

/// What [`read_items`] found: the items, the byte length of the valid prefix, whether that
/// prefix lacks its final newline, warnings, and the line where an unreadable complete line
/// stopped the reading.
type Read = (Vec<Item>, u64, bool, Vec<String>, Option<usize>);

/// The items of the session `id` in the sessions folder `dir`, as written (for `pod why` and
/// `pod sessions --denied`: nothing is repaired, nothing written).
pub fn items(dir: &Path, id: &str) -> Result<Vec<Item>, SessionError> {
    check_id(id)?;
    let path = dir.join(format!("{id}.jsonl"));
    if !path.is_file() {
        return Err(SessionError::NotFound {
            id: id.to_string(),
            dir: dir.to_path_buf(),
        });
    }
    Ok(read_items(&path)?.0)
}

/// Reads every item up to the first line that is not one.
fn read_items(path: &Path) -> Result<Read, SessionError> {
    let file = File::open(path).map_err(|source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut reader = BufReader::new(file);
    let mut items = Vec::new();
    let mut warnings = Vec::new();
    let mut valid_len: u64 = 0;
    let mut line_no = 0;
    let mut buf = Vec::new();
    let mut needs_newline = false;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|source| SessionError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let complete = buf.last() == Some(&b'\n');
        let text = String::from_utf8_lossy(&buf);
        if text.trim().is_empty() {
            valid_len += n as u64;
            continue;
        }
        match (serde_json::from_str::<Item>(text.trim_end()), complete) {
            (Ok(item), _) => {
                items.push(item);
                valid_len += n as u64;
                needs_newline = !complete;
            }
            // The last line without its newline: a write the crash cut short.
            (Err(_), false) => {
                warnings.push(format!(
                    "{}:{line_no}: dropped a torn last line ({n} bytes) left by an interrupted write",
                    path.display()
                ));
                break;
            }
            (Err(e), true) => {
                tracing::warn!("{}:{line_no}: not a session item: {e}", path.display());
                return Ok((items, valid_len, needs_newline, warnings, Some(line_no)));
            }
        }
    }
    Ok((items, valid_len, needs_newline, warnings, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::CallResult;

    #[test]
    fn a_log_that_does_not_read_whole_resumes_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(dir.path()).unwrap();
        log.append(&call("turn_1", "call_1")).unwrap();
        log.sync().unwrap();
        let path = log.path().to_path_buf();
        let id = log.id().to_string();
        drop(log);
        // A line nested past serde_json's limit, then one more good line.
        let deep = format!("{}{}\n", "[".repeat(200), "]".repeat(200));
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&deep);
        text.push_str(&serde_json::to_string(&call("turn_2", "call_2")).unwrap());
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        let resumed = SessionLog::resume(dir.path(), &id, dir.path()).unwrap();
        // The first call (closed as interrupted) survives; the rest is set aside, not lost.
        assert_eq!(resumed.items.len(), 2);
        assert!(resumed
            .warnings
            .iter()
            .any(|w| w.contains(":2: not a session item")));
        let kept = std::fs::read_to_string(path.with_extension("jsonl.unread-1")).unwrap();
        assert!(kept.starts_with(&deep) && kept.contains("call_2"), "{kept}");
        // The log goes on: the next resume reads it whole.
        drop(resumed);
        let again = SessionLog::resume(dir.path(), &id, dir.path()).unwrap();
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    }

    #[test]
    fn only_what_was_written_is_synced() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(dir.path()).unwrap();
        assert!(!log.unsynced(), "a new, empty log needs no sync");
        log.sync().unwrap();
        assert_eq!(std::fs::metadata(log.path()).unwrap().len(), 0);
        log.append(&call("turn_1", "call_1")).unwrap();
        assert!(log.unsynced());
        log.sync().unwrap();
        assert!(!log.unsynced());
        let resumed = SessionLog::resume(dir.path(), log.id(), dir.path()).unwrap();
        assert!(!resumed.log.unsynced(), "resume syncs what it repaired");
        assert_eq!(resumed.items.len(), 2, "the open call was closed");
    }

    fn call(turn: &str, id: &str) -> Item {
        Item::ToolCall {
            turn_id: turn.into(),
            call_id: id.into(),
            provider_call_id: None,
            tool: "bash".into(),
            input: serde_json::json!({}),
        }
    }

    fn result(turn: &str, id: &str) -> Item {
        Item::ToolResult(CallResult {
            turn_id: turn.into(),
            call_id: id.into(),
            is_error: false,
            content: String::new(),
            denied_by: None,
        })
    }

    #[test]
    fn calls_are_matched_to_results_one_by_one_even_with_a_repeated_id() {
        // A log from before ids were unique: `x` answered in turn 1, reused in turn 2, open.
        let items = [
            call("t1", "x"),
            result("t1", "x"),
            call("t2", "x"),
            call("t2", "y"),
            result("t2", "y"),
            call("t2", "y"),
        ];
        let open = OpenCalls::of_items(&items);
        assert_eq!(open.iter().collect::<Vec<_>>(), [("t2", "x"), ("t2", "y")]);
        let closing = open.closing(INTERRUPTED);
        assert_eq!(closing.len(), 2);
        let mut all = items.to_vec();
        all.extend(closing.into_iter().map(Item::ToolResult));
        assert_eq!(OpenCalls::of_items(&all).iter().count(), 0);
    }
}
