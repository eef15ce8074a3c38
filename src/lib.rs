//! pod: an LLM agent runtime driven over JSON-RPC 2.0 on stdio, whose tool calls pass through a
//! declarative permission layer (tool x pattern -> allow / deny / ask).
//!
//! Data flows: `server` (transport, dispatch) -> `protocol` types -> `runtime` (turn loop, check
//! chain) -> `permission` / hooks -> `tools` -> `session` log; `model` providers sit beside the
//! turn. `acp` is a second front-end (the Agent Client Protocol) over the same runtime, on the
//! same transport. See `docs/architecture.md`.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod acp;
pub mod chat;
pub mod client;
pub mod commands;
pub mod conformance;
pub mod hooks;
pub mod logging;
pub mod manifest;
pub mod mcp;
pub mod model;
pub mod network;
pub mod runtime;
pub mod sandbox;
pub mod schema;
pub mod scope;
pub mod server;
pub mod session;
pub mod skills;
pub mod testing;
pub mod tools;
/// The permission engine (the `pod-permission` crate).
pub use pod_permission as permission;
pub use pod_permission::builtin;
/// The wire types of pod protocol v1 (the `pod-protocol` crate).
pub use pod_protocol as protocol;
pub use runtime::{Pod, PodOptions};
