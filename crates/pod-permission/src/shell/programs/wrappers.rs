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
            input: Input::None,
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
        .find(|w| w.model_chosen() || w.splits)
    {
        let why = if w.splits {
            split_value(name, w)
        } else {
            computed_option(name, w)
        };
        return Analysis {
            runs_args: true,
            ..Analysis::from(why)
        };
    }
    wrapped(args, (s.end + positional).min(args.len()), assignments)
}

/// The folder a wrapper's `-C DIR` (`--chdir`) runs its command in; opaque when given twice
/// (programs differ on which one counts).
fn chdir(prog: &str, s: &Scanned, names: &[&str], args: &[Wd]) -> Result<Vec<FileArg>, Opaque> {
    let dirs: Vec<FileArg> = s
        .opts
        .iter()
        .filter(|o| names.contains(&o.name.as_str()))
        .filter_map(|o| o.file(args))
        .collect();
    if dirs.len() > 1 {
        return Err(Opaque::Code(format!(
            "`{prog}` is given its folder option twice: which one counts differs"
        )));
    }
    Ok(dirs)
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
    let dirs = match chdir("sudo", &s, &["D", "--chdir"], args) {
        Ok(dirs) => dirs,
        Err(o) => return Analysis::from(o),
    };
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
    Analysis {
        chdir: dirs,
        ..wrapped(args, s.end, true)
    }
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
    match chdir("env", &s, &["C", "--chdir"], args) {
        Ok(dirs) => Analysis {
            chdir: dirs,
            ..wrapped(args, s.end, true)
        },
        Err(o) => Analysis {
            runs_args: true,
            ..Analysis::from(o)
        },
    }
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
    every_script(
        name,
        &s.values(&["c", "--command", "--session-command"], args),
    )
}

/// The strings a program's `-c` options give `/bin/sh`: every one of them is walked (a program
/// given `-c` twice may run either: `script -c true -c 'rm x'` runs the last).
fn every_script(prog: &str, scripts: &[ValueRef]) -> Analysis {
    if scripts.is_empty() {
        return Analysis::from(Opaque::StdinScript);
    }
    let mut out = Analysis {
        changes_paths: true,
        ..Analysis::default()
    };
    for script in scripts {
        let one = match script {
            ValueRef::Word(w) => shell_string(prog, Some(w), Dialect::Posix),
            ValueRef::Text(t) => Analysis {
                inner: vec![Inner::Script(t.clone(), Dialect::Posix)],
                ..Analysis::default()
            },
        };
        if one.opaque.is_some() {
            return one;
        }
        out.inner.extend(one.inner);
    }
    out
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
    every_script("script", &s.values(&["c", "--command"], args))
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

/// `xargs [OPTION]... COMMAND...`: a wrapper whose command gets arguments read at run time,
/// appended (or, with `-I`/`--replace`, put in place of the replace string). The command is a
/// subject of its own; what xargs reads is chosen by the model, so a command whose options run
/// code is opaque, as it would be given a computed argument.
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
            "help",
            "version",
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
    let s = match scan("xargs", args, 0, &spec) {
        Ok(s) => s,
        Err(o) => {
            return Analysis {
                runs_args: true,
                ..Analysis::from(o)
            }
        }
    };
    if s.has("--help") || s.has("--version") {
        return Analysis::default();
    }
    // `--process-slot-var=NAME` sets NAME in the command's environment.
    for v in s.values(&["--process-slot-var"], args) {
        match v.text() {
            Some(name) if is_name(name) && !dangerous_variable(name) => {}
            _ => {
                return Analysis::opaque(
                    "`xargs --process-slot-var` sets a variable that changes how commands run",
                )
            }
        }
    }
    let replaces = s
        .opts
        .iter()
        .filter(|o| matches!(o.name.as_str(), "I" | "i" | "--replace"))
        .count();
    if replaces > 1 {
        return Analysis::opaque("`xargs` is given its replace string twice");
    }
    let mut replace = None;
    for o in &s.opts {
        match (o.name.as_str(), &o.value) {
            ("I", Some(OptValue::Word(i))) => match args[*i].lit() {
                Some(t) => replace = Some(t.to_string()),
                None => return Analysis::from(computed_option("xargs", &args[*i])),
            },
            ("I" | "i" | "--replace", Some(OptValue::Attached(t))) => replace = Some(t.clone()),
            ("i" | "--replace", None) => replace = Some("{}".to_string()),
            _ => {}
        }
    }
    let input = match replace {
        Some(r) if r.is_empty() => {
            return Analysis::opaque("`xargs -I` with an empty replace string")
        }
        Some(r) => Input::Replaced(r),
        None => Input::Appended,
    };
    let mut a = Analysis {
        runs_args: true,
        changes_paths: true,
        ..Analysis::default()
    };
    if s.end < args.len() {
        a.inner.push(Inner::Command {
            assigns: s.end..s.end,
            words: s.end..args.len(),
            input,
        });
    }
    a
}

/// `busybox APPLET ARGS...` runs the applet as the command `APPLET ARGS...`.
pub(super) fn busybox(args: &[Wd]) -> Analysis {
    match args.first() {
        None => Analysis::default(),
        Some(w) => match w.lit() {
            Some("--list" | "--list-full" | "--help") if args.len() == 1 => Analysis::default(),
            Some(t) if t.starts_with('-') => Analysis::from(unknown_option("busybox", t)),
            Some(_) => wrapped(args, 0, false),
            None => Analysis::from(computed_option("busybox", w)),
        },
    }
}

/// `setarch ARCH [OPTION]... [PROGRAM [ARGS...]]`, and its other names (`linux64`, `x86_64`,
/// ...) that take no ARCH. Without a program it runs a shell reading stdin.
pub(super) fn setarch(name: &str, args: &[Wd]) -> Analysis {
    let positional = usize::from(name == "setarch");
    let spec = Spec {
        flags: "v3BFILRSTXZ",
        long_flags: &[
            "verbose",
            "uname-2.6",
            "32bit",
            "fdpic-funcptrs",
            "short-inode",
            "addr-compat-layout",
            "addr-no-randomize",
            "whole-seconds",
            "sticky-timeouts",
            "read-implies-exec",
            "mmap-page-zero",
            "3gb",
            "4gb",
        ],
        permute: false,
        ..Spec::default()
    };
    // The arch comes first, then options (util-linux reads them after it).
    let Some(arch) = args.get(..positional) else {
        return Analysis::default();
    };
    if let Some(w) = arch.iter().find(|w| !w.is_static) {
        return Analysis {
            runs_args: true,
            ..Analysis::from(computed_option(name, w))
        };
    }
    let rest = &args[positional..];
    let s = match scan(name, rest, 0, &spec) {
        Ok(s) => s,
        Err(o) => {
            return Analysis {
                runs_args: true,
                ..Analysis::from(o)
            }
        }
    };
    if s.end >= rest.len() {
        return Analysis::from(Opaque::StdinScript);
    }
    wrapped(rest, s.end, false).shifted(positional as isize)
}

/// The dynamic loader run as a program (`/lib64/ld-linux-x86-64.so.2 PROGRAM ARGS...`).
pub(super) fn dynamic_loader(name: &str, args: &[Wd]) -> Analysis {
    let spec = Spec {
        long_flags: &["list", "verify", "inhibit-cache", "help", "version"],
        long_values: &[
            "library-path",
            "inhibit-rpath",
            "audit",
            "preload",
            "argv0",
            "glibc-hwcaps-prefix",
            "glibc-hwcaps-mask",
        ],
        ..Spec::default()
    };
    let s = match scan(name, args, 0, &spec) {
        Ok(s) => s,
        Err(o) => {
            return Analysis {
                runs_args: true,
                ..Analysis::from(o)
            }
        }
    };
    if [
        "--library-path",
        "--audit",
        "--preload",
        "--glibc-hwcaps-prefix",
    ]
    .iter()
    .any(|o| s.has(o))
    {
        return Analysis {
            runs_args: true,
            ..Analysis::opaque("the dynamic loader is told to load code from elsewhere")
        };
    }
    if s.has("--help") || s.has("--version") || s.end >= args.len() {
        return Analysis::default();
    }
    wrapped(args, s.end, false)
}

/// Whether `name` is the dynamic loader (`ld-linux-x86-64.so.2`, `ld.so`, `ld-musl-x86_64.so.1`).
pub(super) fn is_dynamic_loader(name: &str) -> bool {
    (name.starts_with("ld-") || name.starts_with("ld.") || name.starts_with("ld64."))
        && name.contains(".so")
}

/// `jobs -x COMMAND ARGS...` runs the command (job specs in its arguments replaced).
pub(super) fn jobs(args: &[Wd]) -> Analysis {
    let spec = Spec {
        flags: "lnprsx",
        ..Spec::default()
    };
    match scan("jobs", args, 0, &spec) {
        Ok(s) if s.has("x") => wrapped(args, s.end, false),
        Ok(_) => Analysis::default(),
        Err(o) => Analysis {
            runs_args: true,
            ..Analysis::from(o)
        },
    }
}
