//! The sandbox: the kernel's boundary around every process a tool call or a hook starts.
//!
//! Owns: the session's Landlock domain ([`domain`]: writes only beneath the writable folders, a
//! private `$TMPDIR` per session and the device files a shell needs; optionally no TCP), the
//! `$TMPDIR` folder itself (created and locked at open, removed when the [`Sandbox`] drops; the
//! unlocked ones of pods that were killed are removed at the next open; under namespaces with
//! the holder, a tmpfs of `[sandbox] max_tmpdir_size` over it in the session's view, which
//! pod's own tools reach through [`tmpfs`]), what the kernel
//! can enforce and what is reported about it ([`plan`], [`SandboxInfo`]), putting a child into
//! the domain before `exec` ([`Sandbox::prepare`], [`Sandbox::pre_exec`]), the lifetime of the
//! processes a call starts ([`reaper`]), and reading a denial out of a command's output
//! ([`Sandbox::blocked_writes`]; a full `$TMPDIR`, [`Sandbox::tmpdir_full`]), each call's
//! process limit ([`cgroup`]: the session's pids cgroup, a call's made by [`Sandbox::prepare`]
//! and entered first in `pre_exec`), and what a call must not leave for tools outside to run
//! ([`Sandbox::set_aside_planted`]: [`planted`]'s watched names, those missing when the session
//! opened, recorded in the state folder while it runs so that the next open sets aside what a
//! killed pod left, [`planted::recover`]; [`repos`]' repositories, found with [`tree`]). The exec
//! gate ([`gate`]) lives beside it: whether it is on is the sandbox's to say
//! ([`Sandbox::gate_on`], `initialize.sandbox.execGate`); the attach seam is
//! [`Sandbox::prepare_std`] with `gated`, then [`Started::spawn`] with a judge.
//!
//! Must not touch: decisions (rules decide what may start; the sandbox only bounds what a started
//! process can do), the manifest's parsing, the output format of tools. The pod's own process is
//! never sandboxed: `file_write` and `edit` are bounded by `scope`, not here.

pub mod cgroup;
pub mod domain;
pub mod env;
pub mod gate;
pub mod gitconfig;
pub mod holder;
pub mod namespaces;
pub mod netns;
pub mod planted;
pub mod reaper;
pub mod repos;
pub mod seccomp;
pub mod started;
pub mod tmpfs;
pub mod tree;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::manifest::{Required, SandboxConfig, SandboxMode};
use crate::permission::path;
use crate::protocol::{EnvironmentInfo, NetworkAccess, SandboxInfo, SandboxKind};

pub use cgroup::CallLimit;
pub use env::ChildEnv;
pub use reaper::CallProcess;
pub use started::Started;

/// The oldest ABI that holds the whole write boundary (ABI 3 added truncation).
pub const FULL_WRITE_ABI: u32 = 3;
/// The oldest ABI that can refuse TCP connect and bind.
pub const NETWORK_ABI: u32 = 4;
/// The oldest ABI with scopes (abstract Unix sockets, signals).
pub const SCOPE_ABI: u32 = 6;

/// Why the sandbox cannot be set up as configured.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "[sandbox] required = {required}, but this machine cannot enforce it: {}. Run pod where \
         it can, or lower `required` (false starts with what holds, and reports it), or mode = \
         \"off\"",
        reasons.join("; ")
    )]
    Unenforceable {
        required: &'static str,
        reasons: Vec<String>,
    },
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
    #[error("cannot build the sandbox: {0}")]
    Seccomp(#[from] seccomp::SeccompError),
    #[error("cannot build the sandbox: {0}")]
    Namespaces(#[from] namespaces::NamespaceError),
    #[error("cannot build the sandbox: {0}")]
    Netns(#[from] netns::NetnsError),
}

/// Whether the exec gate can run with `plan`: ptrace and the gate's filters work here
/// ([`gate::available`]) and, under namespaces, `bwrap` can start under the gate's
/// `no_new_privs` (a setuid `bwrap` run by a user other than root cannot).
pub fn gate_available(plan: &Plan) -> Result<(), gate::GateUnavailable> {
    gate::available()?;
    if let Some(bwrap) = &plan.bwrap {
        if setuid_for_us(bwrap) {
            return Err(gate::GateUnavailable(format!(
                "{} is setuid, and the gate's no_new_privs would stop it from starting any call \
                 (a bwrap without the setuid bit, on a kernel with user namespaces, works)",
                bwrap.display()
            )));
        }
    }
    Ok(())
}

/// Whether `bwrap` is setuid and the pod is not root: `no_new_privs` (the exec gate's, Landlock's)
/// would stop it from starting.
fn setuid_for_us(bwrap: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let setuid = std::fs::metadata(bwrap).is_ok_and(|m| m.mode() & 0o4000 != 0);
    // SAFETY: geteuid has no arguments and cannot fail.
    setuid && unsafe { libc::geteuid() } != 0
}

/// Whether the exec gate runs for `config` with `plan`: `exec_gate = true` fails when it
/// cannot, the default turns it on where it can (and warns where it cannot).
pub fn gate_for(config: &SandboxConfig, plan: &Plan) -> Result<bool, SandboxError> {
    match config.exec_gate {
        Some(false) => Ok(false),
        Some(true) => gate_available(plan)
            .map(|()| true)
            .map_err(SandboxError::Gate),
        None => match gate_available(plan) {
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
    /// Calls will run in namespaces, through this `bwrap`.
    pub bwrap: Option<PathBuf>,
    /// With `bwrap`, calls enter the session's network namespace ([`netns`]) rather than make
    /// one each (`network = "deny"` on a machine where none can be made keeps one per call).
    pub session_net: bool,
    /// What the configuration asks for and this machine cannot hold, in words.
    pub gaps: Vec<String>,
    /// `[sandbox] required` is not met: the pod refuses to start.
    pub refuses: bool,
    /// Where the per-call process limit's cgroups will be made, or why it is not held (an
    /// explicit `max_processes` not held is a gap too; the default is not, as with the exec
    /// gate's default: most machines let pod make a cgroup only as root on cgroup v1, or in a
    /// cgroup delegated to it on v2).
    pub pids: Result<cgroup::Parent, String>,
    /// `$TMPDIR`'s size limit in bytes where it will hold (a tmpfs in the session's view,
    /// [`tmpfs`]), or why it will not (`$TMPDIR` is then a folder on the host's disk).
    pub tmpdir: Result<u64, String>,
}

/// What falling back from namespaces to Landlock loses, in words.
pub const LOST_WITHOUT_NAMESPACES: &str = "metadata changes outside the writable folders \
     (chmod, chown, touch, setcap), reads of secrets (masked folders, `read` deny rules, other \
     processes' /proc), the read-only binds of protected files inside the workspace, UDP, DNS \
     and Unix sockets under network = \"deny\", other terminals (/dev/pts), the PID \
     namespace that kills a call's processes with the pod, and $TMPDIR's size limit \
     ([sandbox] max_tmpdir_size: $TMPDIR is a folder on the host's disk)";

/// The kernel's Landlock ABI as the pod sees it: 0 under `POD_TEST_NO_LANDLOCK=1`.
pub fn kernel_abi() -> u32 {
    if crate::testing::landlock_hidden() {
        0
    } else {
        domain::kernel_abi()
    }
}

/// What `config` will get on this machine.
pub fn plan(config: &SandboxConfig) -> Plan {
    let namespaces = if config.mode == SandboxMode::Namespaces {
        namespaces::available()
    } else {
        Err(String::new())
    };
    let session_net = if namespaces.is_ok() && config.network != NetworkAccess::Allow {
        netns::available()
    } else {
        Err(String::new())
    };
    let mut plan = plan_for(config, kernel_abi(), namespaces, session_net);
    if config.mode != SandboxMode::Off {
        add_pids(&mut plan, config, cgroup::probe());
        let sized = match &plan.bwrap {
            None => Err(NOT_IN_NAMESPACES.to_string()),
            Some(_) if crate::testing::holder_off() => Err(format!(
                "each call makes namespaces of its own (the session's are not held: \
                 {}=1), {PER_CALL_TMPFS}",
                crate::testing::NO_HOLDER_ENV
            )),
            Some(_) if crate::testing::tmpfs_off() => Err(format!(
                "$TMPDIR is kept on the host ({}=1)",
                crate::testing::NO_TMPFS_ENV
            )),
            Some(bwrap) => namespaces::sizes_tmpfs(bwrap),
        };
        add_tmpdir(&mut plan, config, sized);
    }
    plan
}

/// Why `$TMPDIR` is not a tmpfs under Landlock.
const NOT_IN_NAMESPACES: &str = "calls do not run in the session's namespaces, where the tmpfs \
                                 is made";

/// Why a call that makes namespaces of its own keeps the host folder.
const PER_CALL_TMPFS: &str = "and a tmpfs of a call's own would lose its files when the call ends";

/// The guarantee of `$TMPDIR`'s size limit where `held`, else why not: a gap where calls run in
/// namespaces (the per-call fall-back, a `bwrap` without `--size`) or where `mode = "landlock"`
/// and `max_tmpdir_size` is set (refusing `required = true`); the Landlock fall-back's own gap
/// names it ([`LOST_WITHOUT_NAMESPACES`]); the default under `mode = "landlock"` is reported
/// (`pod check`'s `$TMPDIR:` line, a warning at open) but no gap, as the other namespace
/// guarantees a configured Landlock does not hold.
fn add_tmpdir(plan: &mut Plan, config: &SandboxConfig, held: Result<(), String>) {
    let size = config.max_tmpdir_size();
    plan.tmpdir = match held {
        Ok(()) => {
            plan.info.guarantees.push(tmpdir_guarantee(size));
            Ok(size)
        }
        Err(why) => {
            let asked = plan.bwrap.is_some()
                || (config.mode == SandboxMode::Landlock && config.max_tmpdir_size.is_some());
            if asked {
                plan.gaps.push(tmpdir_gap(size, &why));
                if config.required == Required::All {
                    plan.refuses = true;
                }
            }
            Err(why)
        }
    };
}

/// The guarantee of `$TMPDIR`'s size limit, in words.
pub fn tmpdir_guarantee(size: u64) -> String {
    format!(
        "$TMPDIR: at most {} (a tmpfs, shared by the session's calls, hooks and MCP servers; \
         [sandbox] max_tmpdir_size): a write past it fails with ENOSPC",
        crate::manifest::human_size(size)
    )
}

/// Why `[sandbox] max_tmpdir_size` is not held, in words.
pub fn tmpdir_gap(size: u64, why: &str) -> String {
    format!(
        "$TMPDIR is not size-limited ([sandbox] max_tmpdir_size = \"{}\"): it is a folder on \
         the host's disk, since {why}",
        crate::manifest::shown_size(size)
    )
}

/// The guarantee of the per-call process limit, or why it is not held: an explicit
/// `max_processes` not held is a gap (and refuses `required = true`); the default is reported
/// (`pod check`'s `processes:` line, a warning at open) but no gap, as the exec gate's default.
fn add_pids(plan: &mut Plan, config: &SandboxConfig, probed: Result<cgroup::Parent, String>) {
    match &probed {
        Ok(_) => plan
            .info
            .guarantees
            .push(pids_guarantee(config.max_processes())),
        Err(why) if config.max_processes.is_some() => {
            plan.gaps.push(pids_gap(config.max_processes(), why));
            if config.required == Required::All {
                plan.refuses = true;
            }
        }
        Err(_) => {}
    }
    plan.pids = probed;
}

fn pids_guarantee(limit: u32) -> String {
    format!(
        "at most {limit} processes and threads per call ([sandbox] max_processes, a pids cgroup \
         per call): a fork past it fails with EAGAIN"
    )
}

/// Why `[sandbox] max_processes` is not held, in words.
pub fn pids_gap(limit: u32, why: &str) -> String {
    format!(
        "no per-call process limit ([sandbox] max_processes = {limit}): no pids cgroup can be \
         made here ({why})"
    )
}

fn plan_for(
    config: &SandboxConfig,
    abi: u32,
    namespaces: Result<PathBuf, String>,
    session_net: Result<(), String>,
) -> Plan {
    if config.mode == SandboxMode::Off {
        return Plan {
            info: SandboxInfo {
                kind: SandboxKind::None,
                abi,
                enforced: false,
                network: NetworkAccess::Allow,
                exec_gate: false,
                guarantees: Vec::new(),
            },
            apply: false,
            bwrap: None,
            session_net: false,
            gaps: Vec::new(),
            refuses: config.required > Required::No,
            pids: Err("the sandbox is off".to_string()),
            tmpdir: Err("the sandbox is off".to_string()),
        };
    }
    let mut gaps = Vec::new();
    let proxy_without_netns = match (&namespaces, &session_net) {
        (Ok(_), Err(why)) if config.network == NetworkAccess::Proxy => Some(why.clone()),
        _ => None,
    };
    if let (SandboxMode::Namespaces, Some(why)) = (config.mode, proxy_without_netns) {
        gaps.push(format!(
            "network = \"proxy\": calls run under Landlock and seccomp, not in namespaces of \
             their own, since the session's network namespace cannot be made ({why}), which \
             loses {LOST_WITHOUT_NAMESPACES}"
        ));
    } else if config.mode == SandboxMode::Namespaces {
        match namespaces {
            Ok(bwrap) => {
                let mut guarantees = vec![
                    "each call in PID and mount namespaces of its own, inside the session's user, \
                     IPC and UTS namespaces (bubblewrap, once per session)"
                        .to_string(),
                    "/ read-only; writes only in the writable folders and $TMPDIR".to_string(),
                    "pod's configuration, state and the files tools re-read (.git/config, \
                     .git/hooks, .envrc, .vscode, .mcp.json) read-only inside the workspace"
                        .to_string(),
                    "files matched by file_write deny rules read-only; files matched by read \
                     deny rules and $HOME's secret folders masked"
                        .to_string(),
                    "a fresh /proc and /dev: no other process or terminal is visible".to_string(),
                    "every capability dropped, no_new_privs: no metadata change outside"
                        .to_string(),
                    "seccomp: no TIOCSTI/TIOCLINUX, io_uring, bpf, perf_event_open, \
                     userfaultfd, keyctl, new user namespaces"
                        .to_string(),
                    "a call's processes die with it and with the pod (its PID namespace, \
                     PR_SET_PDEATHSIG)"
                        .to_string(),
                ];
                if abi >= SCOPE_ABI && !setuid_for_us(&bwrap) {
                    guarantees.push(
                        "Landlock scopes: no abstract Unix socket made outside the call is \
                         reachable, no process outside it can be signalled"
                            .to_string(),
                    );
                }
                if config.readable.is_some() {
                    guarantees.push(
                        "of $HOME only what [sandbox] readable lists is visible, read-only"
                            .to_string(),
                    );
                }
                match config.network {
                    NetworkAccess::Deny => guarantees.push(
                        "network: an empty network namespace (loopback only), no Unix sockets"
                            .to_string(),
                    ),
                    NetworkAccess::Proxy => guarantees.push(
                        "network: a network namespace whose one way out is pod's proxy, which \
                         decides each host (no route, no DNS, no Unix sockets)"
                            .to_string(),
                    ),
                    NetworkAccess::Allow => {}
                }
                let session_net = config.network != NetworkAccess::Allow && session_net.is_ok();
                return Plan {
                    info: SandboxInfo {
                        kind: SandboxKind::Namespaces,
                        abi,
                        enforced: true,
                        network: config.network,
                        exec_gate: false,
                        guarantees,
                    },
                    apply: false,
                    bwrap: Some(bwrap),
                    session_net,
                    gaps,
                    refuses: false,
                    pids: Err(String::new()),
                    tmpdir: Err(String::new()),
                };
            }
            Err(why) => gaps.push(format!(
                "calls cannot run in namespaces of their own ({why}); falling back to Landlock \
                 and seccomp, which lose {LOST_WITHOUT_NAMESPACES}"
            )),
        }
    }
    if config.readable.is_some() {
        gaps.push(
            "[sandbox] readable needs the namespace sandbox: under Landlock all of $HOME stays \
             readable"
                .to_string(),
        );
    }
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
    // Landlock holds `proxy` as `deny` with one port open: the proxy's.
    let deny_network = config.network != NetworkAccess::Allow;
    if deny_network && abi < NETWORK_ABI {
        gaps.push(format!(
            "network = \"{}\" needs Landlock ABI {NETWORK_ABI} (Linux 6.7); this kernel has {}",
            if config.network == NetworkAccess::Proxy {
                "proxy"
            } else {
                "deny"
            },
            if abi == 0 {
                "none".to_string()
            } else {
                format!("ABI {abi}")
            }
        ));
    }
    let enforced = abi >= FULL_WRITE_ABI;
    let network = if deny_network && abi >= NETWORK_ABI {
        config.network
    } else {
        NetworkAccess::Allow
    };
    let mut guarantees = vec![
        "seccomp: no TIOCSTI/TIOCLINUX, io_uring, bpf, perf_event_open, userfaultfd, keyctl, \
         new user namespaces"
            .to_string(),
        "a call's processes are found and killed when it ends (subreaper sweep)".to_string(),
    ];
    if enforced {
        guarantees.insert(
            0,
            "Landlock: file writes only in the writable folders and $TMPDIR".to_string(),
        );
    }
    match network {
        NetworkAccess::Deny => guarantees.push("Landlock: no TCP connect or bind".to_string()),
        NetworkAccess::Proxy => guarantees.push(
            "Landlock: TCP connect only to pod's proxy, which decides each host (UDP and DNS \
             are not covered)"
                .to_string(),
        ),
        NetworkAccess::Allow => {}
    }
    let refuses = match config.required {
        Required::No => false,
        Required::Landlock => !enforced,
        Required::Namespaces => true,
        Required::All => !gaps.is_empty(),
    };
    Plan {
        info: SandboxInfo {
            kind: SandboxKind::Landlock,
            abi,
            enforced,
            network,
            exec_gate: false,
            guarantees,
        },
        apply: abi > 0,
        bwrap: None,
        session_net: false,
        gaps,
        refuses,
        pids: Err(String::new()),
        tmpdir: Err(String::new()),
    }
}

/// Fails when `[sandbox] required` asks for more than this machine holds.
pub fn check_required(config: &SandboxConfig) -> Result<Plan, SandboxError> {
    let plan = plan(config);
    if plan.refuses {
        let mut reasons = plan.gaps.clone();
        if reasons.is_empty() {
            reasons.push("mode = \"off\" holds nothing".to_string());
        }
        return Err(SandboxError::Unenforceable {
            required: config.required.shown(),
            reasons,
        });
    }
    Ok(plan)
}

/// What the namespace sandbox protects inside the writable folders, from the manifest and the
/// rules ([`Sandbox::open_guarded`]).
#[derive(Default, Clone, Copy)]
pub struct Guard<'a> {
    /// Pod's own files (`Manifest::protected_paths`): bound read-only where they lie beneath a
    /// writable folder; the state folder is masked.
    pub protected: &'a [PathBuf],
    /// The state folder of every workspace, masked.
    pub state_root: Option<&'a Path>,
    /// This workspace's state folder, where a session's watched names are recorded while it
    /// runs ([`planted::Watched`]) and what a killed pod left is found ([`planted::recover`]).
    pub state_dir: Option<&'a Path>,
    /// The rules: existing files a `file_write` deny rule matches become read-only, files and
    /// folders a `read` deny rule matches are masked.
    pub policy: Option<&'a crate::permission::Policy>,
}

/// How many entries of each writable folder the set-up looks at for deny-rule matches.
pub const WALK_BUDGET: usize = 20_000;

/// The sandbox of one session.
#[derive(Debug)]
pub struct Sandbox {
    info: SandboxInfo,
    /// The Landlock ruleset; `None` when nothing is applied.
    ruleset: Option<Arc<OwnedFd>>,
    /// The namespace sandbox; `None` under Landlock or off.
    wrap: Option<Arc<namespaces::Wrap>>,
    /// The session's namespaces, entered by each call ([`holder`]); `None` where the holder
    /// could not start, and every call then runs in a `bwrap` of its own.
    holder: Option<Arc<holder::Holder>>,
    /// The seccomp filter, installed in the child under Landlock (bubblewrap installs it
    /// under namespaces).
    seccomp: Option<Arc<seccomp::Filters>>,
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
    /// The session's network namespace, when calls run in one ([`Sandbox::proxy_listener`]).
    session_net: Option<Arc<netns::SessionNet>>,
    /// Files that did not exist when the session opened and that no call may leave behind
    /// ([`Sandbox::set_aside_planted`]).
    watched: planted::Watched,
    /// The repositories a call may make, checked when it ends ([`Sandbox::set_aside_planted`]);
    /// `None` when the sandbox is off.
    repos: Option<Arc<repos::Repos>>,
    /// The session's pids cgroup, in which each call gets one with its limit ([`cgroup`]).
    pids: Option<Arc<cgroup::Session>>,
    /// `$TMPDIR` as a size-limited tmpfs in the session's view, as pod's own process reaches
    /// it ([`tmpfs`]); `None` where `$TMPDIR` is the host folder.
    tmpfs: Option<tmpfs::Registered>,
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
                guarantees: Vec::new(),
            },
            ruleset: None,
            wrap: None,
            holder: None,
            seccomp: None,
            tmpdir: None,
            _tmpdir_lock: None,
            writable: Vec::new(),
            missing: Vec::new(),
            workspace: PathBuf::new(),
            env: ChildEnv::new(&crate::manifest::EnvConfig::default()),
            session_net: None,
            watched: planted::Watched::default(),
            repos: None,
            pids: None,
            tmpfs: None,
        }
    }

    /// The sandbox of a session: `scope_writable` is `[scope].writable` (resolved); `label`
    /// names the session in the `$TMPDIR` folder's name. Nothing beyond the writable boundary
    /// is protected inside the workspace; the runtime calls [`Sandbox::open_guarded`].
    pub fn open(
        config: &SandboxConfig,
        workspace: &Path,
        scope_writable: &[PathBuf],
        label: &str,
    ) -> Result<Sandbox, SandboxError> {
        Sandbox::open_guarded(
            config,
            workspace,
            scope_writable,
            label,
            Guard::default(),
            None,
        )
    }

    /// [`Sandbox::open`], protecting what `guard` names inside the writable folders; with
    /// `network = "proxy"`, `proxy_port` is the port of the session's proxy (`network::Proxy`),
    /// the one TCP port a process may connect to: in namespaces, a listener on that port inside
    /// the session's network namespace ([`Sandbox::proxy_listener`], which the proxy must then
    /// serve); under Landlock, a port rule.
    pub fn open_guarded(
        config: &SandboxConfig,
        workspace: &Path,
        scope_writable: &[PathBuf],
        label: &str,
        guard: Guard<'_>,
        proxy_port: Option<u16>,
    ) -> Result<Sandbox, SandboxError> {
        let plan = check_required(config)?;
        let exec_gate = gate_for(config, &plan)?;
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
        // What a pod killed mid-call left of its watched names, before anything here is taken
        // for the user's (bound, or left out of the watched names).
        let records = guard.state_dir.map(|d| d.join(planted::RECORDS));
        if let Some(dir) = &records {
            planted::recover(dir, &path::resolve(workspace));
        }
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
        let tmp = path::resolve(tmpdir.path());
        writable.push(tmp.clone());
        // No Unix sockets under `deny` and `proxy` in namespaces: a pathname socket of a helper
        // outside would be a way out past the namespace.
        let filters = Arc::new(seccomp::Filters::build(
            config.network != NetworkAccess::Allow && plan.bwrap.is_some(),
        )?);
        let mut wrap = None;
        let mut ruleset = None;
        let mut session_net = None;
        let mut repositories: Vec<PathBuf> = Vec::new();
        // `$TMPDIR`'s size limit, where the plan holds it; `sized` once the view mounts it.
        let planned = plan.tmpdir.as_ref().ok().copied();
        let mut sized = None;
        if let Some(bwrap) = &plan.bwrap {
            let network = match config.network {
                NetworkAccess::Allow => namespaces::Network::Host,
                _ if !plan.session_net => namespaces::Network::PerCall,
                access => {
                    let listen = proxy_port.filter(|_| access == NetworkAccess::Proxy);
                    let net = Arc::new(netns::SessionNet::create(listen)?);
                    session_net = Some(net.clone());
                    namespaces::Network::Session(net)
                }
            };
            let mut layout = layout(&writable, network, guard);
            layout.proc_read_only = exec_gate;
            layout.hidden_home = config.readable.as_deref().and_then(hidden_home);
            repositories = layout.repositories.clone();
            let mut w = namespaces::Wrap::new(bwrap.clone(), &layout, filters.bytes())?;
            // The holder's view only: a call's own `bwrap` keeps the host folder.
            sized = planned.filter(|size| w.tmpfs_at(&tmp, *size));
            wrap = Some(Arc::new(w));
            // A second layer under the namespaces: Landlock's scopes. Not for a setuid `bwrap`
            // run by another user than root, which `no_new_privs` would stop from starting.
            if !setuid_for_us(bwrap) {
                ruleset = domain::scoped()?.map(Arc::new);
            }
        } else if plan.apply {
            ruleset = domain::build(&domain::Rules {
                writable: writable.clone(),
                // `proxy`: no TCP but to the proxy's port.
                deny_network: config.network != NetworkAccess::Allow,
                // Proxy mode without a proxy (none could start) allows no port at all.
                proxy_port: proxy_port.filter(|_| config.network == NetworkAccess::Proxy),
            })?
            .map(Arc::new);
        }
        // The session's namespaces, made once; where they cannot be held, each call makes its
        // own (the same guarantees, 3 to 5 ms more per call).
        let mut not_held = None;
        let mut holder = match &wrap {
            Some(_) if crate::testing::holder_off() => None,
            Some(wrap) => match holder::Holder::start(wrap, exec_gate) {
                Ok(h) => Some(Arc::new(h)),
                Err(e) => {
                    tracing::warn!("sandbox: {e}; each call makes namespaces of its own");
                    not_held = Some(format!(
                        "each call makes namespaces of its own (the session's cannot be held: \
                         {e}), {PER_CALL_TMPFS}"
                    ));
                    None
                }
            },
            None => None,
        };
        // `$TMPDIR` a tmpfs in the session's view: reached by pod's own tools through the
        // holder's root, or not at all (and then the host folder, for every call).
        let mut tmpfs = None;
        if let (Some(size), Some(h)) = (sized, &holder) {
            match tmpfs::View::open(h.root(), &tmp, size) {
                Ok(view) => tmpfs = Some(view.register()),
                Err(e) => {
                    tracing::warn!("sandbox: {e}; each call makes namespaces of its own");
                    not_held = Some(format!(
                        "pod's own tools cannot reach the tmpfs ({e}), so each call makes \
                         namespaces of its own, {PER_CALL_TMPFS}"
                    ));
                    holder = None;
                }
            }
        }
        let mut info = plan.info;
        info.exec_gate = exec_gate;
        if let (Some(size), None) = (planned, &tmpfs) {
            let why = not_held
                .unwrap_or_else(|| "the session's view has no $TMPDIR to mount it on".to_string());
            let gap = tmpdir_gap(size, &why);
            if config.required == Required::All {
                return Err(SandboxError::Unenforceable {
                    required: config.required.shown(),
                    reasons: vec![gap],
                });
            }
            let held = tmpdir_guarantee(size);
            info.guarantees.retain(|g| *g != held);
            tracing::warn!("sandbox: {gap}");
        } else if let Err(why) = &plan.tmpdir {
            // A gap was logged with the others; the default under `mode = "landlock"` is not
            // one, and is said here.
            if !plan.gaps.iter().any(|g| g.starts_with("$TMPDIR")) {
                tracing::warn!("sandbox: {}", tmpdir_gap(config.max_tmpdir_size(), why));
            }
        }
        let limit = config.max_processes();
        let pids = match &plan.pids {
            Ok(parent) => match cgroup::Session::create(parent, limit) {
                Ok(session) => Some(Arc::new(session)),
                Err(why) if config.max_processes.is_some() && config.required == Required::All => {
                    return Err(SandboxError::Unenforceable {
                        required: config.required.shown(),
                        reasons: vec![pids_gap(limit, &why)],
                    });
                }
                Err(why) => {
                    let held = pids_guarantee(limit);
                    info.guarantees.retain(|g| *g != held);
                    tracing::warn!("sandbox: {}", pids_gap(limit, &why));
                    None
                }
            },
            Err(why) => {
                // An explicit setting's gap was logged with the others.
                if config.max_processes.is_none() {
                    tracing::warn!("sandbox: {}", pids_gap(limit, why));
                }
                None
            }
        };
        if exec_gate {
            info.guarantees.push(if wrap.is_some() {
                "exec gate: every exec of a bash call decided on its real argv; /proc read-only"
                    .to_string()
            } else {
                "exec gate: every exec of a bash call decided on its real argv".to_string()
            });
        }
        if wrap.is_none() {
            // The kernel may still have refused everything (best effort found nothing).
            info.enforced = info.enforced && ruleset.is_some();
            if ruleset.is_none() {
                info.network = NetworkAccess::Allow;
            }
        }
        // A repository's missing `commondir` (an empty one breaks git) and the re-read names a
        // writable folder lacks cannot be masked: one a call makes is set aside when it ends.
        if repositories.is_empty() {
            repositories = writable
                .iter()
                .map(|w| w.join(".git"))
                .filter(|g| g.is_dir())
                .collect();
        }
        let folders: Vec<PathBuf> = writable
            .iter()
            .filter(|w| !w.starts_with(tmpdir.path()))
            .cloned()
            .collect();
        let mut sentinels = planted::Sentinel::missing_in(&folders, &repositories);
        // The configuration files git would read from a writable folder that are missing now
        // (the ones there are bound read-only under namespaces: `layout`).
        let beneath = |p: &Path| folders.iter().any(|w| p.starts_with(w));
        for git in &repositories {
            let files = gitconfig::pointed(git).files;
            sentinels.extend(
                files
                    .into_iter()
                    .filter(|f| beneath(f))
                    // Its own `config` and `config.worktree` are watched already.
                    .filter(|f| *f != git.join("config") && *f != git.join("config.worktree"))
                    .filter_map(planted::Sentinel::config_file),
            );
        }
        let watched = planted::Watched::open(
            sentinels,
            records.as_deref(),
            &path::resolve(workspace),
            label,
        );
        // Repositories a call makes (or turns a folder into) cannot be bound: what git would run
        // from them is set aside when the call ends.
        let repos = repos::Repos::open(
            &path::resolve(workspace),
            &writable,
            Some(&path::resolve(tmpdir.path())),
            &repositories,
        );
        writable.extend(domain::DEVICES.iter().map(PathBuf::from));
        Ok(Sandbox {
            info,
            ruleset,
            seccomp: if wrap.is_none() || holder.is_some() {
                Some(filters)
            } else {
                None
            },
            wrap,
            holder,
            tmpdir: Some(tmpdir),
            _tmpdir_lock: Some(lock),
            writable,
            missing,
            workspace: workspace.to_path_buf(),
            env: ChildEnv::new(&config.env),
            session_net,
            watched,
            repos: Some(Arc::new(repos)),
            pids,
            tmpfs,
        })
    }

    /// Why the kernel does not bound everything a call can do here, when it does not: what
    /// `auto` mode needs and lacks. It needs each call in namespaces of its own (metadata,
    /// reads of secrets, other processes, the network), the exec gate deciding every program a
    /// call starts, and the network denied.
    pub fn unbounded(&self) -> Option<String> {
        let bounded = self.info.enforced
            && self.wrap.is_some()
            && self.info.exec_gate
            && self.info.network == NetworkAccess::Deny;
        if bounded {
            return None;
        }
        let mut missing = Vec::new();
        if !self.info.enforced {
            missing.push("the sandbox is not enforced");
        }
        if self.wrap.is_none() {
            // Landlock alone bounds writes and TCP only (docs/permissions.md, "The sandbox").
            missing.push("calls do not run in namespaces of their own");
        }
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
        self.info.clone()
    }

    /// The `bwrap` arguments of the session, when calls run in namespaces.
    pub fn namespace_args(&self) -> Option<&[std::ffi::OsString]> {
        self.wrap.as_deref().map(namespaces::Wrap::args)
    }

    /// Whether the exec gate decides every exec of a `bash` call's processes.
    pub fn gate_on(&self) -> bool {
        self.info.exec_gate
    }

    /// Under `network = "proxy"` in namespaces: the listener bound inside the calls' network
    /// namespace on the proxy's port, for the proxy to serve (once; `None` after, and in every
    /// other mode, where calls reach the proxy's own listener or no network).
    pub fn proxy_listener(&self) -> Option<std::net::TcpListener> {
        self.session_net.as_ref().and_then(|n| n.take_listener())
    }

    /// Sets aside what calls left of the files that must stay missing (a repository's
    /// `.git/commondir`, a writable folder's `.envrc`, `.vscode`, `.mcp.json`, …: read later by
    /// tools outside the sandbox), and what git would run from a repository made since the
    /// session opened ([`repos`]): each renamed beside itself, so nothing is lost (removed when
    /// it cannot be renamed). Run when a call ends. The names are those missing when the
    /// session opened, whichever call made them ([`planted::Watched`]); those pod's own tools
    /// made ([`Sandbox::made_by_pod`]) are left alone.
    pub fn set_aside_planted(&self) -> Vec<planted::Planted> {
        let mut out = self.watched.set_aside();
        if let Some(repos) = &self.repos {
            out.extend(repos.check());
        }
        out
    }

    /// Says that pod's own tool (`file_write`, an editor's write) wrote `path`, which the user
    /// allowed: a watched name it made is not set aside.
    pub fn made_by_pod(&self, path: &Path) {
        self.watched.made_by_pod(path);
    }

    /// The session's `$TMPDIR`, when there is one.
    pub fn tmpdir(&self) -> Option<&Path> {
        self.tmpdir.as_ref().map(|t| t.path())
    }

    /// Writable folders that did not exist when the sandbox was opened.
    pub fn missing(&self) -> &[PathBuf] {
        &self.missing
    }

    /// A command that runs `program` in the session's sandbox: inside `bwrap` under
    /// namespaces, else the program itself. Add its arguments, then [`Sandbox::prepare`] it.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> tokio::process::Command {
        match (&self.wrap, &self.holder) {
            (Some(wrap), None) => wrap.command(program.as_ref()),
            _ => tokio::process::Command::new(program),
        }
    }

    /// The function to run in a forked child before `exec`: a session and process group of its
    /// own, subreaper for its descendants, then: under namespaces, the seccomp programs at the
    /// descriptors `bwrap` reads; under Landlock, `no_new_privs`, the domain and the seccomp
    /// filter. For `std::process::Command::pre_exec` or tokio's; [`Sandbox::prepare`] installs
    /// it, with `$TMPDIR`. A failure fails the spawn: nothing runs outside the sandbox.
    /// No process limit: [`Sandbox::prepare`] adds the call's cgroup.
    pub fn pre_exec(&self) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        self.pre_exec_traced(false, None)
    }

    /// [`Sandbox::pre_exec`]; `traced`: the child already asked to be traced by the exec gate;
    /// `procs`: the `cgroup.procs` of the call's cgroup, which the child moves itself into
    /// first, before it forks anything or enters a namespace (the session's mount namespace
    /// has no `/sys/fs/cgroup`), so that everything the call starts is counted.
    fn pre_exec_traced(
        &self,
        traced: bool,
        procs: Option<std::ffi::CString>,
    ) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        let ruleset = self.ruleset.clone();
        let wrap = self.wrap.clone().filter(|_| self.holder.is_none());
        let filters = self.seccomp.clone();
        let mut enter = match (&self.holder, &filters) {
            (Some(holder), Some(f)) => Some(holder.enter(traced, ruleset.clone(), f.clone())),
            _ => None,
        };
        move || {
            if let Some(procs) = &procs {
                cgroup::join(procs)?;
            }
            reaper::child_setup()?;
            if let Some(enter) = &mut enter {
                // Returns in the call's program only, inside the session's namespaces, with
                // the Landlock scope domain and the seccomp programs entered.
                return enter();
            }
            if let Some(wrap) = &wrap {
                wrap.child_setup()?;
            }
            if let Some(ruleset) = &ruleset {
                domain::enter(ruleset)?;
            }
            if let Some(filters) = &filters {
                // SAFETY: prctl with integer arguments touches no memory of ours.
                if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                filters.install()?;
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

    /// Gives `cmd` (made by [`Sandbox::command`]) the session's environment (nothing else of
    /// the pod's) and `$TMPDIR`, and installs [`Sandbox::pre_exec`]. Call it first, then set the
    /// caller's own variables; spawn with [`CallProcess::spawn`] so that its processes die
    /// with the call. Hold the [`CallLimit`] it returns until the call's processes are gone:
    /// the process moves itself into the call's cgroup (`[sandbox] max_processes`), which goes
    /// when the limit is dropped or [`CallLimit::remove`]d.
    ///
    /// Fails closed: under namespaces, a command that was not made by [`Sandbox::command`]
    /// (its program is not `bwrap`) fails to spawn rather than run outside the namespaces; so
    /// does one whose cgroup cannot be made where the limit is held.
    pub fn prepare(&self, cmd: &mut tokio::process::Command) -> CallLimit {
        self.prepare_std(cmd.as_std_mut(), false)
    }

    /// [`Sandbox::prepare`] for a `std::process::Command`. `gated`: the command is for
    /// [`gate::GatedProcess::spawn`] (the exec gate's attach seam): its first `pre_exec` step
    /// asks to be traced, before the domain is entered; the gate adds its seccomp filters last.
    pub fn prepare_std(&self, cmd: &mut std::process::Command, gated: bool) -> CallLimit {
        use std::os::unix::process::CommandExt;
        if gated {
            gate::trace_me(cmd);
        }
        self.env.apply_std(cmd);
        if let Some(tmp) = self.tmpdir() {
            cmd.env("TMPDIR", tmp);
        }
        let outside = self.holder.is_none()
            && self
                .wrap
                .as_deref()
                .is_some_and(|w| !w.made(cmd.get_program()));
        if outside {
            tracing::error!(
                "sandbox: {} was not made by Sandbox::command; refusing to start it outside the \
                 namespaces",
                cmd.get_program().to_string_lossy()
            );
            // SAFETY: the hook makes no system call and allocates nothing.
            unsafe {
                cmd.pre_exec(|| Err(std::io::Error::from_raw_os_error(libc::EPERM)));
            }
            return CallLimit::none();
        }
        let cgroup = match self.pids.as_deref().map(cgroup::Session::call) {
            None => None,
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                tracing::error!("sandbox: {e}; refusing to start the call without its limit");
                let errno = e.raw_os_error().unwrap_or(libc::EAGAIN);
                // SAFETY: the hook makes no system call and allocates nothing.
                unsafe {
                    cmd.pre_exec(move || Err(std::io::Error::from_raw_os_error(errno)));
                }
                return CallLimit::none();
            }
        };
        let procs = cgroup.as_ref().map(|c| c.procs().to_owned());
        // SAFETY: the hook makes only async-signal-safe system calls and allocates nothing.
        unsafe {
            cmd.pre_exec(self.pre_exec_traced(gated, procs));
        }
        CallLimit {
            cgroup,
            contained: self.holder.is_some() && self.seccomp.is_some(),
        }
    }

    /// The paths in `output` that a process was refused writing because of the sandbox, as far
    /// as the output tells: lines saying "Permission denied", "Operation not permitted" or
    /// "Read-only file system" that name a path outside the writable folders, which the pod
    /// itself could write to (so the refusal was not the file's own permissions). Empty when
    /// nothing is enforced.
    pub fn blocked_writes(&self, output: &str) -> Vec<String> {
        if self.ruleset.is_none() && self.wrap.is_none() {
            return Vec::new();
        }
        let mut found: Vec<String> = Vec::new();
        for line in output.lines() {
            if !(line.contains("Permission denied")
                || line.contains("Operation not permitted")
                || line.contains("Read-only file system"))
            {
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

    /// Where `$TMPDIR` is the session's size-limited tmpfs and `output` tells of a write that
    /// failed for lack of space (`ENOSPC`, "No space left on device") there, the note that says
    /// so: a line naming a path in `$TMPDIR`, or naming no path while the tmpfs is nearly full
    /// (a line naming a path elsewhere is another file system's).
    pub fn tmpdir_full(&self, output: &str) -> Option<String> {
        let view = self.tmpfs.as_ref()?.view();
        let tmp = path::resolve(self.tmpdir()?);
        let mut named_here = false;
        let mut unnamed = false;
        for line in output
            .lines()
            .filter(|l| l.contains("No space left on device"))
        {
            let absolute: Vec<PathBuf> = path_candidates(line)
                .into_iter()
                .map(|c| path::resolve_in(&self.workspace, Path::new(c)))
                .collect();
            named_here |= absolute.iter().any(|p| p.starts_with(&tmp));
            unnamed |= absolute.is_empty();
        }
        let (used, total) = view.usage()?;
        let nearly_full = used.saturating_mul(10) >= total.saturating_mul(9);
        if !(named_here || unnamed && nearly_full) {
            return None;
        }
        Some(format!(
            "[sandbox: $TMPDIR is full: it holds at most {} for the whole session ([sandbox] \
             max_tmpdir_size, a tmpfs shared by its calls, hooks and MCP servers; {} in use \
             now), so a write past it failed with ENOSPC (\"No space left on device\"); remove \
             files there, or write large data in the workspace]\n",
            crate::manifest::human_size(view.size()),
            crate::manifest::human_size(used)
        ))
    }

    /// Whether `output` tells of a network connection the sandbox refused (`network = "deny"`
    /// in force and a refusal about `connect`, `bind` or `/dev/tcp`, or, in a network
    /// namespace, an unreachable network, a refused connection (nothing listens on the call's
    /// own loopback) or an unresolvable host).
    pub fn blocked_network(&self, output: &str) -> bool {
        let enforced = self.ruleset.is_some() || self.wrap.is_some();
        enforced
            && self.info.network != NetworkAccess::Allow
            && output.lines().any(|line| {
                ((line.contains("Permission denied") || line.contains("Operation not permitted"))
                    && (line.contains("connect")
                        || line.contains("bind")
                        || line.contains("/dev/tcp/")))
                    || (self.wrap.is_some()
                        && (line.contains("Network is unreachable")
                            || line.contains("Connection refused")
                            || line.contains("Could not resolve host")
                            || line.contains("Temporary failure in name resolution")))
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

/// The mount view of a session under namespaces: what is read-only and what is masked inside
/// the writable folders, from `guard`, the files tools re-read ([`namespaces::REREAD`]) and
/// `$HOME`'s secrets ([`namespaces::HOME_SECRETS`]).
fn layout(
    writable: &[PathBuf],
    network: namespaces::Network,
    guard: Guard<'_>,
) -> namespaces::Layout {
    let beneath = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let mut read_only: Vec<PathBuf> = Vec::new();
    let mut masked: Vec<PathBuf> = Vec::new();
    let add = |list: &mut Vec<PathBuf>, p: PathBuf| {
        if !list.contains(&p) {
            list.push(p);
        }
    };
    let state_root = guard.state_root.map(path::resolve);
    for p in guard.protected {
        let p = path::resolve(p);
        if state_root.as_ref().is_some_and(|s| p.starts_with(s)) {
            continue;
        }
        if p.exists() && beneath(&p) {
            add(&mut read_only, p);
        }
    }
    let mut sealed_missing: Vec<PathBuf> = Vec::new();
    // Every repository folder found, whose `commondir` a call must not leave behind.
    let mut git_dirs: Vec<PathBuf> = Vec::new();
    for w in writable {
        for name in namespaces::REREAD {
            let p = w.join(name);
            // A symlink's target is bound only when it lies beneath a writable folder (else it
            // is read-only already): one planted there (`.git/hooks -> ../..`) must not bind
            // a folder `readable` hides back into view.
            if p.symlink_metadata().is_ok() {
                let target = path::resolve(&p);
                if beneath(&target) && !writable.contains(&target) {
                    add(&mut read_only, target);
                }
            }
        }
        let git = w.join(".git");
        if git.symlink_metadata().is_err() && inside_a_repository(w) {
            // Inside another repository, a `.git` made here would be the one the user's git
            // finds first; an empty one is passed over, and git finds the outer one as before.
            add(&mut sealed_missing, git.clone());
        }
    }
    // One bounded walk of each writable folder (not entering `.git`): every repository in it
    // (the folder's own, submodules' work trees, linked worktrees, nested clones), and, when
    // rules deny reads or writes, what they match.
    let policy = guard.policy.filter(|p| has_file_denials(p));
    let denied = |tool: &str, p: &Path| {
        policy.is_some_and(|policy| {
            let input = serde_json::json!({"path": p.to_string_lossy(), "content": ""});
            policy
                .decide(tool, &input)
                .subjects
                .iter()
                .any(|s| s.action == crate::protocol::Action::Deny && s.rule.is_some())
        })
    };
    for w in writable {
        let mut writes = Vec::new();
        let mut repositories = Vec::new();
        let (mut reads, truncated) = namespaces::walk_matching(w, WALK_BUDGET, &mut |p, is_dir| {
            if denied("read", p) {
                return true;
            }
            if p.file_name().is_some_and(|n| n == ".git") {
                repositories.push(p.to_path_buf());
                return true;
            }
            if !is_dir && denied("file_write", p) {
                writes.push(p.to_path_buf());
            }
            false
        });
        reads.retain(|p| !repositories.contains(p));
        if truncated {
            tracing::warn!(
                "sandbox: {} has more than {WALK_BUDGET} entries; deny rules and the \
                 repositories past them hold by the permission layer only",
                w.display()
            );
        }
        for git in repositories {
            protect_git(
                &git,
                writable,
                &mut read_only,
                &mut sealed_missing,
                &mut git_dirs,
            );
        }
        for p in writes {
            add(&mut read_only, p);
        }
        for p in reads {
            add(&mut masked, p);
        }
    }
    // What the repositories' configuration points at in a writable folder: a hooks folder
    // (`core.hooksPath`) and included configuration files, held like `.git/hooks` and
    // `.git/config`. One that is (or holds) a writable folder cannot be held: said, not bound.
    for git in &git_dirs {
        let pointed = gitconfig::pointed(git);
        let holds_root = |p: &Path| writable.iter().any(|w| w.starts_with(p));
        for (p, hooks) in pointed
            .files
            .into_iter()
            .map(|f| (f, false))
            .chain(pointed.hooks.into_iter().map(|h| (h, true)))
        {
            if !beneath(&p) {
                continue;
            }
            if holds_root(&p) {
                tracing::warn!(
                    "sandbox: {} (named by {}'s configuration) is a writable folder, so a call \
                     can change what git reads or runs from it",
                    p.display(),
                    git.display()
                );
            } else if p.symlink_metadata().is_ok() {
                add(&mut read_only, p);
            } else if hooks {
                add(&mut sealed_missing, p);
            }
        }
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        for name in namespaces::HOME_SECRETS {
            let p = home.join(name);
            if p.symlink_metadata().is_ok() {
                add(&mut masked, path::resolve(&p));
            }
        }
    }
    if let Some(root) = state_root.filter(|r| r.is_dir()) {
        add(&mut masked, root);
    }
    // A folder masked holds nothing to bind read-only.
    read_only.retain(|r| !masked.iter().any(|m| r.starts_with(m)));
    namespaces::Layout {
        writable: writable.to_vec(),
        read_only,
        masked,
        sealed_missing,
        repositories: git_dirs,
        network,
        hidden_home: None,
        proc_read_only: false,
    }
}

/// What of repository `git` (a `.git` folder, or a linked worktree's `.git` file) is bound
/// read-only, and its missing `hooks` folders sealed: a hook or a config line put there would
/// run at the user's next git command, unsandboxed.
fn protect_git(
    git: &Path,
    writable: &[PathBuf],
    read_only: &mut Vec<PathBuf>,
    sealed: &mut Vec<PathBuf>,
    git_dirs: &mut Vec<PathBuf>,
) {
    let add = |list: &mut Vec<PathBuf>, p: PathBuf| {
        if !list.contains(&p) {
            list.push(p);
        }
    };
    if git.is_file() {
        // A linked worktree (or a submodule's work tree): `.git` names the folder git reads
        // everything from, which is held too when it lies in a writable folder (whatever its
        // name: `gitdir: ../evil`).
        add(read_only, git.to_path_buf());
        let named = std::fs::read_to_string(git).ok().and_then(|t| {
            let dir = t
                .lines()
                .next()?
                .strip_prefix("gitdir:")?
                .trim()
                .to_string();
            Some(path::resolve_in(git.parent()?, Path::new(&dir)))
        });
        if let Some(dir) = named.filter(|d| d.is_dir() && !git_dirs.contains(d)) {
            if writable.iter().any(|w| dir.starts_with(w)) {
                protect_git(&dir, writable, read_only, sealed, git_dirs);
            }
        }
        return;
    }
    if !git.is_dir() || git_dirs.iter().any(|g| g == git) {
        return;
    }
    git_dirs.push(git.to_path_buf());
    // `config.worktree` is read as configuration too once the repository's config sets
    // `extensions.worktreeConfig` (as `git sparse-checkout init` does).
    for name in ["config", "config.worktree", "hooks", "info/attributes"] {
        let p = git.join(name);
        if p.symlink_metadata()
            .is_ok_and(|m| !m.file_type().is_symlink())
        {
            add(read_only, p);
        }
    }
    let hooks = git.join("hooks");
    if hooks.symlink_metadata().is_err() {
        // An empty folder is what `git init` makes anyway.
        add(sealed, hooks);
    }
    let (files, missing_hooks) = git_control_files(git);
    for f in files {
        // A submodule's repository (`modules/…/config`): its own `commondir` too.
        if f.ends_with("config") {
            if let Some(repo) = f.parent().filter(|r| *r != git) {
                if !git_dirs.iter().any(|g| g == repo) {
                    git_dirs.push(repo.to_path_buf());
                }
            }
        }
        add(read_only, f);
    }
    for h in missing_hooks {
        // A submodule's repository: its own `commondir` too.
        if let Some(repo) = h.parent() {
            if !git_dirs.iter().any(|g| g == repo) {
                git_dirs.push(repo.to_path_buf());
            }
        }
        add(sealed, h);
    }
}

/// The files of repository `git` (a `.git` folder) besides `config` and `hooks` from which git
/// takes configuration or code to run: `commondir` (where its config and hooks are), each
/// linked worktree's `commondir`, `gitdir` and `config.worktree`, and each submodule's
/// repository (`modules/…`)
/// `config` and `hooks`; second, the submodules' missing `hooks` folders. At most 256
/// folders are looked at.
fn git_control_files(git: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut files = Vec::new();
    let mut missing = Vec::new();
    let commondir = git.join("commondir");
    if commondir.is_file() {
        files.push(commondir);
    }
    if let Ok(entries) = std::fs::read_dir(git.join("worktrees")) {
        for e in entries.flatten().take(256) {
            for name in ["commondir", "gitdir", "config.worktree"] {
                let f = e.path().join(name);
                if f.is_file() {
                    files.push(f);
                }
            }
        }
    }
    let mut stack = vec![git.join("modules")];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > 256 {
                return (files, missing);
            }
            let d = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if d.join("config").is_file() {
                files.push(d.join("config"));
                let hooks = d.join("hooks");
                if hooks.is_dir() {
                    files.push(hooks);
                } else if hooks.symlink_metadata().is_err() {
                    missing.push(hooks);
                }
                stack.push(d.join("modules"));
            } else {
                // A submodule named with slashes (`libs/a`) nests its repository deeper.
                stack.push(d);
            }
        }
    }
    (files, missing)
}

/// Whether a folder above `dir` holds a `.git`: `dir` is inside a repository.
fn inside_a_repository(dir: &Path) -> bool {
    dir.ancestors()
        .skip(1)
        .any(|a| a.join(".git").symlink_metadata().is_ok())
}

/// `[sandbox] readable`: `$HOME` and the listed paths beneath it that exist (symlinks resolved).
/// `None`, with a warning, when there is no home folder to hide (`$HOME` unset, not a folder,
/// or `/`).
fn hidden_home(readable: &[PathBuf]) -> Option<(PathBuf, Vec<PathBuf>)> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h.is_dir())
        .map(|h| path::resolve(&h))
        .filter(|h| h.parent().is_some());
    let Some(home) = home else {
        tracing::warn!(
            "sandbox: [sandbox] readable is set but $HOME is not a folder that can be hidden;              nothing of it is hidden"
        );
        return None;
    };
    let mut shown = Vec::new();
    for p in readable {
        let p = path::resolve(p);
        if p.starts_with(&home) && p.symlink_metadata().is_ok() && !shown.contains(&p) {
            shown.push(p);
        }
    }
    Some((home, shown))
}

/// Whether any rule denies `read` or `file_write` (else there is nothing to walk for).
fn has_file_denials(policy: &crate::permission::Policy) -> bool {
    policy.rules().is_some_and(|rules| {
        rules.specs().any(|spec| {
            spec.action == crate::protocol::Action::Deny
                && matches!(spec.tool.as_str(), "read" | "file_write" | "edit" | "*")
        })
    })
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

    fn config(mode: SandboxMode, network: NetworkAccess, required: Required) -> SandboxConfig {
        SandboxConfig {
            mode,
            required,
            network,
            ..SandboxConfig::default()
        }
    }

    fn no_ns() -> Result<PathBuf, String> {
        Err("none here".to_string())
    }

    fn no_net() -> Result<(), String> {
        Err("no network namespace here".to_string())
    }

    #[test]
    fn proxy_runs_in_namespaces_only_with_a_session_network_namespace() {
        let c = config(SandboxMode::Namespaces, NetworkAccess::Proxy, Required::No);
        let bwrap = || Ok(PathBuf::from("/usr/bin/bwrap"));
        let p = plan_for(&c, 7, bwrap(), Ok(()));
        assert_eq!(p.info.kind, SandboxKind::Namespaces);
        assert!(p.session_net && p.gaps.is_empty(), "{p:?}");
        assert!(p
            .info
            .guarantees
            .iter()
            .any(|g| g.contains("one way out is pod's proxy")));
        let p = plan_for(&c, 7, bwrap(), no_net());
        assert_eq!(p.info.kind, SandboxKind::Landlock);
        assert!(!p.session_net);
        assert!(p.gaps[0].contains("no network namespace here"), "{p:?}");
        // `deny` without a session namespace keeps one per call.
        let c = config(SandboxMode::Namespaces, NetworkAccess::Deny, Required::All);
        let p = plan_for(&c, 7, bwrap(), no_net());
        assert_eq!(p.info.kind, SandboxKind::Namespaces);
        assert!(!p.session_net && p.gaps.is_empty() && !p.refuses);
    }

    #[test]
    fn the_process_limit_is_a_guarantee_where_held_and_an_explicit_one_a_gap_where_not() {
        let bwrap = || Ok(PathBuf::from("/usr/bin/bwrap"));
        let parent = || {
            Ok(cgroup::Parent {
                dir: PathBuf::from("/sys/fs/cgroup/pids"),
                version: cgroup::Version::V1,
                leaf: None,
            })
        };
        let mut c = config(SandboxMode::Namespaces, NetworkAccess::Allow, Required::All);
        let mut p = plan_for(&c, 7, bwrap(), Ok(()));
        add_pids(&mut p, &c, parent());
        assert!(p
            .info
            .guarantees
            .iter()
            .any(|g| g.starts_with("at most 4096 processes")));
        assert!(p.pids.is_ok() && p.gaps.is_empty() && !p.refuses, "{p:?}");
        // The default not held: reported (`pids`), no gap, no refusal.
        let mut p = plan_for(&c, 7, bwrap(), Ok(()));
        add_pids(&mut p, &c, Err("not writable".into()));
        assert!(!p
            .info
            .guarantees
            .iter()
            .any(|g| g.contains("max_processes")));
        assert!(p.gaps.is_empty() && !p.refuses, "{p:?}");
        assert_eq!(p.pids, Err("not writable".to_string()));
        // An explicit one not held: a gap naming it, and `required = true` refuses.
        c.max_processes = Some(50);
        let mut p = plan_for(&c, 7, bwrap(), Ok(()));
        add_pids(&mut p, &c, Err("not writable".into()));
        assert!(p.gaps[0].contains("max_processes = 50") && p.gaps[0].contains("not writable"));
        assert!(p.refuses);
        c.required = Required::Namespaces;
        let mut p = plan_for(&c, 7, bwrap(), Ok(()));
        add_pids(&mut p, &c, Err("not writable".into()));
        assert!(!p.refuses && p.gaps.len() == 1, "{p:?}");
    }

    #[test]
    fn the_tmpdir_limit_is_a_guarantee_where_held_and_a_gap_where_calls_run_in_namespaces() {
        let bwrap = || Ok(PathBuf::from("/usr/bin/bwrap"));
        let held = |p: &Plan| p.info.guarantees.iter().any(|g| g.starts_with("$TMPDIR"));
        let mut c = config(SandboxMode::Namespaces, NetworkAccess::Allow, Required::All);
        let mut p = plan_for(&c, 7, bwrap(), Ok(()));
        add_tmpdir(&mut p, &c, Ok(()));
        assert!(p.info.guarantees.contains(
            &"$TMPDIR: at most 1 GiB (a tmpfs, shared by the \
             session's calls, hooks and MCP servers; [sandbox] max_tmpdir_size): a write past it \
             fails with ENOSPC"
                .to_string()
        ));
        assert_eq!(p.tmpdir, Ok(1 << 30));
        assert!(p.gaps.is_empty() && !p.refuses, "{p:?}");
        // The per-call fall-back (or a bwrap without --size): a gap, and `required = true`
        // refuses; `required = "namespaces"` does not (the namespaces hold).
        let mut p = plan_for(&c, 7, bwrap(), Ok(()));
        add_tmpdir(&mut p, &c, Err("a call's own".into()));
        assert!(!held(&p) && p.refuses, "{p:?}");
        assert!(
            p.gaps[0].contains("max_tmpdir_size = \"1G\"") && p.gaps[0].contains("a call's own"),
            "{p:?}"
        );
        c.required = Required::Namespaces;
        let mut p = plan_for(&c, 7, bwrap(), Ok(()));
        add_tmpdir(&mut p, &c, Err("a call's own".into()));
        assert!(!p.refuses && p.gaps.len() == 1, "{p:?}");
        // The Landlock fall-back's own gap names it.
        let mut p = plan_for(&c, 7, no_ns(), no_net());
        add_tmpdir(&mut p, &c, Err(NOT_IN_NAMESPACES.into()));
        assert!(
            p.gaps.len() == 1 && p.gaps[0].contains("$TMPDIR's size limit"),
            "{p:?}"
        );
        // `mode = "landlock"`: the default is no gap; an explicit size is one.
        let mut c = config(SandboxMode::Landlock, NetworkAccess::Allow, Required::All);
        let mut p = plan_for(&c, 7, no_ns(), no_net());
        add_tmpdir(&mut p, &c, Err(NOT_IN_NAMESPACES.into()));
        assert!(
            p.gaps.is_empty() && !p.refuses && p.tmpdir.is_err(),
            "{p:?}"
        );
        c.max_tmpdir_size = Some(64 << 20);
        let mut p = plan_for(&c, 7, no_ns(), no_net());
        add_tmpdir(&mut p, &c, Err(NOT_IN_NAMESPACES.into()));
        assert!(p.refuses && p.gaps[0].contains("\"64M\""), "{p:?}");
    }

    #[test]
    fn the_plan_follows_the_kernel() {
        let c = config(SandboxMode::Landlock, NetworkAccess::Deny, Required::No);
        let p = plan_for(&c, 7, no_ns(), no_net());
        assert!(p.apply && p.info.enforced && p.gaps.is_empty());
        assert_eq!(p.info.network, NetworkAccess::Deny);
        let p = plan_for(&c, 3, no_ns(), no_net());
        assert!(p.info.enforced);
        assert_eq!(p.info.network, NetworkAccess::Allow);
        assert!(
            p.gaps[0].contains("network = \"deny\" needs Landlock ABI 4"),
            "{p:?}"
        );
        let p = plan_for(&c, 2, no_ns(), no_net());
        assert!(p.apply && !p.info.enforced);
        assert!(p.gaps[0].contains("truncating"), "{p:?}");
        let p = plan_for(&c, 0, no_ns(), no_net());
        assert!(!p.apply && !p.info.enforced);
        assert!(p.gaps[0].contains("no Landlock"), "{p:?}");
        let off = plan_for(
            &config(SandboxMode::Off, NetworkAccess::Deny, Required::All),
            7,
            no_ns(),
            no_net(),
        );
        assert!(!off.apply && off.gaps.is_empty());
        assert_eq!(off.info.kind, SandboxKind::None);
    }

    #[test]
    fn namespaces_fall_back_to_landlock_loudly_and_required_levels_refuse() {
        let ns = |required| config(SandboxMode::Namespaces, NetworkAccess::Deny, required);
        let p = plan_for(
            &ns(Required::All),
            7,
            Ok(PathBuf::from("/usr/bin/bwrap")),
            Ok(()),
        );
        assert_eq!(p.info.kind, SandboxKind::Namespaces);
        assert!(p.bwrap.is_some() && !p.apply && !p.refuses && p.gaps.is_empty());
        assert_eq!(p.info.network, NetworkAccess::Deny);
        assert!(p
            .info
            .guarantees
            .iter()
            .any(|g| g.contains("empty network namespace")));
        let p = plan_for(&ns(Required::No), 7, no_ns(), no_net());
        assert_eq!(p.info.kind, SandboxKind::Landlock);
        assert!(p.apply && p.info.enforced && !p.refuses);
        assert!(p.gaps[0].contains("falling back to Landlock"), "{p:?}");
        assert!(p.gaps[0].contains("chmod"), "{p:?}");
        assert!(plan_for(&ns(Required::Landlock), 7, no_ns(), no_net())
            .refuses
            .not());
        assert!(plan_for(&ns(Required::Namespaces), 7, no_ns(), no_net()).refuses);
        assert!(plan_for(&ns(Required::All), 7, no_ns(), no_net()).refuses);
        assert!(plan_for(&ns(Required::Landlock), 0, no_ns(), no_net()).refuses);
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

    use std::ops::Not;

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

    /// `prepare` itself joins the session's namespaces: a command whose program is not `bwrap`
    /// (made without `Sandbox::command`) still runs inside, where it cannot write outside.
    #[tokio::test]
    async fn a_prepared_command_runs_inside_the_namespaces_whoever_made_it() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let out = tempfile::tempdir().unwrap();
        let victim = out.path().join("victim");
        let s = Sandbox::open(
            &SandboxConfig::default(),
            &ws,
            std::slice::from_ref(&ws),
            "unit",
        )
        .unwrap();
        assert_eq!(
            s.info().kind,
            SandboxKind::Namespaces,
            "needs bwrap: {:?}",
            s.info()
        );
        assert!(s.holder.is_some(), "the session's namespaces are held");
        let mut plain = tokio::process::Command::new("sh");
        plain
            .arg("-c")
            .arg(format!("touch {}; echo $$", victim.display()))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let _limit = s.prepare(&mut plain);
        let done = plain.output().await.unwrap();
        assert_eq!(String::from_utf8_lossy(&done.stdout).trim(), "2");
        assert!(!victim.exists(), "wrote outside the namespaces' view");
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
