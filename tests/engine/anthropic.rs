//! The Anthropic provider (Messages API, SSE) against the loopback mock in `mock_provider`:
//! streaming, tool calls, errors and retries, cancellation, and whole turns through a pod.

use crate::mock_provider;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use pod::manifest::Provider;
use pod::model::{from_config, Message, ModelError, ModelStop, ToolCall, ToolResult};

use mock_provider::*;

fn ev(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn a_start(input_tokens: u64) -> String {
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
    )
}

fn a_text_block(index: u64, parts: &[&str]) -> String {
    let mut s = ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    );
    for p in parts {
        s += &ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}),
        );
    }
    s += &ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    );
    s
}

fn a_tool_block(index: u64, id: &str, name: &str, parts: &[&str]) -> String {
    let mut s = ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    );
    for p in parts {
        s += &ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}}),
        );
    }
    s += &ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    );
    s
}

fn a_end(stop: &str, output_tokens: u64) -> String {
    ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
    ) + &ev("message_stop", json!({"type": "message_stop"}))
}

#[tokio::test]
async fn anthropic_text_only() {
    let body = a_start(12)
        + ": a comment\n\n"
        + &ev("ping", json!({"type": "ping"}))
        + &a_text_block(0, &["Hel", "lo, ", "world"])
        + &a_end("end_turn", 7);
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let (result, deltas) = run(model.as_ref(), &user("hi")).await;
    let response = result.unwrap();
    assert_eq!(deltas, vec!["Hel", "lo, ", "world"]);
    assert_eq!(response.text, "Hello, world");
    assert_eq!(response.stop, ModelStop::EndTurn);
    assert!(response.tool_calls.is_empty());
    assert_eq!(response.usage.input_tokens, 12);
    assert_eq!(response.usage.output_tokens, 7);

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("test-key-123"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["max_tokens"], 1000);
    assert_eq!(r.body["system"], "be brief");
    assert_eq!(r.body["tools"][0]["name"], "bash");
    assert_eq!(r.body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(r.body["messages"][0]["role"], "user");
    assert_eq!(r.body["messages"][0]["content"][0]["text"], "hi");
}

#[tokio::test]
async fn anthropic_one_tool_call() {
    let body = a_start(5)
        + &a_text_block(0, &["Listing."])
        + &a_tool_block(1, "toolu_1", "bash", &["{\"comm", "and\": \"l", "s\"}"])
        + &a_end("tool_use", 20);
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("list")).await;
    let response = result.unwrap();
    assert_eq!(response.text, "Listing.");
    assert_eq!(response.stop, ModelStop::ToolUse);
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "toolu_1".into(),
            name: "bash".into(),
            input: json!({"command": "ls"}),
        }]
    );
}

#[tokio::test]
async fn anthropic_several_tool_use_blocks() {
    let body = a_start(5)
        + &a_tool_block(0, "toolu_a", "bash", &["{\"command\":", " \"pwd\"}"])
        + &a_tool_block(1, "toolu_b", "read", &["{\"path\": \"a.txt\"}"])
        + &a_tool_block(2, "toolu_c", "glob", &[])
        + &a_end("tool_use", 30);
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("go")).await;
    let response = result.unwrap();
    let calls: Vec<(&str, &str, Value)> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.input.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("toolu_a", "bash", json!({"command": "pwd"})),
            ("toolu_b", "read", json!({"path": "a.txt"})),
            ("toolu_c", "glob", json!({})),
        ]
    );
}

#[tokio::test]
async fn anthropic_error_result_carries_is_error() {
    let body = a_start(5) + &a_text_block(0, &["Understood."]) + &a_end("end_turn", 3);
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let mut conversation = denied_conversation();
    if let Some(Message::ToolResults { results }) = conversation.last_mut() {
        results.push(ToolResult {
            call_id: "call_2".into(),
            content: "ok".into(),
            is_error: false,
        });
    }
    let (result, _) = run(model.as_ref(), &conversation).await;
    assert_eq!(result.unwrap().text, "Understood.");

    let body = &mock.requests()[0].body;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][0]["type"], "text");
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert_eq!(messages[1]["content"][1]["id"], "call_1");
    assert_eq!(messages[1]["content"][1]["input"]["command"], "rm -rf x");
    let results = &messages[2];
    assert_eq!(results["role"], "user");
    assert_eq!(results["content"][0]["type"], "tool_result");
    assert_eq!(results["content"][0]["tool_use_id"], "call_1");
    assert_eq!(
        results["content"][0]["content"],
        "permission denied: rm is not allowed"
    );
    assert_eq!(results["content"][0]["is_error"], true);
    assert!(results["content"][1].get("is_error").is_none());
}

#[tokio::test]
async fn anthropic_429_retry_after_then_success() {
    let body = a_start(1) + &a_text_block(0, &["ok"]) + &a_end("end_turn", 1);
    let mock = Mock::start(vec![
        Reply::json(
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        )
        .header("retry-after", "0"),
        Reply::sse(body),
    ])
    .await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let start = Instant::now();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    assert_eq!(result.unwrap().text, "ok");
    assert_eq!(mock.requests().len(), 2);
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn anthropic_500_three_times_is_a_clear_error() {
    let mock = Mock::start(vec![Reply::json(
        500,
        json!({"type": "error", "error": {"type": "api_error", "message": "internal trouble"}}),
    )])
    .await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    match result {
        Err(ModelError::Api {
            provider,
            status,
            message,
        }) => {
            assert_eq!(provider, "anthropic");
            assert_eq!(status, 500);
            assert!(message.contains("internal trouble"), "{message}");
            assert!(message.contains("3 attempts"), "{message}");
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn anthropic_stream_cut_mid_event() {
    let body = a_start(1)
        + &a_text_block(0, &["partial"])
        + "event: message_delta\ndata: {\"type\": \"message_de";
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let (result, deltas) = run(model.as_ref(), &user("hi")).await;
    assert_eq!(deltas, vec!["partial"]);
    match result {
        Err(ModelError::Transport { message, .. }) => {
            assert!(message.contains("stream ended before the response finished"))
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[tokio::test]
async fn anthropic_stream_ending_before_message_stop() {
    let body = a_start(1) + &a_text_block(0, &["partial"]);
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    assert!(
        matches!(result, Err(ModelError::Transport { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn anthropic_cancel_mid_stream() {
    let body = a_start(1)
        + &ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )
        + &ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        );
    let mock = Mock::start(vec![Reply::sse_stall(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let (result, elapsed) = cancel_after_first_delta(model).await;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
}

#[tokio::test]
async fn anthropic_400_carries_the_api_message() {
    let mock = Mock::start(vec![Reply::json(
        400,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: must be positive"}}),
    )])
    .await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    match result {
        Err(e @ ModelError::Api { status: 400, .. }) => {
            let text = e.to_string();
            assert!(text.contains("max_tokens: must be positive"), "{text}");
            assert!(!text.contains("test-key-123"));
        }
        other => panic!("expected a 400 API error, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn anthropic_error_event_in_stream() {
    let body = a_start(1)
        + &ev(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Anthropic, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    match result {
        Err(ModelError::Api {
            status, message, ..
        }) => {
            assert_eq!(status, 529);
            assert!(message.contains("Overloaded"));
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn anthropic_missing_key_names_the_env_var() {
    let mut cfg = config(Provider::Anthropic, "http://127.0.0.1:9", &key_file());
    cfg.api_key_file = None;
    cfg.api_key_env = Some("POD_TEST_ANTHROPIC_KEY_THAT_IS_NOT_SET".into());
    match from_config(&cfg) {
        Err(ModelError::Environment(message)) => {
            assert!(
                message.contains("POD_TEST_ANTHROPIC_KEY_THAT_IS_NOT_SET"),
                "{message}"
            )
        }
        Err(other) => panic!("expected an environment error, got {other:?}"),
        Ok(_) => panic!("expected a config error"),
    }
}

#[tokio::test]
async fn anthropic_end_to_end_denied_call_is_sent_back_and_the_turn_goes_on() {
    let first = a_start(11)
        + &a_tool_block(
            0,
            "toolu_rm",
            "bash",
            &["{\"command\":", "\"rm -rf build\"}"],
        )
        + &a_end("tool_use", 6);
    let parts = ["I could not ", "delete build: ", "permission denied."];
    let second = a_start(40) + &a_text_block(0, &parts) + &a_end("end_turn", 9);
    let mock = Mock::start(vec![Reply::sse(first), Reply::sse(second)]).await;

    let turn = deny_turn("anthropic", &mock).await;
    assert_denied_turn(&turn, "toolu_rm", &parts, (11 + 40, 6 + 9));

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some("test-key-e2e"));
    }
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1]["role"], "assistant");
    let tool_use = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    assert_eq!(tool_use["id"], "toolu_rm");
    assert_eq!(tool_use["input"], json!({"command": "rm -rf build"}));
    assert_eq!(messages[2]["role"], "user");
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_rm");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("permission denied"),
        "{result}"
    );
}

/// A reply cut off at the token limit ends the turn as `max_tokens`, not `end_turn`.
#[tokio::test]
async fn anthropic_reply_cut_at_max_tokens_ends_the_turn_as_max_tokens() {
    let body = a_start(3) + &a_text_block(0, &["Once upon"]) + &a_end("max_tokens", 4096);
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let result = text_turn("anthropic", &mock).await;
    assert_eq!(result.stop_reason, pod::protocol::StopReason::MaxTokens);
    assert_eq!(result.usage.output_tokens, 4096);
}
