//! The integration tests that spawn the real `pod` binary (`env!("CARGO_BIN_EXE_pod")`) and
//! talk to it over real pipes, as one test binary. See docs/architecture.md, "Testing".
//!
//! Every test here runs in one process, in parallel with the others: a test changes nothing
//! process-wide (no `std::env::set_var`, no `set_current_dir`); what a child needs goes to its
//! `Command` (`env`, `current_dir`), and each test has its own workspace and state folder.

#[path = "../common/mod.rs"]
mod common;

mod acp;
mod analysis_classes;
mod bad_input;
mod bounds;
mod budget;
mod chat;
mod config;
mod confinement;
mod conformance;
mod conformance_kit;
mod crash;
mod escapes;
mod exec_gate;
mod flows;
mod load;
mod mcp;
mod modes;
mod network;
mod policy;
mod post_hooks;
mod prompts;
mod rust_client;
mod sandbox;
mod schema;
mod session_hooks;
mod shell_soundness;
mod stdout_hygiene;
mod trust;
