//! `sed`: reading a script far enough to know whether it runs commands (`e`, `s///e`) or writes
//! files (`w`, `s///w`).

use super::*;

pub(super) fn sed(args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "nsuzErb",
        values: "efl",
        optional: "i",
        long_flags: &[
            "quiet",
            "silent",
            "debug",
            "posix",
            "sandbox",
            "separate",
            "unbuffered",
            "null-data",
            "zero-terminated",
            "regexp-extended",
            "binary",
            "follow-symlinks",
            "help",
            "version",
        ],
        long_values: &["expression", "file", "line-length"],
        long_optional: &["in-place"],
        permute: true,
        ..Spec::default()
    };
    let s = match scan("sed", args, 0, &spec) {
        Ok(s) => s,
        Err(o) => return Analysis::from(o),
    };
    if s.has("i") || s.has("--in-place") {
        return Analysis::opaque("`sed -i` rewrites files in place");
    }
    if s.has("f") || s.has("--file") {
        return Analysis::opaque("`sed -f` runs a script from a file");
    }
    let mut scripts = s.values(&["e", "--expression"], args);
    let mut operands = s.operands.iter().map(|&i| &args[i]);
    if scripts.is_empty() {
        match operands.next() {
            Some(w) => scripts.push(ValueRef::Word(w)),
            None => return Analysis::default(),
        }
    }
    for script in &scripts {
        match script.text() {
            Some(text) => {
                if let Some(why) = sed_script_runs(text) {
                    return Analysis::opaque(why);
                }
            }
            None => return Analysis::from(Opaque::DynamicScript),
        }
    }
    if let Some(w) = operands.find(|w| w.model_chosen() && w.may_start_dash) {
        return Analysis::from(computed_option("sed", w));
    }
    Analysis::default()
}

/// Why a sed script may run a command or write a file, or None when it cannot. Anything the
/// scanner does not fully read counts as running code.
pub(in crate::shell) fn sed_script_runs(script: &str) -> Option<String> {
    match SedScan::new(script).run() {
        Ok(()) => None,
        Err(SedStop::Runs(why)) => Some(why),
        Err(SedStop::Unread) => Some("the sed script is not fully understood".to_string()),
    }
}

pub(super) enum SedStop {
    Runs(String),
    Unread,
}

/// A conservative reader of GNU sed scripts: it follows the commands that only edit the stream
/// and stops at anything else.
pub(super) struct SedScan<'a> {
    b: &'a [u8],
    i: usize,
}

/// Delimiters whose reading cannot be confused with regex syntax.
pub(super) const SED_DELIMITERS: &[u8] = b"/|,:#!@%^+=~;._";

impl<'a> SedScan<'a> {
    fn new(script: &'a str) -> SedScan<'a> {
        SedScan {
            b: script.as_bytes(),
            i: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }

    /// From the cursor to the unescaped `delim`; with `brackets`, bracket expressions are
    /// skipped whole (a delimiter inside `[...]` does not end a regex). The cursor ends after
    /// the delimiter.
    fn delimited(&mut self, delim: u8, brackets: bool) -> Result<(), SedStop> {
        loop {
            match self.peek() {
                None | Some(b'\n') => return Err(SedStop::Unread),
                Some(b'\\') => {
                    if matches!(self.b.get(self.i + 1), None | Some(b'\n')) {
                        return Err(SedStop::Unread);
                    }
                    self.i += 2;
                }
                Some(b'[') if brackets => {
                    self.i += 1;
                    if self.peek() == Some(b'^') {
                        self.i += 1;
                    }
                    if self.peek() == Some(b']') {
                        self.i += 1;
                    }
                    loop {
                        match self.peek() {
                            None | Some(b'\n') => return Err(SedStop::Unread),
                            Some(b']') => break,
                            Some(b'[')
                                if matches!(self.b.get(self.i + 1), Some(b':' | b'.' | b'=')) =>
                            {
                                let close = self.b[self.i + 1];
                                self.i += 2;
                                loop {
                                    match (self.peek(), self.b.get(self.i + 1)) {
                                        (None | Some(b'\n'), _) => return Err(SedStop::Unread),
                                        (Some(c), Some(b']')) if c == close => {
                                            self.i += 2;
                                            break;
                                        }
                                        _ => self.i += 1,
                                    }
                                }
                            }
                            Some(_) => self.i += 1,
                        }
                    }
                    self.i += 1;
                }
                Some(c) if c == delim => {
                    self.i += 1;
                    return Ok(());
                }
                Some(_) => self.i += 1,
            }
        }
    }

    fn delimiter(&mut self) -> Result<u8, SedStop> {
        match self.peek() {
            Some(d) if SED_DELIMITERS.contains(&d) => {
                self.i += 1;
                Ok(d)
            }
            _ => Err(SedStop::Unread),
        }
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some(b'I' | b'M')) {
            self.i += 1;
        }
    }

    /// An address; true when one was there.
    fn address(&mut self) -> Result<bool, SedStop> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                self.digits();
                if self.peek() == Some(b'~') {
                    self.i += 1;
                    self.digits();
                }
                Ok(true)
            }
            Some(b'$') => {
                self.i += 1;
                Ok(true)
            }
            Some(b'/') => {
                self.i += 1;
                self.delimited(b'/', true)?;
                self.regex_flags();
                Ok(true)
            }
            Some(b'\\') => {
                self.i += 1;
                let d = self.delimiter()?;
                self.delimited(d, true)?;
                self.regex_flags();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// After a command: blanks, then the end of the command.
    fn end_of_command(&mut self) -> Result<(), SedStop> {
        self.skip_blanks();
        match self.peek() {
            None | Some(b';' | b'\n' | b'}' | b'#') => Ok(()),
            _ => Err(SedStop::Unread),
        }
    }

    fn run(&mut self) -> Result<(), SedStop> {
        loop {
            while matches!(self.peek(), Some(b' ' | b'\t' | b';' | b'\n' | b'}')) {
                self.i += 1;
            }
            let Some(c) = self.peek() else {
                return Ok(());
            };
            if c == b'#' {
                while !matches!(self.peek(), None | Some(b'\n')) {
                    self.i += 1;
                }
                continue;
            }
            if self.address()? && self.peek() == Some(b',') {
                self.i += 1;
                match self.peek() {
                    Some(b'+' | b'~') => {
                        self.i += 1;
                        self.digits();
                    }
                    _ => {
                        if !self.address()? {
                            return Err(SedStop::Unread);
                        }
                    }
                }
            }
            self.skip_blanks();
            while self.peek() == Some(b'!') {
                self.i += 1;
                self.skip_blanks();
            }
            let Some(cmd) = self.peek() else {
                return Err(SedStop::Unread);
            };
            self.i += 1;
            match cmd {
                b'{' => continue,
                b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'n' | b'N' | b'p' | b'P'
                | b'x' | b'z' | b'F' => {}
                b'l' | b'L' | b'q' | b'Q' => {
                    self.skip_blanks();
                    self.digits();
                }
                b'a' | b'i' | b'c' => {
                    // One line of text; `a\` then the text on the next line. Any other
                    // backslash (continuations, escapes) is not read.
                    if self.peek() == Some(b'\\') && self.b.get(self.i + 1) == Some(&b'\n') {
                        self.i += 2;
                    }
                    while !matches!(self.peek(), None | Some(b'\n')) {
                        if self.peek() == Some(b'\\') {
                            return Err(SedStop::Unread);
                        }
                        self.i += 1;
                    }
                }
                b':' | b'b' | b't' | b'T' => {
                    // A label: plain characters only, then the end of the command (GNU sed
                    // ends a label at a blank or `;`).
                    self.skip_blanks();
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                    {
                        self.i += 1;
                    }
                }
                b'r' | b'R' => {
                    while !matches!(self.peek(), None | Some(b'\n')) {
                        self.i += 1;
                    }
                }
                b'w' | b'W' => return Err(SedStop::Runs("a sed `w` command writes a file".into())),
                b'e' => {
                    return Err(SedStop::Runs(
                        "a sed `e` command runs a shell command".into(),
                    ))
                }
                b's' => {
                    let d = self.delimiter()?;
                    self.delimited(d, true)?;
                    self.delimited(d, false)?;
                    while let Some(f) = self.peek() {
                        match f {
                            b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9' => self.i += 1,
                            b'e' => {
                                return Err(SedStop::Runs(
                                    "the sed `e` flag runs the result as a command".into(),
                                ))
                            }
                            b'w' => {
                                return Err(SedStop::Runs("the sed `w` flag writes a file".into()))
                            }
                            _ => break,
                        }
                    }
                }
                b'y' => {
                    let d = self.delimiter()?;
                    self.delimited(d, false)?;
                    self.delimited(d, false)?;
                }
                _ => return Err(SedStop::Unread),
            }
            self.end_of_command()?;
        }
    }
}
