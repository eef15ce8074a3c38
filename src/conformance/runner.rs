//! Runs one requirement: a fresh workspace holding its manifest, a fresh process of the pod
//! command (`sh -c`, in its own process group so the whole group is killed afterwards), the
//! transcript's steps with timeouts, and a one-line reason when it fails.
//!
//! Must not touch: the kit's format (`kit`), printing and exit codes (`mod.rs`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::kit::{Requirement, Step};
use super::matcher::{fill, lookup_path, matches};

/// How long an `expect` waits for its message.
pub const EXPECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the process gets to exit after its stdin closes at the end of a requirement.
const END_GRACE: Duration = Duration::from_secs(1);

/// Longest message quoted in a failure reason.
const QUOTE: usize = 240;

/// A temporary workspace; removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One line the pod wrote: a JSON message, or text that is not JSON.
struct Received {
    message: Result<Value, String>,
    matched: bool,
}

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: mpsc::Receiver<Result<Value, String>>,
    received: Vec<Received>,
    /// Label -> index into `received`.
    labels: HashMap<String, usize>,
}

/// Runs the requirement against a fresh process of `pod_cmd`; `Err` says why it failed.
pub fn run(requirement: &Requirement, pod_cmd: &str) -> Result<(), String> {
    let dir = TempDir(
        std::env::temp_dir().join(format!("pod-conformance-{}", uuid::Uuid::new_v4().simple())),
    );
    std::fs::create_dir_all(&dir.0).map_err(|e| format!("cannot create a workspace: {e}"))?;
    let manifest = dir.0.join("pod.toml");
    std::fs::write(&manifest, &requirement.manifest.1)
        .map_err(|e| format!("cannot write the manifest: {e}"))?;
    let command = pod_cmd.replace("{manifest}", &shell_quote(&manifest.display().to_string()));
    // The pod's per-user state (session logs) goes to the same throwaway folder.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .env("XDG_STATE_HOME", dir.0.join(".state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start `sh -c {command}`: {e}"))?;
    let stdout = child.stdout.take().ok_or("the pod has no stdout pipe")?;
    let (tx, incoming) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if line.trim().is_empty() {
                continue;
            }
            let parsed = serde_json::from_str::<Value>(&line).map_err(|_| line);
            if tx.send(parsed).is_err() {
                return;
            }
        }
    });
    let mut session = Session {
        stdin: child.stdin.take(),
        child,
        incoming,
        received: Vec::new(),
        labels: HashMap::new(),
    };
    let result = requirement
        .steps
        .iter()
        .enumerate()
        .try_for_each(|(i, step)| {
            session
                .step(step)
                .map_err(|why| format!("step {}: {why}", i + 1))
        });
    session.end();
    result
}

impl Session {
    fn step(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::Send(text) => {
                let line = self.fill(text)?;
                let stdin = self.stdin.as_mut().ok_or("send after close")?;
                stdin
                    .write_all(format!("{line}\n").as_bytes())
                    .and_then(|()| stdin.flush())
                    .map_err(|e| format!("cannot write to the pod: {e}"))
            }
            Step::Expect { label, pattern } => {
                let want = self.pattern(pattern)?;
                let deadline = Instant::now() + EXPECT_TIMEOUT;
                loop {
                    if let Some(at) = self.find(&want) {
                        self.received[at].matched = true;
                        if let Some(label) = label {
                            self.labels.insert(label.clone(), at);
                        }
                        return Ok(());
                    }
                    if !self.pump(deadline)? {
                        return Err(format!(
                            "expected {} within {}s; not matched so far: {}",
                            quote(&want.to_string()),
                            EXPECT_TIMEOUT.as_secs(),
                            self.unmatched()
                        ));
                    }
                }
            }
            Step::None { window_ms, pattern } => {
                let want = self.pattern(pattern)?;
                let deadline = Instant::now() + Duration::from_millis(*window_ms);
                while self.pump(deadline)? {}
                match self.find(&want) {
                    Some(at) => Err(format!(
                        "received {} (matches {}, which must not arrive)",
                        self.show(at),
                        quote(&want.to_string())
                    )),
                    None => Ok(()),
                }
            }
            Step::Order(labels) => {
                let mut last: Option<(&str, usize)> = None;
                for label in labels {
                    let at = *self
                        .labels
                        .get(label)
                        .ok_or(format!("order: @{label} matched nothing"))?;
                    if let Some((before, prev)) = last {
                        if at < prev {
                            return Err(format!(
                                "@{label} ({}) arrived before @{before} ({})",
                                self.show(at),
                                self.show(prev)
                            ));
                        }
                    }
                    last = Some((label, at));
                }
                Ok(())
            }
            Step::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(*ms));
                Ok(())
            }
            Step::Close => {
                self.stdin = None;
                Ok(())
            }
            Step::Exit { code, within_ms } => {
                let deadline = Instant::now() + Duration::from_millis(*within_ms);
                loop {
                    match self.child.try_wait() {
                        Ok(Some(status)) => {
                            return match status.code() {
                                Some(c) if c == *code => Ok(()),
                                other => Err(format!("exited with {other:?}, not {code}")),
                            }
                        }
                        Ok(None) if Instant::now() < deadline => {
                            // Keep reading so a pod blocked on a full pipe can finish.
                            let _ = self.pump(Instant::now() + Duration::from_millis(10))?;
                        }
                        Ok(None) => return Err(format!("did not exit within {within_ms} ms")),
                        Err(e) => return Err(format!("cannot wait for the pod: {e}")),
                    }
                }
            }
        }
    }

    /// Receives one line before `deadline`; false when the deadline passed or output ended.
    fn pump(&mut self, deadline: Instant) -> Result<bool, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.incoming.recv_timeout(left) {
            Ok(Ok(message)) => {
                self.received.push(Received {
                    message: Ok(message),
                    matched: false,
                });
                Ok(true)
            }
            Ok(Err(line)) => Err(format!(
                "stdout carried a line that is not JSON: {}",
                quote(&line)
            )),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(false),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // Output ended: wait out the deadline so callers see a timeout, not a spin.
                std::thread::sleep(left.min(Duration::from_millis(20)));
                Ok(false)
            }
        }
    }

    fn find(&self, want: &Value) -> Option<usize> {
        self.received
            .iter()
            .position(|r| !r.matched && r.message.as_ref().is_ok_and(|m| matches(want, m)))
    }

    fn fill(&self, text: &str) -> Result<String, String> {
        let lookup = |name: &str| {
            let (label, path) = name.split_once('.').unwrap_or((name, ""));
            let at = *self.labels.get(label)?;
            let message = self.received.get(at)?.message.as_ref().ok()?;
            lookup_path(message, path).cloned()
        };
        fill(text, &lookup).map_err(|e| e.to_string())
    }

    fn pattern(&self, pattern: &str) -> Result<Value, String> {
        let text = self.fill(pattern)?;
        serde_json::from_str(&text).map_err(|e| format!("bad pattern ({e}): {text}"))
    }

    fn show(&self, at: usize) -> String {
        match self.received.get(at).map(|r| &r.message) {
            Some(Ok(m)) => quote(&m.to_string()),
            Some(Err(line)) => quote(line),
            None => "?".into(),
        }
    }

    fn unmatched(&self) -> String {
        let list: Vec<String> = (0..self.received.len())
            .filter(|&i| !self.received[i].matched)
            .map(|i| self.show(i))
            .collect();
        if list.is_empty() {
            "nothing".into()
        } else {
            list.join(", ")
        }
    }

    /// Closes stdin, gives the process a moment, then kills its whole process group.
    fn end(&mut self) {
        self.stdin = None;
        let deadline = Instant::now() + END_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) on the process group this runner created for the child.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.child.wait();
    }
}

/// `text` in single quotes for `sh`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn quote(text: &str) -> String {
    if text.chars().count() <= QUOTE {
        text.to_string()
    } else {
        let cut: String = text.chars().take(QUOTE).collect();
        format!("{cut}...")
    }
}
