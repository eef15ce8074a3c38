//! stdin and stdout for `pod serve` without a blocking thread per read and write.
//!
//! Owns: turning fd 0 / 1 into an [`AsyncRead`] / [`AsyncWrite`] polled by the runtime's own
//! event loop when they are pipes or sockets (the usual case: a client spawned the pod). tokio's
//! `stdin()` / `stdout()` hand every read and write to a blocking thread, which costs two thread
//! wake-ups per message (tens of µs on a small VM) and caps the message rate; here a message costs
//! none. Anything else (a terminal, a file) falls back to tokio's versions.
//!
//! [`UntilSignal`] ends what is read at SIGTERM or SIGINT, so that a signalled pod closes as it
//! does when its client goes away.
//!
//! Invariants: the descriptor is switched to `O_NONBLOCK` only while a [`Pipe`] owns it; its
//! original flags are put back when the `Pipe` is dropped. The descriptor is never closed here.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// A pipe or socket descriptor in non-blocking mode, registered with the runtime's reactor.
pub struct Pipe {
    fd: AsyncFd<RawFd>,
    /// The descriptor's flags before we set `O_NONBLOCK`, restored on drop.
    flags: libc::c_int,
}

impl Pipe {
    /// `None` unless `fd` is a pipe or a socket that could be made non-blocking and registered
    /// for `interest`. Must be called inside a tokio runtime.
    ///
    /// `fd` must stay open (and be the same file) while the `Pipe` lives: nothing in the pod
    /// closes stdin or stdout.
    pub fn new(fd: RawFd, interest: Interest) -> Option<Pipe> {
        // SAFETY: `fstat` writes into a zeroed `stat` we own; `fd` is only inspected.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return None;
        }
        let kind = st.st_mode & libc::S_IFMT;
        if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
            return None;
        }
        // SAFETY: plain flag reads and writes on a descriptor we were handed.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return None;
        }
        // SAFETY: `fd` stays open for the `Pipe`'s life (the caller's promise above).
        match unsafe { AsyncFd::register_with_interest(fd, interest) } {
            Ok(fd) => Some(Pipe { fd, flags }),
            Err(_) => {
                // SAFETY: as above.
                unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
                None
            }
        }
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: restores the flags read in `new` on the same descriptor.
        unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, self.flags) };
    }
}

fn result(n: isize) -> io::Result<usize> {
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

impl AsyncRead for Pipe {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let read = guard.try_io(|fd| {
                // SAFETY: reads at most `unfilled.len()` bytes into memory we borrow mutably.
                result(unsafe {
                    libc::read(fd.as_raw_fd(), unfilled.as_mut_ptr().cast(), unfilled.len())
                })
            });
            match read {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                // Not ready after all: readiness was cleared, wait again.
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for Pipe {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            let written = guard.try_io(|fd| {
                // SAFETY: writes at most `data.len()` bytes from memory we borrow.
                result(unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) })
            });
            match written {
                Ok(Ok(n)) => return Poll::Ready(Ok(n)),
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }

    /// Nothing is buffered here: a write is in the kernel when `poll_write` returns.
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// stdin: a [`Pipe`] when possible, else tokio's blocking-thread reader.
pub fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    match Pipe::new(libc::STDIN_FILENO, Interest::READABLE) {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdin()),
    }
}

/// `input` until the process gets SIGTERM or SIGINT, then end of file: the server winds down as
/// when its client goes away (the running calls are cancelled and their ends run, so what they
/// left is set aside; the session log is flushed), within the same bound, instead of dying
/// mid-call. Must be made inside a tokio runtime; a signal that cannot be watched is logged and
/// keeps its default action.
pub struct UntilSignal {
    inner: Box<dyn AsyncRead + Unpin + Send>,
    signals: Vec<(tokio::signal::unix::Signal, &'static str)>,
    ended: bool,
}

impl UntilSignal {
    pub fn new(inner: Box<dyn AsyncRead + Unpin + Send>) -> UntilSignal {
        use tokio::signal::unix::{signal, SignalKind};
        let mut signals = Vec::new();
        for (kind, name) in [
            (SignalKind::terminate(), "SIGTERM"),
            (SignalKind::interrupt(), "SIGINT"),
        ] {
            match signal(kind) {
                Ok(s) => signals.push((s, name)),
                Err(e) => tracing::warn!("cannot watch for {name}: {e}"),
            }
        }
        UntilSignal {
            inner,
            signals,
            ended: false,
        }
    }
}

impl AsyncRead for UntilSignal {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.ended {
            return Poll::Ready(Ok(()));
        }
        let got = self
            .signals
            .iter_mut()
            .find_map(|(s, name)| s.poll_recv(cx).is_ready().then_some(*name));
        if let Some(name) = got {
            tracing::warn!("{name}: cancelling the running calls, then closing");
            self.ended = true;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

/// stdout: a [`Pipe`] when possible, else tokio's blocking-thread writer.
pub fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    match Pipe::new(libc::STDOUT_FILENO, Interest::WRITABLE) {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdout()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::IntoRawFd;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn pipe() -> (RawFd, RawFd) {
        let mut fds = [0; 2];
        // SAFETY: `pipe` fills the two-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        (fds[0], fds[1])
    }

    #[tokio::test]
    async fn a_pipe_carries_bytes_both_ways_and_gets_its_flags_back() {
        let (r, w) = pipe();
        let before = unsafe { libc::fcntl(r, libc::F_GETFL) };
        {
            let mut reader = Pipe::new(r, Interest::READABLE).expect("a pipe");
            let mut writer = Pipe::new(w, Interest::WRITABLE).expect("a pipe");
            let big = vec![7u8; 300 * 1024]; // more than a pipe holds: the write must wait
            let send = async {
                writer.write_all(&big).await.unwrap();
                writer.flush().await.unwrap();
                drop(writer);
            };
            let mut got = Vec::new();
            let recv = async {
                let mut buf = vec![0; 64 * 1024];
                while got.len() < big.len() {
                    let n = reader.read(&mut buf).await.unwrap();
                    assert!(n > 0);
                    got.extend_from_slice(&buf[..n]);
                }
            };
            tokio::join!(send, recv);
            assert_eq!(got, big);
            let now = unsafe { libc::fcntl(r, libc::F_GETFL) };
            assert_ne!(now & libc::O_NONBLOCK, 0);
        }
        assert_eq!(unsafe { libc::fcntl(r, libc::F_GETFL) }, before);
        unsafe {
            libc::close(r);
            libc::close(w);
        }
    }

    #[tokio::test]
    async fn a_regular_file_is_not_a_pipe() {
        let file = tempfile::tempfile().unwrap();
        let fd = file.into_raw_fd();
        assert!(Pipe::new(fd, Interest::READABLE).is_none());
        unsafe { libc::close(fd) };
    }
}
