//! Opening exactly the location the checks approved, and nothing a concurrent process swapped in.
//!
//! The runtime pins a path tool's target before it runs: the path resolved through symlinks,
//! which the permission layer and scope checked. Between that check and the open, another
//! process (one the model started with `bash`, say) may replace a folder on the way by a symlink
//! to somewhere else. So every open here refuses to follow any symlink at all: `openat2` with
//! `RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`, beneath the writable root's descriptor with
//! `RESOLVE_BENEATH` for writes. The target has no symlink in it (it was resolved), so a symlink
//! met now can only be a swap, and the open fails (`ELOOP`) instead of landing elsewhere.
//! Missing folders are created one at a time with `mkdirat` and opened the same way; the
//! temporary file of an atomic write is created inside the folder's descriptor and removed
//! through it on every error path. On kernels without `openat2` (before 5.6, or a seccomp filter
//! answering `ENOSYS`) each component is opened with `openat(O_NOFOLLOW)`, one at a time, which
//! gives the same guarantee with one system call per component (and that is all other Unixes
//! get). Why `rustix` and not `cap-std`: docs/architecture.md.
//!
//! A target beneath a session's `$TMPDIR`, which is a tmpfs in the session's mount view only,
//! is opened the same way beneath that tmpfs's descriptor (`sandbox::tmpfs::beneath`), with
//! `RESOLVE_BENEATH` for reads too: what the sandboxed processes wrote there, not the empty
//! host folder.
//!
//! Must not touch: permission decisions or scope (the runtime pins and checks the target).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
#[cfg(any(target_os = "linux", target_os = "android"))]
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::sandbox::tmpfs;

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// Set once `openat2` answered `ENOSYS`: later opens go straight to the per-component walk.
#[cfg(any(target_os = "linux", target_os = "android"))]
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// `openat2(dir, path, flags)` following no symlink (and staying beneath `dir` when `beneath`),
/// retried on `EAGAIN` (a concurrent rename the kernel could not rule out); `None` when the walk
/// must do it instead (no `openat2`, or still `EAGAIN`).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn open2(
    dir: BorrowedFd<'_>,
    path: &Path,
    flags: OFlags,
    beneath: bool,
) -> Option<io::Result<OwnedFd>> {
    use rustix::fs::ResolveFlags;
    if NO_OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    let mut resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    if beneath {
        resolve |= ResolveFlags::BENEATH;
    }
    for _ in 0..4 {
        match rustix::fs::openat2(dir, path, flags, Mode::empty(), resolve) {
            Err(Errno::AGAIN) => continue,
            Err(Errno::NOSYS) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
                return None;
            }
            other => return Some(other.map_err(io::Error::from)),
        }
    }
    None
}

/// No `openat2` outside Linux: the per-component walk gives the same guarantee.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open2(
    _dir: BorrowedFd<'_>,
    _path: &Path,
    _flags: OFlags,
    _beneath: bool,
) -> Option<io::Result<OwnedFd>> {
    None
}

/// The plain components of `rel`; anything else (`..`, a root) is refused: targets are
/// normalized, so one here would be a bug.
fn components(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a plain relative path", rel.display()),
            )),
        })
        .collect()
}

/// Opens the folders of `rel` under `start` one at a time with `O_NOFOLLOW`, creating the
/// missing ones when `create`.
fn walk(start: BorrowedFd<'_>, rel: &Path, create: bool) -> io::Result<OwnedFd> {
    let mut current = rustix::fs::openat(start, ".", DIR, Mode::empty())?;
    for name in components(rel)? {
        let next = match rustix::fs::openat(&current, name, DIR | OFlags::NOFOLLOW, Mode::empty()) {
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&current, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::openat(&current, name, DIR | OFlags::NOFOLLOW, Mode::empty())?
            }
            other => other?,
        };
        current = next;
    }
    Ok(current)
}

/// Opens the folder `rel` (plain, relative) beneath the folder `start` without following any
/// symlink or leaving `start`; with `create`, missing folders are created.
fn open_beneath(start: BorrowedFd<'_>, rel: &Path, create: bool) -> io::Result<OwnedFd> {
    if rel.as_os_str().is_empty() {
        return Ok(rustix::fs::openat(start, ".", DIR, Mode::empty())?);
    }
    match open2(start, rel, DIR, true) {
        Some(Ok(fd)) => Ok(fd),
        Some(Err(e)) if e.kind() != io::ErrorKind::NotFound || !create => Err(e),
        _ => walk(start, rel, create),
    }
}

/// Opens the folder `dir` (absolute, symlink-free) beneath `root` (absolute, symlink-free, equal
/// to or above `dir`) without following any symlink; with `create`, missing folders (`root`'s
/// too) are created. Beneath a session's `$TMPDIR` tmpfs, beneath its descriptor.
pub fn open_dir(root: &Path, dir: &Path, create: bool) -> io::Result<OwnedFd> {
    let rel = dir.strip_prefix(root).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not inside {}", dir.display(), root.display()),
        )
    })?;
    if let Some((view, inside)) = tmpfs::beneath(dir) {
        return open_beneath(view.dir(), &inside, create);
    }
    let root_fd = match open2(CWD, root, DIR, false) {
        Some(Ok(fd)) => fd,
        Some(Err(e)) if e.kind() != io::ErrorKind::NotFound || !create => return Err(e),
        _ => {
            let slash = rustix::fs::openat(CWD, "/", DIR, Mode::empty())?;
            walk(
                slash.as_fd(),
                root.strip_prefix("/").unwrap_or(root),
                create,
            )?
        }
    };
    if rel.as_os_str().is_empty() {
        return Ok(root_fd);
    }
    open_beneath(root_fd.as_fd(), rel, create)
}

/// Opens the file at `path` (absolute, symlink-free) for reading without following any symlink.
pub fn open_read(path: &Path) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
    if let Some((view, inside)) = tmpfs::beneath(path) {
        let rel = if inside.as_os_str().is_empty() {
            Path::new(".")
        } else {
            inside.as_path()
        };
        if let Some(result) = open2(view.dir(), rel, flags, true) {
            return result.map(File::from);
        }
        let (parent, name) = match (rel.parent(), rel.file_name()) {
            (Some(parent), Some(name)) => (parent, name),
            _ => (Path::new(""), std::ffi::OsStr::new(".")),
        };
        let dir = open_beneath(view.dir(), parent, false)?;
        return Ok(File::from(rustix::fs::openat(
            &dir,
            name,
            flags | OFlags::NOFOLLOW,
            Mode::empty(),
        )?));
    }
    if let Some(result) = open2(CWD, path, flags, false) {
        return result.map(File::from);
    }
    let (parent, name) = split(path)?;
    let dir = open_dir(Path::new("/"), parent, false)?;
    Ok(File::from(rustix::fs::openat(
        &dir,
        name,
        flags | OFlags::NOFOLLOW,
        Mode::empty(),
    )?))
}

fn split(path: &Path) -> io::Result<(&Path, &OsStr)> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )),
    }
}

/// The temporary file of an atomic write: removed through its folder's descriptor unless the
/// write completed.
struct Temp<'a> {
    dir: BorrowedFd<'a>,
    name: OsString,
    done: bool,
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = rustix::fs::unlinkat(self.dir, &self.name, AtFlags::empty());
        }
    }
}

/// Writes `bytes` to `path` (absolute, symlink-free) atomically, beneath `root`: a temporary
/// file in the same folder, fsync, rename over the target, fsync of the folder. Missing folders
/// are created. An existing file's permission bits are kept; a folder at `path` is an error.
/// Nothing on the way is followed, and the temporary file never outlives a failure.
pub fn write_atomic(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (parent, name) = split(path)?;
    let dir = open_dir(root, parent, true)?;
    let existing = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Some(stat),
        Err(Errno::NOENT) => None,
        Err(e) => return Err(e.into()),
    };
    let keep_mode = match existing {
        Some(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory",
            ))
        }
        Some(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
            Some(Mode::from_raw_mode(stat.st_mode & 0o777))
        }
        _ => None,
    };
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".pod-tmp-{}", uuid::Uuid::new_v4().simple()));
    if tmp_name.as_bytes().len() > 255 {
        // Keep the temporary name within NAME_MAX for long file names.
        tmp_name = OsString::from(format!(".pod-tmp-{}", uuid::Uuid::new_v4().simple()));
    }
    let fd = rustix::fs::openat(
        &dir,
        &tmp_name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    )?;
    let mut temp = Temp {
        dir: dir.as_fd(),
        name: tmp_name,
        done: false,
    };
    let mut file = File::from(fd);
    file.write_all(bytes)?;
    if let Some(mode) = keep_mode {
        rustix::fs::fchmod(&file, mode)?;
    }
    file.sync_all()?;
    drop(file);
    rustix::fs::renameat(&dir, &temp.name, &dir, name)?;
    temp.done = true;
    // Make the rename itself durable; not all file systems allow syncing a folder.
    let _ = rustix::fs::fsync(&dir);
    Ok(())
}

/// A user-facing explanation of an error from these opens: a symlink met on the way is a swap
/// made after the checks.
pub fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) if code == Errno::LOOP.raw_os_error() => {
            "a symlink now stands where the checked path had a folder or file (it changed after \
             the checks), and symlinks are not followed here"
                .to_string()
        }
        Some(code) if code == Errno::XDEV.raw_os_error() => {
            "the path leaves the folder it was checked in".to_string()
        }
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn canonical_tempdir() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        (dir, path)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn writes_create_folders_and_leave_no_temporary_file() {
        let (_d, ws) = canonical_tempdir();
        write_atomic(&ws, &ws.join("a/b/c.txt"), b"one").unwrap();
        write_atomic(&ws, &ws.join("a/b/c.txt"), b"two").unwrap();
        assert_eq!(fs::read_to_string(ws.join("a/b/c.txt")).unwrap(), "two");
        assert_eq!(names(&ws.join("a/b")), vec!["c.txt"]);
        let err = write_atomic(&ws, &ws.join("a"), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
        assert_eq!(names(&ws), vec!["a"]);
    }

    #[test]
    fn a_symlink_on_the_way_is_never_followed() {
        let (_o, outside) = canonical_tempdir();
        let (_d, ws) = canonical_tempdir();
        std::os::unix::fs::symlink(&outside, ws.join("sub")).unwrap();
        for create in [true, false] {
            let err = open_dir(&ws, &ws.join("sub/deeper"), create).unwrap_err();
            assert!(describe(&err).contains("symlink"), "{err}");
        }
        assert!(write_atomic(&ws, &ws.join("sub/x"), b"x").is_err());
        assert!(open_read(&ws.join("sub/x")).is_err());
        assert!(names(&outside).is_empty());
        assert_eq!(names(&ws), vec!["sub"]);
        // The writable root itself swapped for a symlink is refused as well.
        assert!(write_atomic(&ws.join("sub"), &ws.join("sub/x"), b"x").is_err());
        assert!(names(&outside).is_empty());
    }

    #[test]
    fn the_walk_gives_the_same_answers_as_openat2() {
        let (_o, outside) = canonical_tempdir();
        let (_d, ws) = canonical_tempdir();
        fs::create_dir(ws.join("real")).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();
        let slash = rustix::fs::openat(CWD, "/", DIR, Mode::empty()).unwrap();
        let rel = ws.strip_prefix("/").unwrap();
        assert!(walk(slash.as_fd(), &rel.join("real"), false).is_ok());
        assert!(walk(slash.as_fd(), &rel.join("link"), false).is_err());
        assert!(walk(slash.as_fd(), &rel.join("link/new"), true).is_err());
        assert!(walk(slash.as_fd(), &rel.join("new/deeper"), true).is_ok());
        assert!(ws.join("new/deeper").is_dir());
        assert!(names(&outside).is_empty());
    }
}
