//! The state of one client connection: initialized or not, the pod once opened, the running
//! turn's cancel token, and whether `shutdown` was called.
//!
//! Owns: the lifecycle rules of `protocol.md` (`-32001` before `initialize`, `-32002` on a second
//! one, `-32003` while a turn runs, `-32005` after `shutdown`) and closing everything down on
//! shutdown or disconnect.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::error::MethodError;
use super::transport::Outbox;
use crate::manifest::Manifest;
use crate::protocol::{MethodName, ResolvedBy};
use crate::runtime::{Approvals, Approver, Pod, PodOptions};

/// The pod of an initialized connection and, when the client approves, its pending requests.
#[derive(Clone)]
pub struct Opened {
    pub pod: Arc<Pod>,
    pub approvals: Option<Approvals>,
}

pub struct Connection {
    manifest: Manifest,
    resume: Option<String>,
    out: Outbox,
    opened: Mutex<Option<Opened>>,
    /// Set while `initialize` opens the pod (MCP servers may take seconds to start): a second
    /// `initialize` meanwhile is refused as if the first had finished.
    opening: AtomicBool,
    turn: Mutex<Option<CancellationToken>>,
    shutting_down: AtomicBool,
    /// `initialize` failed to open the pod: the server answers it and exits 1.
    cannot_open: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Poisoning means a panic elsewhere; the guarded values stay meaningful.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Connection {
    pub fn new(manifest: Manifest, resume: Option<String>, out: Outbox) -> Arc<Connection> {
        Arc::new(Connection {
            manifest,
            resume,
            out,
            opened: Mutex::new(None),
            opening: AtomicBool::new(false),
            turn: Mutex::new(None),
            shutting_down: AtomicBool::new(false),
            cannot_open: AtomicBool::new(false),
        })
    }

    pub fn outbox(&self) -> &Outbox {
        &self.out
    }

    fn check_not_shutting_down(&self) -> Result<(), MethodError> {
        if self.shutting_down.load(Ordering::SeqCst) {
            return Err(MethodError::ShuttingDown);
        }
        Ok(())
    }

    /// The pod, for every method but `initialize`.
    pub fn opened(&self) -> Result<Opened, MethodError> {
        self.check_not_shutting_down()?;
        lock(&self.opened)
            .clone()
            .ok_or(MethodError::NotInitialized)
    }

    /// Fails when the connection's state refuses any call of `method` (before its params are
    /// read): `-32005` after `shutdown`, `-32002` for a second `initialize`, `-32001` for any
    /// other method before `initialize`.
    pub fn admit(&self, method: MethodName) -> Result<(), MethodError> {
        match method {
            MethodName::Initialize => self.check_can_initialize(),
            _ => self.opened().map(|_| ()),
        }
    }

    /// Fails unless `initialize` may run now.
    pub fn check_can_initialize(&self) -> Result<(), MethodError> {
        self.check_not_shutting_down()?;
        if lock(&self.opened).is_some() || self.opening.load(Ordering::SeqCst) {
            return Err(MethodError::AlreadyInitialized);
        }
        Ok(())
    }

    /// Opens the pod (new or resumed session), its MCP servers started. `approval`: the client
    /// answers asks.
    pub async fn open(&self, approval: bool) -> Result<Opened, MethodError> {
        self.check_can_initialize()?;
        if self.opening.swap(true, Ordering::SeqCst) {
            return Err(MethodError::AlreadyInitialized);
        }
        let approvals = approval.then(Approvals::new);
        let approver = match &approvals {
            Some(a) => Approver::Client(a.clone()),
            None => Approver::FailClosed,
        };
        let options = PodOptions {
            resume: self.resume.clone(),
            approver,
            mcp_servers: Vec::new(),
            editor: None,
        };
        let pod = Pod::start(self.manifest.clone(), options).await;
        let pod = match pod {
            Ok(pod) => pod,
            Err(e) => {
                self.opening.store(false, Ordering::SeqCst);
                let message = e.to_string();
                tracing::error!("cannot open the pod: {message}");
                // Nothing can follow: the server exits (1) once this answer is written.
                self.cannot_open.store(true, Ordering::SeqCst);
                return Err(MethodError::CannotOpen(message));
            }
        };
        let opened = Opened { pod, approvals };
        *lock(&self.opened) = Some(opened.clone());
        self.opening.store(false, Ordering::SeqCst);
        Ok(opened)
    }

    /// Claims the turn slot; the token cancels the turn.
    pub fn begin_turn(&self) -> Result<CancellationToken, MethodError> {
        let mut turn = lock(&self.turn);
        if turn.is_some() {
            return Err(MethodError::TurnInProgress);
        }
        let token = CancellationToken::new();
        *turn = Some(token.clone());
        Ok(token)
    }

    pub fn end_turn(&self) {
        *lock(&self.turn) = None;
    }

    /// Cancels the running turn; false when none runs.
    pub fn cancel_turn(&self) -> bool {
        match lock(&self.turn).as_ref() {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// After this, every request is answered `-32005`.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// True once `initialize` failed to open the pod.
    pub fn cannot_open(&self) -> bool {
        self.cannot_open.load(Ordering::SeqCst)
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Resolves every pending permission request as denied by `by` (later ones at once) and
    /// cancels the running turn.
    pub fn close(&self, by: ResolvedBy) {
        if let Some(approvals) = lock(&self.opened)
            .as_ref()
            .and_then(|o| o.approvals.clone())
        {
            approvals.close(by);
        }
        self.cancel_turn();
    }

    /// Stops the pod's MCP servers (at exit).
    pub async fn stop_mcp(&self) {
        let opened = lock(&self.opened).clone();
        if let Some(opened) = opened {
            opened.pod.stop_mcp().await;
        }
    }

    /// Flushes the session log (before exit).
    pub fn flush(&self) {
        let opened = lock(&self.opened).clone();
        if let Some(opened) = opened {
            if let Err(e) = opened.pod.flush() {
                tracing::error!("session log: {e}");
            }
        }
    }
}
