//! Load, item 4 of `docs/hardening.md`, at the allocator: run/cancel cycles against an
//! in-process server (`pod::server::serve` over an in-memory pipe) with a counting global
//! allocator (`counting`, shared with `memory`; one test at a time). Where
//! `tests/binary/load.rs` sees RSS (which includes allocator fragmentation), this sees the bytes
//! the pod actually holds. Checked:
//! - what the live pod holds beyond its history does not grow between cycle 100 and the end
//!   (history is measured by resuming a copy of the session log in a fresh server);
//! - when the connection closes, every byte of the session is released.

use std::time::{Duration, Instant};

use crate::common::Workspace;
use crate::counting::{self, held};
use pod::manifest::Manifest;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const WAIT: Duration = Duration::from_secs(10);

/// One in-process connection: a line writer and a line reader.
struct Conn {
    to_pod: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    from_pod: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    served: tokio::task::JoinHandle<u8>,
    next: u64,
}

impl Conn {
    fn open(manifest: &Manifest, resume: Option<String>) -> Conn {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let served = tokio::spawn(pod::server::serve(
            server_read,
            server_write,
            manifest.clone(),
            None,
            resume,
            1 << 20,
        ));
        let (client_read, to_pod) = tokio::io::split(client);
        Conn {
            to_pod,
            from_pod: BufReader::new(client_read).lines(),
            served,
            next: 0,
        }
    }

    async fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
            .to_string()
            + "\n";
        self.to_pod.write_all(line.as_bytes()).await.expect("write");
        self.next
    }

    /// Reads until a message satisfies `done`; returns it.
    async fn until(&mut self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = tokio::time::timeout(WAIT, self.from_pod.next_line())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
                .expect("read")
                .unwrap_or_else(|| panic!("connection closed waiting for {what}"));
            let v: Value = serde_json::from_str(&line).expect("JSON");
            if done(&v) {
                return v;
            }
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        self.until(method, |v| v["id"] == id).await
    }

    async fn close(mut self) {
        self.to_pod.shutdown().await.expect("close");
        drop(self.to_pod);
        let code = tokio::time::timeout(WAIT, self.served)
            .await
            .expect("serve exits")
            .expect("serve task");
        assert_eq!(code, 0);
    }
}

/// Heap held by a server that only resumed `session` from `ws` (initialize, nothing else).
async fn resumed_heap(manifest: &Manifest, session: &str) -> i64 {
    settle(0).await;
    let before = held();
    let mut conn = Conn::open(manifest, Some(session.to_string()));
    let init = conn
        .call(
            "initialize",
            json!({"protocolVersion": 1, "capabilities": {"approval": {}}}),
        )
        .await;
    assert_eq!(init["result"]["session"]["resumed"], true, "{init}");
    settle(1).await;
    let cost = held() - before;
    conn.close().await;
    cost
}

/// The tasks of one idle connection in the test's runtime: the one `serve` runs in, and its
/// transport's reader and writer (`src/server/transport.rs`).
const IDLE_TASKS: usize = 3;

/// Waits until the runtime runs nothing but `connections` idle connections: every task a request
/// started (its call, its turn) has ended, and its transient allocations with it. (A wait for
/// that state, not for a fixed time: on a loaded machine those tasks may take long to end.)
async fn settle(connections: usize) {
    let want = connections * IDLE_TASKS;
    let metrics = tokio::runtime::Handle::current().metrics();
    let deadline = Instant::now() + WAIT;
    while metrics.num_alive_tasks() != want {
        assert!(
            Instant::now() < deadline,
            "{} tasks alive after {WAIT:?}, {want} expected with {connections} idle connection(s): \
             if `serve` now keeps another task, update IDLE_TASKS",
            metrics.num_alive_tasks()
        );
        // Paces the poll; the condition above decides.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heap_beyond_history_is_flat_and_released_at_close() {
    let _serial = counting::serial().await;
    const CYCLES: usize = 1000;
    let ws = Workspace::new(300);
    let mut manifest = Manifest::load(&ws.manifest()).expect("manifest");
    manifest.set_state_dir(&ws.state_dir());
    let copy = Workspace::new(300);
    let mut copy_manifest = Manifest::load(&copy.manifest()).expect("manifest");
    copy_manifest.set_state_dir(&copy.state_dir());
    std::fs::create_dir_all(copy.sessions_dir()).expect("mkdir");

    settle(0).await;
    let start = held();
    let mut conn = Conn::open(&manifest, None);
    let init = conn
        .call(
            "initialize",
            json!({"protocolVersion": 1, "capabilities": {"approval": {}}}),
        )
        .await;
    let session = init["result"]["session"]["id"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let mut live_100 = 0;
    for cycle in 1..=CYCLES {
        let run = conn
            .send(
                "run",
                json!({"input": [{"type": "text", "text": format!("!echo {cycle}")}]}),
            )
            .await;
        conn.until("permissionRequest", |v| {
            v["params"]["type"] == "permissionRequest"
        })
        .await;
        let cancel = conn.call("cancel", json!({})).await;
        assert_eq!(cancel["result"]["cancelled"], true);
        let done = conn.until("the run answer", |v| v["id"] == run).await;
        assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
        if cycle == 100 {
            settle(1).await;
            live_100 = held() - start;
            let name = format!("{session}.jsonl");
            std::fs::copy(
                ws.sessions_dir().join(&name),
                copy.sessions_dir().join(&name),
            )
            .expect("copy the log");
        }
    }
    settle(1).await;
    let live_end = held() - start;
    conn.close().await;
    settle(0).await;
    let after_close = held() - start;

    let history_100 = resumed_heap(&copy_manifest, &session).await;
    let history_end = resumed_heap(&manifest, &session).await;
    let beyond_100 = live_100 - history_100;
    let beyond_end = live_end - history_end;
    eprintln!(
        "heap held (bytes): live at cycle 100 {live_100}, at {CYCLES} {live_end}; a resumed copy of the same history {history_100} / {history_end}; beyond history {beyond_100} -> {beyond_end} ({:+} B, {:+.1} B/cycle); after close {after_close}",
        beyond_end - beyond_100,
        (beyond_end - beyond_100) as f64 / (CYCLES - 100) as f64
    );
    // Beyond the history (which is kept by design), a cycle may leave at most a few bytes: the
    // resolved-request set keeps each request id (about 40 bytes plus table overhead) so that a
    // late reply gets `-32004` `resolved`.
    assert!(
        beyond_end - beyond_100 <= 200 * (CYCLES as i64 - 100),
        "the live pod holds {} bytes more than its history after {CYCLES} cycles",
        beyond_end - beyond_100
    );
    assert!(
        after_close.abs() < 256 * 1024,
        "{after_close} bytes still held after the connection closed"
    );
}
