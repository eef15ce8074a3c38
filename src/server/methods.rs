//! The six methods of protocol v1, registered on a `jsonrpsee` [`RpcModule`] whose context is
//! the [`Connection`].
//!
//! Owns: params reading and result shapes per `protocol.md`. Each method is a few lines that call
//! the connection (lifecycle) or the pod (everything else).

use std::sync::Arc;

use jsonrpsee::types::Params;
use jsonrpsee::{Extensions, RpcModule};
use tokio::sync::mpsc;

use super::connection::Connection;
use super::dispatch;
use super::error::MethodError;
use super::params::Fields;
use super::turn;
use crate::pod::ReplyError;
use crate::protocol::{
    CancelResult, ClientCapabilities, EmptyResult, HistoryResult, InitializeResult, InputItem,
    PeerInfo, ReplyDecision, RunResult, SessionInfo, PROTOCOL_VERSION,
};

type Result<T> = std::result::Result<T, MethodError>;

/// The method table of one connection.
pub fn module(conn: Arc<Connection>) -> RpcModule<Connection> {
    let mut module = RpcModule::from_arc(conn);
    let registered = [
        module
            .register_async_method("initialize", |p, c, _| async move { initialize(&p, &c) })
            .map(|_| ()),
        module
            .register_async_method("run", |p, c, e| async move { run(p, c, e).await })
            .map(|_| ()),
        module
            .register_async_method("cancel", |_, c, _| async move { cancel(&c) })
            .map(|_| ()),
        module
            .register_async_method("permissionReply", |p, c, _| async move {
                permission_reply(&p, &c)
            })
            .map(|_| ()),
        module
            .register_async_method("history", |_, c, _| async move { history(&c) })
            .map(|_| ()),
        module
            .register_async_method("shutdown", |_, c, _| async move { shutdown(&c) })
            .map(|_| ()),
    ];
    for r in registered {
        // Only a duplicate name fails, and the six names are distinct.
        if let Err(e) = r {
            tracing::error!("registering a method: {e}");
        }
    }
    module
}

fn initialize(params: &Params<'_>, conn: &Connection) -> Result<InitializeResult> {
    conn.check_can_initialize()?;
    let fields = Fields::parse(params)?;
    let version: u32 = fields.required("protocolVersion")?;
    if version != PROTOCOL_VERSION {
        return Err(MethodError::UnsupportedProtocolVersion(version));
    }
    // Optional, but a present `clientInfo` of the wrong shape is a -32602 naming it.
    let client: Option<PeerInfo> = fields.optional("clientInfo")?;
    // A malformed capabilities object means "no capabilities", never an error.
    let capabilities: ClientCapabilities = fields
        .optional("capabilities")
        .ok()
        .flatten()
        .unwrap_or_default();
    let opened = conn.open(capabilities.approval.is_some())?;
    if let Some(client) = client {
        tracing::info!(name = %client.name, version = %client.version, "client connected");
    }
    let pod = &opened.pod;
    Ok(InitializeResult {
        protocol_version: PROTOCOL_VERSION,
        pod_info: PeerInfo {
            // `[pod] name` (default "pod"): lets a client tell its pods apart.
            name: pod.manifest().name.clone(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        session: SessionInfo {
            id: pod.session_id().to_string(),
            resumed: pod.resumed(),
            dropped_grants: pod.dropped_grants(),
        },
        tools: pod.tools().to_vec(),
        permissions: pod.permissions_info(),
        sandbox: pod.sandbox_info(),
    })
}

async fn run(params: Params<'static>, conn: Arc<Connection>, ext: Extensions) -> Result<RunResult> {
    let opened = conn.opened()?;
    let input: Vec<InputItem> = Fields::parse(&params)?.required("input")?;
    let cancel = conn.begin_turn()?;
    let (events, events_rx) = mpsc::channel(turn::EVENT_QUEUE);
    let pod = opened.pod.clone();
    // The sink moves into the turn, so the event stream ends exactly when the turn does.
    let the_turn = async move { pod.run(input, &events, cancel).await };
    let result = turn::drive(the_turn, events_rx, conn.outbox(), || {
        dispatch::detach(&ext)
    })
    .await;
    conn.end_turn();
    Ok(result?)
}

fn cancel(conn: &Connection) -> Result<CancelResult> {
    conn.opened()?;
    Ok(CancelResult {
        cancelled: conn.cancel_turn(),
    })
}

fn permission_reply(params: &Params<'_>, conn: &Connection) -> Result<EmptyResult> {
    let opened = conn.opened()?;
    let fields = Fields::parse(params)?;
    let request_id: String = fields.required("requestId")?;
    let decision: ReplyDecision = fields.required("decision")?;
    let message: Option<String> = fields.optional("message")?;
    let unknown = |request_id: String, state: &'static str| MethodError::UnknownPermissionRequest {
        message: format!("no pending permission request {request_id} ({state})"),
        request_id,
        state,
    };
    // Without the approval capability no request ever exists.
    let Some(approvals) = &opened.approvals else {
        return Err(unknown(request_id, "unknown"));
    };
    match approvals.reply(&request_id, decision, message) {
        Ok(()) => Ok(EmptyResult {}),
        Err(ReplyError::Unknown(id)) => Err(unknown(id, "unknown")),
        Err(ReplyError::AlreadyResolved(id)) => Err(unknown(id, "resolved")),
        Err(ReplyError::NotOffered {
            request_id,
            decision,
            offered,
        }) => {
            let name = |d: &ReplyDecision| serde_json::to_string(d).unwrap_or_default();
            let offered: Vec<String> = offered.iter().map(name).collect();
            Err(MethodError::InvalidParams(format!(
                "`decision`: {} was not offered for request {request_id} (offered: {}); the request is still pending",
                name(&decision),
                offered.join(", ")
            )))
        }
    }
}

fn history(conn: &Connection) -> Result<HistoryResult> {
    let opened = conn.opened()?;
    Ok(HistoryResult {
        items: opened.pod.history(),
    })
}

fn shutdown(conn: &Connection) -> Result<EmptyResult> {
    conn.opened()?;
    conn.begin_shutdown();
    Ok(EmptyResult {})
}
