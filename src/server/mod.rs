//! `pod serve`: JSON-RPC 2.0 over stdio.

pub mod dispatch;
pub mod transport;

use std::path::Path;

/// Default largest accepted message: 16 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// Runs the server until stdin closes or `shutdown`; returns the process exit code.
pub fn main(manifest: &Path, resume: Option<String>, max_message_bytes: usize) -> u8 {
    let _ = (manifest, resume, max_message_bytes);
    eprintln!("pod serve: not built yet");
    1
}
