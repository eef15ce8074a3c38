//! No process outlives its call: every process a tool call or a hook starts is found and killed
//! when the call ends, times out or is cancelled, also when it left its process group
//! (`setsid`) or was orphaned (a double fork), and the dead are reaped.
//!
//! How descendants are found (docs/architecture.md, "Processes"): the process a call starts is a
//! *child subreaper*, so while it lives every orphan of the call is re-parented to it rather than
//! to init, and the call's processes are exactly its descendants in `/proc`. When it exits, its
//! remaining descendants are re-parented to the next subreaper up: the pod itself, once
//! [`become_subreaper`] ran (`pod serve` does at start-up). Every child of the pod that the pod
//! did not start through [`CallProcess::spawn`] is therefore a leftover of a call whose first
//! process already exited, and [`sweep`] kills it with all its descendants, then reaps it.
//!
//! Signals go through a pidfd opened after the process was seen in `/proc` and checked to be the
//! same process (its start time), so a recycled pid is never hit.
//!
//! Must not touch: what the processes may do (that is the Landlock domain, [`super::domain`]),
//! the output of calls, tokio's own reaping of the processes it started (only processes the pod
//! did not start are ever waited for here).

use std::collections::HashMap;
use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// Set once this process is a child subreaper.
static SUBREAPER: AtomicBool = AtomicBool::new(false);
/// Pids of the processes started through [`CallProcess::spawn`] that tokio has not reaped yet.
/// Held while spawning and while the sweep lists the pod's children, so a process being started
/// is never mistaken for a leftover.
static STARTED: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// One sweep at a time: two would race to reap the same pid.
static SWEEPING: Mutex<()> = Mutex::new(());
/// The last sweep gave up with leftovers still dying (they are the next sweep's): until one
/// finds nothing, even a contained call sweeps at its end, so that no leftover stays a zombie.
static STRAGGLERS: AtomicBool = AtomicBool::new(false);

/// Rounds of "list, kill" before giving up on processes that keep forking.
const ROUNDS: usize = 50;
/// How long a sweep waits for killed leftovers to die and be reaped; stragglers go to the next.
const REAP_WAIT: Duration = Duration::from_millis(500);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks leaves plain data behind; keep going.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes this process a child subreaper: orphans of the processes it starts come back to it
/// instead of going to init, so [`sweep`] can find and kill them. `pod serve` calls this once at
/// start-up; a program embedding the pod as a library may too, provided every child it starts
/// goes through [`CallProcess::spawn`] (any other child would be taken for a leftover).
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments touches no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    SUBREAPER.store(true, Ordering::SeqCst);
    Ok(())
}

/// Whether [`become_subreaper`] ran.
pub fn is_subreaper() -> bool {
    SUBREAPER.load(Ordering::SeqCst)
}

/// In a forked child before `exec`: a session of its own (so it has no controlling terminal and
/// `kill(-pid)` reaches its group) and subreaper for its descendants (the attribute survives
/// `exec`). Only async-signal-safe system calls, no allocation.
pub fn child_setup() -> io::Result<()> {
    // SAFETY: setsid and prctl take no pointers.
    unsafe {
        if libc::setsid() < 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The first process of a call (a shell or a hook), with everything it starts.
///
/// Dropping it unfinished (a cancelled hook whose future is dropped) kills every process of the
/// call at once and leaves the reaping to a background task.
#[derive(Debug)]
pub struct CallProcess {
    child: Option<Child>,
    pid: i32,
    reaped: bool,
    finished: bool,
    /// The call's cgroup ([`CallProcess::hold`]), removed after its processes.
    limit: Option<Box<super::CallLimit>>,
    /// Its processes are contained ([`CallProcess::contain`]).
    contained: bool,
    /// The first process exited with a code (not by a signal).
    exited: bool,
}

impl CallProcess {
    /// Spawns `cmd` (prepared by [`super::Sandbox::prepare`]) and records its pid.
    pub fn spawn(cmd: &mut Command) -> io::Result<CallProcess> {
        let mut started = lock(&STARTED);
        let child = cmd.spawn()?;
        let pid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| io::Error::other("the started process has no pid"))?;
        started.push(pid);
        Ok(CallProcess {
            child: Some(child),
            pid,
            reaped: false,
            finished: false,
            limit: None,
            contained: false,
            exited: false,
        })
    }

    /// Marks the call's processes as contained in a PID namespace of their own whose init the
    /// first process reaps ([`super::CallLimit::contained`]): when the first process exited with
    /// a code, [`CallProcess::finish`] skips the sweep, whose scan of `/proc` is most of what
    /// ending a call costs (about 1 ms, docs/performance.md section 8). A first process that was
    /// killed may have left its init to the pod, so that end still sweeps; and while an earlier
    /// sweep's stragglers are still dying, every end sweeps, so none of them
    /// stays an unreaped zombie.
    pub fn contain(&mut self, contained: bool) {
        self.contained = contained;
    }

    /// Keeps the call's limit (from [`super::Sandbox::prepare`]) for as long as the process
    /// runs: its cgroup is removed once [`CallProcess::finish`] has ended every process of the
    /// call, or when this is dropped.
    pub fn hold(&mut self, limit: super::CallLimit) {
        self.limit = Some(Box::new(limit));
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The tokio child, for its pipes.
    pub fn child(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    /// Waits for the first process to exit (its descendants may live on).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let child = self
            .child
            .as_mut()
            .ok_or_else(|| io::Error::other("the process was already handed off"))?;
        let status = child.wait().await;
        if let Ok(st) = &status {
            self.reaped = true;
            self.exited = st.code().is_some();
        }
        status
    }

    /// SIGKILLs every process of the call: while the first process lives (stopped first, so it
    /// starts nothing new), all its descendants, also those that left its group; its process
    /// group; the first process; and, in a subreaper, every leftover of calls whose first
    /// process already exited. Reaps nothing: see [`CallProcess::finish`].
    pub fn kill(&self) {
        self.kill_own();
        if is_subreaper() {
            kill_leftovers();
        }
    }

    /// [`CallProcess::kill`] without the leftovers.
    fn kill_own(&self) {
        kill_call_own(self.pid, self.reaped);
    }

    /// Ends the call: kills every process of it, waits for the first one, and (in a subreaper)
    /// sweeps and reaps the leftovers. Returns the first process's exit status when it had not
    /// been waited for yet.
    pub async fn finish(mut self) -> Option<io::Result<ExitStatus>> {
        // The leftovers are the sweep's.
        self.kill_own();
        let status = if self.reaped {
            None
        } else {
            Some(self.wait().await)
        };
        self.finished = true;
        forget(self.pid);
        sweep_at_end(self.contained && self.exited).await;
        if let Some(limit) = self.limit.take() {
            (*limit).remove().await;
        }
        status
    }
}

impl Drop for CallProcess {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.kill();
        let pid = self.pid;
        let runtime = tokio::runtime::Handle::try_current().ok();
        match (self.child.take(), self.reaped, runtime) {
            (Some(mut child), false, Some(runtime)) => {
                runtime.spawn(async move {
                    let _ = child.wait().await;
                    forget(pid);
                    if is_subreaper() {
                        let _ = tokio::task::spawn_blocking(sweep).await;
                    }
                });
            }
            // No runtime: tokio's kill_on_drop reaps it; the pid stays listed, which only means
            // that a recycled pid would be spared by the sweep.
            (Some(_), false, None) => {}
            (_, _, runtime) => {
                forget(pid);
                if let (true, Some(runtime)) = (is_subreaper(), runtime) {
                    runtime.spawn_blocking(sweep);
                }
            }
        }
    }
}

/// Runs `spawn` (a `std::process::Command`'s, for the exec gate's tracer thread) with the list
/// of started processes locked, and lists the new pid when `register`.
pub fn spawn_listed(
    register: bool,
    spawn: impl FnOnce() -> io::Result<std::process::Child>,
) -> io::Result<std::process::Child> {
    let mut started = lock(&STARTED);
    let child = spawn()?;
    if register {
        if let Ok(pid) = i32::try_from(child.id()) {
            started.push(pid);
        }
    }
    Ok(child)
}

/// Takes a pid listed by [`spawn_listed`] off the list once it is reaped.
pub fn forget_pid(pid: i32) {
    forget(pid);
}

/// [`CallProcess::kill`] for a first process known by its pid (the exec gate's): `reaped` says
/// whether it was already waited for (then only its group and the leftovers are killed).
pub fn kill_call(pid: i32, reaped: bool) {
    kill_call_own(pid, reaped);
    if is_subreaper() {
        kill_leftovers();
    }
}

/// [`kill_call`] without the leftovers.
pub fn kill_call_own(pid: i32, reaped: bool) {
    if !reaped {
        // SAFETY: kill(2) on a child of ours that was not reaped: the pid cannot be recycled.
        unsafe {
            libc::kill(pid, libc::SIGSTOP);
        }
        kill_descendants(pid);
    }
    kill_group(pid);
    if !reaped {
        // SAFETY: as above.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

fn forget(pid: i32) {
    lock(&STARTED).retain(|p| *p != pid);
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched. A
        // group with no member left gives ESRCH.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Kills the descendants of `root` in rounds until none is alive (a process may fork between
/// the listing and the kill; its child shows up in the next round).
fn kill_descendants(root: i32) {
    for _ in 0..ROUNDS {
        let table = ProcTable::scan();
        let live: Vec<&Proc> = table
            .descendants(&[root])
            .into_iter()
            .filter(|p| !p.zombie)
            .collect();
        if live.is_empty() {
            return;
        }
        for p in live {
            p.kill();
        }
    }
}

/// The pod's children it did not start (with `STARTED` locked, so a spawn cannot slip in).
fn leftovers() -> (ProcTable, Vec<i32>) {
    let started = lock(&STARTED);
    let table = ProcTable::scan();
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let orphans = table
        .children(me)
        .into_iter()
        .filter(|p| !started.contains(p))
        .collect();
    (table, orphans)
}

/// SIGKILLs every live leftover and every live descendant of one; returns the leftovers (live
/// or dead), empty when there is none.
fn kill_leftovers_once() -> Vec<i32> {
    let (table, orphans) = leftovers();
    let descendants = table.descendants(&orphans);
    let roots = orphans.iter().filter_map(|pid| table.get(*pid));
    for p in roots.chain(descendants).filter(|p| !p.zombie) {
        p.kill();
    }
    orphans
}

/// Kills every leftover and its descendants, in rounds (a process may fork between the listing
/// and the kill; its orphaned child shows up as a leftover in the next round).
fn kill_leftovers() {
    for _ in 0..ROUNDS {
        let (table, orphans) = leftovers();
        let live = orphans
            .iter()
            .filter_map(|pid| table.get(*pid))
            .chain(table.descendants(&orphans))
            .any(|p| !p.zombie);
        if !live {
            return;
        }
        kill_leftovers_once();
    }
}

/// The sweep at the end of a call (in a subreaper), skipped when `contained_and_exited` (see
/// [`CallProcess::contain`]) unless an earlier sweep's stragglers are still pending.
pub(super) async fn sweep_at_end(contained_and_exited: bool) {
    if is_subreaper() && (!contained_and_exited || STRAGGLERS.load(Ordering::SeqCst)) {
        let _ = tokio::task::spawn_blocking(sweep).await;
    }
}

/// Kills every leftover of finished calls (see the module header) with its descendants, and
/// reaps the leftovers. Blocking (it polls for up to half a second while killed processes
/// die; stragglers are left to the next sweep): run it on a blocking thread. With nothing left
/// over it costs one scan of `/proc`. A no-op unless this process is a subreaper.
pub fn sweep() {
    if !is_subreaper() {
        return;
    }
    let _one = lock(&SWEEPING);
    let deadline = Instant::now() + REAP_WAIT;
    loop {
        let orphans = kill_leftovers_once();
        if orphans.is_empty() {
            STRAGGLERS.store(false, Ordering::SeqCst);
            return;
        }
        for pid in orphans {
            let mut status = 0;
            // SAFETY: waitpid on a specific child of ours that tokio does not own (it is not in
            // STARTED); WNOHANG never blocks.
            unsafe {
                libc::waitpid(pid, &mut status, libc::WNOHANG);
            }
        }
        if Instant::now() >= deadline {
            STRAGGLERS.store(true, Ordering::SeqCst);
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Kills every child of this process and all their descendants: for the moment the pod exits,
/// when anything left alive would otherwise go to init.
pub fn kill_all_children() {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    for _ in 0..ROUNDS {
        let table = ProcTable::scan();
        let live: Vec<&Proc> = table
            .descendants(&[me])
            .into_iter()
            .filter(|p| !p.zombie)
            .collect();
        if live.is_empty() {
            return;
        }
        for p in live {
            p.kill();
        }
    }
}

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: i32,
    ppid: i32,
    zombie: bool,
    /// Start time in clock ticks since boot: with the pid, it names one process.
    start: u64,
}

impl Proc {
    fn read(pid: i32) -> Option<Proc> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name is in parentheses and may hold anything; the fields follow the last ')'.
        let (_, rest) = stat.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        Some(Proc {
            pid,
            ppid: fields.get(1)?.parse().ok()?,
            zombie: matches!(fields.first(), Some(&"Z") | Some(&"X")),
            start: fields.get(19)?.parse().ok()?,
        })
    }

    /// SIGKILL, to this very process: through a pidfd once its start time is checked again.
    fn kill(&self) {
        // SAFETY: pidfd_open takes a pid and flags.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid, 0u32) };
        if fd < 0 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
                // Before Linux 5.3: the plain kill, with its tiny recycling window.
                // SAFETY: kill(2) touches no memory.
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                }
            }
            return;
        }
        let Ok(fd) = i32::try_from(fd) else {
            return;
        };
        // SAFETY: `fd` was just returned by pidfd_open and is owned here only.
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        if Proc::read(self.pid).is_some_and(|now| now.start == self.start) {
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

/// A snapshot of every process: who is whose parent.
struct ProcTable {
    procs: HashMap<i32, Proc>,
    children: HashMap<i32, Vec<i32>>,
}

impl ProcTable {
    fn scan() -> ProcTable {
        let mut procs = HashMap::new();
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for entry in dir.flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok())
                else {
                    continue;
                };
                if let Some(p) = Proc::read(pid) {
                    children.entry(p.ppid).or_default().push(pid);
                    procs.insert(pid, p);
                }
            }
        }
        ProcTable { procs, children }
    }

    fn get(&self, pid: i32) -> Option<&Proc> {
        self.procs.get(&pid)
    }

    fn children(&self, pid: i32) -> Vec<i32> {
        self.children.get(&pid).cloned().unwrap_or_default()
    }

    /// Every descendant of `roots` (not the roots themselves).
    fn descendants(&self, roots: &[i32]) -> Vec<&Proc> {
        let mut out = Vec::new();
        let mut stack: Vec<i32> = roots.to_vec();
        while let Some(pid) = stack.pop() {
            for child in self.children.get(&pid).into_iter().flatten() {
                if let Some(p) = self.procs.get(child) {
                    out.push(p);
                    stack.push(*child);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_sees_this_process_and_its_parent() {
        let table = ProcTable::scan();
        let me = std::process::id() as i32;
        let p = table.get(me).expect("this process is in /proc");
        assert!(!p.zombie);
        assert_eq!(p.ppid, std::os::unix::process::parent_id() as i32);
        assert!(table.children(p.ppid).contains(&me));
    }

    #[tokio::test]
    async fn kill_reaches_a_process_that_left_the_group() {
        let marker = format!("{}.{}", 300, std::process::id());
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg(format!("setsid sleep {marker} & sleep 30"))
            .kill_on_drop(true);
        // SAFETY: child_setup only makes async-signal-safe calls.
        unsafe {
            cmd.pre_exec(child_setup);
        }
        let call = CallProcess::spawn(&mut cmd).expect("spawn");
        let find = || {
            let table = ProcTable::scan();
            table
                .descendants(&[call.pid()])
                .iter()
                .filter(|p| !p.zombie)
                .filter(|p| {
                    std::fs::read(format!("/proc/{}/cmdline", p.pid))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
                })
                .count()
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while find() == 0 {
            assert!(Instant::now() < deadline, "the setsid child never started");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        call.kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        while find() > 0 {
            assert!(Instant::now() < deadline, "the setsid child survived");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let status = call.finish().await;
        assert!(status.is_some_and(|s| s.is_ok_and(|s| !s.success())));
    }
}
