//! The jsonrpsee client on the stdio transport of `pod::client` runs one full ask flow against
//! the real binary.

mod common;

use std::process::Stdio;
use std::time::Duration;

use jsonrpsee::core::client::ClientT;
use pod::client::{connect, events, JsonParams};
use pod::protocol::{
    CancelResult, EmptyResult, Event, HistoryResult, InitializeResult, Item, ReplyDecision,
    Resolution, ResolvedBy, RunResult, StopReason,
};
use serde_json::json;

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(common::WAIT, f).await {
        Ok(t) => t,
        Err(_) => panic!("timed out: {what}"),
    }
}

#[tokio::test]
async fn a_jsonrpsee_client_runs_an_ask_flow() {
    let ws = common::Workspace::new(300);
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("serve")
        .arg("--manifest")
        .arg(ws.manifest())
        .env("XDG_STATE_HOME", ws.state_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn pod");
    let client = std::sync::Arc::new(connect(
        child.stdin.take().expect("stdin"),
        child.stdout.take().expect("stdout"),
    ));
    let mut events = events(&client).await.expect("subscribe");
    let params = |v: serde_json::Value| JsonParams::new(&v).expect("params");

    let init: InitializeResult = within(
        "initialize",
        client.request(
            "initialize",
            params(json!({"protocolVersion": 1, "capabilities": {"approval": {}}})),
        ),
    )
    .await
    .expect("initialize");
    assert!(!init.session.resumed);

    let runner = client.clone();
    let run = tokio::spawn(async move {
        runner
            .request::<RunResult, _>(
                "run",
                JsonParams::new(
                    &json!({"input": [{"type": "text", "text": "!touch via-client.txt"}]}),
                )
                .expect("params"),
            )
            .await
    });

    let mut seen = Vec::new();
    let request = loop {
        let event = within("permissionRequest", events.next())
            .await
            .expect("event stream open")
            .expect("event parses");
        seen.push(event.clone());
        if let Event::PermissionRequest(r) = event {
            break r;
        }
    };
    assert!(request.options.contains(&ReplyDecision::AllowOnce));
    let _: EmptyResult = within(
        "permissionReply",
        client.request(
            "permissionReply",
            params(json!({"requestId": request.request_id, "decision": "allow_once"})),
        ),
    )
    .await
    .expect("reply");

    let result = within("run", run).await.expect("join").expect("run");
    assert_eq!(result.stop_reason, StopReason::EndTurn);
    // The run response follows the turn's last events, so they are all here now.
    while let Ok(Some(Ok(event))) =
        tokio::time::timeout(Duration::from_millis(200), events.next()).await
    {
        seen.push(event);
    }
    assert!(seen.iter().any(|e| matches!(
        e,
        Event::PermissionResolved {
            decision: Resolution::Allow,
            by: ResolvedBy::Client,
            ..
        }
    )));
    assert!(seen.iter().any(|e| matches!(
        e,
        Event::ToolResult {
            denied_by: None,
            ..
        }
    )));
    assert!(seen.iter().any(|e| matches!(e, Event::TurnEnded { .. })));

    let history: HistoryResult = within("history", client.request("history", params(json!({}))))
        .await
        .expect("history");
    assert!(history
        .items
        .iter()
        .any(|i| matches!(i, Item::ToolResult { .. })));
    let cancel: CancelResult = within("cancel", client.request("cancel", params(json!({}))))
        .await
        .expect("cancel");
    assert!(!cancel.cancelled);
    let _: EmptyResult = within("shutdown", client.request("shutdown", params(json!({}))))
        .await
        .expect("shutdown");
    let status = within("exit", child.wait()).await.expect("wait");
    assert!(status.success());
}
