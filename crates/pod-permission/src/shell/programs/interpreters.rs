//! Interpreters: which options of `python3`, `node`, `perl`, `ruby`, ... run code given on the
//! command line or from a module, which take a value, and which word is the script.
//!
//! Each interpreter has a table of the options it takes. An option the table does not know makes
//! the command opaque: its arity is unknown, so the engine cannot tell which word is the script
//! and which are options after it (`node -C x -e CODE`: `-C` takes `x`, then `-e` runs code).

use super::*;

/// An interpreter's options.
#[derive(Default)]
struct Table {
    /// Short options without a value.
    flags: &'static str,
    /// Short options taking a value: the rest of the cluster, or the next word.
    values: &'static str,
    /// Short options taking an attached value of their own shape (`perl -l0`, `-i.bak`, `-0777`):
    /// the rest of the cluster is read as their value, after checking it for code options.
    attached: &'static str,
    /// Short options whose value is the script to run (`php -f FILE`).
    script: &'static str,
    /// Short options that run code given on the command line (or load it, or read stdin).
    code: &'static str,
    long_flags: &'static [&'static str],
    /// Long options taking a value, attached (`--x=v`) or the next word.
    long_values: &'static [&'static str],
    /// Long options taking only an attached value (`--inspect[=port]`).
    long_optional: &'static [&'static str],
    /// Long options that run code given on the command line (or load it).
    long_code: &'static [&'static str],
    /// `_` and `-` are the same in long option names (node).
    underscores: bool,
    /// Reads its program from stdin when no script is given.
    stdin: bool,
    /// `-c CODE` / `-m MODULE` end option parsing, everything after is the program's (python):
    /// a rule naming the code or module literally can allow it.
    code_ends_options: bool,
}

fn table(name: &str) -> Option<Table> {
    let t = if name.starts_with("python") || name.starts_with("pypy") {
        Table {
            flags: "bBdEhIOPqRsSuvVx3t?",
            values: "WXQ",
            code: "cmi",
            long_flags: &["help", "version", "help-env", "help-xoptions", "help-all"],
            long_values: &["check-hash-based-pycs"],
            stdin: true,
            code_ends_options: true,
            ..Table::default()
        }
    } else if matches!(name, "node" | "nodejs") {
        Table {
            flags: "hvc",
            values: "C",
            code: "epri",
            long_flags: &[
                "abort-on-uncaught-exception",
                "check",
                "enable-source-maps",
                "expose-gc",
                "frozen-intrinsics",
                "help",
                "jitless",
                "no-addons",
                "no-deprecation",
                "no-experimental-fetch",
                "no-extra-info-on-fatal-exception",
                "no-global-search-paths",
                "no-warnings",
                "pending-deprecation",
                "preserve-symlinks",
                "preserve-symlinks-main",
                "test",
                "throw-deprecation",
                "trace-deprecation",
                "trace-exit",
                "trace-sigint",
                "trace-sync-io",
                "trace-uncaught",
                "trace-warnings",
                "track-heap-objects",
                "version",
                "watch",
                "watch-preserve-output",
                "experimental-vm-modules",
                "experimental-strip-types",
                "experimental-transform-types",
                "experimental-detect-module",
                "experimental-require-module",
                "experimental-test-coverage",
                "experimental-wasm-modules",
                "harmony",
                "zero-fill-buffers",
            ],
            long_values: &[
                "title",
                "conditions",
                "inspect-port",
                "max-http-header-size",
                "unhandled-rejections",
                "test-name-pattern",
                "test-reporter",
                "test-concurrency",
                "test-timeout",
                "dns-result-order",
            ],
            long_optional: &[
                "inspect",
                "inspect-brk",
                "inspect-wait",
                "max-old-space-size",
                "max-semi-space-size",
                "stack-size",
                "stack-trace-limit",
            ],
            long_code: &[
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
                "experimental-policy",
                "icu-data-dir",
            ],
            underscores: true,
            stdin: true,
            ..Table::default()
        }
    } else if name == "bun" {
        Table {
            flags: "hv",
            values: "",
            code: "eprc",
            long_flags: &[
                "watch",
                "hot",
                "smol",
                "bun",
                "silent",
                "no-install",
                "help",
                "version",
                "revision",
            ],
            long_values: &["cwd"],
            long_code: &[
                "eval", "print", "preload", "require", "config", "env-file", "import",
            ],
            ..Table::default()
        }
    } else if name == "perl" || name.starts_with("perl5") {
        Table {
            flags: "acfhnpsStTuUvwWX",
            values: "I",
            attached: "0lCDiV",
            code: "eEMmdxF",
            long_flags: &["help", "version"],
            stdin: true,
            ..Table::default()
        }
    } else if name == "ruby" {
        Table {
            flags: "acdlnpsSvwyhU",
            values: "CEFI",
            attached: "0iKW",
            code: "erx",
            long_flags: &[
                "version",
                "help",
                "verbose",
                "copyright",
                "jit",
                "yjit",
                "disable-gems",
            ],
            long_optional: &[
                "disable",
                "enable",
                "encoding",
                "external-encoding",
                "internal-encoding",
                "dump",
                "backtrace-limit",
            ],
            long_code: &["require"],
            stdin: true,
            ..Table::default()
        }
    } else if name == "php" {
        Table {
            flags: "ehilmnqsvwH",
            values: "t",
            script: "f",
            code: "aBcdEFRrSz",
            long_flags: &[
                "help",
                "version",
                "info",
                "modules",
                "no-php-ini",
                "syntax-check",
                "syntax-highlight",
                "strip",
                "hide-args",
                "no-header",
            ],
            long_values: &["docroot"],
            long_code: &[
                "run",
                "interactive",
                "process-begin",
                "process-code",
                "process-end",
                "process-file",
                "define",
                "php-ini",
                "zend-extension",
                "server",
            ],
            stdin: true,
            ..Table::default()
        }
    } else if name.starts_with("lua") {
        Table {
            flags: "vEW",
            code: "eli",
            stdin: true,
            ..Table::default()
        }
    } else if name == "Rscript" {
        Table {
            code: "e",
            long_flags: &[
                "verbose",
                "vanilla",
                "no-environ",
                "no-site-file",
                "no-init-file",
                "restore",
                "no-restore",
                "save",
                "no-save",
                "no-echo",
                "version",
                "help",
                "quiet",
                "silent",
                "slave",
            ],
            long_optional: &["default-packages"],
            long_code: &["expr"],
            stdin: true,
            ..Table::default()
        }
    } else if name == "julia" {
        Table {
            flags: "hvq",
            values: "tpC",
            attached: "Og",
            code: "eELJiH",
            long_flags: &["quiet", "version", "help"],
            long_values: &["procs"],
            long_optional: &[
                "project",
                "color",
                "startup-file",
                "history-file",
                "compile",
                "threads",
                "banner",
                "check-bounds",
                "optimize",
                "depwarn",
                "inline",
                "math-mode",
                "heap-size-hint",
                "code-coverage",
                "track-allocation",
                "warn-overwrite",
                "warn-scope",
                "min-optlevel",
                "gcthreads",
                "handle-signals",
                "cpu-target",
            ],
            long_code: &[
                "eval",
                "print",
                "load",
                "sysimage",
                "machine-file",
                "home",
                "image-file",
                "bug-report",
                "interactive",
            ],
            stdin: true,
            ..Table::default()
        }
    } else if name == "expect" {
        Table {
            flags: "dnNbv",
            values: "D",
            script: "f",
            code: "ci",
            stdin: true,
            ..Table::default()
        }
    } else if name == "osascript" {
        Table {
            values: "ls",
            code: "ei",
            stdin: true,
            ..Table::default()
        }
    } else {
        return None;
    };
    Some(t)
}

/// Interpreters: inline code, modules and preloads, scripts read from stdin, and options the
/// table does not know are opaque; a script file is not (its contents are not read: see
/// docs/permissions.md).
pub(super) fn interpreter(name: &str, args: &[Wd]) -> Option<Analysis> {
    match name {
        "pwsh" | "powershell" => return Some(powershell(args)),
        "tclsh" | "wish" => return Some(tcl(name, args)),
        "R" => return Some(r_program(args)),
        _ => {}
    }
    let t = table(name)?;
    Some(match read_options(name, args, &t) {
        Read::Opaque(a) => a,
        // An attached script option's value (`-fx.php`).
        Read::Script(usize::MAX) => Analysis::default().changes_paths(),
        Read::Script(i) => match args.get(i) {
            Some(script) => Analysis::default()
                .changes_paths()
                .with(script_operand(name, script)),
            None if t.stdin => Analysis::from(Opaque::StdinScript),
            None => Analysis::default().changes_paths(),
        },
    })
}

enum Read {
    /// The command is opaque (inline code, an unknown option, stdin, ...).
    Opaque(Analysis),
    /// The options end here: the script operand (if any) is `args[i]`.
    Script(usize),
}

fn read_options(name: &str, args: &[Wd], t: &Table) -> Read {
    let opaque = |o: Opaque| Read::Opaque(Analysis::from(o));
    // The script an option named (`php -f FILE`); options may follow it.
    let mut script = None;
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let Some(text) = w.lit() else {
            if w.may_start_dash {
                return opaque(computed_option(name, w));
            }
            return Read::Script(script.unwrap_or(i));
        };
        if text == "--" {
            return Read::Script(script.unwrap_or(i + 1));
        }
        if text == "-" {
            return opaque(Opaque::StdinScript);
        }
        if let Some(long) = text.strip_prefix("--") {
            let (raw, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let owned;
            let opt = if t.underscores {
                owned = raw.replace('_', "-");
                owned.as_str()
            } else {
                raw
            };
            if t.long_code.contains(&opt) {
                return opaque(Opaque::InlineCode);
            }
            if (t.long_flags.contains(&opt) && attached.is_none()) || t.long_optional.contains(&opt)
            {
                i += 1;
            } else if t.long_values.contains(&opt) {
                if attached.is_some() {
                    i += 1;
                } else {
                    match value_word(name, args, i + 1, text) {
                        Ok(v) => i = v + 1,
                        Err(o) => return opaque(o),
                    }
                }
            } else {
                return opaque(unknown_option(name, text));
            }
            continue;
        }
        let Some(cluster) = text.strip_prefix('-') else {
            return Read::Script(script.unwrap_or(i));
        };
        let mut next = i + 1;
        for (k, c) in cluster.char_indices() {
            let rest = &cluster[k + c.len_utf8()..];
            if t.code.contains(c) {
                // python3 -c CODE / -m MODULE: what follows is the program's; the words up to
                // the code or module name it.
                let named = t.code_ends_options
                    && c != 'i'
                    && cluster[..k].chars().all(|f| t.flags.contains(f));
                let through = if rest.is_empty() { i + 2 } else { i + 1 };
                let mut a = if c == 'm' {
                    Analysis::opaque(format!(
                        "`{name} -m` runs a module given on its command line"
                    ))
                } else {
                    Analysis::from(Opaque::InlineCode)
                };
                if named
                    && through <= args.len()
                    && args[i + 1..through].iter().all(|w| w.is_static)
                {
                    a.named = Some(through);
                }
                return Read::Opaque(a);
            }
            if t.values.contains(c) || t.script.contains(c) {
                let value = if rest.is_empty() {
                    match value_word(name, args, i + 1, text) {
                        Ok(v) => {
                            next = v + 1;
                            Some(v)
                        }
                        Err(o) => return opaque(o),
                    }
                } else {
                    None
                };
                if t.script.contains(c) {
                    match value {
                        Some(v) => script = Some(v),
                        // Attached (`-fx.php`): a script named by static text.
                        None => script = Some(usize::MAX),
                    }
                }
                break;
            }
            if t.attached.contains(c) {
                // Its value's extent is the interpreter's to decide: no code option may hide
                // in it.
                if rest.chars().any(|r| t.code.contains(r)) {
                    return opaque(Opaque::InlineCode);
                }
                break;
            }
            if !t.flags.contains(c) {
                return opaque(unknown_option(name, &format!("-{c}")));
            }
        }
        i = next;
    }
    match script {
        Some(v) => Read::Script(v),
        None => Read::Script(i),
    }
}

fn powershell(args: &[Wd]) -> Analysis {
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
    if inline || args.is_empty() {
        Analysis::from(Opaque::InlineCode)
    } else {
        Analysis::default().changes_paths()
    }
}

/// `tclsh ?-encoding NAME? ?FILE ARGS...?` (wish takes display options, not analyzed).
fn tcl(name: &str, args: &[Wd]) -> Analysis {
    let mut i = 0;
    if name == "tclsh" && args.first().and_then(Wd::lit) == Some("-encoding") {
        i = match value_word(name, args, 1, "-encoding") {
            Ok(v) => v + 1,
            Err(o) => return Analysis::from(o),
        };
    }
    match args.get(i) {
        None => Analysis::from(Opaque::StdinScript),
        Some(w) if w.may_start_dash => match w.lit() {
            Some(t) => Analysis::from(unknown_option(name, t)),
            None => Analysis::from(computed_option(name, w)),
        },
        Some(w) => Analysis::default()
            .changes_paths()
            .with(script_operand(name, w)),
    }
}

/// `R`: reads its program from stdin, runs `-e` code, `-f` files and `R CMD` commands; only
/// `--version` and `--help` are read.
fn r_program(args: &[Wd]) -> Analysis {
    match args {
        [w] if matches!(w.lit(), Some("--version" | "--help")) => Analysis::default(),
        _ => Analysis::opaque("`R` runs code from stdin, `-e`, `-f` or `R CMD`"),
    }
}
