//! The exec gate: every `execve` (and `execveat`) a gated call's processes make is stopped after
//! the kernel loaded the new image and before its first instruction, and decided on its real
//! argv and its real program.
//!
//! How (docs/permissions.md, "The exec gate"; docs/architecture.md, "The exec gate"): the
//! call's first process, in its `pre_exec` ([`ChildEnd::install`]), stacks two seccomp filters:
//! one refuses `ptrace` and `process_vm_writev` (so no process of the call can change another's
//! memory), the other turns every `execve` and `execveat` into a *user notification*, whose
//! listener it sends to the pod and closes. Every descendant inherits both, and no process can
//! take them off. One thread per call (the *supervisor*) receives each notification: the
//! process is blocked in the kernel before its exec starts. The supervisor attaches to that one
//! thread (`PTRACE_SEIZE` with `PTRACE_O_TRACEEXEC`), lets the exec go on, and asks it to stop
//! at its next chance (`PTRACE_INTERRUPT`): either the exec loads the new image and the thread
//! stops at `PTRACE_EVENT_EXEC`, before the new program's first instruction, or the exec fails
//! and it stops on its way back to the old program. At the exec stop the other threads of the
//! process are gone and the new image's memory is its own: argv is read from
//! `/proc/PID/cmdline` and the program from `/proc/PID/exe`, memory nothing else can change.
//! The [`ExecJudge`] decides; the supervisor detaches (the program runs, untraced) or kills it
//! there and ends the call.
//!
//! Why not trace every process (the gate's first version): each fork cost two ptrace stops and
//! each child's exit one more (`SIGCHLD` to a traced parent), four wake-ups of the tracer per
//! fork and exec, which on an idle 2-core VM cost +0.3 to 1 ms per exec (docs/performance.md,
//! section 8b). Here a fork costs nothing and an exec one notification and one stop.
//!
//! Roles ([`Role`]): an exec made by one of the call's own shells (the first `bash`, its
//! subshells, a shell it started with `-c`) is [`Role::Shell`]; anything else (what `make`,
//! `find -exec`, `xargs`, a git hook or a script runs) is [`Role::Program`]. A fork inherits its
//! parent's role: the supervisor keeps each exec'd process's role by its pid and start time, and
//! a process that has not exec'd is found by walking its parents up to one it knows (the walk is
//! read again before it is used, so a parent that died and whose pid was reused is noticed); a
//! process whose line it cannot follow is held as shell-made, the stricter role. What the roles
//! mean for the decision is the judge's (the runtime's).
//!
//! The parts, one job each: `child` (the two seccomp programs, what the call's first process
//! installs, and the socket its listener comes back on), `supervisor` (the thread that answers
//! each notification: roles, attaching, deciding, killing), `identity` (what an exec is: its
//! argv, its program and that program's other names, a copied binary known by its content).
//! This file holds the types the runtime sees and a gated call's lifetime.
//!
//! Must not touch: decisions themselves (the judge, from the permission engine), the output of
//! the call, other children of the pod (the supervisor waits only for its own child and the one
//! thread it is attached to).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::reaper;

mod child;
mod identity;
mod supervisor;

pub use child::ChildEnd;
use child::{programs, Programs};
pub use identity::Identities;
use supervisor::Supervisor;

/// Who made an exec (docs/permissions.md, "The exec gate").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// One of the call's own shells: the command line's own commands, its subshells, a
    /// `bash -c` string.
    Shell,
    /// Any other program: what an allowed program runs itself.
    Program,
}

/// One exec, stopped before its first instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    /// The argv the new image got (`/proc/PID/cmdline`), lossy UTF-8.
    pub argv: Vec<String>,
    /// The program the kernel loaded (`/proc/PID/exe`).
    pub exe: PathBuf,
    /// Who made it.
    pub role: Role,
    /// The program that made it (the basename of the image that called `execve`).
    pub by: String,
    /// Other argvs for the same run: the program named by what the executable is (a renamed
    /// or copied binary, a busybox applet, the program the dynamic loader runs, `git-push`
    /// as `git push`). Deny and ask rules apply to each.
    pub aliases: Vec<Vec<String>>,
}

impl Exec {
    /// The argv as one shell-quoted line (what the tool result and the session log show).
    pub fn line(&self) -> String {
        quote_words(&self.argv)
    }
}

/// `words` as a bash line that reads back as exactly those words.
pub fn quote_words(words: &[String]) -> String {
    let quote = |w: &String| {
        let plain = !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b) || b >= 0x80);
        if plain {
            w.clone()
        } else {
            format!("'{}'", w.replace('\'', r"'\''"))
        }
    };
    words.iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// What the judge says about one exec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Run,
    /// Killed before it runs; the text says by which rule (for the tool result).
    Stop(String),
}

/// Decides each exec of a gated call (the runtime's, from the permission engine).
pub trait ExecJudge: Send + Sync + std::fmt::Debug {
    fn judge(&self, exec: &Exec) -> Verdict;
    /// The programs deny and ask rules name, to know a renamed or copied binary by its content.
    fn identities(&self) -> Option<&Identities> {
        None
    }
}

/// An exec the gate stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub line: String,
    pub by: String,
    pub reason: String,
}

/// Why the gate cannot run here.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the exec gate cannot run on this machine: {0}")]
pub struct GateUnavailable(pub String);

/// Whether the gate works on this machine (seccomp user notification and ptrace allowed),
/// probed once by gating `sh -c 'exec /bin/true'`: the exec of `true` is stopped, decided and
/// run.
pub fn available() -> Result<(), GateUnavailable> {
    static PROBE: OnceLock<Result<(), GateUnavailable>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            programs().map_err(|e| GateUnavailable(e.clone()))?;
            // On a thread of its own: the caller may be inside the async runtime.
            std::thread::spawn(probe)
                .join()
                .unwrap_or_else(|_| Err(GateUnavailable("the probe panicked".into())))
        })
        .clone()
}

/// Gates `sh -c 'exec /bin/true'` and checks that the exec of `true` was judged and ran.
fn probe() -> Result<(), GateUnavailable> {
    #[derive(Debug, Default)]
    struct Count(AtomicUsize);
    impl ExecJudge for Count {
        fn judge(&self, _: &Exec) -> Verdict {
            self.0.fetch_add(1, Ordering::SeqCst);
            Verdict::Run
        }
    }
    let judge = Arc::new(Count::default());
    let gate = Gate::new(judge.clone())
        .map_err(|e| GateUnavailable(format!("cannot make its socket ({e})")))?;
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", "exec /bin/true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let end = gate.child_end();
    // SAFETY: `install` makes only async-signal-safe system calls and allocates nothing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || end.install());
    }
    let (pid, rx, stops, _gone, _quit) =
        start(cmd, gate, false).map_err(|e| GateUnavailable(format!("{e}")))?;
    let status = rx
        .blocking_recv()
        .map_err(|_| GateUnavailable("the supervisor thread ended early".into()))?;
    if let Some(stop) = lock(&stops).first() {
        return Err(GateUnavailable(format!(
            "a gated `true` was stopped: {}",
            stop.reason
        )));
    }
    if !status.success() {
        return Err(GateUnavailable(format!(
            "a gated `true` (pid {pid}) ended with {status}"
        )));
    }
    if judge.0.load(Ordering::SeqCst) == 0 {
        return Err(GateUnavailable("no exec of a gated `true` was seen".into()));
    }
    Ok(())
}

/// A gate for one call, before its first process is spawned: the judge and the socket pair
/// over which the process sends its listener.
#[derive(Debug)]
pub struct Gate {
    judge: Arc<dyn ExecJudge>,
    programs: &'static Programs,
    parent: OwnedFd,
    child: OwnedFd,
}

impl Gate {
    pub fn new(judge: Arc<dyn ExecJudge>) -> io::Result<Gate> {
        let programs = programs().map_err(|e| io::Error::other(e.clone()))?;
        let mut fds = [-1 as RawFd; 2];
        // SAFETY: socketpair writes two descriptors into `fds`.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: two fresh descriptors nothing else owns.
        let (parent, child) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(Gate {
            judge,
            programs,
            parent,
            child,
        })
    }

    /// What the call's first process installs ([`ChildEnd::install`]); valid until the spawn.
    pub fn child_end(&self) -> ChildEnd {
        ChildEnd {
            socket: self.child.as_raw_fd(),
            programs: self.programs,
        }
    }
}

/// The first process of a gated call, with everything it starts, its execs decided by a
/// supervisor thread of its own. The same lifetime as [`super::CallProcess`]:
/// [`GatedProcess::kill`] and [`GatedProcess::finish`] kill every process of the call; dropping
/// it unfinished kills them.
#[derive(Debug)]
pub struct GatedProcess {
    pid: i32,
    status: Option<tokio::sync::oneshot::Receiver<ExitStatus>>,
    reaped: bool,
    finished: bool,
    stops: Arc<Mutex<Vec<Stopped>>>,
    /// Set (under its lock) by the supervisor right before it reaps the first process, so a
    /// kill never hits its pid once it may be recycled.
    root_gone: Arc<Mutex<bool>>,
    /// As [`super::CallProcess::contain`].
    contained: bool,
    /// The first process exited with a code (not by a signal).
    exited: bool,
    /// Closed when this goes: the supervisor then stops listening.
    _quit: OwnedFd,
}

impl GatedProcess {
    /// Spawns `cmd` (prepared by [`super::Sandbox::prepare_std`] with `gate`'s
    /// [`Gate::child_end`], its stdio set) under the gate: every exec it or its descendants make
    /// is decided by the gate's judge.
    ///
    /// The program must be an absolute path ([`super::Sandbox::command`] finds it): the first
    /// exec the gate is told of is taken for the call's own, so the child must not search
    /// `PATH` with one failed exec per folder.
    pub fn spawn(cmd: std::process::Command, gate: Gate) -> io::Result<GatedProcess> {
        let (pid, status, stops, root_gone, quit) = start(cmd, gate, true)?;
        Ok(GatedProcess {
            pid,
            status: Some(status),
            reaped: false,
            finished: false,
            stops,
            root_gone,
            contained: false,
            exited: false,
            _quit: quit,
        })
    }

    /// As [`super::CallProcess::contain`]: [`GatedProcess::finish`] skips the sweep when the
    /// first process of a contained call exited with a code.
    pub fn contain(&mut self, contained: bool) {
        self.contained = contained;
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Waits for the first process to exit (its descendants may live on).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let rx = self
            .status
            .as_mut()
            .ok_or_else(|| io::Error::other("the exit status was already taken"))?;
        let status = rx
            .await
            .map_err(|_| io::Error::other("the exec gate's supervisor ended without a status"));
        self.status = None;
        self.reaped = true;
        self.exited = status.as_ref().is_ok_and(|st| st.code().is_some());
        status
    }

    /// Kills every process of the call (see [`super::CallProcess::kill`]).
    pub fn kill(&self) {
        let gone = lock(&self.root_gone);
        reaper::kill_call(self.pid, *gone);
    }

    /// Kills every process of the call, waits for the first one, sweeps leftovers. Returns the
    /// first process's exit status when it had not been waited for.
    pub async fn finish(mut self) -> Option<io::Result<ExitStatus>> {
        {
            let gone = lock(&self.root_gone);
            reaper::kill_call_own(self.pid, *gone);
        }
        let status = if self.reaped {
            None
        } else {
            Some(self.wait().await)
        };
        self.finished = true;
        reaper::sweep_at_end(self.contained && self.exited).await;
        status
    }

    /// The execs the gate stopped, in order.
    pub fn stopped(&self) -> Vec<Stopped> {
        lock(&self.stops).clone()
    }
}

impl Drop for GatedProcess {
    fn drop(&mut self) {
        if !self.finished {
            // The supervisor reaps the first process; the sweep takes the leftovers.
            self.kill();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

type Started = (
    i32,
    tokio::sync::oneshot::Receiver<ExitStatus>,
    Arc<Mutex<Vec<Stopped>>>,
    Arc<Mutex<bool>>,
    OwnedFd,
);

/// Starts the supervisor thread, then spawns `cmd` on this thread (the spawn returns once the
/// call's own exec, which the supervisor answers, is done) and tells the supervisor the first
/// process's pid over the gate's socket, behind the listener the process sent there. `register`:
/// the pid goes into the reaper's list of started processes (so no sweep takes it for a
/// leftover). The first process is this thread's child; the supervisor reaps it by its pid.
fn start(mut cmd: std::process::Command, gate: Gate, register: bool) -> io::Result<Started> {
    if !Path::new(cmd.get_program()).is_absolute() {
        return Err(io::Error::other(format!(
            "the exec gate needs the absolute path of the program to start (got {})",
            cmd.get_program().to_string_lossy()
        )));
    }
    let stops = Arc::new(Mutex::new(Vec::new()));
    let (status_tx, status_rx) = tokio::sync::oneshot::channel();
    let root_gone = Arc::new(Mutex::new(false));
    let (quit_r, quit_w) = std::io::pipe()?;
    let Gate {
        judge,
        parent,
        child,
        ..
    } = gate;
    let call = supervisor::Shared {
        stops: stops.clone(),
        root_gone: root_gone.clone(),
        status_tx,
    };
    let supervisor = Supervisor::new(parent, judge, call, register, &cmd);
    let quit_r = OwnedFd::from(quit_r);
    std::thread::Builder::new()
        .name("pod-exec-gate".into())
        .spawn(move || supervisor.serve_call(&quit_r))?;
    let spawned = reaper::spawn_listed(register, || cmd.spawn());
    drop(cmd);
    let pid = spawned.and_then(|child| {
        i32::try_from(child.id()).map_err(|_| io::Error::other("the started process has no pid"))
    });
    if let Ok(pid) = pid {
        // Behind the listener on the stream (the process sent it before the spawn returned).
        // SAFETY: writes 4 bytes from a local to our own socket.
        let sent = unsafe {
            libc::send(
                child.as_raw_fd(),
                (&pid as *const i32).cast(),
                std::mem::size_of::<i32>(),
                libc::MSG_NOSIGNAL,
            )
        };
        if sent != std::mem::size_of::<i32>() as isize {
            // The supervisor cannot reap it: kill it (it was listed, so the sweep reaps it).
            // SAFETY: kill(2) on our own unreaped child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            drop(child);
            return Err(io::Error::other("cannot hand the call to the exec gate"));
        }
    }
    // Closing ours: the supervisor sees the end of the stream after the pid, or right away
    // when the spawn failed.
    drop(child);
    let pid = pid?;
    Ok((pid, status_rx, stops, root_gone, OwnedFd::from(quit_w)))
}

/// The argv a wrapped command's program gets inside the wrapper: when `cmd` runs `bwrap` (the
/// per-call namespace fall-back), the words after its first `--`. `bwrap`'s own exec of exactly
/// that argv is the call's first shell, as the exec of `bash` is without a wrapper.
fn wrapped_argv(cmd: &std::process::Command) -> Option<Vec<String>> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    if basename(&program) != "bwrap" {
        return None;
    }
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let dashes = args.iter().position(|a| a == "--")?;
    let inner = args[dashes + 1..].to_vec();
    (!inner.is_empty()).then_some(inner)
}

fn basename(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_words_read_back() {
        let words: Vec<String> = ["rm", "-rf", "v"].map(String::from).to_vec();
        assert_eq!(quote_words(&words), "rm -rf v");
        assert_eq!(
            quote_words(&["a b".to_string(), "it's".to_string(), String::new()]),
            r"'a b' 'it'\''s' ''"
        );
    }

    #[test]
    fn the_gate_works_here() {
        // This machine runs the gate's tests; a kernel without user notification or ptrace
        // would fail here with the reason.
        available().expect("the exec gate runs on this machine");
    }
}
