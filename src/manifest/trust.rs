//! Workspace trust: whether a project's configuration may run code, send data or widen what the
//! user's configuration allows (docs/permissions.md, "Trust").
//!
//! Owns: the project's [`Fingerprint`] (a SHA-256 of every file that defines what the project
//! runs: the manifest, the hook and MCP server programs and the scripts they are given, the
//! skill folders' files), the user's [`TrustStore`] (`trust.json` in the per-user state folder,
//! keyed by the folder's real path, each entry pinned to a fingerprint), and the [`Trust`] a
//! layered manifest carries: its status and what was ignored because of it.
//!
//! Must not touch: what an untrusted project keeps and loses (`layers.rs` decides that) and the
//! wire (the front-ends map [`Trust`] to `protocol::WorkspaceTrust`). The store is written only
//! here, under a lock, atomically, and never over a file it cannot read: a store that does not
//! parse is reported and left as it is.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{default_state_root, Manifest, McpTransport};
use crate::protocol::TrustStatus;

/// The store's file name in the per-user state folder.
pub const STORE_FILE: &str = "trust.json";

/// At most this many files of skill folders are hashed; a folder holding more counts as changed
/// whenever its count changes (the fingerprint records the count).
const MAX_SKILL_FILES: usize = 2000;
/// At most this many bytes of one file are hashed; the size is part of the fingerprint, so a
/// change past it in a file of the same size is the only change missed (documented).
const MAX_HASHED_BYTES: u64 = 64 * 1024 * 1024;

/// One setting an untrusted project's configuration has that pod ignores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// What it would do: `starts MCP server "helper": sh -c …`.
    pub what: String,
    /// `file:line`.
    pub place: String,
    /// The file it is written in.
    pub file: PathBuf,
}

impl Ignored {
    pub fn new(what: impl Into<String>, file: &Path, line: Option<usize>) -> Ignored {
        Ignored {
            what: what.into(),
            place: format!("{}:{}", file.display(), line.unwrap_or(1)),
            file: file.to_path_buf(),
        }
    }
}

/// The trust state of a layered configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    pub status: TrustStatus,
    /// The project manifest's folder (real path); `None` without a project manifest.
    pub folder: Option<PathBuf>,
    /// What of the project's configuration is ignored (empty when trusted).
    pub ignored: Vec<Ignored>,
    /// Files changed since the folder was trusted, relative to it.
    pub changed: Vec<String>,
    /// The user declined this very content.
    pub declined: bool,
    /// The fingerprint the status was decided on, for recording a decision about it.
    pub fingerprint: Option<Fingerprint>,
}

impl Trust {
    /// The state of a configuration without a project manifest: nothing to trust.
    pub fn no_project() -> Trust {
        Trust {
            status: TrustStatus::Untrusted,
            folder: None,
            ignored: Vec::new(),
            changed: Vec::new(),
            declined: false,
            fingerprint: None,
        }
    }

    /// A configuration its caller vouches for (a manifest loaded on its own).
    pub fn vouched(folder: &Path) -> Trust {
        Trust {
            status: TrustStatus::Session,
            folder: Some(folder.to_path_buf()),
            ..Trust::no_project()
        }
    }

    /// True when the project's configuration is in force as written.
    pub fn is_trusted(&self) -> bool {
        matches!(self.status, TrustStatus::Trusted | TrustStatus::Session)
    }
}

/// Whom the caller asks about a project's trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Vouch {
    /// The user's trust store.
    #[default]
    Store,
    /// The caller vouches for this run (`pod serve --trust`, a `trust_session` decision).
    Session,
}

/// What the store says about a folder and a fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Trusted,
    /// The user declined this content.
    Declined,
    /// Trusted or declined once, with other content: the files that differ.
    Changed(Vec<String>),
    Unknown,
}

/// The files that define what a project runs, each with its hash (`sha256:…`), `missing`, or
/// the count of a folder's files; keys are relative to the project's folder when inside it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Fingerprint(pub BTreeMap<String, String>);

impl Fingerprint {
    /// The fingerprint of a project manifest as written (before anything is ignored).
    pub fn of(project: &Manifest) -> Fingerprint {
        let mut print = Fingerprint::default();
        let add = |print: &mut Fingerprint, path: &Path| {
            let key = key(path, &project.dir);
            print.0.entry(key).or_insert_with(|| hash_file(path));
        };
        add(&mut print, &project.path);
        if let Some(scenario) = &project.model.scenario {
            add(&mut print, scenario);
        }
        for hook in &project.hooks {
            for (i, word) in hook.command.iter().enumerate() {
                let candidate = hook.dir.join(word);
                if (i == 0 && word.contains('/')) || (i > 0 && candidate.is_file()) {
                    add(&mut print, &candidate);
                }
            }
        }
        for server in &project.mcp.servers {
            let McpTransport::Stdio {
                command, args, cwd, ..
            } = &server.transport
            else {
                continue;
            };
            if command.contains('/') {
                add(&mut print, &project.dir.join(command));
            }
            for arg in args {
                let candidate = cwd.join(arg);
                if candidate.is_file() {
                    add(&mut print, &candidate);
                }
            }
        }
        for dir in &project.skill_dirs {
            let files = skill_files(dir);
            print.0.insert(
                format!("{}/", key(dir, &project.dir)),
                format!("{} files", files.len()),
            );
            for file in files {
                add(&mut print, &file);
            }
        }
        print
    }

    /// The keys whose values differ between `self` and `other`, in order.
    pub fn differences(&self, other: &Fingerprint) -> Vec<String> {
        let mut keys: Vec<&String> = self.0.keys().chain(other.0.keys()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .filter(|k| self.0.get(*k) != other.0.get(*k))
            .cloned()
            .collect()
    }
}

/// `path` relative to `dir` when beneath it, else as it is.
fn key(path: &Path, dir: &Path) -> String {
    let path = crate::permission::path::normalize(path);
    match path.strip_prefix(dir) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// `sha256:<hex> <size>`, `missing`, or `unreadable: <why>`.
fn hash_file(path: &Path) -> String {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return "missing".into(),
        Err(e) => return format!("unreadable: {}", e.kind()),
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut hasher = Sha256::new();
    let mut reader = file.take(MAX_HASHED_BYTES);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) => return format!("unreadable: {}", e.kind()),
        }
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex} {size}")
}

/// The regular files beneath a skill folder, in name order, at most [`MAX_SKILL_FILES`];
/// symlinks are not followed.
fn skill_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                if out.len() >= MAX_SKILL_FILES {
                    return out;
                }
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

/// Why the trust store cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("no trust store: {0}")]
    NoStateFolder(#[from] super::NoStateFolder),
    #[error("trust store {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "trust store {}: {message}; pod leaves the file as it is (fix or remove it)",
        path.display()
    )]
    Corrupt { path: PathBuf, message: String },
    #[error("{}: nothing to trust: no pod.toml there", folder.display())]
    NoProject { folder: PathBuf },
}

/// A decision kept in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Trusted,
    Declined,
}

/// One folder's entry in the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub decision: Decision,
    /// When it was decided (RFC 3339).
    pub at: String,
    pub files: Fingerprint,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    folders: BTreeMap<String, Entry>,
}

/// The user's trust decisions: `<state folder>/trust.json`.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// The store of the per-user state folder (`$XDG_STATE_HOME/pod/trust.json`, else
    /// `~/.local/state/pod/trust.json`), whatever a manifest's `state_dir` says.
    pub fn default_location() -> Result<TrustStore, TrustError> {
        Ok(TrustStore {
            path: default_state_root()?.join(STORE_FILE),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<StoreFile, TrustError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(StoreFile {
                    version: 1,
                    ..StoreFile::default()
                })
            }
            Err(source) => {
                return Err(TrustError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        };
        let store: StoreFile = serde_json::from_str(&text).map_err(|e| TrustError::Corrupt {
            path: self.path.clone(),
            message: format!("line {} column {}: {e}", e.line(), e.column()),
        })?;
        if store.version != 1 {
            return Err(TrustError::Corrupt {
                path: self.path.clone(),
                message: format!("version {} is not one this pod reads (1)", store.version),
            });
        }
        Ok(store)
    }

    /// What the store says of `folder` with this content.
    pub fn lookup(&self, folder: &Path, print: &Fingerprint) -> Result<Lookup, TrustError> {
        let store = self.read()?;
        Ok(match store.folders.get(&folder.display().to_string()) {
            None => Lookup::Unknown,
            Some(entry) if entry.files == *print => match entry.decision {
                Decision::Trusted => Lookup::Trusted,
                Decision::Declined => Lookup::Declined,
            },
            Some(entry) => Lookup::Changed(entry.files.differences(print)),
        })
    }

    /// Every entry, by folder.
    pub fn list(&self) -> Result<Vec<(String, Entry)>, TrustError> {
        Ok(self.read()?.folders.into_iter().collect())
    }

    /// Records `decision` for `folder` with this content (replacing what was there).
    pub fn record(
        &self,
        folder: &Path,
        print: &Fingerprint,
        decision: Decision,
    ) -> Result<(), TrustError> {
        let at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        self.update(|store| {
            store.folders.insert(
                folder.display().to_string(),
                Entry {
                    decision,
                    at,
                    files: print.clone(),
                },
            );
            true
        })
        .map(|_| ())
    }

    /// Forgets `folder`; false when the store had no entry for it.
    pub fn revoke(&self, folder: &Path) -> Result<bool, TrustError> {
        let key = folder.display().to_string();
        self.update(|store| store.folders.remove(&key).is_some())
    }

    /// Read, change and write the store under an exclusive lock, atomically (a temporary file
    /// renamed over it). `change` says whether it changed anything.
    fn update(&self, change: impl FnOnce(&mut StoreFile) -> bool) -> Result<bool, TrustError> {
        let io = |source| TrustError::Io {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io)?;
        }
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("{STORE_FILE}.lock")))
            .map_err(io)?;
        lock.lock().map_err(io)?;
        let mut store = self.read()?;
        if !change(&mut store) {
            return Ok(false);
        }
        store.version = 1;
        let text = serde_json::to_string_pretty(&store)
            .map_err(|e| io(std::io::Error::other(e.to_string())))?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        std::io::Write::write_all(&mut temp, format!("{text}\n").as_bytes()).map_err(io)?;
        temp.as_file().sync_all().map_err(io)?;
        temp.persist(&self.path).map_err(|e| io(e.error))?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_holds_for_its_content_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore {
            path: dir.path().join("state/trust.json"),
        };
        let folder = Path::new("/srv/project");
        let mut print = Fingerprint::default();
        print.0.insert("pod.toml".into(), "sha256:aa 1".into());
        assert_eq!(store.lookup(folder, &print).unwrap(), Lookup::Unknown);
        store.record(folder, &print, Decision::Trusted).unwrap();
        assert_eq!(store.lookup(folder, &print).unwrap(), Lookup::Trusted);
        let mut changed = print.clone();
        changed.0.insert("pod.toml".into(), "sha256:bb 1".into());
        changed.0.insert("hooks/x.sh".into(), "sha256:cc 1".into());
        assert_eq!(
            store.lookup(folder, &changed).unwrap(),
            Lookup::Changed(vec!["hooks/x.sh".into(), "pod.toml".into()])
        );
        store.record(folder, &changed, Decision::Declined).unwrap();
        assert_eq!(store.lookup(folder, &changed).unwrap(), Lookup::Declined);
        assert!(store.revoke(folder).unwrap());
        assert!(!store.revoke(folder).unwrap());
        assert_eq!(store.lookup(folder, &changed).unwrap(), Lookup::Unknown);
    }

    #[test]
    fn a_store_that_does_not_parse_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.json");
        std::fs::write(&path, "{ not json").unwrap();
        let store = TrustStore { path: path.clone() };
        let err = store
            .record(Path::new("/x"), &Fingerprint::default(), Decision::Trusted)
            .unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ not json");
    }

    #[test]
    fn file_hashes_name_the_content_and_the_size() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a");
        std::fs::write(&file, "abc").unwrap();
        assert_eq!(
            hash_file(&file),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad 3"
        );
        assert_eq!(hash_file(&dir.path().join("b")), "missing");
    }
}
