//! The network providers against loopback mock servers (no network): a tiny HTTP/1.1 server on
//! 127.0.0.1:0 serves scripted responses (status, headers, SSE bodies, possibly cut mid-event or
//! stalled) and records every request it receives.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use pod::manifest::{ModelConfig, Provider};
use pod::model::{
    from_config, Message, Model, ModelError, ModelRequest, ModelResponse, ModelStop, ToolCall,
    ToolResult,
};
use pod::protocol::ToolInfo;

// ---------------------------------------------------------------------------------------------
// Mock server

/// One scripted response.
#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    /// Keep the connection open after the body (the stream stalls).
    stall: bool,
}

impl Reply {
    /// A complete SSE body; the connection closes after it.
    fn sse(body: impl Into<String>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into(),
            stall: false,
        }
    }

    /// SSE body, then the server stops sending but keeps the connection open.
    fn sse_stall(body: impl Into<String>) -> Reply {
        Reply {
            stall: true,
            ..Reply::sse(body)
        }
    }

    fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
            stall: false,
        }
    }

    fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }
}

#[derive(Debug, Clone)]
struct Recorded {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct Mock {
    base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Mock {
    /// Serves `replies` in order, one per connection (the last one repeats).
    async fn start(replies: Vec<Reply>) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            let mut n = 0usize;
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies[n.min(replies.len() - 1)].clone();
                n += 1;
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let _ = serve(socket, reply, recorded).await;
                });
            }
        });
        Mock { base, requests }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    reply: Reply,
    recorded: Arc<Mutex<Vec<Recorded>>>,
) -> std::io::Result<()> {
    // Read the head, then Content-Length bytes of body.
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .unwrap_or("")
        .split(' ')
        .nth(1)
        .unwrap_or("")
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    recorded.lock().unwrap().push(Recorded {
        path,
        headers,
        body,
    });

    // Close-delimited body (no Content-Length): the stream ends when the socket closes.
    let mut out = format!("HTTP/1.1 {} Mock\r\nconnection: close\r\n", reply.status);
    for (n, v) in &reply.headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&reply.body);
    socket.write_all(out.as_bytes()).await?;
    socket.flush().await?;
    if reply.stall {
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
    socket.shutdown().await
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn key_file() -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "test-key-123\n").unwrap();
    file
}

fn config(provider: Provider, base: &str, key: &tempfile::NamedTempFile) -> ModelConfig {
    ModelConfig {
        provider,
        model: Some("test-model".into()),
        base_url: Some(base.to_string()),
        api_key_env: None,
        api_key_file: Some(key.path().to_path_buf()),
        max_tokens: 1000,
        system: Some("be brief".into()),
        scenario: None,
        timeout: Duration::from_secs(10),
        max_retries: 2,
        max_response_bytes: pod::manifest::DEFAULT_MAX_RESPONSE_BYTES,
        max_tool_calls: pod::manifest::DEFAULT_MAX_TOOL_CALLS,
        response_timeout: pod::manifest::DEFAULT_RESPONSE_TIMEOUT,
    }
}

fn tools() -> Vec<ToolInfo> {
    vec![ToolInfo {
        name: "bash".into(),
        description: "Run a command".into(),
        input_schema: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    }]
}

fn user(text: &str) -> Vec<Message> {
    vec![Message::User { text: text.into() }]
}

/// A conversation whose last message is a denied (error) tool result.
fn denied_conversation() -> Vec<Message> {
    vec![
        Message::User {
            text: "delete it".into(),
        },
        Message::Assistant {
            text: "Deleting.".into(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "bash".into(),
                input: json!({"command": "rm -rf x"}),
            }],
        },
        Message::ToolResults {
            results: vec![ToolResult {
                call_id: "call_1".into(),
                content: "permission denied: rm is not allowed".into(),
                is_error: true,
            }],
        },
    ]
}

async fn run(
    model: &dyn Model,
    messages: &[Message],
) -> (Result<ModelResponse, ModelError>, Vec<String>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let tools = tools();
    let request = ModelRequest {
        system: Some("be brief"),
        messages,
        tools: &tools,
        max_tokens: 1000,
    };
    let result = model.respond(request, &tx, &cancel).await;
    drop(tx);
    let mut deltas = Vec::new();
    while let Some(d) = rx.recv().await {
        deltas.push(d);
    }
    (result, deltas)
}

/// Runs the request, stalls are expected: cancels after the first delta and measures.
async fn cancel_after_first_delta(
    model: Box<dyn Model>,
) -> (Result<ModelResponse, ModelError>, Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let task = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let tools = tools();
            let messages = user("hi");
            let request = ModelRequest {
                system: None,
                messages: &messages,
                tools: &tools,
                max_tokens: 100,
            };
            model.respond(request, &tx, &cancel).await
        })
    };
    let first = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("first delta in time");
    assert_eq!(first.as_deref(), Some("Hel"));
    let start = Instant::now();
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(2), task)
        .await
        .expect("respond returns after cancel")
        .unwrap();
    (result, start.elapsed())
}

// ---------------------------------------------------------------------------------------------
// Anthropic

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
        Err(ModelError::Config(message)) => {
            assert!(
                message.contains("POD_TEST_ANTHROPIC_KEY_THAT_IS_NOT_SET"),
                "{message}"
            )
        }
        Err(other) => panic!("expected a config error, got {other:?}"),
        Ok(_) => panic!("expected a config error"),
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAI-compatible

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

#[tokio::test]
async fn openai_missing_key_names_the_env_var() {
    let mut cfg = config(Provider::Openai, "http://127.0.0.1:9", &key_file());
    cfg.api_key_file = None;
    cfg.api_key_env = Some("POD_TEST_OPENAI_KEY_THAT_IS_NOT_SET".into());
    match from_config(&cfg) {
        Err(ModelError::Config(message)) => {
            assert!(
                message.contains("POD_TEST_OPENAI_KEY_THAT_IS_NOT_SET"),
                "{message}"
            )
        }
        Err(other) => panic!("expected a config error, got {other:?}"),
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

// ---------------------------------------------------------------------------------------------
// End to end: manifest -> pod -> provider against the mock -> denied call -> denial sent back

/// What one end-to-end deny turn left behind.
struct DenyTurn {
    /// Keeps the workspace alive while the test inspects it.
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    pod: std::sync::Arc<pod::pod::Pod>,
    result: pod::protocol::RunResult,
    events: Vec<pod::protocol::Event>,
}

/// Writes a manifest for `provider` pointing at `mock` (key from the env var `key_env`, set here)
/// with `bash "rm *"` denied, creates `build/keep.txt`, and runs one turn.
async fn deny_turn(provider: &str, mock: &Mock, key_env: &str) -> DenyTurn {
    // Unique per test, so tests running in parallel in this binary do not share it.
    std::env::set_var(key_env, "test-key-e2e");
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let manifest = format!(
        r#"
[model]
provider = "{provider}"
model = "test-model"
base_url = "{base}"
api_key_env = "{key_env}"
timeout_secs = 10
max_retries = 0

[permissions]
default_action = "allow"
[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
message = "Deleting files is not allowed in this workspace."
"#,
        base = mock.base,
    );
    std::fs::write(ws.join("pod.toml"), manifest).unwrap();
    std::fs::create_dir(ws.join("build")).unwrap();
    std::fs::write(ws.join("build/keep.txt"), "x").unwrap();
    let mut manifest = pod::manifest::Manifest::load(&ws.join("pod.toml")).unwrap();
    // Session logs beside the workspace, in the same temporary folder.
    manifest.set_state_dir(&dir.path().join("state"));
    let pod = pod::pod::Pod::open(manifest, pod::pod::PodOptions::default()).unwrap();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        pod.run(
            vec![pod::protocol::InputItem::Text {
                text: "clean the build folder".into(),
            }],
            &tx,
            CancellationToken::new(),
        ),
    )
    .await
    .expect("the turn finishes")
    .unwrap();
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    DenyTurn {
        _dir: dir,
        ws,
        pod,
        result,
        events,
    }
}

/// The assertions both providers share: the command did not run, history holds the denial, the
/// turn ended normally, the final text streamed as `textDelta`s, and usage adds up.
fn assert_denied_turn(turn: &DenyTurn, call_id: &str, parts: &[&str], usage: (u64, u64)) {
    use pod::protocol::{DeniedBy, Event, Item, StopReason};

    assert_eq!(
        turn.result.stop_reason,
        StopReason::EndTurn,
        "{:?}",
        turn.result.error
    );
    assert!(
        turn.ws.join("build/keep.txt").exists(),
        "the denied command ran"
    );

    let history = turn.pod.history();
    let results: Vec<_> = history
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult {
                call_id,
                is_error,
                content,
                denied_by,
                ..
            } => Some((call_id.clone(), *is_error, content.clone(), *denied_by)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "{history:?}");
    let (id, is_error, content, denied_by) = &results[0];
    assert_eq!(id, call_id);
    assert!(is_error);
    assert_eq!(*denied_by, Some(DeniedBy::Permission));
    assert!(content.starts_with("permission denied"), "{content}");
    assert!(content.contains("rm -rf build"), "{content}");

    let final_text: String = parts.concat();
    let last_text = history.iter().rev().find_map(|i| match i {
        Item::AssistantText { text, .. } => Some(text.clone()),
        _ => None,
    });
    assert_eq!(last_text.as_deref(), Some(final_text.as_str()));

    let deltas: Vec<&str> = turn
        .events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, parts);
    assert!(turn.events.iter().any(|e| matches!(
        e,
        Event::ToolResult { call_id: c, is_error: true, denied_by: Some(DeniedBy::Permission), .. }
            if c == call_id
    )));
    assert!(turn.events.iter().any(|e| matches!(
        e,
        Event::TurnEnded {
            stop_reason: StopReason::EndTurn,
            ..
        }
    )));

    assert_eq!(turn.result.usage.input_tokens, usage.0);
    assert_eq!(turn.result.usage.output_tokens, usage.1);
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

    let turn = deny_turn("anthropic", &mock, "POD_TEST_E2E_ANTHROPIC_KEY").await;
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

    let turn = deny_turn("openai", &mock, "POD_TEST_E2E_OPENAI_KEY").await;
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

// ---------------------------------------------------------------------------------------------
// docs/providers.md

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
