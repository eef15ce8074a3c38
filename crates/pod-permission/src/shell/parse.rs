//! The parser of the bash subset the engine understands (written down in docs/permissions.md).
//!
//! Owns: turning command-line text into a [`Script`], the bounds on that work (a step budget
//! shared by every nested parse of one command line, a nesting limit), and the names the line
//! assigns (so the walk knows which variables the model chose). It is a hand-written recursive
//! descent over bytes that follows bash's own tokenizing rules for the subset, and refuses
//! (a [`ParseError`], so the line is unparsed and never allowed) whatever it does not read
//! exactly as bash would: `$[ ]`, `coproc`, `select`, extended globs, backslashes inside
//! backquotes, a here-document whose body would start inside a nested command, an arithmetic
//! expression holding quotes, and so on.
//!
//! Its cost is linear in the input: every step spends from the [`Budget`], and nesting deeper
//! than [`MAX_DEPTH`] is an error, so no input can make it spin or exhaust the stack.
//!
//! Must not: decide anything, know about programs (beyond the few builtins that assign names),
//! or do I/O.

use std::cell::{Cell, OnceCell};
use std::rc::Rc;

use super::syntax::*;

/// How deep lists, substitutions and expansions may nest.
pub const MAX_DEPTH: usize = 64;

/// Why a command line is not in the understood subset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at byte {offset})")]
pub struct ParseError {
    pub message: String,
    pub offset: usize,
}

/// Parse steps one command line may spend, shared by every nested parse of it (`$( )`, `-c`
/// strings, arguments read as command lines).
#[derive(Debug)]
pub struct Budget {
    left: Cell<u64>,
    exhausted: Cell<bool>,
}

impl Budget {
    /// The budget for a command line of `len` bytes: linear in its length.
    pub fn for_input(len: usize) -> Budget {
        let steps = (len as u64).saturating_mul(16).saturating_add(65_536);
        Budget {
            left: Cell::new(steps),
            exhausted: Cell::new(false),
        }
    }

    /// Spends `n` steps; false once the budget is gone.
    pub fn spend(&self, n: u64) -> bool {
        let left = self.left.get();
        if left < n {
            self.exhausted.set(true);
            self.left.set(0);
            false
        } else {
            self.left.set(left - n);
            true
        }
    }

    /// Whether any parse ran out of steps.
    pub fn exhausted(&self) -> bool {
        self.exhausted.get()
    }
}

/// A parsed command line and what the walk needs to know about it as a whole.
#[derive(Debug, Default)]
pub struct Parsed {
    pub script: Script,
    /// Every variable name the line may assign (`X=`, `for X`, `read X`, `${X:=}`, ...), and
    /// whether that assignment gives it a plain integer (`X=5`, `for i in 1 2 3`). Builtins'
    /// arguments are over-approximated: every name-like piece of them counts.
    pub assigned: Vec<(String, bool)>,
    /// The line runs `source`/`.`/`eval`: any variable may hold anything.
    pub sources: bool,
}

/// Which shell will read the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// bash: the whole subset.
    Bash,
    /// `sh -c` and the like (dash on Debian): constructs whose meaning differs between bash and
    /// a POSIX shell (`((`, `[[`, `$'...'`, `&>`, `<<<`, `|&`, `<( )`, arrays, `function`,
    /// `time`, `;&`) are refused.
    Posix,
}

/// A command line read one top-level item at a time, so each can be walked (and dropped) as
/// soon as it is read: a line of 100,000 commands is never held whole.
pub struct Items<'a> {
    p: Parser<'a>,
    done: bool,
    /// Items read but not handed out: an item whose here-document body starts at a later
    /// newline (`cat <<EOF; echo` newline body) waits until the body is read.
    queue: std::collections::VecDeque<AndOr>,
}

impl<'a> Items<'a> {
    pub fn new(
        src: &'a str,
        budget: &'a Budget,
        dialect: Dialect,
    ) -> Result<Items<'a>, ParseError> {
        let mut p = Parser::new(src, budget, 0, dialect);
        p.enter()?;
        p.level += 1;
        Ok(Items {
            p,
            done: false,
            queue: Default::default(),
        })
    }

    /// The next top-level item, with its here-documents read; None at the end of the line.
    /// An item ended by `;` or `&` before the newline its here-document body follows is held
    /// back until that body has been read (the items up to the newline come with it).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<AndOr>, ParseError> {
        while !self.done && (self.queue.is_empty() || !self.p.pending.is_empty()) {
            match self.p.list_item(Stop::End)? {
                Some(item) => self.queue.push_back(item),
                None => {
                    self.done = true;
                    self.p.end_list()?;
                    if self.p.pos < self.p.b.len() {
                        return self
                            .p
                            .err(format!("unexpected `{}`", self.p.b[self.p.pos] as char));
                    }
                    if !self.p.pending.is_empty() {
                        return self.p.err("a here-document has no body");
                    }
                }
            }
        }
        Ok(self.queue.pop_front())
    }

    /// What the items read so far assign.
    pub fn assigned(&self) -> &[(String, bool)] {
        &self.p.assigned
    }

    /// Whether the items read so far run `source`, `.` or `eval`.
    pub fn sources(&self) -> bool {
        self.p.sources
    }
}

/// Parses a whole command line (or a nested script) at nesting `depth`.
pub fn parse(
    src: &str,
    budget: &Budget,
    depth: usize,
    dialect: Dialect,
) -> Result<Parsed, ParseError> {
    let mut p = Parser::new(src, budget, depth, dialect);
    let script = p.script_to_end()?;
    Ok(Parsed {
        script,
        assigned: p.assigned,
        sources: p.sources,
    })
}

/// Builtins whose arguments name variables they assign.
const ASSIGNING_BUILTINS: &[&str] = &[
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "read",
    "mapfile",
    "readarray",
    "printf",
    "getopts",
    "wait",
    "unset",
    "let",
];

/// Builtins whose `NAME=value` arguments are assignments (and may be arrays).
const DECLARATION_BUILTINS: &[&str] = &["declare", "typeset", "local", "export", "readonly"];

fn is_meta(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

fn is_delimiter(c: Option<u8>) -> bool {
    c.is_none_or(is_meta)
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `s` is a shell variable name.
pub fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && is_name_start(b[0]) && b.iter().all(|&c| is_name_char(c))
}

/// Characters an arithmetic expression may hold here (no quotes, backquotes or backslashes,
/// whose reading inside `(( ))` differs between bash versions).
fn is_arith_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b" \t+-*/%<>=!&|^~?:,$#@[]{}._".contains(&c)
}

/// Characters an arithmetic expression without names or expansions is made of.
fn is_pure_arith_char(c: u8) -> bool {
    c.is_ascii_digit() || b" \t\n+-*/%<>=!&|^~?:,()".contains(&c)
}

/// Where a list stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The end of the text.
    End,
    /// A `)`.
    Paren,
    /// One of these reserved words in command position.
    Words(&'static [&'static str]),
    /// `;;`, `;&`, `;;&` or `esac`.
    CaseArm,
}

/// How a word is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// An ordinary word: ends at a metacharacter.
    Normal,
    /// The right side of `=~` in `[[ ]]`: parentheses and `|` belong to the word.
    Regex,
    /// The word of `${x:-word}`: ends at the `}` (or `/` for a replacement pattern).
    Brace { slash: bool, in_dquote: bool },
    /// Text where only `$`, backquotes and `\` are special (here-document bodies).
    HereDoc,
    /// Arithmetic text: only `$` is special.
    ArithText,
}

/// A here-document waiting for the newline after which its body starts.
struct PendingDoc {
    level: usize,
    delimiter: String,
    strip_tabs: bool,
    quoted: bool,
    body: Rc<OnceCell<Option<Vec<Part>>>>,
}

struct Parser<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    budget: &'a Budget,
    depth: usize,
    /// List nesting, which owns here-documents.
    level: usize,
    pending: Vec<PendingDoc>,
    assigned: Vec<(String, bool)>,
    sources: bool,
    dialect: Dialect,
    /// Inside `$( )`, `<( )` or `>( )`.
    in_sub: usize,
}

/// Whether `text` holds a backslash before a metacharacter, a blank or a quote.
fn escapes_a_metacharacter(text: &[u8]) -> bool {
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'\\' {
            if text
                .get(i + 1)
                .is_some_and(|c| b"|&;<>() \t\"'`".contains(c))
            {
                return true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

type R<T> = Result<T, ParseError>;

/// A plain integer literal (what `X=5` may safely give arithmetic).
fn integer_literal(word: &Word) -> bool {
    literal_text(word).is_some_and(|t| {
        let t = t.strip_prefix('-').unwrap_or(t);
        !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit())
    })
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, budget: &'a Budget, depth: usize, dialect: Dialect) -> Parser<'a> {
        Parser {
            src,
            b: src.as_bytes(),
            pos: 0,
            budget,
            depth,
            level: 0,
            pending: Vec::new(),
            assigned: Vec::new(),
            sources: false,
            dialect,
            in_sub: 0,
        }
    }

    /// Refuses a construct whose meaning differs between bash and a POSIX shell.
    fn bash_only(&self, what: &str) -> R<()> {
        match self.dialect {
            Dialect::Bash => Ok(()),
            Dialect::Posix => self.err(format!(
                "{what} means something else to sh (dash) than to bash"
            )),
        }
    }

    fn note(&mut self, name: &str, integer: bool) {
        self.assigned.push((name.to_string(), integer));
    }

    fn err<T>(&self, message: impl Into<String>) -> R<T> {
        Err(ParseError {
            message: message.into(),
            offset: self.pos,
        })
    }

    fn tick(&self, n: u64) -> R<()> {
        if self.budget.spend(n) {
            Ok(())
        } else {
            self.err("the command is too complex to analyze")
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<u8> {
        self.b.get(self.pos + n).copied()
    }

    fn starts_with(&self, s: &str) -> bool {
        self.b[self.pos..].starts_with(s.as_bytes())
    }

    fn bump(&mut self) -> R<()> {
        self.pos += 1;
        self.tick(1)
    }

    fn advance(&mut self, n: usize) -> R<()> {
        self.pos += n;
        self.tick(n as u64)
    }

    /// Takes one character (all of a multi-byte one) from the input.
    fn take_char(&mut self, into: &mut String) -> R<()> {
        match self.src[self.pos..].chars().next() {
            Some(c) => {
                into.push(c);
                self.advance(c.len_utf8())
            }
            None => self.err("unexpected end of the command"),
        }
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err("the command nests too deeply");
        }
        self.tick(8)
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Blanks and line continuations.
    fn skip_blanks(&mut self) -> R<()> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t') => self.bump()?,
                Some(b'\\') if self.peek_at(1) == Some(b'\n') => self.advance(2)?,
                _ => return Ok(()),
            }
        }
    }

    /// Blanks, line continuations and a comment (up to, not including, the newline).
    fn skip_blanks_comments(&mut self) -> R<()> {
        self.skip_blanks()?;
        if self.peek() == Some(b'#') {
            while !matches!(self.peek(), None | Some(b'\n')) {
                self.bump()?;
            }
        }
        Ok(())
    }

    /// Blanks, comments and newlines (reading here-documents at each newline).
    fn skip_newlines(&mut self) -> R<()> {
        loop {
            self.skip_blanks_comments()?;
            if self.peek() == Some(b'\n') {
                self.newline()?;
            } else {
                return Ok(());
            }
        }
    }

    /// The reserved word at the cursor, if one is there (unquoted, followed by a delimiter).
    fn peek_reserved(&self) -> Option<&'static str> {
        // Only the words that can start with this byte (this runs at every command).
        let candidates: &[&'static str] = match self.peek()? {
            b'i' => &["if", "in"],
            b't' => &["then", "time"],
            b'e' => &["else", "elif", "esac"],
            b'f' => &["fi", "for", "function"],
            b'd' => &["do", "done"],
            b'c' => &["case", "coproc"],
            b'w' => &["while"],
            b'u' => &["until"],
            b's' => &["select"],
            b'{' => &["{"],
            b'}' => &["}"],
            b'[' => &["[["],
            b']' => &["]]"],
            b'!' => &["!"],
            _ => return None,
        };
        candidates
            .iter()
            .copied()
            .find(|w| self.starts_with(w) && is_delimiter(self.b.get(self.pos + w.len()).copied()))
    }

    /// `word` is at the cursor, unquoted, followed by a delimiter or a line continuation.
    fn at_plain_word(&self, word: &str) -> bool {
        let after = self.pos + word.len();
        self.starts_with(word)
            && (is_delimiter(self.b.get(after).copied()) || self.b[after..].starts_with(b"\\\n"))
    }

    fn expect_reserved(&mut self, word: &str) -> R<()> {
        self.skip_newlines()?;
        if self.peek_reserved() == Some(word) {
            self.advance(word.len())
        } else {
            self.err(format!("expected `{word}`"))
        }
    }

    fn expect_byte(&mut self, c: u8) -> R<()> {
        if self.peek() == Some(c) {
            self.bump()
        } else {
            self.err(format!("expected `{}`", c as char))
        }
    }

    /// A newline token: bodies of pending here-documents start after it.
    fn newline(&mut self) -> R<()> {
        self.bump()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        if self.pending.iter().any(|d| d.level != self.level) {
            return self.err("a here-document body would start inside a nested command");
        }
        for doc in std::mem::take(&mut self.pending) {
            self.heredoc_body(doc)?;
        }
        Ok(())
    }

    /// A newline inside a word or string is fine unless a here-document is waiting for one.
    fn check_newline_in_word(&self) -> R<()> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            self.err("a here-document body would start inside a quoted string")
        }
    }

    fn heredoc_body(&mut self, doc: PendingDoc) -> R<()> {
        let start = self.pos;
        let end;
        loop {
            let line_end = self.b[self.pos..]
                .iter()
                .position(|&c| c == b'\n')
                .map(|i| self.pos + i);
            let line_stop = line_end.unwrap_or(self.b.len());
            self.tick((line_stop - self.pos) as u64 + 1)?;
            let mut line = &self.src[self.pos..line_stop];
            if doc.strip_tabs {
                line = line.trim_start_matches('\t');
            }
            if line == doc.delimiter {
                end = self.pos;
                self.pos = line_end.map_or(self.b.len(), |e| e + 1);
                break;
            }
            if !doc.quoted && line.ends_with('\\') {
                // bash joins a backslash-newline in an unquoted body before it looks for the
                // delimiter (`E\` newline `OF` ends the document).
                return self.err("a line of an unquoted here-document ends with a backslash");
            }
            if line.starts_with(&doc.delimiter) {
                return self.err(format!(
                    "a here-document line starts with its delimiter `{}` but is not it",
                    doc.delimiter
                ));
            }
            match line_end {
                Some(e) => self.pos = e + 1,
                None => {
                    return self.err(format!(
                        "the here-document `{}` has no end line",
                        doc.delimiter
                    ))
                }
            }
        }
        let text = &self.src[start..end];
        let parts = if doc.quoted {
            None
        } else {
            let owned;
            let text = if doc.strip_tabs {
                owned = text
                    .split_inclusive('\n')
                    .map(|l| l.trim_start_matches('\t'))
                    .collect::<String>();
                owned.as_str()
            } else {
                text
            };
            Some(self.nested_parts(text, Mode::HereDoc)?)
        };
        // The cell is new and set once here.
        let _ = doc.body.set(parts);
        Ok(())
    }

    /// Parses `text` (a piece of this input, or text derived from it) as a script of its own.
    fn nested_script(&mut self, text: &str) -> R<Script> {
        let mut p = Parser::new(text, self.budget, self.depth + 1, self.dialect);
        let script = p.script_to_end().map_err(|e| ParseError {
            message: e.message,
            offset: self.pos,
        })?;
        self.assigned.append(&mut p.assigned);
        self.sources |= p.sources;
        Ok(script)
    }

    /// Reads `text` as word parts in `mode` (here-document bodies, arithmetic).
    fn nested_parts(&mut self, text: &str, mode: Mode) -> R<Vec<Part>> {
        let mut p = Parser::new(text, self.budget, self.depth + 1, self.dialect);
        let parts = p.word_parts(mode).map_err(|e| ParseError {
            message: e.message,
            offset: self.pos,
        })?;
        if p.pos != p.b.len() {
            return self.err("unexpected text in an expansion");
        }
        self.assigned.append(&mut p.assigned);
        self.sources |= p.sources;
        Ok(parts)
    }

    fn script_to_end(&mut self) -> R<Script> {
        let script = self.list(Stop::End)?;
        if self.pos < self.b.len() {
            return self.err(format!("unexpected `{}`", self.b[self.pos] as char));
        }
        if !self.pending.is_empty() {
            return self.err("a here-document has no body");
        }
        Ok(script)
    }

    fn at_stop(&self, stop: Stop) -> bool {
        match stop {
            Stop::End => false,
            Stop::Paren => self.peek() == Some(b')'),
            Stop::Words(words) => self.peek_reserved().is_some_and(|w| words.contains(&w)),
            Stop::CaseArm => {
                self.starts_with(";;")
                    || self.starts_with(";&")
                    || self.peek_reserved() == Some("esac")
            }
        }
    }

    fn list(&mut self, stop: Stop) -> R<Script> {
        self.enter()?;
        self.level += 1;
        let mut items = Vec::new();
        while let Some(item) = self.list_item(stop)? {
            items.push(item);
        }
        self.end_list()?;
        Ok(Script { items })
    }

    /// The next item of a list, its separator consumed (and the here-documents read at it);
    /// None at the list's end.
    fn list_item(&mut self, stop: Stop) -> R<Option<AndOr>> {
        loop {
            self.skip_blanks_comments()?;
            match self.peek() {
                None => return Ok(None),
                Some(b'\n') => {
                    self.newline()?;
                    continue;
                }
                _ => {}
            }
            if self.at_stop(stop) {
                return Ok(None);
            }
            let mut item = self.and_or()?;
            self.skip_blanks_comments()?;
            match (self.peek(), self.peek_at(1)) {
                (None, _) => {}
                (Some(b'\n'), _) => self.newline()?,
                (Some(b';'), next) if !matches!(next, Some(b';' | b'&')) => self.bump()?,
                (Some(b'&'), next) if !matches!(next, Some(b'&' | b'>')) => {
                    self.bump()?;
                    item.background = true;
                }
                (Some(c), _) => {
                    if !self.at_stop(stop) {
                        return self.err(format!("unexpected `{}`", c as char));
                    }
                }
            }
            return Ok(Some(item));
        }
    }

    fn end_list(&mut self) -> R<()> {
        if self.pending.iter().any(|d| d.level == self.level) {
            return self.err("a here-document has no body");
        }
        self.level -= 1;
        self.leave();
        Ok(())
    }

    fn and_or(&mut self) -> R<AndOr> {
        let mut pipelines = vec![self.pipeline()?];
        loop {
            self.skip_blanks_comments()?;
            if self.starts_with("&&") || self.starts_with("||") {
                self.advance(2)?;
                self.skip_newlines()?;
                pipelines.push(self.pipeline()?);
            } else {
                pipelines.shrink_to_fit();
                return Ok(AndOr {
                    pipelines,
                    background: false,
                });
            }
        }
    }

    fn pipeline(&mut self) -> R<Pipeline> {
        loop {
            self.skip_blanks_comments()?;
            match self.peek_reserved() {
                Some("!") => self.bump()?,
                Some("time") => {
                    // `time [-p] [--]`, each unquoted and a word of its own, as bash reads it.
                    self.bash_only("`time`")?;
                    self.advance(4)?;
                    self.skip_blanks()?;
                    if self.at_plain_word("-p") {
                        self.advance(2)?;
                        self.skip_blanks()?;
                    }
                    if self.at_plain_word("--") {
                        self.advance(2)?;
                    }
                }
                _ => break,
            }
        }
        let mut commands = vec![self.command()?];
        loop {
            self.skip_blanks_comments()?;
            if self.peek() == Some(b'|') && self.peek_at(1) != Some(b'|') {
                self.bump()?;
                if self.peek() == Some(b'&') {
                    self.bash_only("`|&`")?;
                    self.bump()?;
                }
                self.skip_newlines()?;
                commands.push(self.command()?);
            } else {
                commands.shrink_to_fit();
                return Ok(Pipeline { commands });
            }
        }
    }

    fn command(&mut self) -> R<Command> {
        self.skip_blanks_comments()?;
        match self.peek() {
            None => return self.err("a command is missing"),
            Some(b'(') => {
                if self.peek_at(1) == Some(b'(') {
                    self.bash_only("`((`")?;
                    return self.double_paren_command();
                }
                self.bump()?;
                let body = self.list(Stop::Paren)?;
                self.expect_byte(b')')?;
                let redirects = self.redirects()?;
                return Ok(Command::Compound(
                    Box::new(Compound::Subshell(body)),
                    redirects,
                ));
            }
            Some(c) if is_meta(c) && c != b'<' && c != b'>' => {
                let amp_redirect = c == b'&' && self.peek_at(1) == Some(b'>');
                if !amp_redirect {
                    return self.err(format!("unexpected `{}`", c as char));
                }
            }
            _ => {}
        }
        if let Some(word) = self.peek_reserved() {
            return match word {
                "{" | "if" | "while" | "until" | "for" | "case" | "[[" => {
                    if word == "[[" {
                        self.bash_only("`[[`")?;
                    }
                    let compound = self.compound()?;
                    let redirects = self.redirects()?;
                    Ok(Command::Compound(Box::new(compound), redirects))
                }
                "function" => {
                    self.bash_only("`function`")?;
                    self.advance(word.len())?;
                    self.skip_blanks()?;
                    let name = self.function_name()?;
                    self.skip_blanks()?;
                    if self.peek() == Some(b'(') {
                        self.bump()?;
                        self.skip_blanks()?;
                        self.expect_byte(b')')?;
                    }
                    self.function_rest(name)
                }
                "select" | "coproc" => self.err(format!("`{word}` is not supported")),
                _ => self.err(format!("unexpected `{word}`")),
            };
        }
        self.simple()
    }

    fn function_name(&mut self) -> R<String> {
        let word = self.word(Mode::Normal)?;
        match literal_text(&word) {
            Some(name) if !name.contains(['=', '/']) && !name.is_empty() => Ok(name.to_string()),
            _ => self.err("a function name must be a plain word"),
        }
    }

    /// After `name()` or `function name`: the body and its redirections.
    fn function_rest(&mut self, name: String) -> R<Command> {
        self.skip_newlines()?;
        let body = match (self.peek(), self.peek_reserved()) {
            (Some(b'('), _) => match self.command()? {
                Command::Compound(body, redirects) => {
                    return Ok(Command::Function {
                        name,
                        body,
                        redirects,
                    })
                }
                _ => return self.err("a function body must be a compound command"),
            },
            (_, Some("{" | "if" | "while" | "until" | "for" | "case" | "[[")) => self.compound()?,
            _ => return self.err("a function body must be a compound command"),
        };
        let redirects = self.redirects()?;
        Ok(Command::Function {
            name,
            body: Box::new(body),
            redirects,
        })
    }

    /// `((`: an arithmetic command, or (when its first unbalanced `)` is not doubled) two
    /// subshells, as bash reads it.
    fn double_paren_command(&mut self) -> R<Command> {
        match self.scan_arith(self.pos + 2, false)? {
            Some(end) => {
                let arith = self.arith(self.pos + 2, end)?;
                self.pos = end + 2;
                let redirects = self.redirects()?;
                Ok(Command::Compound(
                    Box::new(Compound::Arith(arith)),
                    redirects,
                ))
            }
            None => {
                self.bump()?;
                let body = self.list(Stop::Paren)?;
                self.expect_byte(b')')?;
                let redirects = self.redirects()?;
                Ok(Command::Compound(
                    Box::new(Compound::AmbiguousSubshell(body)),
                    redirects,
                ))
            }
        }
    }

    /// From `from` (just after `((`), the offset of the closing `))`, or None when the first
    /// unbalanced `)` is not followed by another (bash then reads nested parentheses).
    fn scan_arith(&self, from: usize, for_loop: bool) -> R<Option<usize>> {
        let mut depth = 0usize;
        let mut i = from;
        loop {
            let Some(&c) = self.b.get(i) else {
                return Err(ParseError {
                    message: "an arithmetic expression has no end".into(),
                    offset: from,
                });
            };
            self.tick(1)?;
            match c {
                b'(' => depth += 1,
                b')' if depth == 0 => {
                    return Ok((self.b.get(i + 1) == Some(&b')')).then_some(i));
                }
                b')' => depth -= 1,
                b'\n' if self.pending.is_empty() => {}
                b';' if for_loop => {}
                c if is_arith_char(c) => {}
                _ => {
                    return Err(ParseError {
                        message: format!(
                            "`{}` inside an arithmetic expression is not supported",
                            c as char
                        ),
                        offset: i,
                    })
                }
            }
            i += 1;
        }
    }

    fn arith(&mut self, from: usize, to: usize) -> R<Arith> {
        let text = &self.src[from..to];
        let pure = text.bytes().all(is_pure_arith_char);
        let parts = if text.contains('$') {
            self.nested_parts(text, Mode::ArithText)?
        } else {
            Vec::new()
        };
        Ok(Arith {
            text: text.to_string(),
            pure,
            parts,
        })
    }

    fn compound(&mut self) -> R<Compound> {
        self.enter()?;
        let word = self.peek_reserved().unwrap_or("");
        self.advance(word.len())?;
        let compound = match word {
            "{" => {
                let body = self.list(Stop::Words(&["}"]))?;
                self.expect_reserved("}")?;
                Compound::Group(body)
            }
            "if" => {
                let mut branches = Vec::new();
                let mut otherwise = None;
                loop {
                    let cond = self.list(Stop::Words(&["then"]))?;
                    self.expect_reserved("then")?;
                    let body = self.list(Stop::Words(&["elif", "else", "fi"]))?;
                    branches.push((cond, body));
                    match self.peek_reserved() {
                        Some("elif") => self.advance(4)?,
                        Some("else") => {
                            self.advance(4)?;
                            otherwise = Some(self.list(Stop::Words(&["fi"]))?);
                            self.expect_reserved("fi")?;
                            break;
                        }
                        _ => {
                            self.expect_reserved("fi")?;
                            break;
                        }
                    }
                }
                Compound::If {
                    branches,
                    otherwise,
                }
            }
            "while" | "until" => {
                let cond = self.list(Stop::Words(&["do"]))?;
                self.expect_reserved("do")?;
                let body = self.list(Stop::Words(&["done"]))?;
                self.expect_reserved("done")?;
                Compound::Loop { cond, body }
            }
            "for" => self.for_loop()?,
            "case" => self.case()?,
            "[[" => Compound::Cond(self.cond()?),
            _ => return self.err("expected a compound command"),
        };
        self.leave();
        Ok(compound)
    }

    fn do_body(&mut self) -> R<Script> {
        self.expect_reserved("do")?;
        let body = self.list(Stop::Words(&["done"]))?;
        self.expect_reserved("done")?;
        Ok(body)
    }

    fn for_loop(&mut self) -> R<Compound> {
        self.skip_blanks()?;
        if self.starts_with("((") {
            let Some(end) = self.scan_arith(self.pos + 2, true)? else {
                return self.err("`for ((` has no `))`");
            };
            let arith = self.arith(self.pos + 2, end)?;
            self.pos = end + 2;
            self.skip_blanks()?;
            if self.peek() == Some(b';') {
                self.bump()?;
            }
            let body = self.do_body()?;
            return Ok(Compound::ArithFor(arith, body));
        }
        let word = self.word(Mode::Normal)?;
        let var = match literal_text(&word) {
            Some(v) if is_name(v) => v.to_string(),
            _ => return self.err("a `for` variable must be a name"),
        };
        let var_at = self.assigned.len();
        self.note(&var, false);
        self.skip_newlines()?;
        let mut words = None;
        if self.peek_reserved() == Some("in") {
            self.advance(2)?;
            let mut list = Vec::new();
            loop {
                self.skip_blanks_comments()?;
                match self.peek() {
                    Some(b';') => {
                        self.bump()?;
                        break;
                    }
                    Some(b'\n') => {
                        self.newline()?;
                        break;
                    }
                    Some(c) if is_meta(c) => return self.err("unexpected text in a `for` list"),
                    None => return self.err("`for` has no body"),
                    _ => list.push(self.word(Mode::Normal)?),
                }
            }
            if !list.is_empty() && list.iter().all(integer_literal) {
                self.assigned[var_at].1 = true;
            }
            words = Some(list);
        } else if self.peek() == Some(b';') {
            self.bump()?;
        }
        let body = self.do_body()?;
        Ok(Compound::For { var, words, body })
    }

    fn case(&mut self) -> R<Compound> {
        self.skip_blanks()?;
        let word = self.word_required(Mode::Normal)?;
        self.expect_reserved("in")?;
        let mut arms = Vec::new();
        loop {
            self.skip_newlines()?;
            if self.peek_reserved() == Some("esac") {
                self.advance(4)?;
                break;
            }
            if self.peek() == Some(b'(') {
                self.bump()?;
            }
            let mut patterns = Vec::new();
            loop {
                self.skip_blanks()?;
                patterns.push(self.word_required(Mode::Normal)?);
                self.skip_blanks()?;
                match self.peek() {
                    Some(b'|') => self.bump()?,
                    Some(b')') => {
                        self.bump()?;
                        break;
                    }
                    _ => return self.err("expected `)` after a `case` pattern"),
                }
            }
            let body = self.list(Stop::CaseArm)?;
            arms.push((patterns, body));
            if self.starts_with(";;&") {
                self.bash_only("`;;&`")?;
                self.advance(3)?;
            } else if self.starts_with(";&") {
                self.bash_only("`;&`")?;
                self.advance(2)?;
            } else if self.starts_with(";;") {
                self.advance(2)?;
            }
        }
        Ok(Compound::Case { word, arms })
    }

    fn cond(&mut self) -> R<Vec<CondToken>> {
        let mut tokens: Vec<CondToken> = Vec::new();
        loop {
            self.skip_newlines()?;
            if self.starts_with("]]") && is_delimiter(self.peek_at(2)) {
                self.advance(2)?;
                return Ok(tokens);
            }
            let op = match (self.peek(), self.peek_at(1)) {
                (None, _) => return self.err("`[[` has no `]]`"),
                // `<(...)` and `>(...)` are words here too (process substitutions).
                (Some(b'<' | b'>'), Some(b'(')) => None,
                (Some(b'&'), Some(b'&')) => Some("&&"),
                (Some(b'|'), Some(b'|')) => Some("||"),
                (Some(b'('), _) => Some("("),
                (Some(b')'), _) => Some(")"),
                (Some(b'<'), _) => Some("<"),
                (Some(b'>'), _) => Some(">"),
                (Some(b'!'), next) if is_delimiter(next) => Some("!"),
                (Some(c), _) if is_meta(c) => {
                    return self.err(format!("unexpected `{}` in `[[ ]]`", c as char))
                }
                _ => None,
            };
            if let Some(op) = op {
                self.advance(op.len())?;
                tokens.push(CondToken::Op(op));
                continue;
            }
            let regex = matches!(tokens.last(), Some(CondToken::Word(w)) if w.src() == "=~");
            let mode = if regex { Mode::Regex } else { Mode::Normal };
            let word = self.word_required(mode)?;
            if word.src() == "=~" {
                self.note("BASH_REMATCH", false);
            }
            tokens.push(CondToken::Word(word));
        }
    }

    /// Redirections after a compound command.
    fn redirects(&mut self) -> R<Vec<Redirect>> {
        let mut out = Vec::new();
        loop {
            self.skip_blanks()?;
            if self.at_redirect() {
                out.push(self.redirect()?);
            } else {
                return Ok(out);
            }
        }
    }

    /// Whether a redirection operator (with an optional descriptor number) starts here.
    fn at_redirect(&self) -> bool {
        let mut i = self.pos;
        while self.b.get(i).is_some_and(u8::is_ascii_digit) && i - self.pos < 10 {
            i += 1;
        }
        match (self.b.get(i), self.b.get(i + 1)) {
            (Some(b'<' | b'>'), Some(b'(')) => false,
            (Some(b'<' | b'>'), _) => true,
            (Some(b'&'), Some(b'>')) => i == self.pos,
            _ => false,
        }
    }

    fn redirect(&mut self) -> R<Redirect> {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump()?;
        }
        const OPS: &[&str] = &[
            "&>>", "<<<", "<<-", "&>", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">",
        ];
        let Some(op) = OPS.iter().copied().find(|op| self.starts_with(op)) else {
            return self.err("expected a redirection");
        };
        if matches!(op, "&>>" | "&>" | "<<<") {
            self.bash_only(&format!("`{op}`"))?;
        }
        self.advance(op.len())?;
        if self.starts_with("\\\n") {
            return self.err("a line continuation right after a redirection is not supported");
        }
        self.skip_blanks()?;
        match op {
            "<<" | "<<-" => self.heredoc(op == "<<-"),
            "<<<" => Ok(Redirect::HereString(self.word_required(Mode::Normal)?)),
            "<&" | ">&" => Ok(Redirect::Dup {
                read: op == "<&",
                target: self.word_required(Mode::Normal)?,
            }),
            _ => Ok(Redirect::File {
                read: op == "<",
                target: self.word_required(Mode::Normal)?,
            }),
        }
    }

    fn heredoc(&mut self, strip_tabs: bool) -> R<Redirect> {
        let word = self.word_required(Mode::Normal)?;
        let mut delimiter = String::new();
        let mut quoted = false;
        for part in &word.parts {
            match part {
                Part::Lit(s) => delimiter.push_str(s),
                Part::Quoted(s) => {
                    quoted = true;
                    delimiter.push_str(s);
                }
                Part::Double {
                    parts,
                    locale: false,
                } => {
                    quoted = true;
                    for p in parts {
                        match p {
                            Part::Lit(s) | Part::Quoted(s) => delimiter.push_str(s),
                            _ => return self.err("a here-document delimiter must be plain text"),
                        }
                    }
                }
                _ => return self.err("a here-document delimiter must be plain text"),
            }
        }
        let plain = |c: char| c.is_ascii_alphanumeric() || "_.-+:@%/".contains(c);
        if delimiter.is_empty() || !delimiter.chars().all(plain) {
            return self.err("a here-document delimiter must be letters, digits or `_.-+:@%/`");
        }
        let body = Rc::new(OnceCell::new());
        self.pending.push(PendingDoc {
            level: self.level,
            delimiter,
            strip_tabs,
            quoted,
            body: Rc::clone(&body),
        });
        Ok(Redirect::HereDoc { body })
    }

    fn simple(&mut self) -> R<Command> {
        let mut simple = Simple::default();
        let mut declaration = false;
        loop {
            self.skip_blanks_comments()?;
            let Some(c) = self.peek() else { break };
            match c {
                b'\n' | b';' | b'|' | b')' => break,
                b'&' if self.peek_at(1) != Some(b'>') => break,
                b'(' => {
                    let only_name = simple.words.len() == 1
                        && simple.assigns.is_empty()
                        && simple.redirects.is_empty();
                    if only_name {
                        if let Some(name) = literal_text(&simple.words[0]) {
                            if !name.contains(['=', '/']) {
                                let name = name.to_string();
                                self.bump()?;
                                self.skip_blanks()?;
                                self.expect_byte(b')')?;
                                return self.function_rest(name);
                            }
                        }
                    }
                    return self.err("unexpected `(`");
                }
                _ => {}
            }
            if self.at_redirect() {
                simple.redirects.push(self.redirect()?);
                continue;
            }
            if c == b'{' && self.named_descriptor_ahead() {
                return self.err("`{name}>` descriptor redirections are not supported");
            }
            let prefix = simple.words.is_empty();
            if prefix || declaration {
                if let Some(assign) = self.assignment(true)? {
                    let integer = matches!(&assign.value, AssignValue::Scalar(w) if integer_literal(w))
                        && assign.subscript.is_none();
                    self.note(&assign.name.clone(), integer);
                    if prefix {
                        simple.assigns.push(assign);
                    } else {
                        simple.arg_assigns.push(assign.clone());
                        simple.words.push(assign_as_word(assign));
                    }
                    continue;
                }
            }
            let start = self.pos;
            let word = self.word(Mode::Normal)?;
            if self.pos == start {
                return self.err(format!("unexpected `{}`", c as char));
            }
            if prefix {
                if let Some(name) = literal_text(&word) {
                    declaration = DECLARATION_BUILTINS.contains(&name);
                    if matches!(name, "source" | "." | "eval") {
                        self.sources = true;
                    }
                }
            }
            simple.words.push(word);
        }
        if simple.words.is_empty() && simple.assigns.is_empty() && simple.redirects.is_empty() {
            return self.err("a command is missing");
        }
        self.note_assigning_builtin(&simple);
        simple.words.shrink_to_fit();
        Ok(Command::Simple(simple))
    }

    /// `{name}` right before `<` or `>`.
    fn named_descriptor_ahead(&self) -> bool {
        let rest = &self.b[self.pos..];
        match rest.iter().position(|&c| c == b'}') {
            Some(close) => {
                rest[1..close].iter().all(|&c| is_name_char(c))
                    && matches!(rest.get(close + 1), Some(b'<' | b'>'))
            }
            None => false,
        }
    }

    /// Names the arguments of `read`, `declare`, `printf -v`, ... may assign (also after
    /// `command`/`builtin`). Over-approximated: every name-like piece of every argument, and
    /// every tail of an option cluster (`-vx` may assign `x`).
    fn note_assigning_builtin(&mut self, simple: &Simple) {
        let mut words = simple.words.iter().peekable();
        let mut name = None;
        while let Some(w) = words.next() {
            match literal_text(w) {
                Some("command" | "builtin") => {
                    while words
                        .peek()
                        .is_some_and(|w| literal_text(w).is_some_and(|t| t.starts_with('-')))
                    {
                        words.next();
                    }
                }
                other => {
                    name = other;
                    break;
                }
            }
        }
        let Some(name) = name else { return };
        if !ASSIGNING_BUILTINS.contains(&name) {
            return;
        }
        let mut found: Vec<String> = Vec::new();
        for word in words {
            let text = literal_text(word).unwrap_or(word.src());
            for piece in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if text.starts_with('-') {
                    for (k, _) in piece.char_indices() {
                        found.push(piece[k..].to_string());
                    }
                } else {
                    found.push(piece.to_string());
                }
            }
        }
        let defaults: &[&str] = match name {
            "read" => &["REPLY"],
            "mapfile" | "readarray" => &["MAPFILE"],
            "getopts" => &["OPTARG", "OPTIND"],
            _ => &[],
        };
        found.extend(defaults.iter().map(|s| s.to_string()));
        for n in found.iter().filter(|n| is_name(n)) {
            self.note(n, false);
        }
    }

    /// `NAME=value`, `NAME+=value`, `NAME[sub]=value` or `NAME=( ... )` at the cursor; None (and
    /// the cursor unmoved) when the word is not an assignment.
    fn assignment(&mut self, arrays: bool) -> R<Option<Assign>> {
        let start = self.pos;
        let mut i = self.pos;
        while self.b.get(i).is_some_and(|&c| is_name_char(c)) {
            i += 1;
        }
        if i == start || !is_name_start(self.b[start]) {
            return Ok(None);
        }
        let name = self.src[start..i].to_string();
        let mut subscript = None;
        if self.b.get(i) == Some(&b'[') {
            let Some(close) = self.subscript_end(i) else {
                return Ok(None);
            };
            subscript = Some(self.src[i + 1..close].to_string());
            i = close + 1;
        }
        let eq = match (self.b.get(i), self.b.get(i + 1)) {
            (Some(b'='), _) => i + 1,
            (Some(b'+'), Some(b'=')) => i + 2,
            _ => {
                if subscript
                    .as_deref()
                    .is_some_and(|s| s.contains([' ', '\t']))
                {
                    return self.err("a subscript holding a blank outside an assignment");
                }
                return Ok(None);
            }
        };
        self.tick((eq - self.pos) as u64)?;
        self.pos = eq;
        let value = if arrays && self.peek() == Some(b'(') {
            self.bash_only("an array assignment")?;
            self.bump()?;
            AssignValue::Array(self.array_elements()?)
        } else {
            AssignValue::Scalar(self.word(Mode::Normal)?)
        };
        Ok(Some(Assign {
            name,
            subscript,
            value,
            src: self.src[start..self.pos].to_string(),
        }))
    }

    /// The `]` closing the subscript opened at `open`, if the subscript is plain text.
    fn subscript_end(&self, open: usize) -> Option<usize> {
        let mut depth = 0usize;
        for (k, &c) in self.b[open..].iter().enumerate() {
            match c {
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(open + k);
                    }
                }
                c if c.is_ascii_alphanumeric() || b" \t_$@*#+-{}".contains(&c) => {}
                _ => return None,
            }
        }
        None
    }

    fn array_elements(&mut self) -> R<Vec<(Option<String>, Word)>> {
        let start = self.pos;
        let mut elements = Vec::new();
        loop {
            self.skip_blanks_comments()?;
            match self.peek() {
                Some(b')') => {
                    // bash 5.2 rejects an escaped metacharacter, blank or quote in an array
                    // assignment inside `$( )` or `<( )` and runs the lines after the error.
                    if self.in_sub > 0 && escapes_a_metacharacter(&self.b[start..self.pos]) {
                        return self.err(
                            "an escaped metacharacter in an array inside a substitution (bash rejects it)",
                        );
                    }
                    self.bump()?;
                    return Ok(elements);
                }
                Some(b'\n') => self.newline()?,
                None => return self.err("an array assignment has no `)`"),
                Some(b'[') => {
                    let Some(close) = self.subscript_end(self.pos) else {
                        return self.err("unsupported array subscript");
                    };
                    if self.b.get(close + 1) != Some(&b'=') {
                        elements.push((None, self.word_required(Mode::Normal)?));
                        continue;
                    }
                    let key = self.src[self.pos + 1..close].to_string();
                    self.advance(close + 2 - self.pos)?;
                    elements.push((Some(key), self.word(Mode::Normal)?));
                }
                Some(c) if is_meta(c) => return self.err("unexpected text in an array"),
                _ => elements.push((None, self.word_required(Mode::Normal)?)),
            }
        }
    }

    fn word_required(&mut self, mode: Mode) -> R<Word> {
        let start = self.pos;
        let word = self.word(mode)?;
        if self.pos == start {
            return self.err("a word is missing");
        }
        Ok(word)
    }

    fn word(&mut self, mode: Mode) -> R<Word> {
        let start = self.pos;
        let mut parts = self.word_parts(mode)?;
        // A long line holds many words: keep no spare capacity.
        parts.shrink_to_fit();
        Ok(Word::new(parts, &self.src[start..self.pos]))
    }

    fn word_parts(&mut self, mode: Mode) -> R<Vec<Part>> {
        let at_start = self.pos;
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut depth = 0usize;
        fn flush(lit: &mut String, parts: &mut Vec<Part>) {
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(lit)));
            }
        }
        while let Some(c) = self.peek() {
            let in_text = matches!(mode, Mode::HereDoc | Mode::ArithText);
            match c {
                b'$' => {
                    flush(&mut lit, &mut parts);
                    let in_dquote = matches!(
                        mode,
                        Mode::Brace {
                            in_dquote: true,
                            ..
                        }
                    ) || in_text;
                    parts.push(self.dollar(in_dquote)?);
                    continue;
                }
                b'`' if mode != Mode::ArithText => {
                    flush(&mut lit, &mut parts);
                    parts.push(self.backquote()?);
                    continue;
                }
                b'\\' if mode == Mode::HereDoc => {
                    match self.peek_at(1) {
                        Some(b'\n') => self.advance(2)?,
                        Some(e @ (b'$' | b'`' | b'\\')) => {
                            self.advance(2)?;
                            lit.push(e as char);
                        }
                        _ => {
                            self.bump()?;
                            lit.push('\\');
                        }
                    }
                    continue;
                }
                _ if in_text => {
                    self.take_char(&mut lit)?;
                    continue;
                }
                _ => {}
            }
            // Normal, Regex and Brace modes.
            match c {
                b'\'' => {
                    if matches!(
                        mode,
                        Mode::Brace {
                            in_dquote: true,
                            ..
                        }
                    ) {
                        return self.err("a single quote inside `${ }` within double quotes");
                    }
                    flush(&mut lit, &mut parts);
                    parts.push(Part::Quoted(self.single_quoted()?));
                }
                b'"' => {
                    flush(&mut lit, &mut parts);
                    self.bump()?;
                    parts.push(Part::Double {
                        parts: self.double_quoted()?,
                        locale: false,
                    });
                }
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.advance(2)?,
                    Some(_) => {
                        if matches!(
                            mode,
                            Mode::Brace {
                                in_dquote: true,
                                ..
                            }
                        ) {
                            return self.err("a backslash inside `${ }` within double quotes");
                        }
                        flush(&mut lit, &mut parts);
                        self.bump()?;
                        let mut escaped = String::new();
                        self.take_char(&mut escaped)?;
                        parts.push(Part::Quoted(escaped));
                    }
                    None => {
                        self.bump()?;
                        lit.push('\\');
                    }
                },
                // A process substitution starts a word, or stands anywhere in the word of an
                // unquoted `${x:-word}` (bash runs it there too).
                b'<' | b'>'
                    if self.peek_at(1) == Some(b'(')
                        && ((mode == Mode::Normal && self.pos == at_start)
                            || matches!(
                                mode,
                                Mode::Brace {
                                    in_dquote: false,
                                    ..
                                }
                            )) =>
                {
                    self.bash_only("`<( )`")?;
                    flush(&mut lit, &mut parts);
                    self.advance(2)?;
                    self.in_sub += 1;
                    let body = self.list(Stop::Paren);
                    self.in_sub -= 1;
                    let body = body?;
                    self.expect_byte(b')')?;
                    parts.push(Part::ProcessSub(body));
                }
                b'<' | b'>' if self.peek_at(1) == Some(b'(') && mode == Mode::Normal => {
                    return self.err("a process substitution inside a word is not supported");
                }
                _ => match mode {
                    Mode::Normal => {
                        if is_meta(c) {
                            break;
                        }
                        // A run of plain bytes at once.
                        let start = self.pos;
                        let run = self.b[start..]
                            .iter()
                            .position(|&d| is_meta(d) || b"'\"\\$`<>".contains(&d))
                            .unwrap_or(self.b.len() - start)
                            .max(1);
                        let end = (start + run..=self.b.len())
                            .find(|&e| self.src.is_char_boundary(e))
                            .unwrap_or(self.b.len());
                        lit.push_str(&self.src[start..end]);
                        self.advance(end - start)?;
                    }
                    Mode::Regex => match c {
                        b'(' => {
                            depth += 1;
                            self.take_char(&mut lit)?;
                        }
                        b')' if depth > 0 => {
                            depth -= 1;
                            self.take_char(&mut lit)?;
                        }
                        b'|' => self.take_char(&mut lit)?,
                        c if is_meta(c) => break,
                        _ => self.take_char(&mut lit)?,
                    },
                    Mode::Brace { slash, .. } => match c {
                        b'{' => {
                            depth += 1;
                            self.take_char(&mut lit)?;
                        }
                        b'}' if depth == 0 => break,
                        b'}' => {
                            depth -= 1;
                            self.take_char(&mut lit)?;
                        }
                        b'/' if slash && depth == 0 => break,
                        b'\n' => {
                            self.check_newline_in_word()?;
                            self.take_char(&mut lit)?;
                        }
                        _ => self.take_char(&mut lit)?,
                    },
                    Mode::HereDoc | Mode::ArithText => self.take_char(&mut lit)?,
                },
            }
        }
        flush(&mut lit, &mut parts);
        Ok(parts)
    }

    fn single_quoted(&mut self) -> R<String> {
        self.bump()?;
        let rest = &self.src[self.pos..];
        let Some(end) = rest.find('\'') else {
            return self.err("a single quote has no end");
        };
        let text = &rest[..end];
        if text.contains('\n') {
            self.check_newline_in_word()?;
        }
        self.advance(end + 1)?;
        Ok(text.to_string())
    }

    /// After the opening `"`: the parts up to and including the closing one.
    fn double_quoted(&mut self) -> R<Vec<Part>> {
        self.enter()?;
        let mut parts = Vec::new();
        let mut lit = String::new();
        loop {
            let Some(c) = self.peek() else {
                return self.err("a double quote has no end");
            };
            match c {
                b'"' => {
                    self.bump()?;
                    break;
                }
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.advance(2)?,
                    Some(e @ (b'$' | b'`' | b'"' | b'\\')) => {
                        self.advance(2)?;
                        lit.push(e as char);
                    }
                    _ => {
                        self.bump()?;
                        lit.push('\\');
                    }
                },
                b'$' => {
                    if !lit.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut lit)));
                    }
                    parts.push(self.dollar(true)?);
                }
                b'`' => {
                    if !lit.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut lit)));
                    }
                    parts.push(self.backquote()?);
                }
                b'\n' => {
                    self.check_newline_in_word()?;
                    self.take_char(&mut lit)?;
                }
                _ => self.take_char(&mut lit)?,
            }
        }
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        self.leave();
        Ok(parts)
    }

    fn backquote(&mut self) -> R<Part> {
        self.bump()?;
        let rest = &self.src[self.pos..];
        let Some(end) = rest.find('`') else {
            return self.err("a backquote has no end");
        };
        let text = &rest[..end];
        if text.contains('\\') {
            return self.err("a backslash inside backquotes is not supported (use `$( )`)");
        }
        if text.contains('\n') {
            self.check_newline_in_word()?;
        }
        self.advance(end + 1)?;
        self.enter()?;
        let script = self.nested_script(text)?;
        self.leave();
        Ok(Part::CommandSub(script))
    }

    fn dollar(&mut self, in_dquote: bool) -> R<Part> {
        match self.peek_at(1) {
            Some(b'(') if self.peek_at(2) == Some(b'(') => {
                let from = self.pos + 3;
                match self.scan_arith(from, false)? {
                    Some(end) => {
                        let arith = self.arith(from, end)?;
                        self.tick((end + 2 - self.pos) as u64)?;
                        self.pos = end + 2;
                        Ok(Part::Arith(arith))
                    }
                    None => {
                        self.advance(2)?;
                        self.in_sub += 1;
                        let body = self.list(Stop::Paren);
                        self.in_sub -= 1;
                        let body = body?;
                        self.expect_byte(b')')?;
                        Ok(Part::AmbiguousSub(body))
                    }
                }
            }
            Some(b'(') => {
                self.advance(2)?;
                self.in_sub += 1;
                let body = self.list(Stop::Paren);
                self.in_sub -= 1;
                let body = body?;
                self.expect_byte(b')')?;
                Ok(Part::CommandSub(body))
            }
            Some(b'{') => {
                self.advance(2)?;
                self.enter()?;
                let param = self.braced_param(in_dquote)?;
                self.leave();
                Ok(Part::Param(Box::new(param)))
            }
            Some(b'[') => self.err("`$[ ]` arithmetic is not supported"),
            Some(b'\'') if !in_dquote => {
                self.bash_only("`$'...'`")?;
                self.bump()?;
                let text = self.single_quoted_raw()?;
                Ok(match decode_ansi_c(&text) {
                    Some(decoded) => Part::Quoted(decoded),
                    None => Part::Unknown(format!("$'{text}'")),
                })
            }
            Some(b'"') if !in_dquote => {
                self.bash_only("`$\"...\"`")?;
                self.advance(2)?;
                Ok(Part::Double {
                    parts: self.double_quoted()?,
                    locale: true,
                })
            }
            Some(c) if is_name_start(c) => {
                self.bump()?;
                let start = self.pos;
                while self.peek().is_some_and(is_name_char) {
                    self.bump()?;
                }
                Ok(plain_param(&self.src[start..self.pos]))
            }
            Some(c) if c.is_ascii_digit() || b"@*#?-$!".contains(&c) => {
                self.advance(2)?;
                Ok(plain_param(&(c as char).to_string()))
            }
            _ => {
                self.bump()?;
                Ok(Part::Lit("$".into()))
            }
        }
    }

    /// The text of `'...'` (cursor on the opening quote), with `\'` kept as written (for `$'`).
    fn single_quoted_raw(&mut self) -> R<String> {
        self.bump()?;
        let start = self.pos;
        loop {
            match self.peek() {
                None => return self.err("a `$'` string has no end"),
                Some(b'\\') => self.advance(2.min(self.b.len() - self.pos))?,
                Some(b'\'') => break,
                Some(b'\n') => {
                    self.check_newline_in_word()?;
                    self.bump()?;
                }
                Some(_) => self.bump()?,
            }
        }
        let text = self.src[start..self.pos].to_string();
        self.bump()?;
        Ok(text)
    }

    /// After `${`: the parameter, its operator, and the closing `}`.
    fn braced_param(&mut self, in_dquote: bool) -> R<Param> {
        let mut indirect = false;
        match (self.peek(), self.peek_at(1)) {
            (Some(b'#'), Some(b'}')) => {
                self.advance(2)?;
                return Ok(Param {
                    name: "#".into(),
                    indirect: false,
                    subscript: None,
                    op: ParamOp::Plain,
                });
            }
            (Some(b'!'), Some(b'}')) => {
                self.advance(2)?;
                return Ok(Param {
                    name: "!".into(),
                    indirect: false,
                    subscript: None,
                    op: ParamOp::Plain,
                });
            }
            (Some(b'#'), _) => self.bump()?, // length: harmless
            (Some(b'!'), _) => {
                indirect = true;
                self.bump()?;
            }
            _ => {}
        }
        let start = self.pos;
        match self.peek() {
            Some(c) if is_name_start(c) => {
                while self.peek().is_some_and(is_name_char) {
                    self.bump()?;
                }
            }
            Some(c) if c.is_ascii_digit() => {
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.bump()?;
                }
            }
            Some(c) if b"@*#?-$!".contains(&c) => self.bump()?,
            _ => return self.err("bad substitution: `${` needs a parameter name"),
        }
        let name = self.src[start..self.pos].to_string();
        let mut subscript = None;
        if self.peek() == Some(b'[') {
            let Some(close) = self.subscript_end(self.pos) else {
                return self.err("unsupported subscript in `${ }`");
            };
            subscript = Some(self.src[self.pos + 1..close].to_string());
            self.advance(close + 1 - self.pos)?;
        }
        let brace = |slash| Mode::Brace { slash, in_dquote };
        let op = match (self.peek(), self.peek_at(1)) {
            (Some(b'}'), _) => ParamOp::Plain,
            (Some(b':'), Some(c @ (b'-' | b'=' | b'+' | b'?'))) => {
                self.advance(2)?;
                let word = self.word(brace(false))?;
                ParamOp::Word {
                    word,
                    op: word_op(c),
                }
            }
            (Some(b':'), _) => {
                self.bump()?;
                let offset = self.arith_field()?;
                let length = if self.peek() == Some(b':') {
                    self.bump()?;
                    Some(self.arith_field()?)
                } else {
                    None
                };
                ParamOp::Substring(offset, length)
            }
            (Some(c @ (b'-' | b'=' | b'+' | b'?')), _) => {
                self.bump()?;
                let word = self.word(brace(false))?;
                ParamOp::Word {
                    word,
                    op: word_op(c),
                }
            }
            (Some(c @ (b'#' | b'%' | b'^' | b',')), next) => {
                self.advance(if next == Some(c) { 2 } else { 1 })?;
                let word = self.word(brace(false))?;
                ParamOp::Word {
                    word,
                    op: word_op(c),
                }
            }
            (Some(b'/'), next) => {
                self.advance(if matches!(next, Some(b'/' | b'#' | b'%')) {
                    2
                } else {
                    1
                })?;
                let pattern = self.word(brace(true))?;
                let replacement = if self.peek() == Some(b'/') {
                    self.bump()?;
                    Some(self.word(brace(false))?)
                } else {
                    None
                };
                ParamOp::Replace(pattern, replacement)
            }
            (Some(b'@'), Some(c)) if c.is_ascii_alphabetic() => {
                self.advance(2)?;
                ParamOp::Transform(c as char)
            }
            _ => return self.err("bad substitution: unsupported `${ }` operator"),
        };
        self.expect_byte(b'}')?;
        if let ParamOp::Word {
            op: WordOp::Assign, ..
        } = op
        {
            self.note(&name, false);
        }
        Ok(Param {
            name,
            indirect,
            subscript,
            op,
        })
    }

    /// The offset or length of `${x:offset:length}`, as text (arithmetic, checked by the walk).
    fn arith_field(&mut self) -> R<String> {
        let start = self.pos;
        loop {
            match self.peek() {
                Some(b':' | b'}') => break,
                Some(c) if c.is_ascii_alphanumeric() || b" \t+-*/%_".contains(&c) => self.bump()?,
                _ => return self.err("unsupported text in a `${x:offset}` expansion"),
            }
        }
        Ok(self.src[start..self.pos].to_string())
    }
}

/// The operator of `${x OP word}` written as `c` (after an optional `:`).
fn word_op(c: u8) -> WordOp {
    match c {
        b'-' => WordOp::Default,
        b'=' => WordOp::Assign,
        b'+' => WordOp::Alternate,
        b'?' => WordOp::Error,
        b'#' | b'%' => WordOp::Trim,
        _ => WordOp::Case,
    }
}

fn plain_param(name: &str) -> Part {
    Part::Param(Box::new(Param {
        name: name.to_string(),
        indirect: false,
        subscript: None,
        op: ParamOp::Plain,
    }))
}

/// The word's text when it is all unquoted literal text.
pub fn literal_text(word: &Word) -> Option<&str> {
    match word.parts.as_slice() {
        [Part::Lit(s)] => Some(s.as_str()),
        _ => None,
    }
}

/// A declaration builtin's `NAME=value` argument, kept as a word for the walk.
fn assign_as_word(assign: Assign) -> Word {
    let mut parts = vec![Part::Quoted(format!(
        "{}{}=",
        assign.name,
        assign
            .subscript
            .as_ref()
            .map(|s| format!("[{s}]"))
            .unwrap_or_default()
    ))];
    match assign.value {
        AssignValue::Scalar(word) => parts.extend(word.parts),
        AssignValue::Array(_) => parts.push(Part::ArrayLiteral(assign.src.clone())),
    }
    Word {
        parts,
        src: assign.src,
    }
}

/// Decodes the body of `$'...'` as bash does; None for what the engine does not reproduce
/// (a NUL, which ends the word in bash, or `\c` control escapes of non-letters).
pub fn decode_ansi_c(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let simple = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            '?' => Some('?'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let mut number = |radix: u32, max: usize, first: Option<char>| -> Option<u32> {
            let mut digits = String::new();
            if let Some(f) = first {
                digits.push(f);
            }
            while digits.len() < max {
                match chars.peek() {
                    Some(d) if d.is_digit(radix) => {
                        digits.push(*d);
                        chars.next();
                    }
                    _ => break,
                }
            }
            if digits.is_empty() {
                None
            } else {
                u32::from_str_radix(&digits, radix).ok()
            }
        };
        let code = match e {
            '0'..='7' => number(8, 3, Some(e)),
            'x' => number(16, 2, None),
            'u' => number(16, 4, None),
            'U' => number(16, 8, None),
            'c' => {
                let c = chars.next()?;
                if !c.is_ascii_alphabetic() {
                    return None;
                }
                Some((c.to_ascii_uppercase() as u32) & 0x1f)
            }
            _ => {
                out.push('\\');
                out.push(e);
                continue;
            }
        };
        match code {
            // No digits after \x, \u or \U: bash keeps the text as written.
            None => {
                out.push('\\');
                out.push(e);
            }
            // Octal and \x escapes are bytes: only ASCII ones are reproduced.
            Some(0) => return None,
            Some(n) if matches!(e, '0'..='7' | 'x') && n > 0x7f => return None,
            Some(n) => out.push(char::from_u32(n)?),
        }
    }
    Some(out)
}
