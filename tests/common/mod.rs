//! A test client for `pod serve`: spawns the real binary on a temporary workspace, speaks either
//! framing over real pipes, records every event, and turns a hang into a test failure (every wait
//! has a timeout). What it keeps of the connection is a [`Conversation`] (`conversation.rs`,
//! shared with the in-memory pod of `tests/engine/`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod conversation;
pub mod provider;

pub use conversation::*;

/// The `POD_MANAGED_DIR` of every pod a test starts without its own managed folder: a folder
/// that does not exist, so the machine's `/etc/pod` never changes what a test sees.
pub const NO_MANAGED_DIR: &str = "/nonexistent/pod-test-managed";

/// `pod trust DIR` with `state_home` as `XDG_STATE_HOME`: the folder trusted as its user would
/// trust it, in that state folder's trust store.
pub fn trust(dir: &Path, state_home: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("trust")
        .arg(dir)
        .env("XDG_STATE_HOME", state_home)
        .env("POD_CONFIG", "")
        .env("POD_MANAGED_DIR", NO_MANAGED_DIR)
        .output()
        .expect("run pod trust");
    assert!(
        out.status.success(),
        "pod trust failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The command that starts `pod`: the binary run by `runner` (its first words), else by the
/// command line `POD_TEST_WRAP` holds (split at spaces), else the binary itself. The tests of
/// cgroup v2 in a VM (`tests/vm/`) start each pod in a cgroup of its own that way
/// (`systemd-run --scope …`, which runs the binary in its own process: the pid a test sees is
/// the pod's).
pub fn pod_command(runner: &[&str]) -> Command {
    let wrap = std::env::var("POD_TEST_WRAP").unwrap_or_default();
    let words: Vec<&str> = if runner.is_empty() {
        wrap.split_whitespace().collect()
    } else {
        runner.to_vec()
    };
    match words.split_first() {
        Some((first, rest)) => {
            let mut command = Command::new(first);
            command.args(rest).arg(env!("CARGO_BIN_EXE_pod"));
            command
        }
        None => Command::new(env!("CARGO_BIN_EXE_pod")),
    }
}

/// A temporary workspace holding `pod.toml`, and a temporary per-user state folder (the pods
/// it spawns get it as `XDG_STATE_HOME`, so session logs never land in the real home).
pub struct Workspace {
    pub dir: tempfile::TempDir,
    pub state: tempfile::TempDir,
}

impl Workspace {
    pub fn new(ask_timeout_secs: u64) -> Workspace {
        Workspace::with_manifest(&manifest_text(ask_timeout_secs))
    }

    pub fn with_manifest(text: &str) -> Workspace {
        Workspace::with_manifest_in(text, &std::env::temp_dir())
    }

    /// [`Workspace::with_manifest`] with its folders in `parent` (for a pod run as another
    /// user, which `$TMPDIR` may not let through).
    pub fn with_manifest_in(text: &str, parent: &Path) -> Workspace {
        let dir = tempfile::tempdir_in(parent).expect("tempdir");
        std::fs::write(dir.path().join("pod.toml"), text).expect("write manifest");
        Workspace {
            dir,
            state: tempfile::tempdir_in(parent).expect("tempdir"),
        }
    }

    /// Trusts this workspace's folder in its state folder's trust store (`pod trust`).
    pub fn trust(&self) {
        trust(self.dir.path(), self.state_home());
    }

    /// The value the pods of this workspace get as `XDG_STATE_HOME`.
    pub fn state_home(&self) -> &Path {
        self.state.path()
    }

    /// This workspace's state folder, as its pods compute it from `XDG_STATE_HOME`.
    pub fn state_dir(&self) -> PathBuf {
        let ws = self.dir.path().canonicalize().expect("canonical workspace");
        self.state_home()
            .join("pod")
            .join(pod::manifest::workspace_key(&ws))
    }

    /// The folder holding this workspace's session logs.
    pub fn sessions_dir(&self) -> PathBuf {
        self.state_dir().join("sessions")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn manifest(&self) -> PathBuf {
        self.path("pod.toml")
    }

    /// The session log files, in the state folder.
    pub fn session_logs(&self) -> Vec<PathBuf> {
        let dir = self.sessions_dir();
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        files
    }
}

/// A running `pod serve` and what it has said so far (its [`Conversation`], which it derefs
/// to: `pod.events`, `pod.call(...)`).
pub struct PodProcess {
    child: Child,
    conversation: Conversation,
}

impl std::ops::Deref for PodProcess {
    type Target = Conversation;

    fn deref(&self) -> &Conversation {
        &self.conversation
    }
}

impl std::ops::DerefMut for PodProcess {
    fn deref_mut(&mut self) -> &mut Conversation {
        &mut self.conversation
    }
}

impl PodProcess {
    pub fn spawn(ws: &Workspace, framing: Framing) -> PodProcess {
        PodProcess::spawn_with(ws, framing, &[])
    }

    pub fn spawn_with(ws: &Workspace, framing: Framing, args: &[&str]) -> PodProcess {
        PodProcess::spawn_full(ws, framing, args, &[], Stdio::inherit())
    }

    /// [`PodProcess::spawn_with`], its stderr (the log) going to `stderr`.
    pub fn spawn_logging(
        ws: &Workspace,
        framing: Framing,
        args: &[&str],
        stderr: Stdio,
    ) -> PodProcess {
        PodProcess::spawn_full(ws, framing, args, &[], stderr)
    }

    /// [`PodProcess::spawn_with`] with extra environment variables (the test switches).
    pub fn spawn_env(
        ws: &Workspace,
        framing: Framing,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> PodProcess {
        PodProcess::spawn_full(ws, framing, args, env, Stdio::inherit())
    }

    /// [`PodProcess::spawn_env`] without `--trust`: the project's folder is trusted only if
    /// the workspace's trust store says so (the trust tests). Every other spawn vouches for the
    /// test's own manifest, as a script that starts pod with its own configuration does.
    pub fn spawn_untrusted(
        ws: &Workspace,
        framing: Framing,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> PodProcess {
        PodProcess::spawn_from(ws, framing, args, env, Stdio::inherit(), false, &[])
    }

    /// [`PodProcess::spawn_env`] run by `runner` (`["runuser", "-u", "nobody", "--"]`: the pod
    /// as another user; its workspace and state folder must be that user's).
    pub fn spawn_run_by(ws: &Workspace, runner: &[&str], env: &[(&str, &str)]) -> PodProcess {
        PodProcess::spawn_from(ws, Framing::Lines, &[], env, Stdio::inherit(), true, runner)
    }

    fn spawn_full(
        ws: &Workspace,
        framing: Framing,
        args: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
    ) -> PodProcess {
        PodProcess::spawn_from(ws, framing, args, env, stderr, true, &[])
    }

    fn spawn_from(
        ws: &Workspace,
        framing: Framing,
        args: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
        trust: bool,
        runner: &[&str],
    ) -> PodProcess {
        let mut child = pod_command(runner)
            .arg("serve")
            .arg("--manifest")
            .arg(ws.manifest())
            .args(trust.then_some("--trust"))
            .args(args)
            // No user configuration unless a test gives one: the developer's own
            // ~/.config/pod/pod.toml must not change what a test sees.
            .env("POD_CONFIG", "")
            // Nor the machine's managed configuration (/etc/pod) unless a test gives one.
            .env("POD_MANAGED_DIR", NO_MANAGED_DIR)
            .envs(env.iter().copied())
            .current_dir(ws.dir.path())
            .env("XDG_STATE_HOME", ws.state_home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn pod serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, incoming) = mpsc::channel();
        std::thread::spawn(move || read_messages(BufReader::new(stdout), framing, tx));
        let stdin = child.stdin.take().expect("stdin");
        PodProcess {
            child,
            conversation: Conversation::new(Box::new(stdin), incoming, framing),
        }
    }

    /// Waits for the process to exit, failing after `timeout`; drains remaining output first.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // Until the reader sees the end of stdout: everything the pod wrote is filed.
                self.drain_to_end();
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("pod did not exit within {timeout:?}");
            }
            // Paces the poll for the exit; the deadline above decides.
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The pod's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The pod's resident set size in KiB (`VmRSS` of `/proc/<pid>/status`).
    pub fn rss_kib(&self) -> u64 {
        rss_kib(self.child.id())
    }

    /// SIGKILL, then reap: the pod gets no chance to flush anything.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PodProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_messages(
    mut out: BufReader<std::process::ChildStdout>,
    framing: Framing,
    tx: mpsc::Sender<Result<Value, String>>,
) {
    loop {
        let body = match framing {
            Framing::Lines => {
                let mut line = String::new();
                match out.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => line,
                }
            }
            Framing::Headers => match read_headed(&mut out) {
                Ok(Some(body)) => body,
                Ok(None) => return,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            },
        };
        let parsed = serde_json::from_str::<Value>(&body).map_err(|e| format!("{e}: {body:?}"));
        if tx.send(parsed).is_err() {
            return;
        }
    }
}

fn read_headed(out: &mut impl BufRead) -> Result<Option<String>, String> {
    let mut length = None;
    loop {
        let mut line = String::new();
        match out.read_line(&mut line) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("content-length") => {
                length = value.trim().parse::<usize>().ok();
            }
            _ => return Err(format!("unexpected header line {line:?}")),
        }
    }
    let length = length.ok_or("missing Content-Length")?;
    let mut body = vec![0; length];
    out.read_exact(&mut body).map_err(|e| e.to_string())?;
    String::from_utf8(body).map(Some).map_err(|e| e.to_string())
}

/// Path helper for reading a session log's text.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until `done` holds, failing the test after [`WAIT`]. For a state nothing announces (a
/// file appearing, a process gone): the poll's pause only paces it, the condition decides.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + *WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The live (not zombie) children of process `pid`, as `/proc` lists them now, but the
/// session's namespace holder (`bwrap … --info-fd N -- cat`, which lives as long as the session
/// and runs nothing of a call: `src/sandbox/holder.rs`).
pub fn live_children(pid: u32) -> Vec<u32> {
    live_processes(pid)
        .into_iter()
        .filter(|child| !is_holder(*child))
        .collect()
}

/// Whether `pid` is a session's namespace holder.
fn is_holder(pid: u32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    args.first().is_some_and(|a| a.ends_with(b"bwrap"))
        && args.iter().any(|a| *a == b"--info-fd")
        && args.ends_with(&[b"--".as_slice(), b"cat", b""])
}

/// The live descendants of `pid` (children, their children, ...), as `/proc` lists them now.
pub fn live_descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for child in live_processes(p) {
            if !out.contains(&child) {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out
}

/// The parent of `pid`, as `/proc` shows it now.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The live (not zombie) children of `pid`, the holder included.
fn live_processes(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // The command name is in parentheses and may hold anything: fields follow the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let zombie = matches!(fields.first(), Some(&"Z") | Some(&"X"));
        if !zombie && fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid) {
            found.push(child);
        }
    }
    found
}

/// `VmRSS` of a process in KiB (0 when it cannot be read).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
