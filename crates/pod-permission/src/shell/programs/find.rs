//! `find` and `fd`: the actions that run a program (`-exec`, `-ok`, `--exec`, ...) and those that
//! write files (`-fprint`, ...).

use super::*;

pub(super) fn find(args: &[Wd]) -> Analysis {
    let mut a = Analysis::default();
    let mut reason: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        if (w.model_chosen() || (w.glob && w.may_start_dash)) && !names_no_action(w) {
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
                    input: Input::Replaced("{}".into()),
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

pub(super) fn fd(args: &[Wd]) -> Analysis {
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
                    input: Input::Appended,
                }],
                changes_paths: true,
                ..Analysis::default()
            }
        }
        None => data("fd", args),
    }
}

/// A glob (`*.py`, nothing else computed) none of whose expansions can be a find action that
/// runs, deletes or writes (a file named `-delete` matches `*`, never `*.py`).
fn names_no_action(w: &Wd) -> bool {
    const ACTIONS: &[&str] = &[
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    ];
    match &w.glob_pattern {
        Some(pattern) => !ACTIONS.iter().any(|a| glob_may_match(pattern, a)),
        None => false,
    }
}

/// Whether the glob `pattern` may match `name` (ignoring case, as `nocaseglob` would; a bracket
/// expression matches any one character): an over-approximation of bash's matching.
pub(super) fn glob_may_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char], budget: &mut u32) -> bool {
        if *budget == 0 {
            return true;
        }
        *budget -= 1;
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|k| go(rest, &n[k..], budget)),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..], budget),
            Some(('[', rest)) => match rest.iter().skip(1).position(|&c| c == ']') {
                Some(close) => !n.is_empty() && go(&rest[close + 2..], &n[1..], budget),
                None => n.first() == Some(&'[') && go(rest, &n[1..], budget),
            },
            Some(('\\', rest)) => match rest.split_first() {
                Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..], budget),
                None => n.first() == Some(&'\\') && n.len() == 1,
            },
            Some((c, rest)) => {
                n.first().is_some_and(|m| m.eq_ignore_ascii_case(c)) && go(rest, &n[1..], budget)
            }
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n, &mut 10_000)
}
