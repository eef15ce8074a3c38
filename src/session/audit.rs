//! The decision log (`[audit] path`, docs/audit.md): one JSON line per permission decision of
//! every session that writes to it, hash-chained so an edited, inserted or removed line shows.
//!
//! Owns: the line format, appending under an exclusive lock (many pods write one log), the
//! chain (each line's `hash` is SHA-256 over the previous line's hash and this line's body),
//! rotation at `max_bytes` to `PATH.1` (one older file kept, so the log holds at most twice
//! `max_bytes`), and verifying a log. Must not touch: deciding, or the session logs.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::protocol::{Action, DecidedBy, SubjectDecision};

/// The `prev` of a log's first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The most subjects one line lists (the rest are counted in `subjectsOmitted`).
pub const MAX_SUBJECTS: usize = 64;
/// The most characters of a subject a line keeps.
pub const MAX_SUBJECT_CHARS: usize = 512;
/// The most bytes read back to find the last line's hash (a line is bounded well below it).
const TAIL: u64 = 256 * 1024;

/// Why the decision log cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("{}: decision log: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: decision log: {message}", path.display())]
    Format { message: String, path: PathBuf },
}

/// One subject of a decision, as the log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditSubject {
    pub subject: String,
    pub action: Action,
    /// What decided it: `file:line` of the rule, `default`, or `grant`.
    pub by: String,
}

/// One decision, as a line of the log (without its `hash`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// Position in the chain (1 for the first line ever, across rotations).
    pub seq: u64,
    /// RFC 3339, UTC.
    pub time: String,
    pub session: String,
    pub turn: String,
    pub call: String,
    pub tool: String,
    pub decision: Action,
    /// Who settled it: `rule`, `default`, `client`, `sessionGrant`, `mode`, `timeout`,
    /// `cancel`, `failClosed`, `disconnect`, `shutdown`, `hook`, `skill`, `scope`.
    pub by: String,
    /// The client that answered an ask (`name version` from its `initialize`), when a person did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    pub subjects: Vec<AuditSubject>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub subjects_omitted: usize,
    /// The previous line's `hash` ([`GENESIS`] for the first).
    pub prev: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What decided one subject, for the log: the rule's `file:line`, `default` or `grant`.
pub fn subject_by(s: &SubjectDecision, by: DecidedBy) -> String {
    match &s.rule {
        Some(rule) => match (&rule.file, rule.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            (Some(file), None) => file.clone(),
            _ => format!("rule {}", rule.index),
        },
        None if by == DecidedBy::SessionGrant && s.action == Action::Ask => "grant".into(),
        None => "default".into(),
    }
}

/// The subjects of a decision, bounded.
pub fn subjects(list: &[SubjectDecision], by: DecidedBy) -> (Vec<AuditSubject>, usize) {
    let kept = list
        .iter()
        .take(MAX_SUBJECTS)
        .map(|s| AuditSubject {
            subject: s.subject.chars().take(MAX_SUBJECT_CHARS).collect(),
            action: s.action,
            by: subject_by(s, by),
        })
        .collect();
    (kept, list.len().saturating_sub(MAX_SUBJECTS))
}

/// The hash of a line whose body (the entry's JSON) is `body`, chained to `prev`.
fn chain_hash(prev: &str, body: &str) -> String {
    let mut h = Sha256::new();
    h.update(prev.as_bytes());
    h.update(b"\n");
    h.update(body.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A line: `{"hash":"…",` then the rest of the entry's JSON.
fn line_of(hash: &str, body: &str) -> String {
    format!("{{\"hash\":\"{hash}\",{}\n", body.get(1..).unwrap_or(""))
}

/// A line split into its hash and body (the entry's JSON as it was hashed).
fn split_line(line: &str) -> Option<(&str, String)> {
    let rest = line.strip_prefix("{\"hash\":\"")?;
    let hash = rest.get(..64)?;
    let body = rest.get(64..)?.strip_prefix("\",")?;
    Some((hash, format!("{{{body}")))
}

/// The decision log at a path, appended to by every pod whose configuration names it.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    max_bytes: u64,
}

impl AuditLog {
    pub fn new(path: PathBuf, max_bytes: u64) -> AuditLog {
        AuditLog { path, max_bytes }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the log for appending once (creating it), so a log pod cannot write stops the pod
    /// at start rather than losing decisions.
    pub fn check(&self) -> Result<(), AuditError> {
        let io = |source| AuditError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        open_append(&self.path).map(drop).map_err(io)
    }

    /// The file the log rotates to.
    pub fn rotated(path: &Path) -> PathBuf {
        let mut name = path.as_os_str().to_owned();
        name.push(".1");
        PathBuf::from(name)
    }

    /// Appends `entry` (its `seq` and `prev` are set here) under an exclusive lock on the log,
    /// rotating it first when the line would take it past `max_bytes`.
    pub fn append(&self, mut entry: AuditEntry) -> Result<(), AuditError> {
        let io = |source| AuditError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = locked(&self.path).map_err(io)?;
        let (mut seq, mut prev) = last(&mut file)
            .map_err(io)?
            .unwrap_or((0, GENESIS.to_string()));
        if seq == 0 {
            // A fresh file after a rotation continues the rotated file's chain.
            if let Ok(mut old) = File::open(Self::rotated(&self.path)) {
                if let Some((s, p)) = last(&mut old).map_err(io)? {
                    (seq, prev) = (s, p);
                }
            }
        }
        entry.seq = seq + 1;
        entry.prev = prev;
        let body = serde_json::to_string(&entry).map_err(|e| AuditError::Format {
            message: e.to_string(),
            path: self.path.clone(),
        })?;
        let line = line_of(&chain_hash(&entry.prev, &body), &body);
        let size = file.metadata().map_err(io)?.len();
        if size > 0 && size + line.len() as u64 > self.max_bytes {
            // Rotate while holding the lock: the next writer opens the new file and finds it
            // empty, so it continues from PATH.1's last line, as this one does.
            std::fs::rename(&self.path, Self::rotated(&self.path)).map_err(io)?;
            let mut fresh = locked(&self.path).map_err(io)?;
            fresh.write_all(line.as_bytes()).map_err(io)?;
            return fresh.sync_data().map_err(io);
        }
        file.write_all(line.as_bytes()).map_err(io)?;
        file.sync_data().map_err(io)
    }
}

/// The log opened for appending and locked exclusively, and still the file at `path` once the
/// lock is held (a writer that rotated it meanwhile renamed the one this opened).
fn locked(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::MetadataExt;
    loop {
        let file = open_append(path)?;
        file.lock()?;
        let held = file.metadata()?;
        match std::fs::metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => return Ok(file),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .mode(0o600)
        .open(path)
}

/// The `seq` and `hash` of the file's last complete line, if it has one.
fn last(file: &mut File) -> std::io::Result<Option<(u64, String)>> {
    let len = file.metadata()?.len();
    let start = len.saturating_sub(TAIL);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::new();
    file.take(TAIL).read_to_end(&mut tail)?;
    let text = String::from_utf8_lossy(&tail);
    let Some(line) = text.trim_end_matches('\n').rsplit('\n').next() else {
        return Ok(None);
    };
    let Some((hash, body)) = split_line(line) else {
        return Ok(None);
    };
    let seq = serde_json::from_str::<AuditEntry>(&body)
        .map(|e| e.seq)
        .unwrap_or(0);
    Ok(Some((seq, hash.to_string())))
}

/// What `pod audit verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Lines checked.
    pub lines: usize,
    /// The first break, `file:line: what`, when the chain does not hold.
    pub broken: Option<String>,
}

/// Checks the chain of the log at `path` (after `PATH.1` when it exists): every line's hash is
/// its body's, chained to the line before, and its `seq` follows it.
pub fn verify(path: &Path) -> Result<Verified, AuditError> {
    let mut files = Vec::new();
    let rotated = AuditLog::rotated(path);
    if rotated.exists() {
        files.push(rotated);
    }
    files.push(path.to_path_buf());
    let mut prev: Option<(u64, String)> = None;
    let mut lines = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).map_err(|source| AuditError::Io {
            path: file.clone(),
            source,
        })?;
        for (i, line) in text.lines().enumerate() {
            let at = format!("{}:{}", file.display(), i + 1);
            lines += 1;
            let Some((hash, body)) = split_line(line) else {
                return Ok(broken(lines, format!("{at}: not a line of the log")));
            };
            let Ok(entry) = serde_json::from_str::<AuditEntry>(&body) else {
                return Ok(broken(lines, format!("{at}: not a decision")));
            };
            if chain_hash(&entry.prev, &body) != hash {
                return Ok(broken(
                    lines,
                    format!("{at}: its hash does not match its content (the line was edited)"),
                ));
            }
            match &prev {
                Some((seq, hash)) if entry.prev != *hash || entry.seq != seq + 1 => {
                    return Ok(broken(
                        lines,
                        format!(
                            "{at}: it does not follow the line before (seq {} after {seq}): a \
                             line was removed or inserted",
                            entry.seq
                        ),
                    ));
                }
                // The first line of a log that was never rotated starts the chain; the rotated
                // file's first line may continue a file rotated away before it.
                None if entry.prev != GENESIS && files.len() == 1 => {
                    return Ok(broken(
                        lines,
                        format!(
                            "{at}: the chain does not start here: lines before it were removed \
                             (or {} was)",
                            AuditLog::rotated(path).display()
                        ),
                    ));
                }
                _ => {}
            }
            prev = Some((entry.seq, hash.to_string()));
        }
    }
    Ok(Verified {
        lines,
        broken: None,
    })
}

fn broken(lines: usize, what: String) -> Verified {
    Verified {
        lines,
        broken: Some(what),
    }
}

/// Every entry of the log (the rotated file's first), for `pod why`; lines that do not read
/// are skipped (`pod audit verify` names them).
pub fn entries(path: &Path) -> Vec<AuditEntry> {
    let mut out = Vec::new();
    for file in [AuditLog::rotated(path), path.to_path_buf()] {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        out.extend(
            text.lines()
                .filter_map(split_line)
                .filter_map(|(_, body)| serde_json::from_str(&body).ok()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(call: &str) -> AuditEntry {
        AuditEntry {
            seq: 0,
            time: "2026-12-02T00:00:00Z".into(),
            session: "s".into(),
            turn: "t".into(),
            call: call.into(),
            tool: "bash".into(),
            decision: Action::Deny,
            by: "rule".into(),
            client: None,
            request: None,
            subjects: Vec::new(),
            subjects_omitted: 0,
            prev: String::new(),
        }
    }

    #[test]
    fn the_chain_holds_across_a_rotation_and_shows_an_edit_and_a_removal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::new(path.clone(), 1200);
        for i in 0..8 {
            log.append(entry(&format!("call_{i}"))).unwrap();
        }
        assert!(AuditLog::rotated(&path).exists(), "it never rotated");
        let v = verify(&path).unwrap();
        assert_eq!(v.broken, None);
        let all = entries(&path);
        assert_eq!(all.last().map(|e| e.seq), Some(8));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen("\"deny\"", "\"allow\"", 1)).unwrap();
        assert!(verify(&path).unwrap().broken.unwrap().contains("edited"));
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() >= 2 {
            let removed: String = lines[1..].iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(&path, removed).unwrap();
            assert!(verify(&path).unwrap().broken.unwrap().contains("removed"));
        }
    }
}
