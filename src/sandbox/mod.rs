//! The sandbox: the kernel's boundary around every process a tool call or a hook starts.
//!
//! Owns: the session's Landlock domain ([`domain`]: writes only beneath the writable folders, a
//! private `$TMPDIR` per session and the device files a shell needs; optionally no TCP), the
//! `$TMPDIR` folder itself (created and locked at open, removed when the [`Sandbox`] drops; the
//! unlocked ones of pods that were killed are removed at the next open), what the kernel
//! can enforce and what is reported about it ([`plan`], [`SandboxInfo`]), putting a child into
//! the domain before `exec` ([`Sandbox::prepare`], [`Sandbox::pre_exec`]), the lifetime of the
//! processes a call starts ([`reaper`]), and reading a denial out of a command's output
//! ([`Sandbox::blocked_writes`]). The exec gate ([`gate`]) lives beside it: whether it is on is
//! the sandbox's to say ([`Sandbox::gate_on`], `initialize.sandbox.execGate`); the attach seam
//! is [`Sandbox::prepare_std`] with `gated`, then [`gate::GatedProcess::spawn`].
//!
//! Must not touch: decisions (rules decide what may start; the sandbox only bounds what a started
//! process can do), the manifest's parsing, the output format of tools. The pod's own process is
//! never sandboxed: `file_write` and `edit` are bounded by `scope`, not here.

pub mod domain;
pub mod env;
pub mod gate;
pub mod reaper;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::manifest::{SandboxConfig, SandboxMode};
use crate::permission::path;
use crate::protocol::{EnvironmentInfo, NetworkAccess, SandboxInfo, SandboxKind};

pub use env::ChildEnv;
pub use reaper::CallProcess;

/// The oldest ABI that holds the whole write boundary (ABI 3 added truncation).
pub const FULL_WRITE_ABI: u32 = 3;
/// The oldest ABI that can refuse TCP connect and bind.
pub const NETWORK_ABI: u32 = 4;

/// Why the sandbox cannot be set up as configured.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "[sandbox] required = true, but this machine cannot enforce the sandbox: {}. Run pod on a \
         kernel that can, or set required = false to run with what it can enforce (reported as \
         `enforced: false`), or mode = \"off\"",
        reasons.join("; ")
    )]
    Unenforceable { reasons: Vec<String> },
    #[error("cannot create the session's temporary folder in {}: {source}", dir.display())]
    TempDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot build the sandbox: {0}")]
    Domain(#[from] domain::DomainError),
    #[error(
        "[sandbox] exec_gate = true, but {0}. Run pod where ptrace is allowed (not under \
         another tracer, Yama's ptrace_scope below 3, a container that permits ptrace), or set \
         exec_gate = false"
    )]
    Gate(#[from] gate::GateUnavailable),
}

/// Whether the exec gate runs for `config`: `exec_gate = true` fails when it cannot, the
/// default turns it on where ptrace works (and warns where it does not).
pub fn gate_for(config: &SandboxConfig) -> Result<bool, SandboxError> {
    match config.exec_gate {
        Some(false) => Ok(false),
        Some(true) => gate::available().map(|()| true).map_err(SandboxError::Gate),
        None => match gate::available() {
            Ok(()) => Ok(true),
            Err(e) => {
                tracing::warn!("sandbox: {e}; commands run without the exec gate");
                Ok(false)
            }
        },
    }
}

/// What this machine will enforce for a `[sandbox]` configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub info: SandboxInfo,
    /// A Landlock domain will be applied (possibly holding only part of the boundary).
    pub apply: bool,
    /// What the configuration asks for and the kernel cannot hold, in words.
    pub gaps: Vec<String>,
}

/// The kernel's Landlock ABI as the pod sees it: 0 under `POD_TEST_NO_LANDLOCK=1`.
pub fn kernel_abi() -> u32 {
    if crate::testing::landlock_hidden() {
        0
    } else {
        domain::kernel_abi()
    }
}

/// What `config` will get on this kernel.
pub fn plan(config: &SandboxConfig) -> Plan {
    plan_for(config, kernel_abi())
}

fn plan_for(config: &SandboxConfig, abi: u32) -> Plan {
    if config.mode == SandboxMode::Off {
        return Plan {
            info: SandboxInfo {
                kind: SandboxKind::None,
                abi,
                enforced: false,
                network: NetworkAccess::Allow,
                exec_gate: false,
            },
            apply: false,
            gaps: Vec::new(),
        };
    }
    let mut gaps = Vec::new();
    if abi == 0 {
        gaps.push(
            "the kernel has no Landlock (Linux 5.13 or newer, with Landlock enabled at boot, is \
             needed)"
                .to_string(),
        );
    } else if abi < FULL_WRITE_ABI {
        gaps.push(format!(
            "Landlock ABI {abi} cannot stop truncating files outside the writable folders (ABI \
             {FULL_WRITE_ABI}, Linux 6.2, is needed)"
        ));
    }
    let deny_network = config.network == NetworkAccess::Deny;
    if deny_network && abi < NETWORK_ABI {
        gaps.push(format!(
            "network = \"deny\" needs Landlock ABI {NETWORK_ABI} (Linux 6.7); this kernel has {}",
            if abi == 0 {
                "none".to_string()
            } else {
                format!("ABI {abi}")
            }
        ));
    }
    Plan {
        info: SandboxInfo {
            kind: SandboxKind::Landlock,
            abi,
            enforced: abi >= FULL_WRITE_ABI,
            network: if deny_network && abi >= NETWORK_ABI {
                NetworkAccess::Deny
            } else {
                NetworkAccess::Allow
            },
            exec_gate: false,
        },
        apply: abi > 0,
        gaps,
    }
}

/// Fails when `config` says `required = true` and this machine cannot hold all of it.
pub fn check_required(config: &SandboxConfig) -> Result<Plan, SandboxError> {
    let plan = plan(config);
    if config.required && !plan.gaps.is_empty() {
        return Err(SandboxError::Unenforceable {
            reasons: plan.gaps.clone(),
        });
    }
    Ok(plan)
}

/// The sandbox of one session.
#[derive(Debug)]
pub struct Sandbox {
    info: SandboxInfo,
    /// The Landlock ruleset; `None` when nothing is applied.
    ruleset: Option<Arc<OwnedFd>>,
    /// The session's `$TMPDIR`, removed on drop.
    tmpdir: Option<tempfile::TempDir>,
    /// An exclusive lock on `$TMPDIR` while the session runs: a folder nobody holds a lock on was
    /// left by a pod that died without closing, and the next pod removes it.
    _tmpdir_lock: Option<std::fs::File>,
    /// Where processes may write (resolved), `$TMPDIR` and devices included.
    writable: Vec<PathBuf>,
    /// Writable folders that did not exist at open and so could not be granted.
    missing: Vec<PathBuf>,
    workspace: PathBuf,
    /// The environment every process starts with.
    env: ChildEnv,
}

impl Sandbox {
    /// No confinement (`mode = "off"`, and library callers that set none): processes still get a
    /// session and group of their own and are killed with their call.
    pub fn off() -> Sandbox {
        Sandbox {
            info: SandboxInfo {
                kind: SandboxKind::None,
                abi: 0,
                enforced: false,
                network: NetworkAccess::Allow,
                exec_gate: false,
            },
            ruleset: None,
            tmpdir: None,
            _tmpdir_lock: None,
            writable: Vec::new(),
            missing: Vec::new(),
            workspace: PathBuf::new(),
            env: ChildEnv::new(&crate::manifest::EnvConfig::default()),
        }
    }

    /// The sandbox of a session: `scope_writable` is `[scope].writable` (resolved); `label`
    /// names the session in the `$TMPDIR` folder's name.
    pub fn open(
        config: &SandboxConfig,
        workspace: &Path,
        scope_writable: &[PathBuf],
        label: &str,
    ) -> Result<Sandbox, SandboxError> {
        let plan = check_required(config)?;
        let exec_gate = gate_for(config)?;
        if config.mode == SandboxMode::Off {
            return Ok(Sandbox {
                info: SandboxInfo {
                    exec_gate,
                    ..plan.info
                },
                env: ChildEnv::new(&config.env),
                ..Sandbox::off()
            });
        }
        for gap in &plan.gaps {
            tracing::warn!("sandbox: {gap}");
        }
        let base = std::env::temp_dir();
        remove_stale_tmpdirs(&base);
        let tmpdir = tempfile::Builder::new()
            .prefix(&format!("{TMPDIR_PREFIX}{label}-"))
            .tempdir_in(&base)
            .map_err(|source| SandboxError::TempDir {
                dir: base.clone(),
                source,
            })?;
        let lock = std::fs::File::open(tmpdir.path())
            .and_then(|f| f.try_lock().map(|()| f).map_err(std::io::Error::other))
            .map_err(|source| SandboxError::TempDir { dir: base, source })?;
        let mut writable = Vec::new();
        let mut missing = Vec::new();
        for folder in scope_writable.iter().chain(&config.writable) {
            let folder = path::resolve(folder);
            if folder.exists() {
                if !writable.contains(&folder) {
                    writable.push(folder);
                }
            } else if !missing.contains(&folder) {
                tracing::warn!(
                    "sandbox: {} does not exist, so processes cannot write there (create it \
                     before the pod starts)",
                    folder.display()
                );
                missing.push(folder);
            }
        }
        writable.push(path::resolve(tmpdir.path()));
        let ruleset = if plan.apply {
            domain::build(&domain::Rules {
                writable: writable.clone(),
                deny_network: config.network == NetworkAccess::Deny,
            })?
            .map(Arc::new)
        } else {
            None
        };
        let info = SandboxInfo {
            // The kernel may still have refused everything (best effort found nothing).
            enforced: plan.info.enforced && ruleset.is_some(),
            network: if ruleset.is_some() {
                plan.info.network
            } else {
                NetworkAccess::Allow
            },
            exec_gate,
            ..plan.info
        };
        writable.extend(domain::DEVICES.iter().map(PathBuf::from));
        Ok(Sandbox {
            info,
            ruleset,
            tmpdir: Some(tmpdir),
            _tmpdir_lock: Some(lock),
            writable,
            missing,
            workspace: workspace.to_path_buf(),
            env: ChildEnv::new(&config.env),
        })
    }

    /// Why the kernel does not bound everything a call can do here, when it does not: what
    /// `auto` mode needs and lacks. It needs each call in namespaces of its own (metadata,
    /// reads of secrets, other processes, the network), the exec gate deciding every program a
    /// call starts, and the network denied.
    pub fn unbounded(&self) -> Option<String> {
        let mut missing = Vec::new();
        if !self.info.enforced {
            missing.push("the sandbox is not enforced");
        }
        // Landlock alone bounds writes and TCP only (docs/permissions.md, "The sandbox").
        missing.push("calls do not run in namespaces of their own");
        if !self.info.exec_gate {
            missing.push("no exec gate decides the programs a call starts");
        }
        if self.info.network != NetworkAccess::Deny {
            missing.push("the network is not denied ([sandbox] network)");
        }
        Some(missing.join(", "))
    }

    /// What `initialize` reports.
    pub fn info(&self) -> SandboxInfo {
        self.info
    }

    /// Whether the exec gate decides every exec of a `bash` call's processes.
    pub fn gate_on(&self) -> bool {
        self.info.exec_gate
    }

    /// The session's `$TMPDIR`, when there is one.
    pub fn tmpdir(&self) -> Option<&Path> {
        self.tmpdir.as_ref().map(|t| t.path())
    }

    /// Writable folders that did not exist when the sandbox was opened.
    pub fn missing(&self) -> &[PathBuf] {
        &self.missing
    }

    /// The function to run in a forked child before `exec`: a session and process group of its
    /// own, subreaper for its descendants, then (when a domain applies) `no_new_privs` and the
    /// domain. For `std::process::Command::pre_exec` or tokio's; [`Sandbox::prepare`] installs
    /// it, with `$TMPDIR`. A failure fails the spawn: nothing runs outside the domain.
    pub fn pre_exec(&self) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        let ruleset = self.ruleset.clone();
        move || {
            reaper::child_setup()?;
            if let Some(ruleset) = &ruleset {
                domain::enter(ruleset)?;
            }
            Ok(())
        }
    }

    /// What of the pod's environment the session's processes get (names only).
    pub fn environment(&self) -> EnvironmentInfo {
        EnvironmentInfo {
            passed: self.env.passed.clone(),
            filtered: self.env.filtered.clone(),
        }
    }

    /// Gives `cmd` the session's environment (nothing else of the pod's) and `$TMPDIR`, and
    /// installs [`Sandbox::pre_exec`]. Call it first, then set the caller's own variables; spawn
    /// with [`CallProcess::spawn`] so that its processes die with the call.
    pub fn prepare(&self, cmd: &mut tokio::process::Command) {
        self.prepare_std(cmd.as_std_mut(), false);
    }

    /// [`Sandbox::prepare`] for a `std::process::Command`. `gated`: the command is for
    /// [`gate::GatedProcess::spawn`] (the exec gate's attach seam): its first `pre_exec` step
    /// asks to be traced, before the domain is entered; the gate adds its seccomp filters last.
    pub fn prepare_std(&self, cmd: &mut std::process::Command, gated: bool) {
        use std::os::unix::process::CommandExt;
        if gated {
            gate::trace_me(cmd);
        }
        self.env.apply_std(cmd);
        if let Some(tmp) = self.tmpdir() {
            cmd.env("TMPDIR", tmp);
        }
        // SAFETY: the hook makes only async-signal-safe system calls and allocates nothing.
        unsafe {
            cmd.pre_exec(self.pre_exec());
        }
    }

    /// The paths in `output` that a process was refused writing because of the sandbox, as far
    /// as the output tells: lines saying "Permission denied" or "Operation not permitted" that
    /// name a path outside the writable folders, which the pod itself could write to (so the
    /// refusal was not the file's own permissions). Empty when no domain applies.
    pub fn blocked_writes(&self, output: &str) -> Vec<String> {
        if self.ruleset.is_none() {
            return Vec::new();
        }
        let mut found: Vec<String> = Vec::new();
        for line in output.lines() {
            if !(line.contains("Permission denied") || line.contains("Operation not permitted")) {
                continue;
            }
            for candidate in path_candidates(line) {
                // bash's /dev/tcp and /dev/udp are sockets, not files (see `blocked_network`).
                if candidate.starts_with("/dev/tcp/") || candidate.starts_with("/dev/udp/") {
                    continue;
                }
                let absolute = if candidate.starts_with('/') {
                    path::resolve(Path::new(candidate))
                } else {
                    path::resolve_in(&self.workspace, Path::new(candidate))
                };
                let inside = self.writable.iter().any(|w| absolute.starts_with(w));
                let shown = absolute.display().to_string();
                if !inside && dac_writable(&absolute) && !found.contains(&shown) {
                    found.push(shown);
                }
            }
        }
        found
    }

    /// Whether `output` tells of a TCP connection or bind the sandbox refused (`network =
    /// "deny"` in force and a "Permission denied" about `connect`, `bind` or `/dev/tcp`).
    pub fn blocked_network(&self, output: &str) -> bool {
        self.ruleset.is_some()
            && self.info.network == NetworkAccess::Deny
            && output.lines().any(|line| {
                (line.contains("Permission denied") || line.contains("Operation not permitted"))
                    && (line.contains("connect")
                        || line.contains("bind")
                        || line.contains("/dev/tcp/"))
            })
    }

    /// The writable folders as the result of a blocked call shows them: relative to the
    /// workspace when inside it, `$TMPDIR` by name; devices left out.
    pub fn writable_shown(&self) -> Vec<String> {
        let tmp = self.tmpdir().map(path::resolve);
        self.writable
            .iter()
            .filter(|w| !w.starts_with("/dev"))
            .map(|w| {
                if Some(w) == tmp.as_ref() {
                    "$TMPDIR".to_string()
                } else {
                    path::display(w, &self.workspace)
                }
            })
            .collect()
    }
}

/// How a session's `$TMPDIR` folder is named: this, the session id, `-`, random characters.
const TMPDIR_PREFIX: &str = "pod-";

/// A `$TMPDIR` folder unchanged for this long and not locked is stale. (A pod creates its folder
/// and locks it a moment later; the age keeps another pod's clean-up out of that moment.)
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the `$TMPDIR` folders of sessions whose pod died without closing (killed): folders in
/// `base` named like a session's (`pod-<uuid>-<random>`), owned by this user, unchanged for
/// [`STALE_AFTER`], that no process holds a lock on. Best effort: a folder that cannot be
/// checked is left alone.
fn remove_stale_tmpdirs(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TMPDIR_PREFIX)) else {
            continue;
        };
        let session_shaped = rest.len() > 37
            && rest.as_bytes()[36] == b'-'
            && rest
                .get(..36)
                .is_some_and(|id| uuid::Uuid::parse_str(id).is_ok());
        let path = entry.path();
        let old_and_ours = std::fs::symlink_metadata(&path).is_ok_and(|m| {
            m.is_dir()
                && m.uid() == me
                && m.modified()
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age >= STALE_AFTER)
        });
        if !session_shaped || !old_and_ours {
            continue;
        }
        let Ok(dir) = std::fs::File::open(&path) else {
            continue;
        };
        if dir.try_lock().is_ok() {
            tracing::info!(
                "removing {}, left by a pod that did not close",
                path.display()
            );
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Path-like words of a line: absolute ones, and relative ones that climb out with `../`.
fn path_candidates(line: &str) -> Vec<&str> {
    let stop = |c: char| c.is_whitespace() || "'\"`(),;:‘’“”«»".contains(c);
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find(['/', '.']) {
        let before = rest[..at].chars().next_back();
        let word_start = before.is_none_or(stop);
        let tail = &rest[at..];
        let end = tail.find(stop).unwrap_or(tail.len());
        let word = &tail[..end];
        if word_start && (word.starts_with('/') || word.starts_with("../")) && word.len() > 1 {
            out.push(word.trim_end_matches('.'));
        }
        rest = &tail[end.max(1)..];
    }
    out
}

/// Whether the pod's own user could create or change `path` (its nearest existing ancestor),
/// going by the file's permissions alone.
fn dac_writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let mut probe = path;
    loop {
        if probe.symlink_metadata().is_ok() {
            break;
        }
        match probe.parent() {
            Some(parent) => probe = parent,
            None => return false,
        }
    }
    let Ok(c) = std::ffi::CString::new(probe.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path; access(2) only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: SandboxMode, network: NetworkAccess, required: bool) -> SandboxConfig {
        SandboxConfig {
            mode,
            required,
            network,
            ..SandboxConfig::default()
        }
    }

    #[test]
    fn the_plan_follows_the_kernel() {
        let c = config(SandboxMode::Landlock, NetworkAccess::Deny, false);
        let p = plan_for(&c, 7);
        assert!(p.apply && p.info.enforced && p.gaps.is_empty());
        assert_eq!(p.info.network, NetworkAccess::Deny);
        let p = plan_for(&c, 3);
        assert!(p.info.enforced);
        assert_eq!(p.info.network, NetworkAccess::Allow);
        assert!(
            p.gaps[0].contains("network = \"deny\" needs Landlock ABI 4"),
            "{p:?}"
        );
        let p = plan_for(&c, 2);
        assert!(p.apply && !p.info.enforced);
        assert!(p.gaps[0].contains("truncating"), "{p:?}");
        let p = plan_for(&c, 0);
        assert!(!p.apply && !p.info.enforced);
        assert!(p.gaps[0].contains("no Landlock"), "{p:?}");
        let off = plan_for(&config(SandboxMode::Off, NetworkAccess::Deny, true), 7);
        assert!(!off.apply && off.gaps.is_empty());
        assert_eq!(off.info.kind, SandboxKind::None);
    }

    #[test]
    fn candidates_are_absolute_or_climbing_paths() {
        assert_eq!(
            path_candidates("bash: line 1: /outside/y: Permission denied"),
            ["/outside/y"]
        );
        assert_eq!(
            path_candidates("PermissionError: [Errno 13] Permission denied: '/o/x'"),
            ["/o/x"]
        );
        assert_eq!(
            path_candidates("touch: cannot touch '../x': Permission denied"),
            ["../x"]
        );
        assert_eq!(
            path_candidates("awk: cannot open \"/a b/c\" (Permission denied)"),
            ["/a"]
        );
        assert!(path_candidates("cat: x/y: Permission denied").is_empty());
        assert!(path_candidates("a/b/c and ./d and 1.5").is_empty());
    }

    #[test]
    fn refused_writes_are_read_out_of_output_outside_the_writable_folders_only() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let out = outside.path().canonicalize().unwrap();
        let config = SandboxConfig {
            writable: vec![ws.join("not-yet")],
            ..SandboxConfig::default()
        };
        let s = Sandbox::open(&config, &ws, std::slice::from_ref(&ws), "unit").unwrap();
        assert!(
            s.info().enforced,
            "needs a kernel with Landlock ABI 3+: {:?}",
            s.info()
        );
        assert_eq!(s.missing(), [ws.join("not-yet")]);
        let tmp = s.tmpdir().unwrap().to_path_buf();
        assert!(tmp.is_dir());
        let output = format!(
            "bash: line 1: {o}/y: Permission denied\n\
             touch: cannot touch '{w}/in': Permission denied\n\
             cp: cannot create regular file '{t}/f': Permission denied\n\
             python: [Errno 13] Permission denied: '{o}/y'\n\
             mkdir: cannot create directory '{o}/a/b/c': Permission denied\n\
             {o}/ok: done\n",
            o = out.display(),
            w = ws.display(),
            t = tmp.display()
        );
        let shown_out = format!("{}/y", out.display());
        let shown_dir = format!("{}/a/b/c", out.display());
        assert_eq!(s.blocked_writes(&output), [shown_out, shown_dir]);
        assert_eq!(s.writable_shown(), [".", "$TMPDIR"]);
        drop(s);
        assert!(!tmp.exists(), "the session's TMPDIR outlived it");
    }

    #[test]
    fn an_off_sandbox_reports_nothing_blocked() {
        let s = Sandbox::off();
        assert!(s
            .blocked_writes("bash: /etc/x: Permission denied")
            .is_empty());
        assert!(s.tmpdir().is_none());
    }
}
