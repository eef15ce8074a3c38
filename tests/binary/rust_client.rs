//! The jsonrpsee client on the stdio transport of `pod::client`, typed by the protocol's list of
//! methods, runs one full ask flow against the real binary.

use crate::common;

use std::process::Stdio;

use pod::client::{call, connect, events};
use pod::protocol::{
    method, ApprovalCapability, CallResult, ClientCapabilities, EmptyParams, Event,
    InitializeParams, InputItem, Item, PermissionReplyParams, ReplyDecision, Resolution,
    ResolvedBy, RunParams, StopReason,
};

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(*common::WAIT, f).await {
        Ok(t) => t,
        Err(_) => panic!("timed out: {what}"),
    }
}

#[tokio::test]
async fn a_jsonrpsee_client_runs_an_ask_flow() {
    let ws = common::Workspace::new(300);
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["serve", "--trust"])
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

    let init = within(
        "initialize",
        call::<method::Initialize>(
            &client,
            &InitializeParams {
                protocol_version: 1,
                client_info: None,
                capabilities: ClientCapabilities {
                    approval: Some(ApprovalCapability {}),
                },
            },
        ),
    )
    .await
    .expect("initialize");
    assert!(!init.session.resumed);

    let runner = client.clone();
    let run = tokio::spawn(async move {
        let input = vec![InputItem::Text {
            text: "!touch via-client.txt".into(),
        }];
        call::<method::Run>(&runner, &RunParams { input }).await
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
    let reply = PermissionReplyParams {
        request_id: request.request_id.clone(),
        decision: ReplyDecision::AllowOnce,
        message: None,
        input: None,
    };
    within(
        "permissionReply",
        call::<method::PermissionReply>(&client, &reply),
    )
    .await
    .expect("reply");

    let result = within("run", run).await.expect("join").expect("run");
    assert_eq!(result.stop_reason, StopReason::EndTurn);
    // The turn's events up to its last, `turnEnded` (the client may hand them over after the
    // run response: wait for that event, not for a fixed time).
    while !seen.iter().any(|e| matches!(e, Event::TurnEnded { .. })) {
        let event = within("turnEnded", events.next())
            .await
            .expect("event stream open")
            .expect("event parses");
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
        Event::ToolResult(CallResult {
            denied_by: None,
            ..
        })
    )));
    assert!(seen.iter().any(|e| matches!(e, Event::TurnEnded { .. })));

    let history = within("history", call::<method::History>(&client, &EmptyParams {}))
        .await
        .expect("history");
    assert!(history
        .items
        .iter()
        .any(|i| matches!(i, Item::ToolResult(CallResult { .. }))));
    let cancel = within("cancel", call::<method::Cancel>(&client, &EmptyParams {}))
        .await
        .expect("cancel");
    assert!(!cancel.cancelled);
    within(
        "shutdown",
        call::<method::Shutdown>(&client, &EmptyParams {}),
    )
    .await
    .expect("shutdown");
    let status = within("exit", child.wait()).await.expect("wait");
    assert!(status.success());
}
