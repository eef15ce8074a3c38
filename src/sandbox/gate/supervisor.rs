//! The exec gate's supervisor: one thread per gated call that answers each notification of an
//! exec (a thread of the call blocked in the kernel before its exec starts): it finds the
//! process's role, attaches to that one thread until its exec stop, asks the judge, and lets
//! the program run (detached) or kills it and the call. It also reaps the call's first process
//! by its pid.
//!
//! Must not touch: the rules (the judge decides), processes other than the one thread it is
//! attached to and the call's first process (it waits with `__WNOTHREAD`, which sees only its
//! own tracees, and for the first process by its pid).

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};

use super::child::recv_fd;
use super::identity::read_exec;
use super::{basename, lock, wrapped_argv, ExecJudge, Role, Stopped, Verdict};
use crate::sandbox::reaper;

/// What the supervisor knows of one exec'd process (or of the process that forked the one
/// asking).
#[derive(Debug, Clone)]
pub(super) struct Tracee {
    pub(super) role: Role,
    /// The basename of its program.
    pub(super) image: String,
    /// It is the wrapper (`bwrap`), whose exec of the call's command is the call's first shell.
    wrapper: bool,
}

impl Tracee {
    /// A process whose line cannot be followed: held as shell-made, the stricter role.
    fn unknown() -> Tracee {
        Tracee {
            role: Role::Shell,
            image: String::new(),
            wrapper: false,
        }
    }
}

/// A process the supervisor knows, by pid and start time (a recycled pid has another).
#[derive(Debug)]
struct Seen {
    start: u64,
    tracee: Tracee,
}

/// Most processes remembered before the dead ones are forgotten.
const KNOWN_MAX: usize = 4096;
/// Most parents walked to find a process's role.
const WALK_MAX: usize = 64;
/// `SECCOMP_IOCTL_NOTIF_RECV`: `_IOWR('!', 0, struct seccomp_notif)`.
const NOTIF_RECV: libc::c_ulong = 0xC050_2100;
/// `SECCOMP_IOCTL_NOTIF_SEND`: `_IOWR('!', 1, struct seccomp_notif_resp)`.
const NOTIF_SEND: libc::c_ulong = 0xC018_2101;
/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: `_IOW('!', 2, __u64)`.
const NOTIF_ID_VALID: libc::c_ulong = 0x4008_2102;

pub(super) struct Supervisor {
    /// The call's first process (the spawning thread's child, reaped here by its pid), once
    /// the spawn has told it on `socket`.
    root: Option<i32>,
    /// The gate's socket: the listener, then the first process's pid, come on it.
    socket: OwnedFd,
    /// The pid was read (or the stream ended without one: the spawn failed).
    told: bool,
    judge: Arc<dyn ExecJudge>,
    stops: Arc<Mutex<Vec<Stopped>>>,
    root_gone: Arc<Mutex<bool>>,
    /// Where the first process's exit status goes, the moment it is reaped (its descendants
    /// may live on until the call kills them).
    status_tx: Option<tokio::sync::oneshot::Sender<ExitStatus>>,
    /// The first process is listed in the reaper's started processes.
    register: bool,
    /// The basename of the call's own program (`bash`, or `bwrap` in the per-call fall-back).
    own_image: String,
    /// The argv of the wrapped command, when the first process is `bwrap`; taken when the
    /// wrapper runs it (once: an orphan of the call that `bwrap` reaps is no wrapper).
    wrapped: Option<Vec<String>>,
    /// Exec'd processes by pid.
    known: HashMap<i32, Seen>,
    /// The next notification is the call's own first exec.
    first: bool,
    /// An exec was stopped: every later one is refused while the call is killed.
    blocked: bool,
}

/// What the supervisor shares with its [`super::GatedProcess`].
pub(super) struct Shared {
    pub(super) stops: Arc<Mutex<Vec<Stopped>>>,
    pub(super) root_gone: Arc<Mutex<bool>>,
    pub(super) status_tx: tokio::sync::oneshot::Sender<ExitStatus>,
}

/// What `/proc/PID/stat` says of a process.
#[derive(Debug, Clone, Copy)]
struct Stat {
    ppid: i32,
    threads: i64,
    start: u64,
}

/// Reads `/proc/PID/stat`: the parent, the number of threads and the start time.
fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) may hold spaces and parentheses: the fields after its last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // `rest` starts at field 3 (state): ppid is field 4, num_threads 20, starttime 22.
    Some(Stat {
        ppid: fields.get(1)?.parse().ok()?,
        threads: fields.get(17)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// The thread group (process) of thread `tid`.
fn tgid(tid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

fn ptrace(request: libc::c_uint, pid: i32, data: libc::c_long) -> io::Result<()> {
    // SAFETY: ptrace requests without pointers (the data is an option set or a signal).
    let rc = unsafe { libc::ptrace(request, pid, 0, data) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Supervisor {
    /// The supervisor of a call whose first process runs `program` (the command's), reporting
    /// to `call`.
    pub(super) fn new(
        socket: OwnedFd,
        judge: Arc<dyn ExecJudge>,
        call: Shared,
        register: bool,
        program: &std::process::Command,
    ) -> Supervisor {
        Supervisor {
            root: None,
            socket,
            told: false,
            judge,
            stops: call.stops,
            root_gone: call.root_gone,
            status_tx: Some(call.status_tx),
            register,
            own_image: basename(&program.get_program().to_string_lossy()),
            wrapped: wrapped_argv(program),
            known: HashMap::new(),
            first: true,
            blocked: false,
        }
    }

    /// The supervisor thread's body: waits for the listener the call's first process sends on
    /// the socket (or the end of the stream, when the spawn failed before), serves it, and
    /// reaps the first process.
    pub(super) fn serve_call(mut self, quit: &OwnedFd) {
        match recv_fd(self.socket.as_raw_fd(), true) {
            Ok(listener) => self.run(&listener, quit),
            Err(e) => {
                // Nothing of the call may run ungated: it did not get as far as sending its
                // listener (its own error is on its stderr).
                tracing::error!("exec gate: no listener from the call's first process ({e})");
                self.kill_call();
            }
        }
        self.reap_root();
    }

    /// Serves `listener` until no process of the call holds the filter any more (the kernel
    /// says so with `POLLHUP`, Linux 5.8+) and the first process is reaped, or until `quit`
    /// closes (the [`super::GatedProcess`] is gone).
    fn run(&mut self, listener: &OwnedFd, quit: &OwnedFd) {
        let mut pidfd: Option<OwnedFd> = None;
        let mut listening = true;
        while listening || !self.root_reaped() {
            if self.told && pidfd.is_none() {
                pidfd = self.root.and_then(pidfd_open);
            }
            let root_fd = match (&pidfd, self.root_reaped()) {
                (Some(fd), false) => fd.as_raw_fd(),
                _ => -1,
            };
            let mut fds = [quit.as_raw_fd(), -1, -1, root_fd].map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
            if listening {
                fds[1].fd = listener.as_raw_fd();
            }
            if !self.told {
                fds[2].fd = self.socket.as_raw_fd();
            }
            // Once the listening is over, the first process is waited for after the loop
            // (without a pidfd, before Linux 5.3, its end is only seen there).
            let timeout = if listening || !self.told || pidfd.is_some() {
                -1
            } else {
                0
            };
            // SAFETY: poll on four pollfds of this stack.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), 4, timeout) };
            if rc < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                break;
            }
            if rc == 0 || fds[0].revents != 0 {
                // The call is over (its end was dropped): a process still asking gets ENOSYS
                // once the listener is closed.
                break;
            }
            if fds[2].revents != 0 {
                self.read_root();
            }
            if fds[3].revents != 0 {
                self.try_reap_root();
            }
            let news = fds[1].revents;
            if news & libc::POLLIN != 0 {
                self.serve(listener);
            } else if news & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                listening = false;
            }
        }
    }

    /// Reads the first process's pid from the socket, waiting for it: the spawn sends it as
    /// soon as it returns, which it does once the call's own exec is answered. When the stream
    /// ends without one, the spawn failed: there is nothing to reap and no status to send.
    fn read_root(&mut self) {
        if self.told {
            return;
        }
        self.told = true;
        let mut pid: i32 = 0;
        // SAFETY: reads at most 4 bytes into a local.
        let n = unsafe {
            libc::recv(
                self.socket.as_raw_fd(),
                (&mut pid as *mut i32).cast(),
                std::mem::size_of::<i32>(),
                libc::MSG_WAITALL,
            )
        };
        if n == std::mem::size_of::<i32>() as isize && pid > 0 {
            self.root = Some(pid);
        } else {
            self.status_tx = None;
        }
    }

    fn root_reaped(&self) -> bool {
        self.status_tx.is_none()
    }

    /// Reaps the first process if it has exited, under the `root_gone` lock.
    fn try_reap_root(&mut self) {
        self.reap_root_with(libc::WNOHANG);
    }

    /// Waits for the first process and reaps it (the call is over: it was killed or ended).
    fn reap_root(&mut self) {
        self.reap_root_with(0);
    }

    /// `waitpid` on the first process by its pid: it is the spawning thread's child, which any
    /// thread of the pod may reap, and nothing else waits for it (the reaper's sweep spares
    /// listed pids; tokio reaps only its own children).
    fn reap_root_with(&mut self, flags: libc::c_int) {
        self.read_root();
        let Some(root) = self.root.filter(|_| !self.root_reaped()) else {
            return;
        };
        let mut gone = lock(&self.root_gone);
        let mut st: libc::c_int = 0;
        let pid = loop {
            // SAFETY: waitpid on the first process; writes the status.
            let pid = unsafe { libc::waitpid(root, &mut st, flags) };
            if pid < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break pid;
        };
        if pid == root {
            *gone = true;
            drop(gone);
            if self.register {
                reaper::forget_pid(root);
            }
            if let Some(tx) = self.status_tx.take() {
                let _ = tx.send(ExitStatus::from_raw(st));
            }
        } else if pid < 0 {
            // Not ours to wait for any more (ECHILD): report a kill rather than hang the call.
            *gone = true;
            drop(gone);
            if let Some(tx) = self.status_tx.take() {
                let _ = tx.send(ExitStatus::from_raw(libc::SIGKILL));
            }
        }
    }

    /// Receives one notification and answers it.
    fn serve(&mut self, listener: &OwnedFd) {
        // SAFETY: seccomp_notif is plain data; the kernel fills it.
        let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: the ioctl writes one seccomp_notif.
        let rc = unsafe { libc::ioctl(listener.as_raw_fd(), NOTIF_RECV, &mut req) };
        if rc < 0 {
            // ENOENT: the process went away before we read it.
            return;
        }
        let fd = listener.as_raw_fd();
        let tid = req.pid as i32;
        if self.blocked || tid <= 0 {
            respond(fd, req.id, Err(libc::EPERM));
            return;
        }
        let first = std::mem::take(&mut self.first);
        let (pid, before) = self.lineage(tid);
        // The call's own first exec (pod's command, or `bwrap`), and the wrapper's exec of the
        // call's command: made before any process of the call ran, by a process the pod forked
        // (which may be undumpable, so not one to attach to): they run unjudged, as the call's
        // first shell.
        let own = if first {
            Some(Tracee {
                role: Role::Shell,
                image: self.own_image.clone(),
                wrapper: self.wrapped.is_some(),
            })
        } else if before.wrapper {
            self.wrapped.take().map(|argv| Tracee {
                role: Role::Shell,
                image: basename(argv.first().map_or("", String::as_str)),
                wrapper: false,
            })
        } else {
            None
        };
        if let Some(own) = own {
            if let Some(st) = stat(pid) {
                self.remember(pid, st.start, own);
            }
            respond(fd, req.id, Ok(()));
            return;
        }
        let options = libc::PTRACE_O_TRACEEXEC | libc::PTRACE_O_EXITKILL;
        if let Err(e) = ptrace(libc::PTRACE_SEIZE, tid, options as libc::c_long) {
            if !id_valid(fd, req.id) {
                return;
            }
            respond(fd, req.id, Err(libc::EPERM));
            self.stop(
                format!("(pid {tid})"),
                before.image.clone(),
                format!(
                    "the gate could not watch it (ptrace: {e}; a process that made itself \
                     undumpable cannot be watched), so it was refused"
                ),
            );
            return;
        }
        // Go on with the exec; then stop at the first chance: at the exec stop when it loads,
        // or on the way back when it fails.
        respond(fd, req.id, Ok(()));
        let _ = ptrace(libc::PTRACE_INTERRUPT, tid, 0);
        self.settle(tid, pid, &before);
    }

    /// Waits for the first stop (or end) of `tid`, attached and interrupted, and acts on it.
    /// `pid` is its process: a thread's successful exec reports under it. With `__WNOTHREAD`
    /// only this thread's tracees are reported, and `tid` is the only one.
    fn settle(&mut self, tid: i32, pid: i32, before: &Tracee) {
        let flags = libc::__WALL | libc::__WNOTHREAD;
        loop {
            let mut st: libc::c_int = 0;
            // SAFETY: waitpid on this thread's tracees; writes the status.
            let got = unsafe { libc::waitpid(-1, &mut st, flags) };
            if got < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return;
            }
            if got != tid && got != pid {
                continue;
            }
            if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
                // Gone (killed with the call): its parent reaps it.
                return;
            }
            if !libc::WIFSTOPPED(st) {
                continue;
            }
            let event = (st >> 16) & 0xff;
            if event == libc::PTRACE_EVENT_EXEC {
                self.exec(got, before);
                return;
            }
            // The exec failed (or never went on): back to the old program, which runs as
            // before. A signal it stopped for is delivered with the detach.
            let sig = libc::WSTOPSIG(st);
            let deliver = if event == 0 { sig } else { 0 };
            let _ = ptrace(libc::PTRACE_DETACH, got, deliver as libc::c_long);
            return;
        }
    }

    /// At the exec stop of `pid`: decide, then let it run (detached) or stop it.
    fn exec(&mut self, pid: i32, before: &Tracee) {
        let exec = read_exec(pid, before, self.judge.identities());
        let verdict = match &exec {
            Some(exec) => self.judge.judge(exec),
            None => Verdict::Stop(
                "its argv or program could not be read from /proc, so it was stopped".into(),
            ),
        };
        match (verdict, exec) {
            (Verdict::Run, Some(exec)) => {
                let image = basename(&exec.exe.to_string_lossy());
                let role = if before.role == Role::Shell
                    && SHELLS.contains(&image.as_str())
                    && runs_string(&exec.argv)
                {
                    Role::Shell
                } else {
                    Role::Program
                };
                if let Some(st) = stat(pid) {
                    self.remember(
                        pid,
                        st.start,
                        Tracee {
                            role,
                            image,
                            wrapper: false,
                        },
                    );
                }
                let _ = ptrace(libc::PTRACE_DETACH, pid, 0);
            }
            (verdict, exec) => {
                let reason = match verdict {
                    Verdict::Stop(reason) => reason,
                    Verdict::Run => "its argv or program could not be read from /proc".into(),
                };
                let (line, by) = match &exec {
                    Some(e) => (e.line(), e.by.clone()),
                    None => (format!("(pid {pid})"), before.image.clone()),
                };
                // The call first (its shell waits for this process, held in its exec stop, so
                // it runs nothing more), then the process itself, before its first
                // instruction; its end is taken here, as its tracer.
                self.stop(line, by, reason);
                // SAFETY: kill(2) on our tracee in its exec stop: it cannot be reaped by anyone
                // while it is stopped and attached.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                self.await_end(pid);
            }
        }
    }

    /// Records a stopped exec, refuses every later one, and kills the call.
    fn stop(&mut self, line: String, by: String, reason: String) {
        lock(&self.stops).push(Stopped { line, by, reason });
        self.blocked = true;
        self.kill_call();
    }

    fn kill_call(&mut self) {
        self.read_root();
        let gone = lock(&self.root_gone);
        if let Some(root) = self.root {
            reaper::kill_call(root, *gone);
        }
    }

    /// Takes the end of the killed tracee `pid` (as its tracer), so its parent can reap it.
    fn await_end(&mut self, pid: i32) {
        loop {
            let mut st: libc::c_int = 0;
            // SAFETY: waitpid on our tracee; writes the status.
            let got = unsafe { libc::waitpid(pid, &mut st, libc::__WALL | libc::__WNOTHREAD) };
            if got < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if got < 0 || libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
                return;
            }
        }
    }

    /// Who is asking: the process of thread `tid`, and the role and image it has (its own
    /// when it exec'd before, else its nearest known parent's).
    fn lineage(&mut self, tid: i32) -> (i32, Tracee) {
        let Some(mut st) = stat(tid) else {
            return (tid, Tracee::unknown());
        };
        let mut pid = tid;
        if st.threads != 1 {
            // A thread of a process with others: the process is its thread group.
            match tgid(tid)
                .filter(|g| *g != tid)
                .and_then(|g| Some((g, stat(g)?)))
            {
                Some((g, s)) => {
                    pid = g;
                    st = s;
                }
                None if st.threads == 0 => return (tid, Tracee::unknown()),
                None => {}
            }
        }
        if let Some(t) = self.known_as(pid, st.start) {
            return (pid, t);
        }
        // Up the parents to one that exec'd before; each link read again after, so that a
        // parent that died (and whose pid went to another process) is noticed.
        let mut links = Vec::new();
        let (mut child, mut parent) = (pid, st.ppid);
        for _ in 0..WALK_MAX {
            if parent <= 1 {
                break;
            }
            let Some(ps) = stat(parent) else { break };
            links.push((child, parent));
            if let Some(t) = self.known_as(parent, ps.start) {
                let held = links
                    .iter()
                    .all(|(c, p)| stat(*c).is_some_and(|s| s.ppid == *p));
                return (pid, if held { t } else { Tracee::unknown() });
            }
            child = parent;
            parent = ps.ppid;
        }
        (pid, Tracee::unknown())
    }

    fn known_as(&self, pid: i32, start: u64) -> Option<Tracee> {
        self.known
            .get(&pid)
            .filter(|k| k.start == start)
            .map(|k| k.tracee.clone())
    }

    fn remember(&mut self, pid: i32, start: u64, tracee: Tracee) {
        if self.known.len() >= KNOWN_MAX {
            self.known
                .retain(|p, k| stat(*p).is_some_and(|s| s.start == k.start));
        }
        self.known.insert(pid, Seen { start, tracee });
    }
}

/// Answers notification `id`: go on with the system call, or fail it with an errno.
fn respond(listener: RawFd, id: u64, outcome: Result<(), i32>) {
    let resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: match outcome {
            Ok(()) => 0,
            Err(errno) => -errno,
        },
        flags: if outcome.is_ok() {
            libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32
        } else {
            0
        },
    };
    // SAFETY: the ioctl reads one seccomp_notif_resp. ENOENT: the process went away.
    unsafe {
        libc::ioctl(listener, NOTIF_SEND, &resp);
    }
}

/// Whether notification `id` is still pending (its process has not gone away).
fn id_valid(listener: RawFd, id: u64) -> bool {
    // SAFETY: the ioctl reads one u64.
    unsafe { libc::ioctl(listener, NOTIF_ID_VALID, &id) == 0 }
}

/// A pidfd for the first process (Linux 5.3+), to poll for its end.
fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a fresh descriptor nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// The shells whose `-c` strings are the call's own (an exec they make is shell-made).
const SHELLS: &[&str] = &["bash", "sh", "dash", "rbash", "zsh", "ksh", "mksh", "ash"];

/// Whether a shell's argv runs a string (`-c`, also in a group such as `-ec`) rather than a
/// script file.
fn runs_string(argv: &[String]) -> bool {
    for word in argv.iter().skip(1) {
        if word == "--" || !word.starts_with('-') {
            return false;
        }
        if !word.starts_with("--") && word[1..].contains('c') {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn shells_run_strings_not_scripts() {
        assert!(runs_string(&words("bash -c x")));
        assert!(runs_string(&words("sh -ec x")));
        assert!(!runs_string(&words("bash script.sh")));
        assert!(!runs_string(&words("bash -- -c")));
        assert!(!runs_string(&words("bash --norc script")));
    }
}
