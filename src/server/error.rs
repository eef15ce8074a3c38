//! The errors a method answers with, and their JSON-RPC codes (`protocol.md`, "Pod-specific
//! error codes").

use jsonrpsee::types::ErrorObjectOwned;
use serde_json::json;

use crate::pod::RunError;
use crate::protocol as p;

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
}

impl MethodError {
    pub fn code(&self) -> i32 {
        match self {
            MethodError::InvalidParams(_) => p::INVALID_PARAMS,
            MethodError::NotInitialized => p::NOT_INITIALIZED,
            MethodError::AlreadyInitialized => p::ALREADY_INITIALIZED,
            MethodError::TurnInProgress => p::TURN_IN_PROGRESS,
            MethodError::UnknownPermissionRequest { .. } => p::UNKNOWN_PERMISSION_REQUEST,
            MethodError::ShuttingDown => p::SHUTTING_DOWN,
            MethodError::UnsupportedProtocolVersion(_) => p::UNSUPPORTED_PROTOCOL_VERSION,
            MethodError::Internal(_) => p::INTERNAL_ERROR,
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

impl From<MethodError> for ErrorObjectOwned {
    fn from(e: MethodError) -> ErrorObjectOwned {
        ErrorObjectOwned::owned(e.code(), e.to_string(), e.data())
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
