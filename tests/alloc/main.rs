//! The allocator measurements, as one test binary: `heap` and `memory` measure the bytes the pod
//! holds with the counting global allocator of [`counting`], which sees the whole process, so
//! their tests run one at a time ([`counting::serial`]). See docs/architecture.md, "Testing".

#[path = "../common/mod.rs"]
mod common;
mod counting;

mod heap;
mod memory;
