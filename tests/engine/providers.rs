//! What every network provider shares: transport errors, the manifests the provider docs show,
//! and how HTTP error pages are reported. Each provider's own tests are in
//! `tests/engine/anthropic.rs` and `tests/engine/openai.rs`.

use crate::mock_provider;

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

/// A reply with an HTML body, as a proxy or web server sends on errors.
fn html(status: u16, body: &str) -> Reply {
    Reply {
        status,
        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
        body: body.into(),
        stall: false,
    }
}

#[tokio::test]
async fn an_html_error_page_is_summarised_by_status_and_first_line() {
    let page = "<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n\
                <center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx/1.25.3</center>\n\
                </body>\n</html>\n";
    let mock = Mock::start(vec![html(502, page)]).await;
    let key = key_file();
    let mut cfg = config(Provider::Openai, &mock.base, &key);
    cfg.max_retries = 0;
    let model = from_config(&cfg).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    match result {
        Err(e @ ModelError::Api { status: 502, .. }) => {
            let text = e.to_string();
            assert_eq!(
                text,
                "openai API error 502: an HTML page: 502 Bad Gateway (gave up after 1 attempt)"
            );
        }
        other => panic!("expected a 502 API error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_404_names_the_url_without_its_query() {
    let mock = Mock::start(vec![html(
        404,
        "<html><body><h1>Not Found</h1><p>nothing here</p></body></html>",
    )])
    .await;
    let key = key_file();
    let base = format!("{}/wrong/v1?api-key=secret-in-url", mock.base);
    let model = from_config(&config(Provider::Openai, &base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    match result {
        Err(e @ ModelError::Api { status: 404, .. }) => {
            let text = e.to_string();
            assert!(text.contains("an HTML page: Not Found"), "{text}");
            assert!(
                text.contains(&format!("(URL {}/wrong/v1", mock.base)),
                "{text}"
            );
            assert!(text.contains("check model.base_url"), "{text}");
            assert!(!text.contains("secret-in-url"), "{text}");
        }
        other => panic!("expected a 404 API error, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 1, "a 404 is not retried");
}
