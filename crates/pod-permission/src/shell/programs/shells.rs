//! Shells and their builtins: `bash -c STR` and the other shells, and the builtins whose
//! arguments name variables, options or scripts (`source`, `set`, `shopt`, `declare`, `printf -v`,
//! `test -v`, ...).

use super::*;

/// A script operand of a shell or interpreter: opaque when it is read from a descriptor or
/// computed at run time.
pub(super) fn script_operand(prog: &str, w: &Wd) -> Option<Opaque> {
    if !w.is_static {
        return Some(Opaque::DynamicScript);
    }
    if may_name_a_descriptor(&w.text) {
        return Some(Opaque::StdinScript);
    }
    let _ = prog;
    None
}

/// Whether a script path may name stdin or another descriptor (`-`, `/dev/stdin`, `/dev/fd/N`,
/// `/proc/*/fd/N`). The kernel reads `//dev/stdin`, `/./dev/stdin` and `../../dev/stdin` as
/// `/dev/stdin`, and after `cd /dev` (which the program's own analysis does not see) `stdin` is
/// that file too, so the path is judged by its components, not its spelling: one of them is
/// `dev`, `proc` or `fd`, or the last is `stdin` or a number.
fn may_name_a_descriptor(path: &str) -> bool {
    if path == "-" {
        return true;
    }
    let components: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let last = components.last().copied().unwrap_or("");
    components
        .iter()
        .any(|c| matches!(*c, "dev" | "proc" | "fd"))
        || last == "stdin"
        || (!last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()))
}

/// A command string run by a shell (`sh -c` unless `dialect` says bash).
pub(super) fn shell_string(prog: &str, w: Option<&Wd>, dialect: Dialect) -> Analysis {
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

pub(super) fn source(args: &[Wd]) -> Analysis {
    let mut a = Analysis::default().changes_paths();
    match args.first() {
        None => a.with(Some(Opaque::StdinScript)),
        Some(w) => {
            a.opaque = script_operand("source", w);
            a.with(None)
        }
    }
}

pub(super) fn set(args: &[Wd]) -> Analysis {
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

pub(super) fn shopt(args: &[Wd]) -> Analysis {
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
pub(super) fn name_operand(prog: &str, w: &Wd) -> Option<Opaque> {
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
pub(super) fn names_builtin(
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

pub(super) fn printf(args: &[Wd]) -> Analysis {
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

pub(super) fn getopts(args: &[Wd]) -> Analysis {
    match args.get(1) {
        Some(w) => Analysis::default().with(name_operand("getopts", w)),
        None => Analysis::default(),
    }
}

pub(super) fn test_builtin(prog: &str, args: &[Wd]) -> Analysis {
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

pub(super) fn declare(prog: &str, args: &[Wd]) -> Analysis {
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
            if !crate::shell::walk::numeric_subscript(sub) {
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

pub(super) fn shell(name: &str, args: &[Wd]) -> Analysis {
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

pub(super) fn other_shell(name: &str, args: &[Wd]) -> Analysis {
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
