//! A pod served in this process on an in-memory connection, driven at the wire: the same
//! [`pod::server::serve`] that `pod serve` and [`pod::server::memory`] run, on a
//! `tokio::io::duplex` pair instead of pipes, with a [`Conversation`] (shared with
//! `tests/binary/`'s `PodProcess`) writing requests and filing every message, so a protocol or
//! approval test moved here from `tests/binary/` keeps its assertions word for word: the raw
//! error objects, and the order of events and responses on the wire. No binary is spawned and
//! nothing process-wide changes: the manifest is read as `pod serve --trust` reads it with no
//! user or managed configuration, and the session logs go to the workspace's own state folder.

#[path = "../common/conversation.rs"]
pub mod conversation;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use conversation::*;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A temporary workspace holding `pod.toml`, and a temporary state folder for its session logs.
pub struct Workspace {
    pub dir: tempfile::TempDir,
    pub state: tempfile::TempDir,
}

impl Workspace {
    /// The example manifest's rules with this ask timeout ([`manifest_text`]).
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

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn manifest(&self) -> PathBuf {
        self.path("pod.toml")
    }

    /// The session log files, in the state folder.
    pub fn session_logs(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.state.path().join("sessions"))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        files
    }
}

/// The pod's end of the connection, as the `Conversation` writes to it: each write goes to the
/// task that writes the duplex pipe; dropping it closes the pipe (EOF for the pod).
struct Input(tokio::sync::mpsc::UnboundedSender<Vec<u8>>);

impl Write for Input {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .send(bytes.to_vec())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How the served pod ended: the exit status `pod serve` would have had.
#[derive(Debug)]
pub struct Exit(pub u8);

impl Exit {
    pub fn success(&self) -> bool {
        self.0 == 0
    }
}

/// A pod served in this process (on its own runtime) and what it has said so far; derefs to
/// its [`Conversation`] (`pod.events`, `pod.call(...)`), as `PodProcess` does.
pub struct MemoryPod {
    runtime: Option<tokio::runtime::Runtime>,
    served: Option<tokio::task::JoinHandle<u8>>,
    conversation: Conversation,
}

impl MemoryPod {
    /// Serves `ws`'s manifest; newline-delimited JSON, as `Framing::Lines`.
    pub fn spawn(ws: &Workspace) -> MemoryPod {
        MemoryPod::serve(ws, None)
    }

    /// Serves `ws`'s manifest resuming session `id`, as `pod serve --resume ID`.
    pub fn resume(ws: &Workspace, id: &str) -> MemoryPod {
        MemoryPod::serve(ws, Some(id.to_string()))
    }

    fn serve(ws: &Workspace, resume: Option<String>) -> MemoryPod {
        let mut manifest = pod::manifest::Manifest::load(&ws.manifest()).expect("manifest");
        manifest.set_state_dir(ws.state.path());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let served = runtime.spawn(pod::server::serve(
            server_read,
            server_write,
            manifest,
            None,
            resume,
            pod::server::DEFAULT_MAX_MESSAGE,
        ));
        let (client_read, mut client_write) = tokio::io::split(client);
        let (input, mut to_pod) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        runtime.spawn(async move {
            while let Some(bytes) = to_pod.recv().await {
                if client_write.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            let _ = client_write.shutdown().await;
        });
        let (filed, incoming) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let mut lines = BufReader::new(client_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let parsed =
                    serde_json::from_str::<Value>(&line).map_err(|e| format!("{e}: {line:?}"));
                if filed.send(parsed).is_err() {
                    return;
                }
            }
        });
        MemoryPod {
            runtime: Some(runtime),
            served: Some(served),
            conversation: Conversation::new(Box::new(Input(input)), incoming, Framing::Lines),
        }
    }

    /// Waits for the served pod to end, failing after `timeout`; files what it wrote first.
    pub fn wait_exit(&mut self, timeout: Duration) -> Exit {
        let served = self.served.take().expect("the pod is still served");
        let runtime = self.runtime.as_ref().expect("runtime");
        let code = runtime
            .block_on(async { tokio::time::timeout(timeout, served).await })
            .unwrap_or_else(|_| panic!("the pod did not end within {timeout:?}"))
            .expect("the serving task failed");
        // The pod is gone; the input it may still be reading is closed as a process's would
        // be, so its end of the pipe goes and the output ends: everything it wrote is filed.
        self.close_stdin();
        self.drain_to_end();
        Exit(code)
    }
}

impl std::ops::Deref for MemoryPod {
    type Target = Conversation;

    fn deref(&self) -> &Conversation {
        &self.conversation
    }
}

impl std::ops::DerefMut for MemoryPod {
    fn deref_mut(&mut self) -> &mut Conversation {
        &mut self.conversation
    }
}

impl Drop for MemoryPod {
    fn drop(&mut self) {
        // Stops the pod as a kill would: every task is dropped at its next await (its calls'
        // processes are killed on drop), once the poll under way has ended, so nothing it was
        // writing (a session log line) is left half done for the next pod to read.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(*WAIT);
        }
    }
}

/// Live processes whose working folder is `dir` (the calls a pod runs there; a zombie has
/// none).
pub fn processes_in(dir: &Path) -> usize {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd == dir))
        .count()
}

/// Waits until `done` holds, failing the test after [`WAIT`]. For a state nothing announces (a
/// file appearing, a process gone): the poll's pause only paces it, the condition decides.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + *WAIT;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        // Paces the poll; the condition above decides.
        std::thread::sleep(Duration::from_millis(10));
    }
}
