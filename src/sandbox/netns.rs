//! The session's network namespace: made once when the session's sandbox opens, entered by
//! every call's process before `bwrap` starts.
//!
//! Owns: making a user and network namespace pair that lives as long as two descriptors
//! ([`SessionNet::create`]: a forked child unshares both, maps the pod's own uid and gid, brings
//! loopback up, binds pod's proxy listener inside when asked, and hands the descriptors back
//! over a socket pair, then exits), whether that works here ([`available`]), and entering the
//! pair in a forked child before `exec` ([`SessionNet::enter`]).
//!
//! Why: a network namespace holding nothing but loopback is the same wall whether made once or
//! per call, and making one per call is the dearest step of a call's start; and under
//! `network = "proxy"` it is how the proxy gets into the calls' namespace: the listener was
//! bound inside it, pod accepts on it from outside, and nothing else in the namespace leads
//! anywhere (no route, no DNS server, no Unix socket: the seccomp filter refuses `AF_UNIX`).
//! The calls of one session share the namespace, so one call's process could reach a socket
//! another call of the same session listens on; both are the same model's, and neither
//! outlives its call.
//!
//! Must not touch: mounts (bubblewrap makes the call's own user, mount and PID namespaces
//! inside this pair), decisions, the proxy's serving (the listener is handed over, not used).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// The session's namespaces could not be made.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot make the session's network namespace: {step}: {}", std::io::Error::from_raw_os_error(*.errno))]
pub struct NetnsError {
    step: &'static str,
    errno: i32,
}

/// The steps of the child, in order; a failure names its step.
const STEPS: [&str; 9] = [
    "unshare(CLONE_NEWUSER | CLONE_NEWNET)",
    "writing /proc/self/setgroups",
    "writing /proc/self/uid_map",
    "writing /proc/self/gid_map",
    "bringing loopback up",
    "binding the proxy's listener on loopback",
    "opening /proc/self/ns",
    "handing the descriptors over",
    "fork",
];

/// A user namespace and the network namespace it owns, held open by descriptors; the proxy's
/// listener inside, when one was asked for.
#[derive(Debug)]
pub struct SessionNet {
    user: OwnedFd,
    net: OwnedFd,
    listener: std::sync::Mutex<Option<std::net::TcpListener>>,
}

/// Whether a [`SessionNet`] can be made here, probed once per process (`Err` says why not).
pub fn available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            SessionNet::create(None)
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .clone()
}

impl SessionNet {
    /// Makes the pair; with `listen`, a TCP listener on `127.0.0.1:listen` inside it.
    pub fn create(listen: Option<u16>) -> Result<SessionNet, NetnsError> {
        let fail = |index: usize, errno: i32| NetnsError {
            step: STEPS[index],
            errno,
        };
        // Everything the child needs, prepared before the fork: it allocates nothing.
        // SAFETY: getters with no arguments.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let uid_map = format!("{uid} {uid} 1\n");
        let gid_map = format!("{gid} {gid} 1\n");
        let files = [
            (c"/proc/self/setgroups", b"deny".as_slice()),
            (c"/proc/self/uid_map", uid_map.as_bytes()),
            (c"/proc/self/gid_map", gid_map.as_bytes()),
        ];
        let ns_paths = [c"/proc/self/ns/user", c"/proc/self/ns/net"];
        let mut pair = [-1 as RawFd; 2];
        // SAFETY: `pair` has room for the two descriptors.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                pair.as_mut_ptr(),
            )
        } != 0
        {
            return Err(fail(7, last_errno()));
        }
        // SAFETY: fresh descriptors nothing else owns.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        // SAFETY: the child makes only async-signal-safe system calls on memory prepared above,
        // and ends in `_exit`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(fail(8, last_errno()));
        }
        if pid == 0 {
            let code = child(theirs.as_raw_fd(), &files, &ns_paths, listen);
            // SAFETY: leaving the forked child without running the pod's destructors.
            unsafe { libc::_exit(code) }
        }
        drop(theirs);
        let received = receive(&ours);
        let mut status = 0;
        // SAFETY: our own child, reaped once.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let (fds, report) = received.map_err(|errno| fail(7, errno))?;
        if let Some((step, errno)) = report {
            return Err(fail(step.min(STEPS.len() - 1), errno));
        }
        let want = if listen.is_some() { 3 } else { 2 };
        if fds.len() != want {
            return Err(fail(7, libc::EPROTO));
        }
        let mut fds = fds.into_iter();
        let (Some(user), Some(net)) = (fds.next(), fds.next()) else {
            return Err(fail(7, libc::EPROTO));
        };
        let listener = fds.next().map(std::net::TcpListener::from);
        Ok(SessionNet {
            user,
            net,
            listener: std::sync::Mutex::new(listener),
        })
    }

    /// The listener made inside, once (the proxy serves it).
    pub fn take_listener(&self) -> Option<std::net::TcpListener> {
        self.listener
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The user and network namespaces' descriptors (kept open in a child that closes the
    /// rest before it enters them).
    pub fn fds(&self) -> (std::os::fd::RawFd, std::os::fd::RawFd) {
        (self.user.as_raw_fd(), self.net.as_raw_fd())
    }

    /// In a forked child, before `exec`: into the pair (the user namespace first, which gives
    /// the rights to enter the network namespace it owns). Only `setns`; no allocation.
    pub fn enter(&self) -> std::io::Result<()> {
        for (fd, kind) in [
            (self.user.as_raw_fd(), libc::CLONE_NEWUSER),
            (self.net.as_raw_fd(), libc::CLONE_NEWNET),
        ] {
            // SAFETY: a descriptor we hold open; setns touches no memory of ours.
            if unsafe { libc::setns(fd, kind) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The forked child: makes the namespaces and sends back `[user, net, listener?]`, or a
/// `(step, errno)` report. Returns the exit code.
fn child(
    sock: RawFd,
    files: &[(&std::ffi::CStr, &[u8]); 3],
    ns_paths: &[&std::ffi::CStr; 2],
    listen: Option<u16>,
) -> i32 {
    let report = |step: u32, errno: i32| {
        let mut msg = [0u8; 8];
        msg[..4].copy_from_slice(&step.to_ne_bytes());
        msg[4..].copy_from_slice(&errno.to_ne_bytes());
        // SAFETY: a buffer on our stack.
        unsafe { libc::send(sock, msg.as_ptr().cast(), msg.len(), 0) };
        1
    };
    // SAFETY: (all below) system calls on memory prepared before the fork or on our stack.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
        return report(0, last_errno());
    }
    for (i, (path, bytes)) in files.iter().enumerate() {
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        let wrote = fd >= 0
            && unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) }
                == bytes.len() as isize;
        let errno = last_errno();
        if fd >= 0 {
            unsafe { libc::close(fd) };
        }
        if !wrote {
            return report(1 + i as u32, errno);
        }
    }
    if let Err(errno) = loopback_up() {
        return report(4, errno);
    }
    let mut fds = [-1 as RawFd; 3];
    let mut count = 0;
    for path in ns_paths {
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return report(6, last_errno());
        }
        fds[count] = fd;
        count += 1;
    }
    if let Some(port) = listen {
        match listener(port) {
            Ok(fd) => {
                fds[count] = fd;
                count += 1;
            }
            Err(errno) => return report(5, errno),
        }
    }
    if send_fds(sock, &fds[..count]) != 0 {
        return 1;
    }
    0
}

/// `ip link set lo up`, with the ioctl it amounts to.
fn loopback_up() -> Result<(), i32> {
    // SAFETY: (all below) a zeroed ifreq on our stack and a socket we close.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(last_errno());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let mut result = Ok(());
        if libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req) != 0 {
            result = Err(last_errno());
        } else {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(s, libc::SIOCSIFFLAGS, &req) != 0 {
                result = Err(last_errno());
            }
        }
        libc::close(s);
        result
    }
}

/// A listening TCP socket on `127.0.0.1:port`.
fn listener(port: u16) -> Result<RawFd, i32> {
    // SAFETY: (all below) a sockaddr on our stack and a socket we own.
    unsafe {
        let s = libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        );
        if s < 0 {
            return Err(last_errno());
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(s, (&addr as *const libc::sockaddr_in).cast(), len) != 0
            || libc::listen(s, 128) != 0
        {
            let errno = last_errno();
            libc::close(s);
            return Err(errno);
        }
        Ok(s)
    }
}

/// Sends `fds` over `sock` with one byte of data.
fn send_fds(sock: RawFd, fds: &[RawFd]) -> isize {
    const MAX: usize = 3;
    // Room for a control message of three descriptors, aligned for `cmsghdr`.
    let mut control = [0u64; 8];
    let mut byte = [0u8; 1];
    // SAFETY: (all below) the message, its data and control buffers live on our stack, and the
    // control buffer is larger than CMSG_SPACE of three descriptors.
    unsafe {
        if fds.len() > MAX {
            return -1;
        }
        let space = libc::CMSG_SPACE(std::mem::size_of_val(fds) as u32);
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return -1;
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(fds) as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast(), fds.len());
        libc::sendmsg(sock, &msg, 0)
    }
}

/// What came back: the descriptors, or the child's `(step, errno)` report. `Err`: the message
/// itself could not be read.
type Received = (Vec<OwnedFd>, Option<(usize, i32)>);

fn receive(sock: &OwnedFd) -> Result<Received, i32> {
    let mut control = [0u64; 8];
    let mut data = [0u8; 8];
    // SAFETY: (all below) buffers on our stack; descriptors received are owned from here on.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let n = loop {
            let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n >= 0 || last_errno() != libc::EINTR {
                break n;
            }
        };
        if n < 0 {
            return Err(last_errno());
        }
        let mut fds = Vec::new();
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let count = bytes / std::mem::size_of::<RawFd>();
                let first: *const RawFd = libc::CMSG_DATA(cmsg).cast();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(first.add(i))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        if n == 8 && fds.is_empty() {
            let step = u32::from_ne_bytes([data[0], data[1], data[2], data[3]]) as usize;
            let errno = i32::from_ne_bytes([data[4], data[5], data[6], data[7]]);
            return Ok((fds, Some((step, errno))));
        }
        if n == 0 && fds.is_empty() {
            // The child died before it could say anything.
            return Err(libc::ECHILD);
        }
        Ok((fds, None))
    }
}
