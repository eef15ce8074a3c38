//! `find` and `fd`: the actions that run a program (`-exec`, `-ok`, `--exec`, ...) and those that
//! write files (`-fprint`, ...).

use super::*;

pub(super) fn find(args: &[Wd]) -> Analysis {
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
                }],
                changes_paths: true,
                ..Analysis::default()
            }
        }
        None => data("fd", args),
    }
}
