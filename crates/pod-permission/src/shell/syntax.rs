//! The syntax tree of the bash subset the engine understands.
//!
//! Owns: plain data types produced by [`super::parse`] and consumed by [`super::walk`]. Every
//! construct bash has that is not listed here is either a parse error (the whole line is
//! unparsed) or kept as a node the walk marks opaque (`Compound::Arith` on names, a
//! `Param` with an evaluating operator, ...). Nothing here decides anything.

/// A list of commands: a whole command line, a `$( )` body, a `{ }` body, ...
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    pub items: Vec<AndOr>,
}

/// `a && b || c`, possibly run in the background (`&`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AndOr {
    pub pipelines: Vec<Pipeline>,
    /// Ended by `&`: it runs while the rest of the line goes on.
    pub background: bool,
}

/// `a | b | c` (also `|&`), possibly under `!` or `time`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pipeline {
    pub commands: Vec<Command>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Simple(Simple),
    Compound(Box<Compound>, Vec<Redirect>),
    /// `name() body` / `function name body`: the body is walked wherever it is defined.
    Function {
        name: String,
        body: Box<Compound>,
        redirects: Vec<Redirect>,
    },
}

/// `A=1 cmd arg > file`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Simple {
    /// Assignments before the command word (or alone).
    pub assigns: Vec<Assign>,
    /// The command word and its arguments.
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// The `NAME=value` arguments of a declaration builtin (`declare a=(...)`), also in `words`.
    pub arg_assigns: Vec<Assign>,
}

/// `NAME=value`, `NAME+=value`, `NAME[sub]=value`, `NAME=(a b)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assign {
    pub name: String,
    /// The text between `[` and `]` of `NAME[sub]=`.
    pub subscript: Option<String>,
    pub value: AssignValue,
    /// The source text, for subjects.
    pub src: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AssignValue {
    Scalar(Word),
    /// `(a [k]=b c)`: elements with their optional `[k]=` subscript text.
    Array(Vec<(Option<String>, Word)>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compound {
    /// `{ list; }`
    Group(Script),
    /// `( list )`
    Subshell(Script),
    /// `((` read as two subshells (`((rm x) )`): bash's own reading of this is subtle, so the
    /// walk keeps the commands and marks the construct opaque.
    AmbiguousSubshell(Script),
    /// `if c; then a; elif c2; then b; else d; fi`
    If {
        branches: Vec<(Script, Script)>,
        otherwise: Option<Script>,
    },
    /// `while`/`until cond; do body; done`
    Loop { cond: Script, body: Script },
    /// `for var [in words]; do body; done` (`words` None: the positional parameters).
    For {
        var: String,
        words: Option<Vec<Word>>,
        body: Script,
    },
    /// `case word in pat|pat) list ;; esac`
    Case {
        word: Word,
        arms: Vec<(Vec<Word>, Script)>,
    },
    /// `[[ ... ]]`
    Cond(Vec<CondToken>),
    /// `(( ... ))`
    Arith(Arith),
    /// `for (( ... )); do body; done`
    ArithFor(Arith, Script),
}

/// One token of a `[[ ]]` expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CondToken {
    /// `&&`, `||`, `!`, `(`, `)`, `<`, `>`.
    Op(&'static str),
    Word(Word),
}

/// The text of an arithmetic expression and the expansions inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arith {
    pub text: String,
    /// Only digits, blanks and operators: evaluating it cannot run anything.
    pub pure: bool,
    /// The expansions found in the text (`$x`, `$(cmd)`, ...).
    pub parts: Vec<Part>,
}

/// A redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// `[n]< file`, `> file`, `>> file`, `>| file`, `<> file`, `&> file`, `&>> file`.
    File { read: bool, target: Word },
    /// `[n]>&word`, `[n]<&word`: a descriptor copy when `word` is digits or `-`, else a file.
    Dup { read: bool, target: Word },
    /// `<<DELIM` / `<<-DELIM`: the body (read at the next newline), parsed for expansions
    /// unless the delimiter was quoted (`None` inside).
    HereDoc {
        body: std::rc::Rc<std::cell::OnceCell<Option<Vec<Part>>>>,
    },
    /// `<<< word`
    HereString(Word),
}

/// A shell word: the concatenation of its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub parts: Vec<Part>,
    /// The source text; empty when it is the word's one literal part (most words: a line of
    /// 100,000 commands keeps one copy of each).
    pub(super) src: String,
}

impl Word {
    pub fn new(parts: Vec<Part>, src: &str) -> Word {
        let plain = matches!(parts.as_slice(), [Part::Lit(lit)] if lit == src);
        Word {
            parts,
            src: if plain {
                String::new()
            } else {
                src.to_string()
            },
        }
    }

    /// The source text.
    pub fn src(&self) -> &str {
        match self.parts.as_slice() {
            [Part::Lit(lit)] if self.src.is_empty() => lit,
            _ => &self.src,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Unquoted literal text: subject to globbing, brace expansion and (at the start) tilde.
    Lit(String),
    /// Quoted or escaped literal text: taken as is.
    Quoted(String),
    /// `"..."`; `locale` for `$"..."` (translated at run time: never static).
    Double { parts: Vec<Part>, locale: bool },
    /// `$name`, `${...}`.
    Param(Box<Param>),
    /// `$(...)`, `` `...` ``.
    CommandSub(Script),
    /// `$((...))`.
    Arith(Arith),
    /// `<(...)`, `>(...)`.
    ProcessSub(Script),
    /// `$( (...) )` written without the space: bash's reading is subtle, the walk marks it opaque.
    AmbiguousSub(Script),
    /// Text bash decodes at run time in a way the engine does not reproduce (`$'\0'`).
    Unknown(String),
    /// The `(...)` of a declaration builtin's `NAME=(...)` argument, checked as an assignment
    /// (`Simple::arg_assigns`).
    ArrayLiteral(String),
}

/// What the operator of `${x OP word}` does with its word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordOp {
    /// `${x:-w}`, `${x-w}`: the word when `x` is unset (or empty).
    Default,
    /// `${x:=w}`, `${x=w}`: the word, assigned to `x`, when it is unset (or empty).
    Assign,
    /// `${x:+w}`, `${x+w}`: the word when `x` is set (and not empty).
    Alternate,
    /// `${x:?w}`, `${x?w}`: `x`, or an error showing the word.
    Error,
    /// `${x#w}`, `${x##w}`, `${x%w}`, `${x%%w}`: `x` with a pattern removed.
    Trim,
    /// `${x^w}`, `${x^^w}`, `${x,w}`, `${x,,w}`: `x` with letters' case changed.
    Case,
}

impl WordOp {
    /// The value may be the word's own text, not the variable's.
    pub fn gives_word(self) -> bool {
        matches!(self, WordOp::Default | WordOp::Assign | WordOp::Alternate)
    }
}

/// A parameter expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// `HOME`, `1`, `@`, `?`, ...
    pub name: String,
    /// `${!name}`: the value names another variable.
    pub indirect: bool,
    /// `${name[sub]}`: the subscript text.
    pub subscript: Option<String>,
    pub op: ParamOp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamOp {
    /// `$x`, `${x}`, `${#x}`.
    Plain,
    /// `${x:-w}`, `${x+w}`, `${x#w}`, `${x^^w}`, ...
    Word { word: Word, op: WordOp },
    /// `${x/pat/rep}`.
    Replace(Word, Option<Word>),
    /// `${x:offset:length}`: arithmetic text.
    Substring(String, Option<String>),
    /// `${x@P}` and the other transforms.
    Transform(char),
}
