//! The state of one client connection: initialized or not, the pod once opened, the running
//! turn's cancel token, and whether `shutdown` was called.
//!
//! Owns: the lifecycle rules of `protocol.md` (`-32001` before `initialize`, `-32002` on a second
//! one, `-32003` while a turn runs, `-32005` after `shutdown`) and closing everything down on
//! shutdown or disconnect.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::error::MethodError;
use super::transport::Outbox;
use crate::manifest::trust::Decision;
use crate::manifest::{Manifest, TrustStore, Vouch};
use crate::permission::Asked;
use crate::protocol::{MethodName, TrustDecision, WorkspaceTrust};
use crate::runtime::{Approvals, Approver, Pod, PodOptions};

/// Where the connection's configuration comes from, so that `trust/apply` can read it again:
/// `pod serve`'s `--manifest`, `--state-dir` and `--trust`.
#[derive(Debug, Clone, Default)]
pub struct Source {
    pub manifest: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub vouch: Vouch,
}

impl Source {
    /// The configuration as `pod serve` reads it, `--state-dir` applied and `required` checked.
    pub fn load(&self) -> Result<Manifest, String> {
        let mut manifest =
            Manifest::open(self.manifest.as_deref(), self.vouch).map_err(|e| e.to_string())?;
        if let Some(folder) = &self.state_dir {
            manifest.set_state_dir(folder);
        }
        crate::sandbox::check_required(&manifest.sandbox)
            .map_err(|e| format!("{}: {e}", manifest.path.display()))?;
        Ok(manifest)
    }
}

/// The pod of an initialized connection and, when the client approves, its pending requests.
#[derive(Clone)]
pub struct Opened {
    pub pod: Arc<Pod>,
    pub approvals: Option<Approvals>,
}

pub struct Connection {
    manifest: Manifest,
    /// `None`: the configuration cannot be read again (a library caller's manifest).
    source: Option<Mutex<Source>>,
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
    pub fn new(
        manifest: Manifest,
        source: Option<Source>,
        resume: Option<String>,
        out: Outbox,
    ) -> Arc<Connection> {
        Arc::new(Connection {
            manifest,
            source: source.map(Mutex::new),
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

    /// Applies the user's trust `decision` (`trust/apply`) to the session's project: a trust
    /// is recorded (or, `trust_session`, kept for this process), the configuration read again,
    /// and the pod reopened on the same session with it; a decline is recorded and changes
    /// nothing else. Refused while a turn runs (the turn slot is held meanwhile), for a folder
    /// other than the session's, and for a decision not offered.
    pub async fn apply_trust(
        &self,
        decision: TrustDecision,
        cwd: Option<&str>,
    ) -> Result<(Opened, Option<WorkspaceTrust>), MethodError> {
        let opened = self.opened()?;
        let trust = opened.pod.manifest().trust.clone();
        let Some(folder) = trust.folder.clone() else {
            return Err(MethodError::InvalidParams(
                "nothing to trust: the session has no project configuration (pod.toml)".into(),
            ));
        };
        if let Some(cwd) = cwd {
            let given = std::path::Path::new(cwd);
            let same = given.canonicalize().map(|c| c == folder).unwrap_or(false);
            if !same {
                return Err(MethodError::InvalidParams(format!(
                    "`cwd`: {cwd} is not the session's project folder ({})",
                    folder.display()
                )));
            }
        }
        let offered = crate::runtime::workspace_trust(&trust).available_decisions;
        if !offered.contains(&decision) {
            return Err(MethodError::InvalidParams(format!(
                "`decision`: {} is not available for {} (available: {})",
                decision_name(decision),
                folder.display(),
                if offered.is_empty() {
                    "none: nothing of its configuration is ignored".to_string()
                } else {
                    offered
                        .iter()
                        .map(|d| decision_name(*d))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )));
        }
        let Some(source) = &self.source else {
            return Err(MethodError::Internal(
                "this pod cannot read its configuration again".into(),
            ));
        };
        let record = |d: Decision| {
            let print = trust.fingerprint.clone().unwrap_or_default();
            TrustStore::default_location()
                .and_then(|store| store.record(&folder, &print, d))
                .map_err(|e| MethodError::Internal(e.to_string()))
        };
        let mut source = lock(source).clone();
        match decision {
            TrustDecision::Decline => {
                record(Decision::Declined)?;
                let fresh = source.load().map_err(MethodError::Internal)?;
                return Ok((opened, Some(crate::runtime::workspace_trust(&fresh.trust))));
            }
            TrustDecision::TrustCwd => record(Decision::Trusted)?,
            TrustDecision::TrustSession => source.vouch = Vouch::Session,
        }
        let _turn = self.begin_turn()?;
        let reopened = self.reopen(&opened, &source).await;
        self.end_turn();
        let reopened = reopened?;
        if let Some(kept) = &self.source {
            *lock(kept) = source;
        }
        Ok((reopened, None))
    }

    /// The pod of `opened` closed, and a new one on the same session with the configuration
    /// `source` reads now (the session's log stays in its state folder).
    async fn reopen(&self, opened: &Opened, source: &Source) -> Result<Opened, MethodError> {
        let old = opened.pod.manifest();
        let mut manifest = source.load().map_err(MethodError::Internal)?;
        manifest.pod.state_dir = old.pod.state_dir.clone();
        manifest.pod.state_root = old.pod.state_root.clone();
        let approver = match &opened.approvals {
            Some(a) => Approver::Client(a.clone()),
            None => Approver::FailClosed,
        };
        let id = opened.pod.session_id().to_string();
        opened.pod.stop_mcp().await;
        if let Err(e) = opened.pod.flush() {
            tracing::error!("session log: {e}");
        }
        let options = PodOptions {
            resume: Some(id),
            approver,
            mcp_servers: Vec::new(),
            editor: None,
        };
        let pod = Pod::start(manifest, options)
            .await
            .map_err(|e| MethodError::Internal(format!("cannot reopen the session: {e}")))?;
        if let Some(client) = opened.pod.client() {
            pod.set_client_name(client);
        }
        let reopened = Opened {
            pod,
            approvals: opened.approvals.clone(),
        };
        *lock(&self.opened) = Some(reopened.clone());
        tracing::info!("trust applied: the session reopened with the project's configuration");
        Ok(reopened)
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
    pub fn close(&self, by: Asked) {
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

/// A decision as the wire names it.
fn decision_name(d: TrustDecision) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}
