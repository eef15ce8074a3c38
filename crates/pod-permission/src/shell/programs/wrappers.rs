//! Wrappers: programs that run the command in their arguments (`sudo`, `env`, `timeout`, `flock`,
//! `su`, `script`, `watch`, `xargs`, ...), and where that command starts.

use super::*;

/// After a wrapper's options: `NAME=value` words (env, sudo), then the command.
pub(super) fn wrapped(args: &[Wd], from: usize, assignments: bool) -> Analysis {
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

/// A wrapper: options per `spec`, `positional` operands of its own, then the command.
/// `no_command`: options after which it runs no command (`taskset -p`).
pub(super) fn wrapper(
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

pub(super) fn sudo(args: &[Wd]) -> Analysis {
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

pub(super) fn env(args: &[Wd]) -> Analysis {
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

pub(super) fn command_builtin(args: &[Wd]) -> Analysis {
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

pub(super) fn flock(args: &[Wd]) -> Analysis {
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

pub(super) fn su(name: &str, args: &[Wd]) -> Analysis {
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

pub(super) fn sg(args: &[Wd]) -> Analysis {
    // `sg GROUP [-c] COMMAND`: the command string is run by /bin/sh -c.
    let rest = args.get(1..).unwrap_or(&[]);
    let command = match rest.first().and_then(Wd::lit) {
        Some("-c") => rest.get(1),
        _ => rest.first(),
    };
    shell_string("sg", command, Dialect::Posix)
}

pub(super) fn script(args: &[Wd]) -> Analysis {
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

pub(super) fn watch(args: &[Wd]) -> Analysis {
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

pub(super) fn xargs(args: &[Wd]) -> Analysis {
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
