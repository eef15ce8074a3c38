//! pod: an LLM agent runtime driven over JSON-RPC 2.0 on stdio, whose tool calls pass through a
//! declarative permission layer (tool x pattern -> allow / deny / ask).
//!
//! Data flows: `server` (transport, dispatch) -> `protocol` types -> `pod` (turn loop, check
//! chain) -> `permission` / hooks -> `tools` -> `session` log; `model` providers sit beside the
//! turn. See `docs/architecture.md`.

pub mod manifest;
pub mod permission;
pub mod model;
pub mod protocol;
pub mod tools;
