//! Bad input over real pipes (`docs/hardening.md`, item 2): invalid UTF-8, a 100 MiB line,
//! 10k-deep nested JSON, wrong types in every param, ids of every JSON type, and a flood of bogus
//! `permissionReply`s while a turn waits for approval. After each, the connection must still work.

use crate::common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::{Framing, PodProcess, Workspace, BOTH};
use serde_json::{json, Value};

fn code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or(0)
}

fn message(response: &Value) -> String {
    response["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn text(input: &str) -> Value {
    json!({"input": [{"type": "text", "text": input}]})
}

/// The connection still works: a `history` request is answered.
fn still_works(pod: &mut PodProcess) {
    let history = pod.call("history", json!({}));
    assert!(history["items"].is_array(), "{history}");
}

fn started(ws: &Workspace, framing: Framing) -> PodProcess {
    let mut pod = PodProcess::spawn(ws, framing);
    pod.initialize(true);
    pod
}

#[test]
fn invalid_utf8_is_a_parse_error_and_the_connection_keeps_working() {
    let ws = Workspace::new(300);
    for framing in BOTH {
        let mut pod = started(&ws, framing);
        pod.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"history\",\"params\":{\"x\":\"\xff\xfe\"}}");
        let err = pod.next_other();
        assert_eq!(code(&err), -32700, "{err}");
        assert_eq!(err["id"], Value::Null);
        // A lone continuation byte, an overlong encoding, a surrogate half.
        for bad in [
            &b"\x80"[..],
            b"{\"a\":\"\xc0\xaf\"}",
            b"{\"a\":\"\xed\xa0\x80\"}",
        ] {
            pod.send_raw(bad);
            assert_eq!(code(&pod.next_other()), -32700);
        }
        still_works(&mut pod);
    }
}

/// Streams a 100 MiB message in 1 MiB chunks, sampling the pod's RSS as it goes.
fn stream_huge(pod: &mut PodProcess, framing: Framing) -> u64 {
    const TOTAL: usize = 100 * 1024 * 1024;
    const CHUNK: usize = 1024 * 1024;
    let head = br#"{"jsonrpc":"2.0","id":99,"method":"history","params":{"pad":""#;
    let tail = br#""}}"#;
    if framing == Framing::Headers {
        pod.send_bytes(format!("Content-Length: {TOTAL}\r\n\r\n").as_bytes());
    }
    pod.send_bytes(head);
    let chunk = vec![b'a'; CHUNK];
    let mut sent = head.len();
    let mut peak = 0;
    while sent + tail.len() < TOTAL {
        let n = CHUNK.min(TOTAL - tail.len() - sent);
        pod.send_bytes(&chunk[..n]);
        sent += n;
        peak = peak.max(pod.rss_kib());
    }
    pod.send_bytes(tail);
    if framing == Framing::Lines {
        pod.send_bytes(b"\n");
    }
    peak.max(pod.rss_kib())
}

#[test]
fn a_100_mib_message_is_rejected_without_buffering_it() {
    let ws = Workspace::new(300);
    for framing in BOTH {
        let mut pod = started(&ws, framing);
        let before = pod.rss_kib();
        let peak = stream_huge(&mut pod, framing);
        let err = pod.next_other();
        assert_eq!(code(&err), -32600, "{err}");
        assert_eq!(err["id"], Value::Null);
        assert!(message(&err).contains("larger than"), "{err}");
        still_works(&mut pod);
        eprintln!("{framing:?}: RSS before {before} KiB, peak while streaming 100 MiB {peak} KiB");
        // The default limit is 16 MiB: the reader may hold up to that much of the line before it
        // knows it is too long (twice that while its buffer grows), never the whole 100 MiB.
        // Growth over the pod's own RSS at rest, which moves with its dependencies.
        assert!(
            peak.saturating_sub(before) < 40 * 1024,
            "RSS grew from {before} to {peak} KiB while a 100 MiB message streamed in"
        );
    }
}

fn nested(depth: usize, open: &str, close: &str, leaf: &str) -> String {
    let mut s = String::with_capacity(depth * (open.len() + close.len()) + leaf.len());
    for _ in 0..depth {
        s.push_str(open);
    }
    s.push_str(leaf);
    for _ in 0..depth {
        s.push_str(close);
    }
    s
}

#[test]
fn ten_thousand_deep_json_is_an_error_not_a_crash() {
    let ws = Workspace::new(300);
    let arrays = nested(10_000, "[", "]", "1");
    let objects = nested(10_000, r#"{"a":"#, "}", "1");
    for framing in BOTH {
        let mut pod = started(&ws, framing);
        for deep in [&arrays, &objects] {
            // As a params member of each method that reads params.
            for (method, field) in [
                ("history", "x"),
                ("run", "input"),
                ("permissionReply", "requestId"),
                ("initialize", "capabilities"),
            ] {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":"deep","method":"{method}","params":{{"{field}":{deep}}}}}"#
                );
                pod.send_raw(body.as_bytes());
                let r = pod.response(&json!("deep"));
                if method != "history" {
                    assert!(r.get("error").is_some(), "{method}: {r}");
                    assert!(
                        [-32700, -32600, -32602, -32002].contains(&code(&r)),
                        "{method}: {r}"
                    );
                }
            }
            // As the whole message, and as the params themselves.
            pod.send_raw(deep.as_bytes());
            let r = pod.next_other();
            assert!(r.get("error").is_some() || r.is_array(), "{r}");
            let body = format!(r#"{{"jsonrpc":"2.0","id":"p","method":"run","params":{deep}}}"#);
            pod.send_raw(body.as_bytes());
            let r = pod.response(&json!("p"));
            assert!(r.get("error").is_some(), "{r}");
        }
        still_works(&mut pod);
    }
}

#[test]
fn wrong_types_in_every_param_name_the_field() {
    let ws = Workspace::new(300);
    // Before initialize: initialize's own params.
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    for bad in [
        json!("1"),
        json!(1.5),
        json!(-1),
        json!([1]),
        json!({}),
        json!(true),
    ] {
        let r = pod.request(
            "initialize",
            json!({"protocolVersion": bad, "capabilities": {"approval": {}}}),
        );
        assert_eq!(code(&r), -32602, "protocolVersion {bad}: {r}");
        assert!(message(&r).contains("`protocolVersion`"), "{r}");
    }
    let r = pod.request("initialize", json!({}));
    assert_eq!(code(&r), -32602);
    assert!(message(&r).contains("`protocolVersion`"), "{r}");
    let r = pod.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": 5, "capabilities": {"approval": {}}}),
    );
    assert_eq!(code(&r), -32602, "clientInfo: {r}");
    assert!(message(&r).contains("`clientInfo`"), "{r}");
    let r = pod.request(
        "initialize",
        json!({"protocolVersion": 1, "clientInfo": {"name": 1, "version": "x"}, "capabilities": {"approval": {}}}),
    );
    assert_eq!(code(&r), -32602, "clientInfo.name: {r}");
    assert!(message(&r).contains("`clientInfo`"), "{r}");
    // Params that are not an object.
    let r = pod.request("initialize", json!([1]));
    assert_eq!(code(&r), -32602, "{r}");
    // A malformed `capabilities` means "no capabilities" (protocol.md), never an error.
    let init = pod.call(
        "initialize",
        json!({"protocolVersion": 1, "capabilities": "approval"}),
    );
    assert_eq!(init["permissions"]["askMode"], "failClosed");

    let mut pod = started(&ws, Framing::Lines);
    for bad in [
        json!("text"),
        json!(1),
        json!({}),
        json!([1]),
        json!([{"type": "text"}]),
        json!([{"type": "text", "text": 5}]),
        json!([{"type": "skill", "name": []}]),
        json!([{"type": "image", "text": "x"}]),
        json!([]),
    ] {
        let r = pod.request("run", json!({ "input": bad }));
        assert_eq!(code(&r), -32602, "input {bad}: {r}");
        assert!(message(&r).contains("input"), "{r}");
    }
    let r = pod.request("run", json!({}));
    assert!(message(&r).contains("`input`"), "{r}");
    let r = pod.request("run", json!([[{"type": "text", "text": "x"}]]));
    assert_eq!(code(&r), -32602, "{r}");

    let good = json!({"requestId": "perm_x", "decision": "deny", "message": "m"});
    for (field, bads) in [
        (
            "requestId",
            vec![json!(1), json!([]), json!({}), json!(true)],
        ),
        (
            "decision",
            vec![
                json!(1),
                json!("maybe"),
                json!([]),
                json!({}),
                json!("allow"),
            ],
        ),
        (
            "message",
            vec![json!(1), json!([]), json!({}), json!(false)],
        ),
    ] {
        for bad in bads {
            let mut params = good.clone();
            params[field] = bad.clone();
            let r = pod.request("permissionReply", params);
            assert_eq!(code(&r), -32602, "{field} {bad}: {r}");
            assert!(message(&r).contains(&format!("`{field}`")), "{r}");
        }
        let mut params = good.clone();
        if field != "message" {
            params.as_object_mut().map(|o| o.remove(field));
            let r = pod.request("permissionReply", params);
            assert!(message(&r).contains(&format!("`{field}`")), "{r}");
        }
    }
    // The parameterless methods ignore unknown members.
    for method in ["cancel", "history"] {
        let r = pod.request(method, json!({"junk": [1, {"x": null}]}));
        assert!(r.get("result").is_some(), "{method}: {r}");
    }
    // `params` of a type JSON-RPC forbids is an invalid request.
    for method in ["run", "history", "permissionReply", "cancel"] {
        for bad in ["1", "\"x\"", "true", "null"] {
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":"t","method":"{method}","params":{bad}}}"#);
            pod.send_raw(body.as_bytes());
            let r = pod.response(&json!("t"));
            if bad == "null" {
                // Not a valid params value either (JSON-RPC: a structured value or absent).
                assert_eq!(code(&r), -32600, "{method} params null: {r}");
            } else {
                assert_eq!(code(&r), -32600, "{method} params {bad}: {r}");
            }
        }
    }
    still_works(&mut pod);
}

#[test]
fn ids_of_every_json_type() {
    let ws = Workspace::new(300);
    for framing in BOTH {
        let mut pod = started(&ws, framing);
        // Strings and numbers of any form are echoed exactly as written.
        for id in [
            r#""abc""#,
            r#""""#,
            r#""\u00e9\n""#,
            "0",
            "-5",
            "1.5",
            "1e3",
            "-0.0",
            "123456789012345678901234567890",
            "18446744073709551616",
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"history","params":{{}}}}"#);
            pod.send_raw(body.as_bytes());
            let r = pod.next_reply();
            assert!(r.get("result").is_some(), "id {id}: {r}");
            let written: Value = serde_json::from_str(id).unwrap();
            assert_eq!(r["id"], written, "id {id}");
        }
        // `id: null` is a request (JSON-RPC 2.0 allows it, discouraged): answered with id null.
        pod.send_raw(br#"{"jsonrpc":"2.0","id":null,"method":"history","params":{}}"#);
        let r = pod.next_other();
        assert_eq!(r["id"], Value::Null);
        assert!(r.get("result").is_some(), "id null is a request: {r}");
        // An absent id is a notification: no answer at all.
        pod.send_raw(br#"{"jsonrpc":"2.0","method":"history","params":{}}"#);
        // Booleans, objects and arrays are invalid ids: -32600 with id null.
        for id in ["true", "false", "{}", r#"{"a":1}"#, "[]", "[1]"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"history","params":{{}}}}"#);
            pod.send_raw(body.as_bytes());
            let r = pod.next_reply();
            assert_eq!(code(&r), -32600, "id {id}: {r}");
            assert_eq!(r["id"], Value::Null, "id {id}");
        }
        still_works(&mut pod);
    }
}

#[test]
fn a_reply_flood_during_a_turn_is_answered_and_the_real_reply_still_works() {
    const FLOOD: usize = 5_000;
    let ws = Workspace::new(300);
    for framing in BOTH {
        let mut pod = started(&ws, framing);
        let run = pod.start("run", text("!touch flood.txt"));
        let request = pod.wait_event_type("permissionRequest");
        let request_id = request["requestId"].as_str().unwrap_or("").to_string();
        // All pipelined in one write.
        let mut bytes = Vec::new();
        for i in 0..FLOOD {
            let body = json!({"jsonrpc": "2.0", "id": format!("f{i}"), "method": "permissionReply",
                "params": {"requestId": format!("perm_bogus_{i}"), "decision": "allow_once"}})
            .to_string();
            match framing {
                Framing::Lines => {
                    bytes.extend(body.as_bytes());
                    bytes.push(b'\n');
                }
                Framing::Headers => {
                    bytes.extend(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                    bytes.extend(body.as_bytes());
                }
            }
        }
        let t = Instant::now();
        pod.send_bytes(&bytes);
        for i in 0..FLOOD {
            let r = pod.response(&json!(format!("f{i}")));
            assert_eq!(code(&r), -32004, "{r}");
            assert_eq!(r["error"]["data"]["state"], "unknown");
        }
        eprintln!(
            "{framing:?}: {FLOOD} bogus replies answered in {:?}",
            t.elapsed()
        );
        // The real request is still pending and the real reply still works.
        let r = pod.request(
            "permissionReply",
            json!({"requestId": request_id, "decision": "allow_once"}),
        );
        assert_eq!(r["result"], json!({}), "{r}");
        let done = pod.response(&json!(run));
        assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
        // Replies after resolution say "resolved".
        let r = pod.request(
            "permissionReply",
            json!({"requestId": request_id, "decision": "deny"}),
        );
        assert_eq!(code(&r), -32004);
        assert_eq!(r["error"]["data"]["state"], "resolved");
        common::check_event_rules(&pod.events, true);
        still_works(&mut pod);
    }
}

#[test]
fn stdin_closed_mid_message_exits_cleanly() {
    let ws = Workspace::new(300);
    let mut pod = started(&ws, Framing::Lines);
    pod.send_bytes(br#"{"jsonrpc":"2.0","id":1,"meth"#);
    pod.close_stdin();
    let status = pod.wait_exit(Duration::from_secs(5));
    assert!(status.success(), "{status:?}");
    let _ = std::io::stderr().flush();
}
