//! The exec gate's child side: the two seccomp programs every gated process runs under (built
//! once), what the call's first process installs before anything of the call runs
//! ([`ChildEnd::install`]), and the socket pair its notification listener comes back on.
//!
//! Must not touch: deciding, attaching, waiting (the supervisor's); anything but
//! async-signal-safe system calls in the child's part (it runs between `fork` and `exec`).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// The gate's two seccomp programs, built once.
#[derive(Debug)]
pub(super) struct Programs {
    /// `ptrace` and `process_vm_writev` fail with `EPERM` (with their x32 numbers).
    pub(super) refuse: seccompiler::BpfProgram,
    /// `execve` and `execveat` (with their x32 numbers) notify the listener; a system call of
    /// another architecture kills the process (no `int 0x80` around it).
    pub(super) notify: Vec<libc::sock_filter>,
}

/// `AUDIT_ARCH_*` of `<linux/audit.h>` for the architectures pod builds the notify program for.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
/// The x32 ABI's bit in a system call number (x86_64 only).
const X32: i64 = 0x4000_0000;

/// The execs' system call numbers: native, and x32's on x86_64.
fn exec_numbers() -> Vec<u32> {
    let mut nrs = vec![libc::SYS_execve, libc::SYS_execveat];
    if cfg!(target_arch = "x86_64") {
        // x32's own numbers for execve and execveat.
        nrs.extend([X32 | 520, X32 | 545]);
    }
    nrs.into_iter()
        .filter_map(|n| u32::try_from(n).ok())
        .collect()
}

/// The notify program: classic BPF over `struct seccomp_data` (`nr` at 0, `arch` at 4).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn notify_program() -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    let stmt = |code, k| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |k, jt, jf| libc::sock_filter {
        code: JEQ_K,
        jt,
        jf,
        k,
    };
    let nrs = exec_numbers();
    let n = nrs.len() as u8;
    let mut p = vec![
        stmt(LD_W_ABS, 4),
        // Another architecture: kill (the last instruction, n + 3 ahead).
        jump(AUDIT_ARCH, 0, n + 3),
        stmt(LD_W_ABS, 0),
    ];
    for (i, nr) in nrs.iter().enumerate() {
        // Match: to the notify return, (n - i) ahead.
        p.push(jump(*nr, n - i as u8, 0));
    }
    p.push(stmt(RET_K, libc::SECCOMP_RET_ALLOW));
    p.push(stmt(RET_K, libc::SECCOMP_RET_USER_NOTIF));
    p.push(stmt(RET_K, libc::SECCOMP_RET_KILL_PROCESS));
    p
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn notify_program() -> Vec<libc::sock_filter> {
    Vec::new()
}

pub(super) fn programs() -> Result<&'static Programs, &'static String> {
    use seccompiler::{SeccompAction, SeccompFilter, SeccompRule};
    use std::collections::BTreeMap;
    static PROGRAMS: OnceLock<Result<Programs, String>> = OnceLock::new();
    PROGRAMS
        .get_or_init(|| {
            let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH)
                .map_err(|e| format!("seccomp: {e}"))?;
            let notify = notify_program();
            if notify.is_empty() {
                return Err(format!(
                    "seccomp: no exec notify program for {}",
                    std::env::consts::ARCH
                ));
            }
            let mut eperm: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            eperm.insert(libc::SYS_ptrace, Vec::new());
            eperm.insert(libc::SYS_process_vm_writev, Vec::new());
            if cfg!(target_arch = "x86_64") {
                // x32's own numbers for ptrace and process_vm_writev.
                eperm.insert(X32 | 521, Vec::new());
                eperm.insert(X32 | 540, Vec::new());
            }
            let filter = SeccompFilter::new(
                eperm,
                SeccompAction::Allow,
                SeccompAction::Errno(libc::EPERM as u32),
                arch,
            )
            .map_err(|e| format!("seccomp: {e}"))?;
            let refuse = filter.try_into().map_err(|e| format!("seccomp: {e}"))?;
            Ok(Programs { refuse, notify })
        })
        .as_ref()
}

/// The child's end of a [`super::Gate`], installed in the call's first process before anything of
/// the call runs ([`crate::sandbox::Sandbox::prepare_std`] decides where: last before `exec`, or, in
/// the session's namespaces, before the first process forks into them).
#[derive(Debug, Clone, Copy)]
pub struct ChildEnd {
    pub(super) socket: RawFd,
    pub(super) programs: &'static Programs,
}

impl ChildEnd {
    /// In the forked child: `no_new_privs` (needed to install a filter without privileges),
    /// the refusing program, then the notify program, whose listener goes to the pod over the
    /// gate's socket and is closed here with the socket, so no process of the call holds it.
    /// Only async-signal-safe system calls, no allocation.
    pub fn install(&self) -> io::Result<()> {
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let refuse = &self.programs.refuse;
        let notify = &self.programs.notify;
        seccomp_set(refuse.as_ptr().cast(), refuse.len(), 0)?;
        let listener = seccomp_set(
            notify.as_ptr(),
            notify.len(),
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
        )?;
        let sent = send_fd(self.socket, listener);
        // SAFETY: closing descriptors this child owns.
        unsafe {
            libc::close(listener);
            libc::close(self.socket);
        }
        sent
    }
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, flags, prog)`; returns what the call returns (the
/// listener with `SECCOMP_FILTER_FLAG_NEW_LISTENER`).
fn seccomp_set(
    filter: *const libc::sock_filter,
    len: usize,
    flags: libc::c_ulong,
) -> io::Result<RawFd> {
    let Ok(len) = u16::try_from(len) else {
        return Err(io::Error::from_raw_os_error(libc::E2BIG));
    };
    let prog = libc::sock_fprog {
        len,
        filter: filter.cast_mut(),
    };
    // SAFETY: the kernel copies the program from a valid pointer and length.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as RawFd)
}

/// Sends `fd` over the stream socket `socket` (`SCM_RIGHTS`). Async-signal-safe.
fn send_fd(socket: RawFd, fd: RawFd) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // u64s: aligned for a cmsghdr; room for one descriptor.
    let mut space = [0u64; 4];
    // SAFETY: a msghdr pointing at buffers on this stack; CMSG_* compute within `space`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        if libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Receives one descriptor sent by [`send_fd`] (waiting for it when `wait`), close-on-exec.
pub(super) fn recv_fd(socket: RawFd, wait: bool) -> io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut space = [0u64; 4];
    // SAFETY: as in `send_fd`; the descriptor read is a new one the kernel made for us.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&space);
        let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
        let n = loop {
            let n = libc::recvmsg(socket, &mut msg, flags | libc::MSG_CMSG_CLOEXEC);
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break n;
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if n != 1 || cmsg.is_null() || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Err(io::Error::other("no listener was sent"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_compile_and_notify_exactly_the_execs() {
        let p = programs().expect("the programs compile on this architecture");
        assert!(!p.refuse.is_empty());
        // Run the notify program over a seccomp_data by hand: exec numbers notify, others pass,
        // another architecture is killed.
        let run = |arch: u32, nr: u32| -> u32 {
            let mut pc = 0usize;
            let mut acc = 0u32;
            loop {
                let ins = p.notify[pc];
                match ins.code {
                    0x20 => acc = if ins.k == 4 { arch } else { nr },
                    0x15 => {
                        pc += usize::from(if acc == ins.k { ins.jt } else { ins.jf });
                    }
                    0x06 => return ins.k,
                    other => panic!("unexpected instruction {other:#x}"),
                }
                pc += 1;
            }
        };
        for nr in exec_numbers() {
            assert_eq!(run(AUDIT_ARCH, nr), libc::SECCOMP_RET_USER_NOTIF, "{nr}");
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_clone,
            libc::SYS_fork,
            libc::SYS_openat,
        ] {
            let nr = u32::try_from(nr).expect("a small number");
            assert_eq!(run(AUDIT_ARCH, nr), libc::SECCOMP_RET_ALLOW, "{nr}");
        }
        // i386's execve (11) through `int 0x80`.
        assert_eq!(run(0x4000_0003, 11), libc::SECCOMP_RET_KILL_PROCESS);
    }
}
