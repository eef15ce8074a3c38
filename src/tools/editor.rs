//! The editor's files: where `read`, `file_write` and `edit` read and write text when the
//! client is an editor that serves its own buffers (ACP's `fs/read_text_file` and
//! `fs/write_text_file`), so the model sees and changes what the user sees, unsaved edits
//! included.
//!
//! Owns: the [`EditorFiles`] trait a front-end implements, and its errors. A tool calls it only
//! with the [`Target`](super::Target) the runtime pinned after the whole check chain (rules,
//! approval, hooks, scope) let the call through, so no path reaches the editor that the rules
//! did not allow; the tool still checks hard links on disk before a read.
//!
//! Must not touch: the wire (the front-end owns it) and decisions.

use std::path::Path;

use async_trait::async_trait;

/// Why the editor could not read or write a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditorError {
    /// The editor answered with an error.
    #[error("the editor answered: {0}")]
    Refused(String),
    /// The editor's answer was not what the protocol says.
    #[error("the editor's answer was malformed: {0}")]
    Malformed(String),
    /// No answer in time; the request was withdrawn.
    #[error("the editor did not answer within {0} s")]
    Timeout(u64),
    /// The connection to the editor is gone.
    #[error("the editor is no longer connected")]
    Closed,
    /// The turn was cancelled while the editor had not answered.
    #[error("cancelled")]
    Cancelled,
}

/// Text files as the editor holds them.
#[async_trait]
pub trait EditorFiles: Send + Sync + std::fmt::Debug {
    /// Whether reads go through the editor (it advertised reading).
    fn reads(&self) -> bool;
    /// Whether writes go through the editor (it advertised writing).
    fn writes(&self) -> bool;
    /// The whole text of `path` (absolute), as the editor has it.
    async fn read(&self, path: &Path) -> Result<String, EditorError>;
    /// Replaces the text of `path` (absolute) with `content`.
    async fn write(&self, path: &Path, content: &str) -> Result<(), EditorError>;
}
