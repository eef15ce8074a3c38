//! The OpenAI-compatible provider (chat completions, SSE) against the loopback mock in
//! `mock_provider`: streaming, parallel tool calls, errors and retries, cancellation, and whole
//! turns through a pod.

use crate::mock_provider;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use pod::manifest::Provider;
use pod::model::{from_config, ModelError, ModelStop, ToolCall};

use mock_provider::*;

fn chunk(delta: Value, finish: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )
}

fn o_usage(prompt: u64, completion: u64) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
    )
}

const DONE: &str = "data: [DONE]\n\n";

#[tokio::test]
async fn openai_text_only() {
    let body = chunk(json!({"role": "assistant", "content": ""}), None)
        + &chunk(json!({"content": "Hel"}), None)
        + ": keep-alive\r\n\r\n"
        + &chunk(json!({"content": "lo"}), None).replace('\n', "\r\n")
        + &chunk(json!({}), Some("stop"))
        + &o_usage(9, 2)
        + DONE;
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
    let (result, deltas) = run(model.as_ref(), &user("hi")).await;
    let response = result.unwrap();
    assert_eq!(deltas, vec!["Hel", "lo"]);
    assert_eq!(response.text, "Hello");
    assert_eq!(response.stop, ModelStop::EndTurn);
    assert_eq!(response.usage.input_tokens, 9);
    assert_eq!(response.usage.output_tokens, 2);

    let r = &mock.requests()[0];
    assert_eq!(r.path, "/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer test-key-123"));
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["stream_options"]["include_usage"], true);
    assert_eq!(r.body["max_tokens"], 1000);
    assert_eq!(r.body["messages"][0]["role"], "system");
    assert_eq!(r.body["messages"][0]["content"], "be brief");
    assert_eq!(r.body["messages"][1]["role"], "user");
    assert_eq!(r.body["tools"][0]["type"], "function");
    assert_eq!(r.body["tools"][0]["function"]["name"], "bash");
    assert_eq!(
        r.body["tools"][0]["function"]["parameters"]["type"],
        "object"
    );
}

#[tokio::test]
async fn openai_one_tool_call() {
    let body = chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_x", "type": "function", "function": {"name": "bash", "arguments": ""}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\""}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": ": \"ls\"}"}}]}),
        None,
    ) + &chunk(json!({}), Some("tool_calls"))
        + &o_usage(3, 4)
        + DONE;
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("list")).await;
    let response = result.unwrap();
    assert_eq!(response.stop, ModelStop::ToolUse);
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "call_x".into(),
            name: "bash".into(),
            input: json!({"command": "ls"}),
        }]
    );
}

#[tokio::test]
async fn openai_parallel_calls_with_interleaved_arguments() {
    let call = |index: u64, id: &str, name: &str| {
        chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            None,
        )
    };
    let args = |index: u64, part: &str| {
        chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
            None,
        )
    };
    let body = chunk(json!({"role": "assistant", "content": "Two things."}), None)
        + &call(0, "call_a", "read")
        + &call(1, "call_b", "bash")
        + &args(1, "{\"comm")
        + &args(0, "{\"pa")
        + &call(2, "call_c", "glob")
        + &args(1, "and\": \"pwd\"}")
        + &args(2, "{\"pattern\": \"*.rs\"}")
        + &args(0, "th\": \"x.txt\"}")
        + &chunk(json!({}), Some("tool_calls"))
        + DONE;
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("go")).await;
    let response = result.unwrap();
    assert_eq!(response.text, "Two things.");
    let calls: Vec<(&str, &str, Value)> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.input.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_a", "read", json!({"path": "x.txt"})),
            ("call_b", "bash", json!({"command": "pwd"})),
            ("call_c", "glob", json!({"pattern": "*.rs"})),
        ]
    );
}

#[tokio::test]
async fn openai_invalid_arguments_name_the_tool() {
    let body = chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_x", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": "}}]}),
        None,
    ) + &chunk(json!({}), Some("tool_calls"))
        + DONE;
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("go")).await;
    match result {
        Err(ModelError::Protocol { message, .. }) => assert!(message.contains("bash"), "{message}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test]
async fn openai_error_result_is_marked_in_content() {
    let body =
        chunk(json!({"content": "Understood."}), None) + &chunk(json!({}), Some("stop")) + DONE;
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &denied_conversation()).await;
    assert_eq!(result.unwrap().text, "Understood.");

    let body = &mock.requests()[0].body;
    let messages = body["messages"].as_array().unwrap();
    // system, user, assistant, tool
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], "Deleting.");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(messages[2]["tool_calls"][0]["type"], "function");
    assert_eq!(messages[2]["tool_calls"][0]["function"]["name"], "bash");
    let arguments: Value = serde_json::from_str(
        messages[2]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(arguments, json!({"command": "rm -rf x"}));
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_1");
    assert_eq!(
        messages[3]["content"],
        "[tool error] permission denied: rm is not allowed"
    );
    assert_eq!(pod::model::openai::ERROR_MARKER, "[tool error] ");
}

#[tokio::test]
async fn openai_429_retry_after_then_success() {
    let body = chunk(json!({"content": "ok"}), None) + &chunk(json!({}), Some("stop")) + DONE;
    let mock = Mock::start(vec![
        Reply::json(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
        )
        .header("retry-after", "0"),
        Reply::sse(body),
    ])
    .await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
    let start = Instant::now();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    assert_eq!(result.unwrap().text, "ok");
    assert_eq!(mock.requests().len(), 2);
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn openai_500_three_times_is_a_clear_error() {
    let mock = Mock::start(vec![Reply::json(
        503,
        json!({"error": {"message": "The server is overloaded", "type": "server_error"}}),
    )])
    .await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    match result {
        Err(e @ ModelError::Api { status: 503, .. }) => {
            let text = e.to_string();
            assert!(text.contains("The server is overloaded"), "{text}");
            assert!(text.contains("3 attempts"), "{text}");
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn openai_stream_cut_mid_event() {
    let body = chunk(json!({"content": "partial"}), None)
        + "data: {\"id\": \"chatcmpl-1\", \"choices\": [{\"index\": 0, \"delta\": {\"conte";
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
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
async fn openai_cancel_mid_stream() {
    let body = chunk(json!({"role": "assistant", "content": "Hel"}), None);
    let mock = Mock::start(vec![Reply::sse_stall(body)]).await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
    let (result, elapsed) = cancel_after_first_delta(model).await;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
}

#[tokio::test]
async fn openai_400_carries_the_api_message() {
    let mock = Mock::start(vec![Reply::json(
        400,
        json!({"error": {"message": "Invalid 'messages[1].content'", "type": "invalid_request_error", "param": null, "code": null}}),
    )])
    .await;
    let key = key_file();
    let model = from_config(&config(Provider::Openai, &mock.base, &key)).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    match result {
        Err(ModelError::Api {
            status: 400,
            message,
            ..
        }) => assert!(
            message.contains("Invalid 'messages[1].content'"),
            "{message}"
        ),
        other => panic!("expected a 400 API error, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn openai_missing_key_names_the_env_var() {
    let mut cfg = config(Provider::Openai, "http://127.0.0.1:9", &key_file());
    cfg.api_key_file = None;
    cfg.api_key_env = Some("POD_TEST_OPENAI_KEY_THAT_IS_NOT_SET".into());
    match from_config(&cfg) {
        Err(ModelError::Environment(message)) => {
            assert!(
                message.contains("POD_TEST_OPENAI_KEY_THAT_IS_NOT_SET"),
                "{message}"
            )
        }
        Err(other) => panic!("expected an environment error, got {other:?}"),
        Ok(_) => panic!("expected a config error"),
    }
}

#[tokio::test]
async fn openai_local_server_without_key() {
    // llama.cpp-style: no [DONE] after the finish chunk, no key configured.
    let body = chunk(json!({"content": "local"}), None) + &chunk(json!({}), Some("stop"));
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let key = key_file();
    let mut cfg = config(Provider::Openai, &mock.base, &key);
    cfg.api_key_file = None;
    let model = from_config(&cfg).unwrap();
    let (result, _) = run(model.as_ref(), &user("hi")).await;
    let response = result.unwrap();
    assert_eq!(response.text, "local");
    assert_eq!(response.stop, ModelStop::EndTurn);
    assert_eq!(mock.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn openai_end_to_end_denied_call_is_sent_back_and_the_turn_goes_on() {
    let first = chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_rm", "type": "function", "function": {"name": "bash", "arguments": ""}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\":"}}]}),
        None,
    ) + &chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"rm -rf build\"}"}}]}),
        None,
    ) + &chunk(json!({}), Some("tool_calls"))
        + &o_usage(13, 5)
        + DONE;
    let parts = ["I could not ", "delete build: ", "permission denied."];
    let mut second = chunk(json!({"role": "assistant", "content": ""}), None);
    for p in parts {
        second += &chunk(json!({"content": p}), None);
    }
    second += &(chunk(json!({}), Some("stop")) + &o_usage(42, 8) + DONE);
    let mock = Mock::start(vec![Reply::sse(first), Reply::sse(second)]).await;

    let turn = deny_turn("openai", &mock).await;
    assert_denied_turn(&turn, "call_rm", &parts, (13 + 42, 5 + 8));

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.path, "/chat/completions");
        assert_eq!(r.header("authorization"), Some("Bearer test-key-e2e"));
    }
    let messages = requests[1].body["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["tool_calls"][0]["id"], "call_rm");
    let tool: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool.len(), 1, "{messages:?}");
    assert_eq!(tool[0]["tool_call_id"], "call_rm");
    let content = tool[0]["content"].as_str().unwrap();
    let marker = pod::model::openai::ERROR_MARKER;
    assert!(
        content.starts_with(&format!("{marker}permission denied")),
        "{content}"
    );
    // The tool message is the last one: the denial is what the model answers.
    assert_eq!(messages.last().unwrap()["role"], "tool");
}

#[tokio::test]
async fn openai_reply_cut_at_max_tokens_ends_the_turn_as_max_tokens() {
    let body = chunk(json!({"content": "Once upon"}), None)
        + &chunk(json!({}), Some("length"))
        + "data: [DONE]\n\n";
    let mock = Mock::start(vec![Reply::sse(body)]).await;
    let result = text_turn("openai", &mock).await;
    assert_eq!(result.stop_reason, pod::protocol::StopReason::MaxTokens);
}
