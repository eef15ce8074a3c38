//! The four fuzzed entry points, shared by the cargo-fuzz targets (`fuzz/fuzz_targets/`) and the
//! proptest smoke tests (`tests/engine/fuzz_smoke.rs`). Each function panics when a property
//! fails, so a fuzzer sees a crash and proptest sees a failing case.
//!
//! Properties:
//! - `dispatch`: bytes fed to the in-process server (transport + dispatch + methods, offline
//!   model, no tools) after a valid `initialize` never panic or hang (5 s budget), every output
//!   line is a JSON-RPC 2.0 message, and a sentinel `history` request sent after the bytes is
//!   answered (the connection keeps working) unless the bytes asked for `shutdown`.
//! - `manifest`: `Manifest::parse` returns Ok or Err, never panics.
//! - `shell`: `permission::shell::extract` and `Policy::decide("bash", ..)` never panic, and
//!   every call yields at least one subject decision.
//! - `frontmatter`: `skills::frontmatter::parse` never panics.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use pod::manifest::Manifest;
use pod::permission::Policy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DISPATCH_MANIFEST: &str = r#"
[pod]
name = "fuzz"
[model]
provider = "offline"
[tools]
enabled = []
[permissions]
default_action = "ask"
"#;

const POLICY_MANIFEST: &str = r#"
[pod]
name = "fuzz"
[model]
provider = "offline"
[permissions]
default_action = "ask"
[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
[[permissions.rule]]
tool = "bash"
pattern = "git *"
action = "allow"
[[permissions.rule]]
tool = "bash"
pattern = "cargo test*"
action = "allow"
[[permissions.rule]]
tool = "file_write"
pattern = "*.env"
action = "deny"
[[permissions.rule]]
tool = "*"
pattern = "*"
action = "ask"
"#;

struct Fixture {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    dispatch: Manifest,
    policy: Policy,
    runtime: tokio::runtime::Runtime,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let workspace = dir.path().canonicalize().expect("canonical tempdir");
        let path = workspace.join("pod.toml");
        std::fs::write(&path, DISPATCH_MANIFEST).expect("write manifest");
        let mut dispatch = Manifest::load(&path).expect("dispatch manifest");
        // Session logs in the throwaway workspace, removed after each input.
        dispatch.set_state_dir(&workspace.join(".pod"));
        let policy = Manifest::parse(POLICY_MANIFEST, &path)
            .expect("policy manifest")
            .policy();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        Fixture {
            _dir: dir,
            workspace,
            dispatch,
            policy,
            runtime,
        }
    })
}

const INIT_LINE: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"capabilities\":{\"approval\":{}}}}\n";
const SENTINEL: &str =
    "{\"jsonrpc\":\"2.0\",\"id\":\"fuzz-sentinel\",\"method\":\"history\",\"params\":{}}";

/// Feeds `data` to an in-process `serve`. The first byte picks the framing: even, NDJSON (an
/// `initialize` line, the bytes, a newline, the sentinel); odd, LSP headers (the same messages
/// with `Content-Length` headers; the bytes may swallow the sentinel there, so only the
/// no-panic / no-hang / well-formed-output properties are checked).
pub fn dispatch(data: &[u8]) {
    let fx = fixture();
    let (mode, body) = match data.split_first() {
        Some((m, rest)) => (*m, rest),
        None => (0, data),
    };
    let headers = mode % 2 == 1;
    let mut input = Vec::with_capacity(body.len() + 256);
    if headers {
        let init = &INIT_LINE[..INIT_LINE.len() - 1];
        input.extend(format!("Content-Length: {}\r\n\r\n", init.len()).as_bytes());
        input.extend(init);
        input.extend(body);
        input.extend(format!("Content-Length: {}\r\n\r\n{SENTINEL}", SENTINEL.len()).as_bytes());
    } else {
        input.extend(INIT_LINE);
        input.extend(body);
        input.extend(b"\n");
        input.extend(SENTINEL.as_bytes());
        input.extend(b"\n");
    }
    // A state folder of its own: runs go on in parallel (the proptest smoke runs several
    // targets at once), and one run removing a shared folder would fail another's open.
    let state = tempfile::tempdir().expect("state folder");
    let mut manifest = fx.dispatch.clone();
    manifest.set_state_dir(state.path());
    let output = fx.runtime.block_on(async move {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let served = tokio::spawn(pod::server::serve(
            server_read,
            server_write,
            manifest,
            None,
            None,
            1 << 16,
        ));
        let (mut client_read, mut client_write) = tokio::io::split(client);
        let writer = tokio::spawn(async move {
            let _ = client_write.write_all(&input).await;
            let _ = client_write.shutdown().await;
            // Keep the write half alive until the server is done reading.
            client_write
        });
        let mut out = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), client_read.read_to_end(&mut out));
        if read.await.is_err() {
            panic!("hang: the server did not finish within 5 s");
        }
        let code = tokio::time::timeout(Duration::from_secs(5), served)
            .await
            .expect("hang: serve did not return")
            .expect("serve task");
        assert_eq!(code, 0, "serve exit code");
        drop(writer.await);
        out
    });
    drop(state);
    let messages = if headers {
        split_headed(&output)
    } else {
        split_lines(&output)
    };
    let mut sentinel_answered = false;
    for text in &messages {
        let v: serde_json::Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("output is not JSON ({e}): {text:?}"));
        check_message(&v, text);
        let answered = |m: &serde_json::Value| m["id"] == "fuzz-sentinel";
        sentinel_answered |= answered(&v) || v.as_array().is_some_and(|a| a.iter().any(answered));
    }
    let asked_shutdown = body.windows(8).any(|w| w == b"shutdown");
    if !headers && !asked_shutdown {
        assert!(
            sentinel_answered,
            "the sentinel request after the fuzz bytes got no answer; output: {:?}",
            String::from_utf8_lossy(&output)
        );
    }
}

fn check_message(v: &serde_json::Value, text: &str) {
    if let Some(batch) = v.as_array() {
        assert!(!batch.is_empty(), "empty batch answer: {text}");
        for m in batch {
            check_message(m, text);
        }
        return;
    }
    assert_eq!(v["jsonrpc"], "2.0", "not a JSON-RPC 2.0 message: {text}");
    let is_event = v["method"] == "event";
    let is_response =
        v.get("id").is_some() && (v.get("result").is_some() || v.get("error").is_some());
    assert!(
        is_event || is_response,
        "neither an event nor a response: {text}"
    );
    if let Some(e) = v.get("error") {
        assert!(e["code"].is_i64(), "error without a code: {text}");
        assert!(e["message"].is_string(), "error without a message: {text}");
    }
}

fn split_lines(out: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(out).expect("stdout is UTF-8");
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "last line unterminated"
    );
    text.lines().map(String::from).collect()
}

fn split_headed(mut out: &[u8]) -> Vec<String> {
    let mut messages = Vec::new();
    while !out.is_empty() {
        let text = std::str::from_utf8(out).expect("stdout is UTF-8");
        let rest = text
            .strip_prefix("Content-Length: ")
            .unwrap_or_else(|| panic!("bad header framing in output: {text:?}"));
        let (n, rest) = rest.split_once("\r\n\r\n").expect("header end");
        let n: usize = n.parse().expect("Content-Length number");
        messages.push(rest[..n].to_string());
        out = &rest.as_bytes()[n..];
    }
    messages
}

pub fn manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = fixture().workspace.join("pod.toml");
    let _ = Manifest::parse(text, Path::new(&path));
}

pub fn shell(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let subjects = pod::permission::shell::extract(&text);
    let _ = format!("{subjects:?}");
    let decision = fixture()
        .policy
        .decide("bash", &serde_json::json!({ "command": text }));
    assert!(
        !decision.subjects.is_empty(),
        "a bash call must yield at least one subject: {text:?}"
    );
}

pub fn frontmatter(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = pod::skills::frontmatter::parse(text);
}
