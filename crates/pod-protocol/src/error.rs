//! JSON-RPC errors: the standard codes, the pod's own block (-32001..-32006), and the error
//! object a response carries.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares [`ErrorCode`] and its list from one table, so the codes, their names and
/// `schema/methods.json` cannot disagree.
macro_rules! error_codes {
    ($( $(#[$doc:meta])* $name:ident = $code:literal, )*) => {
        /// Every error code a pod answers with (docs/protocol.md, "Errors").
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( $(#[$doc])* $name = $code, )*
        }

        impl ErrorCode {
            /// Every code, in the order of the table.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name),*];

            /// The name `schema/methods.json` gives the code (the variant's name).
            pub fn name(self) -> &'static str {
                match self {
                    $( ErrorCode::$name => stringify!($name), )*
                }
            }
        }
    };
}

error_codes! {
    /// Invalid JSON was received.
    ParseError = -32700,
    /// The JSON sent is not a valid request object (also: a message over the size limit).
    InvalidRequest = -32600,
    MethodNotFound = -32601,
    InvalidParams = -32602,
    InternalError = -32603,
    /// Any method other than `initialize` before `initialize` succeeded.
    NotInitialized = -32001,
    /// A second `initialize`.
    AlreadyInitialized = -32002,
    /// `run` while a turn is running.
    TurnInProgress = -32003,
    /// `permissionReply` for an id that does not exist or is already resolved.
    UnknownPermissionRequest = -32004,
    /// Any request after `shutdown`.
    ShuttingDown = -32005,
    /// `initialize` with a protocol version the pod does not speak.
    UnsupportedProtocolVersion = -32006,
    /// `initialize` when the pod cannot open its session (a model API key variable that is not
    /// set, a state folder it cannot write): the message says why; the pod then exits 1.
    CannotOpen = -32007,
}

impl ErrorCode {
    /// The number on the wire.
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorObject {
    pub code: i32,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl ErrorObject {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ErrorObject {
        ErrorObject {
            code: code.code(),
            message: message.into(),
            data: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_in_the_json_rpc_ranges() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.code()), "{code:?} repeats a code");
            let n = code.code();
            assert!((-32768..=-32000).contains(&n), "{code:?} = {n}");
        }
        assert_eq!(ErrorCode::InvalidParams.code(), -32602);
        assert_eq!(ErrorCode::ShuttingDown.name(), "ShuttingDown");
    }
}
