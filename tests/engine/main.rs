//! The library-level integration tests, as one test binary: each module calls `pod::...`
//! directly (the permission engine, the runtime, the providers against a loopback mock of their
//! HTTP APIs, the fuzz harness, the protocol served in process on an in-memory connection:
//! `memory.rs` with the typed client, `approvals.rs` at the wire through `wire.rs`) and none
//! spawns the `pod` binary. See docs/architecture.md,
//! "Testing": the tests that need the real binary are in `tests/binary/`, the allocator
//! measurements in `tests/alloc/`.

mod mock_provider;

mod anthropic;
mod approvals;
mod fuzz_smoke;
mod memory;
mod modes;
mod openai;
mod permission;
mod providers;
mod runtime;
mod shell_oracle;
mod skills_hooks;
mod tidy;
mod wire;
