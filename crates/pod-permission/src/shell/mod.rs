//! Turning a `bash` command line into permission subjects.
//!
//! The rule is soundness: a sub-command can be allowed only if the engine understands every part
//! of it. This module reads command lines in a written-down subset of bash (docs/permissions.md,
//! "The shell") with its own parser, and returns every simple command the line would run
//! (normalized, wrappers unwrapped, `bash -c` scripts parsed) and every file a redirection would
//! read or write. Whatever bash might evaluate as code that the engine cannot read (`eval`,
//! `$((x))` on names, `${x@P}`, `find -exec`, `sed 'e'`, a variable such as `BASH_ENV`, ...)
//! is returned flagged [`Opaque`], and the engine never allows it; text outside the subset makes
//! the whole line unparsed ([`Opaque::ParseError`]).
//!
//! The parts, in the order data flows: `parse` (text to syntax, bounded), `walk` (syntax to
//! subjects), `programs` (the table of what programs do with their arguments).
//!
//! Must not: match rules, decide anything, or do I/O. It is a pure function from text to
//! [`ShellSubjects`] whose cost is linear in the text, and it never panics.

mod parse;
mod programs;
mod syntax;
mod walk;

#[cfg(test)]
mod tests;

/// Longest command line analyzed; longer ones are unparsed (never allowed).
pub const MAX_COMMAND_BYTES: usize = 1024 * 1024;

/// Everything a command line would run or touch, as permission subjects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellSubjects {
    /// Every simple command, including wrapped and nested ones.
    pub commands: Vec<ShellCommand>,
    /// Every file-redirection target (not descriptor copies, not here-documents).
    pub redirects: Vec<ShellRedirect>,
}

/// One simple command as a subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShellCommand {
    /// Normalized words joined by single spaces: quotes and escapes removed, `NAME=value`
    /// prefixes kept (except a few harmless ones such as `LANG`), the command word reduced to
    /// its basename (`/bin/rm x` is `rm x`). Words holding an expansion keep their source form
    /// (`cat $F`).
    pub text: String,
    /// When the command word was written as a path (`/bin/rm x`), the same text with the path
    /// kept, so rules can match that form too.
    pub path_form: Option<String>,
    /// Why the command's effect cannot be read statically; None when it can.
    pub opaque: Option<Opaque>,
    /// Byte offsets in `text` where a command may also start: after prefix assignments, and at
    /// each argument of a program that may run its arguments (an unknown program or a wrapper).
    /// Deny and ask rules are also tried on `text[offset..]`.
    pub also_from: Vec<usize>,
    /// Not known to run: an argument of an unknown program that reads as a command line, or
    /// another name of what the command does (`git send-pack` is a push). Only deny and ask
    /// rules apply to it.
    pub guess: bool,
    /// Opaque only for what `text[..named]` says (`python3 -m pytest` runs that module): an
    /// allow rule whose literal part (before its first wildcard) spells all of it out allows
    /// the command.
    pub named: Option<usize>,
}

/// Whether a redirection reads or writes its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedirectKind {
    /// `<`
    Read,
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&FILE`, and files `tee` writes.
    Write,
}

/// One redirection target as a subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShellRedirect {
    pub kind: RedirectKind,
    /// The unquoted target (its source form when it holds an expansion).
    pub path: String,
    /// Why the target cannot be resolved now (an expansion; an earlier command of the line may
    /// change what it names).
    pub opaque: Option<Opaque>,
    /// The program that writes the file (`cp x .env`), when it is not a redirection: only deny
    /// rules apply to such a subject while it can be resolved (the command itself is the
    /// subject other rules decide).
    pub written_by: Option<String>,
    /// The file is written only when this path is a folder (`cp key secrets` writes
    /// `secrets/key` if `secrets` is one): the subject counts when it is one at decision time.
    pub inside: Option<String>,
}

/// Why a subject's effect cannot be read statically.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Opaque {
    /// The command line (or a nested script) is not in the understood subset.
    ParseError(String),
    /// Nothing to check: empty, whitespace or comments only (or only assignments).
    Empty,
    /// The command word is an expansion, a glob or otherwise not a literal (`$CMD x`).
    DynamicCommandWord,
    /// `eval ...`.
    Eval,
    /// A shell script or program text that is not a literal (`bash -c "$X"`).
    DynamicScript,
    /// An interpreter running code given on its command line (`python -c`, `node -e`,
    /// `python3 -m`, `perl -M`).
    InlineCode,
    /// A shell or interpreter reading its script from stdin or a descriptor (`curl x | bash`).
    StdinScript,
    /// A redirection target holding an expansion, a tilde or a glob.
    DynamicPath,
    /// Anything else bash or the program may evaluate as code, with the reason.
    Code(String),
}

impl Opaque {
    /// Short human text for a denial or approval request.
    pub fn describe(&self) -> String {
        match self {
            Opaque::ParseError(msg) => format!("the command could not be parsed ({msg})"),
            Opaque::Empty => "the command is empty".to_string(),
            Opaque::DynamicCommandWord => "the command word is an expansion".to_string(),
            Opaque::Eval => "eval runs a string as a command".to_string(),
            Opaque::DynamicScript => "the script or program text is not a literal".to_string(),
            Opaque::InlineCode => "an interpreter runs code given on its command line".to_string(),
            Opaque::StdinScript => {
                "a shell or interpreter reads its script from stdin or a descriptor".to_string()
            }
            Opaque::DynamicPath => "the redirection target is an expansion or a glob".to_string(),
            Opaque::Code(why) => why.clone(),
        }
    }
}

/// Parses `command` and returns its subjects. Never panics; linear in the length of `command`.
pub fn extract(command: &str) -> ShellSubjects {
    let unparsed = |why: String| ShellSubjects {
        commands: vec![ShellCommand {
            text: command.trim().to_string(),
            path_form: None,
            opaque: Some(Opaque::ParseError(why)),
            also_from: Vec::new(),
            guess: false,
            named: None,
        }],
        redirects: Vec::new(),
    };
    if command.len() > MAX_COMMAND_BYTES {
        return unparsed(format!(
            "longer than {} MiB",
            MAX_COMMAND_BYTES / (1024 * 1024)
        ));
    }
    if command.contains('\0') {
        return unparsed("it holds a NUL byte".into());
    }
    let budget = parse::Budget::for_input(command.len());
    let walked = match streamed(command, &budget) {
        Ok(Some(out)) => Ok(out),
        // A later item assigned a name an earlier one was walked as not assigned: walk the
        // line again, whole, knowing every assignment.
        Ok(None) => whole(command, &budget),
        Err(e) => Err(e),
    };
    let mut out = match walked {
        Ok(out) if !budget.exhausted() => out,
        Ok(_) => return unparsed("the command is too complex to analyze".into()),
        Err(e) => return unparsed(e.to_string()),
    };
    if out.commands.iter().all(|c| c.guess) && out.redirects.is_empty() {
        out.commands.push(ShellCommand {
            text: String::new(),
            path_form: None,
            opaque: Some(Opaque::Empty),
            also_from: Vec::new(),
            guess: false,
            named: None,
        });
    }
    out
}

/// Walks the line item by item as it is read; None when an assumption about a name an item
/// made turned out wrong later in the line.
fn streamed(
    command: &str,
    budget: &parse::Budget,
) -> Result<Option<ShellSubjects>, parse::ParseError> {
    let mut items = parse::Items::new(command, budget, parse::Dialect::Bash)?;
    let mut walk = walk::Walk::streaming(budget);
    let mut learned = 0;
    while let Some(item) = items.next()? {
        let assigned = items.assigned();
        walk.learn_assignments(&assigned[learned..], items.sources());
        learned = assigned.len();
        walk.and_or(&item, 0);
    }
    walk.finish();
    Ok(walk.assumptions_hold().then_some(walk.out))
}

/// Parses the whole line, then walks it knowing every assignment.
fn whole(command: &str, budget: &parse::Budget) -> Result<ShellSubjects, parse::ParseError> {
    let parsed = parse::parse(command, budget, 0, parse::Dialect::Bash)?;
    let mut walk = walk::Walk::new(budget, &parsed);
    walk.script(&parsed.script, 0);
    walk.finish();
    Ok(walk.out)
}
