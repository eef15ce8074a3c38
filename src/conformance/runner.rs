//! Runs one requirement in one framing: a fresh workspace holding its manifest, a fresh process
//! of the pod command (`sh -c`, in its own process group so the whole group is killed
//! afterwards), the transcript's steps with timeouts, and a one-line reason when it fails.
//! The steps speak for a client: they send, answer the pod's own requests (`reply`), and look
//! at the workspace for a tool call's side effect (`exists`, `absent`).
//!
//! Bytes go out exactly as the steps say (nothing is trimmed or re-encoded), and what the pod
//! writes is read strictly in the run's framing: in header framing every header line must end
//! with CRLF and `Content-Length` must count the bytes of exactly one JSON text.
//!
//! Must not touch: the kit's format (`kit`), printing and exit codes (`mod.rs`).

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use super::kit::{unescape, Framing, Protocol, Requirement, Step};
use super::matcher::{fill, lookup_path, matches, Json};

/// How long an `expect` waits for its message, unless told otherwise.
pub const EXPECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The pod under test: the command (`sh -c`, `{manifest}` replaced) and how long an `expect`
/// waits for it.
#[derive(Debug, Clone, Copy)]
pub struct PodCommand<'a> {
    pub command: &'a str,
    pub expect_timeout: Duration,
}

/// How long the process gets to exit after its stdin closes at the end of a requirement.
const END_GRACE: Duration = Duration::from_secs(1);

/// Longest message quoted in a failure reason.
const QUOTE: usize = 240;

/// Lines of the pod's stderr kept for a failure report.
const STDERR_LINES: usize = 12;

/// Longest text `{{repeat N TEXT}}` may make.
const MAX_REPEAT: usize = 64 * 1024 * 1024;

/// Longest `Content-Length` the reader accepts from the pod.
const MAX_BODY: usize = 256 * 1024 * 1024;

/// A temporary workspace; removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One message the pod wrote.
struct Received {
    message: Json,
    matched: bool,
}

/// What the reader thread hands over: a message, or why the output is not a conforming stream
/// (after which nothing more is read).
type Incoming = Result<Json, String>;

/// The last lines of the pod's stderr, shared with the thread that drains it.
#[derive(Clone, Default)]
struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn drain(&self, stderr: impl Read) {
        let mut reader = BufReader::new(stderr);
        let mut line = Vec::new();
        while let Ok(n) = reader.read_until(b'\n', &mut line) {
            if n == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&line).trim_end().to_string();
            let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
            lines.push_back(quote(&text));
            if lines.len() > STDERR_LINES {
                lines.pop_front();
            }
            line.clear();
        }
    }

    fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

/// A pod process that exited on its own: how, and the end of what it wrote on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exited {
    pub status: String,
    pub stderr: Vec<String>,
}

impl std::fmt::Display for Exited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the pod {}", self.status)?;
        if self.stderr.is_empty() {
            write!(f, " (its stderr was empty)")
        } else {
            write!(f, "; its stderr ends with: {}", self.stderr.join(" | "))
        }
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "exited".to_string(),
    }
}

struct Session {
    framing: Framing,
    child: Child,
    stdin: Option<ChildStdin>,
    /// Bytes of consecutive send steps, written together before the next other step.
    pending: Vec<u8>,
    incoming: mpsc::Receiver<Incoming>,
    /// Output ended (stdout closed or broken); nothing more will arrive.
    ended: bool,
    received: Vec<Received>,
    /// Label -> index into `received`.
    labels: HashMap<String, usize>,
    stderr: StderrTail,
    /// The transcript waited for the exit (`exit` step, `close`): not a failure to report.
    exit_expected: bool,
    expect_timeout: Duration,
    /// The workspace folder, absolute (`{{workspace}}`, `exists`, `absent`).
    workspace: PathBuf,
}

/// Runs the requirement against a fresh process of `pod_cmd` in `framing`; `Err` says why it
/// failed.
pub fn run(requirement: &Requirement, framing: Framing, pod: PodCommand) -> Result<(), String> {
    let (_dir, mut session) = start(&requirement.manifest.1, framing, pod)?;
    let result = requirement
        .steps
        .iter()
        .enumerate()
        .try_for_each(|(i, step)| {
            session
                .step(step)
                .map_err(|why| format!("step {}: {why}", i + 1))
        });
    let result = result.map_err(|why| match session.exited_early() {
        Some(exited) => format!("{why} ({exited})"),
        None => why,
    });
    session.end();
    result
}

/// Starts the pod command once with `manifest` and sends `protocol`'s `initialize`: `Err` when
/// the process exits before writing anything (the command cannot start), with its status and
/// stderr. A pod that stays silent but alive passes here; its requirements will fail one by one.
pub fn preflight(
    manifest: &str,
    protocol: Protocol,
    framing: Framing,
    pod: PodCommand,
) -> Result<(), Exited> {
    let setup = |why: String| Exited {
        status: why,
        stderr: Vec::new(),
    };
    let (_dir, mut session) = start(manifest, framing, pod).map_err(setup)?;
    let _ = session.write(&framing.frame(protocol.hello()));
    let deadline = Instant::now() + pod.expect_timeout.max(EXPECT_TIMEOUT);
    let mut answered = false;
    while !answered && Instant::now() < deadline {
        match session.pump(deadline) {
            Pumped::Message => answered = true,
            // A malformed answer is still an answer: the requirements will say what is wrong.
            Pumped::Broken(_) => answered = true,
            Pumped::Timeout => break,
            Pumped::Ended => break,
        }
    }
    let exited = if answered {
        None
    } else {
        session.wait_exit(Duration::from_millis(500))
    };
    session.end();
    match exited {
        Some(exited) => Err(exited),
        None => Ok(()),
    }
}

/// A fresh workspace with `manifest` (as `pod.toml`) and the pod command running in it.
fn start(manifest: &str, framing: Framing, pod: PodCommand) -> Result<(TempDir, Session), String> {
    let dir = TempDir(
        std::env::temp_dir().join(format!("pod-conformance-{}", uuid::Uuid::new_v4().simple())),
    );
    std::fs::create_dir_all(&dir.0).map_err(|e| format!("cannot create a workspace: {e}"))?;
    // The path an agent resolves it to (`/tmp` may be a symlink), for `{{workspace}}`.
    let workspace = dir.0.canonicalize().unwrap_or_else(|_| dir.0.clone());
    let path = workspace.join("pod.toml");
    std::fs::write(&path, manifest).map_err(|e| format!("cannot write the manifest: {e}"))?;
    let command = pod
        .command
        .replace("{manifest}", &shell_quote(&path.display().to_string()))
        .replace(
            "{workspace}",
            &shell_quote(&workspace.display().to_string()),
        );
    // The pod's per-user state (session logs) goes to the same throwaway folder, and its
    // per-user configuration is looked for there (and not found): only the manifest applies.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .env("XDG_STATE_HOME", workspace.join(".state"))
        .env("XDG_CONFIG_HOME", workspace.join(".config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start `sh -c {command}`: {e}"))?;
    let stdout = child.stdout.take().ok_or("the pod has no stdout pipe")?;
    let stderr = child.stderr.take().ok_or("the pod has no stderr pipe")?;
    let tail = StderrTail::default();
    let drain = tail.clone();
    std::thread::spawn(move || drain.drain(stderr));
    let (tx, incoming) = mpsc::channel();
    std::thread::spawn(move || read_output(stdout, framing, &tx));
    let session = Session {
        framing,
        stdin: child.stdin.take(),
        child,
        pending: Vec::new(),
        incoming,
        ended: false,
        received: Vec::new(),
        labels: HashMap::new(),
        stderr: tail,
        exit_expected: false,
        expect_timeout: pod.expect_timeout,
        workspace,
    };
    Ok((dir, session))
}

/// Reads the pod's stdout in `framing` and hands over each message, until it ends or breaks a
/// framing rule.
fn read_output(stdout: impl Read, framing: Framing, tx: &mpsc::Sender<Incoming>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let next = match framing {
            Framing::Ndjson => read_line_message(&mut reader),
            Framing::Headers => read_headed_message(&mut reader),
        };
        match next {
            Ok(None) => return,
            Ok(Some(message)) => {
                if tx.send(Ok(message)).is_err() {
                    return;
                }
            }
            Err(why) => {
                let _ = tx.send(Err(why));
                return;
            }
        }
    }
}

/// The next line holding a JSON text; blank lines are skipped.
fn read_line_message(reader: &mut impl BufRead) -> Result<Option<Json>, String> {
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read the pod's stdout: {e}")),
        }
        let text = std::str::from_utf8(&line)
            .map_err(|_| format!("stdout carried bytes that are not UTF-8: {}", show(&line)))?;
        if text.trim().is_empty() {
            continue;
        }
        return Json::parse(text).map(Some).map_err(|_| {
            format!(
                "stdout carried a line that is not JSON: {}",
                quote(text.trim_end())
            )
        });
    }
}

/// The next `Content-Length` framed message: header lines ended by CRLF, a blank line, then
/// exactly `Content-Length` bytes holding one JSON text.
fn read_headed_message(reader: &mut impl BufRead) -> Result<Option<Json>, String> {
    let mut length: Option<usize> = None;
    let mut first = true;
    loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) if first => return Ok(None),
            Ok(0) => return Err("stdout ended inside a header block".into()),
            Ok(_) => {}
            Err(e) => return Err(format!("cannot read the pod's stdout: {e}")),
        }
        first = false;
        let (content, crlf) = match line.strip_suffix(b"\r\n") {
            Some(content) => (content, true),
            None => match line.strip_suffix(b"\n") {
                Some(content) => (content, false),
                None => {
                    return Err(format!(
                        "stdout ended inside a header line: {}",
                        show(&line)
                    ))
                }
            },
        };
        let header = std::str::from_utf8(content)
            .ok()
            .and_then(|text| text.split_once(':'))
            .filter(|(name, _)| {
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !content.is_empty() && header.is_none() {
            return Err(format!(
                "stdout carried something that is not a header line (is the pod answering in \
                 another framing?): {}",
                show(&line)
            ));
        }
        if !crlf {
            return Err(format!(
                "a header line ends with a bare LF, not CRLF: {}",
                show(&line)
            ));
        }
        let Some((name, value)) = header else {
            break;
        };
        if name.eq_ignore_ascii_case("content-length") {
            let n = value
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("bad Content-Length: {}", quote(value.trim())))?;
            length = Some(n);
        }
    }
    let length = length.ok_or("a header block without Content-Length")?;
    if length > MAX_BODY {
        return Err(format!(
            "Content-Length {length} is larger than the kit reads"
        ));
    }
    let mut body = vec![0; length];
    reader
        .read_exact(&mut body)
        .map_err(|_| format!("stdout ended inside a body of Content-Length {length}"))?;
    let text = std::str::from_utf8(&body).map_err(|_| {
        format!(
            "Content-Length {length} does not frame UTF-8 text (does it count characters, not \
             bytes?): {}",
            show(&body)
        )
    })?;
    Json::parse(text).map(Some).map_err(|_| {
        format!(
            "the {length} bytes framed by Content-Length are not one JSON text (does it count \
             characters, not bytes?): {}",
            quote(text)
        )
    })
}

/// What one wait for output brought.
enum Pumped {
    Message,
    Timeout,
    /// Output ended (the pod closed stdout or exited).
    Ended,
    /// The output broke a framing rule.
    Broken(String),
}

impl Session {
    fn step(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::Send(text) => {
                let text = self.fill(text)?;
                self.pending.extend(self.framing.frame(text.as_bytes()));
                return Ok(());
            }
            Step::SendBytes(text) => {
                let bytes = unescape(&self.fill(text)?)?;
                self.pending.extend(self.framing.frame(&bytes));
                return Ok(());
            }
            Step::Raw(text) => {
                let bytes = unescape(&self.fill(text)?)?;
                self.pending.extend(bytes);
                return Ok(());
            }
            Step::Reply { label, result } => {
                let response = self.response(label, "result", result)?;
                self.pending.extend(self.framing.frame(response.as_bytes()));
                return Ok(());
            }
            Step::ReplyError { label, error } => {
                let response = self.response(label, "error", error)?;
                self.pending.extend(self.framing.frame(response.as_bytes()));
                return Ok(());
            }
            _ => self.flush()?,
        }
        match step {
            Step::Send(_)
            | Step::SendBytes(_)
            | Step::Raw(_)
            | Step::Reply { .. }
            | Step::ReplyError { .. } => Ok(()),
            Step::Exists(path) => match std::fs::symlink_metadata(self.workspace.join(path)) {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
                    "{path} does not exist in the workspace (the call did not run?)"
                )),
                Err(e) => Err(format!("cannot look at {path} in the workspace: {e}")),
            },
            Step::Absent(path) => match std::fs::symlink_metadata(self.workspace.join(path)) {
                Ok(_) => Err(format!(
                    "{path} exists in the workspace: the call ran although it was not allowed"
                )),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(format!("cannot look at {path} in the workspace: {e}")),
            },
            Step::Expect { label, pattern } => {
                let want = self.pattern(pattern)?;
                let deadline = Instant::now() + self.expect_timeout;
                loop {
                    if let Some(at) = self.find(Some(&want)) {
                        self.received[at].matched = true;
                        if let Some(label) = label {
                            self.labels.insert(label.clone(), at);
                        }
                        return Ok(());
                    }
                    match self.pump(deadline) {
                        Pumped::Message => {}
                        Pumped::Broken(why) => return Err(why),
                        Pumped::Timeout | Pumped::Ended => {
                            let waited = if self.ended {
                                "before the pod's output ended".to_string()
                            } else {
                                format!("within {} ms", self.expect_timeout.as_millis())
                            };
                            return Err(format!(
                                "expected {} {waited}; not matched so far: {}",
                                quote(&want.to_string()),
                                self.unmatched()
                            ));
                        }
                    }
                }
            }
            Step::None { window_ms, pattern } => {
                let want = pattern.as_deref().map(|p| self.pattern(p)).transpose()?;
                let deadline = Instant::now() + Duration::from_millis(*window_ms);
                loop {
                    match self.pump(deadline) {
                        Pumped::Message => {}
                        Pumped::Broken(why) => return Err(why),
                        Pumped::Timeout | Pumped::Ended => break,
                    }
                }
                let what = want
                    .as_ref()
                    .map(|w| format!("matches {}", quote(&w.to_string())))
                    .unwrap_or_else(|| "no message".into());
                match self.find(want.as_ref()) {
                    Some(at) => Err(format!(
                        "received {} ({what}, which must not arrive)",
                        self.show(at)
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
                self.exit_expected = true;
                Ok(())
            }
            Step::Exit { code, within_ms } => {
                self.exit_expected = true;
                let deadline = Instant::now() + Duration::from_millis(*within_ms);
                loop {
                    match self.child.try_wait() {
                        Ok(Some(status)) => {
                            return match status.code() {
                                Some(c) if c == *code => Ok(()),
                                _ => Err(format!(
                                    "the pod {}, not with status {code}",
                                    describe(status)
                                )),
                            }
                        }
                        Ok(None) if Instant::now() < deadline => {
                            // Keep reading so a pod blocked on a full pipe can finish.
                            match self.pump(Instant::now() + Duration::from_millis(10)) {
                                Pumped::Broken(why) => return Err(why),
                                Pumped::Ended => std::thread::sleep(Duration::from_millis(10)),
                                Pumped::Message | Pumped::Timeout => {}
                            }
                        }
                        Ok(None) => return Err(format!("did not exit within {within_ms} ms")),
                        Err(e) => return Err(format!("cannot wait for the pod: {e}")),
                    }
                }
            }
        }
    }

    /// Writes what consecutive send steps queued, in one write.
    fn flush(&mut self) -> Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let bytes = std::mem::take(&mut self.pending);
        self.write(&bytes)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("send after close")?;
        stdin
            .write_all(bytes)
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to the pod: {e}"))
    }

    /// Receives one message before `deadline`.
    fn pump(&mut self, deadline: Instant) -> Pumped {
        if self.ended {
            return Pumped::Ended;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self.incoming.recv_timeout(left) {
            Ok(Ok(message)) => {
                self.received.push(Received {
                    message,
                    matched: false,
                });
                Pumped::Message
            }
            Ok(Err(why)) => {
                self.ended = true;
                Pumped::Broken(why)
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Pumped::Timeout,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.ended = true;
                Pumped::Ended
            }
        }
    }

    /// The first not-yet-matched message matching `want` (any message when `None`).
    fn find(&self, want: Option<&Json>) -> Option<usize> {
        self.received
            .iter()
            .position(|r| !r.matched && want.is_none_or(|w| matches(w, &r.message)))
    }

    /// The response to the request labelled `label`: `{"jsonrpc":"2.0","id":ID,KEY:VALUE}`
    /// with the request's id exactly as it came and VALUE the step's JSON, placeholders filled.
    fn response(&self, label: &str, key: &str, value: &str) -> Result<String, String> {
        let at = *self
            .labels
            .get(label)
            .ok_or(format!("@{label} matched nothing"))?;
        let request = &self.received[at].message;
        let id = match (request.get("method"), request.get("id")) {
            (Some(Json::String(_)), Some(id)) => id.to_string(),
            _ => {
                return Err(format!(
                    "@{label} is not a request from the pod (no method and id): {}",
                    self.show(at)
                ))
            }
        };
        let value = self.fill(value)?;
        Ok(format!(r#"{{"jsonrpc":"2.0","id":{id},"{key}":{value}}}"#))
    }

    fn fill(&self, text: &str) -> Result<String, String> {
        let lookup = |name: &str| {
            if let Some(args) = name.strip_prefix("repeat ") {
                return repeat(args).map(Json::String);
            }
            if name == "workspace" {
                return Some(Json::String(self.workspace.display().to_string()));
            }
            let (label, path) = name.split_once('.').unwrap_or((name, ""));
            let at = *self.labels.get(label)?;
            lookup_path(&self.received.get(at)?.message, path).cloned()
        };
        fill(text, &lookup).map_err(|e| e.to_string())
    }

    fn pattern(&self, pattern: &str) -> Result<Json, String> {
        let text = self.fill(pattern)?;
        Json::parse(&text).map_err(|e| format!("bad pattern ({e}): {text}"))
    }

    fn show(&self, at: usize) -> String {
        match self.received.get(at) {
            Some(r) => quote(&r.message.to_string()),
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

    /// Waits up to `budget` for the process to exit; how it exited and its stderr's tail.
    fn wait_exit(&mut self, budget: Duration) -> Option<Exited> {
        let deadline = Instant::now() + budget;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    // Let the stderr thread take the last lines.
                    std::thread::sleep(Duration::from_millis(20));
                    return Some(Exited {
                        status: describe(status),
                        stderr: self.stderr.lines(),
                    });
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => return None,
            }
        }
    }

    /// The process exited although the transcript did not end it. Once its output ended, it
    /// gets a moment to be gone (stdout closes just before the exit).
    fn exited_early(&mut self) -> Option<Exited> {
        if self.exit_expected {
            return None;
        }
        let grace = if self.ended {
            Duration::from_millis(500)
        } else {
            Duration::ZERO
        };
        self.wait_exit(grace)
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

/// `{{repeat N TEXT}}`: TEXT N times.
fn repeat(args: &str) -> Option<String> {
    let (count, text) = args.trim().split_once(' ')?;
    let count: usize = count.parse().ok()?;
    (count.checked_mul(text.len())? <= MAX_REPEAT).then(|| text.repeat(count))
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

/// Bytes for a failure reason: text where they are UTF-8, escapes where not.
fn show(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(QUOTE)];
    let mut text = format!("{:?}", String::from_utf8_lossy(cut));
    if String::from_utf8(cut.to_vec()).is_err() {
        text = format!("{:?}", cut.escape_ascii().to_string());
    }
    if bytes.len() > QUOTE {
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headed(input: &[u8]) -> Vec<Result<String, String>> {
        let mut reader = BufReader::new(input);
        let mut out = Vec::new();
        loop {
            match read_headed_message(&mut reader) {
                Ok(None) => return out,
                Ok(Some(m)) => out.push(Ok(m.to_string())),
                Err(e) => {
                    out.push(Err(e));
                    return out;
                }
            }
        }
    }

    #[test]
    fn header_framing_is_read_byte_exact() {
        let body = r#"{"t":"é"}"#;
        let good = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        assert_eq!(headed(good.as_bytes()), vec![Ok(body.to_string())]);
        // Counting characters cuts the body short.
        let chars = format!("Content-Length: {}\r\n\r\n{body}", body.chars().count());
        let got = headed(chars.as_bytes());
        assert!(
            matches!(&got[0], Err(e) if e.contains("characters, not bytes")),
            "{got:?}"
        );
        // A bare LF ends a header line.
        let lf = format!("Content-Length: {}\n\n{body}", body.len());
        let got = headed(lf.as_bytes());
        assert!(
            matches!(&got[0], Err(e) if e.contains("bare LF")),
            "{got:?}"
        );
        // An NDJSON answer to a header-framed client.
        let got = headed(format!("{body}\n").as_bytes());
        assert!(
            matches!(&got[0], Err(e) if e.contains("not a header line")),
            "{got:?}"
        );
    }

    #[test]
    fn lines_must_be_json() {
        let mut reader = BufReader::new(&b"\n{\"a\":1}\nlog: hello\n"[..]);
        assert_eq!(
            read_line_message(&mut reader)
                .unwrap()
                .map(|m| m.to_string()),
            Some(r#"{"a":1}"#.to_string())
        );
        assert!(read_line_message(&mut reader).is_err());
    }

    #[test]
    fn repeat_is_bounded() {
        assert_eq!(repeat("3 ab").as_deref(), Some("ababab"));
        assert_eq!(repeat("999999999999 a"), None);
        assert_eq!(repeat("x a"), None);
    }
}
