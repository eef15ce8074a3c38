//! `pod serve`: the pod's JSON-RPC 2.0 server on stdin/stdout (docs/protocol.md).
//!
//! Data flows: [`stdio`] (stdin/stdout as non-blocking pipes) -> [`transport`] (framing, the one
//! stdout writer) -> [`dispatch`] (JSON-RPC classification, the envelope) ->
//! [`methods`] (the methods of the protocol's list, typed) -> [`connection`] (lifecycle) and the [`Pod`](crate::runtime::Pod); a
//! `run` drives its turn through [`stream`], whose events go back out through the same writer.
//!
//! Invariants: stdout is written only by the transport's writer; a `run` response follows the
//! turn's last event; stdin EOF, SIGTERM, SIGINT and `shutdown` all end with pending requests
//! resolved, the turn cancelled (its calls' ends run), the session log flushed and exit code 0. A pod that cannot open answers
//! `initialize` with -32007, logs why on stderr and exits 1.
//!
//! [`memory`] serves the same on an in-memory connection, with the typed client, for tests that
//! need no process.

pub mod connection;
pub mod dispatch;
pub mod error;
pub mod methods;
pub mod stdio;
pub mod stream;
pub mod transport;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::manifest::{Manifest, Vouch};
use crate::permission::Asked;
use crate::protocol::ErrorCode;
use connection::{Connection, Source};
use dispatch::Dispatcher;
use transport::Frame;

/// Default largest accepted message: 16 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// How long the running turn and in-flight answers get to finish at exit. Together with
/// [`WRITER_BUDGET`] this keeps "stdin EOF -> exit" under one second.
const WIND_DOWN_BUDGET: Duration = Duration::from_millis(600);
const WRITER_BUDGET: Duration = Duration::from_millis(200);

/// Runs the server until stdin closes or `shutdown`; returns the process exit code. A manifest
/// that does not load is reported on stderr (exit 1) before any protocol traffic. `state_dir`
/// overrides where session logs live (`--state-dir`).
pub fn main(
    manifest: Option<&Path>,
    resume: Option<String>,
    state_dir: Option<&Path>,
    trust: bool,
    max_message_bytes: usize,
) -> u8 {
    let source = Source {
        manifest: manifest.map(Path::to_path_buf),
        state_dir: state_dir.map(Path::to_path_buf),
        vouch: if trust { Vouch::Session } else { Vouch::Store },
    };
    let mut manifest = match Manifest::open(manifest, source.vouch) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    report_configuration(&manifest);
    for finding in manifest.lint() {
        let file = finding
            .file
            .clone()
            .unwrap_or_else(|| manifest.path.display().to_string());
        let at = finding.line.map(|l| format!(":{l}")).unwrap_or_default();
        let severity = match finding.severity {
            crate::permission::lint::Severity::Error => "error",
            crate::permission::lint::Severity::Warning => "warning",
        };
        eprintln!("{file}{at}: {severity}: {}", finding.message);
    }
    if manifest.is_defaults() {
        eprintln!(
            "pod serve: no pod.toml in {} and no user configuration ({}): running on pod's \
             built-in defaults (reads inside the workspace allowed, everything else asks; the \
             offline model). `pod config` shows them.",
            manifest.workspace.display(),
            crate::manifest::user_config_path()
                .map_or_else(|| "none".to_string(), |p| p.display().to_string())
        );
    }
    if let Some(folder) = state_dir {
        manifest.set_state_dir(folder);
    }
    // `required = true` on a machine that cannot hold the sandbox: refuse before any traffic.
    if let Err(e) = crate::sandbox::check_required(&manifest.sandbox) {
        eprintln!("{}: {e}", manifest.path.display());
        return 1;
    }
    run_on_stdio("pod serve", move |input, output| {
        serve(
            input,
            output,
            manifest,
            Some(source),
            resume,
            max_message_bytes,
        )
    })
}

/// Says on stderr what of the configuration is not in force: an untrusted project's ignored
/// settings, a permission layer that is off, the environment variables tools do not get.
fn report_configuration(manifest: &Manifest) {
    let trust = &manifest.trust;
    if !trust.ignored.is_empty() {
        let folder = trust
            .folder
            .as_ref()
            .map_or_else(String::new, |f| f.display().to_string());
        let why = if trust.declined {
            "you declined to trust it"
        } else if !trust.changed.is_empty() {
            "it changed since you trusted it"
        } else {
            "it is not trusted"
        };
        eprintln!(
            "pod: {folder}: {why}, so pod ignores what its configuration would run or widen \
             (`pod trust {folder}` to trust it, or `pod serve --trust` for this run):"
        );
        for ignored in &trust.ignored {
            eprintln!("  {}: {}", ignored.place, ignored.what);
        }
    }
    if let Some(off) = manifest.permissions_off() {
        eprintln!("pod: WARNING: {off}");
    }
}

/// Runs a front-end's `serve` on stdin and stdout until it ends; returns its exit code. Shared
/// by `pod serve` and `pod acp`: the process first becomes a child subreaper (orphans of tool
/// calls and hooks come back to the pod, which kills them with their call), `serve` runs as the
/// one task of a current-thread runtime, SIGTERM and SIGINT end its input as stdin EOF does
/// ([`stdio::UntilSignal`]), and whatever a call left running is killed at the end.
/// `who` names the command in errors.
pub fn run_on_stdio<F, Fut>(who: &str, serve: F) -> u8
where
    F: FnOnce(Box<dyn AsyncRead + Unpin + Send>, Box<dyn AsyncWrite + Unpin + Send>) -> Fut,
    Fut: std::future::Future<Output = u8> + Send + 'static,
{
    if let Err(e) = crate::sandbox::reaper::become_subreaper() {
        eprintln!("{who}: cannot become a child subreaper: {e}");
        return 1;
    }
    // One thread: every request and event passes a few channels between tasks, and on a
    // multi-threaded runtime each hop can be a cross-thread wake-up (measured: 3x slower).
    // Tools that block run on tokio's blocking pool either way.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{who}: cannot start the async runtime: {e}");
            return 1;
        }
    };
    // Spawned, not run as the `block_on` future itself: a current-thread runtime polls that
    // future only after its run queue drains (an `epoll_wait` each time), which would cost a
    // syscall and a separate stdout write per request.
    let code = runtime.block_on(async {
        // SIGTERM and SIGINT end the input: the pod then closes as when its client went away,
        // running the ends of its calls (docs/protocol.md, "Cancel, shutdown, EOF").
        let input = Box::new(stdio::UntilSignal::new(stdio::stdin()));
        let served = tokio::spawn(serve(input, stdio::stdout()));
        served.await.unwrap_or_else(|e| {
            eprintln!("{who}: the serving task failed: {e}");
            1
        })
    });
    // With a terminal or file as stdin, a blocking read may still be parked after `shutdown`;
    // do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(50));
    // Anything a call left running would be re-parented to init once the pod exits.
    crate::sandbox::reaper::kill_all_children();
    code
}

/// Serves one client on `input` / `output` (stdin / stdout, or in-memory pipes in tests).
pub async fn serve<R, W>(
    input: R,
    output: W,
    manifest: Manifest,
    source: Option<Source>,
    resume: Option<String>,
    max_message_bytes: usize,
) -> u8
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let transport = transport::start(input, output, max_message_bytes);
    let conn = Connection::new(manifest, source, resume, transport.outbox.clone());
    let service = Arc::new(methods::Methods::new(conn.clone()));
    let dispatcher = Dispatcher::new(service, transport.outbox.clone());
    let mut frames = transport.frames;
    let mut end = Asked::Disconnect;
    loop {
        // A client that does not read its answers is not read from either (transport.rs).
        transport.outbox.room_for_responses().await;
        let Some(frame) = frames.recv().await else {
            break;
        };
        handle(&dispatcher, frame, max_message_bytes).await;
        if conn.is_shutting_down() {
            end = Asked::Shutdown;
            break;
        }
        if conn.cannot_open() {
            break;
        }
    }
    tracing::info!("closing ({end:?})");
    let wind_down = async {
        conn.close(end);
        dispatcher.tracker().close();
        if tokio::time::timeout(WIND_DOWN_BUDGET, dispatcher.tracker().wait())
            .await
            .is_err()
        {
            tracing::warn!("the turn did not end within {WIND_DOWN_BUDGET:?}");
        }
        conn.stop_mcp().await;
        conn.flush();
    };
    tokio::pin!(wind_down);
    // After `shutdown` the client may still send: every request gets -32005 until exit.
    let mut reading = end == Asked::Shutdown;
    loop {
        tokio::select! {
            () = &mut wind_down => break,
            frame = frames.recv(), if reading => match frame {
                Some(frame) => handle(&dispatcher, frame, max_message_bytes).await,
                None => reading = false,
            },
        }
    }
    // The wind-down may end before the frames already read are taken (a client that pipelined
    // requests behind `shutdown`): each still gets its -32005.
    if reading {
        tokio::task::yield_now().await;
        while let Ok(frame) = frames.try_recv() {
            handle(&dispatcher, frame, max_message_bytes).await;
        }
    }
    transport.writer.finish(WRITER_BUDGET).await;
    // A pod that could not open answered `initialize` with -32007 and says so by its status.
    u8::from(conn.cannot_open())
}

/// Hands one frame to the dispatcher: a message is dispatched, a frame that is not one (too
/// large, not UTF-8, a bad header) is answered with its error. Shared with `pod acp`.
pub async fn handle(dispatcher: &Dispatcher, frame: Frame, max: usize) {
    match frame {
        Frame::Message(text) => dispatcher.handle(&text).await,
        Frame::TooLarge => dispatcher.reject(
            ErrorCode::InvalidRequest,
            &format!("invalid request: message larger than {max} bytes"),
        ),
        Frame::InvalidUtf8 => {
            dispatcher.reject(ErrorCode::ParseError, "parse error: message is not UTF-8")
        }
        Frame::BadHeader(why) => {
            dispatcher.reject(ErrorCode::ParseError, &format!("parse error: {why}"))
        }
    }
}

/// A pod served in this process on an in-memory connection (no binary, no pipes, no
/// processes): the typed client (`client::call`, `client::events`) and the serving task, which
/// ends with the exit status `pod serve` would have when the client is dropped. For tests of the
/// protocol and the approval round trip; tests of what a process does (the sandbox, a crash,
/// stdout) drive the real binary. Must be called inside a tokio runtime.
pub fn memory(
    manifest: crate::manifest::Manifest,
) -> (jsonrpsee::core::client::Client, tokio::task::JoinHandle<u8>) {
    let (client_end, server_end) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_end);
    let served = tokio::spawn(serve(
        server_read,
        server_write,
        manifest,
        None,
        None,
        DEFAULT_MAX_MESSAGE,
    ));
    let (client_read, client_write) = tokio::io::split(client_end);
    (crate::client::connect(client_write, client_read), served)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    #[tokio::test]
    async fn serves_in_memory_and_exits_zero_at_eof() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pod.toml");
        std::fs::write(
            &path,
            "[pod]\nname = \"t\"\n[model]\nprovider = \"offline\"\n",
        )
        .unwrap();
        let manifest = Manifest::load(&path).unwrap();
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (server_read, server_write) = tokio::io::split(server);
        let served = tokio::spawn(serve(server_read, server_write, manifest, None, None, 4096));
        let (client_read, mut client_write) = tokio::io::split(client);
        client_write
            .write_all(
                concat!(
                    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
                    "\n",
                    r#"{"jsonrpc":"2.0","id":2,"method":"run","params":{"input":[{"type":"text","text":"hi"}]}}"#,
                    "\n"
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        let mut lines = BufReader::new(client_read).lines();
        let mut kinds = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            kinds.push(
                v["params"]["type"]
                    .as_str()
                    .map(String::from)
                    .unwrap_or(v["id"].to_string()),
            );
            if v["id"] == 2 {
                assert_eq!(v["result"]["stopReason"], "end_turn");
                break;
            }
        }
        assert_eq!(kinds.first().map(String::as_str), Some("1"));
        assert_eq!(&kinds[kinds.len() - 3..], ["turnEnded", "status", "2"]);
        client_write.shutdown().await.unwrap();
        let code = tokio::time::timeout(Duration::from_secs(5), served).await;
        assert_eq!(code.unwrap().unwrap(), 0);
    }
}
