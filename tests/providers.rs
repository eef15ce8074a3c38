//! What every network provider shares: transport errors, and the manifests the provider docs
//! show. Each provider's own tests are in `tests/anthropic.rs` and `tests/openai.rs`.

mod mock_provider;

use tokio::net::TcpListener;

use pod::manifest::Provider;
use pod::model::{from_config, ModelError};

use mock_provider::*;

#[tokio::test]
async fn connection_refused_is_a_transport_error_after_retries() {
    // Bind then drop a listener to get a port nobody listens on.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    };
    let key = key_file();
    let mut cfg = config(Provider::Openai, &format!("http://127.0.0.1:{port}"), &key);
    cfg.max_retries = 1;
    let model = from_config(&cfg).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    match result {
        Err(e @ ModelError::Transport { .. }) => {
            assert!(!e.to_string().contains("test-key-123"))
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[test]
fn doc_example_manifests_load() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/providers.md")).unwrap();
    let blocks: Vec<&str> = doc
        .split("```toml\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .collect();
    assert_eq!(
        blocks.len(),
        5,
        "anthropic, openai, llama.cpp, ollama, vllm"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pod.toml");
    for block in blocks {
        let manifest =
            pod::manifest::Manifest::parse(block, &path).unwrap_or_else(|e| panic!("{e}\n{block}"));
        let model = &manifest.model;
        assert_ne!(model.provider, Provider::Offline);
        assert!(model.model.is_some());
        // Local servers without a key configured build without any environment.
        if model.base_url.is_some() && model.api_key_env.is_none() {
            assert!(from_config(model).is_ok(), "{block}");
        }
    }
}
