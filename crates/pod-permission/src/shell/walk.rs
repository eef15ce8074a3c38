//! The walk from a parsed command line to its subjects.
//!
//! Owns: visiting every node of a [`Script`] in execution order, analyzing words (their value
//! when static; whether the model can choose it; the constructs bash would evaluate as code),
//! building one subject per simple command (prefix assignments kept unless harmless, the
//! command word reduced to its basename), following wrappers and `-c` scripts through
//! [`programs`], and turning redirections into `read`/`file_write` subjects, opaque when an
//! earlier command of the line may have changed what their path names.
//!
//! Must not: match rules, decide, or do I/O.

use std::collections::HashSet;

use super::parse::{self, is_name, Budget, Dialect, MAX_DEPTH};
use super::programs::{self, dangerous_variable, harmless_variable, FileArg, Inner, Input, Write};
use super::syntax::*;
use super::{Opaque, RedirectKind, ShellCommand, ShellRedirect, ShellSubjects};

/// How many argument positions of one command deny rules are tried from.
pub const MAX_SUFFIXES: usize = 128;
/// How many distinct subjects one command line may list; past it the line is opaque (a decision
/// naming 100,000 commands is no explanation, and each costs matching and protocol bytes).
pub const MAX_SUBJECTS: usize = 4096;
/// How deep arguments read as command lines are followed.
const MAX_GUESS_DEPTH: usize = 2;

/// Variables bash itself sets while the line runs (or from what the line did).
fn set_by_bash(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "_",
        "PWD",
        "OLDPWD",
        "REPLY",
        "OPTARG",
        "OPTIND",
        "MAPFILE",
        "FUNCNAME",
        "DIRSTACK",
        "PIPESTATUS",
        "HISTCMD",
        "GROUPS",
    ];
    EXACT.contains(&name)
        || name.starts_with("BASH_")
        || name.starts_with("COMP_")
        || name.starts_with("READLINE_")
}

/// A word after analysis.
#[derive(Debug, Clone)]
pub(super) struct Wd {
    /// The value when static; the source text otherwise.
    pub text: String,
    /// No expansion, glob, brace or tilde: `text` is exactly what the program gets.
    pub is_static: bool,
    /// Not static, but only from the pod's own environment (variables the line does not set).
    pub trusted: bool,
    /// Holds an unquoted glob or brace expansion.
    pub glob: bool,
    /// Its value may start with `-`.
    pub may_start_dash: bool,
    /// Word splitting or globbing may turn it into several words, or none.
    pub splits: bool,
    /// A declaration builtin's `NAME=(...)`, whose elements were checked as an assignment.
    pub array_literal: bool,
    /// Holds a construct bash may evaluate as code.
    pub opaque: Option<Opaque>,
    /// The static text before the first expansion.
    prefix: String,
    /// The literal text holds a `/` (a glob then names paths, never a bare command).
    has_slash: bool,
    /// Not written on the command line: the arguments `xargs` reads and appends. Analyzed with
    /// the command, never part of its subject's text.
    pub hidden: bool,
    /// The word is plain unquoted text whose only expansion is a glob (`*.py`): the pattern,
    /// so a program can tell which names it can expand to.
    pub glob_pattern: Option<String>,
}

impl Wd {
    #[cfg(test)]
    fn literal(text: &str) -> Wd {
        Wd {
            text: text.to_string(),
            is_static: true,
            trusted: true,
            glob: false,
            may_start_dash: text.starts_with('-'),
            splits: false,
            array_literal: false,
            opaque: None,
            prefix: text.to_string(),
            has_slash: text.contains('/'),
            hidden: false,
            glob_pattern: None,
        }
    }

    /// A word the engine supplies itself (`git-push` is `git push`): static text.
    pub fn synthetic(text: &str) -> Wd {
        Wd {
            text: text.to_string(),
            is_static: true,
            trusted: false,
            glob: false,
            may_start_dash: text.starts_with('-'),
            splits: false,
            array_literal: false,
            opaque: None,
            prefix: text.to_string(),
            has_slash: text.contains('/'),
            hidden: false,
            glob_pattern: None,
        }
    }

    /// What `xargs` appends to its command: words it reads, chosen by the model, any number of
    /// them, options included.
    pub fn input(what: &str) -> Wd {
        Wd {
            text: what.to_string(),
            is_static: false,
            trusted: false,
            glob: false,
            may_start_dash: true,
            splits: true,
            array_literal: false,
            opaque: None,
            prefix: String::new(),
            has_slash: false,
            hidden: true,
            glob_pattern: None,
        }
    }

    /// This word with what `xargs -I` puts in place of its replace string: chosen by the model
    /// (one argument, which may start with `-`).
    pub fn replaced(&self) -> Wd {
        Wd {
            is_static: false,
            trusted: false,
            may_start_dash: true,
            glob_pattern: None,
            ..self.clone()
        }
    }

    /// The static text, if the word is static.
    pub fn lit(&self) -> Option<&str> {
        self.is_static.then_some(self.text.as_str())
    }

    /// The model can choose its value at run time (a substitution, a variable the line sets, a
    /// positional parameter, a glob).
    pub fn model_chosen(&self) -> bool {
        !self.is_static && !self.trusted
    }

    /// A glob naming paths (it holds a `/`), with nothing else computed.
    pub fn path_glob(&self) -> bool {
        self.glob && self.has_slash && self.opaque.is_none()
    }

    /// The static text before the first expansion (all of it for a static word).
    pub fn static_prefix(&self) -> &str {
        if self.is_static {
            &self.text
        } else {
            &self.prefix
        }
    }
}

/// `/bin/rm` -> `rm`.
pub(super) fn basename(s: &str) -> &str {
    match s.rsplit('/').next() {
        Some(b) if !b.is_empty() => b,
        _ => s,
    }
}

/// A subscript that is a plain number (or `@`/`*`): evaluating it runs nothing.
pub(super) fn numeric_subscript(s: &str) -> bool {
    let t = s.trim();
    matches!(t, "@" | "*") || numeric(t)
}

fn numeric(s: &str) -> bool {
    let t = s.trim();
    let t = t.strip_prefix('-').unwrap_or(t).trim();
    !t.is_empty() && t.bytes().all(|byte| byte.is_ascii_digit())
}

/// Whether unquoted text (quoted and expanded characters masked) would be globbed or
/// brace-expanded.
fn has_glob(mask: &str) -> bool {
    if mask.contains(['*', '?']) {
        return true;
    }
    if let Some(open) = mask.find('[') {
        if mask[open + 1..].contains(']') {
            return true;
        }
    }
    if let (Some(open), Some(close)) = (mask.find('{'), mask.rfind('}')) {
        if open < close {
            let inner = &mask[open..close];
            if inner.contains(',') || inner.contains("..") {
                return true;
            }
        }
    }
    false
}

/// Mask character for quoted or computed text in glob detection.
const MASK: char = '\u{1}';

/// A prefix assignment after analysis.
#[derive(Debug, Clone)]
pub(super) struct AssignInfo {
    name: String,
    text: String,
    opaque: Option<Opaque>,
}

impl AssignInfo {
    /// `NAME=value` given as a word (`env NAME=value cmd`).
    fn from_word(w: &Wd) -> AssignInfo {
        let head = w.static_prefix();
        let name = head.split('=').next().unwrap_or("").to_string();
        let opaque = if !w.text.contains('=') || !is_name(&name) {
            Some(Opaque::Code(format!(
                "`{}` is not a plain variable assignment",
                w.text
            )))
        } else if dangerous_variable(&name) {
            Some(dangerous(&name))
        } else {
            w.opaque.clone()
        };
        AssignInfo {
            name,
            text: w.text.clone(),
            opaque,
        }
    }
}

fn dangerous(name: &str) -> Opaque {
    Opaque::Code(format!(
        "`{name}` changes how bash or programs find and run commands"
    ))
}

/// State while analyzing one word.
#[derive(Default)]
struct WordState {
    text: String,
    mask: String,
    is_static: bool,
    trusted: bool,
    opaque: Option<Opaque>,
    /// Whether the first character of the value is known not to be `-`.
    start_known: Option<bool>,
    /// An unquoted expansion: word splitting applies.
    splits: bool,
    array_literal: bool,
    prefix: String,
    prefix_done: bool,
}

impl WordState {
    fn literal(&mut self, s: &str, quoted: bool) {
        if s.is_empty() {
            return;
        }
        if self.start_known.is_none() {
            self.start_known = Some(!s.starts_with('-'));
        }
        self.text.push_str(s);
        if !self.prefix_done {
            self.prefix.push_str(s);
        }
        if quoted {
            self.mask
                .extend(std::iter::repeat_n(MASK, s.chars().count()));
        } else {
            self.mask.push_str(s);
        }
    }

    fn dynamic(&mut self, trusted: bool, starts_with_slash: bool, quoted: bool) {
        self.is_static = false;
        self.splits |= !quoted;
        self.trusted &= trusted;
        self.prefix_done = true;
        if self.start_known.is_none() {
            // Unknown first character, unless the value is a path like `/dev/fd/63`.
            self.start_known = Some(starts_with_slash);
        }
        self.mask.push(MASK);
    }

    fn opaque(&mut self, why: impl Into<String>) {
        if self.opaque.is_none() {
            self.opaque = Some(Opaque::Code(why.into()));
        }
    }
}

pub(super) struct Walk<'b> {
    budget: &'b Budget,
    pub out: ShellSubjects,
    /// Names the line may assign.
    assigned: HashSet<String>,
    /// Names the line may assign something other than a plain integer.
    non_integer: HashSet<String>,
    /// The line runs `source`/`.`/`eval`: any variable may hold anything.
    sources: bool,
    /// A command that may change the working folder or what a path names has been walked.
    changed: bool,
    /// Walking code that may run after later commands of the line (a background job, a
    /// pipeline, a loop, a function body).
    floating: usize,
    /// Redirections walked while `floating`.
    floating_redirects: Vec<usize>,
    /// Walking an argument read as a command line.
    guess: usize,
    /// Folders the command being walked runs in, relative to the line's own (`env -C DIR`),
    /// innermost last; None for one computed at run time.
    cwd: Vec<Option<String>>,
    /// More distinct subjects than [`MAX_SUBJECTS`] were met.
    too_many: bool,
    /// What the walk assumed about names (see [`Walk::assumptions_hold`]).
    assumed: Assumed,
    /// The subjects pushed so far, by hash.
    seen: std::collections::HashMap<u64, Vec<usize>, std::hash::BuildHasherDefault<Fnv>>,
    seen_redirects: std::collections::HashMap<u64, Vec<usize>, std::hash::BuildHasherDefault<Fnv>>,
}

/// Names taken as not assigned, or as only given integers, and whether arithmetic names were
/// taken as safe, while the line was walked item by item.
#[derive(Default)]
struct Assumed {
    trusted: std::cell::RefCell<HashSet<String>>,
    integer: std::cell::RefCell<HashSet<String>>,
    arith_safe: std::cell::Cell<bool>,
}

/// FNV-1a: a fast hash for deduplicating subjects (not exposed to anyone's input ordering).
#[derive(Default)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

impl<'b> Walk<'b> {
    pub fn new(budget: &'b Budget, parsed: &parse::Parsed) -> Walk<'b> {
        let mut walk = Walk::streaming(budget);
        walk.learn(parsed);
        walk
    }

    /// A walk that learns the line's assignments as its items are read.
    pub fn streaming(budget: &'b Budget) -> Walk<'b> {
        Walk {
            budget,
            out: ShellSubjects::default(),
            assigned: HashSet::new(),
            non_integer: HashSet::new(),
            sources: false,
            changed: false,
            floating: 0,
            floating_redirects: Vec::new(),
            guess: 0,
            cwd: Vec::new(),
            seen: Default::default(),
            seen_redirects: Default::default(),
            too_many: false,
            assumed: Assumed::default(),
        }
    }

    /// Takes in what a parsed script assigns.
    fn learn(&mut self, parsed: &parse::Parsed) {
        self.learn_assignments(&parsed.assigned, parsed.sources);
    }

    /// Takes in assignments (and whether the line sources files) as they are read.
    pub fn learn_assignments(&mut self, assigned: &[(String, bool)], sources: bool) {
        for (name, integer) in assigned {
            self.assigned.insert(name.clone());
            if !integer {
                self.non_integer.insert(name.clone());
            }
        }
        self.sources |= sources;
    }

    /// Whether what was assumed of names while walking (that a name is not assigned, only gets
    /// integers, or that the line assigns nothing else) still holds now that the whole line has
    /// been learnt. Walking item by item assumes it; the rare line that breaks it is walked again
    /// whole.
    pub fn assumptions_hold(&self) -> bool {
        let trusted = self.assumed.trusted.borrow();
        let integer = self.assumed.integer.borrow();
        let broken = trusted
            .iter()
            .any(|name| self.assigned.contains(name) || self.sources)
            || integer
                .iter()
                .any(|name| self.non_integer.contains(name) || self.sources)
            || (self.assumed.arith_safe.get() && !self.arith_names_safe_now());
        !broken
    }

    /// A name the line only ever gives plain integers.
    fn integer_name(&self, name: &str) -> bool {
        let yes = self.assigned.contains(name) && !self.non_integer.contains(name);
        if yes {
            self.assumed.integer.borrow_mut().insert(name.to_string());
        }
        yes
    }

    /// Arithmetic evaluates names recursively (a value `a[$(cmd)]` runs cmd, and a value that is
    /// itself a name is evaluated in turn). Names are safe only when nothing the line assigns
    /// can hold such a string: every assignment of the line gives an integer.
    fn arith_names_safe(&self) -> bool {
        let yes = self.arith_names_safe_now();
        if yes {
            self.assumed.arith_safe.set(true);
        }
        yes
    }

    fn arith_names_safe_now(&self) -> bool {
        !self.sources && self.non_integer.is_empty()
    }

    /// Whether arithmetic text and its parts evaluate nothing the model chose.
    fn arith_understood(&self, text: &str, parts: &[Part]) -> bool {
        let pure = text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || b" \t\n+-*/%<>=!&|^~?:,()".contains(&byte));
        if pure {
            return parts.is_empty();
        }
        if text.contains('[') || !self.arith_names_safe() {
            return false;
        }
        let names_ok =
            identifiers(text).all(|name| self.trusted_name(name) || self.integer_name(name));
        names_ok && parts.iter().all(|part| self.arith_part_ok(part))
    }

    fn arith_part_ok(&self, part: &Part) -> bool {
        match part {
            Part::Lit(_) | Part::Quoted(_) => true,
            Part::Param(p) => {
                p.op == ParamOp::Plain
                    && !p.indirect
                    && p.subscript.is_none()
                    && (matches!(p.name.as_str(), "#" | "?" | "$" | "!")
                        || (is_name(&p.name)
                            && (self.trusted_name(&p.name) || self.integer_name(&p.name))))
            }
            Part::Arith(a) => self.arith_understood(&a.text, &a.parts),
            Part::Double { parts, locale } => {
                !locale && parts.iter().all(|part| self.arith_part_ok(part))
            }
            _ => false,
        }
    }

    /// After the walk: redirections that may be opened after a path-changing command are
    /// opaque.
    pub fn finish(&mut self) {
        if self.changed {
            for &i in &self.floating_redirects {
                mark_changed(&mut self.out.redirects[i]);
            }
        }
        if self.too_many || self.out.redirects.len() > MAX_SUBJECTS {
            self.out.redirects.truncate(MAX_SUBJECTS);
            self.out.commands.push(ShellCommand {
                text: format!("(more than {MAX_SUBJECTS} distinct commands)"),
                path_form: None,
                opaque: Some(Opaque::Code(format!(
                    "the line holds more than {MAX_SUBJECTS} distinct commands or files, too many to decide one by one"
                ))),
                also_from: Vec::new(),
                guess: false,
                named: None,
            });
        }
    }

    fn push(&mut self, mut command: ShellCommand) -> usize {
        command.guess = self.guess > 0;
        // A long line repeats itself (`echo a; echo a; ...`): each distinct subject once.
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = Fnv::default();
            command.hash(&mut h);
            h.finish()
        };
        let same = self.seen.get(&key).and_then(|candidates| {
            candidates
                .iter()
                .copied()
                .find(|&i| self.out.commands[i] == command)
        });
        if let Some(i) = same {
            return i;
        }
        if self.out.commands.len() >= MAX_SUBJECTS {
            self.too_many = true;
            return self.out.commands.len() - 1;
        }
        self.out.commands.push(command);
        let i = self.out.commands.len() - 1;
        self.seen.entry(key).or_default().push(i);
        i
    }

    fn push_opaque(&mut self, text: &str, why: Opaque) {
        self.push(ShellCommand {
            text: text.trim().to_string(),
            path_form: None,
            opaque: Some(why),
            also_from: Vec::new(),
            guess: false,
            named: None,
        });
        self.changed = true;
    }

    /// Parses `text` as a script of its own and walks it (`bash -c STR`).
    fn nested(&mut self, text: &str, depth: usize, dialect: Dialect) {
        if depth > MAX_DEPTH {
            self.push_opaque(
                text,
                Opaque::ParseError("the command nests too deeply".into()),
            );
            return;
        }
        match parse::parse(text, self.budget, depth, dialect) {
            Ok(parsed) => {
                self.learn(&parsed);
                self.script(&parsed.script, depth);
            }
            Err(e) => self.push_opaque(text, Opaque::ParseError(e.to_string())),
        }
    }

    pub fn script(&mut self, script: &Script, depth: usize) {
        for item in &script.items {
            self.and_or(item, depth);
        }
    }

    pub fn and_or(&mut self, a: &AndOr, depth: usize) {
        if a.background {
            self.floating += 1;
        }
        for p in &a.pipelines {
            self.pipeline(p, depth);
        }
        if a.background {
            self.floating -= 1;
        }
    }

    fn pipeline(&mut self, p: &Pipeline, depth: usize) {
        let concurrent = p.commands.len() > 1;
        if concurrent {
            self.floating += 1;
        }
        for c in &p.commands {
            self.command(c, depth);
        }
        if concurrent {
            self.floating -= 1;
        }
    }

    fn command(&mut self, c: &Command, depth: usize) {
        match c {
            Command::Simple(s) => self.simple(s, depth),
            Command::Compound(compound, redirects) => {
                for r in redirects {
                    self.redirect(r, depth);
                }
                self.compound(compound, depth);
            }
            Command::Function {
                body, redirects, ..
            } => {
                self.floating += 1;
                for r in redirects {
                    self.redirect(r, depth);
                }
                self.compound(body, depth);
                self.floating -= 1;
            }
        }
    }

    fn compound(&mut self, c: &Compound, depth: usize) {
        let depth = depth + 1;
        match c {
            Compound::Group(s) | Compound::Subshell(s) => self.script(s, depth),
            Compound::AmbiguousSubshell(s) => {
                self.push_opaque(
                    "((",
                    Opaque::Code("`((` read as nested subshells: bash's reading is subtle".into()),
                );
                self.script(s, depth);
            }
            Compound::If {
                branches,
                otherwise,
            } => {
                for (cond, body) in branches {
                    self.script(cond, depth);
                    self.script(body, depth);
                }
                if let Some(o) = otherwise {
                    self.script(o, depth);
                }
            }
            Compound::Loop { cond, body } => {
                self.floating += 1;
                self.script(cond, depth);
                self.script(body, depth);
                self.floating -= 1;
            }
            Compound::For { var, words, body } => {
                for w in words.iter().flatten() {
                    let wd = self.word(w, depth);
                    if let Some(o) = wd.opaque {
                        self.push_opaque(w.src(), o);
                    }
                }
                if dangerous_variable(var) {
                    self.push_opaque(&format!("for {var}"), dangerous(var));
                }
                self.floating += 1;
                self.script(body, depth);
                self.floating -= 1;
            }
            Compound::Case { word, arms } => {
                let wd = self.word(word, depth);
                if let Some(o) = wd.opaque {
                    self.push_opaque(word.src(), o);
                }
                for (patterns, body) in arms {
                    for p in patterns {
                        let wd = self.word(p, depth);
                        if let Some(o) = wd.opaque {
                            self.push_opaque(p.src(), o);
                        }
                    }
                    self.script(body, depth);
                }
            }
            Compound::Cond(tokens) => self.cond(tokens, depth),
            Compound::Arith(a) => {
                if let Some(why) = self.arith(a, depth) {
                    self.push_opaque(&format!("(( {} ))", a.text.trim()), why);
                }
            }
            Compound::ArithFor(a, body) => {
                if let Some(why) = self.arith(a, depth) {
                    self.push_opaque(&format!("for (( {} ))", a.text.trim()), why);
                }
                self.floating += 1;
                self.script(body, depth);
                self.floating -= 1;
            }
        }
    }

    /// Walks an arithmetic expression's expansions; the reason it may run code, if it may.
    fn arith(&mut self, a: &Arith, depth: usize) -> Option<Opaque> {
        let mut st = WordState {
            is_static: true,
            trusted: true,
            ..WordState::default()
        };
        self.parts(&a.parts, true, &mut st, depth);
        if st.opaque.is_some() {
            return st.opaque;
        }
        if self.arith_understood(&a.text, &a.parts) {
            return None;
        }
        Some(Opaque::Code(format!(
            "arithmetic on `{}` evaluates names, and a value the model chose (`a[$(cmd)]`) runs code",
            a.text.trim()
        )))
    }

    fn cond(&mut self, tokens: &[CondToken], depth: usize) {
        let words: Vec<Option<Wd>> = tokens
            .iter()
            .map(|token| match token {
                CondToken::Word(word) => Some(self.word(word, depth)),
                CondToken::Op(_) => None,
            })
            .collect();
        let source = || {
            tokens
                .iter()
                .map(|token| match token {
                    CondToken::Word(word) => word.src(),
                    CondToken::Op(op) => op,
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let numeric_operand = |this: &Self, index: usize| match tokens.get(index) {
            Some(CondToken::Word(word)) => {
                parse::literal_text(word).is_some_and(numeric)
                    || this.arith_understood(word.src(), &word.parts)
            }
            _ => false,
        };
        for (i, t) in tokens.iter().enumerate() {
            let CondToken::Word(w) = t else { continue };
            let op = parse::literal_text(w);
            match op {
                Some("-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge") => {
                    let left = i
                        .checked_sub(1)
                        .is_some_and(|before| numeric_operand(self, before));
                    let right = numeric_operand(self, i + 1);
                    if !(left && right) {
                        self.push_opaque(
                            &format!("[[ {} ]]", source()),
                            Opaque::Code(
                                "an arithmetic comparison in `[[ ]]` evaluates its operands, which can run code"
                                    .into(),
                            ),
                        );
                        return;
                    }
                }
                Some("-v" | "-R") => {
                    let ok = words
                        .get(i + 1)
                        .and_then(|word| word.as_ref())
                        .is_some_and(|word| word.lit().is_some_and(is_name));
                    if !ok {
                        self.push_opaque(
                            &format!("[[ {} ]]", source()),
                            Opaque::Code("`[[ -v ]]` evaluates a subscript as arithmetic".into()),
                        );
                        return;
                    }
                }
                _ => {}
            }
        }
        if let Some(o) = words.iter().flatten().find_map(|word| word.opaque.clone()) {
            self.push_opaque(&format!("[[ {} ]]", source()), o);
        }
    }

    fn trusted_name(&self, name: &str) -> bool {
        let yes = !self.sources && !self.assigned.contains(name) && !set_by_bash(name);
        if yes {
            self.assumed.trusted.borrow_mut().insert(name.to_string());
        }
        yes
    }

    fn param_trusted(&self, p: &Param) -> bool {
        let n = p.name.as_str();
        if matches!(n, "#" | "?" | "$" | "!" | "-") {
            return true;
        }
        if n.bytes().all(|byte| byte.is_ascii_digit()) || matches!(n, "@" | "*") {
            return false;
        }
        self.trusted_name(n)
    }

    pub(super) fn word(&mut self, w: &Word, depth: usize) -> Wd {
        // Most words are plain text: no globs, braces, tilde or expansions.
        if let [Part::Lit(s)] = w.parts.as_slice() {
            if !s.contains(['*', '?', '[', '{', '~']) {
                return Wd {
                    text: s.clone(),
                    is_static: true,
                    trusted: false,
                    glob: false,
                    may_start_dash: s.starts_with('-'),
                    splits: false,
                    array_literal: false,
                    opaque: None,
                    prefix: String::new(),
                    has_slash: s.contains('/'),
                    hidden: false,
                    glob_pattern: None,
                };
            }
        }
        let mut st = WordState {
            is_static: true,
            trusted: true,
            ..WordState::default()
        };
        let tilde = matches!(w.parts.first(), Some(Part::Lit(s)) if s.starts_with('~'));
        self.parts(&w.parts, false, &mut st, depth);
        let glob = has_glob(&st.mask);
        if tilde {
            let trusted = self.trusted_name("HOME")
                && !matches!(w.parts.first(), Some(Part::Lit(s)) if s.starts_with("~+") || s.starts_with("~-"));
            st.dynamic(trusted, true, true);
        }
        if glob {
            st.is_static = false;
            st.trusted = false;
        }
        let is_static = st.is_static;
        // A glob in plain unquoted text, with nothing else computed (no braces, tilde or
        // expansion): its pattern.
        let glob_pattern = match w.parts.as_slice() {
            [Part::Lit(text)] if glob && !tilde && !text.contains(['{', '}']) => Some(text.clone()),
            _ => None,
        };
        Wd {
            text: if is_static {
                st.text
            } else {
                w.src().to_string()
            },
            is_static,
            trusted: !is_static && st.trusted,
            glob,
            may_start_dash: if is_static {
                !w.parts.is_empty() && st.start_known == Some(false)
            } else {
                // A glob or brace expansion at the start (`[-]i`, `{-x,y}`) may produce `-`.
                let expands_first = st.mask.starts_with(['*', '?', '[', '{']);
                st.start_known != Some(true) || expands_first
            },
            splits: st.splits || glob,
            array_literal: st.array_literal,
            opaque: st.opaque,
            has_slash: st.prefix.contains('/') || w.src().contains('/'),
            prefix: st.prefix,
            hidden: false,
            glob_pattern,
        }
    }

    fn parts(&mut self, parts: &[Part], quoted: bool, st: &mut WordState, depth: usize) {
        for p in parts {
            match p {
                Part::Lit(s) => st.literal(s, quoted),
                Part::Quoted(s) => st.literal(s, true),
                Part::Double { parts, locale } => {
                    if *locale {
                        st.dynamic(false, false, true);
                    }
                    self.parts(parts, true, st, depth);
                }
                Part::Param(param) => {
                    let trusted = self.param_trusted(param);
                    st.dynamic(trusted, false, quoted);
                    self.param(param, st, depth);
                }
                Part::CommandSub(s) => {
                    // The output of a command that prints only object names is data that
                    // cannot start with `-`; the command itself is a subject of the line.
                    let names = prints_object_names(s);
                    st.dynamic(names, names, quoted);
                    self.script(s, depth + 1);
                }
                Part::AmbiguousSub(s) => {
                    st.dynamic(false, false, quoted);
                    st.opaque("`$((` read as a command substitution: bash's reading is subtle");
                    self.script(s, depth + 1);
                }
                Part::Arith(a) => {
                    let why = self.arith(a, depth + 1);
                    st.dynamic(why.is_none(), false, quoted);
                    if let Some(Opaque::Code(w)) = why {
                        st.opaque(w);
                    }
                }
                Part::ProcessSub(s) => {
                    st.dynamic(false, true, true);
                    self.floating += 1;
                    self.script(s, depth + 1);
                    self.floating -= 1;
                }
                Part::Unknown(_) => st.dynamic(false, false, quoted),
                Part::ArrayLiteral(_) => {
                    st.dynamic(false, false, true);
                    st.array_literal = true;
                }
            }
        }
    }

    fn param(&mut self, p: &Param, st: &mut WordState, depth: usize) {
        if p.indirect {
            st.opaque(format!(
                "`${{!{}}}` reads the variable a value names",
                p.name
            ));
        }
        if let Some(sub) = &p.subscript {
            if !numeric_subscript(sub) {
                st.opaque(format!(
                    "the subscript `{}[{sub}]` is evaluated as arithmetic, which can run code",
                    p.name
                ));
            }
        }
        // `gives`: the word's text may be the value (`${x:-TEXT}`): text the model wrote, so the
        // value is the model's, whoever set `x`.
        let nested = |this: &mut Self, w: &Word, st: &mut WordState, gives: bool| {
            let wd = this.word(w, depth + 1);
            if let Some(Opaque::Code(why)) = &wd.opaque {
                st.opaque(why.clone());
            }
            if wd.model_chosen() || (gives && has_text(&w.parts)) {
                st.trusted = false;
            }
        };
        match &p.op {
            ParamOp::Plain => {}
            ParamOp::Word { word, op } => {
                nested(self, word, st, op.gives_word());
                if *op == WordOp::Assign && dangerous_variable(&p.name) {
                    st.opaque(format!(
                        "`${{{}:=...}}` assigns a variable that changes how commands run",
                        p.name
                    ));
                }
            }
            ParamOp::Replace(pattern, replacement) => {
                nested(self, pattern, st, false);
                if let Some(r) = replacement {
                    nested(self, r, st, true);
                }
            }
            ParamOp::Substring(offset, length) => {
                if !numeric(offset) || length.as_deref().is_some_and(|length| !numeric(length)) {
                    st.opaque("a substring offset is evaluated as arithmetic, which can run code");
                }
            }
            // `@P` expands the value as a prompt (running its substitutions); the other
            // transforms (quote, case, escapes, attributes) only rewrite text.
            ParamOp::Transform('P') => st.opaque(format!(
                "`${{{}@P}}` expands the value as a prompt, running its substitutions",
                p.name
            )),
            ParamOp::Transform(_) => {}
        }
    }

    fn assign(&mut self, a: &Assign, depth: usize) -> AssignInfo {
        let mut opaque = None;
        let sub_check = |sub: &str, opaque: &mut Option<Opaque>| {
            if !numeric_subscript(sub) && opaque.is_none() {
                *opaque = Some(Opaque::Code(format!(
                    "the subscript `{}[{sub}]` is evaluated as arithmetic, which can run code",
                    a.name
                )));
            }
        };
        if let Some(sub) = &a.subscript {
            sub_check(sub, &mut opaque);
        }
        let text = match &a.value {
            AssignValue::Scalar(w) => {
                let wd = self.word(w, depth);
                if opaque.is_none() {
                    opaque = wd.opaque.clone();
                }
                let op = if a.src[a.name.len()..].contains("+=") && !a.src.contains('=') {
                    "+="
                } else {
                    "="
                };
                if wd.is_static && a.subscript.is_none() && !a.src.contains("+=") {
                    format!("{}{op}{}", a.name, wd.text)
                } else {
                    a.src.clone()
                }
            }
            AssignValue::Array(elements) => {
                for (key, w) in elements {
                    if let Some(k) = key {
                        sub_check(k, &mut opaque);
                    }
                    let wd = self.word(w, depth);
                    if opaque.is_none() {
                        opaque = wd.opaque.clone();
                    }
                }
                a.src.clone()
            }
        };
        if dangerous_variable(&a.name) {
            opaque = Some(dangerous(&a.name));
        }
        AssignInfo {
            name: a.name.clone(),
            text,
            opaque,
        }
    }

    fn simple(&mut self, s: &Simple, depth: usize) {
        let assigns: Vec<AssignInfo> = s
            .assigns
            .iter()
            .map(|assign| self.assign(assign, depth))
            .collect();
        let mut words: Vec<Wd> = s.words.iter().map(|word| self.word(word, depth)).collect();
        // `declare a=([k]=v)`: the arguments' subscripts and values, checked as assignments.
        for a in &s.arg_assigns {
            if let Some(o) = self.assign(a, depth).opaque {
                if let Some(first) = words.first_mut() {
                    first.opaque.get_or_insert(o);
                }
            }
        }
        for r in &s.redirects {
            self.redirect(r, depth);
        }
        if words.is_empty() {
            for a in assigns {
                if let Some(o) = a.opaque {
                    self.push_opaque(&a.text, o);
                }
            }
            return;
        }
        self.run(&assigns, &words, depth);
    }

    /// One command given as analyzed words (and prefix assignments): its subject, then what it
    /// wraps or runs.
    fn run(&mut self, assigns: &[AssignInfo], words: &[Wd], depth: usize) {
        let Some(first) = words.first() else {
            for a in assigns {
                if let Some(o) = &a.opaque {
                    self.push_opaque(&a.text, o.clone());
                }
            }
            return;
        };
        if depth > MAX_DEPTH || !self.budget.spend(words.len() as u64 + 1) {
            self.push_opaque(
                &join(words),
                Opaque::ParseError("the command nests too deeply".into()),
            );
            return;
        }
        let mut opaque = assigns
            .iter()
            .find_map(|assign| assign.opaque.clone())
            .or_else(|| words.iter().find_map(|word| word.opaque.clone()));
        let prefix: String = assigns
            .iter()
            .filter(|assign| !harmless_variable(&assign.name))
            .map(|assign| format!("{} ", assign.text))
            .collect();
        let args = &words[1..];
        if !first.is_static {
            let text = format!("{prefix}{}", join(words));
            let also_from = suffixes(&text, prefix.len(), words, 0);
            self.push(ShellCommand {
                text,
                path_form: None,
                opaque: Some(opaque.unwrap_or(Opaque::DynamicCommandWord)),
                also_from,
                guess: false,
                named: None,
            });
            self.changed = true;
            return;
        }
        if first.text.is_empty() || first.text.chars().any(char::is_whitespace) {
            opaque.get_or_insert(Opaque::Code(
                "the command word holds a blank or is empty".into(),
            ));
        }
        let name = basename(&first.text).to_string();
        let analysis = programs::analyze(&name, args);
        let rest = join(args);
        let with = |head: &str| {
            if rest.is_empty() {
                format!("{prefix}{head}")
            } else {
                format!("{prefix}{head} {rest}")
            }
        };
        let text = match &analysis.text {
            Some(t) => format!("{prefix}{t}"),
            None => with(&name),
        };
        let path_form = first.text.contains('/').then(|| with(&first.text));
        let mut also_from = Vec::new();
        if !prefix.is_empty() {
            also_from.push(prefix.len());
        }
        if analysis.runs_args && analysis.text.is_none() {
            let head = prefix.len() + name.len() + 1;
            also_from.extend(suffixes(&text, head, args, 0));
            if args.len() > MAX_SUFFIXES && opaque.is_none() {
                opaque = Some(Opaque::Code(format!(
                    "`{name}` has more than {MAX_SUFFIXES} arguments that may hold a command"
                )));
            }
        }
        // Opaque only for what the words up to `named` say (`python3 -m pytest`): how much of
        // the subject's text that is.
        let named = match (analysis.named, &opaque, &analysis.text) {
            (Some(k), None, None) if analysis.opaque.is_some() => Some(
                prefix.len()
                    + name.len()
                    + args[..k.min(args.len())]
                        .iter()
                        .filter(|w| !w.hidden)
                        .map(|w| w.text.len() + 1)
                        .sum::<usize>(),
            ),
            _ => None,
        };
        if let Some(o) = analysis.opaque.clone() {
            opaque.get_or_insert(o);
        }
        let guess_args = analysis.guess_args;
        self.push(ShellCommand {
            text,
            path_form,
            opaque,
            also_from,
            guess: false,
            named,
        });
        // What the command does under another name (`git send-pack` pushes): deny and ask
        // rules only.
        for form in &analysis.deny_forms {
            self.guess += 1;
            self.push(ShellCommand {
                text: form.clone(),
                path_form: None,
                opaque: None,
                also_from: Vec::new(),
                guess: true,
                named: None,
            });
            self.guess -= 1;
        }
        if guess_args && self.guess < MAX_GUESS_DEPTH {
            for w in args {
                // The word, or the value of `--option=value`.
                let text = match w.text.split_once('=') {
                    Some((option, value)) if w.text.starts_with('-') && !option.contains(' ') => {
                        value
                    }
                    _ => w.text.as_str(),
                };
                let looks_like_a_command_line = w.is_static
                    && text.contains([' ', '\t', '\n', ';', '|', '&'])
                    && !text.starts_with('-');
                if looks_like_a_command_line {
                    self.guess += 1;
                    let changed = self.changed;
                    let redirects = self.out.redirects.len();
                    self.nested(text, depth + 1, Dialect::Bash);
                    // A guess is not known to run: its redirections are not subjects.
                    self.out.redirects.truncate(redirects);
                    self.changed = changed;
                    self.guess -= 1;
                }
            }
        }
        // What it runs and writes happens in the folders it changes to (`env -C DIR`).
        let moved = !analysis.chdir.is_empty();
        if moved {
            let dir = chdir_path(args, &analysis.chdir);
            self.cwd.push(dir);
        }
        for inner in &analysis.inner {
            match inner {
                Inner::Command {
                    assigns,
                    words,
                    input,
                } => {
                    let inner_assigns: Vec<AssignInfo> = args[assigns.clone()]
                        .iter()
                        .map(AssignInfo::from_word)
                        .collect();
                    let inner_words = &args[words.clone()];
                    match input {
                        Input::None => self.run(&inner_assigns, inner_words, depth + 1),
                        Input::Appended => {
                            let mut fed = inner_words.to_vec();
                            fed.push(Wd::input("the arguments xargs reads"));
                            self.run(&inner_assigns, &fed, depth + 1);
                        }
                        Input::Replaced(r) => {
                            let fed: Vec<Wd> = inner_words
                                .iter()
                                .map(|w| {
                                    if w.text.contains(r.as_str()) {
                                        w.replaced()
                                    } else {
                                        w.clone()
                                    }
                                })
                                .collect();
                            self.run(&inner_assigns, &fed, depth + 1);
                        }
                    }
                }
                Inner::Script(script, dialect) => self.nested(script, depth + 1, *dialect),
            }
        }
        for write in &analysis.writes {
            if let Some((w, inside)) = written_word(args, write) {
                let inside = inside.map(|dir| self.in_cwd(dir).text);
                self.redirect_target(RedirectKind::Write, w, Some(&name), inside);
            }
        }
        if moved {
            self.cwd.pop();
        }
        if analysis.changes_paths {
            self.changed = true;
        }
    }

    fn redirect(&mut self, r: &Redirect, depth: usize) {
        match r {
            Redirect::File { read, target } => {
                let wd = self.word(target, depth);
                let kind = if *read {
                    RedirectKind::Read
                } else {
                    RedirectKind::Write
                };
                self.redirect_target(kind, wd, None, None);
            }
            Redirect::Dup { read, target } => {
                let wd = self.word(target, depth);
                let descriptor = wd.lit().is_some_and(|text| {
                    let number = text.strip_suffix('-').unwrap_or(text);
                    number.bytes().all(|byte| byte.is_ascii_digit())
                });
                if !descriptor {
                    let kind = if *read {
                        RedirectKind::Read
                    } else {
                        RedirectKind::Write
                    };
                    self.redirect_target(kind, wd, None, None);
                }
            }
            Redirect::HereDoc { body } => match body.get() {
                Some(Some(parts)) => {
                    let mut st = WordState {
                        is_static: true,
                        trusted: true,
                        ..WordState::default()
                    };
                    self.parts(parts, true, &mut st, depth + 1);
                    if let Some(o) = st.opaque {
                        self.push_opaque("<<", o);
                    }
                }
                Some(None) => {}
                // Never walk past a body that was not read: what it runs is unknown.
                None => self.push_opaque(
                    "<<",
                    Opaque::ParseError("a here-document body was not read".into()),
                ),
            },
            Redirect::HereString(w) => {
                let wd = self.word(w, depth);
                if let Some(o) = wd.opaque {
                    self.push_opaque(w.src(), o);
                }
            }
        }
    }

    fn redirect_target(
        &mut self,
        kind: RedirectKind,
        wd: Wd,
        written_by: Option<&str>,
        inside: Option<String>,
    ) {
        if self.guess > 0 {
            return;
        }
        let wd = self.in_cwd(wd);
        if wd.is_static
            && matches!(
                wd.text.as_str(),
                "/dev/null" | "/dev/stdout" | "/dev/stderr"
            )
        {
            return;
        }
        let opaque = if !wd.is_static {
            Some(Opaque::DynamicPath)
        } else if self.changed {
            Some(changed_reason())
        } else {
            None
        };
        let redirect = ShellRedirect {
            kind,
            path: wd.text,
            opaque,
            written_by: written_by.map(str::to_string),
            inside,
        };
        if self.floating == 0 {
            let key = {
                use std::hash::{Hash, Hasher};
                let mut h = Fnv::default();
                redirect.hash(&mut h);
                h.finish()
            };
            let seen = self.seen_redirects.entry(key).or_default();
            if seen.iter().any(|&i| self.out.redirects[i] == redirect) {
                return;
            }
            seen.push(self.out.redirects.len());
        }
        self.out.redirects.push(redirect);
        if self.floating > 0 {
            self.floating_redirects.push(self.out.redirects.len() - 1);
        }
    }
}

impl Walk<'_> {
    /// A path as the shell line's own folder sees it: a relative one under the folders the
    /// command runs in (`env -C secrets tee key` writes `secrets/key`); computed at run time
    /// when one of those is.
    fn in_cwd(&self, wd: Wd) -> Wd {
        if self.cwd.is_empty() || !wd.is_static || wd.text.starts_with('/') {
            return wd;
        }
        let mut path = String::new();
        for dir in &self.cwd {
            match dir {
                None => {
                    return Wd {
                        is_static: false,
                        ..wd
                    }
                }
                Some(d) => path = join_path(&path, d),
            }
        }
        Wd::synthetic(&join_path(&path, &wd.text))
    }
}

/// `dir/path` (`path` when absolute or `dir` empty).
fn join_path(dir: &str, path: &str) -> String {
    if dir.is_empty() || path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}/{path}", dir.trim_end_matches('/'))
    }
}

/// The folder a command's `-C` options lead to, from the line's folder; None when one of them
/// is computed at run time.
fn chdir_path(args: &[Wd], dirs: &[FileArg]) -> Option<String> {
    let mut path = String::new();
    for &dir in dirs {
        let w = file_word(args, dir)?;
        path = join_path(&path, w.lit()?);
    }
    Some(path)
}

/// The word a file argument names: all of the argument, or (for an attached option value) its
/// text from `from` on; None when the argument is missing.
fn file_word(args: &[Wd], f: FileArg) -> Option<Wd> {
    let w = args.get(f.arg)?;
    if f.from == 0 {
        return Some(w.clone());
    }
    match w.lit() {
        Some(t) => Some(Wd::synthetic(t.get(f.from..)?)),
        // Computed at run time: a dynamic path.
        None => Some(Wd {
            is_static: false,
            ..w.clone()
        }),
    }
}

/// The file a program writes, as a word (static when every part of it is), and the folder it
/// is written into only when that is a folder.
fn written_word(args: &[Wd], write: &Write) -> Option<(Wd, Option<Wd>)> {
    match *write {
        Write::File(f) => Some((file_word(args, f)?, None)),
        Write::Into { dir, source } => {
            let source = args.get(source)?;
            let dir = match dir {
                Some(d) => file_word(args, d)?,
                None => Wd::synthetic("."),
            };
            Some(match (dir.lit(), source.lit()) {
                (Some(d), Some(s)) => {
                    let name = basename(s.trim_end_matches('/'));
                    (Wd::synthetic(&join_path(d, name)), Some(dir.clone()))
                }
                // Computed at run time: a dynamic path, whatever the folder is.
                _ if !dir.is_static => (dir, None),
                _ => (
                    Wd {
                        is_static: false,
                        text: format!("{}/{}", dir.text, source.text),
                        ..source.clone()
                    },
                    None,
                ),
            })
        }
    }
}

/// Whether `script` is one command that prints only git object names (`git merge-base A B`,
/// `git rev-parse REV`): its output never starts with `-`, holds no blank or glob, and the
/// command is a subject of the line itself (decided by the rules like any other).
fn prints_object_names(script: &Script) -> bool {
    let [AndOr {
        pipelines,
        background: false,
    }] = script.items.as_slice()
    else {
        return false;
    };
    let [Pipeline { commands }] = pipelines.as_slice() else {
        return false;
    };
    let [Command::Simple(simple)] = commands.as_slice() else {
        return false;
    };
    let quiet = simple.redirects.iter().all(|r| match r {
        Redirect::File {
            read: false,
            target,
        } => parse::literal_text(target) == Some("/dev/null"),
        _ => false,
    });
    if !simple.assigns.is_empty() || !quiet {
        return false;
    }
    let words: Option<Vec<&str>> = simple.words.iter().map(parse::literal_text).collect();
    let Some(words) = words else { return false };
    let plain = |t: &str| {
        !t.is_empty()
            && !t.starts_with('-')
            && !t.contains([' ', '\t', '\n', '*', '?', '[', '{', '~', '='])
    };
    match words.as_slice() {
        ["git", "merge-base", rest @ ..] => rest.iter().all(|t| {
            plain(t) || matches!(*t, "--all" | "--octopus" | "--independent" | "--fork-point")
        }),
        ["git", "rev-parse", rest @ ..] => {
            !rest.is_empty()
                && rest.iter().all(|t| {
                    plain(t)
                        || matches!(*t, "--verify" | "--short" | "-q" | "--quiet")
                        || t.strip_prefix("--short=")
                            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
                })
        }
        _ => false,
    }
}

/// Whether word parts hold literal text (a character the model wrote).
fn has_text(parts: &[Part]) -> bool {
    parts.iter().any(|p| match p {
        Part::Lit(s) | Part::Quoted(s) => !s.is_empty(),
        Part::Double { parts, .. } => has_text(parts),
        _ => false,
    })
}

fn changed_reason() -> Opaque {
    Opaque::Code(
        "a command of the line may change the working folder or what this path names (cd, ln, mv, ...) before it is opened"
            .into(),
    )
}

fn mark_changed(r: &mut ShellRedirect) {
    if r.opaque.is_none() {
        r.opaque = Some(changed_reason());
    }
}

/// The identifiers in arithmetic text.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|piece| piece.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

fn join(words: &[Wd]) -> String {
    words
        .iter()
        .filter(|word| !word.hidden)
        .map(|word| word.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Offsets in `text` (which holds `words[from..]` joined by single spaces from offset `head`) of
/// the words a command may start at: static, not an option, no blank.
fn suffixes(text: &str, head: usize, words: &[Wd], from: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut offset = head;
    for w in words[from..].iter().filter(|w| !w.hidden) {
        if out.len() >= MAX_SUFFIXES {
            break;
        }
        let plausible = w.is_static
            && !w.text.is_empty()
            && !w.text.starts_with('-')
            && !w.text.chars().any(char::is_whitespace);
        if plausible && offset < text.len() && offset > 0 {
            out.push(offset);
        }
        offset += w.text.len() + 1;
    }
    out
}

#[cfg(test)]
pub(super) fn literal_word(text: &str) -> Wd {
    Wd::literal(text)
}
