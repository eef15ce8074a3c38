//! Test-only fault injection, off unless the environment says otherwise at start-up.
//!
//! `POD_TEST_PANIC=1` (read once, when `pod` starts) arms two panics used by
//! `tests/stdout_hygiene.rs` to prove that a panic inside a provider or a tool never writes to
//! stdout and never kills the connection:
//! - the offline model panics when the last user message contains `POD_TEST_PANIC:model`;
//! - a tool call panics, just before the tool runs, when its input contains
//!   `POD_TEST_PANIC:tool`.
//!
//! Without the variable both checks are a cached `false`: no behaviour changes.

use std::sync::OnceLock;

/// The environment variable that arms the panics.
pub const PANIC_ENV: &str = "POD_TEST_PANIC";
/// Marker that makes the offline model panic.
pub const MODEL_MARKER: &str = "POD_TEST_PANIC:model";
/// Marker that makes a tool call panic.
pub const TOOL_MARKER: &str = "POD_TEST_PANIC:tool";

/// Whether the test panics are armed (`POD_TEST_PANIC=1` at start-up).
pub fn panics_armed() -> bool {
    static ARMED: OnceLock<bool> = OnceLock::new();
    *ARMED.get_or_init(|| std::env::var_os(PANIC_ENV).is_some_and(|v| v == "1"))
}

/// Panics when armed and `text` holds `marker`.
pub fn maybe_panic(text: &str, marker: &str) {
    if panics_armed() && text.contains(marker) {
        panic!("{marker}: test panic requested");
    }
}
