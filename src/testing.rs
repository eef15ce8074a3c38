//! Test-only fault injection and kernel simulation, off unless the environment says otherwise at
//! start-up.
//!
//! `POD_TEST_PANIC=1` (read once, when `pod` starts) arms two panics used by
//! `tests/binary/stdout_hygiene.rs` to prove that a panic inside a provider or a tool never writes
//! to stdout and never kills the connection:
//! - the offline model panics when the last user message contains `POD_TEST_PANIC:model`;
//! - a tool call panics, just before the tool runs, when its input contains
//!   `POD_TEST_PANIC:tool`.
//!
//! `POD_TEST_NO_LANDLOCK=1` (read once, at start-up) makes the sandbox act as if the kernel had no
//! Landlock, so `[sandbox] required = true` can be seen refusing to start
//! (`tests/binary/sandbox.rs`). `POD_TEST_NO_NAMESPACES=1` likewise hides the namespace
//! sandbox (bubblewrap), as on a machine that restricts unprivileged user namespaces.
//!
//! `POD_TEST_NO_ANALYSIS=1` (debug builds only: it does not exist in a release build) switches
//! the shell analysis off: every `bash` call is allowed up front with no subjects, so
//! `tests/binary/exec_gate.rs` can prove that the exec gate alone holds the rules.
//!
//! Without the variables every check is a cached `false`: no behaviour changes.

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

/// The environment variable that hides Landlock from the pod, as on a kernel without it.
pub const NO_LANDLOCK_ENV: &str = "POD_TEST_NO_LANDLOCK";

/// Whether the pod must act as if the kernel had no Landlock (`POD_TEST_NO_LANDLOCK=1` at
/// start-up). Lets `tests/binary/sandbox.rs` prove that `[sandbox] required = true` refuses to
/// start on such a kernel; the sandbox module asks this before it asks the kernel.
pub fn landlock_hidden() -> bool {
    static HIDDEN: OnceLock<bool> = OnceLock::new();
    *HIDDEN.get_or_init(|| std::env::var_os(NO_LANDLOCK_ENV).is_some_and(|v| v == "1"))
}

/// The environment variable that switches the shell analysis off (debug builds only).
pub const NO_ANALYSIS_ENV: &str = "POD_TEST_NO_ANALYSIS";

/// Whether the shell analysis is switched off (`POD_TEST_NO_ANALYSIS=1` at start-up, in a debug
/// build; always false in a release build).
pub fn analysis_off() -> bool {
    #[cfg(debug_assertions)]
    {
        static OFF: OnceLock<bool> = OnceLock::new();
        *OFF.get_or_init(|| std::env::var_os(NO_ANALYSIS_ENV).is_some_and(|v| v == "1"))
    }
    #[cfg(not(debug_assertions))]
    {
        false
    }
}

/// The environment variable that hides the namespace sandbox (bubblewrap) from the pod, as on a
/// machine where unprivileged user namespaces are disabled.
pub const NO_NAMESPACES_ENV: &str = "POD_TEST_NO_NAMESPACES";

/// Whether the pod must act as if it could not create namespaces (`POD_TEST_NO_NAMESPACES=1`
/// at start-up), so the fall-back to Landlock and `required = "namespaces"` can be tested.
pub fn namespaces_hidden() -> bool {
    static HIDDEN: OnceLock<bool> = OnceLock::new();
    *HIDDEN.get_or_init(|| std::env::var_os(NO_NAMESPACES_ENV).is_some_and(|v| v == "1"))
}

/// The environment variable that makes each call start a `bwrap` of its own instead of entering
/// the session's namespaces (`src/sandbox/holder.rs`): the fall-back where the holder cannot
/// start, for its tests and for the benchmark that compares the two.
pub const NO_HOLDER_ENV: &str = "POD_TEST_NO_HOLDER";

/// Whether `POD_TEST_NO_HOLDER=1` is set now (read at each `Sandbox::open`, so one process can
/// open both kinds).
pub fn holder_off() -> bool {
    std::env::var_os(NO_HOLDER_ENV).is_some_and(|v| v == "1")
}

/// The environment variable that keeps `$TMPDIR` the host folder where it would be a tmpfs of
/// the session's (`src/sandbox/tmpfs.rs`): for the benchmark that compares the two.
pub const NO_TMPFS_ENV: &str = "POD_TEST_NO_TMPFS";

/// Whether `POD_TEST_NO_TMPFS=1` is set now (read at each plan, so one process can open both
/// kinds).
pub fn tmpfs_off() -> bool {
    std::env::var_os(NO_TMPFS_ENV).is_some_and(|v| v == "1")
}

/// The environment variable naming test hosts: `POD_TEST_HOSTS=allowed.test=127.0.0.1,b.test=127.0.0.1`.
pub const HOSTS_ENV: &str = "POD_TEST_HOSTS";

/// The test resolver (`POD_TEST_HOSTS` at start-up), **in debug builds only**: each name it
/// lists resolves to its address, and that address is reachable even when it is loopback or
/// private, so `tests/binary/network.rs` can serve an "allowed" host from a local listener. A
/// name it does not list is resolved as always, and its private addresses stay blocked. A
/// release build ignores the variable: the private-range block has no switch in production.
pub fn test_hosts() -> &'static [(String, std::net::IpAddr)] {
    static HOSTS: OnceLock<Vec<(String, std::net::IpAddr)>> = OnceLock::new();
    HOSTS.get_or_init(|| {
        if !cfg!(debug_assertions) {
            return Vec::new();
        }
        let Some(raw) = std::env::var_os(HOSTS_ENV) else {
            return Vec::new();
        };
        raw.to_string_lossy()
            .split(',')
            .filter_map(|pair| {
                let (name, ip) = pair.split_once('=')?;
                Some((name.trim().to_ascii_lowercase(), ip.trim().parse().ok()?))
            })
            .collect()
    })
}
