//! The seccomp filter every sandboxed process runs under: a backstop for what the namespaces and
//! Landlock do not mediate, built once per session with `seccompiler` (the rust-vmm / Firecracker
//! filter compiler) into classic BPF.
//!
//! Owns: the list of refused system calls and its two programs: `Filters::refuse` (those calls
//! fail with `EPERM`) and `Filters::absent` (`clone3` fails with `ENOSYS`, so the C library
//! falls back to `clone`, whose flags a classic filter can read). Refused, in every mode:
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`: typing into a terminal (the user's own shell);
//! - `io_uring_*` (its operations bypass the filter), `bpf`, `perf_event_open`, `userfaultfd`,
//!   `keyctl`, `add_key`, `request_key`;
//! - a new user namespace (`unshare` or `clone` with `CLONE_NEWUSER`), so a call cannot gain a
//!   fresh set of capabilities inside;
//! - with `network = "deny"` or `"proxy"` in namespaces, every socket family but IPv4, IPv6 and
//!   netlink (a pathname Unix socket of a helper outside the sandbox would carry data out, and
//!   vsock or Bluetooth are not held by a network namespace), and socket pairs other than stream
//!   ones (a datagram pair can `sendto` a path).
//!
//! On x86_64 the x32 ABI's numbers of the same calls are refused too, where a kernel has it.
//!
//! Must not touch: mounts, namespaces, spawning. It gives programs as bytes (for bubblewrap's
//! `--add-seccomp-fd`) and installs them in a forked child ([`Filters::install`]).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// `TIOCSTI` and `TIOCLINUX` (asm-generic ioctls.h, as on x86 and arm64); the libc crate does
/// not name both, nor with one type, on every target.
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// A filter could not be built for this machine.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the seccomp filter for {arch}: {why}")]
pub struct SeccompError {
    arch: &'static str,
    why: String,
}

/// The two compiled programs of a session.
#[derive(Debug, Clone)]
pub struct Filters {
    refuse: BpfProgram,
    absent: BpfProgram,
}

fn cond(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, len, op, value).map_err(|e| e.to_string())
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

impl Filters {
    /// The filters for this machine's architecture; `deny_unix` (network `deny` or `proxy` in
    /// namespaces) allows only the socket families and pairs the network namespace holds.
    pub fn build(deny_unix: bool) -> Result<Filters, SeccompError> {
        let arch = std::env::consts::ARCH;
        let fail = |why: String| SeccompError { arch, why };
        let target = arch
            .try_into()
            .map_err(|e: seccompiler::BackendError| fail(e.to_string()))?;
        let newuser = libc::CLONE_NEWUSER as u64;
        let masked = || -> Result<SeccompRule, String> {
            rule(vec![cond(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(newuser),
                newuser,
            )?])
        };
        let build = || -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
            let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            rules.insert(
                libc::SYS_ioctl,
                vec![
                    rule(vec![cond(
                        1,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Eq,
                        TIOCSTI,
                    )?])?,
                    rule(vec![cond(
                        1,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Eq,
                        TIOCLINUX,
                    )?])?,
                ],
            );
            for call in [
                libc::SYS_io_uring_setup,
                libc::SYS_io_uring_enter,
                libc::SYS_io_uring_register,
                libc::SYS_bpf,
                libc::SYS_perf_event_open,
                libc::SYS_userfaultfd,
                libc::SYS_keyctl,
                libc::SYS_add_key,
                libc::SYS_request_key,
            ] {
                // No rule: the call matches whatever its arguments.
                rules.insert(call, Vec::new());
            }
            rules.insert(libc::SYS_unshare, vec![masked()?]);
            rules.insert(libc::SYS_clone, vec![masked()?]);
            if deny_unix {
                // An allow-list of families: IP (loopback, and pod's proxy) and netlink (which
                // the C library reads interfaces through) live in the call's network namespace;
                // Unix sockets reach helpers outside by path, and families no network namespace
                // holds (vsock, Bluetooth, …) reach past it.
                let family =
                    |af: i32| cond(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, af as u64);
                rules.insert(
                    libc::SYS_socket,
                    vec![rule(vec![
                        family(libc::AF_INET)?,
                        family(libc::AF_INET6)?,
                        family(libc::AF_NETLINK)?,
                    ])?],
                );
                // A socket pair is the one Unix socket left, for pipes between processes; a
                // datagram or seqpacket pair could still `sendto` a path outside, so only
                // stream pairs (connected already: no address can be given to them).
                let kind = |t: i32| {
                    rule(vec![cond(
                        1,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::MaskedEq(0xf),
                        t as u64,
                    )?])
                };
                rules.insert(
                    libc::SYS_socketpair,
                    vec![
                        kind(libc::SOCK_DGRAM)?,
                        kind(libc::SOCK_RAW)?,
                        kind(libc::SOCK_RDM)?,
                        kind(libc::SOCK_SEQPACKET)?,
                    ],
                );
            }
            // The x32 ABI's numbers (bit 30 set) of the same calls, where the kernel has one:
            // the x86_64 number, but `ioctl`, whose x32 entry is 514.
            if cfg!(target_arch = "x86_64") {
                const X32: i64 = 0x4000_0000;
                let x32: Vec<(i64, Vec<SeccompRule>)> = rules
                    .iter()
                    .map(|(nr, r)| {
                        let n = if *nr == libc::SYS_ioctl { 514 } else { *nr };
                        (X32 | n, r.clone())
                    })
                    .collect();
                rules.extend(x32);
            }
            Ok(rules)
        };
        let rules = build().map_err(fail)?;
        let refuse = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            target,
        )
        .and_then(BpfProgram::try_from)
        .map_err(|e| fail(e.to_string()))?;
        let mut absent_calls = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
        if cfg!(target_arch = "x86_64") {
            absent_calls.insert(0x4000_0000 | libc::SYS_clone3, Vec::new());
        }
        let absent = SeccompFilter::new(
            absent_calls,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            target,
        )
        .and_then(BpfProgram::try_from)
        .map_err(|e| fail(e.to_string()))?;
        Ok(Filters { refuse, absent })
    }

    /// Both programs as raw `struct sock_filter` arrays, the format bubblewrap reads.
    pub fn bytes(&self) -> [Vec<u8>; 2] {
        [to_bytes(&self.refuse), to_bytes(&self.absent)]
    }

    /// In a forked child before `exec`, after `no_new_privs`: installs both programs. Only
    /// `prctl` with memory prepared beforehand; no allocation.
    pub fn install(&self) -> std::io::Result<()> {
        for program in [&self.refuse, &self.absent] {
            let prog = libc::sock_fprog {
                len: program.len() as libc::c_ushort,
                // seccompiler's sock_filter has the kernel's layout (repr(C), same fields).
                filter: program.as_ptr() as *mut libc::sock_filter,
            };
            // SAFETY: `prog` points into `program`, alive for the call; the kernel copies it.
            let rc = unsafe {
                libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                )
            };
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

fn to_bytes(program: &BpfProgram) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for insn in program {
        out.extend_from_slice(&insn.code.to_ne_bytes());
        out.push(insn.jt);
        out.push(insn.jf);
        out.extend_from_slice(&insn.k.to_ne_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_compile_to_whole_instructions() {
        for deny_unix in [false, true] {
            let f = Filters::build(deny_unix).unwrap();
            let [refuse, absent] = f.bytes();
            assert!(!refuse.is_empty() && refuse.len() % 8 == 0);
            assert!(!absent.is_empty() && absent.len() % 8 == 0);
        }
        let plain = Filters::build(false).unwrap().bytes()[0].len();
        assert!(Filters::build(true).unwrap().bytes()[0].len() > plain);
    }
}
