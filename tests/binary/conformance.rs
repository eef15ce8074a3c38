//! JSON-RPC 2.0 conformance of `pod serve` over real pipes, in both framings: the examples of the
//! specification's "Examples" section, the pod's own error codes, and the transport limits.

use crate::common;

use std::time::Duration;

use common::{Framing, PodProcess, Workspace, BOTH};
use serde_json::{json, Value};

fn code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or(0)
}

/// After messages that must get no answer, a marker request proves nothing came before it.
fn assert_nothing_before_marker(pod: &mut PodProcess) {
    pod.send(&json!({"jsonrpc": "2.0", "method": "nope", "id": "marker"}));
    let next = pod.next_reply();
    assert_eq!(next["id"], "marker", "unexpected output: {next}");
}

#[test]
fn spec_examples_in_both_framings() {
    for framing in BOTH {
        let ws = Workspace::new(300);
        let mut pod = PodProcess::spawn(&ws, framing);

        // rpc call of a method that does not exist (positional params), string and number ids.
        let r = pod.request("subtract", json!([42, 23]));
        assert_eq!(code(&r), -32601, "{framing:?}: {r}");
        pod.send_raw(br#"{"jsonrpc": "2.0", "method": "foobar", "id": "1"}"#);
        let r = pod.response(&json!("1"));
        assert_eq!((code(&r), r["id"].clone()), (-32601, json!("1")));

        // notifications: never answered, known or not.
        pod.send_raw(br#"{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}"#);
        pod.send_raw(br#"{"jsonrpc": "2.0", "method": "foobar"}"#);
        assert_nothing_before_marker(&mut pod);

        // rpc call with invalid JSON.
        pod.send_raw(br#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#);
        let r = pod.next_other();
        assert_eq!((code(&r), r["id"].clone()), (-32700, Value::Null), "{r}");

        // rpc call with invalid Request object.
        pod.send_raw(br#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#);
        let r = pod.next_other();
        assert_eq!((code(&r), r["id"].clone()), (-32600, Value::Null), "{r}");

        // rpc call Batch, invalid JSON.
        pod.send_raw(
            br#"[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method"]"#,
        );
        let r = pod.next_other();
        assert!(r.is_object(), "a single error, not an array: {r}");
        assert_eq!(code(&r), -32700);

        // rpc call with an empty Array.
        pod.send_raw(b"[]");
        let r = pod.next_other();
        assert!(r.is_object(), "{r}");
        assert_eq!((code(&r), r["id"].clone()), (-32600, Value::Null));

        // rpc call with an invalid Batch (but not empty).
        pod.send_raw(b"[1]");
        let r = pod.next_other();
        let items = r.as_array().expect("array");
        assert_eq!(items.len(), 1);
        assert_eq!(code(&items[0]), -32600);

        // rpc call with invalid Batch.
        pod.send_raw(b"[1,2,3]");
        let r = pod.next_other();
        let items = r.as_array().expect("array");
        assert_eq!(items.len(), 3);
        assert!(items.iter().all(|i| code(i) == -32600 && i["id"].is_null()));

        // rpc call Batch (mixed): our methods stand in for the spec's sum / get_data.
        pod.initialize(false);
        pod.send_raw(
            br#"[{"jsonrpc": "2.0", "method": "history", "params": {}, "id": "1"},{"jsonrpc": "2.0", "method": "cancel", "params": {}},{"jsonrpc": "2.0", "method": "cancel", "params": {"extra": 7}, "id": "2"},{"foo": "boo"},{"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},{"jsonrpc": "2.0", "method": "history", "id": "9"}]"#,
        );
        let r = pod.next_other();
        let items = r.as_array().expect("array");
        let summary: Vec<(Value, i64, bool)> = items
            .iter()
            .map(|i| (i["id"].clone(), code(i), i.get("result").is_some()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (json!("1"), 0, true),
                (json!("2"), 0, true),
                (Value::Null, -32600, false),
                (json!("5"), -32601, false),
                (json!("9"), 0, true),
            ],
            "{framing:?}"
        );
        assert_eq!(items[1]["result"], json!({"cancelled": false}));

        // rpc call Batch (all notifications): nothing at all.
        pod.send_raw(
            br#"[{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]"#,
        );
        assert_nothing_before_marker(&mut pod);
    }
}

#[test]
fn ids_are_echoed_exactly_and_bad_ids_are_invalid() {
    let ws = Workspace::new(300);
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.send_raw(br#"{"jsonrpc":"2.0","id":-7,"method":"history"}"#);
    assert_eq!(code(&pod.response(&json!(-7))), -32001);
    pod.send_raw(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"history"}"#);
    let r = pod.next_other();
    assert_eq!((code(&r), r["id"].clone()), (-32600, Value::Null));
    pod.send_raw(br#"{"id":3,"method":"history"}"#);
    assert_eq!(code(&pod.response(&json!(3))), -32600, "missing jsonrpc");
    pod.send_raw(br#"{"jsonrpc":"1.0","id":4,"method":"history"}"#);
    assert_eq!(code(&pod.response(&json!(4))), -32600, "jsonrpc 1.0");
}

#[test]
fn lifecycle_errors_use_the_pod_codes() {
    let ws = Workspace::new(300);
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    // Before initialize.
    for method in ["run", "cancel", "permissionReply", "history", "shutdown"] {
        let r = pod.request(method, json!({}));
        assert_eq!(code(&r), -32001, "{method}: {r}");
    }
    // Wrong version.
    let r = pod.request("initialize", json!({"protocolVersion": 2}));
    assert_eq!(code(&r), -32006);
    assert_eq!(r["error"]["data"]["supported"], json!([1]));
    // Missing version names the field.
    let r = pod.request("initialize", json!({}));
    assert_eq!(code(&r), -32602);
    assert!(r["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("protocolVersion"));
    // Unknown fields are ignored; a malformed capability means none.
    let init = pod.call(
        "initialize",
        json!({"protocolVersion": 1, "capabilities": {"approval": true}, "future": 1}),
    );
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["session"]["resumed"], false);
    assert_eq!(init["permissions"]["askMode"], "failClosed");
    assert_eq!(init["permissions"]["defaultAction"], "ask");
    assert_eq!(init["permissions"]["enabled"], true);
    assert!(init["tools"].is_array());
    // Second initialize.
    let r = pod.request("initialize", json!({"protocolVersion": 1}));
    assert_eq!(code(&r), -32002);
    // Params errors name the field.
    let r = pod.request("run", json!({"inputs": []}));
    assert_eq!(code(&r), -32602);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("`input`"),
        "{r}"
    );
    let r = pod.request("run", json!({"input": [{"type": "skill", "name": "nope"}]}));
    assert_eq!(code(&r), -32602);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("known skills"),
        "{r}"
    );
    let r = pod.request("permissionReply", json!({"requestId": "x"}));
    assert_eq!(code(&r), -32602);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("`decision`"),
        "{r}"
    );
    // Shutdown, then every request is -32005 (a batch makes the order certain).
    pod.send_raw(
        br#"[{"jsonrpc":"2.0","id":"s","method":"shutdown"},{"jsonrpc":"2.0","id":"h","method":"history"},{"jsonrpc":"2.0","id":"u","method":"nope"}]"#,
    );
    let r = pod.next_other();
    let items = r.as_array().expect("array");
    assert_eq!(items[0]["result"], json!({}));
    assert_eq!(code(&items[1]), -32005);
    // A method that does not exist, too: the pod is shutting down whatever is asked.
    assert_eq!(code(&items[2]), -32005, "{}", items[2]);
    assert!(pod.wait_exit(Duration::from_secs(2)).success());
}

#[test]
fn oversized_and_non_utf8_messages_are_rejected_and_the_connection_survives() {
    for framing in BOTH {
        let ws = Workspace::new(300);
        let mut pod = PodProcess::spawn_with(&ws, framing, &["--max-message-bytes", "1024"]);
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"history","params":{{"pad":"{}"}}}}"#,
            "x".repeat(5000)
        );
        pod.send_raw(big.as_bytes());
        let r = pod.next_other();
        assert_eq!(
            (code(&r), r["id"].clone()),
            (-32600, Value::Null),
            "{framing:?}"
        );
        pod.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\xff\"}");
        let r = pod.next_other();
        assert_eq!(code(&r), -32700, "{framing:?}");
        let init = pod.initialize(true);
        assert_eq!(init["permissions"]["askMode"], "client");
    }
}

#[test]
fn shutdown_answers_then_exits_zero() {
    for framing in BOTH {
        let ws = Workspace::new(300);
        let mut pod = PodProcess::spawn(&ws, framing);
        pod.initialize(true);
        assert_eq!(pod.call("shutdown", json!({})), json!({}));
        assert!(pod.wait_exit(Duration::from_secs(2)).success());
        assert_eq!(ws.session_logs().len(), 1);
    }
}

#[test]
fn a_bad_manifest_exits_one_before_any_protocol() {
    let ws = Workspace::with_manifest("[pod]\nname = 3\n");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["serve", "--manifest"])
        .arg(ws.manifest())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run pod");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert!(!output.stderr.is_empty());
}
