//! The per-call process limit (`[sandbox] max_processes`): a pids cgroup per session, a child
//! of it per call with `pids.max`, which the call's first process moves itself into before it
//! forks anything, so every process and thread of the call is counted and a fork past the limit
//! fails with `EAGAIN`.
//!
//! Owns: finding a pids cgroup the pod may make children in ([`probe`]: cgroup v2 with `pids`
//! among the controllers of the pod's own cgroup, else cgroup v1's `pids` hierarchy, from
//! `/proc/self/cgroup` and `/proc/self/mountinfo`); the session's cgroup ([`Session`]:
//! `pod-<pid>-<n>` beside the pod's own, made at open, removed when it drops; those of pods that
//! died are removed at the next open); each call's (`call-<n>`, [`CallLimit`]: made before the
//! spawn, removed once its processes are gone, what is left in it killed); moving a forked
//! child into it ([`join`], from `pre_exec`: no allocation); and whether the limit was reached
//! (`pids.events`).
//!
//! Must not touch: any cgroup it did not make (the pod's own is only read, and written only to
//! enable `pids` for its children on v2), other controllers, the processes of a call beyond
//! killing what is left in its cgroup at the end (the reaper owns their lifetime).

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the removal of a call's cgroup keeps killing what is left in it and retrying.
const REMOVE_WAIT: Duration = Duration::from_secs(5);

/// Which cgroup file system the limit lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// A cgroup the pod may make the session's cgroup in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    pub dir: PathBuf,
    pub version: Version,
}

impl std::fmt::Display for Parent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = match self.version {
            Version::V1 => "cgroup v1",
            Version::V2 => "cgroup v2",
        };
        write!(f, "{v}, under {}", self.dir.display())
    }
}

/// Where the pod could make its cgroups, or why it cannot (in words). No side effect.
pub fn probe() -> Result<Parent, String> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let mut why = Vec::new();
    match v2_parent(&cgroups, &mountinfo) {
        Ok(p) => return Ok(p),
        Err(e) => why.push(e),
    }
    match v1_parent(&cgroups, &mountinfo) {
        Ok(p) => return Ok(p),
        Err(e) => why.push(e),
    }
    Err(why.join("; "))
}

/// The mount point and root of the first mount of `fstype` whose super options satisfy `opts`.
fn mount_of(
    mountinfo: &str,
    fstype: &str,
    opts: impl Fn(&str) -> bool,
) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let fields: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if right.first() == Some(&fstype) && right.get(2).is_some_and(|o| opts(o)) {
            let root = fields.get(3)?.to_string();
            let point = PathBuf::from(unescape(fields.get(4)?));
            return Some((point, root));
        }
        None
    })
}

/// mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            if let Some(n) = s
                .get(i + 1..i + 4)
                .and_then(|o| u8::from_str_radix(o, 8).ok())
            {
                out.push(n);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `point` joined with `path` (a cgroup path from `/proc/self/cgroup`) seen from a mount of
/// `root`; `None` when the cgroup is outside what the mount shows.
fn cgroup_dir(point: &Path, root: &str, path: &str) -> Option<PathBuf> {
    let rest = if root == "/" {
        path
    } else {
        path.strip_prefix(root)?
    };
    let rest = rest.trim_start_matches('/');
    Some(if rest.is_empty() {
        point.to_path_buf()
    } else {
        point.join(rest)
    })
}

fn writable(p: &Path) -> bool {
    let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

fn v2_parent(cgroups: &str, mountinfo: &str) -> Result<Parent, String> {
    let path = cgroups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("cgroup v2: the pod is in no cgroup v2")?;
    let (point, root) = mount_of(mountinfo, "cgroup2", |_| true).ok_or("cgroup v2: not mounted")?;
    let dir = cgroup_dir(&point, &root, path).ok_or_else(|| {
        format!(
            "cgroup v2: the pod's cgroup {path} is not under {}",
            point.display()
        )
    })?;
    let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    if !controllers.split_whitespace().any(|c| c == "pids") {
        return Err(format!(
            "cgroup v2: the pids controller is not available in {}",
            dir.display()
        ));
    }
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    let subtree_ok = enabled.split_whitespace().any(|c| c == "pids")
        || writable(&dir.join("cgroup.subtree_control"));
    if !(writable(&dir) && writable(&dir.join("cgroup.procs")) && subtree_ok) {
        return Err(format!(
            "cgroup v2: {} is not writable by this user (not delegated)",
            dir.display()
        ));
    }
    Ok(Parent {
        dir,
        version: Version::V2,
    })
}

fn v1_parent(cgroups: &str, mountinfo: &str) -> Result<Parent, String> {
    let path = cgroups
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            controllers.split(',').any(|c| c == "pids").then_some(path)
        })
        .ok_or("cgroup v1: no pids hierarchy")?;
    let (point, root) = mount_of(mountinfo, "cgroup", |o| o.split(',').any(|x| x == "pids"))
        .ok_or("cgroup v1: the pids hierarchy is not mounted")?;
    let dir = cgroup_dir(&point, &root, path).ok_or_else(|| {
        format!(
            "cgroup v1: the pod's cgroup {path} is not under {}",
            point.display()
        )
    })?;
    if !writable(&dir) {
        return Err(format!(
            "cgroup v1: {} is not writable by this user",
            dir.display()
        ));
    }
    Ok(Parent {
        dir,
        version: Version::V1,
    })
}

/// Numbers the sessions of this process.
static SESSIONS: AtomicU64 = AtomicU64::new(0);
/// The prefix of a session's cgroup: `pod-<pid>-<n>`.
const PREFIX: &str = "pod-";

/// The session's cgroup: each call's is made in it.
#[derive(Debug)]
pub struct Session {
    dir: PathBuf,
    version: Version,
    limit: u32,
    calls: AtomicU64,
}

impl Session {
    /// Makes the session's cgroup in `parent` for calls of at most `limit` tasks each, after
    /// removing the empty ones of pods that are gone; checks a call's cgroup can be made.
    pub fn create(parent: &Parent, limit: u32) -> Result<Session, String> {
        remove_stale(&parent.dir);
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let dir = parent
            .dir
            .join(format!("{PREFIX}{}-{n}", std::process::id()));
        if parent.version == Version::V2 {
            enable_pids(&parent.dir)?;
        }
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let session = Session {
            dir,
            version: parent.version,
            limit,
            calls: AtomicU64::new(0),
        };
        if parent.version == Version::V2 {
            enable_pids(&session.dir)?;
        }
        // One call's cgroup, made and removed: what each call needs works here.
        drop(session.call().map_err(|e| e.to_string())?);
        Ok(session)
    }

    /// The cgroup of one call, with its limit set.
    pub fn call(&self) -> std::io::Result<CallCgroup> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let dir = self.dir.join(format!("call-{n}"));
        let in_dir = |what: &str, e: std::io::Error| {
            std::io::Error::new(e.kind(), format!("{what} {}: {e}", dir.display()))
        };
        std::fs::create_dir(&dir).map_err(|e| in_dir("cannot make the call's cgroup", e))?;
        let call = CallCgroup {
            procs: CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())
                .map_err(std::io::Error::other)?,
            dir: dir.clone(),
            version: self.version,
            limit: self.limit,
        };
        std::fs::write(dir.join("pids.max"), self.limit.to_string())
            .map_err(|e| in_dir("cannot set pids.max of", e))?;
        Ok(call)
    }

    /// The limit each call gets.
    pub fn limit(&self) -> u32 {
        self.limit
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Calls' cgroups still being removed (a removal thread) go first.
        let deadline = Instant::now() + REMOVE_WAIT;
        loop {
            remove_children(&self.dir);
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
                Err(e) if Instant::now() >= deadline => {
                    tracing::error!(
                        "sandbox: cannot remove the session's cgroup {}: {e}",
                        self.dir.display()
                    );
                    return;
                }
                // Paces the retry while the last call's processes exit.
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
}

/// Writes `+pids` to `dir`'s `cgroup.subtree_control` unless it is there.
fn enable_pids(dir: &Path) -> Result<(), String> {
    let file = dir.join("cgroup.subtree_control");
    let on = std::fs::read_to_string(&file).unwrap_or_default();
    if on.split_whitespace().any(|c| c == "pids") {
        return Ok(());
    }
    std::fs::write(&file, "+pids")
        .map_err(|e| format!("cannot enable pids in {}: {e}", file.display()))
}

/// Removes every empty child cgroup of `dir` (a failure leaves it).
fn remove_children(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir(e.path());
            }
        }
    }
}

/// Removes the cgroups `pod-<pid>-<n>` in `parent` whose pod is gone and which are empty:
/// what a killed pod left.
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, n)| n.parse::<u64>().ok().and(pid.parse::<u32>().ok()))
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        remove_children(&e.path());
        let _ = std::fs::remove_dir(e.path());
    }
}

/// One call's cgroup. Removed when dropped: at once when it is empty, else by a thread that
/// kills what is left in it and retries.
#[derive(Debug)]
pub struct CallCgroup {
    dir: PathBuf,
    procs: CString,
    version: Version,
    limit: u32,
}

impl CallCgroup {
    /// Whether a fork in the call failed at the limit (`pids.events`' `max` counter).
    pub fn reached(&self) -> bool {
        std::fs::read_to_string(self.dir.join("pids.events"))
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("max "))
                    .and_then(|n| n.trim().parse::<u64>().ok())
            })
            .is_some_and(|n| n > 0)
    }

    fn kill_left(&self) {
        if self.version == Version::V2 && std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok()
        {
            return;
        }
        let Ok(listed) = std::fs::read_to_string(self.dir.join("cgroup.procs")) else {
            return;
        };
        for pid in listed.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            // SAFETY: pidfd_open takes a pid and flags.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
            let Ok(fd) = i32::try_from(fd) else {
                continue;
            };
            if fd < 0 {
                continue;
            }
            // SAFETY: a fresh descriptor owned here only.
            let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
            // The pidfd holds the pid: still in this cgroup now, it is the same process.
            let still = std::fs::read_to_string(self.dir.join("cgroup.procs"))
                .is_ok_and(|t| t.lines().any(|l| l.trim() == pid.to_string()));
            if still {
                // SAFETY: a valid pidfd, a signal number, no siginfo.
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        std::os::fd::AsRawFd::as_raw_fd(&fd),
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0u32,
                    );
                }
            }
        }
    }

    /// Removes the cgroup, killing what is left in it, until [`REMOVE_WAIT`] has passed; then
    /// forgets it (its drop does nothing more). Blocking.
    fn remove_blocking(&mut self) {
        let deadline = Instant::now() + REMOVE_WAIT;
        loop {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) if Instant::now() >= deadline => {
                    tracing::error!(
                        "sandbox: cannot remove the call's cgroup {}: {e}",
                        self.dir.display()
                    );
                    break;
                }
                Err(_) => {
                    self.kill_left();
                    // Paces the retry while the killed processes exit.
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
        self.dir = PathBuf::new();
    }
}

impl Drop for CallCgroup {
    fn drop(&mut self) {
        if self.dir.as_os_str().is_empty() || std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        let mut left = CallCgroup {
            dir: std::mem::take(&mut self.dir),
            procs: std::mem::take(&mut self.procs),
            version: self.version,
            limit: self.limit,
        };
        let spawned = std::thread::Builder::new()
            .name("pod-cgroup-remove".into())
            .spawn(move || left.remove_blocking());
        if let Err(e) = spawned {
            tracing::error!("sandbox: cannot start removing a call's cgroup: {e}");
        }
    }
}

/// The limit of one call, handed back by `Sandbox::prepare`: hold it until the call's
/// processes are gone; dropping it removes the call's cgroup.
#[derive(Debug, Default)]
#[must_use = "hold it until the call's processes are gone: dropping it removes the call's cgroup"]
pub struct CallLimit {
    pub(super) cgroup: Option<CallCgroup>,
    /// The call runs in the session's namespaces (`holder.rs`): every process of it lives in a
    /// PID namespace of its own whose init the first process reaps before it exits with a code.
    pub(super) contained: bool,
}

impl CallLimit {
    /// No limit (none configured, or no cgroup can be made here).
    pub fn none() -> CallLimit {
        CallLimit::default()
    }

    /// The limit, when a fork of the call failed at it.
    pub fn reached(&self) -> Option<u32> {
        self.cgroup
            .as_ref()
            .filter(|c| c.reached())
            .map(|c| c.limit)
    }

    /// Whether the call's processes are contained in a PID namespace of their own (see the
    /// field): once its first process has exited with a code, none of them is left and none
    /// was orphaned to the pod, so the end of the call needs no search for leftovers.
    pub fn contained(&self) -> bool {
        self.contained
    }

    /// Removes the call's cgroup (killing what is left in it) on a blocking thread.
    pub async fn remove(self) {
        if let Some(mut cgroup) = self.cgroup {
            let _ = tokio::task::spawn_blocking(move || cgroup.remove_blocking()).await;
        }
    }
}

/// In a forked child before `exec`: moves it into the cgroup whose `cgroup.procs` is `procs`.
/// Only `open`, `write` and `close`; no allocation.
pub fn join(procs: &CStr) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated path prepared before the fork; a one-byte buffer of ours.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, b"0".as_ptr().cast(), 1);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if n != 1 {
            return Err(err);
        }
    }
    Ok(())
}

impl CallCgroup {
    /// The `cgroup.procs` path [`join`] writes to.
    pub fn procs(&self) -> &CStr {
        &self.procs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
a line without the separator\n\
29 1 0:26 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
35 28 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
36 28 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n";

    #[test]
    fn the_pods_cgroup_is_found_under_its_mount() {
        let (point, root) = mount_of(MOUNTINFO, "cgroup", |o| o.split(',').any(|x| x == "pids"))
            .expect("pids mount");
        assert_eq!(point, PathBuf::from("/sys/fs/cgroup/pids"));
        assert_eq!(
            cgroup_dir(&point, &root, "/a/b"),
            Some(PathBuf::from("/sys/fs/cgroup/pids/a/b"))
        );
        let (point, root) = mount_of(MOUNTINFO, "cgroup", |o| o.contains("memory")).expect("mem");
        assert_eq!(
            cgroup_dir(&point, &root, "/docker/abc/x"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/x"))
        );
        assert_eq!(cgroup_dir(&point, &root, "/other"), None);
        assert_eq!(
            cgroup_dir(Path::new("/sys/fs/cgroup/pids"), "/", "/"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(unescape("/a\\040b"), "/a b");
    }
}
