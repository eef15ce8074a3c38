//! The per-call process limit (`[sandbox] max_processes`): a pids cgroup per session, a child
//! of it per call with `pids.max`, which the call's first process moves itself into before it
//! forks anything, so every process and thread of the call is counted and a fork past the limit
//! fails with `EAGAIN`.
//!
//! Owns: finding a pids cgroup the pod may make children in ([`probe`], from `/proc/self/cgroup`
//! and `/proc/self/mountinfo`), and making the session's cgroup (`pod-<pid>-<n>`, [`Session`])
//! there:
//! - cgroup v2 with `pids` among the controllers of the pod's own cgroup. v2 lets a cgroup
//!   enable a controller for its children only while it holds no process (the root excepted),
//!   and the pod writes only cgroups delegated to it: ones this user may write, and for root
//!   (who may write all) ones systemd marked delegated (`trusted.delegate`) or the root of a
//!   container's cgroup namespace. In this order: in the root cgroup when the pod is there; in
//!   the pod's own cgroup when it is delegated and holds only the pod and its descendants, which
//!   the pod first moves into a leaf `pod-<pid>.self` of it so that it may enable `pids` for its
//!   children (`systemd-run [--user] --scope -p Delegate=yes pod …`, a service with
//!   `Delegate=yes`, a container); else beside the pod's own cgroup, in its parent, when that is
//!   delegated and enables `pids` for its children (a later session of a pod in its leaf; a
//!   user's slice under `user@<uid>.service`). Elsewhere (a service or scope without delegation,
//!   an ssh session) the limit is not held, and [`probe`]'s error names each place and why not.
//! - else cgroup v1's `pids` hierarchy: in the pod's own cgroup there.
//!
//! Also: the session's cgroup removed when it drops, those (and leaves) of pods that died
//! removed at the next open; each call's (`call-<n>`, [`CallLimit`]: made before the spawn,
//! removed once its processes are gone, what is left in it killed); moving a forked child into
//! it ([`join`], from `pre_exec`: no allocation); and whether the limit was reached
//! (`pids.events`).
//!
//! Must not touch: a cgroup not delegated to it (above), any cgroup it did not make (the pod's
//! own is only read, and on v2 written only to move the pod and its descendants into the pod's
//! leaf and to enable `pids` for its children; a parent only gets the session's cgroup made in
//! it), other controllers, processes that are not the pod's, the processes of a call beyond
//! killing what is left in its cgroup at the end (the reaper owns their lifetime).

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the removal of a call's cgroup keeps killing what is left in it and retrying.
const REMOVE_WAIT: Duration = Duration::from_secs(5);

/// How long moving the pod into its leaf retries while a child it forked meanwhile keeps its
/// own cgroup busy.
const LEAVE_WAIT: Duration = Duration::from_secs(1);

/// What to run pod under so that cgroup v2 holds the limit, in words.
const V2_HINT: &str = "run pod in a cgroup of its own delegated to this user, e.g. \
     `systemd-run --user --scope -p Delegate=yes pod …` (without `--user` as root) or a systemd \
     service with `Delegate=yes`";

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
    /// cgroup v2, `dir` being the pod's own cgroup: the leaf the pod first moves itself and its
    /// descendants into, so that `dir` holds no process and may enable `pids` for its children.
    pub leaf: Option<PathBuf>,
}

impl std::fmt::Display for Parent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = match self.version {
            Version::V1 => "cgroup v1",
            Version::V2 => "cgroup v2",
        };
        write!(f, "{v}, under {}", self.dir.display())?;
        if let Some(leaf) = &self.leaf {
            write!(f, ", the pod moving itself into {} first", leaf.display())?;
        }
        Ok(())
    }
}

/// Where the pod could make its cgroups, or why it cannot (in words). No side effect.
pub fn probe() -> Result<Parent, String> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let mut why = Vec::new();
    match v2_parent(&cgroups, &mountinfo, &Host, std::process::id()) {
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

/// What choosing a v2 parent reads of the cgroup tree and of the processes in it: the
/// machine's ([`Host`]) or a test's.
trait Tree {
    /// A file's content; `None` when it cannot be read.
    fn read(&self, file: &Path) -> Option<String>;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Whether this user may write `path`.
    fn writable(&self, path: &Path) -> bool;
    /// Whether systemd marked the cgroup `dir` as delegated (its `trusted.delegate` attribute).
    fn marked(&self, dir: &Path) -> bool;
    /// Whether this user is root, who may write every cgroup.
    fn root(&self) -> bool;
    /// Whether process `pid` is the pod or one of its descendants.
    fn ours(&self, pid: u32) -> bool;
}

/// The machine's cgroup tree and processes.
struct Host;

impl Tree for Host {
    fn read(&self, file: &Path) -> Option<String> {
        std::fs::read_to_string(file).ok()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn writable(&self, path: &Path) -> bool {
        writable(path)
    }

    fn marked(&self, dir: &Path) -> bool {
        let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
            return false;
        };
        let mut value = [0u8; 8];
        // SAFETY: NUL-terminated path and name; a buffer of ours and its length.
        let n = unsafe {
            libc::getxattr(
                c.as_ptr(),
                c"trusted.delegate".as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        usize::try_from(n).is_ok_and(|n| value.get(..n) == Some(b"1".as_slice()))
    }

    fn root(&self) -> bool {
        // SAFETY: no arguments, cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    fn ours(&self, pid: u32) -> bool {
        descends_from(pid, std::process::id())
    }
}

/// Whether process `pid` is `ancestor` or a descendant of it, by the parent pids in `/proc`
/// (a process that is gone is not).
fn descends_from(pid: u32, ancestor: u32) -> bool {
    let mut pid = pid;
    // Bounded: a parent chain is short, and a cycle cannot be.
    for _ in 0..256 {
        if pid == ancestor {
            return true;
        }
        match parent_pid(pid) {
            Some(p) if p != 0 && p != pid => pid = p,
            _ => return false,
        }
    }
    false
}

/// The parent pid of `pid` (the field after the state in `/proc/<pid>/stat`, after the command
/// name's closing parenthesis).
fn parent_pid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether the whitespace-separated `list` (a `cgroup.controllers` or
/// `cgroup.subtree_control`) names `pids`.
fn names_pids(list: Option<&str>) -> bool {
    list.is_some_and(|l| l.split_whitespace().any(|c| c == "pids"))
}

/// The name of the leaf the pod with pid `pid` moves itself into (cgroup v2).
fn leaf_name(pid: u32) -> String {
    format!("{PREFIX}{pid}{LEAF}")
}

fn v2_parent(cgroups: &str, mountinfo: &str, tree: &impl Tree, pid: u32) -> Result<Parent, String> {
    let path = cgroups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("cgroup v2: the pod is in no cgroup v2")?;
    let (point, root) = mount_of(mountinfo, "cgroup2", |_| true).ok_or("cgroup v2: not mounted")?;
    let own = cgroup_dir(&point, &root, path).ok_or_else(|| {
        format!(
            "cgroup v2: the pod's cgroup {path} is not under {}",
            point.display()
        )
    })?;
    choose_v2(tree, &point, &own, pid)
}

/// Why this user may not make cgroups in `dir` and move processes into them, of the hierarchy
/// mounted at `point`; `None` when it may: it may write `dir` and its `cgroup.procs`, and, for
/// root (who may write every cgroup), systemd marked `dir` delegated or `dir` is the root of
/// what the pod sees (a container's cgroup namespace).
fn not_delegated(tree: &impl Tree, point: &Path, dir: &Path) -> Option<String> {
    if !(tree.writable(dir) && tree.writable(&dir.join("cgroup.procs"))) {
        return Some(format!("{} is not writable by this user", dir.display()));
    }
    if tree.root() && !tree.marked(dir) && dir != point {
        return Some(format!(
            "{} is not delegated (no trusted.delegate mark)",
            dir.display()
        ));
    }
    None
}

/// Where the session's cgroup goes on cgroup v2, the pod (pid `pid`) being in `own` of the
/// hierarchy mounted at `point` (the order is the module's).
fn choose_v2(tree: &impl Tree, point: &Path, own: &Path, pid: u32) -> Result<Parent, String> {
    let at = |dir: &Path, leaf: Option<PathBuf>| Parent {
        dir: dir.to_path_buf(),
        version: Version::V2,
        leaf,
    };
    let controllers = tree.read(&own.join("cgroup.controllers"));
    if !names_pids(controllers.as_deref()) {
        return Err(format!(
            "cgroup v2: the pids controller is not available in the pod's cgroup {} (its \
             cgroup.controllers: \"{}\")",
            own.display(),
            controllers.unwrap_or_default().trim()
        ));
    }
    let subtree = own.join("cgroup.subtree_control");
    // The root of the hierarchy has no `cgroup.type`: it may hold processes and still enable
    // controllers for its children.
    if !tree.exists(&own.join("cgroup.type")) {
        if tree.writable(own)
            && (names_pids(tree.read(&subtree).as_deref()) || tree.writable(&subtree))
        {
            return Ok(at(own, None));
        }
        return Err(format!(
            "cgroup v2: the root cgroup {} is not writable by this user",
            own.display()
        ));
    }
    let parent = own.parent().filter(|_| own != point);
    let beside = || match parent {
        None => Err(format!(
            "it has no parent cgroup in view (the root of {})",
            point.display()
        )),
        Some(p) if !names_pids(tree.read(&p.join("cgroup.subtree_control")).as_deref()) => {
            Err(format!(
                "its parent {} does not enable pids for its children",
                p.display()
            ))
        }
        Some(p) => match not_delegated(tree, point, p) {
            Some(why) => Err(format!("its parent {why}")),
            None => Ok(at(p, None)),
        },
    };
    let name = leaf_name(pid);
    if own
        .file_name()
        .is_some_and(|n| n.as_bytes() == name.as_bytes())
    {
        // Moved there by an earlier session of this pod.
        return beside().map_err(|e| {
            format!(
                "cgroup v2: the pod's cgroup {} is its own leaf, but {e}",
                own.display()
            )
        });
    }
    let here =
        if let Some(why) = not_delegated(tree, point, own) {
            format!("the pod's cgroup {why}")
        } else if !tree.writable(&subtree) {
            format!("{} is not writable by this user", subtree.display())
        } else {
            let others: Vec<u32> = tree
                .read(&own.join("cgroup.procs"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse::<u32>().ok())
                .filter(|p| !tree.ours(*p))
                .collect();
            if others.is_empty() {
                return Ok(at(own, Some(own.join(name))));
            }
            let shown: Vec<String> = others.iter().take(5).map(u32::to_string).collect();
            format!(
            "the pod's cgroup {} holds processes that are not the pod's (pid {}{}), and cgroup \
             v2 lets only a cgroup without processes enable pids for its children",
            own.display(),
            shown.join(", "),
            if others.len() > shown.len() { ", …" } else { "" }
        )
        };
    beside().map_err(|e| format!("cgroup v2: {here}; {e}; {V2_HINT}"))
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
        leaf: None,
    })
}

/// Numbers the sessions of this process.
static SESSIONS: AtomicU64 = AtomicU64::new(0);
/// The prefix of a session's cgroup, `pod-<pid>-<n>`, and of the pod's leaf.
const PREFIX: &str = "pod-";
/// The suffix of the leaf the pod moves itself into on cgroup v2: `pod-<pid>.self`.
const LEAF: &str = ".self";

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
        if let Some(leaf) = &parent.leaf {
            leave_for(&parent.dir, leaf)?;
        }
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
    try_enable_pids(dir).map_err(|e| {
        format!(
            "cannot enable pids in {}: {e}",
            dir.join("cgroup.subtree_control").display()
        )
    })
}

fn try_enable_pids(dir: &Path) -> std::io::Result<()> {
    let file = dir.join("cgroup.subtree_control");
    if names_pids(std::fs::read_to_string(&file).ok().as_deref()) {
        return Ok(());
    }
    std::fs::write(&file, "+pids")
}

/// cgroup v2: moves the pod and its descendants out of its own cgroup `own` into `leaf`, then
/// enables `pids` for `own`'s children, which v2 allows only once `own` holds no process. A
/// process in `own` that is not the pod's stops it (the pod moves no other process); a child
/// the pod forks meanwhile is moved on the next round.
fn leave_for(own: &Path, leaf: &Path) -> Result<(), String> {
    /// Sessions opening at once move the pod one at a time.
    static LEAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = LEAVING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match std::fs::create_dir(leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot make {}: {e}", leaf.display())),
    }
    let into = leaf.join("cgroup.procs");
    let deadline = Instant::now() + LEAVE_WAIT;
    loop {
        let listed = std::fs::read_to_string(own.join("cgroup.procs"))
            .map_err(|e| format!("cannot read {}/cgroup.procs: {e}", own.display()))?;
        for pid in listed.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
            if !Host.ours(pid) {
                return Err(format!(
                    "{} holds process {pid}, which is not the pod's, so cgroup v2 lets it \
                     enable no controller for its children; {V2_HINT}",
                    own.display()
                ));
            }
            match std::fs::write(&into, pid.to_string()) {
                Ok(()) => {}
                // Gone meanwhile.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => {
                    return Err(format!(
                        "cannot move process {pid} into {}: {e}",
                        leaf.display()
                    ))
                }
            }
        }
        match try_enable_pids(own) {
            Ok(()) => return Ok(()),
            // A process is still in `own` (forked while the others moved): another round.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {}
            Err(e) => {
                return Err(format!(
                    "cannot enable pids in {}/cgroup.subtree_control: {e}",
                    own.display()
                ))
            }
        }
    }
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

/// The pid of the pod that made the cgroup `name`: a session's `pod-<pid>-<n>` or a leaf
/// `pod-<pid>.self`.
fn maker(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let pid = match rest.strip_suffix(LEAF) {
        Some(pid) => pid,
        None => {
            let (pid, n) = rest.split_once('-')?;
            n.parse::<u64>().ok()?;
            pid
        }
    };
    pid.parse().ok()
}

/// Removes the cgroups `pod-<pid>-<n>` and `pod-<pid>.self` in `parent` whose pod is gone and
/// which are empty: what a killed pod left.
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(maker) else {
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

    /// A cgroup tree of a test: the files' contents, what is writable and marked delegated,
    /// whether the user is root, and which pids are the pod's.
    #[derive(Default)]
    struct Fake {
        files: std::collections::HashMap<PathBuf, String>,
        writable: std::collections::HashSet<PathBuf>,
        marked: std::collections::HashSet<PathBuf>,
        root: bool,
        ours: Vec<u32>,
    }

    const POINT: &str = "/sys/fs/cgroup";
    const POD: u32 = 100;

    impl Fake {
        /// A non-root cgroup `dir` (under [`POINT`]) with `pids` available, holding `procs`,
        /// enabling `subtree` for its children.
        fn cgroup(mut self, dir: &str, procs: &[u32], subtree: &str) -> Fake {
            let d = Path::new(POINT).join(dir);
            let file = |f: &str| d.join(f);
            self.files
                .insert(file("cgroup.controllers"), "cpu memory pids\n".into());
            self.files.insert(file("cgroup.type"), "domain\n".into());
            self.files
                .insert(file("cgroup.subtree_control"), format!("{subtree}\n"));
            let listed: Vec<String> = procs.iter().map(u32::to_string).collect();
            self.files.insert(file("cgroup.procs"), listed.join("\n"));
            self
        }

        /// `dir`, its `cgroup.procs` and `cgroup.subtree_control` writable by this user.
        fn writable(mut self, dir: &str) -> Fake {
            let d = Path::new(POINT).join(dir);
            for f in ["cgroup.procs", "cgroup.subtree_control"] {
                self.writable.insert(d.join(f));
            }
            self.writable.insert(d);
            self
        }

        fn marked(mut self, dir: &str) -> Fake {
            self.marked.insert(Path::new(POINT).join(dir));
            self
        }

        fn root(mut self) -> Fake {
            self.root = true;
            self
        }

        /// The pod (and `POD + 1`, its child) are the pod's.
        fn pod(mut self) -> Fake {
            self.ours = vec![POD, POD + 1];
            self
        }

        fn choose(&self, own: &str) -> Result<Parent, String> {
            choose_v2(self, Path::new(POINT), &Path::new(POINT).join(own), POD)
        }
    }

    impl Tree for Fake {
        fn read(&self, file: &Path) -> Option<String> {
            self.files.get(file).cloned()
        }
        fn exists(&self, path: &Path) -> bool {
            self.files.contains_key(path)
        }
        fn writable(&self, path: &Path) -> bool {
            self.writable.contains(path)
        }
        fn marked(&self, dir: &Path) -> bool {
            self.marked.contains(dir)
        }
        fn root(&self) -> bool {
            self.root
        }
        fn ours(&self, pid: u32) -> bool {
            self.ours.contains(&pid)
        }
    }

    fn v2(dir: &str, leaf: Option<&str>) -> Parent {
        Parent {
            dir: Path::new(POINT).join(dir),
            version: Version::V2,
            leaf: leaf.map(|l| Path::new(POINT).join(l)),
        }
    }

    const USER: &str = "user.slice/user-1000.slice/user@1000.service/app.slice";
    const SCOPE: &str = "user.slice/user-1000.slice/user@1000.service/app.slice/run-r1.scope";
    const ROOT_SCOPE: &str = "system.slice/run-r2.scope";

    #[test]
    fn a_delegated_cgroup_of_the_pods_own_gets_a_leaf_for_the_pod() {
        let tree = Fake::default()
            .pod()
            .cgroup(USER, &[], "pids")
            .cgroup(SCOPE, &[POD, POD + 1], "")
            .writable(SCOPE);
        let leaf = format!("{SCOPE}/pod-{POD}.self");
        assert_eq!(tree.choose(SCOPE), Ok(v2(SCOPE, Some(&leaf))));
        // The pod's later sessions, from its leaf: beside it, once the first enabled pids.
        let tree = tree.cgroup(&leaf, &[POD], "");
        let err = tree.choose(&leaf).expect_err("pids not enabled");
        assert!(err.contains("is its own leaf, but its parent"), "{err}");
        let tree = tree.cgroup(SCOPE, &[], "pids");
        assert_eq!(tree.choose(&leaf), Ok(v2(SCOPE, None)));
    }

    #[test]
    fn a_process_not_the_pods_sends_the_session_beside_or_nowhere() {
        // A test harness, the pod's parent, shares the user's delegated scope.
        let tree = Fake::default()
            .pod()
            .cgroup(USER, &[], "memory pids")
            .writable(USER)
            .cgroup(SCOPE, &[7, POD], "")
            .writable(SCOPE);
        assert_eq!(tree.choose(SCOPE), Ok(v2(USER, None)));
        // The same without pids enabled in the parent: nowhere, and why in each place.
        let tree = tree.cgroup(USER, &[], "memory");
        let err = tree.choose(SCOPE).expect_err("no place");
        assert!(err.contains("not the pod's (pid 7)"), "{err}");
        assert!(err.contains("does not enable pids"), "{err}");
        assert!(err.contains("Delegate=yes"), "{err}");
    }

    #[test]
    fn a_cgroup_not_delegated_to_this_user_is_not_written() {
        // A user's ssh session: neither the scope nor its slice is the user's.
        let ssh = "user.slice/user-1000.slice/session-3.scope";
        let tree = Fake::default()
            .pod()
            .cgroup("user.slice/user-1000.slice", &[], "pids")
            .cgroup(ssh, &[POD], "");
        let err = tree.choose(ssh).expect_err("not delegated");
        assert!(err.contains("session-3.scope is not writable"), "{err}");
        assert!(err.contains("user-1000.slice is not writable"), "{err}");
        // Root may write both, but systemd delegated neither.
        let err = tree
            .writable(ssh)
            .writable("user.slice/user-1000.slice")
            .root()
            .choose(ssh)
            .expect_err("root, not delegated");
        assert!(err.contains("session-3.scope is not delegated"), "{err}");
        assert!(err.contains("user-1000.slice is not delegated"), "{err}");
    }

    #[test]
    fn root_writes_what_systemd_delegated_or_its_namespaces_root() {
        let tree = Fake::default()
            .pod()
            .root()
            .cgroup("system.slice", &[], "pids")
            .writable("system.slice")
            .cgroup(ROOT_SCOPE, &[POD], "")
            .writable(ROOT_SCOPE)
            .marked(ROOT_SCOPE);
        let leaf = format!("{ROOT_SCOPE}/pod-{POD}.self");
        assert_eq!(tree.choose(ROOT_SCOPE), Ok(v2(ROOT_SCOPE, Some(&leaf))));
        // With another process in the scope: not beside it in system.slice, not delegated.
        let err = tree
            .cgroup(ROOT_SCOPE, &[1, POD], "")
            .choose(ROOT_SCOPE)
            .expect_err("system.slice");
        assert!(err.contains("system.slice is not delegated"), "{err}");
        // A container's cgroup namespace: its root is the container's own cgroup.
        let point = Path::new(POINT);
        let tree = Fake::default()
            .pod()
            .root()
            .cgroup("", &[POD], "")
            .writable("");
        assert_eq!(
            choose_v2(&tree, point, point, POD),
            Ok(v2("", Some(&format!("pod-{POD}.self"))))
        );
    }

    #[test]
    fn the_root_cgroup_holds_the_session_itself() {
        let point = Path::new(POINT);
        let mut tree = Fake::default().pod().writable("");
        tree.files
            .insert(point.join("cgroup.controllers"), "pids\n".into());
        assert_eq!(choose_v2(&tree, point, point, POD), Ok(v2("", None)));
        let tree = Fake {
            writable: Default::default(),
            ..tree
        };
        let err = choose_v2(&tree, point, point, POD).expect_err("not writable");
        assert!(
            err.contains("root cgroup /sys/fs/cgroup is not writable"),
            "{err}"
        );
    }

    #[test]
    fn without_pids_in_the_pods_cgroup_v2_is_not_used() {
        let mut tree = Fake::default()
            .pod()
            .cgroup(SCOPE, &[POD], "")
            .writable(SCOPE);
        tree.files.insert(
            Path::new(POINT).join(SCOPE).join("cgroup.controllers"),
            "memory\n".into(),
        );
        let err = tree.choose(SCOPE).expect_err("no pids");
        assert!(err.contains("pids controller is not available"), "{err}");
        assert!(err.contains("\"memory\""), "{err}");
    }

    #[test]
    fn a_leaf_or_session_is_known_by_its_pods_pid() {
        assert_eq!(maker("pod-12-0"), Some(12));
        assert_eq!(maker("pod-12.self"), Some(12));
        assert_eq!(maker("pod-12-x"), None);
        assert_eq!(maker("pod-12"), None);
        assert_eq!(maker("call-1"), None);
        assert_eq!(leaf_name(12), "pod-12.self");
    }
}
