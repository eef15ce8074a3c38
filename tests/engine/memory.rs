//! The protocol over `pod::server::memory()`: a pod served in this process on an in-memory
//! connection, driven with the typed client, with no binary and no pipes. An ask is answered
//! through the real approval round trip, and what the call did is checked afterwards.

use pod::client::{call, events};
use pod::manifest::Manifest;
use pod::protocol::{
    method, ApprovalCapability, ClientCapabilities, Event, InitializeParams, InputItem,
    PermissionReplyParams, ReplyDecision, RunParams, StopReason,
};

fn manifest(ws: &std::path::Path) -> Manifest {
    let text = "[pod]\nname = \"memory\"\n[model]\nprovider = \"offline\"\n\
                [tools]\nenabled = [\"bash\"]\n[permissions]\ndefault_action = \"ask\"\n\
                [sandbox]\nmode = \"off\"\n";
    let path = ws.join("pod.toml");
    std::fs::write(&path, text).expect("write");
    let mut m = Manifest::parse(text, &path).expect("manifest");
    m.set_state_dir(&ws.join("state"));
    m
}

#[tokio::test]
async fn an_ask_answered_over_the_memory_pair_runs_the_call_and_a_denial_does_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    let (client, served) = pod::server::memory(manifest(&ws));
    let mut stream = events(&client).await.expect("subscribe");
    let init = call::<method::Initialize>(
        &client,
        &InitializeParams {
            protocol_version: 1,
            client_info: None,
            capabilities: ClientCapabilities {
                approval: Some(ApprovalCapability {}),
            },
        },
    )
    .await
    .expect("initialize");
    assert!(init.tools.iter().any(|t| t.name == "bash"));

    for (file, answer) in [
        ("allowed", ReplyDecision::AllowOnce),
        ("denied", ReplyDecision::Deny),
    ] {
        let input = vec![InputItem::Text {
            text: format!("!touch {file}"),
        }];
        let params = RunParams { input };
        let run = call::<method::Run>(&client, &params);
        let answer_it = async {
            // The turn's events until its ask; answered as `answer`.
            while let Some(Ok(event)) = stream.next().await {
                if let Event::PermissionRequest(request) = event {
                    assert_eq!(request.tool, "bash");
                    call::<method::PermissionReply>(
                        &client,
                        &PermissionReplyParams {
                            request_id: request.request_id,
                            decision: answer,
                            message: None,
                            input: None,
                        },
                    )
                    .await
                    .expect("permissionReply");
                    return;
                }
            }
            panic!("the turn ended without asking");
        };
        let (run, ()) = tokio::join!(run, answer_it);
        assert_eq!(run.expect("run").stop_reason, StopReason::EndTurn);
    }
    assert!(ws.join("allowed").exists(), "the approved call did not run");
    assert!(!ws.join("denied").exists(), "the denied call ran");
    drop(stream);
    drop(client);
    assert_eq!(served.await.expect("served"), 0);
}
