//! The methods of protocol v1: the [`Service`] the dispatcher calls.
//!
//! Owns: the order of checks for a call (lifecycle first, so a request the connection's state
//! refuses is refused whatever its params; then the params, read into their types by
//! [`Request::parse`]; then the method) and the result of each method per docs/protocol.md.
//! Each method is a few lines that call the connection (lifecycle) or the pod (everything else).

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::connection::Connection;
use super::dispatch::{Detach, Reply, Service};
use super::error::MethodError;
use super::stream;
use crate::protocol::{
    method, CancelResult, EmptyResult, ErrorCode, ErrorObject, HistoryResult, InitializeParams,
    InitializeResult, Method, MethodName, PeerInfo, PermissionReplyParams, ReplyDecision, Request,
    RunParams, RunResult, SessionInfo, SetModeParams, SetModeResult, TrustApplyParams,
    PROTOCOL_VERSION,
};
use crate::runtime::{Pod, ReplyError};

type Result<T> = std::result::Result<T, MethodError>;

/// The methods of one connection.
pub struct Methods {
    conn: Arc<Connection>,
}

impl Methods {
    pub fn new(conn: Arc<Connection>) -> Methods {
        Methods { conn }
    }
}

impl Service for Methods {
    fn call(
        &self,
        name: &str,
        params: Option<Box<RawValue>>,
        detach: Detach,
    ) -> Option<BoxFuture<'static, Reply>> {
        let conn = self.conn.clone();
        let Some(method) = MethodName::from_name(name) else {
            // After `shutdown` every request is -32005, a method that does not exist too.
            return conn
                .is_shutting_down()
                .then(|| -> BoxFuture<'static, Reply> {
                    Box::pin(async { Err(MethodError::ShuttingDown.into()) })
                });
        };
        Some(Box::pin(async move {
            conn.admit(method)?;
            let request = Request::parse(method, params.as_deref().map(RawValue::get))
                .map_err(|e| MethodError::InvalidParams(e.0))?;
            match request {
                Request::Initialize(p) => reply::<method::Initialize>(initialize(p, &conn).await),
                Request::Run(p) => reply::<method::Run>(run(p, &conn, detach).await),
                Request::Cancel(_) => reply::<method::Cancel>(cancel(&conn)),
                Request::PermissionReply(p) => {
                    reply::<method::PermissionReply>(permission_reply(p, &conn))
                }
                Request::History(_) => reply::<method::History>(history(&conn)),
                Request::Shutdown(_) => reply::<method::Shutdown>(shutdown(&conn)),
                Request::TrustApply(p) => reply::<method::TrustApply>(trust_apply(p, &conn).await),
                Request::SetMode(p) => reply::<method::SetMode>(set_mode(p, &conn)),
            }
        }))
    }
}

/// A method's outcome as the dispatcher sends it; the type parameter ties each method to the
/// result type the protocol list gives it.
fn reply<M: Method>(outcome: Result<M::Result>) -> Reply {
    let result = outcome?;
    serde_json::value::to_raw_value(&result).map_err(|e| {
        ErrorObject::new(
            ErrorCode::InternalError,
            format!(
                "internal error: cannot serialize the {} result: {e}",
                M::NAME
            ),
        )
    })
}

async fn initialize(params: InitializeParams, conn: &Connection) -> Result<InitializeResult> {
    if params.protocol_version != PROTOCOL_VERSION {
        return Err(MethodError::UnsupportedProtocolVersion(
            params.protocol_version,
        ));
    }
    let opened = conn.open(params.capabilities.approval.is_some()).await?;
    if let Some(client) = params.client_info {
        tracing::info!(name = %client.name, version = %client.version, "client connected");
        opened.pod.set_client(&client.name, &client.version);
    }
    Ok(describe(&opened.pod))
}

/// The session as `initialize` reports it.
fn describe(pod: &Pod) -> InitializeResult {
    InitializeResult {
        protocol_version: PROTOCOL_VERSION,
        pod_info: PeerInfo {
            // `[pod] name` (default "pod"): lets a client tell its pods apart.
            name: pod.manifest().pod.name.clone(),
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
        mcp_servers: pod.mcp_servers(),
        configuration: pod.configuration_info(),
        workspace_trust: pod.workspace_trust(),
        environment: pod.environment(),
    }
}

fn set_mode(params: SetModeParams, conn: &Connection) -> Result<SetModeResult> {
    let opened = conn.opened()?;
    opened
        .pod
        .set_mode(params.mode)
        .map_err(|e| MethodError::InvalidParams(format!("`mode`: {e}")))?;
    Ok(SetModeResult {
        mode: opened.pod.mode(),
    })
}

async fn trust_apply(params: TrustApplyParams, conn: &Connection) -> Result<InitializeResult> {
    let (opened, trust) = conn
        .apply_trust(params.decision, params.cwd.as_deref())
        .await?;
    let mut result = describe(&opened.pod);
    if let Some(trust) = trust {
        result.workspace_trust = trust;
    }
    Ok(result)
}

async fn run(params: RunParams, conn: &Connection, detach: Detach) -> Result<RunResult> {
    let opened = conn.opened()?;
    let input = params.input;
    let cancel = conn.begin_turn()?;
    let (events, events_rx) = mpsc::channel(stream::EVENT_QUEUE);
    let pod = opened.pod.clone();
    // The sink moves into the turn, so the event stream ends exactly when the turn does.
    let the_turn = async move { pod.run(input, &events, cancel).await };
    let result = stream::drive(the_turn, events_rx, conn.outbox(), || detach.detach()).await;
    conn.end_turn();
    Ok(result?)
}

fn cancel(conn: &Connection) -> Result<CancelResult> {
    conn.opened()?;
    Ok(CancelResult {
        cancelled: conn.cancel_turn(),
    })
}

fn permission_reply(params: PermissionReplyParams, conn: &Connection) -> Result<EmptyResult> {
    let opened = conn.opened()?;
    let PermissionReplyParams {
        request_id,
        decision,
        message,
        input,
    } = params;
    let unknown = |request_id: String, state: &'static str| MethodError::UnknownPermissionRequest {
        message: format!("no pending permission request {request_id} ({state})"),
        request_id,
        state,
    };
    // Without the approval capability no request ever exists.
    let Some(approvals) = &opened.approvals else {
        return Err(unknown(request_id, "unknown"));
    };
    match approvals.reply_with(&request_id, decision, message, input) {
        Ok(()) => Ok(EmptyResult {}),
        Err(ReplyError::Unknown(id)) => Err(unknown(id, "unknown")),
        Err(ReplyError::AlreadyResolved(id)) => Err(unknown(id, "resolved")),
        Err(e @ ReplyError::AmendedNotOnce(_)) => Err(MethodError::InvalidParams(format!(
            "`input`: {e}; the request is still pending"
        ))),
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
