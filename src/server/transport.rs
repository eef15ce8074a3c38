//! The byte level of `pod serve`: framing on stdin, the one writer of stdout.
//!
//! Owns: detecting the client's framing from the first non-whitespace byte (`{` / `[`:
//! newline-delimited JSON; `C`: LSP `Content-Length` headers), cutting the input into messages
//! under a size limit without buffering an oversized one, and writing every outgoing message in
//! the client's framing from a single task, so responses and events never interleave.
//!
//! Backpressure: the [`Outbox`] counts the bytes queued for the writer. Events wait for room
//! ([`Outbox::send_paced`]: at most [`OUTBOX_ROOM`] queued), so a client that stops reading
//! stdout holds the turn back (and with it the model stream). Responses never wait
//! ([`Outbox::send`]): the dispatcher keeps serving `cancel`, `permissionReply` and `history`
//! while events are held back. Only a client that sends requests and never reads their answers
//! is held back itself: the dispatcher reads no further request while more than
//! [`RESPONSE_ROOM`] bytes are queued ([`Outbox::room_for_responses`]).
//!
//! Must not touch: JSON-RPC. A message is text here; `dispatch` decides what it means. Nothing
//! else in the crate writes to stdout.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

/// How messages are delimited on the wire, chosen by the client's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON text per line (ACP, MCP, Codex app-server).
    Lines,
    /// `Content-Length: N\r\n\r\n` then N bytes (LSP, `vscode-jsonrpc`).
    Headers,
}

/// One unit read from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete message as UTF-8 text (not yet known to be JSON).
    Message(String),
    /// A message over the size limit; its bytes were skipped.
    TooLarge,
    /// A message whose bytes are not UTF-8.
    InvalidUtf8,
    /// A header block without a usable `Content-Length`.
    BadHeader(String),
}

/// Bytes asked of stdin per read: each read is a wake-up of the runtime's one thread, so
/// pipelined requests are taken in large chunks.
const READ_BUFFER: usize = 64 * 1024;

/// Longest header line accepted in LSP framing.
const MAX_HEADER_LINE: usize = 8 * 1024;

/// Reads frames from the client. The framing is detected on the first call to [`next`].
///
/// [`next`]: FrameReader::next
pub struct FrameReader<R> {
    input: BufReader<R>,
    framing: Arc<OnceLock<Framing>>,
    max: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(input: R, max: usize) -> FrameReader<R> {
        FrameReader {
            input: BufReader::with_capacity(READ_BUFFER, input),
            framing: Arc::new(OnceLock::new()),
            max,
        }
    }

    /// The framing once detected; shared with the writer.
    pub fn framing(&self) -> Arc<OnceLock<Framing>> {
        self.framing.clone()
    }

    /// The next frame, or `None` at end of input.
    pub async fn next(&mut self) -> io::Result<Option<Frame>> {
        let framing = match self.framing.get() {
            Some(f) => *f,
            None => match self.detect().await? {
                Some(f) => *self.framing.get_or_init(|| f),
                None => return Ok(None),
            },
        };
        match framing {
            Framing::Lines => self.next_line().await,
            Framing::Headers => self.next_headed().await,
        }
    }

    /// Skips leading whitespace and looks at the first byte without consuming it.
    async fn detect(&mut self) -> io::Result<Option<Framing>> {
        loop {
            let buf = self.input.fill_buf().await?;
            let Some(&first) = buf.first() else {
                return Ok(None);
            };
            if first.is_ascii_whitespace() {
                self.input.consume(1);
                continue;
            }
            // Anything but a header reads as a line, so garbage gets a parse error.
            return Ok(Some(if first == b'C' || first == b'c' {
                Framing::Headers
            } else {
                Framing::Lines
            }));
        }
    }

    /// Reads up to `\n`, keeping at most `limit` bytes; returns (bytes, whether it overflowed,
    /// whether anything was read at all).
    async fn read_line_limited(&mut self, limit: usize) -> io::Result<(Vec<u8>, bool, bool)> {
        let (mut line, mut overflow, mut any) = (Vec::new(), false, false);
        loop {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                return Ok((line, overflow, any));
            }
            any = true;
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            if !overflow && line.len() + chunk.len() > limit {
                overflow = true;
                line = Vec::new();
            }
            if !overflow {
                line.extend_from_slice(chunk);
            }
            let used = chunk.len() + usize::from(done);
            self.input.consume(used);
            if done {
                return Ok((line, overflow, any));
            }
        }
    }

    async fn next_line(&mut self) -> io::Result<Option<Frame>> {
        loop {
            let (mut line, overflow, any) = self.read_line_limited(self.max).await?;
            if !any {
                return Ok(None);
            }
            if overflow {
                return Ok(Some(Frame::TooLarge));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(text_frame(line)));
        }
    }

    async fn next_headed(&mut self) -> io::Result<Option<Frame>> {
        let mut length: Option<Result<usize, String>> = None;
        let mut seen_header = false;
        loop {
            let (line, overflow, any) = self.read_line_limited(MAX_HEADER_LINE).await?;
            if !any {
                return Ok(None);
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches('\r');
            if text.trim().is_empty() {
                if seen_header {
                    break;
                }
                continue; // Blank lines between messages.
            }
            seen_header = true;
            if overflow {
                length = Some(Err("header line too long".into()));
                continue;
            }
            if let Some((name, value)) = text.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = Some(
                        value
                            .trim()
                            .parse::<usize>()
                            .map_err(|_| format!("bad Content-Length: {:?}", value.trim())),
                    );
                }
            }
        }
        let length = match length {
            Some(Ok(n)) => n,
            Some(Err(e)) => return Ok(Some(Frame::BadHeader(e))),
            None => return Ok(Some(Frame::BadHeader("missing Content-Length".into()))),
        };
        if length > self.max {
            let skipped = tokio::io::copy(
                &mut (&mut self.input).take(length as u64),
                &mut tokio::io::sink(),
            )
            .await?;
            return Ok((skipped == length as u64).then_some(Frame::TooLarge));
        }
        let mut body = vec![0; length];
        match self.input.read_exact(&mut body).await {
            Ok(_) => Ok(Some(text_frame(body))),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn text_frame(bytes: Vec<u8>) -> Frame {
    match String::from_utf8(bytes) {
        Ok(text) => Frame::Message(text),
        Err(_) => Frame::InvalidUtf8,
    }
}

/// Appends one message in `framing` to `buf`.
pub fn encode_message(buf: &mut Vec<u8>, framing: Framing, text: &str) {
    match framing {
        Framing::Lines => {
            // Compact serde_json output never holds a raw newline, so a line is a message.
            buf.extend_from_slice(text.as_bytes());
            buf.push(b'\n');
        }
        Framing::Headers => {
            buf.extend_from_slice(format!("Content-Length: {}\r\n\r\n", text.len()).as_bytes());
            buf.extend_from_slice(text.as_bytes());
        }
    }
}

/// Writes one message in `framing` and flushes.
pub async fn write_message<W: AsyncWrite + Unpin>(
    out: &mut W,
    framing: Framing,
    text: &str,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(text.len() + 32);
    encode_message(&mut buf, framing, text);
    out.write_all(&buf).await?;
    out.flush().await
}

/// The writer gathers what is already queued into one write of at most about this many bytes.
const WRITE_BATCH: usize = 256 * 1024;

/// Bytes of events that may wait for the writer before the turn waits.
pub const OUTBOX_ROOM: usize = 1024 * 1024;
/// Bytes that may wait for the writer before the dispatcher stops reading requests.
pub const RESPONSE_ROOM: usize = 16 * 1024 * 1024;

/// Bytes queued for the writer and not taken yet, shared by both ends.
#[derive(Debug, Default)]
struct Queued {
    bytes: AtomicUsize,
    /// Tasks waiting in [`Queued::below`]; the writer wakes them only when there are some.
    waiting: AtomicUsize,
    /// Woken when the writer takes a message while someone waits.
    taken: Notify,
}

impl Queued {
    /// Waits until fewer than `limit` bytes are queued. Free when there is room (one load).
    async fn below(&self, limit: usize) {
        while self.bytes.load(Ordering::SeqCst) >= limit {
            // Counted, then registered, then checked again: a take either sees the count (and
            // wakes us) or happened before the check (which then sees the room). SeqCst on
            // both sides makes one of the two true.
            let _waiting = Waiting::count(&self.waiting);
            let taken = self.taken.notified();
            tokio::pin!(taken);
            taken.as_mut().enable();
            if self.bytes.load(Ordering::SeqCst) >= limit {
                taken.await;
            }
        }
    }

    fn take(&self, n: usize) {
        self.bytes.fetch_sub(n, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.taken.notify_waiters();
        }
    }
}

/// One task counted in [`Queued::waiting`] for as long as it lives (a dropped wait included).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn count(waiting: &'a AtomicUsize) -> Waiting<'a> {
        waiting.fetch_add(1, Ordering::SeqCst);
        Waiting(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The sending side of the writer: every response and event goes through here.
#[derive(Clone, Debug)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<String>,
    queued: Arc<Queued>,
}

/// The receiving side: what the writer task (or a test) reads.
#[derive(Debug)]
pub struct Queue {
    rx: mpsc::UnboundedReceiver<String>,
    queued: Arc<Queued>,
}

impl Outbox {
    /// An outbox and the receiving end (what the writer task, or a test, reads).
    pub fn channel() -> (Outbox, Queue) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(Queued::default());
        (
            Outbox {
                tx,
                queued: queued.clone(),
            },
            Queue { rx, queued },
        )
    }

    /// Queues one complete JSON text at once (a response). After the writer has finished, it
    /// is dropped.
    pub fn send(&self, text: String) {
        let len = text.len();
        // Counted before it is queued, so the writer never takes more than was counted.
        self.queued.bytes.fetch_add(len, Ordering::SeqCst);
        if self.tx.send(text).is_err() {
            self.queued.take(len);
        }
    }

    /// Queues one complete JSON text (an event) once fewer than [`OUTBOX_ROOM`] bytes wait.
    pub async fn send_paced(&self, text: String) {
        self.queued.below(OUTBOX_ROOM).await;
        self.send(text);
    }

    /// Resolves once fewer than [`RESPONSE_ROOM`] bytes wait: the dispatcher reads the next
    /// request only then.
    pub async fn room_for_responses(&self) {
        self.queued.below(RESPONSE_ROOM).await;
    }

    /// Bytes queued and not yet taken by the writer.
    pub fn queued_bytes(&self) -> usize {
        self.queued.bytes.load(Ordering::SeqCst)
    }
}

impl Queue {
    fn took(&self, text: &str) {
        self.queued.take(text.len());
    }

    /// The next message; `None` once every [`Outbox`] is gone (or closed) and all is taken.
    pub async fn recv(&mut self) -> Option<String> {
        let text = self.rx.recv().await?;
        self.took(&text);
        Some(text)
    }

    /// The next message if one is queued.
    pub fn try_recv(&mut self) -> Option<String> {
        let text = self.rx.try_recv().ok()?;
        self.took(&text);
        Some(text)
    }

    /// Accepts nothing new; what is queued can still be taken.
    pub fn close(&mut self) {
        self.rx.close();
    }
}

/// The writer task and the signal that tells it to drain and stop.
pub struct Writer {
    finish: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Writer {
    /// Starts the one task that owns `out`. Until the framing is known it writes lines.
    pub fn start<W>(mut out: W, framing: Arc<OnceLock<Framing>>, mut queue: Queue) -> Writer
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (finish, mut finished) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let (mut broken, mut finishing) = (false, false);
            let mut buf = Vec::new();
            loop {
                let next = if finishing {
                    queue.recv().await
                } else {
                    tokio::select! {
                        biased;
                        text = queue.recv() => text,
                        _ = &mut finished => {
                            // Write what is already queued, accept nothing new.
                            finishing = true;
                            queue.close();
                            continue;
                        }
                    }
                };
                let Some(text) = next else { break };
                if broken {
                    continue;
                }
                let framing = framing.get().copied().unwrap_or(Framing::Lines);
                // One write and one flush for everything queued so far: on stdout each is a hop
                // to a blocking thread, so a message per write would cap the message rate.
                buf.clear();
                encode_message(&mut buf, framing, &text);
                // Let the tasks that are ready run first: under load they queue more messages.
                tokio::task::yield_now().await;
                while buf.len() < WRITE_BATCH {
                    match queue.try_recv() {
                        Some(text) => encode_message(&mut buf, framing, &text),
                        None => break,
                    }
                }
                let written = match out.write_all(&buf).await {
                    Ok(()) => out.flush().await,
                    Err(e) => Err(e),
                };
                if let Err(e) = written {
                    tracing::warn!("stdout: {e}; dropping further output");
                    broken = true;
                }
                if buf.capacity() > 4 * WRITE_BATCH {
                    buf = Vec::new();
                }
            }
        });
        Writer { finish, task }
    }

    /// Writes what is queued, then stops; gives up after `budget`.
    pub async fn finish(self, budget: Duration) {
        let _ = self.finish.send(());
        if tokio::time::timeout(budget, self.task).await.is_err() {
            tracing::warn!("stdout writer did not finish in {budget:?}");
        }
    }
}

/// The transport of one connection: frames in, an outbox out.
pub struct Transport {
    pub frames: mpsc::Receiver<Frame>,
    pub outbox: Outbox,
    pub writer: Writer,
}

/// Starts the reader and writer tasks on `input` / `output`. The frame channel closes at end of
/// input (or on a read error, which is logged and treated as end of input).
pub fn start<R, W>(input: R, output: W, max_message_bytes: usize) -> Transport
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut reader = FrameReader::new(input, max_message_bytes);
    let (outbox, queue) = Outbox::channel();
    let writer = Writer::start(output, reader.framing(), queue);
    let (frames_tx, frames) = mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            match reader.next().await {
                Ok(Some(frame)) => {
                    if frames_tx.send(frame).await.is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("stdin: {e}; treating as end of input");
                    break;
                }
            }
        }
    });
    Transport {
        frames,
        outbox,
        writer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> (Vec<Frame>, Option<Framing>) {
        let mut reader = FrameReader::new(input, max);
        let mut out = Vec::new();
        while let Some(f) = reader.next().await.unwrap() {
            out.push(f);
        }
        (out, reader.framing().get().copied())
    }

    fn msg(s: &str) -> Frame {
        Frame::Message(s.to_string())
    }

    #[tokio::test]
    async fn lines_are_detected_and_blank_lines_skipped() {
        let (f, framing) = frames(b"  \n{\"a\":1}\r\n\n[1]\n{\"tail\":0}", 100).await;
        assert_eq!(framing, Some(Framing::Lines));
        assert_eq!(f, vec![msg("{\"a\":1}"), msg("[1]"), msg("{\"tail\":0}")]);
    }

    #[tokio::test]
    async fn an_oversized_line_is_skipped_and_the_next_one_read() {
        let mut input = b"{\"x\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'a', 100));
        input.extend(b"\"}\n{\"ok\":1}\n");
        let (f, _) = frames(&input, 32).await;
        assert_eq!(f, vec![Frame::TooLarge, msg("{\"ok\":1}")]);
    }

    #[tokio::test]
    async fn invalid_utf8_is_reported_per_message() {
        let (f, _) = frames(b"{\"a\":\"\xff\"}\n{}\n", 100).await;
        assert_eq!(f, vec![Frame::InvalidUtf8, msg("{}")]);
    }

    #[tokio::test]
    async fn headers_are_detected_and_bodies_read_exactly() {
        let input =
            b"Content-Length: 7\r\nContent-Type: x\r\n\r\n{\"a\":1}content-length:2\r\n\r\n[]";
        let (f, framing) = frames(input, 100).await;
        assert_eq!(framing, Some(Framing::Headers));
        assert_eq!(f, vec![msg("{\"a\":1}"), msg("[]")]);
    }

    #[tokio::test]
    async fn an_oversized_body_is_skipped_and_a_bad_header_reported() {
        let input = b"Content-Length: 50\r\n\r\n01234567890123456789012345678901234567890123456789Content-Type: x\r\n\r\nContent-Length: 2\r\n\r\n{}";
        let (f, _) = frames(input, 10).await;
        assert_eq!(
            f,
            vec![
                Frame::TooLarge,
                Frame::BadHeader("missing Content-Length".into()),
                msg("{}")
            ]
        );
    }

    #[tokio::test]
    async fn the_writer_uses_the_detected_framing_in_order() {
        let (client, server) = tokio::io::duplex(1024);
        let (server_read, server_write) = tokio::io::split(server);
        let transport = start(server_read, server_write, 1024);
        let (mut client_read, mut client_write) = tokio::io::split(client);
        client_write
            .write_all(b"Content-Length: 2\r\n\r\n{}")
            .await
            .unwrap();
        let mut frames = transport.frames;
        assert_eq!(frames.recv().await, Some(msg("{}")));
        transport.outbox.send("{\"n\":1}".into());
        transport.outbox.send("{\"n\":2}".into());
        transport.writer.finish(Duration::from_secs(1)).await;
        let mut buf = vec![0; 64];
        let n = client_read.read(&mut buf).await.unwrap();
        let mut text = String::from_utf8_lossy(&buf[..n]).to_string();
        if !text.ends_with("{\"n\":2}") {
            let n2 = client_read.read(&mut buf).await.unwrap();
            text.push_str(&String::from_utf8_lossy(&buf[..n2]));
        }
        assert_eq!(
            text,
            "Content-Length: 7\r\n\r\n{\"n\":1}Content-Length: 7\r\n\r\n{\"n\":2}"
        );
    }

    #[tokio::test]
    async fn events_wait_for_room_and_responses_never_do() {
        let (outbox, mut queue) = Outbox::channel();
        let big = "x".repeat(OUTBOX_ROOM);
        outbox.send_paced(big.clone()).await;
        // Over the room: the next event waits, a response does not.
        let waiting =
            tokio::time::timeout(Duration::from_millis(50), outbox.send_paced("{}".into())).await;
        assert!(waiting.is_err(), "an event went past a full outbox");
        outbox.send("{\"id\":1}".into());
        assert_eq!(outbox.queued_bytes(), OUTBOX_ROOM + 8);
        // The writer takes the big one: the waiting event goes in.
        let paced = outbox.send_paced("{\"event\":2}".into());
        let (taken, ()) = tokio::join!(
            async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                queue.recv().await
            },
            paced
        );
        assert_eq!(taken.map(|t| t.len()), Some(OUTBOX_ROOM));
        assert_eq!(queue.recv().await.as_deref(), Some("{\"id\":1}"));
        assert_eq!(queue.recv().await.as_deref(), Some("{\"event\":2}"));
        assert_eq!(outbox.queued_bytes(), 0);
    }
}
