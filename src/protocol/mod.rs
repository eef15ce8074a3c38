//! Pod protocol v1: the wire vocabulary as plain typed Rust.
//!
//! Owns every request, result, event, history item and error code that crosses the JSON-RPC
//! connection (docs/protocol.md), with `JsonSchema` derives from which `pod schema`
//! writes `schema/`. Field names on the wire are camelCase.
//!
//! Must not touch: anything of the engine. This module depends on serde and schemars only; the
//! engine (permission, pod, server) depends on it, never the reverse.

mod error;
mod event;
mod item;
mod methods;
mod permission;

pub use error::*;
pub use event::*;
pub use item::*;
pub use methods::*;
pub use permission::*;

/// The protocol version this pod speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Every method a client may call, in the order the spec lists them.
pub const METHODS: [&str; 6] = [
    "initialize",
    "run",
    "cancel",
    "permissionReply",
    "history",
    "shutdown",
];

/// The one notification method the pod sends; its params are an [`Event`].
pub const EVENT_METHOD: &str = "event";
