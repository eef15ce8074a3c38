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

mod awk;
mod find;
mod git;
mod interpreters;
mod launchers;
mod options;
mod sed;
mod shells;
mod wrappers;

use std::ops::Range;

use super::parse::{is_name, Dialect};
use super::walk::Wd;
use super::Opaque;
use awk::*;
use find::*;
use git::*;
use interpreters::*;
use launchers::*;
use options::*;
use sed::*;
use shells::*;
use wrappers::*;
// The shell analysis' tests read sed scripts directly.
#[cfg(test)]
pub(super) use sed::sed_script_runs;

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
