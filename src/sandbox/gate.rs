//! The exec gate: every `execve` (and `execveat`) a gated call's processes make is stopped after
//! the kernel loaded the new image and before its first instruction, and decided on its real
//! argv and its real program.
//!
//! How (docs/permissions.md, "The exec gate"; docs/architecture.md, "The exec gate"): one tracer
//! thread per gated call. The thread spawns the call's first process itself (a
//! `std::process::Command`), whose `pre_exec` asks to be traced by it (`PTRACE_TRACEME`), enters
//! the sandbox, and stacks a seccomp filter (`filters`) that refuses `ptrace`,
//! `process_vm_writev` and `clone(CLONE_UNTRACED)` and makes `clone3` fail with `ENOSYS` (libc
//! falls back to `clone`, which tracing follows). At the stop after that first exec the thread
//! sets `PTRACE_O_TRACEEXEC | TRACEFORK | TRACEVFORK | TRACECLONE | EXITKILL`, so every
//! descendant is traced from its first instruction, and waits with `waitpid(-1, __WALL |
//! __WNOTHREAD)`: only its own child and tracees, never the pod's other children (tokio's, the
//! MCP servers', hooks').
//!
//! At `PTRACE_EVENT_EXEC` the other threads of the process are gone and the new image is
//! mapped: argv is read from `/proc/PID/cmdline` and the program from `/proc/PID/exe`, memory
//! nothing else can change any more (no process of the call may ptrace or `process_vm_writev`,
//! and the Landlock domain refuses writes to `/proc/PID/mem`). The [`ExecJudge`] the caller
//! gives decides; a stopped exec is killed there, before it ran anything, and the rest of the
//! call is killed with it.
//!
//! Roles ([`Role`]): an exec made by one of the call's own shells (the first `bash`, its
//! subshells, a shell it started with `-c`) is [`Role::Shell`]; anything else (what `make`,
//! `find -exec`, `xargs`, a git hook or a script runs) is [`Role::Program`]. A fork inherits its
//! parent's role. What the roles mean for the decision is the judge's (the runtime's).
//!
//! Must not touch: decisions themselves (the judge, from the permission engine), the output of
//! the call, other children of the pod (only this thread's child and tracees are waited for).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, OnceLock};

use super::reaper;

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

/// Whether the gate works on this machine (ptrace allowed, seccomp filters installable),
/// probed once by tracing `true`.
pub fn available() -> Result<(), GateUnavailable> {
    static PROBE: OnceLock<Result<(), GateUnavailable>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            filters().map_err(|e| GateUnavailable(e.clone()))?;
            // On a thread of its own: the caller may be inside the async runtime.
            std::thread::spawn(probe)
                .join()
                .unwrap_or_else(|_| Err(GateUnavailable("the probe panicked".into())))
        })
        .clone()
}

/// Traces `true` and checks that it ran.
fn probe() -> Result<(), GateUnavailable> {
    #[derive(Debug)]
    struct AllowAll;
    impl ExecJudge for AllowAll {
        fn judge(&self, _: &Exec) -> Verdict {
            Verdict::Run
        }
    }
    let mut cmd = std::process::Command::new("true");
    trace_me(&mut cmd);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let (pid, rx, _stops, _gone) = start(cmd, Arc::new(AllowAll), false)
        .map_err(|e| GateUnavailable(format!("ptrace failed ({e})")))?;
    match rx.blocking_recv() {
        Ok(st) if st.success() => Ok(()),
        Ok(st) => Err(GateUnavailable(format!(
            "a traced `true` (pid {pid}) ended with {st}"
        ))),
        Err(_) => Err(GateUnavailable("the tracer thread ended early".into())),
    }
}

/// The seccomp filters every gated process gets (built once): the first refuses `ptrace`,
/// `process_vm_writev` and `clone` with `CLONE_UNTRACED` (`EPERM`), the second makes `clone3`
/// fail with `ENOSYS`. The x32 numbers of the same calls are refused too.
fn filters() -> Result<&'static [seccompiler::BpfProgram], &'static String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    use std::collections::BTreeMap;
    static FILTERS: OnceLock<Result<Vec<seccompiler::BpfProgram>, String>> = OnceLock::new();
    FILTERS
        .get_or_init(|| {
            let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH)
                .map_err(|e| format!("seccomp: {e}"))?;
            let x32 = |nr: i64| -> Vec<i64> {
                if cfg!(target_arch = "x86_64") {
                    vec![nr]
                } else {
                    Vec::new()
                }
            };
            let untraced = || -> Result<SeccompRule, String> {
                let flag = libc::CLONE_UNTRACED as u64;
                SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(flag),
                    flag,
                )
                .and_then(|c| SeccompRule::new(vec![c]))
                .map_err(|e| format!("seccomp: {e}"))
            };
            let mut eperm: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            eperm.insert(libc::SYS_ptrace, Vec::new());
            eperm.insert(libc::SYS_process_vm_writev, Vec::new());
            eperm.insert(libc::SYS_clone, vec![untraced()?]);
            // The x32 ABI's numbers (bit 30 set) of the same calls, where the kernel has it.
            const X32: i64 = 0x4000_0000;
            for nr in x32(X32 | 521).into_iter().chain(x32(X32 | 540)) {
                eperm.insert(nr, Vec::new());
            }
            for nr in x32(X32 | 56) {
                eperm.insert(nr, vec![untraced()?]);
            }
            let mut enosys: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            enosys.insert(libc::SYS_clone3, Vec::new());
            for nr in x32(X32 | 435) {
                enosys.insert(nr, Vec::new());
            }
            let compile = |rules, errno: i32| -> Result<seccompiler::BpfProgram, String> {
                let filter = SeccompFilter::new(
                    rules,
                    SeccompAction::Allow,
                    SeccompAction::Errno(errno as u32),
                    arch,
                )
                .map_err(|e| format!("seccomp: {e}"))?;
                filter.try_into().map_err(|e| format!("seccomp: {e}"))
            };
            Ok(vec![
                compile(eperm, libc::EPERM)?,
                compile(enosys, libc::ENOSYS)?,
            ])
        })
        .as_ref()
        .map(|v| v.as_slice())
}

/// In the forked child before `exec`: asks to be traced by the forking thread (the tracer).
fn traceme() -> io::Result<()> {
    // SAFETY: PTRACE_TRACEME takes no pointers.
    if unsafe { libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// In the forked child, last before `exec`: `no_new_privs` (needed to install a filter without
/// privileges; the sandbox sets it too) and the gate's seccomp filters. No allocation.
fn install(filters: &'static [seccompiler::BpfProgram]) -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    for program in filters {
        let Ok(len) = u16::try_from(program.len()) else {
            return Err(io::Error::from_raw_os_error(libc::E2BIG));
        };
        let prog = libc::sock_fprog {
            len,
            filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
        };
        // SAFETY: the kernel copies the program from a valid pointer and length.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0u32,
                &prog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The first process of a gated call, with everything it starts, traced by a thread of its
/// own. The same lifetime as [`super::CallProcess`]: [`GatedProcess::kill`] and
/// [`GatedProcess::finish`] kill every process of the call; dropping it unfinished kills them.
#[derive(Debug)]
pub struct GatedProcess {
    pid: i32,
    status: Option<tokio::sync::oneshot::Receiver<ExitStatus>>,
    reaped: bool,
    finished: bool,
    stops: Arc<Mutex<Vec<Stopped>>>,
    /// Set (under its lock) by the tracer right before it reaps the first process, so a kill
    /// never hits its pid once it may be recycled.
    root_gone: Arc<Mutex<bool>>,
    /// As [`super::CallProcess::contain`].
    contained: bool,
    /// The first process exited with a code (not by a signal).
    exited: bool,
}

impl GatedProcess {
    /// Spawns `cmd` (prepared by [`super::Sandbox::prepare_std`], its stdio set) under the gate:
    /// every exec it or its descendants make is decided by `judge`.
    pub fn spawn(
        cmd: std::process::Command,
        judge: Arc<dyn ExecJudge>,
    ) -> io::Result<GatedProcess> {
        let (pid, status, stops, root_gone) = start(cmd, judge, true)?;
        Ok(GatedProcess {
            pid,
            status: Some(status),
            reaped: false,
            finished: false,
            stops,
            root_gone,
            contained: false,
            exited: false,
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
            .map_err(|_| io::Error::other("the exec gate's tracer ended without a status"));
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
            // The tracer thread reaps what it traces; the sweep takes the leftovers.
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
);

/// Starts the tracer thread, which spawns `cmd` and traces it; returns the first process's pid
/// once it is started. `register`: the pid goes into the reaper's list of started processes
/// (so no sweep takes it for a leftover).
fn start(
    mut cmd: std::process::Command,
    judge: Arc<dyn ExecJudge>,
    register: bool,
) -> io::Result<Started> {
    let filters = filters().map_err(|e| io::Error::other(e.clone()))?;
    let stops = Arc::new(Mutex::new(Vec::new()));
    let (status_tx, status_rx) = tokio::sync::oneshot::channel();
    let (pid_tx, pid_rx) = std::sync::mpsc::sync_channel::<io::Result<i32>>(1);
    let thread_stops = stops.clone();
    let root_gone = Arc::new(Mutex::new(false));
    let thread_gone = root_gone.clone();
    let wrapped = wrapped_argv(&cmd);
    // SAFETY: the hook makes only async-signal-safe system calls and allocates nothing. Hooks
    // run in the order added: `trace_me`'s and the sandbox's came first, the filters (which
    // refuse ptrace) come last.
    unsafe {
        cmd.pre_exec(move || install(filters));
    }
    std::thread::Builder::new()
        .name("pod-exec-gate".into())
        .spawn(move || {
            // Traced by this very thread: PTRACE_TRACEME makes the forking thread the tracer.
            let mut cmd = cmd;
            let spawned = reaper::spawn_listed(register, || cmd.spawn());
            let child = match spawned {
                Ok(child) => child,
                Err(e) => {
                    let _ = pid_tx.send(Err(e));
                    return;
                }
            };
            let Ok(pid) = i32::try_from(child.id()) else {
                let _ = pid_tx.send(Err(io::Error::other("the started process has no pid")));
                return;
            };
            // The std Child is never waited for: this thread reaps the pid itself.
            drop(child);
            let _ = pid_tx.send(Ok(pid));
            let mut tracer = Tracer::new(pid, judge, thread_stops, thread_gone, wrapped);
            tracer.status_tx = Some(status_tx);
            tracer.register = register;
            tracer.run();
        })?;
    let pid = pid_rx
        .recv()
        .map_err(|_| io::Error::other("the exec gate's tracer thread ended"))??;
    Ok((pid, status_rx, stops, root_gone))
}

/// Adds the `PTRACE_TRACEME` hook to `cmd`; [`GatedProcess::spawn`] needs it added before the
/// sandbox's own hook is added, so call it first ([`super::Sandbox::prepare_std`] does).
pub fn trace_me(cmd: &mut std::process::Command) {
    // SAFETY: ptrace(PTRACE_TRACEME) is async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(traceme);
    }
}

/// The argv a wrapped command's program gets inside the wrapper: when `cmd` runs `bwrap` (the
/// namespace sandbox, `Sandbox::command`), the words after its first `--`. `bwrap`'s own exec of
/// exactly that argv is the call's first shell, as the exec of `bash` is without a wrapper.
/// Otherwise the command's own argv: the first process may still turn out to be a wrapper, one
/// that stops itself before it forks into the session's namespaces ([`super::holder`]), and
/// then its descendant's exec of that argv is the call's first shell.
fn wrapped_argv(cmd: &std::process::Command) -> (Vec<String>, bool) {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if basename(&program) == "bwrap" {
        if let Some(dashes) = args.iter().position(|a| a == "--") {
            let inner = args[dashes + 1..].to_vec();
            if !inner.is_empty() {
                return (inner, true);
            }
        }
    }
    let mut own = vec![program];
    own.extend(args);
    (own, false)
}

/// What the tracer knows of one traced process.
#[derive(Debug, Clone)]
struct Tracee {
    role: Role,
    /// The basename of its program.
    image: String,
    /// It is the wrapper (`bwrap`) or a fork of it that has not exec'd yet.
    wrapper: bool,
}

struct Tracer {
    root: i32,
    judge: Arc<dyn ExecJudge>,
    stops: Arc<Mutex<Vec<Stopped>>>,
    tracees: HashMap<i32, Tracee>,
    /// Children announced by a fork event whose first stop (their SIGSTOP) is still to come.
    expecting: HashSet<i32>,
    /// Children seen stopped before their parent's fork event: held until it comes.
    early: HashSet<i32>,
    options_set: bool,
    root_gone: Arc<Mutex<bool>>,
    killed: bool,
    /// The argv of the wrapped command, for when the first process is a wrapper
    /// ([`wrapped_argv`]).
    wrapped: Vec<String>,
    /// Where the first process's exit status goes, the moment it is reaped (its descendants
    /// may live on, traced, until the call kills them).
    status_tx: Option<tokio::sync::oneshot::Sender<ExitStatus>>,
    /// The first process is listed in the reaper's started processes.
    register: bool,
}

const OPTIONS: libc::c_int = libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_EXITKILL;

fn cont(pid: i32, sig: i32) {
    // SAFETY: ptrace on our own tracee; no pointers (the data is a signal number).
    unsafe {
        libc::ptrace(libc::PTRACE_CONT, pid, 0, sig as libc::c_long);
    }
}

fn event_msg(pid: i32) -> Option<i32> {
    let mut msg: libc::c_ulong = 0;
    // SAFETY: the kernel writes one c_ulong to `msg`.
    let rc = unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, pid, 0, &mut msg) };
    (rc == 0).then(|| i32::try_from(msg).ok()).flatten()
}

/// Whether the stop of `pid` is a group-stop (no siginfo) rather than a signal's delivery.
fn group_stop(pid: i32) -> bool {
    // SAFETY: the kernel writes one siginfo_t.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::ptrace(libc::PTRACE_GETSIGINFO, pid, 0, &mut info) };
    rc != 0
}

impl Tracer {
    fn new(
        root: i32,
        judge: Arc<dyn ExecJudge>,
        stops: Arc<Mutex<Vec<Stopped>>>,
        root_gone: Arc<Mutex<bool>>,
        (wrapped, bwrap): (Vec<String>, bool),
    ) -> Tracer {
        let mut tracees = HashMap::new();
        tracees.insert(
            root,
            Tracee {
                role: Role::Shell,
                image: if bwrap { "bwrap" } else { "bash" }.into(),
                wrapper: bwrap,
            },
        );
        Tracer {
            root,
            judge,
            stops,
            tracees,
            expecting: HashSet::new(),
            early: HashSet::new(),
            options_set: false,
            root_gone,
            killed: false,
            wrapped,
            status_tx: None,
            register: false,
        }
    }

    /// Traces until no tracee is left.
    fn run(mut self) {
        let flags = libc::__WALL | libc::__WNOTHREAD;
        loop {
            // Which tracee has news (left waiting: WNOWAIT); the first process's exit is reaped
            // with `root_gone` locked, the rest as they come. -1 with __WNOTHREAD: only this
            // thread's child and tracees.
            // SAFETY: waitid writes one siginfo_t.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let rc = unsafe {
                libc::waitid(
                    libc::P_ALL,
                    0,
                    &mut info,
                    libc::WEXITED | libc::WSTOPPED | libc::WNOWAIT | flags,
                )
            };
            if rc < 0 {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return;
            }
            // SAFETY: waitid filled in a SIGCHLD siginfo.
            let news = unsafe { info.si_pid() };
            let exited = matches!(
                info.si_code,
                libc::CLD_EXITED | libc::CLD_KILLED | libc::CLD_DUMPED
            );
            let _gone = (news == self.root && exited).then(|| {
                let mut gone = lock(&self.root_gone);
                *gone = true;
                gone
            });
            let mut st: libc::c_int = 0;
            // SAFETY: waitpid on the pid waitid named; writes the status.
            let pid = unsafe { libc::waitpid(news, &mut st, flags) };
            drop(_gone);
            if pid <= 0 {
                continue;
            }
            if libc::WIFEXITED(st) || libc::WIFSIGNALED(st) {
                self.tracees.remove(&pid);
                self.expecting.remove(&pid);
                if pid == self.root {
                    if self.register {
                        reaper::forget_pid(pid);
                    }
                    if let Some(tx) = self.status_tx.take() {
                        let _ = tx.send(ExitStatus::from_raw(st));
                    }
                }
                continue;
            }
            if !libc::WIFSTOPPED(st) {
                continue;
            }
            let sig = libc::WSTOPSIG(st);
            let event = (st >> 16) & 0xff;
            if pid == self.root && !self.options_set {
                // The first stop: the SIGTRAP after the exec of pod's own `bash` or `bwrap`
                // (TRACEME), or the SIGSTOP a wrapper raises before it forks into the session's
                // namespaces (`sandbox::holder`): then its descendant's exec of the command is
                // the call's first shell.
                // SAFETY: ptrace on our tracee with an integer option set.
                unsafe {
                    libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, OPTIONS as libc::c_long);
                }
                self.options_set = true;
                if sig == libc::SIGSTOP {
                    if let Some(root) = self.tracees.get_mut(&pid) {
                        root.wrapper = true;
                        root.image = "pod".into();
                    }
                }
                let own = sig == libc::SIGTRAP || sig == libc::SIGSTOP;
                cont(pid, if own { 0 } else { sig });
                continue;
            }
            if sig == libc::SIGTRAP && event != 0 {
                self.event(pid, event);
                continue;
            }
            if !self.tracees.contains_key(&pid) {
                // A new child stopped before its parent's fork event: hold it until then.
                self.early.insert(pid);
                continue;
            }
            if sig == libc::SIGSTOP && self.expecting.remove(&pid) {
                // Its first stop as a new tracee.
                cont(pid, 0);
                continue;
            }
            let stop_signal = matches!(
                sig,
                libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
            );
            if stop_signal && group_stop(pid) {
                // Tracing without PTRACE_SEIZE cannot hold a group-stop: go on.
                cont(pid, 0);
                continue;
            }
            cont(pid, sig);
        }
    }

    fn event(&mut self, pid: i32, event: i32) {
        match event {
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => {
                if let Some(child) = event_msg(pid) {
                    let parent = self.tracees.get(&pid).cloned().unwrap_or(Tracee {
                        role: Role::Shell,
                        image: String::new(),
                        wrapper: false,
                    });
                    self.tracees.insert(child, parent);
                    if self.early.remove(&child) {
                        cont(child, 0);
                    } else {
                        self.expecting.insert(child);
                    }
                }
                cont(pid, 0);
            }
            libc::PTRACE_EVENT_EXEC => {
                // A thread other than the leader exec'd: its old id is gone.
                if let Some(former) = event_msg(pid).filter(|f| *f != pid) {
                    self.tracees.remove(&former);
                }
                if self.killed {
                    // SAFETY: kill(2) on our stopped tracee (it cannot be reaped by anyone
                    // while it is in a ptrace-stop).
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    return;
                }
                self.exec(pid);
            }
            _ => cont(pid, 0),
        }
    }

    fn exec(&mut self, pid: i32) {
        let before = self.tracees.get(&pid).cloned().unwrap_or(Tracee {
            role: Role::Shell,
            image: String::new(),
            wrapper: false,
        });
        let exec = read_exec(pid, &before, self.judge.identities());
        if let (true, Some(exec)) = (before.wrapper, &exec) {
            if exec.argv == self.wrapped {
                // The wrapper starting the call's own command inside its namespaces: the call's
                // first shell, as pod's own exec of `bash` is without a wrapper.
                let image = basename(&exec.exe.to_string_lossy());
                self.tracees.insert(
                    pid,
                    Tracee {
                        role: Role::Shell,
                        image,
                        wrapper: false,
                    },
                );
                cont(pid, 0);
                return;
            }
        }
        let verdict = match &exec {
            Some(exec) => self.judge.judge(exec),
            None => Verdict::Stop(
                "its argv or program could not be read from /proc, so it was stopped".into(),
            ),
        };
        match verdict {
            Verdict::Run => {
                let Some(exec) = exec else { return };
                let image = basename(&exec.exe.to_string_lossy());
                let role = if before.role == Role::Shell
                    && SHELLS.contains(&image.as_str())
                    && runs_string(&exec.argv)
                {
                    Role::Shell
                } else {
                    Role::Program
                };
                self.tracees.insert(
                    pid,
                    Tracee {
                        role,
                        image,
                        wrapper: false,
                    },
                );
                cont(pid, 0);
            }
            Verdict::Stop(reason) => {
                // SAFETY: kill(2) on our tracee in its exec stop: it dies before its first
                // instruction.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                let (line, by) = match &exec {
                    Some(e) => (e.line(), e.by.clone()),
                    None => (format!("(pid {pid})"), before.image.clone()),
                };
                lock(&self.stops).push(Stopped { line, by, reason });
                self.killed = true;
                // The call's other processes end too.
                let gone = lock(&self.root_gone);
                reaper::kill_call(self.root, *gone);
            }
        }
    }
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

fn basename(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// Reads one exec from `/proc` at its exec stop.
fn read_exec(pid: i32, before: &Tracee, ids: Option<&Identities>) -> Option<Exec> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut argv: Vec<String> = raw
        .split(|b| *b == 0)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if raw.ends_with(&[0]) {
        argv.pop();
    }
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let exe_base = basename(&exe.to_string_lossy());
    if argv.is_empty() {
        argv.push(exe_base.clone());
    }
    let identity = ids.and_then(|ids| {
        let file = File::open(format!("/proc/{pid}/exe")).ok()?;
        ids.name_of(&file)
    });
    let mut aliases = aliases(&argv, &exe_base, identity.as_deref());
    if is_loader(&exe_base) {
        for alias in loaded(pid, &argv, ids) {
            if alias != argv && !aliases.contains(&alias) {
                aliases.push(alias);
            }
        }
    }
    Some(Exec {
        argv,
        exe,
        role: before.role,
        by: before.image.clone(),
        aliases,
    })
}

/// Whether `exe_base` names the dynamic loader.
fn is_loader(exe_base: &str) -> bool {
    exe_base.starts_with("ld-linux")
        || exe_base.starts_with("ld.so")
        || exe_base.starts_with("ld-musl")
        || exe_base.starts_with("ld64.so")
}

/// What the loader of `pid` may run, by what the file is rather than what its path says: each
/// argument that is not an option, opened as the process sees it (`/proc/PID/cwd`, `root`),
/// named by its real path's last part and by its content ([`Identities`]); so `ld.so ./zz`
/// with `zz` a link to (or a copy of) `rm` is `rm`.
fn loaded(pid: i32, argv: &[String], ids: Option<&Identities>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let rest = argv.get(1..).unwrap_or(&[]);
    for (i, word) in rest.iter().enumerate().take(16) {
        if word.starts_with('-') || word.is_empty() {
            continue;
        }
        // The process's own descriptors and /proc entries are its, not the pod's.
        let own = ["/proc/self/", "/proc/thread-self/", "/dev/fd/"]
            .iter()
            .find_map(|p| word.strip_prefix(p).map(|rest| (*p, rest)));
        let path = if let Some((prefix, rest)) = own {
            if prefix == "/dev/fd/" {
                format!("/proc/{pid}/fd/{rest}")
            } else {
                format!("/proc/{pid}/{rest}")
            }
        } else if word.starts_with('/') {
            format!("/proc/{pid}/root{word}")
        } else {
            format!("/proc/{pid}/cwd/{word}")
        };
        let Ok(file) = File::open(&path) else {
            continue;
        };
        let after = rest.get(i + 1..).unwrap_or(&[]);
        let mut named = |name: String| {
            let mut words = vec![name];
            words.extend_from_slice(after);
            if !out.contains(&words) {
                out.push(words);
            }
        };
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            named(basename(&real.to_string_lossy()));
        }
        if let Some(id) = ids.and_then(|ids| ids.name_of(&file)) {
            named(id);
        }
    }
    out
}

/// The other argvs of one run (see [`Exec::aliases`]).
fn aliases(argv: &[String], exe_base: &str, identity: Option<&str>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let arg0 = basename(argv.first().map_or("", String::as_str));
    let rest = argv.get(1..).unwrap_or(&[]);
    let mut push = |words: Vec<String>| {
        if !words.is_empty() && words.as_slice() != argv && !out.contains(&words) {
            out.push(words);
        }
    };
    let named = |name: &str| {
        let mut words = vec![name.to_string()];
        words.extend_from_slice(rest);
        words
    };
    // A renamed binary or a hard link runs what it is.
    if exe_base != arg0 {
        push(named(exe_base));
    }
    if let Some(id) = identity.filter(|id| *id != arg0) {
        push(named(id));
    }
    let is = |name: &str| exe_base == name || identity == Some(name);
    // busybox runs the applet named by argv[0], or by argv[1] when argv[0] is busybox.
    if is("busybox") && arg0 == "busybox" {
        push(rest.to_vec());
    }
    // The dynamic loader runs the program named by its first argument that is not an option
    // (every later argument is tried too: its options may take values).
    if is_loader(exe_base) {
        for (i, word) in rest.iter().enumerate().take(16) {
            if !word.starts_with('-') {
                push(rest[i..].to_vec());
            }
        }
    }
    // git runs `git-push` (git-core) as `git push`.
    if is("git") {
        if let Some(sub) = arg0.strip_prefix("git-").filter(|s| !s.is_empty()) {
            let mut words = vec!["git".to_string(), sub.to_string()];
            words.extend_from_slice(rest);
            push(words);
        }
    }
    out
}

/// Programs known by their content: the ones deny and ask rules name, as found in the
/// standard folders of programs, so a copy of `rm` under another name is still `rm`.
#[derive(Debug, Default)]
pub struct Identities {
    known: Vec<Known>,
}

#[derive(Debug)]
struct Known {
    name: String,
    path: PathBuf,
    dev: u64,
    ino: u64,
    size: u64,
    hash: OnceLock<Option<Vec<u8>>>,
}

/// Where programs are looked up for [`Identities`].
const BIN_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

impl Identities {
    /// The identities of `names` (program names; paths and patterns are skipped).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Identities {
        let mut known: Vec<Known> = Vec::new();
        for name in names {
            if name.is_empty() || name.contains(['/', '*', '?', '[']) {
                continue;
            }
            for dir in BIN_DIRS {
                let path = Path::new(dir).join(name);
                let Ok(meta) = std::fs::metadata(&path) else {
                    continue;
                };
                if !meta.is_file()
                    || known
                        .iter()
                        .any(|k| k.dev == meta.dev() && k.ino == meta.ino())
                {
                    continue;
                }
                known.push(Known {
                    name: name.to_string(),
                    path,
                    dev: meta.dev(),
                    ino: meta.ino(),
                    size: meta.size(),
                    hash: OnceLock::new(),
                });
            }
        }
        Identities { known }
    }

    /// The known program `file` is: the same file (a hard link), or a copy of one (same size,
    /// same SHA-256).
    fn name_of(&self, file: &File) -> Option<String> {
        let meta = file.metadata().ok()?;
        if let Some(k) = self
            .known
            .iter()
            .find(|k| k.dev == meta.dev() && k.ino == meta.ino())
        {
            return Some(k.name.clone());
        }
        let same_size: Vec<&Known> = self
            .known
            .iter()
            .filter(|k| k.size == meta.size())
            .collect();
        if same_size.is_empty() {
            return None;
        }
        let mine = hash_file(file)?;
        same_size
            .into_iter()
            .find(|k| {
                k.hash
                    .get_or_init(|| File::open(&k.path).ok().and_then(|f| hash_file(&f)))
                    .as_deref()
                    == Some(mine.as_slice())
            })
            .map(|k| k.name.clone())
    }
}

/// SHA-256 of a file's content (at most 256 MiB).
fn hash_file(file: &File) -> Option<Vec<u8>> {
    use sha2::Digest;
    use std::io::Read;
    let mut hasher = sha2::Sha256::new();
    let mut reader = io::BufReader::new(file).take(256 << 20);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Some(hasher.finalize().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn aliases_name_what_the_program_is() {
        assert_eq!(
            aliases(&words("myrm -rf v"), "rm", None),
            [words("rm -rf v")]
        );
        assert_eq!(
            aliases(&words("./x -rf v"), "x", Some("rm")),
            [words("rm -rf v")]
        );
        assert_eq!(
            aliases(&words("busybox rm -rf v"), "busybox", None),
            [words("rm -rf v")]
        );
        assert_eq!(
            aliases(
                &words("/lib64/ld-linux-x86-64.so.2 /bin/rm -rf v"),
                "ld-linux-x86-64.so.2",
                None
            ),
            [words("/bin/rm -rf v"), words("v")]
        );
        assert_eq!(
            aliases(&words("/usr/lib/git-core/git-push origin"), "git", None),
            [words("git origin"), words("git push origin")]
        );
        assert!(aliases(&words("rm -rf v"), "rm", Some("rm")).is_empty());
    }

    #[test]
    fn shells_run_strings_not_scripts() {
        assert!(runs_string(&words("bash -c x")));
        assert!(runs_string(&words("sh -ec x")));
        assert!(!runs_string(&words("bash script.sh")));
        assert!(!runs_string(&words("bash -- -c")));
        assert!(!runs_string(&words("bash --norc script")));
    }

    #[test]
    fn quoted_words_read_back() {
        assert_eq!(quote_words(&words("rm -rf v")), "rm -rf v");
        assert_eq!(
            quote_words(&["a b".to_string(), "it's".to_string(), String::new()]),
            r"'a b' 'it'\''s' ''"
        );
    }

    #[test]
    fn filters_compile() {
        let f = filters().expect("the filters compile on this architecture");
        assert_eq!(f.len(), 2);
    }
}
