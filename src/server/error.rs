//! The errors a method answers with, and their JSON-RPC codes (`protocol.md`, "Pod-specific
//! error codes").

use serde_json::json;

use crate::protocol::{self as p, ErrorCode, ErrorObject};
use crate::runtime::RunError;

/// Why a method call failed. Each variant is one row of the protocol's error table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MethodError {
    #[error("invalid params: {0}")]
    InvalidParams(String),
    #[error("not initialized: call initialize first")]
    NotInitialized,
    #[error("already initialized")]
    AlreadyInitialized,
    #[error("a turn is already running")]
    TurnInProgress,
    #[error("{message}")]
    UnknownPermissionRequest {
        request_id: String,
        state: &'static str,
        message: String,
    },
    #[error("the pod is shutting down")]
    ShuttingDown,
    #[error("unsupported protocol version {0} (this pod speaks {speaks})", speaks = p::PROTOCOL_VERSION)]
    UnsupportedProtocolVersion(u32),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("cannot open the pod: {0}")]
    CannotOpen(String),
}

impl MethodError {
    pub fn code(&self) -> ErrorCode {
        match self {
            MethodError::InvalidParams(_) => ErrorCode::InvalidParams,
            MethodError::NotInitialized => ErrorCode::NotInitialized,
            MethodError::AlreadyInitialized => ErrorCode::AlreadyInitialized,
            MethodError::TurnInProgress => ErrorCode::TurnInProgress,
            MethodError::UnknownPermissionRequest { .. } => ErrorCode::UnknownPermissionRequest,
            MethodError::ShuttingDown => ErrorCode::ShuttingDown,
            MethodError::UnsupportedProtocolVersion(_) => ErrorCode::UnsupportedProtocolVersion,
            MethodError::Internal(_) => ErrorCode::InternalError,
            MethodError::CannotOpen(_) => ErrorCode::CannotOpen,
        }
    }

    fn data(&self) -> Option<serde_json::Value> {
        match self {
            MethodError::UnknownPermissionRequest {
                request_id, state, ..
            } => Some(json!({ "requestId": request_id, "state": state })),
            MethodError::UnsupportedProtocolVersion(_) => {
                Some(json!({ "supported": [p::PROTOCOL_VERSION] }))
            }
            _ => None,
        }
    }
}

impl From<MethodError> for ErrorObject {
    fn from(e: MethodError) -> ErrorObject {
        ErrorObject {
            code: e.code().code(),
            message: e.to_string(),
            data: e.data(),
        }
    }
}

impl From<RunError> for MethodError {
    fn from(e: RunError) -> MethodError {
        match e {
            RunError::TurnInProgress => MethodError::TurnInProgress,
            // The message names the known skills.
            RunError::UnknownSkill { .. } => MethodError::InvalidParams(format!("input: {e}")),
            RunError::EmptyInput => MethodError::InvalidParams(format!("input: {e}")),
        }
    }
}
