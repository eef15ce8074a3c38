//! A test client for `pod serve`: spawns the real binary on a temporary workspace, speaks either
//! framing over real pipes, records every event, and turns a hang into a test failure (every wait
//! has a timeout).
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub mod provider;

/// The `POD_MANAGED_DIR` of every pod a test starts without its own managed folder: a folder
/// that does not exist, so the machine's `/etc/pod` never changes what a test sees.
pub const NO_MANAGED_DIR: &str = "/nonexistent/pod-test-managed";

/// How long any single wait may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(10);

/// The example manifest's rules (`examples/pod.toml`) with a chosen ask timeout:
/// `default_action = "ask"`, `bash "rm *"` deny, `bash "git *"` allow, `*.env` denied.
pub fn manifest_text(ask_timeout_secs: u64) -> String {
    format!(
        r#"[pod]
name = "test"
workspace = "."

[model]
provider = "offline"

[tools]
enabled = ["bash", "read", "file_write", "edit", "grep", "glob"]

[permissions]
default_action = "ask"
ask_timeout_secs = {ask_timeout_secs}

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
message = "Deleting files is not allowed in this workspace."

[[permissions.rule]]
tool = "bash"
pattern = "git *"
action = "allow"

[[permissions.rule]]
tool = "read"
pattern = "*.env"
action = "deny"
"#
    )
}

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
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("pod.toml"), text).expect("write manifest");
        Workspace {
            dir,
            state: tempfile::tempdir().expect("tempdir"),
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Lines,
    Headers,
}

pub const BOTH: [Framing; 2] = [Framing::Lines, Framing::Headers];

/// A running `pod serve` and what it has said so far.
pub struct PodProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: mpsc::Receiver<Result<Value, String>>,
    pub framing: Framing,
    next_id: u64,
    /// Every event's params, in arrival order.
    pub events: Vec<Value>,
    /// Index into `events` of the first event `wait_event` has not looked at.
    cursor: usize,
    /// Responses (and batch arrays) not taken yet, in arrival order.
    replies: VecDeque<Value>,
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
        PodProcess::spawn_from(ws, framing, args, env, Stdio::inherit(), false)
    }

    fn spawn_full(
        ws: &Workspace,
        framing: Framing,
        args: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
    ) -> PodProcess {
        PodProcess::spawn_from(ws, framing, args, env, stderr, true)
    }

    fn spawn_from(
        ws: &Workspace,
        framing: Framing,
        args: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
        trust: bool,
    ) -> PodProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
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
        PodProcess {
            stdin: child.stdin.take(),
            child,
            incoming,
            framing,
            next_id: 0,
            events: Vec::new(),
            cursor: 0,
            replies: VecDeque::new(),
        }
    }

    /// Writes bytes as they are (no framing).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).expect("write to pod");
        stdin.flush().expect("flush to pod");
    }

    /// Writes one message body in this connection's framing.
    pub fn send_raw(&mut self, body: &[u8]) {
        let mut bytes = Vec::new();
        match self.framing {
            Framing::Lines => {
                bytes.extend_from_slice(body);
                bytes.push(b'\n');
            }
            Framing::Headers => {
                bytes.extend(format!("Content-Length: {}\r\n\r\n", body.len()).bytes());
                bytes.extend_from_slice(body);
            }
        }
        self.send_bytes(&bytes);
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// Sends a request with a fresh numeric id; returns the id.
    pub fn start(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and waits for its response (the whole response object).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.response(&json!(id))
    }

    /// The `result` of a request that must succeed.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        match response.get("result") {
            Some(r) => r.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    pub fn initialize(&mut self, approval: bool) -> Value {
        let capabilities = if approval {
            json!({"approval": {}})
        } else {
            json!({})
        };
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientInfo": {"name": "test", "version": "0"},
                   "capabilities": capabilities}),
        )
    }

    /// Receives one message (any kind), failing the test after `timeout`.
    fn receive(&mut self, timeout: Duration) -> Option<Value> {
        match self.incoming.recv_timeout(timeout) {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => panic!("pod wrote something that is not a protocol message: {e}"),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Files one message: events into `events`, everything else into `replies`.
    fn file(&mut self, message: Value) {
        if message.get("method") == Some(&json!("event")) {
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            assert!(message.get("id").is_none(), "events are notifications");
            self.events.push(message["params"].clone());
        } else {
            self.replies.push_back(message);
        }
    }

    fn take_reply(&mut self, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        let at = self.replies.iter().position(pred)?;
        self.replies.remove(at)
    }

    /// Pumps messages until `done` says yes; panics after `WAIT`.
    fn pump_until<T>(&mut self, what: &str, mut done: impl FnMut(&mut Self) -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(t) = done(self) {
                return t;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.receive(left) {
                Some(m) => self.file(m),
                None => panic!(
                    "timed out waiting for {what}; events so far: {:#?}",
                    self.events
                ),
            }
        }
    }

    /// Waits for the response with this id (any JSON id).
    pub fn response(&mut self, id: &Value) -> Value {
        self.pump_until(&format!("the response to id {id}"), |s| {
            s.take_reply(|r| r.is_object() && r.get("id") == Some(id))
        })
    }

    /// Waits for the next message without a usable id (an `id: null` error or a batch array).
    pub fn next_other(&mut self) -> Value {
        self.pump_until("a response without id", |s| {
            s.take_reply(|r| r.is_array() || r["id"].is_null())
        })
    }

    /// Waits for the next non-event message of any kind.
    pub fn next_reply(&mut self) -> Value {
        self.pump_until("a response", |s| s.replies.pop_front())
    }

    /// Waits for the next not-yet-seen event matching `pred`; returns its params.
    pub fn wait_event(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.pump_until(what, |s| {
            let found = s.events[s.cursor..].iter().position(&pred)?;
            let index = s.cursor + found;
            s.cursor = index + 1;
            Some(s.events[index].clone())
        })
    }

    /// Waits for whichever comes first: the next not-yet-seen event of type `kind` (`Ok`) or the
    /// response to request `id` (`Err`), for a client that answers while a request runs.
    pub fn event_or_response(&mut self, kind: &str, id: &Value) -> Result<Value, Value> {
        self.pump_until(&format!("a {kind} event or the response to {id}"), |s| {
            if let Some(found) = s.events[s.cursor..].iter().position(|e| e["type"] == kind) {
                let index = s.cursor + found;
                s.cursor = index + 1;
                return Some(Ok(s.events[index].clone()));
            }
            s.take_reply(|r| r.is_object() && r.get("id") == Some(id))
                .map(Err)
        })
    }

    pub fn wait_event_type(&mut self, kind: &str) -> Value {
        self.wait_event(kind, |e| e["type"] == kind)
    }

    /// Asserts nothing arrives for `quiet` (used after notifications).
    pub fn assert_silent(&mut self, quiet: Duration) {
        if let Some(m) = self.receive(quiet) {
            panic!("expected no output, got {m}");
        }
    }

    /// Closes stdin (EOF for the pod).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit, failing after `timeout`; drains remaining output first.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // Until the reader sees the end of stdout (the pod is gone, so it comes at
                // once): everything the pod wrote is filed, however slowly it is read.
                while let Some(m) = self.receive(WAIT) {
                    self.file(m);
                }
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

    /// Files whatever arrives during `d` (events and replies); never fails.
    pub fn pump_for(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match self.incoming.recv_timeout(left) {
                Ok(Ok(m)) => self.file(m),
                Ok(Err(e)) => panic!("pod wrote something that is not a protocol message: {e}"),
                Err(_) => return,
            }
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

    /// Every event of one turn.
    pub fn turn_events(&self, turn_id: &str) -> Vec<Value> {
        self.events
            .iter()
            .filter(|e| e["turnId"] == turn_id)
            .cloned()
            .collect()
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

/// Whether `initialize` lists the tool `name`.
pub fn has_tool(init: &Value, name: &str) -> bool {
    init["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == name))
}

/// Checks every rule of protocol.md "Rules the events obey" on a recorded event stream.
pub fn check_event_rules(events: &[Value], approval: bool) {
    // No permissionRequest without the capability.
    if !approval {
        assert!(
            !events.iter().any(|e| e["type"] == "permissionRequest"),
            "a permissionRequest reached a client without capabilities.approval"
        );
    }
    let mut pending: Vec<String> = Vec::new();
    let mut last_status: Option<String> = None;
    // Per turn: calls in order, results in order, and whether the turn ended.
    let mut calls: HashMap<String, Vec<String>> = HashMap::new();
    let mut results: HashMap<String, Vec<String>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let kind = e["type"].as_str().unwrap_or("");
        let turn = e["turnId"].as_str().unwrap_or("").to_string();
        match kind {
            "status" => {
                let state = e["state"].as_str().unwrap_or("").to_string();
                if !pending.is_empty() {
                    assert_eq!(
                        state, "awaitingPermission",
                        "status while pending, event {i}"
                    );
                }
                last_status = Some(state);
            }
            "permissionRequest" => {
                assert_eq!(
                    last_status.as_deref(),
                    Some("awaitingPermission"),
                    "no awaitingPermission status before request at event {i}"
                );
                pending.push(e["requestId"].as_str().unwrap_or("").to_string());
            }
            "permissionResolved" => {
                let id = e["requestId"].as_str().unwrap_or("");
                if e["by"] != "session_grant" {
                    let at = pending.iter().position(|p| p == id);
                    assert!(
                        at.is_some(),
                        "permissionResolved {id} without a pending request"
                    );
                    if let Some(at) = at {
                        pending.remove(at);
                    }
                }
            }
            "toolCall" => calls
                .entry(turn)
                .or_default()
                .push(e["callId"].as_str().unwrap_or("").to_string()),
            "toolResult" => {
                let call = e["callId"].as_str().unwrap_or("").to_string();
                let done = results.entry(turn.clone()).or_default();
                assert!(!done.contains(&call), "two results for {call}");
                assert!(
                    calls.get(&turn).is_some_and(|c| c.contains(&call)),
                    "result for {call} before its call"
                );
                done.push(call);
            }
            "turnEnded" => {
                let called = calls.get(&turn).cloned().unwrap_or_default();
                let answered = results.get(&turn).cloned().unwrap_or_default();
                assert_eq!(called, answered, "results (in call order) before turnEnded");
            }
            _ => {}
        }
    }
    assert!(pending.is_empty(), "requests never resolved: {pending:?}");
    // Each request resolved exactly once.
    let mut resolved: HashMap<&str, usize> = HashMap::new();
    for e in events.iter().filter(|e| e["type"] == "permissionResolved") {
        *resolved
            .entry(e["requestId"].as_str().unwrap_or(""))
            .or_default() += 1;
    }
    for e in events.iter().filter(|e| e["type"] == "permissionRequest") {
        let id = e["requestId"].as_str().unwrap_or("");
        assert_eq!(resolved.get(id), Some(&1), "request {id} resolved once");
    }
}

/// The history items of one kind.
pub fn items_of<'a>(history: &'a Value, kind: &str) -> Vec<&'a Value> {
    history["items"]
        .as_array()
        .map(|items| items.iter().filter(|i| i["type"] == kind).collect())
        .unwrap_or_default()
}

/// Path helper for reading a session log's text.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until `done` holds, failing the test after [`WAIT`]. For a state nothing announces (a
/// file appearing, a process gone): the poll's pause only paces it, the condition decides.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
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
