//! The one seam where the first process of a `bash` call or of a hook starts: plainly
//! ([`CallProcess`]), or under the exec gate ([`GatedProcess`]) when a judge is given.
//!
//! Owns: choosing the spawner for a `std::process::Command` prepared by
//! [`super::Sandbox::prepare_std`] (its `gated` being whether a judge is given), and what both
//! kinds of first process do alike: wait, kill, contain, finish.
//!
//! Must not touch: the command's stdio (the caller gives it pipes and keeps the ends it reads
//! and writes: the command is dropped once started, or once its processes are gone under the
//! gate, so the caller sees end-of-file when they end), decisions (the judge's), the tracing
//! itself ([`super::gate`]), the processes' lifetimes ([`super::reaper`]).

use std::io;
use std::process::ExitStatus;
use std::sync::Arc;

use super::gate::{ExecJudge, GatedProcess, Stopped};
use super::CallProcess;

/// The first process of a call or a hook, with everything it starts.
#[derive(Debug)]
pub enum Started {
    Plain(CallProcess),
    Gated(GatedProcess),
}

impl Started {
    /// Starts `cmd`; with a `judge`, every exec it and its descendants make is decided by it.
    /// Consumes the command, so the child's ends of its pipes are not held here.
    pub fn spawn(
        cmd: std::process::Command,
        judge: Option<Arc<dyn ExecJudge>>,
    ) -> io::Result<Started> {
        match judge {
            Some(judge) => GatedProcess::spawn(cmd, judge).map(Started::Gated),
            None => {
                let mut cmd = tokio::process::Command::from(cmd);
                cmd.kill_on_drop(true);
                CallProcess::spawn(&mut cmd).map(Started::Plain)
            }
        }
    }

    /// Waits for the first process to exit (its descendants may live on).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Started::Plain(p) => p.wait().await,
            Started::Gated(p) => p.wait().await,
        }
    }

    /// Kills every process it started (see [`CallProcess::kill`]).
    pub fn kill(&self) {
        match self {
            Started::Plain(p) => p.kill(),
            Started::Gated(p) => p.kill(),
        }
    }

    /// See [`CallProcess::contain`].
    pub fn contain(&mut self, contained: bool) {
        match self {
            Started::Plain(p) => p.contain(contained),
            Started::Gated(p) => p.contain(contained),
        }
    }

    /// Ends it: every process killed, the first one waited for, leftovers swept. Returns the
    /// exit status not yet waited for, and the execs the gate stopped.
    pub async fn finish(self) -> (Option<io::Result<ExitStatus>>, Vec<Stopped>) {
        match self {
            Started::Plain(p) => (p.finish().await, Vec::new()),
            Started::Gated(p) => {
                let stopped = p.stopped();
                let status = p.finish().await;
                (status, stopped)
            }
        }
    }
}
