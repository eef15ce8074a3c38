//! What programs do with their arguments: the one table of wrappers, shells, interpreters and
//! programs whose arguments can run code (docs/permissions.md, "Programs the engine reads").
//!
//! Owns: for a command word and its analyzed arguments, an [`Analysis`]: whether the command is
//! opaque (it may run code nobody can read: `sed 'e ...'`, `find -exec`, `python3 -m`, `git -c`,
//! `make --eval`, ...), which commands it wraps (`sudo`, `env`, `timeout`, ...), which scripts it
//! runs (`bash -c`, `su -c`), whether its arguments may hold a command (unknown programs: deny
//! rules are tried on every suffix), and whether it may change the working folder or what a path
//! points to (for redirections later on the line).
//!
//! Option parsing follows each program's own (GNU getopt: bundled short options, abbreviated long
//! options, `--`); an option the table does not know, or one computed at run time, makes the
//! command opaque rather than guessed.
//!
//! Must not: walk syntax, emit subjects, or match rules.

use std::ops::Range;

use super::parse::{is_name, Dialect};
use super::walk::Wd;
use super::Opaque;

/// What a command does with its arguments.
#[derive(Debug, Default)]
pub(super) struct Analysis {
    /// Why the command is opaque, if it is.
    pub opaque: Option<Opaque>,
    /// The arguments may hold a command the program runs (an unknown program or a wrapper): deny
    /// and ask rules are also tried on the words from every argument on.
    pub runs_args: bool,
    /// Arguments holding blanks may be command lines the program runs (an unknown program):
    /// deny and ask rules are also tried on what they parse to.
    pub guess_args: bool,
    /// Commands and scripts the program runs.
    pub inner: Vec<Inner>,
    /// It may change the working folder or what a path names (`cd`, `ln`, `mv`, unknown
    /// programs, ...), so later redirections on the line cannot be resolved now.
    pub changes_paths: bool,
    /// The subject text to use instead of the words as written (`git` without its global
    /// options).
    pub text: Option<String>,
    /// Arguments that name files the program writes (`tee FILE`): `file_write` subjects.
    pub writes: Vec<usize>,
}

/// A command or script a program runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Inner {
    /// Words of `args`: leading `NAME=value` assignments, then the command.
    Command {
        assigns: Range<usize>,
        words: Range<usize>,
    },
    /// A shell script given as a string (`bash -c STR`, `su -c STR`, `watch STR`), and the shell
    /// that reads it.
    Script(String, Dialect),
}

impl Analysis {
    fn opaque(reason: impl Into<String>) -> Analysis {
        Analysis {
            opaque: Some(Opaque::Code(reason.into())),
            changes_paths: true,
            ..Analysis::default()
        }
    }

    fn from(opaque: Opaque) -> Analysis {
        Analysis {
            opaque: Some(opaque),
            changes_paths: true,
            ..Analysis::default()
        }
    }

    fn with(mut self, opaque: Option<Opaque>) -> Analysis {
        if self.opaque.is_none() {
            self.opaque = opaque;
        }
        if self.opaque.is_some() {
            self.changes_paths = true;
        }
        self
    }

    fn changes_paths(mut self) -> Analysis {
        self.changes_paths = true;
        self
    }

    /// Shifts argument indexes by `by` (for `busybox APPLET ...`).
    fn shifted(mut self, by: usize) -> Analysis {
        let shift = |r: &Range<usize>| r.start + by..r.end + by;
        for inner in &mut self.inner {
            if let Inner::Command { assigns, words } = inner {
                *assigns = shift(assigns);
                *words = shift(words);
            }
        }
        for w in &mut self.writes {
            *w += by;
        }
        self
    }
}

/// Programs whose arguments are data: no option of theirs runs anything.
const DATA: &[&str] = &[
    "echo",
    "printf",
    "cat",
    "tac",
    "ls",
    "dir",
    "vdir",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "sort",
    "uniq",
    "cut",
    "tr",
    "diff",
    "cmp",
    "comm",
    "file",
    "stat",
    "du",
    "df",
    "pwd",
    "true",
    "false",
    ":",
    "test",
    "[",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "rmdir",
    "touch",
    "rm",
    "chmod",
    "chown",
    "chgrp",
    "date",
    "whoami",
    "id",
    "uname",
    "which",
    "type",
    "base64",
    "base32",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "seq",
    "sleep",
    "column",
    "paste",
    "join",
    "nl",
    "fold",
    "fmt",
    "rev",
    "od",
    "hexdump",
    "xxd",
    "jq",
    "tree",
    "yes",
    "expr",
    "printenv",
    "hostname",
    "nproc",
    "free",
    "uptime",
    "ps",
    "getconf",
    "locale",
    "shuf",
    "split",
    "csplit",
    "truncate",
    "mktemp",
    "sync",
    "numfmt",
    "factor",
    "pr",
    "expand",
    "unexpand",
    "iconv",
    "strings",
    "gzip",
    "gunzip",
    "zcat",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zstd",
    "dd",
    "kill",
    "wait",
    "jobs",
    "exit",
    "return",
    "break",
    "continue",
    "shift",
    "umask",
    "ulimit",
    "times",
    "dirs",
    "disown",
    "help",
    "logname",
    "groups",
    "tty",
    "rg",
    "ag",
    "ack",
    "unalias",
    "caller",
    "cd",
    "pushd",
    "popd",
    "ln",
    "mv",
    "cp",
    "mkdir",
    "install",
    "unzip",
    "cpio",
    "tee",
];

/// Data programs that change the working folder or what a path names.
const CHANGES_PATHS: &[&str] = &[
    "cd", "pushd", "popd", "ln", "mv", "cp", "mkdir", "install", "unzip", "cpio",
];

/// Long options of data programs that run a program (`sort --compress-program=PROG`).
const RUNS_PROGRAM: &[(&str, &[&str])] = &[
    ("sort", &["compress-program"]),
    ("split", &["filter"]),
    ("rg", &["pre"]),
    ("ag", &["pager"]),
    ("ack", &["pager"]),
    ("install", &["strip-program"]),
];

/// Shells whose `-c` scripts are read with the engine's own (bash) grammar.
const BASH_LIKE: &[&str] = &["bash", "sh", "dash", "rbash", "ash"];

/// Other shells: their scripts are never read.
const OTHER_SHELLS: &[&str] = &[
    "zsh", "ksh", "ksh93", "mksh", "pdksh", "yash", "fish", "csh", "tcsh", "elvish", "nu", "xonsh",
    "posh", "oksh", "loksh",
];

/// Programs that run commands of their own at any invocation (editors, debuggers).
const ALWAYS_OPAQUE: &[(&str, &str)] = &[
    ("vi", "an editor that can run shell commands"),
    ("vim", "an editor that can run shell commands"),
    ("nvim", "an editor that can run shell commands"),
    ("view", "an editor that can run shell commands"),
    ("vimdiff", "an editor that can run shell commands"),
    ("gvim", "an editor that can run shell commands"),
    ("ex", "an editor that can run shell commands"),
    ("ed", "an editor that can run shell commands"),
    ("emacs", "an editor that can run shell commands"),
    ("gdb", "a debugger runs commands (`-ex 'shell ...'`)"),
    ("lldb", "a debugger runs commands"),
    ("dc", "dc runs shell commands (`!`)"),
    ("eval", "eval runs a string as a command"),
    (
        "let",
        "let evaluates arithmetic, which can run code through array subscripts",
    ),
    ("trap", "trap runs a string as a command later"),
    ("enable", "enable loads builtins from shared libraries"),
    (
        "compgen",
        "compgen runs functions and commands (-C, -F) and expands words",
    ),
    ("complete", "complete registers commands to run"),
    ("compopt", "completion options are not analyzed"),
    ("fc", "fc runs an editor and commands from history"),
    ("bind", "bind can bind keys to shell commands"),
    ("history", "history is not analyzed"),
    ("coproc", "coproc is not analyzed"),
];

/// Variables whose value makes bash or common programs run code, load code or find programs
/// elsewhere: assigning one makes the command opaque.
pub(super) fn dangerous_variable(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "BASH_ENV",
        "ENV",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "PATH",
        "IFS",
        "CDPATH",
        "GLOBIGNORE",
        "HOME",
        "SHELL",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "MANPAGER",
        "MANOPT",
        "BROWSER",
        "INPUTRC",
        "EXECIGNORE",
        "TMPDIR",
        "CLASSPATH",
        "MAKEFLAGS",
        "MFLAGS",
        "MAKEFILES",
        "MAKESHELL",
        "TAR_OPTIONS",
        "RUSTC_WRAPPER",
        "RUSTC",
        "RUSTDOC",
        "CC",
        "CXX",
        "CPP",
        "LD",
        "AR",
        "OPENSSL_CONF",
        "PHPRC",
        "PHP_INI_SCAN_DIR",
        "TEXTDOMAINDIR",
        "TEXTDOMAIN",
        "LOCPATH",
        "TERMINFO",
        "HISTFILE",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CONFIG_DIRS",
        "ZDOTDIR",
        "PERLLIB",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "BASH_XTRACEFD",
        "BASH_COMPAT",
        "POSIXLY_CORRECT",
        "ZIP",
        "UNZIP",
        "GZIP",
        "BZIP",
        "BZIP2",
        "GREP_OPTIONS",
        "LESSKEY",
        "MAILRC",
        "VIMINIT",
        "EXINIT",
        "GNUPGHOME",
        "WGETRC",
        "CURL_HOME",
    ];
    const PREFIXES: &[&str] = &[
        "BASH_",
        "GIT_",
        "LD_",
        "DYLD_",
        "CARGO_",
        "RUSTUP_",
        "NPM_CONFIG_",
        "npm_config_",
        "PYTHON",
        "PERL",
        "RUBY",
        "NODE_",
        "LESS",
        "GCONV",
        "SSH_",
        "LUA_",
        "GEM_",
        "BUNDLE_",
        "PIP_",
        "UV_",
        "DOCKER_",
        "SUDO_",
        "MALLOC_",
        "GLIBC_",
    ];
    const SUFFIXES: &[&str] = &[
        "_PAGER",
        "_EDITOR",
        "_COMMAND",
        "_CMD",
        "_OPTIONS",
        "_OPTS",
        "_ASKPASS",
        "_WRAPPER",
        "_RUNNER",
        "_SHELL",
        "_PATH",
        "_PROGRAM",
        "_LAUNCHER",
        "_HOOK",
        "_HOOKS",
        "OPT",
        "_RC",
    ];
    !harmless_variable(name)
        && (EXACT.contains(&name)
            || PREFIXES.iter().any(|p| name.starts_with(p))
            || SUFFIXES.iter().any(|s| name.ends_with(s)))
}

/// Variables too harmless to be worth keeping in a subject (`LANG=C sort` is `sort`).
pub(super) fn harmless_variable(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "LANG",
        "LANGUAGE",
        "TZ",
        "NO_COLOR",
        "FORCE_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "COLUMNS",
        "LINES",
        "TERM",
        "COLORTERM",
        "RUST_BACKTRACE",
        "RUST_LOG",
        "NODE_ENV",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONIOENCODING",
        "CI",
        "DEBIAN_FRONTEND",
    ];
    EXACT.contains(&name) || name.starts_with("LC_")
}

/// A getopt-style option table.
#[derive(Default)]
struct Spec<'a> {
    /// Short options without a value.
    flags: &'a str,
    /// Short options with a value (the rest of the cluster, or the next word).
    values: &'a str,
    /// Short options whose value can only be attached (`-i[SUFFIX]`).
    optional: &'a str,
    long_flags: &'a [&'a str],
    long_values: &'a [&'a str],
    long_optional: &'a [&'a str],
    /// Options may come after operands (GNU getopt's default); otherwise the first operand ends
    /// them (wrappers: the command's own options follow).
    permute: bool,
    /// A lone `-NUMBER` is an option (`nice -10`).
    numbers: bool,
}

/// One option as written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Opt {
    /// `c` for `-c`, `--command` for long ones (full name).
    name: String,
    value: Option<OptValue>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum OptValue {
    Attached(String),
    Word(usize),
}

#[derive(Debug, Default)]
struct Scanned {
    opts: Vec<Opt>,
    /// Operand indexes, in order.
    operands: Vec<usize>,
    /// Without `permute`: the index of the first operand (everything from it on is operands).
    end: usize,
}

impl Scanned {
    fn has(&self, name: &str) -> bool {
        self.opts.iter().any(|o| o.name == name)
    }

    fn values<'w>(&self, names: &[&str], args: &'w [Wd]) -> Vec<ValueRef<'w>> {
        self.opts
            .iter()
            .filter(|o| names.contains(&o.name.as_str()))
            .filter_map(|o| match &o.value {
                Some(OptValue::Attached(s)) => Some(ValueRef::Text(s.clone())),
                Some(OptValue::Word(i)) => args.get(*i).map(ValueRef::Word),
                None => None,
            })
            .collect()
    }
}

enum ValueRef<'w> {
    Text(String),
    Word(&'w Wd),
}

impl ValueRef<'_> {
    fn text(&self) -> Option<&str> {
        match self {
            ValueRef::Text(s) => Some(s),
            ValueRef::Word(w) => w.lit(),
        }
    }
}

/// `--NAME[=VALUE]` where NAME abbreviates (is a prefix of) one of `longs`: getopt_long takes
/// any unambiguous prefix, so every prefix counts.
fn long_prefix_of(t: &str, longs: &[&str]) -> bool {
    match t.strip_prefix("--") {
        Some(long) => {
            let name = long.split('=').next().unwrap_or("");
            !name.is_empty() && longs.iter().any(|l| l.starts_with(name))
        }
        None => false,
    }
}

/// A bundle of short options (`-4oX`) holding one of `letters` (value characters included: an
/// over-approximation).
fn short_cluster_has(t: &str, letters: &str) -> bool {
    t.len() > 1
        && t.starts_with('-')
        && !t.starts_with("--")
        && t[1..].chars().any(|c| letters.contains(c))
}

fn unknown_option(prog: &str, option: &str) -> Opaque {
    Opaque::Code(format!(
        "`{prog}` option `{option}` is not in the engine's table"
    ))
}

fn computed_option(prog: &str, word: &Wd) -> Opaque {
    Opaque::Code(format!(
        "an argument of `{prog}` is computed at run time (`{}`) and may be an option",
        word.text
    ))
}

/// Resolves a long option name as getopt_long does: exact, or a unique prefix.
fn long_match<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    if let Some(exact) = candidates.iter().find(|c| **c == name) {
        return Some(exact);
    }
    let mut found = candidates.iter().filter(|c| c.starts_with(name));
    match (found.next(), found.next()) {
        (Some(one), None) if !name.is_empty() => Some(one),
        _ => None,
    }
}

/// Scans options from `start` following `spec`.
fn scan(prog: &str, args: &[Wd], start: usize, spec: &Spec) -> Result<Scanned, Opaque> {
    let mut out = Scanned {
        end: args.len(),
        ..Scanned::default()
    };
    let mut i = start;
    let mut options_done = false;
    while i < args.len() {
        let w = &args[i];
        if options_done {
            out.operands.push(i);
            i += 1;
            continue;
        }
        if !w.is_static {
            if w.may_start_dash {
                return Err(computed_option(prog, w));
            }
            if !spec.permute {
                out.end = i;
                out.operands.extend(i..args.len());
                return Ok(out);
            }
            out.operands.push(i);
            i += 1;
            continue;
        }
        let t = w.text.as_str();
        if t == "--" {
            options_done = true;
            if !spec.permute {
                out.end = i + 1;
                out.operands.extend(i + 1..args.len());
                return Ok(out);
            }
            i += 1;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let all: Vec<&str> = spec
                .long_flags
                .iter()
                .chain(spec.long_values)
                .chain(spec.long_optional)
                .copied()
                .collect();
            let Some(full) = long_match(name, &all) else {
                return Err(unknown_option(prog, t));
            };
            let value = if spec.long_values.contains(&full) {
                match attached {
                    Some(v) => Some(OptValue::Attached(v.to_string())),
                    None => {
                        i += 1;
                        if i >= args.len() {
                            return Err(unknown_option(prog, t));
                        }
                        Some(OptValue::Word(i))
                    }
                }
            } else if spec.long_optional.contains(&full) {
                attached.map(|v| OptValue::Attached(v.to_string()))
            } else if attached.is_some() {
                return Err(unknown_option(prog, t));
            } else {
                None
            };
            out.opts.push(Opt {
                name: format!("--{full}"),
                value,
            });
            i += 1;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            if spec.numbers && t[1..].bytes().all(|c| c.is_ascii_digit()) {
                out.opts.push(Opt {
                    name: "NUMBER".into(),
                    value: Some(OptValue::Attached(t[1..].to_string())),
                });
                i += 1;
                continue;
            }
            let cluster = &t[1..];
            let mut consumed_next = false;
            for (k, c) in cluster.char_indices() {
                let rest = &cluster[k + c.len_utf8()..];
                if spec.values.contains(c) {
                    let value = if rest.is_empty() {
                        if i + 1 >= args.len() {
                            return Err(unknown_option(prog, t));
                        }
                        consumed_next = true;
                        OptValue::Word(i + 1)
                    } else {
                        OptValue::Attached(rest.to_string())
                    };
                    out.opts.push(Opt {
                        name: c.to_string(),
                        value: Some(value),
                    });
                    break;
                }
                if spec.optional.contains(c) {
                    out.opts.push(Opt {
                        name: c.to_string(),
                        value: (!rest.is_empty()).then(|| OptValue::Attached(rest.to_string())),
                    });
                    break;
                }
                if spec.flags.contains(c) {
                    out.opts.push(Opt {
                        name: c.to_string(),
                        value: None,
                    });
                    continue;
                }
                return Err(unknown_option(prog, &format!("-{c}")));
            }
            i += if consumed_next { 2 } else { 1 };
            continue;
        }
        // An operand (a lone `-` included).
        if !spec.permute {
            out.end = i;
            out.operands.extend(i..args.len());
            return Ok(out);
        }
        out.operands.push(i);
        i += 1;
    }
    Ok(out)
}

/// After a wrapper's options: `NAME=value` words (env, sudo), then the command.
fn wrapped(args: &[Wd], from: usize, assignments: bool) -> Analysis {
    let mut k = from;
    if assignments {
        while args
            .get(k)
            .is_some_and(|w| w.text.contains('=') && !w.text.starts_with('='))
        {
            k += 1;
        }
    }
    let mut a = Analysis {
        runs_args: true,
        ..Analysis::default()
    };
    if k < args.len() || k > from {
        a.inner.push(Inner::Command {
            assigns: from..k,
            words: k..args.len(),
        });
    }
    a
}

/// A script operand of a shell or interpreter: opaque when it is read from a descriptor or
/// computed at run time.
fn script_operand(prog: &str, w: &Wd) -> Option<Opaque> {
    if !w.is_static {
        return Some(Opaque::DynamicScript);
    }
    let t = w.text.as_str();
    let from_descriptor =
        t == "-" || t.starts_with("/dev/") || t.starts_with("/proc/") || t.contains("/fd/");
    if from_descriptor {
        return Some(Opaque::StdinScript);
    }
    let _ = prog;
    None
}

/// The analysis of `name args...`.
pub(super) fn analyze(name: &str, args: &[Wd]) -> Analysis {
    if let Some((_, why)) = ALWAYS_OPAQUE.iter().find(|(n, _)| *n == name) {
        let mut a = Analysis::opaque(*why);
        if name == "eval" {
            a.opaque = Some(Opaque::Eval);
        }
        return a;
    }
    if BASH_LIKE.contains(&name) {
        return shell(name, args);
    }
    if OTHER_SHELLS.contains(&name) {
        return other_shell(name, args);
    }
    match name {
        "sudo" => sudo(args),
        "doas" => wrapper(
            name,
            args,
            &Spec {
                flags: "nL",
                values: "uC",
                ..Spec::default()
            },
            0,
            false,
            &["s"],
        ),
        "env" => env(args),
        "command" => command_builtin(args),
        "builtin" => wrapped(args, 0, false),
        "exec" => wrapper(
            name,
            args,
            &Spec {
                flags: "cl",
                values: "a",
                ..Spec::default()
            },
            0,
            false,
            &[],
        ),
        "nohup" => wrapper(name, args, &Spec::default(), 0, false, &[]),
        "nice" => wrapper(
            name,
            args,
            &Spec {
                values: "n",
                long_values: &["adjustment"],
                numbers: true,
                ..Spec::default()
            },
            0,
            false,
            &[],
        ),
        "ionice" => wrapper(
            name,
            args,
            &Spec {
                flags: "t",
                values: "cnpPu",
                long_flags: &["ignore"],
                long_values: &["class", "classdata", "pid", "pgid", "uid"],
                ..Spec::default()
            },
            0,
            false,
            &[],
        ),
        "timeout" => wrapper(
            name,
            args,
            &Spec {
                flags: "fpv",
                values: "ks",
                long_flags: &["foreground", "preserve-status", "verbose"],
                long_values: &["kill-after", "signal"],
                ..Spec::default()
            },
            1,
            false,
            &[],
        ),
        "time" => wrapper(
            name,
            args,
            &Spec {
                flags: "apqvV",
                values: "fo",
                long_flags: &["append", "portability", "quiet", "verbose"],
                long_values: &["format", "output"],
                ..Spec::default()
            },
            0,
            false,
            &[],
        ),
        "stdbuf" => wrapper(
            name,
            args,
            &Spec {
                values: "ioe",
                long_values: &["input", "output", "error"],
                ..Spec::default()
            },
            0,
            false,
            &[],
        ),
        "setsid" => wrapper(
            name,
            args,
            &Spec {
                flags: "cfw",
                long_flags: &["ctty", "fork", "wait"],
                ..Spec::default()
            },
            0,
            false,
            &[],
        ),
        "taskset" => wrapper(
            name,
            args,
            &Spec {
                flags: "ac",
                long_flags: &["all-tasks", "cpu-list"],
                ..Spec::default()
            },
            1,
            false,
            &["p", "--pid"],
        ),
        "chrt" => wrapper(
            name,
            args,
            &Spec {
                flags: "abdfiormRv",
                values: "TPD",
                long_flags: &[
                    "all-tasks",
                    "batch",
                    "deadline",
                    "fifo",
                    "idle",
                    "other",
                    "rr",
                    "reset-on-fork",
                    "verbose",
                ],
                long_values: &["sched-runtime", "sched-period", "sched-deadline"],
                ..Spec::default()
            },
            1,
            false,
            &["p", "m", "--pid", "--max"],
        ),
        "chroot" => wrapper(
            name,
            args,
            &Spec {
                long_flags: &["skip-chdir"],
                long_values: &["userspec", "groups"],
                ..Spec::default()
            },
            1,
            false,
            &[],
        ),
        "flock" => flock(args),
        "su" | "runuser" => su(name, args),
        "sg" => sg(args),
        "script" => script(args),
        "watch" => watch(args),
        "xargs" => xargs(args),
        "busybox" => match args.first() {
            Some(applet) if applet.is_static => {
                analyze(super::walk::basename(&applet.text), &args[1..]).shifted(1)
            }
            Some(applet) => Analysis::from(computed_option("busybox", applet)),
            None => Analysis::default(),
        },
        "source" | "." => source(args),
        "set" => set(args),
        "shopt" => shopt(args),
        "alias" => {
            if args.iter().any(|w| w.text.contains('=') || !w.is_static) {
                Analysis::opaque("alias defines commands (run once expand_aliases is on)")
            } else {
                Analysis::default()
            }
        }
        "hash" => {
            if args
                .iter()
                .all(|w| matches!(w.lit(), Some("-r" | "-l" | "-t" | "-d")))
            {
                Analysis::default()
            } else {
                Analysis::opaque("hash can make a command name run another program (-p)")
            }
        }
        "declare" | "typeset" | "local" | "export" | "readonly" => declare(name, args),
        "read" => names_builtin(
            name,
            args,
            &Spec {
                flags: "ersE",
                values: "adinNptu",
                ..Spec::default()
            },
            &["a"],
            true,
        ),
        "mapfile" | "readarray" => {
            if args.iter().any(|w| {
                w.lit()
                    .is_some_and(|t| t.starts_with('-') && t.contains('C'))
            }) {
                return Analysis::opaque(format!("`{name} -C` runs a command for each line"));
            }
            names_builtin(
                name,
                args,
                &Spec {
                    flags: "t",
                    values: "cdnOsu",
                    ..Spec::default()
                },
                &[],
                true,
            )
        }
        "printf" => printf(args),
        "getopts" => getopts(args),
        "wait" => names_builtin(
            name,
            args,
            &Spec {
                flags: "fn",
                values: "p",
                ..Spec::default()
            },
            &["p"],
            false,
        ),
        "unset" => names_builtin(
            name,
            args,
            &Spec {
                flags: "fvn",
                ..Spec::default()
            },
            &[],
            true,
        ),
        "test" | "[" => test_builtin(name, args),
        "find" => find(args),
        "fd" | "fdfind" => fd(args),
        "sed" | "gsed" => sed(args),
        "awk" | "gawk" | "mawk" | "nawk" => awk(name, args),
        "tar" | "gtar" | "bsdtar" => tar(args),
        "make" | "gmake" | "remake" => make(args),
        "git" => git(args),
        "less" | "more" | "most" | "pg" => pager(name, args),
        "man" => man(args),
        "sqlite3" | "sqlite" => sqlite(args),
        "ssh" | "scp" | "sftp" => ssh(name, args),
        "rsync" => rsync(args),
        "cargo" => {
            // cargo runs the project's own code (build scripts, tests), not its arguments.
            let mut a = Analysis::default().changes_paths();
            if let Some(w) = args.iter().find(|w| {
                w.lit()
                    .is_some_and(|t| t == "--config" || t.starts_with("--config="))
            }) {
                a.opaque = Some(Opaque::Code(format!(
                    "`cargo {}` can set a runner or wrapper that cargo runs",
                    w.text
                )));
            }
            a
        }
        "wget" => {
            let mut a = unknown(name, args);
            let code = args.iter().any(|w| {
                w.lit().is_some_and(|t| {
                    t == "-e"
                        || t.starts_with("--execute")
                        || t.starts_with("--use-askpass")
                        || t.starts_with("--config")
                })
            });
            if code {
                a.opaque = Some(Opaque::Code(
                    "wget runs configured commands (-e, --use-askpass)".into(),
                ));
            }
            a
        }
        "deno" => {
            let mut a = unknown(name, args);
            match args.first().and_then(Wd::lit) {
                Some("eval" | "repl") | None => a.opaque = Some(Opaque::InlineCode),
                _ => {}
            }
            a
        }
        _ => {
            if let Some(a) = interpreter(name, args) {
                return a;
            }
            if DATA.contains(&name) {
                return data(name, args);
            }
            unknown(name, args)
        }
    }
}

/// A data program: its arguments are data, unless one of its options runs a program.
fn data(name: &str, args: &[Wd]) -> Analysis {
    let mut a = Analysis::default();
    if CHANGES_PATHS.contains(&name) {
        a.changes_paths = true;
    }
    match written_files(name, args) {
        Ok(files) => a.writes = files,
        Err(o) => return a.with(Some(o)),
    }
    if let Some((_, longs)) = RUNS_PROGRAM.iter().find(|(n, _)| *n == name) {
        for w in args {
            if w.model_chosen() && w.may_start_dash {
                return a.with(Some(computed_option(name, w)));
            }
            if let Some(t) = w.lit() {
                if long_prefix_of(t, longs) {
                    return a.with(Some(Opaque::Code(format!(
                        "`{name} {t}` runs another program"
                    ))));
                }
            }
        }
    }
    a
}

/// The files a data program writes, as `file_write` subjects: `tee FILE...`, `touch FILE...`,
/// `truncate FILE...`, the destination of `cp`/`mv`/`ln`/`install` (the last operand, or
/// `-t DIR`), `dd of=FILE`, `sort -o FILE`. A destination computed at run time is opaque
/// through its own word (a dynamic path subject).
fn written_files(name: &str, args: &[Wd]) -> Result<Vec<usize>, Opaque> {
    let all_operands = |spec: &Spec| scan(name, args, 0, spec).map(|s| s.operands);
    match name {
        "tee" => all_operands(&Spec {
            flags: "aip",
            long_flags: &["append", "ignore-interrupts"],
            long_optional: &["output-error"],
            permute: true,
            ..Spec::default()
        }),
        "touch" => all_operands(&Spec {
            flags: "acfhm",
            values: "drt",
            long_flags: &["no-create", "no-dereference"],
            long_values: &["date", "reference", "time"],
            permute: true,
            ..Spec::default()
        }),
        "truncate" => all_operands(&Spec {
            flags: "co",
            values: "rs",
            long_flags: &["no-create", "io-blocks"],
            long_values: &["reference", "size"],
            permute: true,
            ..Spec::default()
        }),
        "cp" | "mv" | "ln" | "install" => {
            let spec = Spec {
                flags: "abdfHiLlnPprsTuvxRDcCZ",
                values: "tSgmoZ",
                long_flags: &[
                    "archive",
                    "force",
                    "interactive",
                    "link",
                    "dereference",
                    "no-clobber",
                    "no-dereference",
                    "parents",
                    "recursive",
                    "remove-destination",
                    "strip-trailing-slashes",
                    "symbolic-link",
                    "no-target-directory",
                    "update",
                    "verbose",
                    "one-file-system",
                    "relative",
                    "logical",
                    "physical",
                    "debug",
                    "attributes-only",
                    "copy-contents",
                    "compare",
                    "preserve-context",
                    "strip",
                    "directory",
                ],
                long_values: &[
                    "target-directory",
                    "suffix",
                    "group",
                    "mode",
                    "owner",
                    "context",
                    "strip-program",
                ],
                long_optional: &[
                    "backup",
                    "preserve",
                    "no-preserve",
                    "reflink",
                    "sparse",
                    "update",
                ],
                permute: true,
                ..Spec::default()
            };
            let s = scan(name, args, 0, &spec)?;
            let target = s
                .opts
                .iter()
                .find(|o| o.name == "t" || o.name == "--target-directory")
                .and_then(|o| match o.value {
                    Some(OptValue::Word(i)) => Some(i),
                    _ => None,
                });
            Ok(match (target, s.operands.last()) {
                (Some(t), _) => vec![t],
                (None, Some(&last)) if s.operands.len() >= 2 => vec![last],
                _ => Vec::new(),
            })
        }
        "dd" => Ok(args
            .iter()
            .position(|w| w.static_prefix().starts_with("of="))
            .into_iter()
            .collect()),
        "sort" => {
            let s = scan(
                name,
                args,
                0,
                &Spec {
                    flags: "bcCdfghiMmnRrsuVz",
                    values: "kotST",
                    long_values: &[
                        "output",
                        "key",
                        "field-separator",
                        "buffer-size",
                        "temporary-directory",
                        "parallel",
                        "files0-from",
                        "random-source",
                        "sort",
                        "batch-size",
                        "compress-program",
                    ],
                    long_flags: &[
                        "ignore-leading-blanks",
                        "dictionary-order",
                        "ignore-case",
                        "general-numeric-sort",
                        "ignore-nonprinting",
                        "month-sort",
                        "human-numeric-sort",
                        "numeric-sort",
                        "random-sort",
                        "reverse",
                        "version-sort",
                        "check",
                        "merge",
                        "stable",
                        "unique",
                        "zero-terminated",
                        "debug",
                    ],
                    permute: true,
                    ..Spec::default()
                },
            )?;
            Ok(s.opts
                .iter()
                .filter(|o| o.name == "o" || o.name == "--output")
                .filter_map(|o| match o.value {
                    Some(OptValue::Word(i)) => Some(i),
                    _ => None,
                })
                .collect())
        }
        _ => Ok(Vec::new()),
    }
}

/// A program the table does not know: it may run commands from its arguments, so deny rules
/// are tried on them; an argument the model computes at run time may be such a command.
fn unknown(name: &str, args: &[Wd]) -> Analysis {
    let mut a = Analysis {
        runs_args: true,
        guess_args: true,
        changes_paths: true,
        ..Analysis::default()
    };
    if let Some(w) = args.iter().find(|w| w.model_chosen() && !w.path_glob()) {
        a.opaque = Some(Opaque::Code(format!(
            "an argument of `{name}` is computed at run time (`{}`) and may be a command it runs",
            w.text
        )));
    }
    a
}

/// A wrapper: options per `spec`, `positional` operands of its own, then the command.
/// `no_command`: options after which it runs no command (`taskset -p`).
fn wrapper(
    name: &str,
    args: &[Wd],
    spec: &Spec,
    positional: usize,
    assignments: bool,
    no_command: &[&str],
) -> Analysis {
    let s = match scan(name, args, 0, spec) {
        Ok(s) => s,
        Err(o) => {
            return Analysis {
                runs_args: true,
                ..Analysis::from(o)
            }
        }
    };
    if no_command
        .iter()
        .any(|o| s.has(o.trim_start_matches('-')) || s.has(o))
    {
        return Analysis::default();
    }
    if let Some(w) = args[s.end..]
        .iter()
        .take(positional)
        .find(|w| w.model_chosen())
    {
        return Analysis {
            runs_args: true,
            ..Analysis::from(computed_option(name, w))
        };
    }
    wrapped(args, (s.end + positional).min(args.len()), assignments)
}

fn sudo(args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "AbEHKklnPSVv",
        values: "CDghpRrtTUu",
        long_flags: &[
            "askpass",
            "background",
            "bell",
            "preserve-groups",
            "set-home",
            "remove-timestamp",
            "reset-timestamp",
            "list",
            "non-interactive",
            "stdin",
            "version",
            "validate",
            "help",
            "edit",
            "login",
            "shell",
        ],
        long_values: &[
            "close-from",
            "chdir",
            "group",
            "host",
            "prompt",
            "chroot",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "user",
        ],
        long_optional: &["preserve-env"],
        ..Spec::default()
    };
    let s = match scan("sudo", args, 0, &spec) {
        Ok(s) => s,
        Err(o) => {
            // `sudo -e` / `-i` / `-s` are unknown to the table's flags on purpose.
            return Analysis {
                runs_args: true,
                ..Analysis::from(o)
            };
        }
    };
    if ["--edit", "--login", "--shell"].iter().any(|o| s.has(o)) {
        return Analysis::opaque("sudo runs a shell or an editor");
    }
    if [
        "l",
        "v",
        "k",
        "K",
        "V",
        "--list",
        "--validate",
        "--version",
        "--help",
    ]
    .iter()
    .any(|o| s.has(o))
        && s.end >= args.len()
    {
        return Analysis::default();
    }
    wrapped(args, s.end, true)
}

fn env(args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "i0v",
        values: "uC",
        long_flags: &[
            "ignore-environment",
            "null",
            "debug",
            "list-signal-handling",
        ],
        long_values: &["unset", "chdir"],
        long_optional: &["block-signal", "default-signal", "ignore-signal"],
        ..Spec::default()
    };
    if args.iter().any(|w| {
        w.lit().is_some_and(|t| {
            (t.starts_with('-') && !t.starts_with("--") && t.contains('S'))
                || t.starts_with("--split-string")
                || (t.starts_with("--s")
                    && "--split-string".starts_with(t.split('=').next().unwrap_or(t)))
        })
    }) {
        return Analysis {
            runs_args: true,
            ..Analysis::opaque("env -S splits a string into a command with its own escapes")
        };
    }
    let start = usize::from(args.first().and_then(Wd::lit) == Some("-"));
    let s = match scan("env", args, start, &spec) {
        Ok(s) => s,
        Err(o) => {
            return Analysis {
                runs_args: true,
                ..Analysis::from(o)
            }
        }
    };
    wrapped(args, s.end, true)
}

fn command_builtin(args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "pvV",
        ..Spec::default()
    };
    match scan("command", args, 0, &spec) {
        Ok(s) if s.has("v") || s.has("V") => Analysis::default(),
        Ok(s) => wrapped(args, s.end, false),
        Err(o) => Analysis {
            runs_args: true,
            ..Analysis::from(o)
        },
    }
}

fn flock(args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "sexnoFuhV",
        values: "wE",
        long_flags: &[
            "shared",
            "exclusive",
            "nonblock",
            "nb",
            "close",
            "no-fork",
            "unlock",
            "verbose",
            "help",
            "version",
        ],
        long_values: &["timeout", "wait", "conflict-exit-code"],
        ..Spec::default()
    };
    let s = match scan("flock", args, 0, &spec) {
        Ok(s) => s,
        Err(o) => {
            return Analysis {
                runs_args: true,
                ..Analysis::from(o)
            }
        }
    };
    let after_file = s.end + 1;
    match args.get(after_file).and_then(Wd::lit) {
        Some("-c" | "--command") => shell_string("flock", args.get(after_file + 1), Dialect::Posix),
        _ if after_file <= args.len() => wrapped(args, after_file, false),
        _ => Analysis::default(),
    }
}

/// A command string run by a shell (`sh -c` unless `dialect` says bash).
fn shell_string(prog: &str, w: Option<&Wd>, dialect: Dialect) -> Analysis {
    match w {
        Some(w) if w.is_static => Analysis {
            inner: vec![Inner::Script(w.text.clone(), dialect)],
            changes_paths: true,
            ..Analysis::default()
        },
        Some(_) => Analysis::from(Opaque::DynamicScript),
        None => {
            let _ = prog;
            Analysis::from(Opaque::StdinScript)
        }
    }
}

fn su(name: &str, args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "lmpfP",
        values: "cgGsw",
        long_flags: &["login", "preserve-environment", "pty", "help", "version"],
        long_values: &[
            "command",
            "session-command",
            "group",
            "supp-group",
            "shell",
            "whitelist-environment",
        ],
        permute: true,
        ..Spec::default()
    };
    let s = match scan(name, args, 0, &spec) {
        Ok(s) => s,
        Err(o) => return Analysis::from(o),
    };
    if s.has("s") || s.has("--shell") {
        return Analysis::opaque(format!("`{name} -s` runs another shell"));
    }
    let scripts = s.values(&["c", "--command", "--session-command"], args);
    match scripts.first() {
        Some(ValueRef::Word(w)) => shell_string(name, Some(w), Dialect::Posix),
        Some(ValueRef::Text(t)) => Analysis {
            inner: vec![Inner::Script(t.clone(), Dialect::Posix)],
            changes_paths: true,
            ..Analysis::default()
        },
        None => Analysis::from(Opaque::StdinScript),
    }
}

fn sg(args: &[Wd]) -> Analysis {
    // `sg GROUP [-c] COMMAND`: the command string is run by /bin/sh -c.
    let rest = args.get(1..).unwrap_or(&[]);
    let command = match rest.first().and_then(Wd::lit) {
        Some("-c") => rest.get(1),
        _ => rest.first(),
    };
    shell_string("sg", command, Dialect::Posix)
}

fn script(args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "aefqkrT",
        values: "cEIOBmoT",
        optional: "t",
        long_flags: &["append", "return", "flush", "force", "quiet", "echo-never"],
        long_values: &[
            "command",
            "echo",
            "log-in",
            "log-out",
            "log-io",
            "log-timing",
            "logging-format",
            "output-limit",
        ],
        long_optional: &["timing"],
        permute: true,
        ..Spec::default()
    };
    let s = match scan("script", args, 0, &spec) {
        Ok(s) => s,
        Err(o) => return Analysis::from(o),
    };
    match s.values(&["c", "--command"], args).first() {
        Some(ValueRef::Word(w)) => shell_string("script", Some(w), Dialect::Posix),
        Some(ValueRef::Text(t)) => Analysis {
            inner: vec![Inner::Script(t.clone(), Dialect::Posix)],
            changes_paths: true,
            ..Analysis::default()
        },
        None => Analysis::from(Opaque::StdinScript),
    }
}

fn watch(args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "bcCegptwxr",
        values: "nq",
        optional: "d",
        long_flags: &[
            "beep", "color", "no-color", "errexit", "chgexit", "precise", "no-title", "no-wrap",
            "exec", "no-rerun",
        ],
        long_values: &["interval", "equexit"],
        long_optional: &["differences"],
        ..Spec::default()
    };
    let s = match scan("watch", args, 0, &spec) {
        Ok(s) => s,
        Err(o) => {
            return Analysis {
                runs_args: true,
                ..Analysis::from(o)
            }
        }
    };
    if s.has("x") || s.has("--exec") {
        return wrapped(args, s.end, false);
    }
    let rest = &args[s.end..];
    if rest.iter().all(|w| w.is_static) {
        let joined = rest
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if joined.is_empty() {
            return Analysis::default();
        }
        Analysis {
            inner: vec![Inner::Script(joined, Dialect::Posix)],
            runs_args: true,
            changes_paths: true,
            ..Analysis::default()
        }
    } else {
        Analysis {
            runs_args: true,
            ..Analysis::from(Opaque::DynamicScript)
        }
    }
}

fn xargs(args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "0prtx",
        values: "aEdILnPs",
        optional: "eil",
        long_flags: &[
            "null",
            "interactive",
            "no-run-if-empty",
            "verbose",
            "exit",
            "open-tty",
            "show-limits",
        ],
        long_values: &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        long_optional: &["eof", "replace", "max-lines"],
        ..Spec::default()
    };
    let why = Opaque::Code("xargs runs a command with arguments read from its input".into());
    match scan("xargs", args, 0, &spec) {
        Ok(s) => {
            let mut a = wrapped(args, s.end, false);
            a.opaque = Some(why);
            a.changes_paths = true;
            a
        }
        Err(o) => Analysis {
            runs_args: true,
            ..Analysis::from(o)
        },
    }
}

fn source(args: &[Wd]) -> Analysis {
    let mut a = Analysis::default().changes_paths();
    match args.first() {
        None => a.with(Some(Opaque::StdinScript)),
        Some(w) => {
            a.opaque = script_operand("source", w);
            a.with(None)
        }
    }
}

fn set(args: &[Wd]) -> Analysis {
    const SAFE_O: &[&str] = &[
        "errexit",
        "errtrace",
        "functrace",
        "hashall",
        "monitor",
        "noclobber",
        "noexec",
        "noglob",
        "notify",
        "nounset",
        "physical",
        "pipefail",
        "verbose",
        "xtrace",
        "allexport",
        "nolog",
        "ignoreeof",
        "onecmd",
        "history",
        "braceexpand",
    ];
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let Some(t) = w.lit() else {
            return Analysis::from(computed_option("set", w));
        };
        if t == "--" || t == "-" || !(t.starts_with('-') || t.starts_with('+')) {
            return Analysis::default(); // the rest are positional parameters
        }
        for c in t[1..].chars() {
            match c {
                'o' => {
                    i += 1;
                    match args.get(i).and_then(Wd::lit) {
                        Some(opt) if SAFE_O.contains(&opt) => {}
                        None if i >= args.len() => {}
                        _ => {
                            return Analysis::opaque(
                                "`set -o` with this option changes how bash reads or runs later commands",
                            )
                        }
                    }
                }
                'a' | 'b' | 'e' | 'f' | 'h' | 'm' | 'n' | 'p' | 't' | 'u' | 'v' | 'x' | 'B'
                | 'C' | 'E' | 'P' | 'T' => {}
                _ => {
                    return Analysis::opaque(format!(
                        "`set -{c}` changes how bash runs later commands"
                    ))
                }
            }
        }
        i += 1;
    }
    Analysis::default()
}

fn shopt(args: &[Wd]) -> Analysis {
    const SAFE: &[&str] = &[
        "nullglob",
        "failglob",
        "dotglob",
        "globstar",
        "nocaseglob",
        "nocasematch",
        "lastpipe",
        "inherit_errexit",
        "globasciiranges",
        "checkwinsize",
        "cmdhist",
        "lithist",
    ];
    let mut setting = false;
    for w in args {
        match w.lit() {
            Some(t) if t.starts_with('-') && t.len() > 1 => {
                if t[1..].chars().any(|c| !"supqo".contains(c)) {
                    return Analysis::from(unknown_option("shopt", t));
                }
                setting |= t.contains(['s', 'u', 'o']);
            }
            Some(name) if !setting || SAFE.contains(&name) => {}
            _ => {
                return Analysis::opaque(
                    "shopt changes how bash reads later lines (extglob, expand_aliases, ...)",
                )
            }
        }
    }
    Analysis::default()
}

/// Checks a name a builtin will assign: a plain variable, not one that changes how commands run.
fn name_operand(prog: &str, w: &Wd) -> Option<Opaque> {
    match w.lit() {
        Some(t) if is_name(t) && !dangerous_variable(t) => None,
        Some(t) if is_name(t) => Some(Opaque::Code(format!(
            "`{prog}` assigns `{t}`, which changes how commands run"
        ))),
        Some(t) => Some(Opaque::Code(format!(
            "`{prog}` is given `{t}`: a subscript is evaluated as arithmetic, which can run code"
        ))),
        None => Some(Opaque::Code(format!(
            "`{prog}` is given a variable name computed at run time (`{}`)",
            w.text
        ))),
    }
}

/// `read`, `mapfile`, `unset`: options per `spec`; operands (and `name_opts` values) are names.
fn names_builtin(
    prog: &str,
    args: &[Wd],
    spec: &Spec,
    name_opts: &[&str],
    operands_are_names: bool,
) -> Analysis {
    let s = match scan(prog, args, 0, spec) {
        Ok(s) => s,
        Err(o) => return Analysis::from(o),
    };
    let mut names: Vec<&Wd> = Vec::new();
    for opt in &s.opts {
        if name_opts.contains(&opt.name.as_str()) {
            match &opt.value {
                Some(OptValue::Word(i)) => names.extend(args.get(*i)),
                Some(OptValue::Attached(t)) if !is_name(t) || dangerous_variable(t) => {
                    return Analysis::opaque(format!("`{prog}` is given the name `{t}`"))
                }
                _ => {}
            }
        }
    }
    if operands_are_names {
        names.extend(s.operands.iter().filter_map(|&i| args.get(i)));
    }
    let opaque = names.iter().find_map(|w| name_operand(prog, w));
    Analysis::default().with(opaque)
}

fn printf(args: &[Wd]) -> Analysis {
    let Some(first) = args.first() else {
        return Analysis::default();
    };
    match first.lit() {
        Some("-v") => match args.get(1) {
            Some(w) => Analysis::default().with(name_operand("printf -v", w)),
            None => Analysis::default(),
        },
        Some(t) if t.starts_with("-v") => {
            let name = &t[2..];
            if is_name(name) && !dangerous_variable(name) {
                Analysis::default()
            } else {
                Analysis::opaque(format!("`printf -v` is given the name `{name}`"))
            }
        }
        Some(_) => Analysis::default(),
        // A computed first word may be `-v` (or vanish, with nullglob, and let a later `-v`
        // take its place).
        None if first.model_chosen() => Analysis::from(computed_option("printf", first)),
        None => Analysis::default(),
    }
}

fn getopts(args: &[Wd]) -> Analysis {
    match args.get(1) {
        Some(w) => Analysis::default().with(name_operand("getopts", w)),
        None => Analysis::default(),
    }
}

fn test_builtin(prog: &str, args: &[Wd]) -> Analysis {
    for (i, w) in args.iter().enumerate() {
        // A computed word that splits may become `-v` and a subscript by itself.
        if w.model_chosen() && w.splits {
            return Analysis::from(computed_option(prog, w));
        }
        let may_be_v =
            matches!(w.lit(), Some("-v" | "-R")) || (w.model_chosen() && w.may_start_dash);
        if !may_be_v {
            continue;
        }
        if let Some(next) = args.get(i + 1) {
            let subscript_free = next.lit().is_some_and(|t| !t.contains('['));
            if !subscript_free {
                return Analysis::opaque(format!(
                    "`{prog} -v` evaluates a subscript of `{}` as arithmetic",
                    next.text
                ));
            }
        }
    }
    Analysis::default()
}

fn declare(prog: &str, args: &[Wd]) -> Analysis {
    for w in args {
        if let Some(t) = w.lit() {
            if let Some(flags) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
                if let Some(c) = flags.chars().find(|c| !"aAfFglprtuxS".contains(*c)) {
                    return Analysis::opaque(format!(
                        "`{prog} -{c}` makes later assignments evaluate or follow names"
                    ));
                }
                continue;
            }
        }
        // NAME, NAME=value or NAME[sub]=value: the name part must be plain text.
        let head = w.static_prefix();
        let name_end = head.find(['=', '[', '+']).unwrap_or(head.len());
        let name = &head[..name_end];
        let whole_name = w.is_static || head.len() > name_end;
        if !whole_name || !is_name(name) {
            return Analysis::opaque(format!(
                "`{prog}` is given `{}`, whose variable name is not plain text",
                w.text
            ));
        }
        if head[name_end..].starts_with('[') {
            let sub = head[name_end + 1..].split(']').next().unwrap_or("");
            if !super::walk::numeric_subscript(sub) {
                return Analysis::opaque(format!(
                    "`{prog} {name}[{sub}]`: a subscript is evaluated as arithmetic"
                ));
            }
        }
        if head.contains('=') && dangerous_variable(name) {
            return Analysis::opaque(format!(
                "`{prog}` assigns `{name}`, which changes how commands run"
            ));
        }
        // `declare -a 'x=([$(cmd)]=1)'`: a value that is an array literal is parsed as one,
        // subscripts and all.
        let value = head.split_once('=').map(|(_, v)| v);
        let quoted_array = !w.array_literal
            && (value.is_some_and(|v| v.trim_start().starts_with('('))
                || (!w.is_static && head.contains('=') && head.ends_with('=')));
        if quoted_array {
            return Analysis::opaque(format!(
                "`{prog} {}`: an array given as a string has its subscripts evaluated",
                w.text
            ));
        }
    }
    Analysis::default()
}

fn shell(name: &str, args: &[Wd]) -> Analysis {
    const SAFE_O: &[&str] = &[
        "errexit",
        "errtrace",
        "functrace",
        "hashall",
        "noclobber",
        "noglob",
        "nounset",
        "pipefail",
        "verbose",
        "xtrace",
        "allexport",
        "braceexpand",
        "physical",
    ];
    let mut i = 0;
    let mut dash_c = false;
    let mut stdin = false;
    while i < args.len() {
        let w = &args[i];
        let Some(t) = w.lit() else {
            if w.may_start_dash {
                return Analysis::from(computed_option(name, w));
            }
            break;
        };
        if t == "--" || t == "-" {
            stdin |= t == "-";
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            const FINE: &[&str] = &[
                "norc",
                "noprofile",
                "login",
                "posix",
                "restricted",
                "verbose",
                "noediting",
                "version",
                "help",
            ];
            if !FINE.contains(&long) {
                return Analysis::from(unknown_option(name, t));
            }
            i += 1;
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            i += 1;
            for c in t[1..].chars() {
                match c {
                    'c' => dash_c = true,
                    's' => stdin = true,
                    'o' => {
                        match args.get(i).and_then(Wd::lit) {
                            Some(opt) if SAFE_O.contains(&opt) => {}
                            _ => return Analysis::from(unknown_option(name, "-o")),
                        }
                        i += 1;
                    }
                    'i' | 'l' | 'r' | 'e' | 'u' | 'x' | 'v' | 'n' | 'f' | 'h' | 'a' | 'b' | 'm'
                    | 'p' | 't' | 'B' | 'C' | 'E' | 'P' | 'T' => {}
                    _ => return Analysis::from(unknown_option(name, &format!("-{c}"))),
                }
            }
            continue;
        }
        break;
    }
    if dash_c {
        let dialect = if matches!(name, "bash" | "rbash") {
            Dialect::Bash
        } else {
            Dialect::Posix
        };
        return shell_string(name, args.get(i), dialect);
    }
    if stdin || i >= args.len() {
        let info = args
            .iter()
            .any(|w| matches!(w.lit(), Some("--version" | "--help")));
        return if info {
            Analysis::default()
        } else {
            Analysis::from(Opaque::StdinScript)
        };
    }
    Analysis::default()
        .changes_paths()
        .with(script_operand(name, &args[i]))
}

fn other_shell(name: &str, args: &[Wd]) -> Analysis {
    let inline = args.iter().any(|w| {
        w.lit().is_some_and(|t| {
            t == "--command"
                || t.starts_with("--command=")
                || (t.starts_with('-') && !t.starts_with("--") && t.contains('c'))
        })
    });
    if inline {
        return Analysis::opaque(format!(
            "`{name} -c`: only bash and sh scripts are read by the engine"
        ));
    }
    match args
        .iter()
        .find(|w| !w.lit().is_some_and(|t| t.starts_with('-')))
    {
        Some(w) => Analysis::default()
            .changes_paths()
            .with(script_operand(name, w)),
        None => Analysis::from(Opaque::StdinScript),
    }
}

/// Interpreters: inline code, modules and preloads, and scripts read from stdin are opaque; a
/// script file is not (its contents are not read: see docs/permissions.md).
fn interpreter(name: &str, args: &[Wd]) -> Option<Analysis> {
    struct Interp {
        /// Short option letters that run code given on the command line (or load it).
        code: &'static str,
        /// Long options that do.
        code_long: &'static [&'static str],
        /// Short options taking a value in the next word (to find the script operand).
        values: &'static str,
        /// Reads its program from stdin when no script is given.
        stdin: bool,
    }
    let spec = if name.starts_with("python") || name.starts_with("pypy") {
        Interp {
            code: "cmi",
            code_long: &[],
            values: "WXQ",
            stdin: true,
        }
    } else if matches!(name, "node" | "nodejs") {
        Interp {
            code: "epri",
            code_long: &[
                "eval",
                "print",
                "require",
                "import",
                "loader",
                "experimental-loader",
                "env-file",
                "env-file-if-exists",
                "interactive",
                "openssl-config",
                "snapshot-blob",
                "input-type",
            ],
            values: "",
            stdin: true,
        }
    } else if name == "bun" {
        Interp {
            code: "epr",
            code_long: &["eval", "print", "preload", "require"],
            values: "",
            stdin: false,
        }
    } else if name == "perl" || name.starts_with("perl5") {
        Interp {
            code: "eEMmdxF",
            code_long: &[],
            values: "I",
            stdin: true,
        }
    } else if name == "ruby" {
        Interp {
            code: "erx",
            code_long: &["require"],
            values: "I",
            stdin: true,
        }
    } else if name == "php" {
        Interp {
            code: "raBREFdczS",
            code_long: &[
                "run",
                "interactive",
                "process-begin",
                "process-code",
                "process-end",
                "process-file",
                "define",
                "php-ini",
                "zend-extension",
            ],
            values: "f",
            stdin: true,
        }
    } else if name.starts_with("lua") {
        Interp {
            code: "eli",
            code_long: &[],
            values: "",
            stdin: true,
        }
    } else if matches!(name, "Rscript" | "R") {
        Interp {
            code: "e",
            code_long: &["expr"],
            values: "",
            stdin: true,
        }
    } else if name == "julia" {
        Interp {
            code: "eEL",
            code_long: &["eval", "print", "load"],
            values: "",
            stdin: true,
        }
    } else if matches!(name, "tclsh" | "wish" | "expect") {
        Interp {
            code: "c",
            code_long: &[],
            values: "",
            stdin: true,
        }
    } else if name == "osascript" {
        Interp {
            code: "e",
            code_long: &[],
            values: "",
            stdin: true,
        }
    } else if matches!(name, "pwsh" | "powershell") {
        let inline = args.iter().any(|w| {
            let t = w.text.to_ascii_lowercase();
            let t = t.trim_start_matches(['-', '/']);
            w.text.starts_with(['-', '/'])
                && !t.is_empty()
                && ("command".starts_with(t)
                    || "encodedcommand".starts_with(t)
                    || t == "ec"
                    || t == "cwa")
        });
        return Some(if inline || args.is_empty() {
            Analysis::from(Opaque::InlineCode)
        } else {
            Analysis::default().changes_paths()
        });
    } else {
        return None;
    };
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let Some(t) = w.lit() else {
            if w.may_start_dash {
                return Some(Analysis::from(computed_option(name, w)));
            }
            break;
        };
        if t == "--" {
            i += 1;
            break;
        }
        if t == "-" {
            return Some(Analysis::from(Opaque::StdinScript));
        }
        if let Some(long) = t.strip_prefix("--") {
            let opt = long.split('=').next().unwrap_or("");
            if spec
                .code_long
                .iter()
                .any(|c| c.starts_with(opt) && opt.len() >= 2)
            {
                return Some(Analysis::from(Opaque::InlineCode));
            }
            i += 1;
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-') {
            if cluster.chars().any(|c| spec.code.contains(c)) {
                return Some(Analysis::from(Opaque::InlineCode));
            }
            let takes_next = cluster
                .chars()
                .last()
                .is_some_and(|c| spec.values.contains(c));
            i += if takes_next { 2 } else { 1 };
            continue;
        }
        break;
    }
    let analysis = match args.get(i) {
        Some(script) => Analysis::default()
            .changes_paths()
            .with(script_operand(name, script)),
        None if spec.stdin => Analysis::from(Opaque::StdinScript),
        None => Analysis::default().changes_paths(),
    };
    Some(analysis)
}

fn find(args: &[Wd]) -> Analysis {
    let mut a = Analysis::default();
    let mut reason: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        if w.model_chosen() || (w.glob && w.may_start_dash) {
            return Analysis::from(computed_option("find", w));
        }
        match w.lit().unwrap_or("") {
            t @ ("-exec" | "-execdir" | "-ok" | "-okdir") => {
                let start = i + 1;
                let mut end = start;
                while let Some(x) = args.get(end) {
                    let plus_end = x.lit() == Some("+")
                        && end > start
                        && args.get(end - 1).and_then(Wd::lit) == Some("{}");
                    if x.lit() == Some(";") || plus_end {
                        break;
                    }
                    end += 1;
                }
                a.inner.push(Inner::Command {
                    assigns: start..start,
                    words: start..end,
                });
                reason.get_or_insert(format!("`find {t}` runs another program"));
                i = end + 1;
                continue;
            }
            "-delete" => {
                reason.get_or_insert("`find -delete` deletes files".into());
            }
            t @ ("-fprint" | "-fprint0" | "-fprintf" | "-fls") => {
                reason.get_or_insert(format!("`find {t}` writes a file"));
            }
            _ => {}
        }
        i += 1;
    }
    if let Some(r) = reason {
        a.opaque = Some(Opaque::Code(r));
        a.changes_paths = true;
    }
    a
}

fn fd(args: &[Wd]) -> Analysis {
    let exec = args
        .iter()
        .position(|w| matches!(w.lit(), Some("-x" | "-X" | "--exec" | "--exec-batch")));
    match exec {
        Some(at) => {
            let end = args[at + 1..]
                .iter()
                .position(|w| w.lit() == Some(";"))
                .map_or(args.len(), |p| at + 1 + p);
            Analysis {
                opaque: Some(Opaque::Code("`fd --exec` runs another program".into())),
                inner: vec![Inner::Command {
                    assigns: at + 1..at + 1,
                    words: at + 1..end,
                }],
                changes_paths: true,
                ..Analysis::default()
            }
        }
        None => data("fd", args),
    }
}

fn sed(args: &[Wd]) -> Analysis {
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
pub(super) fn sed_script_runs(script: &str) -> Option<String> {
    match SedScan::new(script).run() {
        Ok(()) => None,
        Err(SedStop::Runs(why)) => Some(why),
        Err(SedStop::Unread) => Some("the sed script is not fully understood".to_string()),
    }
}

enum SedStop {
    Runs(String),
    Unread,
}

/// A conservative reader of GNU sed scripts: it follows the commands that only edit the stream
/// and stops at anything else.
struct SedScan<'a> {
    b: &'a [u8],
    i: usize,
}

/// Delimiters whose reading cannot be confused with regex syntax.
const SED_DELIMITERS: &[u8] = b"/|,:#!@%^+=~;._";

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

fn awk(name: &str, args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "bcCDghLMnNOPrsStV",
        values: "vFefEil",
        optional: "dop",
        long_flags: &[
            "characters-as-bytes",
            "traditional",
            "copyright",
            "gen-pot",
            "help",
            "lint",
            "bignum",
            "use-lc-numeric",
            "non-decimal-data",
            "optimize",
            "posix",
            "re-interval",
            "no-optimize",
            "sandbox",
            "lint-old",
            "version",
            "csv",
        ],
        long_values: &[
            "assign",
            "field-separator",
            "source",
            "file",
            "exec",
            "include",
            "load",
        ],
        long_optional: &["dump-variables", "debug", "pretty-print", "profile"],
        permute: false,
        ..Spec::default()
    };
    let s = match scan(name, args, 0, &spec) {
        Ok(s) => s,
        Err(o) => return Analysis::from(o),
    };
    for opaque in [
        "f",
        "--file",
        "E",
        "--exec",
        "i",
        "--include",
        "l",
        "--load",
    ] {
        if s.has(opaque) {
            return Analysis::opaque(format!(
                "`{name} {}` loads a program from a file",
                if opaque.len() == 1 {
                    format!("-{opaque}")
                } else {
                    opaque.to_string()
                }
            ));
        }
    }
    let mut programs = s.values(&["e", "--source"], args);
    if programs.is_empty() {
        match args.get(s.end) {
            Some(w) => programs.push(ValueRef::Word(w)),
            None => return Analysis::default(),
        }
    }
    for p in &programs {
        match p.text() {
            Some(text) => {
                if let Some(why) = awk_program_runs(text) {
                    return Analysis::opaque(why);
                }
            }
            None => return Analysis::from(Opaque::DynamicScript),
        }
    }
    Analysis::default()
}

/// Why an awk program may run a command or write a file: `system`, a pipe (`|`, `|&`), `print`
/// or `printf` redirected with `>` (outside parentheses), `@` directives or indirect calls.
/// Strings, regular expressions and comments are skipped the way awk's lexer reads them: `/`
/// starts a regular expression where an operand is expected, and divides after one.
pub(super) fn awk_program_runs(program: &str) -> Option<String> {
    let b = program.as_bytes();
    let mut i = 0;
    let mut operand_expected = true;
    let mut in_print = false;
    let mut parens = 0usize;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => {
                i += 1;
                while let Some(&d) = b.get(i) {
                    i += if d == b'\\' { 2 } else { 1 };
                    if d == b'"' {
                        break;
                    }
                }
                operand_expected = false;
                continue;
            }
            b'#' => {
                while b.get(i).is_some_and(|&d| d != b'\n') {
                    i += 1;
                }
                continue;
            }
            b'/' if operand_expected => {
                i += 1;
                let mut bracket = false;
                while let Some(&d) = b.get(i) {
                    match d {
                        b'\\' => i += 1,
                        b'[' => bracket = true,
                        b']' => bracket = false,
                        b'/' if !bracket => break,
                        b'\n' => return Some("an awk regular expression is not closed".into()),
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                operand_expected = false;
                continue;
            }
            b'|' => {
                if b.get(i + 1) == Some(&b'|') {
                    i += 2;
                    operand_expected = true;
                    continue;
                }
                return Some("an awk program pipes to or from a command".into());
            }
            b'>' if in_print && parens == 0 => {
                return Some("an awk program prints to a file (`print > ...`)".into());
            }
            b'@' => return Some("an awk program uses @-directives or indirect calls".into()),
            b'(' => {
                parens += 1;
                operand_expected = true;
            }
            b')' => {
                parens = parens.saturating_sub(1);
                operand_expected = false;
            }
            b';' | b'\n' | b'{' | b'}' => {
                in_print = false;
                parens = 0;
                operand_expected = true;
            }
            b']' => operand_expected = false,
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while b
                    .get(i)
                    .is_some_and(|&d| d.is_ascii_alphanumeric() || d == b'_')
                {
                    i += 1;
                }
                let word = &program[start..i];
                match word {
                    "system" => return Some("an awk program calls system()".into()),
                    "print" | "printf" => {
                        in_print = true;
                        parens = 0;
                        operand_expected = true;
                    }
                    "if" | "while" | "for" | "do" | "else" | "return" | "in" | "case"
                    | "getline" | "delete" | "exit" => operand_expected = true,
                    _ => operand_expected = false,
                }
                continue;
            }
            c if c.is_ascii_digit() || c == b'.' => operand_expected = false,
            b' ' | b'\t' | b'\r' => {}
            _ => operand_expected = true,
        }
        i += 1;
    }
    None
}

fn tar(args: &[Wd]) -> Analysis {
    const LONG: &[&str] = &[
        "to-command",
        "checkpoint-action",
        "use-compress-program",
        "info-script",
        "new-volume-script",
        "rsh-command",
        "rmt-command",
        "index-file",
    ];
    for (i, w) in args.iter().enumerate() {
        if w.model_chosen() {
            return Analysis::from(computed_option("tar", w));
        }
        let Some(t) = w.lit() else { continue };
        if t.starts_with("--") {
            if long_prefix_of(t, LONG) {
                return Analysis::opaque(format!("`tar {t}` runs a program"));
            }
        } else if short_cluster_has(t, "IF") || (i == 0 && t.contains(['I', 'F'])) {
            return Analysis::opaque("`tar -I`/`-F` runs a program");
        }
    }
    Analysis::default().changes_paths()
}

fn make(args: &[Wd]) -> Analysis {
    for w in args {
        if w.model_chosen() {
            return Analysis::from(computed_option("make", w));
        }
        let Some(t) = w.lit() else { continue };
        if long_prefix_of(t, &["eval"]) || short_cluster_has(t, "E") {
            return Analysis::opaque("`make --eval` runs make code given on the command line");
        }
        if long_prefix_of(t, &["file", "makefile"]) || short_cluster_has(t, "f") {
            return Analysis::opaque("`make -f` runs recipes from another makefile");
        }
        if !t.starts_with('-') && t.contains('=') {
            return Analysis::opaque(format!(
                "`make {t}`: a variable given to make can change the commands its recipes run"
            ));
        }
    }
    Analysis::default().changes_paths()
}

fn git(args: &[Wd]) -> Analysis {
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let Some(t) = w.lit() else {
            if w.model_chosen() {
                return Analysis::from(computed_option("git", w));
            }
            break;
        };
        if !t.starts_with('-') {
            break;
        }
        match t {
            "-c" | "--config-env" => {
                return Analysis::opaque(format!("`git {t}` can make git run configured commands"))
            }
            _ if t.starts_with("--config-env=") || (t.starts_with("-c") && t.len() > 2) => {
                return Analysis::opaque("`git -c` can make git run configured commands")
            }
            _ if t.starts_with("--exec-path=") => {
                return Analysis::opaque("`git --exec-path=` runs git commands from another folder")
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" => i += 2,
            "-p"
            | "-P"
            | "--paginate"
            | "--no-pager"
            | "--bare"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-replace-objects"
            | "--no-optional-locks"
            | "--no-advice"
            | "--no-lazy-fetch"
            | "--exec-path"
            | "--html-path"
            | "--man-path"
            | "--info-path"
            | "--version"
            | "--help"
            | "-h"
            | "-v" => i += 1,
            _ if t.starts_with("--git-dir=")
                || t.starts_with("--work-tree=")
                || t.starts_with("--namespace=")
                || t.starts_with("--list-cmds=") =>
            {
                i += 1
            }
            _ => return Analysis::from(unknown_option("git", t)),
        }
    }
    let rest = args.get(i..).unwrap_or(&[]);
    let text = std::iter::once("git")
        .chain(rest.iter().map(|w| w.text.as_str()))
        .collect::<Vec<_>>()
        .join(" ");
    let mut a = Analysis {
        text: Some(text),
        ..Analysis::default()
    };
    let Some(sub) = rest.first() else {
        return a;
    };
    let Some(sub) = sub.lit() else {
        return a.with(Some(Opaque::Code(
            "the git subcommand is computed at run time".into(),
        )));
    };
    // Subcommands that only read; the others may rewrite the work tree (links included).
    const READ_ONLY: &[&str] = &[
        "status",
        "log",
        "diff",
        "show",
        "rev-parse",
        "ls-files",
        "ls-tree",
        "blame",
        "grep",
        "describe",
        "shortlog",
        "cat-file",
        "rev-list",
        "reflog",
        "whatchanged",
        "name-rev",
        "var",
        "version",
        "help",
        "count-objects",
        "for-each-ref",
        "show-ref",
        "merge-base",
    ];
    a.changes_paths = !READ_ONLY.contains(&sub);
    let operands = &rest[1..];
    if let Some(w) = operands
        .iter()
        .find(|w| w.model_chosen() && w.may_start_dash)
    {
        return a.with(Some(computed_option("git", w)));
    }
    let has = |pred: &dyn Fn(&str) -> bool| operands.iter().any(|w| w.lit().is_some_and(pred));
    // Options that give git a program to run, in any subcommand, abbreviated or not.
    const RUNS: &[&str] = &[
        "upload-pack",
        "receive-pack",
        "exec",
        "extcmd",
        "tool",
        "template",
        "open-files-in-pager",
        "config",
    ];
    let runs = has(&|t: &str| long_prefix_of(t, RUNS));
    let reason = match sub {
        _ if runs => Some(format!("`git {sub}` is given a command to run")),
        "rebase"
            if has(&|t: &str| {
                t == "-x"
                    || t.starts_with("-x")
                    || t == "-i"
                    || t == "--interactive"
                    || (t.starts_with('-') && !t.starts_with("--") && t.contains(['x', 'i']))
            }) =>
        {
            Some("`git rebase -x`/`-i` runs commands or an editor".into())
        }
        "bisect" if operands.first().and_then(Wd::lit) == Some("run") => {
            Some("`git bisect run` runs a command".into())
        }
        "submodule" if has(&|t: &str| t == "foreach") => {
            Some("`git submodule foreach` runs a command".into())
        }
        "difftool" | "mergetool" | "filter-branch" | "filter-repo" | "daemon" | "instaweb" => {
            Some(format!("`git {sub}` runs configured or given programs"))
        }
        "clone" if has(&|t: &str| short_cluster_has(t, "uc")) => {
            Some("`git clone -u`/`-c` runs a given program or sets configuration".into())
        }
        "grep" if has(&|t: &str| short_cluster_has(t, "O")) => {
            Some("`git grep -O` runs a given pager".into())
        }
        "config" if has(&git_config_key_runs) => {
            Some("`git config` sets a key that makes git run a command".into())
        }
        _ => None,
    };
    a = a.with(reason.map(Opaque::Code));
    a
}

/// Whether a `git config` argument names a key whose value git runs.
fn git_config_key_runs(t: &str) -> bool {
    let key = t.to_ascii_lowercase();
    if !key.contains('.') || key.starts_with('-') {
        return false;
    }
    [
        "alias",
        "pager",
        "editor",
        "sshcommand",
        "fsmonitor",
        "hookspath",
        "askpass",
        "gitproxy",
        "diff.",
        "merge.",
        "filter.",
        "credential",
        "include",
        "program",
        "uploadpack",
        "receivepack",
        "sendemail",
        "textconv",
        "command",
        "cmd",
        "exec",
        "helper",
        "proxy",
        "protocol",
        "core.",
        "sequence.",
    ]
    .iter()
    .any(|k| key.contains(k))
}

fn pager(name: &str, args: &[Wd]) -> Analysis {
    for w in args {
        if w.model_chosen() {
            return Analysis::from(computed_option(name, w));
        }
        if let Some(t) = w.lit() {
            if t.starts_with('+')
                || t == "-k"
                || t.starts_with("--lesskey")
                || (t.starts_with('-') && !t.starts_with("--") && t.contains('k'))
            {
                return Analysis::opaque(format!(
                    "`{name} {t}` gives the pager commands (which can run shell commands)"
                ));
            }
        }
    }
    Analysis::default()
}

fn man(args: &[Wd]) -> Analysis {
    for w in args {
        if w.model_chosen() {
            return Analysis::from(computed_option("man", w));
        }
        if let Some(t) = w.lit() {
            if short_cluster_has(t, "PHX") || long_prefix_of(t, &["pager", "html", "gxditview"]) {
                return Analysis::opaque("`man -P`/`-H` runs a given program");
            }
        }
    }
    Analysis::default()
}

fn sqlite(args: &[Wd]) -> Analysis {
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let Some(t) = w.lit() else {
            return Analysis::from(computed_option("sqlite3", w));
        };
        // sqlite3 takes `--opt` for `-opt`.
        let t = if t.starts_with("--") { &t[1..] } else { t };
        match t {
            "-cmd" | "-init" => {
                return Analysis::opaque(format!("`sqlite3 {t}` runs given commands"))
            }
            "-separator" | "-newline" | "-nullvalue" | "-vfs" | "-maxsize" | "-mmap"
            | "-pagecache" | "-lookaside" | "-heap" => i += 2,
            _ if t.starts_with('-') => i += 1,
            _ => {
                operands.push(t);
                i += 1;
            }
        }
    }
    if operands.len() < 2 {
        return Analysis::from(Opaque::StdinScript);
    }
    for sql in &operands[1..] {
        let lower = sql.to_ascii_lowercase();
        let dot_command = lower.lines().any(|l| l.trim_start().starts_with('.'));
        let risky = [
            "load_extension",
            "writefile",
            "edit(",
            "attach",
            "fts3_tokenizer",
        ]
        .iter()
        .any(|k| lower.contains(k));
        if dot_command || risky {
            return Analysis::opaque(
                "sqlite3 dot commands and file functions can run commands or write files",
            );
        }
    }
    Analysis::default()
}

fn ssh(name: &str, args: &[Wd]) -> Analysis {
    let mut a = unknown(name, args);
    const RISKY: &[&str] = &[
        "proxycommand",
        "localcommand",
        "permitlocalcommand",
        "knownhostscommand",
        "match",
        "proxyusefdpass",
        "remotecommand",
        "include",
    ];
    for w in args {
        let lower = w.text.to_ascii_lowercase();
        let config_file =
            short_cluster_has(&w.text, "F") || (name == "scp" && short_cluster_has(&w.text, "S"));
        if RISKY.iter().any(|k| lower.contains(k)) || config_file {
            a.opaque = Some(Opaque::Code(format!(
                "`{name} {}` can run a local command",
                w.text
            )));
            return a;
        }
    }
    a
}

fn rsync(args: &[Wd]) -> Analysis {
    for w in args {
        if w.model_chosen() {
            return Analysis::from(computed_option("rsync", w));
        }
        if let Some(t) = w.lit() {
            let short_e = t.starts_with('-') && !t.starts_with("--") && t.contains('e');
            if short_e || t.starts_with("--rsh") || t.starts_with("--rsync-path") {
                return Analysis::opaque("`rsync -e`/`--rsync-path` runs a given program");
            }
        }
    }
    Analysis::default().changes_paths()
}
