//! pod: an LLM agent runtime driven over JSON-RPC 2.0 on stdio, whose tool calls pass through a
//! declarative permission layer (tool x pattern -> allow / deny / ask).

pub mod permission;
