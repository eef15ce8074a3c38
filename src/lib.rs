//! pod: an LLM agent runtime driven over JSON-RPC 2.0 on stdio, whose tool calls pass through a
//! declarative permission layer (tool x pattern -> allow / deny / ask).
//!
//! Data flows: `server` (transport, dispatch) -> `protocol` types -> `runtime` (turn loop, check
//! chain) -> `permission` / hooks -> `tools` -> `session` log; `model` providers sit beside the
//! turn. `acp` is a second front-end (the Agent Client Protocol) over the same runtime, on the
//! same transport. See `docs/architecture.md`.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod acp;
pub mod builtin;
pub mod chat;
pub mod client;
pub mod commands;
pub mod conformance;
pub mod hooks;
pub mod logging;
pub mod manifest;
pub mod mcp;
pub mod model;
pub mod permission;
pub mod protocol;
pub mod runtime;
pub mod sandbox;
pub mod schema;
pub mod scope;
pub mod server;
pub mod session;
pub mod skills;
pub mod testing;
pub mod tools;
pub use runtime::{Pod, PodOptions};
