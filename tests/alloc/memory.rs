//! Issue 19, at the allocator: what the pod holds while a hostile model or a slow client pushes
//! it, measured with a counting global allocator (peak bytes held beyond the start of each test)
//! rather than RSS, so the bound asserted is the pod's own. The allocator (`counting`) counts
//! every thread of the process, so each test holds `counting::serial` (with `heap`'s): one
//! measurement at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::provider::{self, Api, Out, Provider, Script};
use crate::counting;
use pod::manifest::{Manifest, ModelConfig, Provider as ProviderKind};
use pod::model::{Message, ModelRequest};
use pod::tools::{Tool, ToolContext};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

/// Runs `f` and returns the most bytes held during it beyond what was held before.
async fn peak_during<F: std::future::Future>(f: F) -> (F::Output, i64) {
    let before = counting::mark();
    let out = f.await;
    (out, counting::peak() - before)
}

const MIB: i64 = 1024 * 1024;

fn write_one_line(path: &std::path::Path, size: usize) {
    use std::io::Write;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let chunk = vec![b'z'; 1 << 20];
    let mut left = size;
    while left > 0 {
        let k = left.min(chunk.len());
        file.write_all(&chunk[..k]).unwrap();
        left -= k;
    }
    file.write_all(b"\nend\n").unwrap();
}

#[tokio::test]
async fn read_holds_a_small_multiple_of_its_cap_whatever_the_line() {
    let _serial = counting::serial().await;
    let dir = tempfile::tempdir().unwrap();
    write_one_line(&dir.path().join("big.txt"), 64 * 1024 * 1024);
    let ctx = ToolContext::new(dir.path());
    let read = pod::tools::read::Read;
    let (out, peak) = peak_during(read.run(json!({"path": "big.txt", "limit": 1}), &ctx)).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("continue with offset=2"));
    eprintln!("read, 64 MiB line, limit 1: peak {peak} bytes held");
    let cap = pod::tools::read::OUTPUT_CAP as i64;
    assert!(
        peak < 8 * cap,
        "read of a 64 MiB line with limit 1 held {peak} bytes"
    );
    // Past the enormous line: it is skipped, not kept.
    let (out, peak) = peak_during(read.run(json!({"path": "big.txt", "offset": 2}), &ctx)).await;
    assert_eq!(out.content, "     2\tend\n");
    eprintln!("read, offset past a 64 MiB line: peak {peak} bytes held");
    assert!(peak < 8 * cap, "skipping held {peak} bytes");
}

fn config(api: Api, provider: &Provider, key: &std::path::Path) -> ModelConfig {
    ModelConfig {
        provider: match api {
            Api::Anthropic => ProviderKind::Anthropic,
            Api::Openai => ProviderKind::Openai,
        },
        model: Some("m".into()),
        base_url: Some(provider.base.clone()),
        api_key_env: None,
        api_key_file: Some(key.to_path_buf()),
        max_tokens: 100,
        system: None,
        scenario: None,
        timeout: Duration::from_secs(10),
        max_retries: 0,
        ..ModelConfig::default()
    }
}

#[tokio::test]
async fn an_error_body_is_held_only_up_to_a_limit() {
    let _serial = counting::serial().await;
    const BODY: usize = 64 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "k").unwrap();
    for api in provider::BOTH_APIS {
        let body: Arc<Script> = Arc::new(|out: &mut Out| {
            out.put(
                format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {BODY}\r\n\r\n"
                )
                .as_bytes(),
            )?;
            out.fill(BODY)
        });
        let provider = Provider::start(vec![body]);
        let model = pod::model::from_config(&config(api, &provider, &key)).unwrap();
        let messages = [Message::User { text: "hi".into() }];
        let request = ModelRequest {
            system: None,
            messages: &messages,
            tools: &[],
            max_tokens: 100,
        };
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let cancel = CancellationToken::new();
        let (result, peak) = peak_during(model.respond(request, &tx, &cancel)).await;
        let error = result.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("API error 400"), "{api:?}: {error}");
        eprintln!("{api:?}: 400 with a {BODY}-byte body: peak {peak} bytes held");
        assert!(
            peak < 2 * MIB,
            "{api:?}: a {BODY}-byte error body held {peak} bytes"
        );
    }
}

/// An in-process connection whose client stops reading after `initialize`.
#[tokio::test]
async fn a_client_that_stops_reading_keeps_the_pod_flat() {
    let _serial = counting::serial().await;
    let api = Api::Anthropic;
    let body: Arc<Script> = Arc::new(move |out: &mut Out| {
        out.sse_head()?;
        out.put(api.text_open().as_bytes())?;
        let batch = api.delta(&"x".repeat(1000)).repeat(64);
        loop {
            out.put(batch.as_bytes())?;
        }
    });
    let provider = Provider::start(vec![body]);
    let ws = crate::common::Workspace::with_manifest(&provider::manifest(
        api,
        &provider,
        "max_response_bytes = 4000000000",
        "",
    ));
    std::fs::write(ws.path("key"), "k").unwrap();
    let mut manifest = Manifest::load(&ws.manifest()).unwrap();
    manifest.set_state_dir(&ws.state_dir());

    let (client, server) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server);
    let before = counting::mark();
    let served = tokio::spawn(pod::server::serve(
        server_read,
        server_write,
        manifest,
        None,
        None,
        1 << 20,
    ));
    let (client_read, mut to_pod) = tokio::io::split(client);
    let mut from_pod = BufReader::new(client_read).lines();
    let send = |v: Value| format!("{v}\n");
    to_pod
        .write_all(
            send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}))
                .as_bytes(),
        )
        .await
        .unwrap();
    from_pod.next_line().await.unwrap();
    to_pod
        .write_all(
            send(json!({"jsonrpc": "2.0", "id": 2, "method": "run", "params": {"input": [{"type": "text", "text": "go"}]}}))
                .as_bytes(),
        )
        .await
        .unwrap();
    // Not reading: wait until the provider cannot write any more.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = 0;
    let mut still = 0;
    while still < 5 {
        assert!(Instant::now() < deadline, "the stream never stopped");
        // The sampling period of "stopped growing": a stall seen early only means a smaller
        // peak, still under the bound, so it cannot turn a pass into a failure.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = provider.sent();
        still = if now == last && now > 0 { still + 1 } else { 0 };
        last = now;
    }
    let peak = counting::peak() - before;
    eprintln!(
        "stalled client: peak {peak} bytes held, {last} bytes streamed before the stream stopped"
    );
    assert!(
        peak < 24 * MIB,
        "the pod held {peak} bytes for a client that stopped reading ({last} bytes streamed)"
    );
    // Cancel (still without reading), then read everything: the turn ends cancelled.
    to_pod
        .write_all(send(json!({"jsonrpc": "2.0", "id": 3, "method": "cancel"})).as_bytes())
        .await
        .unwrap();
    let read_all = async {
        while let Ok(Some(line)) = from_pod.next_line().await {
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == 2 {
                return v["result"]["stopReason"].clone();
            }
        }
        Value::Null
    };
    let stop = tokio::time::timeout(Duration::from_secs(30), read_all)
        .await
        .expect("the run answered");
    assert_eq!(stop, "cancelled");
    to_pod.shutdown().await.unwrap();
    let code = tokio::time::timeout(Duration::from_secs(5), served).await;
    assert_eq!(code.unwrap().unwrap(), 0);
}
