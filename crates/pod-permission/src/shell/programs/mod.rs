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
pub(in crate::shell) use awk::awk_program_runs;
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
    /// Files the program writes (`tee FILE`, `cp x DIR`): `file_write` subjects.
    pub writes: Vec<Write>,
    /// Folders the program changes to, in order, before it opens its own files or runs what
    /// it runs (`env -C DIR`, `git -C DIR`): relative paths there are relative to them.
    pub chdir: Vec<FileArg>,
    /// Other names of what the command does (`git send-pack` pushes: `git push ...`): deny and
    /// ask rules are tried on them too.
    pub deny_forms: Vec<String>,
    /// The command is opaque only for what its words up to this many arguments say (`python3
    /// -m pytest`: the module run): a rule naming those words literally allows it.
    pub named: Option<usize>,
}

/// A file named by an argument: the argument `arg`, from byte `from` of its text (an attached
/// option value: `-o.env`, `of=x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileArg {
    pub arg: usize,
    pub from: usize,
}

impl FileArg {
    pub(super) fn whole(arg: usize) -> FileArg {
        FileArg { arg, from: 0 }
    }
}

/// A file a program writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Write {
    /// The file named.
    File(FileArg),
    /// `DIR/basename(SOURCE)`: what `cp SOURCE DIR` writes when DIR is a folder (`dir` None:
    /// the working folder, as `ln -s /x/y` makes `y`).
    Into { dir: Option<FileArg>, source: usize },
}

/// What a wrapped command gets besides its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Input {
    /// Nothing: it runs as written.
    None,
    /// More arguments, read at run time (`xargs CMD`).
    Appended,
    /// Every word holding this string gets text read at run time in its place (`xargs -I{}`).
    Replaced(String),
}

/// A command or script a program runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Inner {
    /// Words of `args`: leading `NAME=value` assignments, then the command, and what it gets
    /// besides.
    Command {
        assigns: Range<usize>,
        words: Range<usize>,
        input: Input,
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

    /// Shifts argument indexes by `by`: an analysis of `args[k..]` as one of `args` (`by` =
    /// k), or of words with `-by` synthetic ones in front (`git-push` read as `git push`).
    fn shifted(mut self, by: isize) -> Analysis {
        let at = |i: usize| i.saturating_add_signed(by);
        let shift = |r: &Range<usize>| at(r.start)..at(r.end);
        for inner in &mut self.inner {
            if let Inner::Command { assigns, words, .. } = inner {
                *assigns = shift(assigns);
                *words = shift(words);
            }
        }
        let file = |f: &mut FileArg| f.arg = at(f.arg);
        for w in &mut self.writes {
            match w {
                Write::File(f) => file(f),
                Write::Into { dir, source } => {
                    dir.iter_mut().for_each(file);
                    *source = at(*source);
                }
            }
        }
        self.chdir.iter_mut().for_each(file);
        self.named = self.named.map(at);
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
        "GOFLAGS",
        "GOENV",
        "GOTOOLCHAIN",
        "GOROOT",
        "GOPATH",
        "GOWORK",
        "GOPROXY",
        "CGO_CFLAGS",
        "CGO_CPPFLAGS",
        "CGO_CXXFLAGS",
        "CGO_FFLAGS",
        "CGO_LDFLAGS",
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
        "busybox" => busybox(args),
        "setarch" | "linux32" | "linux64" | "i386" | "x86_64" => setarch(name, args),
        "jobs" => jobs(args),
        "go" => go(args),
        _ if is_dynamic_loader(name) => dynamic_loader(name, args),
        // `/usr/lib/git-core/git-push ARGS` is `git push ARGS`.
        _ if name.len() > 4 && name.starts_with("git-") => {
            let mut words = vec![Wd::synthetic(&name[4..])];
            words.extend(args.iter().cloned());
            git(&words).shifted(-1)
        }
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
/// `truncate FILE...`, the destination of `cp`/`mv`/`ln`/`install` (the last operand, or every
/// `-t DIR`) and, unless `-T`, each source's name inside it (`cp key secrets` writes
/// `secrets/key` when `secrets` is a folder), `dd of=FILE`, `sort -o FILE`, `shuf -o FILE`,
/// `uniq IN OUT`. Values attached to their option (`-o.env`, `--output=x`) count. A destination
/// computed at run time is opaque through its own word (a dynamic path subject).
fn written_files(name: &str, args: &[Wd]) -> Result<Vec<Write>, Opaque> {
    let files = |s: Scanned| {
        s.operands
            .into_iter()
            .map(|i| Write::File(FileArg::whole(i)))
    };
    let options = |s: &Scanned, names: &[&str]| -> Vec<Write> {
        s.opts
            .iter()
            .filter(|o| names.contains(&o.name.as_str()))
            .filter_map(|o| o.file(args))
            .map(Write::File)
            .collect()
    };
    match name {
        "tee" => Ok(files(scan(
            name,
            args,
            0,
            &Spec {
                flags: "aip",
                long_flags: &["append", "ignore-interrupts"],
                long_optional: &["output-error"],
                permute: true,
                ..Spec::default()
            },
        )?)
        .collect()),
        "touch" => Ok(files(scan(
            name,
            args,
            0,
            &Spec {
                flags: "acfhm",
                values: "drt",
                long_flags: &["no-create", "no-dereference"],
                long_values: &["date", "reference", "time"],
                permute: true,
                ..Spec::default()
            },
        )?)
        .collect()),
        "truncate" => Ok(files(scan(
            name,
            args,
            0,
            &Spec {
                flags: "co",
                values: "rs",
                long_flags: &["no-create", "io-blocks"],
                long_values: &["reference", "size"],
                permute: true,
                ..Spec::default()
            },
        )?)
        .collect()),
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
            // `install -d DIR...` makes every operand a folder.
            if name == "install" && (s.has("d") || s.has("--directory")) {
                return Ok(files(s).collect());
            }
            let targets: Vec<FileArg> = s
                .opts
                .iter()
                .filter(|o| o.name == "t" || o.name == "--target-directory")
                .filter_map(|o| o.file(args))
                .collect();
            let no_target = s.has("T") || s.has("--no-target-directory");
            let mut out = Vec::new();
            if !targets.is_empty() {
                for &t in &targets {
                    out.push(Write::File(t));
                    for &source in &s.operands {
                        out.push(Write::Into {
                            dir: Some(t),
                            source,
                        });
                    }
                }
            } else if let [sources @ .., dest] = s.operands.as_slice() {
                if sources.is_empty() {
                    // `ln -s /x/y`: a link named `y` in the working folder.
                    if name == "ln" {
                        out.push(Write::Into {
                            dir: None,
                            source: *dest,
                        });
                    }
                } else {
                    out.push(Write::File(FileArg::whole(*dest)));
                    if !no_target {
                        for &source in sources {
                            out.push(Write::Into {
                                dir: Some(FileArg::whole(*dest)),
                                source,
                            });
                        }
                    }
                }
            }
            Ok(out)
        }
        "dd" => Ok(args
            .iter()
            .position(|w| w.static_prefix().starts_with("of="))
            .map(|arg| Write::File(FileArg { arg, from: 3 }))
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
            Ok(options(&s, &["o", "--output"]))
        }
        "shuf" => {
            let s = scan(
                name,
                args,
                0,
                &Spec {
                    flags: "erz",
                    values: "ino",
                    long_flags: &["echo", "repeat", "zero-terminated"],
                    long_values: &["input-range", "head-count", "output", "random-source"],
                    permute: true,
                    ..Spec::default()
                },
            )?;
            Ok(options(&s, &["o", "--output"]))
        }
        "uniq" => {
            let s = scan(
                name,
                args,
                0,
                &Spec {
                    flags: "cdDiuz",
                    values: "fsw",
                    long_flags: &[
                        "count",
                        "repeated",
                        "ignore-case",
                        "unique",
                        "zero-terminated",
                    ],
                    long_values: &["skip-fields", "skip-chars", "check-chars"],
                    long_optional: &["all-repeated", "group"],
                    permute: true,
                    numbers: true,
                    ..Spec::default()
                },
            )?;
            Ok(s.operands
                .get(1)
                .map(|&i| Write::File(FileArg::whole(i)))
                .into_iter()
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
    } else if let Some(t) = args.iter().filter_map(Wd::lit).find(|t| names_a_program(t)) {
        a.opaque = Some(Opaque::Code(format!(
            "`{name} {t}`: an option named for running a program (its value may be a command \
             line the engine cannot read)"
        )));
    }
    a
}

/// An option whose name says it gives the program something to run (`--exec`, `-toolexec`,
/// `--run-command`, `--shell`, `--pager`, `--entrypoint`, ...).
fn names_a_program(t: &str) -> bool {
    const WORDS: &[&str] = &[
        "exec",
        "execute",
        "toolexec",
        "vettool",
        "command",
        "cmd",
        "shell",
        "wrapper",
        "interpreter",
        "pager",
        "editor",
        "hook",
        "askpass",
        "launcher",
        "runner",
        "entrypoint",
    ];
    let Some(flag) = t.strip_prefix('-') else {
        return false;
    };
    let flag = flag.trim_start_matches('-');
    let name = flag.split('=').next().unwrap_or("");
    name.len() > 1
        && name
            .split(['-', '_'])
            .any(|part| WORDS.contains(&part.to_ascii_lowercase().as_str()))
}
