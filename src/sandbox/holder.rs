//! The session's namespaces, made once and entered by every call: one `bwrap` per session (the
//! *holder*, running `cat` on a pipe only the pod writes) builds the user, mount, IPC, UTS
//! (and, without a session network namespace, network) namespaces and the mount view of
//! [`super::namespaces::Wrap`]; each call's first process then joins them with `setns` and
//! makes only what must be its own: a PID namespace, and a mount namespace copied from the
//! session's with a fresh `/proc` for that PID namespace.
//!
//! Why: `bwrap` per call paid for a new user and mount namespace each time, building the view
//! and tearing it down (4 to 5 ms per call on an idle 2-core machine, 25 ms under load;
//! docs/performance.md section 8). Joining costs a few `setns` and two forks.
//!
//! One call, in the forked child before `exec` ([`Holder::enter`]):
//! - **A**, the pod's child, already in the call's pids cgroup when there is one (the
//!   `pre_exec` step before this one moves it, while the host's `/sys/fs/cgroup` is still in
//!   view): a session of its own (the reaper's), `PR_SET_PDEATHSIG`, every
//!   descriptor closed but stdio and the namespaces' (so the spawn returns now, and under the
//!   exec gate a `SIGSTOP` lets the tracer set its options before anything forks); into the
//!   session's network namespace, then the holder's outer user namespace and its mount, IPC,
//!   UTS and cgroup namespaces; `unshare(CLONE_NEWPID)`; forks C and waits for it, then ends as D
//!   did (C passes D's wait status back on a pipe: killed by the same signal, or its code).
//! - **C**, PID 1 of the call's PID namespace: its signal handlers reset (none reaches it from
//!   inside); a mount and an IPC namespace of its own (the mount one a copy of the session's,
//!   owned by the same user namespace, so nothing in it is locked), a fresh `/proc` with the
//!   same parts covered read-only as `bwrap` covers (read-only as a whole under the exec gate),
//!   a `devpts` instance and a `/dev/shm` of its own, so no terminal, shared memory or message
//!   queue of one call reaches another or outlives it; forks D, reaps every orphan, and exits when D does, which ends the PID
//!   namespace: nothing of the call outlives it, whatever it forked or however its threads
//!   exited.
//! - **D**, the call's program: into the holder's inner user namespace (where no further user
//!   namespace can be made), back to the working folder, every capability dropped (bounding
//!   set, ambient, effective, permitted, inheritable), `no_new_privs`, the Landlock scope
//!   domain and the seccomp programs; then `exec`.
//!
//! A failure in A, C or D writes one line naming the step and the errno to the call's stderr
//! and exits with 126 before anything of the call ran: fail closed, and say why.
//!
//! Must not touch: the view itself (`namespaces` builds the command line), decisions, the
//! environment (std applies it at `exec`), process lifetimes beyond the call's namespace (the
//! reaper owns the first process).

use std::io::{BufRead, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::sync::Arc;

use super::namespaces::Wrap;
use super::netns::SessionNet;
use super::{domain, reaper, seccomp};

/// The descriptor `bwrap` writes its `--info-fd` report to, in the holder's child.
const INFO_FD: RawFd = 952;
/// The parts of `/proc` `bwrap` covers read-only in every `/proc` it mounts.
const PROC_COVERS: [&std::ffi::CStr; 4] = [
    c"/proc/sys",
    c"/proc/sysrq-trigger",
    c"/proc/irq",
    c"/proc/bus",
];

/// The holder cannot be started.
#[derive(Debug, thiserror::Error)]
pub enum HolderError {
    #[error("cannot start the session's namespaces (bwrap): {0}")]
    Start(std::io::Error),
    #[error("the session's namespaces did not come up: {0}")]
    NotReady(String),
    #[error("cannot open the session's namespace {what}: {source}")]
    Open {
        what: &'static str,
        source: std::io::Error,
    },
}

/// The session's namespaces, held open for as long as the session runs.
#[derive(Debug)]
pub struct Holder {
    /// The holder's outer user namespace: the owner of its mount, IPC, UTS and network ones.
    outer: OwnedFd,
    /// The inner one (`--disable-userns`), where each call's program runs.
    inner: OwnedFd,
    mnt: OwnedFd,
    ipc: OwnedFd,
    uts: OwnedFd,
    /// The holder's cgroup namespace, when it made one (`--unshare-cgroup-try`).
    cgroup: Option<OwnedFd>,
    /// The holder's own network namespace (`network = "deny"` where no session namespace could
    /// be made); `None` when calls use the host's or the session's.
    net: Option<OwnedFd>,
    /// The session's network namespace, entered before the outer user namespace.
    session_net: Option<Arc<SessionNet>>,
    /// `/proc` read-only (the exec gate).
    proc_read_only: bool,
    /// The highest capability number this kernel knows.
    cap_last: i32,
    /// The holder's root folder (`/proc/<pid>/root`): where the pod reaches what the view
    /// mounts (the session's `$TMPDIR` tmpfs, `super::tmpfs`).
    root: OwnedFd,
    /// The holder's stdin: when the pod drops it (or dies), `cat` sees EOF and the holder ends.
    _stdin: std::fs::File,
}

impl Holder {
    /// Starts the holder for `wrap` and waits until its namespaces are made.
    pub fn start(wrap: &Arc<Wrap>, proc_read_only: bool) -> Result<Holder, HolderError> {
        let (stdin_r, stdin_w) = std::io::pipe().map_err(HolderError::Start)?;
        let (out_r, out_w) = std::io::pipe().map_err(HolderError::Start)?;
        let (info_r, info_w) = std::io::pipe().map_err(HolderError::Start)?;
        let mut cmd = wrap.holder_command(INFO_FD);
        cmd.stdin(stdin_r)
            .stdout(out_w)
            .stderr(std::process::Stdio::piped())
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        let info_raw = info_w.as_raw_fd();
        let setup = wrap.clone();
        // SAFETY: the hook makes only async-signal-safe system calls (setsid, prctl, open,
        // dup2, close, setns) and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                reaper::child_setup()?;
                setup.child_setup()?;
                if libc::dup2(info_raw, INFO_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // The thread that starts the holder waits for it: `--die-with-parent` ties the holder to
        // the thread that forked it, so that thread lives exactly as long as the holder.
        let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Option<_>>>(1);
        std::thread::Builder::new()
            .name("pod-sandbox-holder".into())
            .spawn(move || {
                let spawned = reaper::spawn_listed(true, || cmd.spawn());
                drop(cmd);
                let mut child = match spawned {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let pid = i32::try_from(child.id()).unwrap_or(0);
                let _ = tx.send(Ok(child.stderr.take()));
                let _ = child.wait();
                reaper::forget_pid(pid);
            })
            .map_err(HolderError::Start)?;
        let stderr = rx
            .recv()
            .map_err(|_| HolderError::NotReady("the holder's thread ended".into()))?
            .map_err(HolderError::Start)?;
        drop(info_w);
        let mut stdin = std::fs::File::from(OwnedFd::from(stdin_w));
        let stderr = std::cell::RefCell::new(stderr);
        let not_ready = |why: String| {
            let mut err = String::new();
            if let Some(mut e) = stderr.borrow_mut().take() {
                let _ = e.read_to_string(&mut err);
            }
            HolderError::NotReady(format!("{why}: {}", err.trim()))
        };
        // `cat` echoes this line once it runs, which is once bwrap has built everything.
        stdin
            .write_all(b"ready\n")
            .map_err(|e| not_ready(format!("cannot write to it ({e})")))?;
        let mut line = String::new();
        std::io::BufReader::new(std::fs::File::from(OwnedFd::from(out_r)))
            .read_line(&mut line)
            .map_err(|e| not_ready(e.to_string()))?;
        if line != "ready\n" {
            return Err(not_ready("it exited before it was ready".into()));
        }
        let mut info = String::new();
        std::fs::File::from(OwnedFd::from(info_r))
            .read_to_string(&mut info)
            .map_err(|e| not_ready(e.to_string()))?;
        let child = serde_json::from_str::<serde_json::Value>(&info)
            .ok()
            .and_then(|v| v.get("child-pid").and_then(|p| p.as_i64()))
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| not_ready(format!("bwrap reported no child pid ({info:?})")))?;
        let ns = |what: &'static str| {
            std::fs::File::open(format!("/proc/{child}/ns/{what}"))
                .map(OwnedFd::from)
                .map_err(|source| HolderError::Open { what, source })
        };
        let inner = ns("user")?;
        // SAFETY: NS_GET_PARENT on a namespace descriptor returns a new descriptor or -1.
        let outer = unsafe { libc::ioctl(inner.as_raw_fd(), NS_GET_PARENT) };
        if outer < 0 {
            return Err(HolderError::Open {
                what: "user (outer)",
                source: std::io::Error::last_os_error(),
            });
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let outer = unsafe { OwnedFd::from_raw_fd(outer) };
        set_cloexec(&outer);
        let own_net = wrap.own_network();
        // SAFETY: sysconf-free read of a kernel constant file; absent means an old kernel.
        let cap_last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(63);
        let root = std::fs::File::open(format!("/proc/{child}/root"))
            .map(OwnedFd::from)
            .map_err(|source| HolderError::Open {
                what: "root folder",
                source,
            })?;
        Ok(Holder {
            outer,
            inner,
            mnt: ns("mnt")?,
            ipc: ns("ipc")?,
            uts: ns("uts")?,
            cgroup: ns("cgroup")
                .ok()
                .filter(|c| !same_namespace(c, "/proc/self/ns/cgroup")),
            net: if own_net { Some(ns("net")?) } else { None },
            session_net: wrap.session_net(),
            proc_read_only,
            cap_last,
            root,
            _stdin: stdin,
        })
    }

    /// The session's view as the pod reaches it: the holder's root folder.
    pub fn root(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.root.as_fd()
    }

    /// The `pre_exec` step that puts a forked child into the session's namespaces (see the
    /// module header): returns only in D, ready to `exec`. `traced`: the child is the exec
    /// gate's (it already asked to be traced), and stops once before forking so the tracer can
    /// follow the forks. `ruleset` and `filters` are entered in D.
    pub fn enter(
        self: &Arc<Self>,
        traced: bool,
        ruleset: Option<Arc<OwnedFd>>,
        filters: Arc<seccomp::Filters>,
    ) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        let holder = self.clone();
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        move || {
            // Only async-signal-safe system calls from here on, and no allocation: this runs in
            // a child forked from a multi-threaded process.
            holder.run_a(parent, traced, ruleset.as_deref(), &filters);
            Ok(())
        }
    }

    /// A's part; returns only in D.
    fn run_a(
        &self,
        parent: i32,
        traced: bool,
        ruleset: Option<&OwnedFd>,
        filters: &seccomp::Filters,
    ) {
        let mut cwd = [0u8; 4096];
        // SAFETY: (all below) system calls on descriptors we hold and on memory on our stack or
        // prepared before the fork.
        unsafe {
            if libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()).is_null() {
                fail(b"getcwd");
            }
            check(
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL),
                b"pdeathsig",
            );
            if libc::getppid() != parent {
                libc::_exit(126);
            }
            // Nothing of the pod's memory is readable through /proc until the exec.
            check(libc::prctl(libc::PR_SET_DUMPABLE, 0), b"dumpable");
            self.close_others(ruleset);
            if traced {
                // The tracer sets its options at this stop, so every fork below is traced.
                libc::raise(libc::SIGSTOP);
            }
            if let Some(net) = &self.session_net {
                if net.enter().is_err() {
                    fail(b"setns (session network)");
                }
            }
            check(
                libc::setns(self.outer.as_raw_fd(), libc::CLONE_NEWUSER),
                b"setns (user)",
            );
            check(
                libc::setns(self.mnt.as_raw_fd(), libc::CLONE_NEWNS),
                b"setns (mount)",
            );
            check(
                libc::setns(self.ipc.as_raw_fd(), libc::CLONE_NEWIPC),
                b"setns (ipc)",
            );
            check(
                libc::setns(self.uts.as_raw_fd(), libc::CLONE_NEWUTS),
                b"setns (uts)",
            );
            if let Some(cgroup) = &self.cgroup {
                check(
                    libc::setns(cgroup.as_raw_fd(), libc::CLONE_NEWCGROUP),
                    b"setns (cgroup)",
                );
            }
            if let Some(net) = &self.net {
                check(
                    libc::setns(net.as_raw_fd(), libc::CLONE_NEWNET),
                    b"setns (network)",
                );
            }
            check(libc::unshare(libc::CLONE_NEWPID), b"unshare (pid)");
            // C sends D's wait status here, so that A ends as D did (killed by the same signal).
            let mut status = [-1 as RawFd; 2];
            check(libc::pipe2(status.as_mut_ptr(), libc::O_CLOEXEC), b"pipe");
            let c = fork();
            if c < 0 {
                fail(b"fork");
            }
            if c > 0 {
                libc::close(status[1]);
                close_range(0, status[0] - 1);
                close_from(status[0] + 1);
                let mut st: libc::c_int = 0;
                let got = libc::read(
                    status[0],
                    (&mut st as *mut libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>(),
                );
                let code = wait_code(c);
                if got == std::mem::size_of::<libc::c_int>() as isize && libc::WIFSIGNALED(st) {
                    let sig = libc::WTERMSIG(st);
                    let mut dfl: libc::sigaction = std::mem::zeroed();
                    dfl.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(sig, &dfl, std::ptr::null_mut());
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::sigaddset(&mut set, sig);
                    libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                    libc::kill(libc::getpid(), sig);
                }
                libc::_exit(code);
            }
            libc::close(status[0]);
            self.run_c(ruleset, filters, &cwd, status[1]);
        }
    }

    /// C's part (PID 1 of the call's PID namespace); returns only in D.
    fn run_c(
        &self,
        ruleset: Option<&OwnedFd>,
        filters: &seccomp::Filters,
        cwd: &[u8; 4096],
        status: RawFd,
    ) {
        // SAFETY: as in `run_a`.
        unsafe {
            check(
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL),
                b"pdeathsig",
            );
            // The pod's handlers, inherited by the fork, would let the call's processes signal
            // PID 1 (a handled signal reaches an init): none, so none reaches it.
            // The raw call: glibc's `sigaction` refuses its own two (32 and 33).
            let dfl = KernelSigaction::default();
            for sig in 1..=64 {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    libc::syscall(
                        libc::SYS_rt_sigaction,
                        sig,
                        &dfl as *const KernelSigaction,
                        std::ptr::null_mut::<KernelSigaction>(),
                        8usize,
                    );
                }
            }
            // A died before the death signal was set (C's parent is outside its PID namespace,
            // so `getppid` cannot tell): the status pipe has no reader then.
            let mut poll = libc::pollfd {
                fd: status,
                events: libc::POLLOUT,
                revents: 0,
            };
            if libc::poll(&mut poll, 1, 0) < 0 || poll.revents & libc::POLLERR != 0 {
                libc::_exit(126);
            }
            // Its own mount namespace (a fresh /proc, /dev/pts and /dev/shm) and IPC namespace:
            // nothing of one call's terminals, shared memory or message queues reaches another
            // call of the session, or outlives the call.
            check(
                libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWIPC),
                b"unshare (mount, ipc)",
            );
            check(
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ),
                b"mount (private)",
            );
            let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            let ro = if self.proc_read_only {
                libc::MS_RDONLY
            } else {
                0
            };
            check(
                libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    flags | ro,
                    std::ptr::null(),
                ),
                b"mount (/proc)",
            );
            for cover in PROC_COVERS {
                let p = cover.as_ptr();
                if libc::mount(
                    p,
                    p,
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ) != 0
                {
                    // Absent on this kernel (no /proc/bus, say): nothing to cover.
                    continue;
                }
                check(
                    libc::mount(
                        std::ptr::null(),
                        p,
                        std::ptr::null(),
                        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | flags,
                        std::ptr::null(),
                    ),
                    b"mount (/proc covers)",
                );
            }
            // A devpts instance of the call's own (`/dev/ptmx` is bwrap's link to `pts/ptmx`):
            // no other call's terminal is there to open.
            check(
                libc::mount(
                    c"devpts".as_ptr(),
                    c"/dev/pts".as_ptr(),
                    c"devpts".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NOEXEC,
                    c"newinstance,ptmxmode=0666,mode=620".as_ptr().cast(),
                ),
                b"mount (/dev/pts)",
            );
            check(
                libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/dev/shm".as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    c"mode=1777".as_ptr().cast(),
                ),
                b"mount (/dev/shm)",
            );
            let d = fork();
            if d < 0 {
                fail(b"fork");
            }
            if d > 0 {
                close_range(0, status - 1);
                close_from(status + 1);
                // PID 1: reap every orphan; end (and with it the namespace) when D ends.
                loop {
                    let mut st = 0;
                    let w = libc::waitpid(-1, &mut st, libc::__WALL);
                    if w == d {
                        libc::write(
                            status,
                            (&st as *const libc::c_int).cast(),
                            std::mem::size_of::<libc::c_int>(),
                        );
                        libc::_exit(code_of(st));
                    }
                    if w < 0 && *libc::__errno_location() == libc::ECHILD {
                        libc::_exit(126);
                    }
                }
            }
            self.run_d(ruleset, filters, cwd);
        }
    }

    /// D's part: returns, ready to `exec`.
    fn run_d(&self, ruleset: Option<&OwnedFd>, filters: &seccomp::Filters, cwd: &[u8; 4096]) {
        // SAFETY: as in `run_a`.
        unsafe {
            check(
                libc::setns(self.inner.as_raw_fd(), libc::CLONE_NEWUSER),
                b"setns (inner user)",
            );
            check(libc::chdir(cwd.as_ptr().cast()), b"chdir");
            for cap in 0..=self.cap_last {
                check(
                    libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong),
                    b"capability bounding set",
                );
            }
            check(
                libc::prctl(
                    libc::PR_CAP_AMBIENT,
                    libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                    0,
                    0,
                    0,
                ),
                b"ambient capabilities",
            );
            let header = CapHeader {
                version: LINUX_CAPABILITY_VERSION_3,
                pid: 0,
            };
            let data = [CapData::default(); 2];
            check(
                libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as libc::c_int,
                b"capset",
            );
            check(
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
                b"no_new_privs",
            );
            if let Some(ruleset) = ruleset {
                if domain::enter(ruleset).is_err() {
                    fail(b"landlock");
                }
            }
            if filters.install().is_err() {
                fail(b"seccomp");
            }
        }
    }

    /// Closes every descriptor but stdio, the namespaces' and `keep` (std's error pipe with
    /// them: the spawn returns once the namespaces are entered).
    fn close_others(&self, keep: Option<&OwnedFd>) {
        let mut fds: [RawFd; 10] = [-1; 10];
        let mut n = 0;
        let net = self.session_net.as_ref().map(|s| s.fds());
        for fd in [
            Some(self.outer.as_raw_fd()),
            Some(self.inner.as_raw_fd()),
            Some(self.mnt.as_raw_fd()),
            Some(self.ipc.as_raw_fd()),
            Some(self.uts.as_raw_fd()),
            self.cgroup.as_ref().map(|f| f.as_raw_fd()),
            self.net.as_ref().map(|f| f.as_raw_fd()),
            net.map(|n| n.0),
            net.map(|n| n.1),
            keep.map(|f| f.as_raw_fd()),
        ]
        .into_iter()
        .flatten()
        {
            fds[n] = fd;
            n += 1;
        }
        let kept = &mut fds[..n];
        kept.sort_unstable();
        let mut from: RawFd = 3;
        for &fd in kept.iter() {
            if fd >= from {
                close_range(from, fd - 1);
                from = fd + 1;
            }
        }
        close_from(from);
    }
}

/// The kernel's `struct sigaction` for `rt_sigaction` (handler, flags, restorer, mask).
#[repr(C)]
#[derive(Default)]
struct KernelSigaction {
    handler: usize,
    flags: libc::c_ulong,
    restorer: usize,
    mask: u64,
}

/// `NS_GET_PARENT` from `<linux/nsfs.h>`: `_IO(0xb7, 0x2)`.
const NS_GET_PARENT: libc::c_ulong = 0xb702;
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Whether the namespace `fd` is the one `path` (a `/proc/self/ns/…` link) names.
fn same_namespace(fd: &OwnedFd, path: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let ours = std::fs::metadata(path).map(|m| (m.dev(), m.ino()));
    let Ok(fd) = fd.try_clone() else {
        return false;
    };
    let theirs = std::fs::File::from(fd)
        .metadata()
        .map(|m| (m.dev(), m.ino()));
    matches!((ours, theirs), (Ok(a), Ok(b)) if a == b)
}

fn set_cloexec(fd: &OwnedFd) {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
    }
}

/// A plain fork (`clone` with `SIGCHLD`), without glibc's `fork` handlers, which take locks a
/// thread of the parent may have held at the first fork.
fn fork() -> libc::pid_t {
    // SAFETY: clone without CLONE_VM: the child gets a copy of everything, as with fork(2).
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        ) as libc::pid_t
    }
}

fn close_range(first: RawFd, last: RawFd) {
    if first > last {
        return;
    }
    // SAFETY: closes descriptors of this (forked) process only.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first as u32, last as u32, 0u32) };
    if rc != 0 {
        // Before Linux 5.9: one by one, up to a sane bound.
        for fd in first..=last.min(65535) {
            // SAFETY: as above.
            unsafe {
                libc::close(fd);
            }
        }
    }
}

fn close_from(first: RawFd) {
    close_range(first, RawFd::MAX);
}

/// The exit code a parent passes on for a child's wait status (`bwrap`'s convention: 128 plus
/// the signal for a killed one).
fn code_of(status: libc::c_int) -> libc::c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        126
    }
}

/// Waits for `pid` (retrying on `EINTR`) and returns [`code_of`] its status.
fn wait_code(pid: libc::pid_t) -> libc::c_int {
    loop {
        let mut st = 0;
        // SAFETY: waitpid on our own child; writes the status.
        let w = unsafe { libc::waitpid(pid, &mut st, libc::__WALL) };
        if w == pid {
            return code_of(st);
        }
        // SAFETY: reads this thread's errno.
        if w < 0 && unsafe { *libc::__errno_location() } != libc::EINTR {
            return 126;
        }
    }
}

/// `fail(step)` unless `rc` is 0.
fn check(rc: libc::c_int, step: &[u8]) {
    if rc != 0 {
        fail(step);
    }
}

/// Writes "pod: cannot enter the sandbox: STEP (errno N)" to stderr and exits with 126.
fn fail(step: &[u8]) -> ! {
    // SAFETY: reads this thread's errno.
    let errno = unsafe { *libc::__errno_location() };
    let mut buf = [0u8; 160];
    let mut n = 0;
    for part in [
        b"pod: cannot enter the sandbox: ".as_slice(),
        step,
        b" (errno ",
    ] {
        for &b in part {
            if n < buf.len() - 16 {
                buf[n] = b;
                n += 1;
            }
        }
    }
    let mut digits = [0u8; 12];
    let mut d = 0;
    let mut v = errno.unsigned_abs();
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while d > 0 {
        d -= 1;
        buf[n] = digits[d];
        n += 1;
    }
    buf[n] = b')';
    buf[n + 1] = b'\n';
    n += 2;
    // SAFETY: write(2) and _exit(2) on our own memory.
    unsafe {
        libc::write(2, buf.as_ptr().cast(), n);
        libc::_exit(126);
    }
}
