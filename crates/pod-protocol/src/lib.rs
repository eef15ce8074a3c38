//! Pod protocol v1: the wire vocabulary as plain typed Rust.
//!
//! Owns every request, result, event, history item and error code that crosses the JSON-RPC
//! connection (docs/protocol.md), with `JsonSchema` derives from which `pod schema`
//! writes `schema/`. Field names on the wire are camelCase.
//!
//! `request.rs` is the one list of methods (name -> params -> result) that dispatch, the schema
//! and the clients' types come from.
//!
//! Must not touch: anything of the engine. This module depends on the serde family, schemars and
//! thiserror only; the engine (permission, pod, server) depends on it, never the reverse.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod error;
mod event;
mod item;
mod methods;
mod open_calls;
mod permission;
mod request;
mod trust;

pub use error::*;
pub use event::*;
pub use item::*;
pub use methods::*;
pub use open_calls::OpenCalls;
pub use permission::*;
pub use request::*;
pub use trust::*;

/// The protocol version this pod speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The one notification method the pod sends; its params are an [`Event`].
pub const EVENT_METHOD: &str = "event";
