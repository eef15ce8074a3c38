//! `pod acp`: pod as an Agent Client Protocol (v1) agent on stdin/stdout, for the editors that
//! speak ACP (Zed, JetBrains IDEs, Neovim CodeCompanion, Emacs agent-shell; docs/acp.md).
//!
//! A second front-end over the same runtime as `pod serve`: it reuses `server`'s transport (the
//! one stdout writer, NDJSON framing, the size limit, backpressure) and dispatcher (the JSON-RPC
//! envelope, exact ids, the order rule), and takes every ACP wire type from the official schema
//! crate (`agent-client-protocol-schema`). Data flows: transport -> dispatcher -> [`agent`] (the
//! methods, the sessions) -> [`session`] (a `Pod` per session, a turn's events as
//! `session/update`s, asks as `session/request_permission`) -> back out through [`peer`], the
//! agent's side of the two-way connection, and the same writer.
//!
//! Invariants: stdout is written only by the transport's writer; every tool call passes the
//! pod's whole check chain before anything reaches the client's file system (`editor`); an ask
//! ends allowed only on a clear allow from the client, every other ending denies; stdin EOF ends
//! with pending asks denied, turns cancelled, session logs flushed and exit code 0.

pub mod agent;
pub mod editor;
pub mod peer;
pub mod session;
pub mod updates;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::permission::Asked;
use crate::protocol::ErrorObject;
use crate::server::dispatch::Dispatcher;
use crate::server::transport;
use agent::{Agent, AgentService};
use peer::Peer;

/// How long running turns and in-flight answers get to finish at exit (as `pod serve`).
const WIND_DOWN_BUDGET: Duration = Duration::from_millis(600);
const WRITER_BUDGET: Duration = Duration::from_millis(200);

/// A JSON-RPC error of an ACP method, with ACP's codes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct AcpError {
    code: i32,
    message: String,
    data: Option<Value>,
}

impl AcpError {
    fn new(code: acp::ErrorCode, message: String) -> AcpError {
        AcpError {
            code: code.into(),
            message,
            data: None,
        }
    }

    pub fn invalid_params(message: String) -> AcpError {
        AcpError::new(
            acp::ErrorCode::InvalidParams,
            format!("invalid params: {message}"),
        )
    }

    pub fn invalid_request(message: String) -> AcpError {
        AcpError::new(acp::ErrorCode::InvalidRequest, message)
    }

    pub fn internal(message: String) -> AcpError {
        AcpError::new(acp::ErrorCode::InternalError, message)
    }

    pub fn method_not_found(method: &str) -> AcpError {
        AcpError::new(
            acp::ErrorCode::MethodNotFound,
            format!("method not found: {method}"),
        )
    }

    /// `-32002` with `data.sessionId`, as ACP's `Error::session_not_found`.
    pub fn session_not_found(id: &str) -> AcpError {
        AcpError::new(
            acp::ErrorCode::ResourceNotFound,
            format!("no session {id} on this connection (session/new or session/load opens one)"),
        )
        .data(serde_json::json!({ "sessionId": id }))
    }

    pub fn data(mut self, data: Value) -> AcpError {
        self.data = Some(data);
        self
    }

    pub fn message(mut self, message: String) -> AcpError {
        self.message = message;
        self
    }
}

impl From<AcpError> for ErrorObject {
    fn from(e: AcpError) -> ErrorObject {
        ErrorObject {
            code: e.code,
            message: e.message,
            data: e.data,
        }
    }
}

/// Runs the agent until stdin closes; returns the process exit code. `state_dir` overrides
/// where every session's log lives (`--state-dir`).
pub fn main(state_dir: Option<&Path>, max_message_bytes: usize) -> u8 {
    let state_dir = state_dir.map(Path::to_path_buf);
    crate::server::run_on_stdio("pod acp", move |input, output| {
        serve(input, output, state_dir, max_message_bytes)
    })
}

/// Serves one client on `input` / `output` (stdin / stdout, or in-memory pipes in tests).
pub async fn serve<R, W>(
    input: R,
    output: W,
    state_dir: Option<PathBuf>,
    max_message_bytes: usize,
) -> u8
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let transport = transport::start(input, output, max_message_bytes);
    let peer = Peer::new(transport.outbox.clone());
    let agent = Agent::new(peer, state_dir);
    let dispatcher = Dispatcher::new(
        Arc::new(AgentService(agent.clone())),
        transport.outbox.clone(),
    );
    let mut frames = transport.frames;
    loop {
        // A client that does not read its answers is not read from either.
        transport.outbox.room_for_responses().await;
        let Some(frame) = frames.recv().await else {
            break;
        };
        crate::server::handle(&dispatcher, frame, max_message_bytes).await;
    }
    tracing::info!("client disconnected");
    agent.close(Asked::Disconnect);
    dispatcher.tracker().close();
    if tokio::time::timeout(WIND_DOWN_BUDGET, dispatcher.tracker().wait())
        .await
        .is_err()
    {
        tracing::warn!("the turns did not end within {WIND_DOWN_BUDGET:?}");
    }
    agent.flush();
    transport.writer.finish(WRITER_BUDGET).await;
    0
}
