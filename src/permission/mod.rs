//! The permission engine.

pub mod shell;
