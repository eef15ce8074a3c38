//! The Landlock ruleset of a session, built once with the `landlock` crate, and the two system
//! calls that put a freshly forked child into it.
//!
//! Owns: which access rights are handled and granted where. Everything is readable and
//! executable; the writable folders get the rights to create, change, rename and remove files
//! (never to make device nodes); the device files a shell needs get write and ioctl. With
//! `network = "deny"` TCP connect and bind are handled with no port allowed, and connecting to
//! abstract Unix sockets outside the domain is refused; with `network = "proxy"` the same, but
//! TCP connect to the port of pod's proxy is allowed (Landlock rules name ports, not addresses:
//! see docs/hardening.md for what this interim boundary does not hold). Signals to processes outside the domain
//! are refused whenever the kernel can (ABI 6+), so a call cannot kill the pod or another call.
//!
//! Must not touch: spawning, process lifetimes, the manifest. It gets paths and answers with a
//! ruleset file descriptor.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    make_bitflags, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort,
    PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

/// The newest ABI whose rights pod asks for (tested on a kernel with ABI 7). Newer kernels get
/// exactly these rights, older ones the subset they know (the crate's best-effort mode); what
/// that subset holds is reported by [`super::plan`].
const TARGET: ABI = ABI::V6;

/// Device files a shell and common tools open for writing. Missing ones are skipped.
/// `/dev/shm` is left out on purpose: it is shared, world-writable and outlives the session.
pub const DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// Rights inside a writable folder: everything but making device nodes (a root process could
/// otherwise make a node for a disk and write the disk through it) and device ioctls.
fn folder_rights() -> BitFlags<AccessFs> {
    AccessFs::from_all(TARGET) & !make_bitflags!(AccessFs::{MakeChar | MakeBlock | IoctlDev})
}

/// Rights on a device file (or under `/dev/pts`).
fn device_rights() -> BitFlags<AccessFs> {
    make_bitflags!(AccessFs::{ReadFile | WriteFile | Truncate | IoctlDev})
}

/// What a domain allows.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Folders (existing) where processes may write.
    pub writable: Vec<PathBuf>,
    /// Refuse TCP connect and bind, and abstract Unix sockets outside the domain.
    pub deny_network: bool,
    /// With `deny_network`: the one TCP port processes may connect to (pod's proxy).
    pub proxy_port: Option<u16>,
}

/// A ruleset could not be built.
#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    #[error("cannot open {} for a sandbox rule: {source}", path.display())]
    Path {
        path: PathBuf,
        source: landlock::PathFdError,
    },
    #[error("the kernel refused the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
}

/// Builds the ruleset; `None` when the kernel has no Landlock (the crate then makes no call).
pub fn build(rules: &Rules) -> Result<Option<OwnedFd>, DomainError> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET))?
        .scope(Scope::Signal)?;
    if rules.deny_network {
        ruleset = ruleset
            .handle_access(make_bitflags!(AccessNet::{BindTcp | ConnectTcp}))?
            .scope(Scope::AbstractUnixSocket)?;
    }
    let open = |path: &Path| {
        PathFd::new(path).map_err(|source| DomainError::Path {
            path: path.to_path_buf(),
            source,
        })
    };
    let mut created = ruleset.create()?.add_rule(PathBeneath::new(
        open(Path::new("/"))?,
        AccessFs::from_read(TARGET),
    ))?;
    for folder in &rules.writable {
        created = created.add_rule(PathBeneath::new(open(folder)?, folder_rights()))?;
    }
    if let (true, Some(port)) = (rules.deny_network, rules.proxy_port) {
        created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
    }
    for device in DEVICES {
        let path = Path::new(device);
        // A device that this machine lacks needs no rule.
        if let Ok(fd) = PathFd::new(path) {
            let rights = if path.is_dir() {
                device_rights() | AccessFs::ReadDir
            } else {
                device_rights()
            };
            created = created.add_rule(PathBeneath::new(fd, rights))?;
        }
    }
    Ok(created.into())
}

/// The scope-only domain every call enters under namespaces, before `bwrap` starts (Landlock
/// ABI 6+; `None` below): no connecting to an abstract Unix socket made outside the call, no
/// signal to a process outside it. It handles no file or network access, so bubblewrap's mounts
/// still work inside it (the kernel refuses mounts only to a domain that handles file access).
pub fn scoped() -> Result<Option<OwnedFd>, DomainError> {
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .scope(Scope::AbstractUnixSocket | Scope::Signal)?
        .create()?;
    Ok(created.into())
}

/// In a forked child before `exec`: sets `no_new_privs` (required by Landlock, and it keeps
/// set-user-id programs from regaining rights) and enters the domain of `ruleset`.
///
/// Only async-signal-safe system calls, no allocation: this runs between `fork` and `exec`.
pub fn enter(ruleset: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments touches no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: landlock_restrict_self(2) takes a file descriptor and flags; the descriptor is
    // owned by `ruleset` and open for the duration of the call.
    let done =
        unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's Landlock ABI version, 0 when it has none.
pub fn kernel_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with a null attribute pointer and size 0 this call only returns the ABI version.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).unwrap_or(0)
}
