//! The server-sent events parser of the network providers (the WHATWG event-stream format).
//!
//! Owns: cutting a byte stream into events: `data:` fields, multi-line data, `:` comments,
//! `event:` / `id:` / `retry:` ignored (both providers name an event's type inside its data),
//! lines ended by LF, CRLF or CR. Must not touch: what an
//! event means (each provider module), HTTP (`http`).
//!
//! Bounded by construction: every byte is scanned once (the parser remembers how far its buffer
//! was searched for a line end, so a long line arriving a byte at a time costs linear time, not
//! quadratic), and a line or an event's data longer than the limit given at creation is an
//! error, so memory stays within about twice that limit whatever the server sends.

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SseEvent {
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// A stream the parser refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SseError {
    #[error("a line of the event stream is longer than {max} bytes")]
    LineTooLong { max: usize },
    #[error("an event of the stream holds more than {max} bytes of data")]
    EventTooLarge { max: usize },
}

/// The fields of the event being read.
#[derive(Debug, Default)]
struct Fields {
    data: String,
    has_data: bool,
    /// A field line was seen since the last dispatch.
    pending: bool,
    /// Bytes of lines that carried no event data.
    idle_bytes: u64,
}

/// An incremental parser; see the module header.
#[derive(Debug)]
pub(crate) struct SseParser {
    /// Bytes of an unfinished line.
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no line end.
    scanned: usize,
    fields: Fields,
    /// Longest line, and most data in one event.
    max: usize,
}

impl SseParser {
    /// Bytes of lines that carried no event data so far (comments, other fields, blank lines
    /// that ended no event): what a stream sends without making progress.
    pub(crate) fn idle_bytes(&self) -> u64 {
        self.fields.idle_bytes
    }
}

impl SseParser {
    /// A parser that refuses lines and events larger than `max` bytes.
    pub(crate) fn new(max: usize) -> SseParser {
        SseParser {
            buf: Vec::new(),
            scanned: 0,
            fields: Fields::default(),
            max,
        }
    }

    /// Feeds bytes; returns the events completed by them.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        let mut i = self.scanned;
        while let Some(at) = self.buf[i..].iter().position(|&b| b == b'\n' || b == b'\r') {
            let end = i + at;
            let next = match self.buf[end] {
                b'\r' if end + 1 == self.buf.len() => {
                    // Could be the first half of CRLF: wait for the next byte.
                    i = end;
                    break;
                }
                b'\r' if self.buf[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            self.fields
                .line(&self.buf[start..end], self.max, &mut events)?;
            start = next;
            i = next;
        }
        // `i` is where the next search starts: the held-back CR, or the end of the buffer.
        let i = if i < self.buf.len() && self.buf[i] == b'\r' {
            i
        } else {
            self.buf.len()
        };
        self.buf.drain(..start);
        self.scanned = i - start;
        if self.buf.len() > self.max {
            return Err(SseError::LineTooLong { max: self.max });
        }
        Ok(events)
    }

    /// At the end of the body: completes a line held back for a possible CRLF. An event still
    /// unfinished afterwards is incomplete (see [`SseParser::is_mid_event`]) and is discarded.
    pub(crate) fn finish(&mut self) -> Result<Vec<SseEvent>, SseError> {
        if self.buf.last() == Some(&b'\r') {
            self.push(b"\n")
        } else {
            Ok(Vec::new())
        }
    }

    /// Whether bytes or fields of an unfinished event are buffered.
    pub(crate) fn is_mid_event(&self) -> bool {
        self.fields.pending || !self.buf.is_empty()
    }
}

impl Fields {
    fn line(
        &mut self,
        line: &[u8],
        max: usize,
        events: &mut Vec<SseEvent>,
    ) -> Result<(), SseError> {
        if line.len() > max {
            return Err(SseError::LineTooLong { max });
        }
        if line.is_empty() {
            if self.has_data {
                events.push(SseEvent {
                    data: std::mem::take(&mut self.data),
                });
            } else {
                self.idle_bytes += 1;
            }
            self.data.clear();
            self.has_data = false;
            self.pending = false;
            return Ok(());
        }
        if line.first() == Some(&b':') {
            self.idle_bytes += line.len() as u64 + 1;
            return Ok(());
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.find(':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => self.pending = true,
            "data" => {
                if self.data.len() + value.len() + 1 > max {
                    return Err(SseError::EventTooLarge { max });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                self.pending = true;
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(parser: &mut SseParser, chunks: &[&str]) -> Vec<SseEvent> {
        chunks
            .iter()
            .flat_map(|c| parser.push(c.as_bytes()).unwrap())
            .collect()
    }

    fn data(d: &str) -> SseEvent {
        SseEvent { data: d.into() }
    }

    #[test]
    fn event_and_data() {
        let mut p = SseParser::new(1024);
        let events = feed(&mut p, &["event: a\ndata: {\"x\":1}\n\n"]);
        assert_eq!(
            events,
            vec![SseEvent {
                data: "{\"x\":1}".into()
            }]
        );
        assert!(!p.is_mid_event());
    }

    #[test]
    fn multiline_data_comments_crlf_split_chunks() {
        let mut p = SseParser::new(1024);
        let events = feed(
            &mut p,
            &[
                ": keepalive\r\n",
                "data: one\r",
                "\ndata:two\r\n",
                "\r",
                "\ndata: x\r\rdata: y\n\n",
            ],
        );
        assert_eq!(events, vec![data("one\ntwo"), data("x"), data("y")]);
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let stream = "event: a\r\ndata: 1\r\n\r\n: c\rdata: 2\rdata: 3\r\rdata:4\n\n";
        let whole = feed(&mut SseParser::new(1024), &[stream]);
        assert_eq!(whole.len(), 3);
        for cut in 0..stream.len() {
            let mut p = SseParser::new(1024);
            let got = feed(&mut p, &[&stream[..cut], &stream[cut..]]);
            assert_eq!(got, whole, "cut at {cut}");
            // And byte by byte.
            let mut q = SseParser::new(1024);
            let bytes: Vec<String> = stream.chars().map(String::from).collect();
            let refs: Vec<&str> = bytes.iter().map(String::as_str).collect();
            assert_eq!(feed(&mut q, &refs), whole);
        }
    }

    #[test]
    fn mid_event_detected() {
        let mut p = SseParser::new(1024);
        assert!(feed(&mut p, &["event: a\ndata: {\"x\""]).is_empty());
        assert!(p.is_mid_event());
        let mut q = SseParser::new(1024);
        feed(&mut q, &["event: a\n"]);
        assert!(q.is_mid_event());
    }

    #[test]
    fn an_event_without_data_is_not_dispatched() {
        let mut p = SseParser::new(1024);
        assert!(feed(&mut p, &["event: ping\n\n"]).is_empty());
    }

    #[test]
    fn a_long_unfinished_line_is_refused_once_over_the_limit() {
        let mut p = SseParser::new(100);
        assert!(p.push(b"data: ").is_ok());
        for _ in 0..94 {
            assert_eq!(p.push(b"a"), Ok(vec![]));
        }
        assert_eq!(p.push(b"a"), Err(SseError::LineTooLong { max: 100 }));
        // A complete line over the limit in one piece is refused too.
        let mut q = SseParser::new(10);
        assert_eq!(
            q.push(b"data: 0123456789\n\n"),
            Err(SseError::LineTooLong { max: 10 })
        );
    }

    #[test]
    fn data_lines_adding_up_past_the_limit_are_refused() {
        let mut p = SseParser::new(20);
        assert!(p.push(b"data: 0123456789\n").is_ok());
        assert_eq!(
            p.push(b"data: 0123456789\n"),
            Err(SseError::EventTooLarge { max: 20 })
        );
    }

    #[test]
    fn the_scan_position_is_kept_across_pushes() {
        let mut p = SseParser::new(1 << 20);
        for _ in 0..1000 {
            p.push(b"aaaa").unwrap();
        }
        assert_eq!(p.scanned, 4000);
        p.push(b"\r").unwrap();
        // The CR waits for a possible LF: it is not counted as scanned.
        assert_eq!(p.scanned, 4000);
        assert_eq!(p.push(b"\ndata: z\n\n").unwrap(), vec![data("z")]);
        assert_eq!((p.buf.len(), p.scanned), (0, 0));
    }
}
