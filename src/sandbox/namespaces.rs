//! Each process a call starts, in namespaces of its own: bubblewrap (`bwrap`, the tool Flatpak,
//! Codex and Claude Code use) driven by pod, with the mount view, the namespaces and the seccomp
//! filter built once per session and handed to `bwrap` at each spawn.
//!
//! Owns: finding and probing `bwrap` ([`available`], [`sizes_tmpfs`]), the session's mount view
//! and namespace
//! flags ([`Layout`], [`Wrap::new`]), and the command line that starts a program inside
//! ([`Wrap::command`]). The view: `/` read-only; a fresh `/dev` (no other terminal's
//! `/dev/pts/N`) and a fresh `/proc` (only the call's processes); the writable folders and
//! `$TMPDIR` writable (in the holder's view `$TMPDIR` is a size-limited tmpfs instead of the
//! host folder: [`Wrap::tmpfs_at`]); inside them, pod's protected paths, the files tools re-read as
//! configuration and the files a `file_write` deny rule matches bound read-only; what a `read`
//! deny rule matches and the secret folders of `$HOME` masked (an empty read-only folder, or
//! `/dev/null` for a file). New user, mount, PID, IPC, UTS and cgroup namespaces for every call,
//! made inside the session's network namespace under `network = "deny"` and `"proxy"`
//! ([`super::netns`], entered in the child before `bwrap` runs; a new one per call where it
//! cannot be made); every capability dropped
//! (empty bounding set, `no_new_privs`); `--die-with-parent`, so the call's PID namespace dies
//! with the pod, even a SIGKILLed one.
//!
//! Must not touch: decisions (it gets the paths to protect and mask, already decided), process
//! lifetimes beyond the namespace (the reaper still owns the call), the environment.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::netns::SessionNet;

/// The descriptor numbers `bwrap` reads the two seccomp programs from, in the child.
const SECCOMP_FDS: [i32; 2] = [950, 951];

/// Files and folders inside a writable folder that a tool reads back later as configuration
/// or code it runs (git, editors, direnv, MCP clients): bound read-only when they exist.
pub const REREAD: [&str; 8] = [
    ".git/config",
    ".git/hooks",
    ".git/info/attributes",
    ".gitmodules",
    ".vscode",
    ".envrc",
    ".mcp.json",
    ".idea",
];

/// Secret folders and files of `$HOME`, masked when they exist.
pub const HOME_SECRETS: [&str; 10] = [
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".netrc",
    ".docker",
    ".kube",
    ".config/gcloud",
    ".azure",
    ".git-credentials",
];

/// The namespace sandbox cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    #[error("cannot hand the seccomp filter to bubblewrap: {0}")]
    Memfd(std::io::Error),
    #[error("a path holds a NUL byte: {}", .0.display())]
    Nul(PathBuf),
}

/// Where `bwrap` is and whether it can make the namespaces here, probed once per process:
/// `Err` says why not, in words for the report.
pub fn available() -> Result<PathBuf, String> {
    static PROBE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    if crate::testing::namespaces_hidden() {
        return Err("namespaces are hidden (POD_TEST_NO_NAMESPACES=1)".to_string());
    }
    PROBE.get_or_init(probe).clone()
}

fn probe() -> Result<PathBuf, String> {
    let found = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "bubblewrap is not installed (`apt-get install bubblewrap`, `dnf install \
             bubblewrap`)"
                .to_string()
        })?;
    let out = std::process::Command::new(&found)
        .args([
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--",
            "true",
        ])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", found.display()))?;
    if out.status.success() {
        Ok(found)
    } else {
        Err(format!(
            "{} cannot create namespaces here (unprivileged user namespaces may be disabled, e.g. \
             kernel.unprivileged_userns_clone=0 or an AppArmor restriction): {}",
            found.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether `bwrap` can size a tmpfs (`--size`, bubblewrap 0.5 and newer), probed once per
/// process from its `--help`: `Err` says why not.
pub fn sizes_tmpfs(bwrap: &Path) -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let out = std::process::Command::new(bwrap)
                .arg("--help")
                .env_clear()
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("cannot run {} --help: {e}", bwrap.display()))?;
            if String::from_utf8_lossy(&out.stdout).contains("--size") {
                Ok(())
            } else {
                Err(format!(
                    "{} has no --size for a tmpfs (bubblewrap 0.5 or newer has)",
                    bwrap.display()
                ))
            }
        })
        .clone()
}

/// What the mount view holds, as absolute, symlink-resolved paths.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Writable folders (existing), `$TMPDIR` included.
    pub writable: Vec<PathBuf>,
    /// Existing paths bound read-only over the writable view.
    pub read_only: Vec<PathBuf>,
    /// Existing paths replaced by an empty read-only folder, or `/dev/null` for a file.
    pub masked: Vec<PathBuf>,
    /// The repository folders found in the writable folders (not bound: what `Sandbox` watches
    /// for a planted `commondir`, `config` or `config.worktree`, and what its end-of-call check
    /// of repositories ([`super::repos`]) knows as there at open).
    pub repositories: Vec<PathBuf>,
    /// Missing folders made empty and read-only (bwrap creates the empty folder as its mount
    /// point, so nothing can be put in it): `.git/hooks` of a repository that has none.
    pub sealed_missing: Vec<PathBuf>,
    /// `[sandbox] readable`: this folder (`$HOME`) hidden behind an empty read-only one, with
    /// the listed existing paths bound back read-only (and the writable folders beneath it
    /// writable, as everywhere).
    pub hidden_home: Option<(PathBuf, Vec<PathBuf>)>,
    /// Where the call's network is.
    pub network: Network,
    /// `/proc` mounted read-only (under the exec gate: no process can write another's
    /// `/proc/PID/mem` between the gate's decision and the exec's first instruction).
    pub proc_read_only: bool,
}

/// Which network namespace a call's processes are in.
#[derive(Debug, Clone, Default)]
pub enum Network {
    /// The pod's own (`network = "allow"`).
    #[default]
    Host,
    /// A new, empty one per call (`--unshare-net`), when no session namespace could be made.
    PerCall,
    /// The session's, entered before `bwrap` starts: loopback, and pod's proxy listener under
    /// `network = "proxy"`.
    Session(Arc<SessionNet>),
}

/// The session's prepared `bwrap` command line and seccomp programs.
#[derive(Debug)]
pub struct Wrap {
    bwrap: PathBuf,
    /// The session's network namespace, entered in the child before `bwrap` runs.
    net: Option<Arc<SessionNet>>,
    args: Vec<OsString>,
    /// The holder's command line, when it differs from a call's: `$TMPDIR` a size-limited
    /// tmpfs instead of the host folder ([`Wrap::tmpfs_at`]).
    holder_args: Option<Vec<OsString>>,
    /// memfds holding the two programs; each spawn opens them afresh through `/proc/self/fd`
    /// so that concurrent spawns never share a file offset.
    _memfds: Vec<OwnedFd>,
    reopen: Vec<CString>,
}

impl Wrap {
    /// The command line for `layout`, with `seccomp` (the two programs' bytes).
    pub fn new(
        bwrap: PathBuf,
        layout: &Layout,
        seccomp: [Vec<u8>; 2],
    ) -> Result<Wrap, NamespaceError> {
        let mut args: Vec<OsString> = Vec::new();
        let mut push = |words: &[&OsStr]| args.extend(words.iter().map(|w| w.to_os_string()));
        push(&[
            "--unshare-user".as_ref(),
            "--unshare-ipc".as_ref(),
            "--unshare-pid".as_ref(),
            "--unshare-uts".as_ref(),
            "--unshare-cgroup-try".as_ref(),
            "--disable-userns".as_ref(),
            "--die-with-parent".as_ref(),
            "--new-session".as_ref(),
            "--cap-drop".as_ref(),
            "ALL".as_ref(),
        ]);
        if matches!(layout.network, Network::PerCall) {
            push(&["--unshare-net".as_ref()]);
        }
        push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
        push(&["--dev".as_ref(), "/dev".as_ref()]);
        push(&["--proc".as_ref(), "/proc".as_ref()]);
        if layout.proc_read_only {
            push(&["--remount-ro".as_ref(), "/proc".as_ref()]);
        }
        if let Some((home, readable)) = &layout.hidden_home {
            push(&[
                "--perms".as_ref(),
                "0755".as_ref(),
                "--tmpfs".as_ref(),
                home.as_os_str(),
            ]);
            for p in readable {
                push(&["--ro-bind-try".as_ref(), p.as_os_str(), p.as_os_str()]);
            }
        }
        for w in &layout.writable {
            push(&["--bind".as_ref(), w.as_os_str(), w.as_os_str()]);
        }
        // Every folder between a writable root and a path bound or masked beneath it is bound
        // onto itself, outermost first: a mount point cannot be renamed, removed or replaced,
        // so a call cannot move a protected file's folder aside and put its own copy in its
        // place (for itself, or for the next call, whose binds go by name).
        for a in anchors(layout) {
            push(&["--bind".as_ref(), a.as_os_str(), a.as_os_str()]);
        }
        // `-try`: a file removed from outside after the session opened is skipped, rather than
        // failing every later call.
        for p in &layout.read_only {
            push(&["--ro-bind-try".as_ref(), p.as_os_str(), p.as_os_str()]);
        }
        for p in &layout.masked {
            if p.is_dir() {
                push(&[
                    "--perms".as_ref(),
                    "0555".as_ref(),
                    "--tmpfs".as_ref(),
                    p.as_os_str(),
                    "--remount-ro".as_ref(),
                    p.as_os_str(),
                ]);
            } else {
                push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), p.as_os_str()]);
            }
        }
        for p in &layout.sealed_missing {
            push(&[
                "--perms".as_ref(),
                "0555".as_ref(),
                "--tmpfs".as_ref(),
                p.as_os_str(),
                "--remount-ro".as_ref(),
                p.as_os_str(),
            ]);
        }
        if let Some((home, _)) = &layout.hidden_home {
            // Last, once every mount point beneath it is made: nothing new can be created there.
            push(&["--remount-ro".as_ref(), home.as_os_str()]);
        }
        let mut memfds = Vec::new();
        let mut reopen = Vec::new();
        for (bytes, fd) in seccomp.iter().zip(SECCOMP_FDS) {
            let memfd = memfd_with(bytes).map_err(NamespaceError::Memfd)?;
            let path = format!("/proc/self/fd/{}", memfd.as_raw_fd());
            reopen.push(CString::new(path.clone()).map_err(|_| NamespaceError::Nul(path.into()))?);
            memfds.push(memfd);
            push(&["--add-seccomp-fd".as_ref(), fd.to_string().as_ref()]);
        }
        let home = layout
            .hidden_home
            .iter()
            .flat_map(|(h, r)| std::iter::once(h).chain(r));
        for p in layout
            .writable
            .iter()
            .chain(&layout.read_only)
            .chain(&layout.masked)
            .chain(&layout.sealed_missing)
            .chain(home)
        {
            if p.as_os_str().as_bytes().contains(&0) {
                return Err(NamespaceError::Nul(p.clone()));
            }
        }
        Ok(Wrap {
            bwrap,
            net: match &layout.network {
                Network::Session(net) => Some(net.clone()),
                _ => None,
            },
            args,
            holder_args: None,
            _memfds: memfds,
            reopen,
        })
    }

    /// Makes the writable folder `dir` a tmpfs of `size` bytes (mode 0700) in the holder's
    /// view, in place of the bind of the host folder: what the session's calls, hooks and MCP
    /// servers see there, shared by all of them for the session (`super::tmpfs`). A call's own
    /// `bwrap` (the fall-back) keeps the host folder: a tmpfs of its own would lose its files
    /// when the call ends. False when `dir` is not a writable folder of the view.
    pub fn tmpfs_at(&mut self, dir: &Path, size: u64) -> bool {
        let bind = [OsStr::new("--bind"), dir.as_os_str(), dir.as_os_str()];
        let Some(at) = self.args.windows(3).position(|w| w == bind) else {
            return false;
        };
        let mut holder = self.args[..at].to_vec();
        holder.extend(
            [
                OsStr::new("--perms"),
                OsStr::new("0700"),
                OsStr::new("--size"),
                OsStr::new(&size.to_string()),
                OsStr::new("--tmpfs"),
                dir.as_os_str(),
            ]
            .map(OsStr::to_os_string),
        );
        holder.extend_from_slice(&self.args[at + 3..]);
        self.holder_args = Some(holder);
        true
    }

    /// A command that runs `program` inside; the caller adds its arguments.
    pub fn command(&self, program: &OsStr) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.bwrap);
        cmd.args(&self.args).arg("--").arg(program);
        cmd
    }

    /// The session's holder ([`super::holder`]): `bwrap` with the session's view running `cat`,
    /// reporting its child's pid on `info_fd`.
    pub fn holder_command(&self, info_fd: i32) -> std::process::Command {
        let mut cmd = std::process::Command::new(&self.bwrap);
        cmd.args(self.holder_args.as_ref().unwrap_or(&self.args))
            .arg("--info-fd")
            .arg(info_fd.to_string())
            .arg("--")
            .arg("cat");
        cmd
    }

    /// Whether the view has a network namespace of its own (`--unshare-net`).
    pub fn own_network(&self) -> bool {
        self.args.iter().any(|a| a == "--unshare-net")
    }

    /// The session's network namespace, when calls run in one.
    pub fn session_net(&self) -> Option<Arc<SessionNet>> {
        self.net.clone()
    }

    /// In the forked child, before `exec`ing `bwrap`: the seccomp programs at the descriptors
    /// the command line names, then into the session's network namespace. Only `open`, `dup2`,
    /// `close` and `setns`; no allocation.
    pub fn child_setup(&self) -> std::io::Result<()> {
        for (path, target) in self.reopen.iter().zip(SECCOMP_FDS) {
            // SAFETY: a NUL-terminated path prepared before the fork.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: plain descriptor calls; dup2 clears close-on-exec on the target.
            unsafe {
                if fd != target {
                    if libc::dup2(fd, target) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    libc::close(fd);
                } else if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        if let Some(net) = &self.net {
            net.enter()?;
        }
        Ok(())
    }

    /// Whether a command whose program is `program` was made by [`Wrap::command`].
    pub fn made(&self, program: &OsStr) -> bool {
        program == self.bwrap.as_os_str()
    }

    /// The `bwrap` arguments of a call's own `bwrap` (for `pod check` and tests).
    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// The holder's `bwrap` arguments.
    pub fn holder_args(&self) -> &[OsString] {
        self.holder_args.as_ref().unwrap_or(&self.args)
    }
}

/// The folders strictly between a writable root and each read-only, masked or sealed path
/// beneath it, or another writable root nested in it (none inside a masked folder), outermost
/// first.
fn anchors(layout: &Layout) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in layout
        .read_only
        .iter()
        .chain(&layout.masked)
        .chain(&layout.sealed_missing)
        .chain(&layout.writable)
    {
        let Some(root) = layout
            .writable
            .iter()
            .filter(|w| p.starts_with(w) && *w != p)
            .max_by_key(|w| w.components().count())
        else {
            continue;
        };
        let mut a = p.parent();
        while let Some(dir) = a {
            if dir == root.as_path() || !dir.starts_with(root) {
                break;
            }
            let hidden = layout.masked.iter().any(|m| dir.starts_with(m));
            if !hidden && !out.iter().any(|o| o == dir) {
                out.push(dir.to_path_buf());
            }
            a = dir.parent();
        }
    }
    out.sort_by(|a, b| {
        (a.components().count(), a.as_os_str()).cmp(&(b.components().count(), b.as_os_str()))
    });
    out
}

/// A sealed-enough memfd holding `bytes`, close-on-exec in the pod.
fn memfd_with(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    use std::io::Write;
    // SAFETY: a static NUL-terminated name.
    let fd = unsafe { libc::memfd_create(c"pod-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(owned);
    file.write_all(bytes)?;
    Ok(OwnedFd::from(file))
}

/// The paths below `root` (at most `budget` entries looked at, `.git`'s objects skipped) for
/// which `matches` holds; a matching folder is returned and not descended. The second value is
/// true when the budget ran out before the walk ended.
pub fn walk_matching(
    root: &Path,
    budget: usize,
    matches: &mut dyn FnMut(&Path, bool) -> bool,
) -> (Vec<PathBuf>, bool) {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > budget {
                return (out, true);
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                continue;
            }
            let is_dir = kind.is_dir();
            if matches(&path, is_dir) {
                out.push(path);
            } else if is_dir && !path.ends_with(".git/objects") {
                stack.push(path);
            }
        }
    }
    (out, false)
}
