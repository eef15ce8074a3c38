//! The session's `$TMPDIR` as a size-limited tmpfs, and the one place that maps a host path
//! beneath it to what the sandboxed processes see there.
//!
//! Under namespaces with the holder, `$TMPDIR` is a tmpfs of `[sandbox] max_tmpdir_size` in the
//! session's mount view, mounted over the host folder of the same name (which stays empty):
//! `bwrap --perms 0700 --size N --tmpfs DIR` in the holder's command line only
//! ([`super::namespaces::Wrap::tmpfs_at`]). Every call's mount namespace is a copy of the
//! session's, so calls, hooks and MCP servers share it, and it lives as long as the session; a
//! write past its size fails with `ENOSPC` inside the call and touches nothing outside. Where
//! each call makes namespaces of its own, or under Landlock, a tmpfs per call would lose its
//! files between calls: `$TMPDIR` stays the host folder there, and the plan reports the gap.
//!
//! pod's own file tools (`read`, `grep`, `glob`, `edit`, `file_write`) and the permission
//! layer's symlink resolution run in pod's process, outside the view, where the host folder is
//! empty. So the tmpfs is opened once, when the session opens, as a directory descriptor through
//! the holder's root (`/proc/<holder>/root/…`, which pod may open: it owns the holder's user
//! namespace), checked to be a tmpfs, and registered here by its host path ([`View`]). Owns:
//! - [`beneath`]: a host path beneath a registered `$TMPDIR` as (its view, the path relative to
//!   it), for opens that follow no symlink and stay beneath the tmpfs (`tools::confined`:
//!   `openat2` with `RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH`);
//! - [`reach`]: a path pod's process can give to path-based calls (`lstat`, `readlink`,
//!   `read_dir`): `/proc/self/fd/N/…` through the view's descriptor, which the returned value
//!   keeps open while it is used. Installed as `permission::path`'s view, so symlinks inside
//!   the tmpfs are resolved, and decided, as the calls would follow them, as when `$TMPDIR` was
//!   a host folder; `grep` and `glob` walk through it (`tools::common::walk`), naming what they
//!   find by host paths again ([`back`]);
//! - [`covers`]: whether a path lies in one (a walk descends into it; an editor is not asked
//!   for a file there, since it sees the empty host folder);
//! - [`View::usage`]: how full it is, for the note a `bash` result gets after `ENOSPC`.
//!
//! Paths are still resolved, checked and pinned on their host names (the permission layer,
//! scope, `runtime::pin`); only where the bytes are read changes.
//!
//! Must not touch: the command line (`namespaces`), the holder (`holder` gives its root),
//! decisions.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::permission::path::{self, Reached};

/// `TMPFS_MAGIC` from `<linux/magic.h>`: the `f_type` of a tmpfs.
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// The tmpfs cannot be reached from the pod's process.
#[derive(Debug, thiserror::Error)]
pub enum TmpfsError {
    #[error("cannot open the session's $TMPDIR ({}) through the holder's root: {source}", dir.display())]
    Open {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the session's $TMPDIR ({}) seen through the holder's root is not a tmpfs (file system \
         type {kind:#x})",
        dir.display()
    )]
    NotTmpfs { dir: PathBuf, kind: i64 },
}

/// A session's `$TMPDIR` tmpfs as the pod's process reaches it.
#[derive(Debug)]
pub struct View {
    /// The host folder (resolved) the tmpfs is mounted over in the view.
    host: PathBuf,
    /// The tmpfs's root folder, opened through the holder's root.
    dir: OwnedFd,
    /// `/proc/self/fd/N`: how path-based calls reach it.
    proc_path: PathBuf,
    /// Its size in bytes (`[sandbox] max_tmpdir_size`).
    size: u64,
}

impl View {
    /// Opens the tmpfs mounted at `host` (absolute, resolved) in the view whose root is
    /// `holder_root` (the holder's `/proc/<pid>/root`).
    pub fn open(holder_root: BorrowedFd<'_>, host: &Path, size: u64) -> Result<View, TmpfsError> {
        let failed = |source: std::io::Error| TmpfsError::Open {
            dir: host.to_path_buf(),
            source,
        };
        let rel = host.strip_prefix("/").unwrap_or(host);
        let dir = open_beneath(holder_root, rel).map_err(failed)?;
        let stat = rustix::fs::fstatfs(&dir).map_err(|e| failed(e.into()))?;
        #[allow(clippy::unnecessary_cast)] // `f_type`'s width differs between targets.
        let kind = stat.f_type as i64;
        if kind != TMPFS_MAGIC {
            return Err(TmpfsError::NotTmpfs {
                dir: host.to_path_buf(),
                kind,
            });
        }
        let proc_path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        Ok(View {
            host: host.to_path_buf(),
            dir,
            proc_path,
            size,
        })
    }

    /// The tmpfs's root folder.
    pub fn dir(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes in use and the size, as the kernel counts them now.
    pub fn usage(&self) -> Option<(u64, u64)> {
        let st = rustix::fs::fstatvfs(&self.dir).ok()?;
        let total = st.f_blocks.saturating_mul(st.f_frsize);
        let free = st.f_bfree.saturating_mul(st.f_frsize);
        Some((total.saturating_sub(free), total))
    }

    /// Makes the view the one for paths beneath its host folder until the returned value drops.
    pub fn register(self) -> Registered {
        path::set_view(reach_view);
        let view = Arc::new(self);
        let mut views = VIEWS.write().unwrap_or_else(|e| e.into_inner());
        views.retain(|v| v.host != view.host);
        views.push(view.clone());
        Registered(view)
    }
}

/// `rel` beneath `dir`, following no symlink: opened once, at session open, before any call ran.
fn open_beneath(dir: BorrowedFd<'_>, rel: &Path) -> std::io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | ResolveFlags::BENEATH;
    match rustix::fs::openat2(dir, rel, flags, Mode::empty(), resolve) {
        Err(rustix::io::Errno::NOSYS) => Ok(rustix::fs::openat(
            dir,
            rel,
            flags | OFlags::NOFOLLOW,
            Mode::empty(),
        )?),
        other => Ok(other?),
    }
}

/// A registered view; dropping it (with the session's sandbox) unregisters it, and the tmpfs
/// goes once no path reached through it is still in use.
#[derive(Debug)]
pub struct Registered(Arc<View>);

impl Registered {
    /// The view.
    pub fn view(&self) -> &View {
        &self.0
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut views = VIEWS.write().unwrap_or_else(|e| e.into_inner());
        views.retain(|v| !Arc::ptr_eq(v, &self.0));
    }
}

/// The views of the sessions open in this process.
static VIEWS: RwLock<Vec<Arc<View>>> = RwLock::new(Vec::new());

/// The view whose host folder holds `path` (absolute, normalized), and `path` relative to it.
pub fn beneath(path: &Path) -> Option<(Arc<View>, PathBuf)> {
    let views = VIEWS.read().unwrap_or_else(|e| e.into_inner());
    views.iter().find_map(|v| {
        path.strip_prefix(&v.host)
            .ok()
            .map(|rel| (v.clone(), rel.to_path_buf()))
    })
}

/// Whether `path` (absolute, normalized) lies beneath a session's `$TMPDIR` tmpfs.
pub fn covers(path: &Path) -> bool {
    let views = VIEWS.read().unwrap_or_else(|e| e.into_inner());
    views.iter().any(|v| path.starts_with(&v.host))
}

/// Where the pod's process finds what the sandboxed processes see at `path` (absolute,
/// normalized): beneath a session's `$TMPDIR` tmpfs, a `/proc/self/fd/N/…` path through its
/// view, held open as long as the value lives; elsewhere `path` itself.
pub fn reach(path: &Path) -> Reached {
    path::reach(path)
}

/// [`reach`] beneath a registered view (installed as `permission::path`'s view).
fn reach_view(path: &Path) -> Option<Reached> {
    let (view, rel) = beneath(path)?;
    // Only plain names below the tmpfs's root: a `..` would climb out of it in the view, where
    // the host path names something else.
    if rel
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    // The tmpfs's root itself: `/.` after the descriptor, so that `lstat` follows the
    // descriptor's link to the folder instead of describing the link.
    let through = if rel.as_os_str().is_empty() {
        view.proc_path.join(".")
    } else {
        view.proc_path.join(rel)
    };
    Some(Reached::through(through, view))
}

/// A path met under a reached folder (`reached`, for host path `host`), named as the host
/// path again.
pub fn back(host: &Path, reached: &Path, found: &Path) -> PathBuf {
    match found.strip_prefix(reached) {
        Ok(rel) => host.join(rel),
        Err(_) => found.to_path_buf(),
    }
}

/// A view of an ordinary folder `real` (no tmpfs, no holder) registered for host folder
/// `host`, for tests of what reaches through a view.
#[cfg(test)]
pub(crate) fn fake(host: &Path, real: &Path) -> Registered {
    use rustix::fs::{Mode, OFlags};
    let dir = rustix::fs::open(
        real,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", real.display()));
    let proc_path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    View {
        host: host.to_path_buf(),
        dir,
        proc_path,
        size: 1 << 20,
    }
    .register()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view of an ordinary folder (no tmpfs needed): what [`beneath`], [`reach`] and path
    /// resolution make of paths beneath its host name.
    #[test]
    fn paths_beneath_a_view_are_reached_through_it_and_resolved_as_inside() {
        let real = tempfile::tempdir().unwrap();
        let real_path = real.path().canonicalize().unwrap();
        std::fs::write(real_path.join("f"), "inside").unwrap();
        std::os::unix::fs::symlink(&real_path, real_path.join("loop")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", real_path.join("l")).unwrap();
        let host = tempfile::tempdir().unwrap();
        let host_path = host.path().canonicalize().unwrap();
        let registered = fake(&host_path, &real_path);
        let f = host_path.join("f");
        assert_eq!(std::fs::read_to_string(&*reach(&f)).unwrap(), "inside");
        assert!(reach(&f).is_redirected());
        assert!(reach(&host_path).is_dir() && !reach(&host_path).is_symlink());
        assert!(!reach(Path::new("/etc/hostname")).is_redirected());
        // A symlink inside resolves as the sandboxed processes would follow it.
        assert_eq!(
            path::resolve(&host_path.join("l")),
            PathBuf::from("/etc/hostname")
        );
        assert_eq!(
            path::resolve(&host_path.join("loop/f")),
            real_path.join("f")
        );
        let (view, rel) = beneath(&f).unwrap();
        assert_eq!(rel, Path::new("f"));
        assert_eq!(view.size(), 1 << 20);
        assert_eq!(back(&host_path, &reach(&host_path), &reach(&f)), f);
        drop(view);
        drop(registered);
        assert!(beneath(&f).is_none());
        assert!(!reach(&f).exists(), "the host folder is empty");
    }

    /// The hard-link check walks a `$TMPDIR` through its view too: a second name made in the
    /// tmpfs for a file a rule denies there is found, as it would be in a host folder.
    #[test]
    fn a_hard_link_in_a_tmpdir_is_checked_against_its_other_names_there() {
        use crate::permission::{FileRules, Policy, RuleSpec, Rules};
        use crate::protocol::Action;
        let real = tempfile::tempdir().unwrap();
        let real = real.path().canonicalize().unwrap();
        std::fs::write(real.join("k.secret"), "s").unwrap();
        std::fs::hard_link(real.join("k.secret"), real.join("notes")).unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let host = tempfile::tempdir().unwrap();
        let host = host.path().canonicalize().unwrap();
        let _view = fake(&host, &real);
        let pattern = format!("{}/*.secret", host.display());
        let rules = Rules::compile(
            Action::Allow,
            vec![RuleSpec::new("read", &pattern, Action::Deny)],
        )
        .unwrap();
        let files = FileRules::new(Arc::new(Policy::new(Some(rules), ws)));
        let notes = host.join("notes");
        let meta = std::fs::metadata(&*reach(&notes)).unwrap();
        let err = files.check_links(&notes, &meta).unwrap_err();
        assert!(err.to_string().contains("k.secret"), "{err}");
    }
}
