//! What the rules say about the files a tool meets beyond its subjects: the files a walk finds
//! (`grep`, `glob`) and the other names of a file (hard links).
//!
//! Rules see names. A hard link is another name for the same file, and unlike a symlink nothing
//! in the new name leads back to the old one: `ln .env notes` makes `read notes` return the
//! contents `read "*.env" deny` protects. So a file opened for reading (`read`, `grep`, `edit`)
//! with more than one link is looked up by identity (device, inode) among the files the read
//! rules deny. Those are found by a walk of the workspace and of the folders that absolute deny
//! patterns name, which never follows symlinks and reads each folder as the sandboxed processes
//! see it ([`path::reach`]: a session's `$TMPDIR` tmpfs through its view); the walk is cached,
//! and redone when the file read had its links or content changed (its ctime) after the last
//! walk began, less a margin. A link made later bumps the ctime of the file it links, so a new
//! name is never missed for a file the walk covers. Files with one link, which is nearly all of
//! them, cost one `fstat`.
//!
//! Limits (stated in permissions.md): a denied file outside the walked folders (a pattern such as
//! `*.env` also matches `/elsewhere/.env`, and the whole file system is not walked) is not found;
//! nor is one reached only through a symlinked folder. Past [`WALK_LIMIT`] entries the walk stops
//! and a multi-link read it could not clear is refused (fail closed).
//!
//! Must not touch: subject extraction and decisions about calls; this only answers questions
//! about files, from the rules of a [`Policy`].

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::{path, Policy};
use pod_protocol::RuleRef;

/// At most this many entries are visited by one walk for hard links.
pub const WALK_LIMIT: usize = 1_000_000;

/// A file changed this close to the start of the last walk may have been missed by it.
const CTIME_MARGIN: Duration = Duration::from_secs(1);

/// Why a multi-link file may not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkDenial {
    #[error(
        "{name} is another name (a hard link) for {denied}, which rule {} ({} \"{}\" deny) denies reading",
        rule.index, rule.tool, rule.pattern
    )]
    OtherName {
        name: String,
        denied: String,
        rule: Box<RuleRef>,
    },
    #[error(
        "{name} has {links} hard links, and the walk looking for read-denied files stopped after \
         {limit} entries, so its other names are unknown; it is not read"
    )]
    Unchecked {
        name: String,
        links: u64,
        limit: usize,
    },
}

/// The read-denied files found by the last walk, by identity.
#[derive(Debug, Default)]
struct Walked {
    /// When the last walk began; `None` before the first.
    started: Option<SystemTime>,
    /// (device, inode) -> the denied name and the rule denying it.
    denied: HashMap<(u64, u64), (String, RuleRef)>,
    /// The last walk stopped at [`WALK_LIMIT`].
    capped: bool,
    /// Walks done (for tests and measurements).
    walks: usize,
    /// What each folder held at the last walk, so the next one reads only folders that changed.
    folders: HashMap<PathBuf, Folder>,
    /// Folders read (not taken from `folders`) by all walks so far (for tests and measurements).
    folders_read: usize,
}

/// One folder as a walk found it. A name is added, removed or renamed only by changing its
/// folder, which sets the folder's mtime: a folder whose identity and mtime are unchanged (and
/// whose mtime is older than the walk that read it, less a margin) holds the same names, so its
/// denied files and subfolders are taken as they were. A file's content changes nothing here.
#[derive(Debug, Clone)]
struct Folder {
    id: (u64, u64),
    mtime: SystemTime,
    /// When the walk that read it began.
    read_at: SystemTime,
    entries: usize,
    denied: Vec<((u64, u64), (String, RuleRef))>,
    subfolders: Vec<PathBuf>,
}

/// The rules' view of individual files, shared by the tools of one pod.
#[derive(Debug)]
pub struct FileRules {
    policy: Arc<Policy>,
    walked: Mutex<Walked>,
}

impl FileRules {
    pub fn new(policy: Arc<Policy>) -> FileRules {
        FileRules {
            policy,
            walked: Mutex::new(Walked::default()),
        }
    }

    /// No rules: nothing is withheld or refused (for tools used without a pod).
    pub fn none(workspace: &Path) -> FileRules {
        FileRules::new(Arc::new(Policy::new(None, workspace.to_path_buf())))
    }

    pub fn workspace(&self) -> &Path {
        self.policy.workspace()
    }

    /// The rule that keeps `file` (absolute), met by a walk of `tool`, out of its result.
    pub fn withheld(&self, tool: &str, file: &Path) -> Option<RuleRef> {
        let text = path::display(file, self.policy.workspace());
        self.policy.withholding(tool, &text)
    }

    /// Checks a file opened for reading at `file` (absolute): with more than one link, none of
    /// its other names may be read-denied.
    pub fn check_links(&self, file: &Path, meta: &std::fs::Metadata) -> Result<(), LinkDenial> {
        if meta.nlink() <= 1 || !self.policy.has_deny_rules("read") {
            return Ok(());
        }
        let changed = SystemTime::UNIX_EPOCH
            + Duration::new(
                u64::try_from(meta.ctime()).unwrap_or(0),
                u32::try_from(meta.ctime_nsec()).unwrap_or(0),
            );
        let mut walked = self.walked.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = walked
            .started
            .is_some_and(|started| changed + CTIME_MARGIN < started);
        if !fresh {
            let last = std::mem::take(&mut *walked);
            *walked = self.walk(last.walks + 1, last);
        }
        let name = path::display(file, self.policy.workspace());
        match walked.denied.get(&(meta.dev(), meta.ino())) {
            Some((denied, rule)) if *denied != name => Err(LinkDenial::OtherName {
                name,
                denied: denied.clone(),
                rule: Box::new(rule.clone()),
            }),
            Some(_) => Ok(()),
            None if walked.capped => Err(LinkDenial::Unchecked {
                name,
                links: meta.nlink(),
                limit: WALK_LIMIT,
            }),
            None => Ok(()),
        }
    }

    /// How many walks have been done (for tests and measurements).
    pub fn walks(&self) -> usize {
        self.walked.lock().map(|w| w.walks).unwrap_or(0)
    }

    /// How many folders the walks have read from disk (the others came from the last walk).
    pub fn folders_read(&self) -> usize {
        self.walked.lock().map(|w| w.folders_read).unwrap_or(0)
    }

    /// Walks the workspace and the folders named by absolute deny patterns, recording every
    /// regular file whose first matching read rule denies it; a folder unchanged since the
    /// last walk is taken from it.
    fn walk(&self, walks: usize, mut last: Walked) -> Walked {
        let workspace = self.policy.workspace().to_path_buf();
        let started = SystemTime::now();
        let mut out = Walked {
            started: Some(started),
            walks,
            folders_read: last.folders_read,
            ..Walked::default()
        };
        let mut roots = vec![workspace.clone()];
        for pattern in self.policy.deny_patterns("read") {
            if let Some(root) = literal_root(&pattern) {
                if !roots.iter().any(|r| root.starts_with(r)) {
                    roots.push(root);
                }
            }
        }
        let mut stack: Vec<PathBuf> = Vec::new();
        let mut visited = 0usize;
        let record = |path: &Path, meta: &std::fs::Metadata, out: &mut Walked| {
            let text = path::display(path, &workspace);
            if let Some(rule) = self.policy.denying_rule("read", &text) {
                out.denied
                    .entry((meta.dev(), meta.ino()))
                    .or_insert((text, rule));
            }
        };
        for root in roots {
            match std::fs::symlink_metadata(&*path::reach(&root)) {
                Ok(meta) if meta.is_dir() => stack.push(root),
                Ok(meta) if meta.is_file() => record(&root, &meta, &mut out),
                _ => {}
            }
            while let Some(dir) = stack.pop() {
                // Read as the sandboxed processes see it (a session's `$TMPDIR` tmpfs).
                let seen = path::reach(&dir);
                let Ok(dir_meta) = std::fs::symlink_metadata(&*seen) else {
                    continue;
                };
                let id = (dir_meta.dev(), dir_meta.ino());
                let mtime = dir_meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                let unchanged = last
                    .folders
                    .remove(&dir)
                    .filter(|f| f.id == id && f.mtime == mtime && mtime + CTIME_MARGIN < f.read_at);
                let folder = match unchanged {
                    Some(folder) => folder,
                    None => {
                        out.folders_read += 1;
                        let Ok(entries) = std::fs::read_dir(&*seen) else {
                            continue;
                        };
                        let mut folder = Folder {
                            id,
                            mtime,
                            read_at: started,
                            entries: 0,
                            denied: Vec::new(),
                            subfolders: Vec::new(),
                        };
                        for entry in entries.flatten() {
                            folder.entries += 1;
                            if visited + folder.entries > WALK_LIMIT {
                                out.capped = true;
                                return out;
                            }
                            // Never follows a symlink: `DirEntry::metadata` is an lstat.
                            let Ok(meta) = entry.metadata() else { continue };
                            // Named beneath `dir`, not beneath the path it was reached by.
                            let path = dir.join(entry.file_name());
                            if meta.is_dir() {
                                folder.subfolders.push(path);
                            } else if meta.is_file() {
                                let mut one = Walked::default();
                                record(&path, &meta, &mut one);
                                folder.denied.extend(one.denied);
                            }
                        }
                        folder
                    }
                };
                visited += folder.entries;
                if visited > WALK_LIMIT {
                    out.capped = true;
                    return out;
                }
                for (key, value) in &folder.denied {
                    out.denied.entry(*key).or_insert_with(|| value.clone());
                }
                stack.extend(folder.subfolders.iter().cloned());
                out.folders.insert(dir, folder);
            }
        }
        out
    }
}

/// The folder (or file) an absolute pattern's literal head names: `/home/u/.ssh/*` ->
/// `/home/u/.ssh`, `/etc/shadow` -> `/etc/shadow`. Relative patterns are covered by the
/// workspace walk; a pattern with a wildcard in its first component names no folder.
fn literal_root(pattern: &str) -> Option<PathBuf> {
    if !pattern.starts_with('/') {
        return None;
    }
    let head = match pattern.find(['*', '?']) {
        None => return Some(path::normalize(Path::new(pattern))),
        Some(at) => &pattern[..at],
    };
    let folder = &head[..head.rfind('/')?];
    (!folder.is_empty()).then(|| path::normalize(Path::new(folder)))
}

#[cfg(test)]
mod tests {
    use super::super::{RuleSpec, Rules};
    use super::*;
    use pod_protocol::Action;

    fn rules(ws: &Path, denied: &[&str]) -> FileRules {
        let specs = denied
            .iter()
            .map(|p| RuleSpec::new("read", *p, Action::Deny))
            .collect();
        let rules = Rules::compile(Action::Allow, specs).unwrap();
        FileRules::new(Arc::new(Policy::new(Some(rules), ws.to_path_buf())))
    }

    fn meta(p: &Path) -> std::fs::Metadata {
        std::fs::metadata(p).unwrap()
    }

    #[test]
    fn a_hard_link_to_a_denied_file_is_refused_and_the_walk_is_reused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::write(ws.join(".env"), "SECRET=1").unwrap();
        std::fs::write(ws.join("plain"), "x").unwrap();
        std::fs::write(ws.join("shared"), "x").unwrap();
        std::fs::hard_link(ws.join("shared"), ws.join("shared2")).unwrap();
        let f = rules(&ws, &["*.env"]);
        // One link: no walk at all.
        assert!(f
            .check_links(&ws.join("plain"), &meta(&ws.join("plain")))
            .is_ok());
        assert_eq!(f.walks(), 0);
        std::fs::hard_link(ws.join(".env"), ws.join("notes")).unwrap();
        let err = f
            .check_links(&ws.join("notes"), &meta(&ws.join("notes")))
            .unwrap_err();
        assert!(err.to_string().contains("notes is another name"), "{err}");
        assert!(err.to_string().contains(".env"), "{err}");
        assert_eq!(f.walks(), 1);
        // A benign multi-link file whose links did not change since: the cached walk answers.
        std::thread::sleep(CTIME_MARGIN + Duration::from_millis(100));
        let f = rules(&ws, &["*.env"]);
        assert!(f
            .check_links(&ws.join("shared"), &meta(&ws.join("shared")))
            .is_ok());
        assert_eq!(f.walks(), 1);
        assert!(f
            .check_links(&ws.join("shared2"), &meta(&ws.join("shared2")))
            .is_ok());
        assert_eq!(f.walks(), 1);
        // A link made after the walk bumps the ctime: the next read walks again.
        std::fs::write(ws.join("late.env"), "SECRET=2").unwrap();
        std::fs::hard_link(ws.join("late.env"), ws.join("late")).unwrap();
        assert!(f
            .check_links(&ws.join("late"), &meta(&ws.join("late")))
            .is_err());
        assert_eq!(f.walks(), 2);
    }

    #[test]
    fn a_walk_reads_only_the_folders_that_changed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        for i in 0..50 {
            std::fs::create_dir_all(ws.join(format!("d{i}/sub"))).unwrap();
            std::fs::write(ws.join(format!("d{i}/sub/f")), "x").unwrap();
        }
        std::fs::write(ws.join("d7/sub/.env"), "SECRET").unwrap();
        std::fs::write(ws.join("shared"), "v1").unwrap();
        std::fs::hard_link(ws.join("shared"), ws.join("shared2")).unwrap();
        // Older than the margin: folders this old count as unchanged at the next walk.
        std::thread::sleep(CTIME_MARGIN + Duration::from_millis(100));
        let f = rules(&ws, &["*.env"]);
        assert!(f
            .check_links(&ws.join("shared"), &meta(&ws.join("shared")))
            .is_ok());
        assert_eq!(f.walks(), 1);
        assert_eq!(f.folders_read(), 101);
        // The multi-link file keeps changing: each read walks again, reading no folder again.
        for round in 0..5 {
            std::fs::write(ws.join("shared"), format!("v{round}")).unwrap();
            assert!(f
                .check_links(&ws.join("shared"), &meta(&ws.join("shared")))
                .is_ok());
        }
        assert_eq!(f.walks(), 6);
        assert_eq!(f.folders_read(), 101);
        // A new denied name in one folder: that folder (whose mtime changed) is read again,
        // and the new name is found.
        std::fs::hard_link(ws.join("shared"), ws.join("d3/sub/new.env")).unwrap();
        let err = f
            .check_links(&ws.join("shared2"), &meta(&ws.join("shared2")))
            .unwrap_err();
        assert!(err.to_string().contains("new.env"), "{err}");
        assert_eq!(f.folders_read(), 102, "only the folder that changed");
        // The first denied file is still known from its unchanged folder.
        std::fs::hard_link(ws.join("d7/sub/.env"), ws.join("notes")).unwrap();
        assert!(f
            .check_links(&ws.join("notes"), &meta(&ws.join("notes")))
            .is_err());
    }

    #[test]
    fn absolute_patterns_name_the_folders_walked() {
        assert_eq!(
            literal_root("/home/u/.ssh/*"),
            Some(PathBuf::from("/home/u/.ssh"))
        );
        assert_eq!(
            literal_root("/etc/shadow"),
            Some(PathBuf::from("/etc/shadow"))
        );
        assert_eq!(literal_root("/*.env"), None);
        assert_eq!(literal_root("*.env"), None);
    }
}
