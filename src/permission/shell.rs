//! Turning a `bash` command line into permission subjects.
//!
//! This module owns one job: parse a command line with a real shell parser (`brush-parser`) and
//! return every simple command it would run (normalized, with wrappers such as `sudo` unwrapped and
//! `bash -c` scripts parsed recursively) and every file it would read or write through a
//! redirection. Anything whose effect cannot be read statically is still returned, flagged with an
//! [`Opaque`] reason, so that the engine can fail closed.
//!
//! The walk matches every variant of brush-parser's AST and word-piece enums exhaustively (no
//! wildcard arms), so a node kind added by a parser upgrade fails to compile instead of being
//! skipped; input the parser rejects or that nests too deeply becomes an `Opaque::ParseError`
//! subject.
//!
//! It must not match rules, decide anything, touch the file system or perform any other I/O: it
//! is a pure function from text to [`ShellSubjects`]. It never matches raw command text, and it
//! never panics on any input.

use brush_parser::ast;
use brush_parser::word::{self, ParameterExpr, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;

/// How deep command substitutions, `bash -c` scripts and wrappers may nest before the command is
/// declared unreadable (`Opaque::ParseError`).
const MAX_DEPTH: usize = 24;
/// Maximum bracket nesting handed to the (recursive) parser; deeper input is a parse error, so
/// that adversarial input cannot exhaust the stack.
const MAX_BRACKET_NESTING: usize = 100;
/// Maximum `(` nesting handed to the parser. brush-parser's PEG grammar backtracks exponentially
/// on unclosed `(` runs (`((((((((((((((((((((0` takes seconds, each further `(` doubles it;
/// found by `fuzz/` target `shell`), so deeper input is a parse error (the call fails closed)
/// instead of a hang in the permission check. No real command line nests parentheses this deep.
const MAX_PAREN_NESTING: usize = 12;

/// Everything a command line would run or touch, as permission subjects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellSubjects {
    /// Every simple command, including wrapped and nested ones.
    pub commands: Vec<ShellCommand>,
    /// Every file-redirection target (not fd duplications, not heredocs).
    pub redirects: Vec<ShellRedirect>,
}

/// One simple command as a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellCommand {
    /// Normalized words joined by single spaces: quotes/escapes removed, leading VAR=value
    /// assignments dropped, command word reduced to its basename ("/bin/rm x" -> "rm x").
    /// Words holding an expansion or a glob keep their source form (`cat $F`).
    pub text: String,
    /// When the command word was written as a path ("/bin/rm x", "./rm x"), the same text with the
    /// path kept, so rules can match that form too. None otherwise.
    pub path_form: Option<String>,
    /// Why the command's effect cannot be read statically; None when it can.
    pub opaque: Option<Opaque>,
}

/// Whether a redirection reads or writes its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// `<`
    Read,
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, and `>&WORD` when WORD is not a file descriptor.
    Write,
}

/// One redirection target as a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRedirect {
    /// Read or write.
    pub kind: RedirectKind,
    /// The unquoted target word (its source form when it holds an expansion or a glob).
    pub path: String,
    /// `Some(Opaque::DynamicPath)` when the target holds an expansion, a tilde or a glob.
    pub opaque: Option<Opaque>,
}

/// Why a subject's effect cannot be read statically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opaque {
    /// The command line (or a nested script) does not parse; carries the parser's message.
    ParseError(String),
    /// Nothing to check: empty, whitespace or comment only (or only assignments).
    Empty,
    /// The command word is an expansion, a glob or otherwise not a literal (`$CMD x`).
    DynamicCommandWord,
    /// `eval ...`.
    Eval,
    /// A shell `-c` (or `env -S`, `watch`) script that is not a literal.
    DynamicScript,
    /// An interpreter running inline code (`python -c`, `node -e`, ...).
    InlineCode,
    /// A shell or interpreter reading its script from stdin (`curl x | bash`).
    StdinScript,
    /// A redirection target holding an expansion, a tilde or a glob.
    DynamicPath,
}

impl Opaque {
    /// Short human text for a denial or approval request.
    pub fn describe(&self) -> String {
        match self {
            Opaque::ParseError(msg) => format!("the command could not be parsed ({msg})"),
            Opaque::Empty => "the command is empty".to_string(),
            Opaque::DynamicCommandWord => "the command word is an expansion".to_string(),
            Opaque::Eval => "eval runs a string as a command".to_string(),
            Opaque::DynamicScript => "the shell script argument is not a literal".to_string(),
            Opaque::InlineCode => "an interpreter runs inline code".to_string(),
            Opaque::StdinScript => "a shell or interpreter reads its script from stdin".to_string(),
            Opaque::DynamicPath => "the redirection target is an expansion or a glob".to_string(),
        }
    }
}

/// Parse `command` and return its subjects. Never panics.
pub fn extract(command: &str) -> ShellSubjects {
    let mut out = ShellSubjects::default();
    let mut x = Extractor { out: &mut out };
    x.script(command, 0);
    if out.commands.is_empty() && out.redirects.is_empty() {
        out.commands.push(ShellCommand {
            text: String::new(),
            path_form: None,
            opaque: Some(Opaque::Empty),
        });
    }
    out
}

/// A word after analysis.
#[derive(Debug, Clone)]
struct Wd {
    /// Unquoted value when static, source form otherwise.
    text: String,
    /// True when the word has no expansion, tilde or glob: `text` is exactly what the program gets.
    is_static: bool,
}

struct Extractor<'a> {
    out: &'a mut ShellSubjects,
}

fn opts() -> ParserOptions {
    ParserOptions::default()
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "parser panicked".to_string()
    }
}

/// Whether `s` nests brackets deeper than the parser is trusted with (ignoring quoting, so this
/// over-estimates only).
fn too_deep(s: &str) -> bool {
    bracket_nesting(s) > MAX_BRACKET_NESTING || paren_nesting(s) > MAX_PAREN_NESTING
}

/// Maximum nesting of `(` in raw text, ignoring quoting (over-estimates only).
fn paren_nesting(s: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Maximum nesting of `(`/`{`/`[` in raw text, ignoring quoting (over-estimates only).
fn bracket_nesting(s: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in s.chars() {
        match c {
            '(' | '{' | '[' | '`' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn parse_program(s: &str) -> Result<ast::Program, String> {
    if too_deep(s) {
        return Err("nesting too deep".to_string());
    }
    // brush-parser's tokenizer never returns (and grows a string until memory runs out) on a
    // here-document whose delimiter unquotes to nothing followed by a comment at the very end of
    // the input: `cat <<'' #x` (found by the `shell` fuzz target). A final newline, which does
    // not change what the script runs, lets it finish.
    let owned;
    let s = if s.ends_with('\n') {
        s
    } else {
        owned = format!("{s}\n");
        owned.as_str()
    };
    let r = std::panic::catch_unwind(|| {
        let mut p = brush_parser::Parser::new(std::io::BufReader::new(s.as_bytes()), &opts());
        p.parse_program()
    });
    match r {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(panic_message(e.as_ref())),
    }
}

fn parse_word(s: &str, heredoc: bool) -> Result<Vec<WordPieceWithSource>, String> {
    if too_deep(s) {
        return Err("nesting too deep".to_string());
    }
    let r = std::panic::catch_unwind(|| {
        if heredoc {
            word::parse_heredoc(s, &opts())
        } else {
            word::parse(s, &opts())
        }
    });
    match r {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(panic_message(e.as_ref())),
    }
}

/// Whether unquoted text would be subject to globbing or brace expansion.
fn has_glob(unquoted: &str) -> bool {
    if unquoted.contains(['*', '?']) {
        return true;
    }
    // `[` is a bracket expression only when a `]` follows it (`[ -f x ]` words are literal).
    if let Some(open) = unquoted.find('[') {
        if unquoted[open + 1..].contains(']') {
            return true;
        }
    }
    if ["@(", "!(", "+("].iter().any(|p| unquoted.contains(p)) {
        return true;
    }
    if let (Some(open), Some(close)) = (unquoted.find('{'), unquoted.rfind('}')) {
        if open < close {
            let inner = &unquoted[open..close];
            if inner.contains(',') || inner.contains("..") {
                return true;
            }
        }
    }
    false
}

fn basename(s: &str) -> &str {
    match s.rsplit('/').next() {
        Some(b) if !b.is_empty() => b,
        _ => s,
    }
}

fn is_fd_dup(target: &str) -> bool {
    let t = target.strip_suffix('-').unwrap_or(target);
    t.is_empty() || t.chars().all(|c| c.is_ascii_digit())
}

/// If `words[i]` is an option (with its value, when it takes one), the index after it.
/// `short_val`: short option letters taking a value; `long_val`: long options taking a value
/// (when written without `=`). `--` counts as an option (the last one).
fn skip_one_option(words: &[Wd], i: usize, short_val: &str, long_val: &[&str]) -> Option<usize> {
    let w = words.get(i)?;
    let t = w.text.as_str();
    if !w.is_static {
        return None;
    }
    if t == "--" {
        return Some(i + 1);
    }
    if let Some(long) = t.strip_prefix("--") {
        if !long.contains('=') && long_val.contains(&long) {
            return Some(i + 2);
        }
        return Some(i + 1);
    }
    if t.len() > 1 && t.starts_with('-') {
        let letters: Vec<char> = t.chars().skip(1).collect();
        for (k, c) in letters.iter().enumerate() {
            if short_val.contains(*c) {
                // the value is the rest of the cluster, or the next word
                return Some(if k + 1 == letters.len() { i + 2 } else { i + 1 });
            }
        }
        return Some(i + 1);
    }
    None
}

/// Skip options from `start`; returns the index of the first non-option word.
fn skip_options(words: &[Wd], start: usize, short_val: &str, long_val: &[&str]) -> usize {
    let mut i = start;
    while let Some(j) = skip_one_option(words, i, short_val, long_val) {
        let was_dashdash = words.get(i).is_some_and(|w| w.text == "--");
        i = j;
        if was_dashdash {
            break;
        }
    }
    i
}

fn skip_assignments(words: &[Wd], mut i: usize) -> usize {
    while let Some(w) = words.get(i) {
        if is_assignment(&w.text) {
            i += 1;
        } else {
            break;
        }
    }
    i
}

fn is_assignment(t: &str) -> bool {
    match t.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox",
];

impl Extractor<'_> {
    fn push(&mut self, text: String, path_form: Option<String>, opaque: Option<Opaque>) {
        self.out.commands.push(ShellCommand {
            text,
            path_form,
            opaque,
        });
    }

    fn parse_error(&mut self, raw: &str, msg: String) {
        self.push(raw.trim().to_string(), None, Some(Opaque::ParseError(msg)));
    }

    /// Parse and walk a whole script (the command line, a substitution, a `-c` string).
    fn script(&mut self, src: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.parse_error(src, "nesting too deep".to_string());
            return;
        }
        match parse_program(src) {
            Ok(prog) => {
                for cc in &prog.complete_commands {
                    self.compound_list(cc, depth);
                }
            }
            Err(msg) => self.parse_error(src, msg),
        }
    }

    fn compound_list(&mut self, list: &ast::CompoundList, depth: usize) {
        for item in &list.0 {
            self.and_or(&item.0, depth);
        }
    }

    fn and_or(&mut self, list: &ast::AndOrList, depth: usize) {
        self.pipeline(&list.first, depth);
        for ao in &list.additional {
            match ao {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, depth),
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline, depth: usize) {
        for (i, cmd) in p.seq.iter().enumerate() {
            let timed = i == 0 && p.timed.is_some();
            self.command(cmd, timed, depth);
        }
    }

    fn command(&mut self, cmd: &ast::Command, timed: bool, depth: usize) {
        match cmd {
            ast::Command::Simple(sc) => self.simple(sc, timed, depth),
            ast::Command::Compound(cc, redirects) => {
                self.compound(cc, depth);
                if let Some(r) = redirects {
                    self.redirect_list(r, depth);
                }
            }
            ast::Command::Function(f) => {
                self.compound(&f.body.0, depth);
                if let Some(r) = &f.body.1 {
                    self.redirect_list(r, depth);
                }
            }
            ast::Command::ExtendedTest(t, redirects) => {
                self.extended_test(&t.expr, depth);
                if let Some(r) = redirects {
                    self.redirect_list(r, depth);
                }
            }
        }
    }

    fn compound(&mut self, cc: &ast::CompoundCommand, depth: usize) {
        match cc {
            ast::CompoundCommand::Arithmetic(a) => self.arith(&a.expr.value, depth),
            ast::CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arith(&e.value, depth);
                }
                self.compound_list(&f.body.list, depth);
            }
            ast::CompoundCommand::BraceGroup(b) => self.compound_list(&b.list, depth),
            ast::CompoundCommand::Subshell(s) => self.compound_list(&s.list, depth),
            ast::CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value, depth);
                }
                self.compound_list(&f.body.list, depth);
            }
            ast::CompoundCommand::CaseClause(c) => {
                self.word(&c.value.value, depth);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value, depth);
                    }
                    if let Some(body) = &item.cmd {
                        self.compound_list(body, depth);
                    }
                }
            }
            ast::CompoundCommand::IfClause(i) => {
                self.compound_list(&i.condition, depth);
                self.compound_list(&i.then, depth);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.compound_list(c, depth);
                    }
                    self.compound_list(&e.body, depth);
                }
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.compound_list(&w.0, depth);
                self.compound_list(&w.1.list, depth);
            }
            ast::CompoundCommand::Coprocess(c) => self.command(&c.body, false, depth),
        }
    }

    fn extended_test(&mut self, e: &ast::ExtendedTestExpr, depth: usize) {
        match e {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.extended_test(a, depth);
                self.extended_test(b, depth);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.extended_test(a, depth)
            }
            ast::ExtendedTestExpr::UnaryTest(_, w) => {
                self.word(&w.value, depth);
            }
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                self.word(&a.value, depth);
                self.word(&b.value, depth);
            }
        }
    }

    /// Walk arithmetic text for substitutions (`$(( $(rm x) ))`, `a[$(rm x)]`).
    fn arith(&mut self, text: &str, depth: usize) {
        match parse_word(text, true) {
            Ok(pieces) => {
                self.pieces(&pieces, false, depth);
            }
            Err(msg) => self.parse_error(text, msg),
        }
    }

    fn redirect_list(&mut self, r: &ast::RedirectList, depth: usize) {
        for io in &r.0 {
            self.redirect(io, depth);
        }
    }

    fn redirect(&mut self, io: &ast::IoRedirect, depth: usize) {
        match io {
            ast::IoRedirect::File(_, kind, target) => {
                let rk = match kind {
                    ast::IoFileRedirectKind::Read => Some(RedirectKind::Read),
                    ast::IoFileRedirectKind::Write
                    | ast::IoFileRedirectKind::Append
                    | ast::IoFileRedirectKind::ReadAndWrite
                    | ast::IoFileRedirectKind::Clobber => Some(RedirectKind::Write),
                    ast::IoFileRedirectKind::DuplicateInput => None,
                    ast::IoFileRedirectKind::DuplicateOutput => None,
                };
                match target {
                    ast::IoFileRedirectTarget::Filename(w) => {
                        let wd = self.word(&w.value, depth);
                        self.redirect_target(rk.unwrap_or(RedirectKind::Write), wd);
                    }
                    ast::IoFileRedirectTarget::Fd(_) => {}
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                        self.compound_list(&sub.list, depth)
                    }
                    ast::IoFileRedirectTarget::Duplicate(w) => {
                        let wd = self.word(&w.value, depth);
                        if !(wd.is_static && is_fd_dup(&wd.text)) {
                            // `>&file` writes stdout and stderr to a file; `<&file` is an error in
                            // bash, but count it as a read so nothing is skipped.
                            let k = match kind {
                                ast::IoFileRedirectKind::DuplicateInput => RedirectKind::Read,
                                _ => RedirectKind::Write,
                            };
                            self.redirect_target(k, wd);
                        }
                    }
                }
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    match parse_word(&doc.doc.value, true) {
                        Ok(pieces) => {
                            self.pieces(&pieces, true, depth);
                        }
                        Err(msg) => self.parse_error(&doc.doc.value, msg),
                    }
                }
            }
            ast::IoRedirect::HereString(_, w) => {
                self.word(&w.value, depth);
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let wd = self.word(&w.value, depth);
                self.redirect_target(RedirectKind::Write, wd);
            }
        }
    }

    fn redirect_target(&mut self, kind: RedirectKind, wd: Wd) {
        if wd.is_static
            && matches!(
                wd.text.as_str(),
                "/dev/null" | "/dev/stdout" | "/dev/stderr"
            )
        {
            return;
        }
        self.out.redirects.push(ShellRedirect {
            kind,
            opaque: (!wd.is_static).then_some(Opaque::DynamicPath),
            path: wd.text,
        });
    }

    /// Analyze one word: walk its substitutions (emitting their commands) and normalize it.
    fn word(&mut self, raw: &str, depth: usize) -> Wd {
        match parse_word(raw, false) {
            Ok(pieces) => {
                let (text, is_static, unquoted) = self.pieces(&pieces, false, depth);
                let is_static = is_static && !has_glob(&unquoted);
                Wd {
                    text: if is_static { text } else { raw.to_string() },
                    is_static,
                }
            }
            Err(msg) => {
                self.parse_error(raw, msg);
                Wd {
                    text: raw.to_string(),
                    is_static: false,
                }
            }
        }
    }

    /// Walk word pieces. Returns (unquoted text, no expansions seen, concatenated unquoted
    /// `Text` pieces for glob detection).
    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        depth: usize,
    ) -> (String, bool, String) {
        let mut text = String::new();
        let mut is_static = true;
        let mut unquoted = String::new();
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t) => {
                    text.push_str(t);
                    if !quoted {
                        unquoted.push_str(t);
                    }
                }
                WordPiece::SingleQuotedText(t) => text.push_str(t),
                WordPiece::AnsiCQuotedText(t) => {
                    if t.contains('\\') {
                        is_static = false; // escapes we do not decode
                    }
                    text.push_str(t);
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    let (t, s, _) = self.pieces(inner, true, depth);
                    text.push_str(&t);
                    is_static &= s;
                }
                WordPiece::TildeExpansion(_) => is_static = false,
                WordPiece::ParameterExpansion(e) => {
                    is_static = false;
                    self.parameter_expr(e, depth);
                }
                WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                    is_static = false;
                    self.script(s, depth + 1);
                }
                WordPiece::EscapeSequence(e) => {
                    let mut chars = e.chars();
                    let first = chars.next();
                    let rest: String = chars.collect();
                    match first {
                        Some('\\') if rest == "\n" => {}
                        Some('\\')
                            if quoted && !matches!(rest.as_str(), "$" | "`" | "\"" | "\\") =>
                        {
                            text.push_str(e)
                        }
                        Some('\\') => text.push_str(&rest),
                        _ => text.push_str(e),
                    }
                }
                WordPiece::ArithmeticExpression(a) => {
                    is_static = false;
                    self.arith(&a.value, depth);
                }
            }
        }
        (text, is_static, unquoted)
    }

    /// Walk every string held by a parameter expansion (defaults, patterns, indices, offsets).
    fn parameter_expr(&mut self, e: &ParameterExpr, depth: usize) {
        let mut strings: Vec<&str> = Vec::new();
        let param = match e {
            ParameterExpr::Parameter { parameter, .. }
            | ParameterExpr::ParameterLength { parameter, .. }
            | ParameterExpr::Transform { parameter, .. } => Some(parameter),
            ParameterExpr::UseDefaultValues {
                parameter,
                default_value: v,
                ..
            }
            | ParameterExpr::AssignDefaultValues {
                parameter,
                default_value: v,
                ..
            }
            | ParameterExpr::IndicateErrorIfNullOrUnset {
                parameter,
                error_message: v,
                ..
            }
            | ParameterExpr::UseAlternativeValue {
                parameter,
                alternative_value: v,
                ..
            }
            | ParameterExpr::RemoveSmallestSuffixPattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::RemoveLargestSuffixPattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::RemoveSmallestPrefixPattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::RemoveLargestPrefixPattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::UppercaseFirstChar {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::UppercasePattern {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::LowercaseFirstChar {
                parameter,
                pattern: v,
                ..
            }
            | ParameterExpr::LowercasePattern {
                parameter,
                pattern: v,
                ..
            } => {
                strings.extend(v.as_deref());
                Some(parameter)
            }
            ParameterExpr::Substring {
                parameter,
                offset,
                length,
                ..
            } => {
                strings.push(&offset.value);
                strings.extend(length.as_ref().map(|l| l.value.as_str()));
                Some(parameter)
            }
            ParameterExpr::ReplaceSubstring {
                parameter,
                pattern,
                replacement,
                ..
            } => {
                strings.push(pattern);
                strings.extend(replacement.as_deref());
                Some(parameter)
            }
            ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => None,
        };
        if let Some(word::Parameter::NamedWithIndex { index, .. }) = param {
            strings.push(index);
        }
        let owned: Vec<String> = strings.into_iter().map(str::to_string).collect();
        for s in owned {
            if depth + 1 > MAX_DEPTH {
                self.parse_error(&s, "nesting too deep".to_string());
                continue;
            }
            match parse_word(&s, true) {
                Ok(pieces) => {
                    self.pieces(&pieces, false, depth + 1);
                }
                Err(msg) => self.parse_error(&s, msg),
            }
        }
    }

    fn simple(&mut self, sc: &ast::SimpleCommand, timed: bool, depth: usize) {
        let mut words: Vec<Wd> = Vec::new();
        let items = sc
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .map(|i| (true, i))
            .chain(
                sc.suffix
                    .iter()
                    .flat_map(|s| s.0.iter())
                    .map(|i| (false, i)),
            );
        let mut name_done = false;
        for (is_prefix, item) in items {
            if !is_prefix && !name_done {
                name_done = true;
                if let Some(w) = &sc.word_or_name {
                    let wd = self.word(&w.value, depth);
                    words.push(wd);
                }
            }
            match item {
                ast::CommandPrefixOrSuffixItem::IoRedirect(io) => self.redirect(io, depth),
                ast::CommandPrefixOrSuffixItem::Word(w) => {
                    let wd = self.word(&w.value, depth);
                    words.push(wd);
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w)
                    if !is_prefix && matches!(a.value, ast::AssignmentValue::Scalar(_)) =>
                {
                    // `env X=1 cmd` / `export X=$(..)`: an argument of the command.
                    let wd = self.word(&w.value, depth);
                    words.push(wd);
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    match &a.value {
                        ast::AssignmentValue::Scalar(v) => {
                            self.word(&v.value, depth);
                        }
                        ast::AssignmentValue::Array(vs) => {
                            for (k, v) in vs {
                                if let Some(k) = k {
                                    self.word(&k.value, depth);
                                }
                                self.word(&v.value, depth);
                            }
                        }
                    }
                    if let ast::AssignmentName::ArrayElementName(_, idx) = &a.name {
                        self.arith(idx, depth);
                    }
                    if !is_prefix {
                        // `declare a=(x y)`: an argument of the command.
                        let wd = Wd {
                            text: w.value.clone(),
                            is_static: false,
                        };
                        words.push(wd);
                    }
                }
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    self.compound_list(&sub.list, depth);
                    if !is_prefix {
                        words.push(Wd {
                            text: "<(...)".to_string(),
                            is_static: false,
                        });
                    }
                }
            }
        }
        if !name_done {
            if let Some(w) = &sc.word_or_name {
                let wd = self.word(&w.value, depth);
                words.push(wd);
            }
        }
        if words.is_empty() {
            return; // assignments and/or redirections only
        }
        if timed {
            let mut tw = vec![Wd {
                text: "time".to_string(),
                is_static: true,
            }];
            tw.extend(words.iter().cloned());
            self.push(join(&tw), None, None);
        }
        self.words_command(&words, depth);
    }

    /// Emit the subject for a command given as analyzed words, then unwrap wrappers / shells.
    fn words_command(&mut self, words: &[Wd], depth: usize) {
        let Some(first) = words.first() else {
            return;
        };
        if depth > MAX_DEPTH {
            self.parse_error(&join(words), "nesting too deep".to_string());
            return;
        }
        let rest_text = join(&words[1..]);
        let with = |name: &str| {
            if rest_text.is_empty() {
                name.to_string()
            } else {
                format!("{name} {rest_text}")
            }
        };
        if !first.is_static {
            self.push(join(words), None, Some(Opaque::DynamicCommandWord));
            return;
        }
        let name = basename(&first.text).to_string();
        let text = with(&name);
        let path_form = (first.text.contains('/')).then(|| with(&first.text));
        let idx = self.out.commands.len();
        self.push(text, path_form, None);
        let set_opaque = |x: &mut Self, o: Opaque| {
            if let Some(c) = x.out.commands.get_mut(idx) {
                c.opaque = Some(o);
            }
        };
        let args = &words[1..];
        let d = depth + 1;
        match name.as_str() {
            "eval" => set_opaque(self, Opaque::Eval),
            "sudo" | "doas" => {
                let i = skip_options(
                    words,
                    1,
                    "ugpCUrtDTRhaC",
                    &[
                        "user",
                        "group",
                        "prompt",
                        "close-from",
                        "chdir",
                        "role",
                        "type",
                        "host",
                        "other-user",
                        "command-timeout",
                        "chroot",
                    ],
                );
                let i = skip_assignments(words, i);
                self.words_command(words.get(i..).unwrap_or(&[]), d);
            }
            "env" => {
                let mut i = 1;
                while let Some(w) = words.get(i) {
                    let t = w.text.as_str();
                    // env -S STRING / --split-string=STRING: the string is split into a command.
                    let split = if let Some(v) = t.strip_prefix("--split-string=") {
                        Some(Some(v.to_string()))
                    } else if t == "--split-string" {
                        Some(
                            words
                                .get(i + 1)
                                .filter(|w| w.is_static)
                                .map(|w| w.text.clone()),
                        )
                    } else if w.is_static && t.starts_with('-') && !t.starts_with("--") {
                        t.find('S').map(|k| {
                            let attached = &t[k + 1..];
                            if attached.is_empty() {
                                words
                                    .get(i + 1)
                                    .filter(|w| w.is_static)
                                    .map(|w| w.text.clone())
                            } else {
                                Some(attached.to_string())
                            }
                        })
                    } else {
                        None
                    };
                    if let Some(script) = split {
                        let next = if t.starts_with("--split-string=")
                            || t.len() > t.find('S').map_or(t.len(), |k| k + 1)
                        {
                            i + 1
                        } else {
                            i + 2
                        };
                        let tail_static = words.iter().skip(next).all(|w| w.is_static);
                        match script {
                            Some(s) if tail_static => {
                                let full = std::iter::once(s)
                                    .chain(words.iter().skip(next).map(|w| w.text.clone()))
                                    .collect::<Vec<_>>()
                                    .join(" ");
                                self.script(&full, d);
                            }
                            _ => set_opaque(self, Opaque::DynamicScript),
                        }
                        return;
                    }
                    if let Some(j) = skip_one_option(words, i, "uCP", &["unset", "chdir"]) {
                        let dd = t == "--";
                        i = j;
                        if dd {
                            break;
                        }
                        continue;
                    }
                    if w.is_static && is_assignment(t) {
                        i += 1;
                        continue;
                    }
                    break;
                }
                self.words_command(words.get(i..).unwrap_or(&[]), d);
            }
            "command" | "builtin" | "nohup" | "setsid" | "exec" => {
                let i = skip_options(words, 1, if name == "exec" { "a" } else { "" }, &[]);
                self.words_command(words.get(i..).unwrap_or(&[]), d);
            }
            "nice" => {
                let i = skip_options(words, 1, "n", &["adjustment"]);
                self.words_command(words.get(i..).unwrap_or(&[]), d);
            }
            "ionice" => {
                let i = skip_options(
                    words,
                    1,
                    "cnpPu",
                    &["class", "classdata", "pid", "pgid", "uid"],
                );
                self.words_command(words.get(i..).unwrap_or(&[]), d);
            }
            "timeout" => {
                let i = skip_options(words, 1, "sk", &["signal", "kill-after"]);
                // then the duration
                self.words_command(words.get(i + 1..).unwrap_or(&[]), d);
            }
            "time" => {
                let i = skip_options(words, 1, "fo", &["format", "output"]);
                self.words_command(words.get(i..).unwrap_or(&[]), d);
            }
            "stdbuf" => {
                let i = skip_options(words, 1, "ioe", &["input", "output", "error"]);
                self.words_command(words.get(i..).unwrap_or(&[]), d);
            }
            "xargs" => {
                let i = skip_options(
                    words,
                    1,
                    "InLPsdEa",
                    &[
                        "max-args",
                        "max-lines",
                        "max-procs",
                        "max-chars",
                        "delimiter",
                        "arg-file",
                        "process-slot-var",
                        "eof",
                        "replace",
                    ],
                );
                self.words_command(words.get(i..).unwrap_or(&[]), d);
            }
            "watch" => {
                let exec = args.iter().take_while(|w| w.text != "--").any(|w| {
                    w.is_static
                        && (w.text == "--exec"
                            || (w.text.starts_with('-')
                                && !w.text.starts_with("--")
                                && w.text.contains('x')))
                });
                let i = skip_options(words, 1, "nq", &["interval", "equexit"]);
                let rest = words.get(i..).unwrap_or(&[]);
                if exec || !rest.iter().all(|w| w.is_static) {
                    self.words_command(rest, d);
                } else if !rest.is_empty() {
                    let script = rest.iter().map(|w| w.text.as_str()).collect::<Vec<_>>();
                    self.script(&script.join(" "), d);
                }
            }
            "find" => {
                let mut i = 1;
                while i < words.len() {
                    let t = words.get(i).map(|w| w.text.as_str()).unwrap_or("");
                    if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
                        let start = i + 1;
                        let mut end = start;
                        while let Some(w) = words.get(end) {
                            if w.text == ";"
                                || (w.text == "+"
                                    && end > start
                                    && words.get(end - 1).is_some_and(|p| p.text == "{}"))
                            {
                                break;
                            }
                            end += 1;
                        }
                        self.words_command(words.get(start..end).unwrap_or(&[]), d);
                        i = end + 1;
                    } else {
                        i += 1;
                    }
                }
            }
            _ if SHELLS.contains(&name.as_str()) => self.shell(&name, args, idx, d),
            _ => {
                if let Some(o) = interpreter_opaque(&name, args) {
                    set_opaque(self, o);
                }
            }
        }
    }

    /// `bash [options] [-c STR | script | (stdin)]`.
    fn shell(&mut self, name: &str, args: &[Wd], idx: usize, depth: usize) {
        let mut args = args;
        if name == "busybox" {
            // `busybox sh -c ...`: the applet name comes first.
            match args.first() {
                Some(a) if a.is_static && SHELLS.contains(&a.text.as_str()) => args = &args[1..],
                _ => return,
            }
        }
        let mut i = 0;
        let mut dash_c = false;
        let mut stdin = false;
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            if !w.is_static {
                break;
            }
            if t == "--" || t == "-" {
                i += 1;
                break;
            }
            if let Some(long) = t.strip_prefix("--") {
                i += 1;
                if matches!(long, "rcfile" | "init-file") {
                    i += 1;
                }
                if long == "command" {
                    dash_c = true; // fish
                }
                continue;
            }
            if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
                i += 1;
                let letters = &t[1..];
                if letters.contains('c') {
                    dash_c = true;
                }
                if letters.contains('s') {
                    stdin = true;
                }
                // -o NAME / -O NAME take a value
                for c in letters.chars() {
                    if c == 'o' || c == 'O' {
                        i += 1;
                    }
                }
                continue;
            }
            break;
        }
        let set = |x: &mut Self, o: Opaque| {
            if let Some(c) = x.out.commands.get_mut(idx) {
                c.opaque = Some(o);
            }
        };
        if dash_c {
            match args.get(i) {
                Some(s) if s.is_static => {
                    let script = s.text.clone();
                    self.script(&script, depth);
                }
                _ => set(self, Opaque::DynamicScript),
            }
        } else if stdin || args.get(i).is_none() {
            let info_only = args
                .iter()
                .any(|w| matches!(w.text.as_str(), "--version" | "--help"));
            if !info_only {
                set(self, Opaque::StdinScript);
            }
        }
    }
}

/// Opaque reason for an interpreter invocation, if any.
fn interpreter_opaque(name: &str, args: &[Wd]) -> Option<Opaque> {
    let lname = name.to_ascii_lowercase();
    let lname = lname.strip_suffix(".exe").unwrap_or(&lname);
    let short_opts = || {
        args.iter()
            .take_while(|w| w.text != "--")
            .filter(|w| w.text.starts_with('-') && !w.text.starts_with("--") && w.text.len() > 1)
            .map(|w| w.text.as_str())
    };
    let has_long = |l: &[&str]| {
        args.iter().any(|w| {
            l.iter()
                .any(|o| w.text == *o || w.text.starts_with(&format!("{o}=")))
        })
    };
    let stdin = args.is_empty() || args.iter().any(|w| w.text == "-");
    let (inline, kind_known) = if lname.starts_with("python") || lname == "pypy" || lname == "pypy3"
    {
        (short_opts().any(|o| o.contains('c')), true)
    } else if matches!(lname, "node" | "nodejs" | "bun") {
        (
            short_opts().any(|o| o.contains('e') || o.contains('p'))
                || has_long(&["--eval", "--print"]),
            true,
        )
    } else if lname == "perl" || lname == "ruby" {
        (
            short_opts().any(|o| o.contains('e') || o.contains('E')),
            true,
        )
    } else if lname == "php" {
        (
            short_opts().any(|o| o.contains('r')) || has_long(&["--run"]),
            true,
        )
    } else if lname == "lua" || lname == "luajit" {
        (short_opts().any(|o| o.contains('e')), true)
    } else if lname == "osascript" {
        (short_opts().any(|o| o.contains('e')), true)
    } else if lname == "pwsh" || lname == "powershell" {
        let inline = args.iter().any(|w| {
            let t = w.text.to_ascii_lowercase();
            let t = t.trim_start_matches('/');
            let t = t.trim_start_matches('-');
            !t.is_empty()
                && w.text.starts_with(['-', '/'])
                && ("command".starts_with(t) || "encodedcommand".starts_with(t) || t == "ec")
        });
        (inline, true)
    } else if lname == "deno" {
        (args.first().is_some_and(|w| w.text == "eval"), false)
    } else {
        (false, false)
    };
    if inline {
        Some(Opaque::InlineCode)
    } else if kind_known && stdin {
        Some(Opaque::StdinScript)
    } else {
        None
    }
}

fn join(words: &[Wd]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(s: &str) -> Vec<String> {
        extract(s).commands.into_iter().map(|c| c.text).collect()
    }

    fn find(s: &str, text: &str) -> ShellCommand {
        let subjects = extract(s);
        match subjects.commands.iter().find(|c| c.text == text) {
            Some(c) => c.clone(),
            None => panic!("{s:?}: no subject {text:?} in {:?}", subjects.commands),
        }
    }

    fn has(s: &str, text: &str) {
        find(s, text);
    }

    fn opaque(s: &str, text: &str, o: Opaque) {
        assert_eq!(find(s, text).opaque, Some(o), "{s:?}");
    }

    fn any_opaque(s: &str, o: Opaque) {
        let subjects = extract(s);
        assert!(
            subjects
                .commands
                .iter()
                .any(|c| c.opaque.as_ref() == Some(&o)),
            "{s:?}: expected {o:?} in {:?}",
            subjects.commands
        );
    }

    fn writes(s: &str) -> Vec<(String, Option<Opaque>)> {
        extract(s)
            .redirects
            .into_iter()
            .filter(|r| r.kind == RedirectKind::Write)
            .map(|r| (r.path, r.opaque))
            .collect()
    }

    fn no_opaque(s: &str) {
        let subjects = extract(s);
        assert!(
            subjects.commands.iter().all(|c| c.opaque.is_none()),
            "{s:?}: {:?}",
            subjects.commands
        );
    }

    // ---- lists, pipelines, compound commands ----

    #[test]
    fn lists_and_pipelines() {
        for sep in [" && ", "; ", " || ", " | ", " & ", "\n"] {
            let s = format!("git status{sep}rm -rf build");
            assert_eq!(texts(&s), vec!["git status", "rm -rf build"], "{s:?}");
        }
        assert_eq!(texts("git log | head"), vec!["git log", "head"]);
    }

    #[test]
    fn compound_commands() {
        has("{ rm x; }", "rm x");
        has("( rm x )", "rm x");
        has("if true; then rm x; fi", "rm x");
        has("if rm c; then a; elif rm d; then b; else rm e; fi", "rm c");
        has("if rm c; then a; elif rm d; then b; else rm e; fi", "rm d");
        has("if rm c; then a; elif rm d; then b; else rm e; fi", "rm e");
        has("for f in a; do rm $f; done", "rm $f");
        has("for f in $(rm list); do :; done", "rm list");
        has("while rm w; do rm b; done", "rm w");
        has("while rm w; do rm b; done", "rm b");
        has("until rm u; do :; done", "rm u");
        has("case $(rm v) in a) rm x;; *) rm y;; esac", "rm v");
        has("case a in a) rm x;; *) rm y;; esac", "rm y");
        has("f() { rm x; }", "rm x");
        has("function f { rm x; }", "rm x");
        has("for ((i=0; i<$(rm n); i++)); do rm z; done", "rm n");
        has("for ((i=0; i<3; i++)); do rm z; done", "rm z");
        has("(( x = $(rm a) ))", "rm a");
        has("[[ -f $(rm t) ]]", "rm t");
        has("coproc rm x", "rm x");
        has("! rm x", "rm x");
        has("time rm x", "rm x");
        has("time rm x", "time rm x");
    }

    #[test]
    fn substitutions() {
        has("echo $(rm -rf x)", "rm -rf x");
        has("echo `rm x`", "rm x");
        has("cat <(rm x)", "rm x");
        has("tee >(rm x)", "rm x");
        has("cat < <(rm x)", "rm x");
        has("echo > >(rm x)", "rm x");
        has("echo $(( $(rm x) + 1 ))", "rm x");
        has("echo ${X:-$(rm x)}", "rm x");
        has("echo ${X:=`rm x`}", "rm x");
        has("echo ${X/a/$(rm x)}", "rm x");
        has("echo \"a $(rm x) b\"", "rm x");
        has("echo $(echo $(rm deep))", "rm deep");
        has("X=$(rm x) true", "rm x");
        has("X=$(rm x)", "rm x");
        has("export X=$(rm x)", "rm x");
        has("cat <<EOF\n$(rm x)\nEOF\n", "rm x");
        has("cat <<< \"$(rm x)\"", "rm x");
        has("echo > \"$(rm x)\"", "rm x");
        // a quoted heredoc delimiter disables expansion: nothing runs
        assert_eq!(texts("cat <<'EOF'\n$(rm x)\nEOF\n"), vec!["cat"]);
    }

    #[test]
    fn strings_are_not_commands() {
        assert_eq!(texts("echo \"rm x\""), vec!["echo rm x"]);
        assert_eq!(texts("rmdir x"), vec!["rmdir x"]);
        assert_eq!(texts("git status"), vec!["git status"]);
        assert_eq!(
            texts("[ -f x ] && test -d y"),
            vec!["[ -f x ]", "test -d y"]
        );
        no_opaque("[ -f x ] && test -d y");
        no_opaque("echo \"rm x\"");
    }

    // ---- normalization ----

    #[test]
    fn normalization() {
        for s in [
            "\\rm x",
            "'rm' x",
            "r\"\"m x",
            "\"rm\" x",
            "rm \\\n -rf x",
            "FOO=bar rm x",
        ] {
            let t = texts(s);
            assert_eq!(t.len(), 1, "{s:?}");
            assert!(t[0] == "rm x" || t[0] == "rm -rf x", "{s:?}: {t:?}");
        }
        assert_eq!(texts("rm \\\n -rf x"), vec!["rm -rf x"]);
        let c = find("/bin/rm x", "rm x");
        assert_eq!(c.path_form.as_deref(), Some("/bin/rm x"));
        let c = find("./rm x", "rm x");
        assert_eq!(c.path_form.as_deref(), Some("./rm x"));
        assert_eq!(find("rm x", "rm x").path_form, None);
        assert_eq!(texts("cat $F"), vec!["cat $F"]);
        assert_eq!(texts("cat \"$F\" .e*"), vec!["cat \"$F\" .e*"]);
        assert_eq!(texts("echo 'a  b'"), vec!["echo a  b"]);
        assert_eq!(texts("echo \"a\\\"b\""), vec!["echo a\"b"]);
    }

    #[test]
    fn dynamic_command_word() {
        opaque("$CMD x", "$CMD x", Opaque::DynamicCommandWord);
        opaque("$(which rm) x", "$(which rm) x", Opaque::DynamicCommandWord);
        has("$(which rm) x", "which rm");
        opaque("r{m,} x", "r{m,} x", Opaque::DynamicCommandWord);
        opaque("r? x", "r? x", Opaque::DynamicCommandWord);
        opaque("$'\\x72m' x", "$'\\x72m' x", Opaque::DynamicCommandWord);
        opaque("~/bin/rm x", "~/bin/rm x", Opaque::DynamicCommandWord);
    }

    // ---- wrappers ----

    #[test]
    fn wrappers() {
        let cases: &[(&str, &str)] = &[
            ("sudo rm -rf /", "rm -rf /"),
            ("sudo -u root rm x", "rm x"),
            ("sudo -uroot -E rm x", "rm x"),
            ("sudo --user=root rm x", "rm x"),
            ("sudo FOO=1 rm x", "rm x"),
            ("env X=1 rm x", "rm x"),
            ("env -u X rm x", "rm x"),
            ("env -i X=1 Y=2 rm x", "rm x"),
            ("env -S 'rm x'", "rm x"),
            ("env -- rm x", "rm x"),
            ("command rm x", "rm x"),
            ("command -p rm x", "rm x"),
            ("builtin eval x", "eval x"),
            ("exec rm x", "rm x"),
            ("exec -a name rm x", "rm x"),
            ("nohup rm x", "rm x"),
            ("nice rm x", "rm x"),
            ("nice -n 10 rm x", "rm x"),
            ("nice -10 rm x", "rm x"),
            ("ionice -c 2 -n 7 rm x", "rm x"),
            ("timeout 5 rm x", "rm x"),
            ("timeout -s KILL 5 rm x", "rm x"),
            ("timeout --signal=KILL -k 1 5s rm x", "rm x"),
            ("/usr/bin/time -f %e rm x", "rm x"),
            ("stdbuf -o0 rm x", "rm x"),
            ("stdbuf -o 0 -e L rm x", "rm x"),
            ("setsid rm x", "rm x"),
            ("watch rm x", "rm x"),
            ("watch -n 1 rm x", "rm x"),
            ("watch -n 1 'ls; rm x'", "rm x"),
            ("watch -x rm x", "rm x"),
            ("xargs rm < list", "rm"),
            ("xargs -I {} -n 1 rm {}", "rm {}"),
            ("xargs -0 -P4 rm", "rm"),
            ("find . -name x -exec rm {} \\;", "rm {}"),
            ("find . -execdir rm -f {} +", "rm -f {}"),
            ("find . -ok rm {} ';' -print", "rm {}"),
            ("sudo timeout 5 nice -n 1 env A=b rm x", "rm x"),
            ("sudo /bin/rm x", "rm x"),
        ];
        for (s, want) in cases {
            has(s, want);
        }
        assert_eq!(texts("sudo rm -rf /"), vec!["sudo rm -rf /", "rm -rf /"]);
        assert_eq!(
            texts("sudo timeout 5 rm x"),
            vec!["sudo timeout 5 rm x", "timeout 5 rm x", "rm x"]
        );
        assert_eq!(
            find("sudo /bin/rm x", "rm x").path_form.as_deref(),
            Some("/bin/rm x")
        );
        opaque("sudo $CMD", "$CMD", Opaque::DynamicCommandWord);
    }

    // ---- shells and interpreters ----

    #[test]
    fn shell_dash_c() {
        for s in [
            "bash -c 'rm -rf x'",
            "sh -c 'rm -rf x'",
            "zsh -c 'rm -rf x'",
            "dash -c 'rm -rf x'",
            "ksh -c 'rm -rf x'",
            "bash -lc 'rm -rf x'",
            "bash -ec 'rm -rf x'",
            "bash -o pipefail -c 'rm -rf x'",
            "/bin/bash --norc -c 'rm -rf x'",
            "sudo sh -c 'cd /; rm -rf x'",
            "bash -c 'bash -c \"rm -rf x\"'",
        ] {
            has(s, "rm -rf x");
            no_opaque(s);
        }
        has("sh -lc \"rm x\"", "rm x");
        has("bash -c 'rm x'", "bash -c rm x");
        opaque("bash -c \"$S\"", "bash -c \"$S\"", Opaque::DynamicScript);
        opaque(
            "bash -c \"rm $X\"",
            "bash -c \"rm $X\"",
            Opaque::DynamicScript,
        );
        opaque("curl x | bash", "bash", Opaque::StdinScript);
        opaque("bash < x", "bash", Opaque::StdinScript);
        opaque("bash <<EOF\nrm x\nEOF\n", "bash", Opaque::StdinScript);
        opaque("bash -s arg", "bash -s arg", Opaque::StdinScript);
        any_parse_error("bash -c 'rm (('");
        // running a script file is not opaque
        no_opaque("bash script.sh");
    }

    fn any_parse_error(s: &str) {
        let subjects = extract(s);
        assert!(
            subjects
                .commands
                .iter()
                .any(|c| matches!(c.opaque, Some(Opaque::ParseError(_)))),
            "{s:?}: expected a parse error in {:?}",
            subjects.commands
        );
    }

    #[test]
    fn interpreters_and_eval() {
        opaque("eval \"rm x\"", "eval rm x", Opaque::Eval);
        opaque(
            "python3 -c 'import os'",
            "python3 -c import os",
            Opaque::InlineCode,
        );
        opaque("python -c x", "python -c x", Opaque::InlineCode);
        opaque("node -e x", "node -e x", Opaque::InlineCode);
        opaque("node -p x", "node -p x", Opaque::InlineCode);
        opaque("node --eval x", "node --eval x", Opaque::InlineCode);
        opaque("perl -e x", "perl -e x", Opaque::InlineCode);
        opaque("perl -E x", "perl -E x", Opaque::InlineCode);
        opaque("perl -ne x", "perl -ne x", Opaque::InlineCode);
        opaque("ruby -e x", "ruby -e x", Opaque::InlineCode);
        opaque("php -r x", "php -r x", Opaque::InlineCode);
        opaque("lua -e x", "lua -e x", Opaque::InlineCode);
        opaque("pwsh -c x", "pwsh -c x", Opaque::InlineCode);
        opaque(
            "powershell -Command x",
            "powershell -Command x",
            Opaque::InlineCode,
        );
        opaque("osascript -e x", "osascript -e x", Opaque::InlineCode);
        opaque("deno eval x", "deno eval x", Opaque::InlineCode);
        opaque("sudo python3 -c x", "python3 -c x", Opaque::InlineCode);
        opaque("curl x | python3", "python3", Opaque::StdinScript);
        no_opaque("python3 script.py");
        no_opaque("node app.js");
        no_opaque("python3 -m pytest");
    }

    #[test]
    fn parse_error_and_empty() {
        let s = extract("  echo (  ");
        assert_eq!(s.commands.len(), 1);
        assert_eq!(s.commands[0].text, "echo (");
        assert!(matches!(s.commands[0].opaque, Some(Opaque::ParseError(_))));
        for e in ["", "   ", "# just a comment", "\n\n"] {
            let s = extract(e);
            assert_eq!(
                s.commands,
                vec![ShellCommand {
                    text: String::new(),
                    path_form: None,
                    opaque: Some(Opaque::Empty)
                }],
                "{e:?}"
            );
        }
        any_parse_error("echo 'unterminated");
        assert!(!Opaque::DynamicCommandWord.describe().is_empty());
    }

    // ---- redirections ----

    #[test]
    fn redirects() {
        assert_eq!(
            writes("echo secret > .env"),
            vec![(".env".to_string(), None)]
        );
        assert_eq!(
            writes("cat x >> config/prod.env"),
            vec![("config/prod.env".to_string(), None)]
        );
        for s in [
            "echo >| a",
            "echo &> a",
            "echo &>> a",
            "echo <> a",
            "echo >& a",
            "echo 2> a",
            "echo > 'a'",
        ] {
            assert_eq!(writes(s), vec![("a".to_string(), None)], "{s:?}");
        }
        let r = extract("cat < in.txt").redirects;
        assert_eq!(
            r,
            vec![ShellRedirect {
                kind: RedirectKind::Read,
                path: "in.txt".into(),
                opaque: None
            }]
        );
        for s in [
            "echo 2>&1",
            "echo >&2",
            "echo > /dev/null 2>&1",
            "echo 2>/dev/stderr >/dev/stdout",
            "echo <&0 3>&-",
            "cat <<EOF\nx\nEOF\n",
            "cat <<< x",
        ] {
            assert!(extract(s).redirects.is_empty(), "{s:?}");
        }
        assert_eq!(
            writes("echo > $F"),
            vec![("$F".to_string(), Some(Opaque::DynamicPath))]
        );
        assert_eq!(
            writes("echo > *.env"),
            vec![("*.env".to_string(), Some(Opaque::DynamicPath))]
        );
        assert_eq!(
            writes("echo > ~/.ssh/authorized_keys"),
            vec![(
                "~/.ssh/authorized_keys".to_string(),
                Some(Opaque::DynamicPath)
            )]
        );
        assert_eq!(writes("{ echo a; } > f"), vec![("f".to_string(), None)]);
        assert_eq!(writes("( echo a ) >> f"), vec![("f".to_string(), None)]);
        assert_eq!(writes("f() { :; } > f"), vec![("f".to_string(), None)]);
        assert_eq!(
            writes("for i in a; do :; done > f"),
            vec![("f".to_string(), None)]
        );
        assert_eq!(
            writes("echo $(echo a > .env)"),
            vec![(".env".to_string(), None)]
        );
        assert_eq!(
            writes("bash -c 'echo a > .env'"),
            vec![(".env".to_string(), None)]
        );
        // redirection only: a subject, no command
        let s = extract("> .env");
        assert!(s.commands.is_empty());
        assert_eq!(s.redirects.len(), 1);
    }

    // ---- the bypass table of permissions.md, at extraction level ----

    fn has_rm(s: &str) {
        let subjects = extract(s);
        assert!(
            subjects
                .commands
                .iter()
                .any(|c| c.text == "rm" || c.text.starts_with("rm ")),
            "{s:?}: no rm subject in {:?}",
            subjects.commands
        );
    }

    #[test]
    fn bypass_table() {
        for s in [
            "git status && rm -rf build",
            "git status ; rm -rf build",
            "git status || rm -rf build",
            "git status | rm -rf build",
            "git status & rm -rf build",
            "git status\nrm -rf build",
            "echo $(rm -rf x)",
            "echo `rm x`",
            "cat <(rm x)",
            "{ rm x; }",
            "( rm x )",
            "if true; then rm x; fi",
            "for f in a; do rm $f; done",
            "bash -c 'rm -rf x'",
            "sh -lc \"rm x\"",
            "sudo rm -rf /",
            "env X=1 rm x",
            "timeout 5 rm x",
            "FOO=bar rm x",
            "xargs rm < list",
            "/bin/rm x",
            "\\rm x",
            "'rm' x",
            "r\"\"m x",
            "rm \\\n-rf x",
            "nice rm x",
            "nohup rm x",
            "command rm x",
            "./rm x",
            "$(( $(rm x) ))",
        ] {
            has_rm(s);
        }
        assert!(writes("echo secret > .env")
            .iter()
            .any(|(p, _)| p == ".env"));
        assert!(writes("cat x >> config/prod.env")
            .iter()
            .any(|(p, _)| p.ends_with(".env")));
        any_opaque("eval \"rm x\"", Opaque::Eval);
        any_opaque("$CMD x", Opaque::DynamicCommandWord);
        // must stay allowed (no rm, no opaque)
        for s in ["git status", "git log | head", "rmdir x", "echo \"rm x\""] {
            no_opaque(s);
            let t = texts(s);
            assert!(
                t.iter().all(|c| c != "rm" && !c.starts_with("rm ")),
                "{s:?}: {t:?}"
            );
        }
        assert_eq!(texts("git log | head"), vec!["git log", "head"]);
    }

    // ---- property tests ----

    fn arg() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9_./-]{1,12}".prop_filter("not an option-like or special word", |s| {
            !s.starts_with('-') && s != "." && s != ".."
        })
    }

    fn other() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "git status",
            "ls -la",
            "echo hi",
            "cat file.txt",
            "true",
            "make build",
        ])
        .prop_map(str::to_string)
    }

    fn combine(rm: &str, other: &str, how: usize) -> String {
        match how {
            0 => format!("{other}; {rm}"),
            1 => format!("{other} && {rm}"),
            2 => format!("{other} || {rm}"),
            3 => format!("{other} | {rm}"),
            4 => format!("{other} & {rm}"),
            5 => format!("{other}\n{rm}"),
            6 => format!("{rm} && {other}"),
            7 => format!("( {rm} )"),
            8 => format!("{{ {rm}; }}"),
            9 => format!("echo $({rm})"),
            10 => format!("bash -c '{rm}'"),
            11 => format!("sudo {rm}"),
            12 => format!("env {rm}"),
            13 => format!("timeout 5 {rm}"),
            14 => format!("{other} | sudo env timeout 5 {rm}"),
            _ => format!("{other}; ( {{ echo $(bash -c '{rm}'); }} )"),
        }
    }

    proptest! {
        #[test]
        fn rm_is_always_a_subject(a in arg(), o in other(), how in 0usize..16) {
            let rm = format!("rm {a}");
            let s = combine(&rm, &o, how);
            let t = texts(&s);
            prop_assert!(t.contains(&rm), "{:?}: {:?}", s, t);
        }

        #[test]
        fn never_panics(s in "\\PC{0,80}") {
            let _ = extract(&s);
        }

        #[test]
        fn never_panics_shellish(s in "[a-z $(){}`'\"\\\\;&|<>=*?\\[\\]#~!\n-]{0,60}") {
            let _ = extract(&s);
        }
    }

    /// `extract` on another thread; fails instead of hanging the test run.
    fn extract_within(s: &str, limit: std::time::Duration) -> ShellSubjects {
        let (tx, rx) = std::sync::mpsc::channel();
        let owned = s.to_string();
        std::thread::spawn(move || {
            let _ = tx.send(extract(&owned));
        });
        rx.recv_timeout(limit)
            .unwrap_or_else(|_| panic!("extract({s:?}) did not return within {limit:?}"))
    }

    /// Regression (found by the `shell` fuzz target): brush-parser's tokenizer looped forever,
    /// growing memory, on a here-doc with an empty delimiter followed by a comment at the end.
    #[test]
    fn empty_heredoc_delimiter_then_comment_does_not_hang() {
        let limit = std::time::Duration::from_secs(5);
        for s in [
            "''<<''&#mfe",
            "cat <<'' #x",
            "cat <<\"\" #x",
            "cat <<-'' #x",
            "cat <<'''' #x",
            "bash -c \"cat <<'' #x\"",
        ] {
            let e = extract_within(s, limit);
            assert!(!e.commands.is_empty(), "{s:?}: {e:?}");
        }
        let e = extract_within("cat <<'' #x", limit);
        assert!(
            e.commands.iter().any(|c| c.text.starts_with("cat")),
            "{e:?}"
        );
    }

    /// Regression (found by the `shell` fuzz target): unclosed `(` runs made brush-parser
    /// backtrack exponentially; 36 bytes took over 10 s. Now a parse error, at once.
    #[test]
    fn unclosed_paren_runs_do_not_hang_the_parser() {
        let started = std::time::Instant::now();
        let fuzz_case = "((((0((((((0(((((\0(((({(\0(((({";
        for s in [
            fuzz_case.to_string(),
            "(".repeat(40) + "0",
            "echo x; ".to_string() + &"(".repeat(30),
        ] {
            let e = extract(&s);
            assert!(
                e.commands
                    .iter()
                    .any(|c| matches!(c.opaque, Some(Opaque::ParseError(_)))),
                "{s:?}: {e:?}"
            );
        }
        // Twelve levels still parse (and quickly).
        let nested = extract(&format!("{}ls x{}", "(ls y;".repeat(12), ")".repeat(12)));
        assert!(
            nested
                .commands
                .iter()
                .any(|c| c.text == "ls x" && c.opaque.is_none()),
            "{nested:?}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let s = "$(".repeat(500) + &")".repeat(500);
        any_opaque(&s, Opaque::ParseError("nesting too deep".into()));
        let s = "(".repeat(2000);
        let e = extract(&s);
        assert!(matches!(e.commands[0].opaque, Some(Opaque::ParseError(_))));
    }
}
