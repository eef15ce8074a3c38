//! `git`: global options that run code (`-c core.pager=...`, `--exec-path`, ...), and the subcommand
//! as the subject (without global options).

use super::*;

pub(super) fn git(args: &[Wd]) -> Analysis {
    let mut i = 0;
    // `-C DIR`, in order: git changes to each before it does anything.
    let mut chdir = Vec::new();
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
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" => {
                // The value is one word, or the words after it are not where they seem
                // (`git -C {.,push,origin} main` is `git -C . push origin main`).
                match value_word("git", args, i + 1, t) {
                    Ok(v) => {
                        if t == "-C" {
                            chdir.push(FileArg::whole(v));
                        }
                        i = v + 1;
                    }
                    Err(o) => return Analysis::from(o),
                }
            }
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
    let words = |ws: &[Wd]| {
        ws.iter()
            .filter(|w| !w.hidden)
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let text = if rest.iter().any(|w| !w.hidden) {
        format!("git {}", words(rest))
    } else {
        "git".to_string()
    };
    let mut a = Analysis {
        text: Some(text),
        chdir,
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
    let at = i + 1;
    // `--output FILE` (diff, log, show, ...) writes FILE, relative to `-C`.
    let mut k = 0;
    while k < operands.len() {
        if operands[k].static_prefix().starts_with("--output=") {
            a.writes.push(Write::File(FileArg {
                arg: at + k,
                from: "--output=".len(),
            }));
        } else if let Some(t) = operands[k].lit() {
            if t == "--" {
                break;
            }
            if t == "--output" {
                match value_word("git", operands, k + 1, t) {
                    Ok(v) => a.writes.push(Write::File(FileArg::whole(at + v))),
                    Err(o) => return a.with(Some(o)),
                }
                k += 1;
            } else if t.starts_with("--outp")
                && "--output".starts_with(t.split('=').next().unwrap_or(t))
            {
                return a.with(Some(Opaque::Code(format!(
                    "`git {sub} {t}` may write a file"
                ))));
            } else if sub == "format-patch"
                && (short_cluster_has(t, "o") || long_prefix_of(t, &["output-directory"]))
            {
                return a.with(Some(Opaque::Code(
                    "`git format-patch -o` writes files into a folder".into(),
                )));
            }
        }
        k += 1;
    }
    // Plumbing that pushes: a `git push` rule holds for it too.
    if matches!(sub, "send-pack" | "http-push") {
        a.deny_forms.push(format!("git push {}", words(operands)));
    }
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
        "difftool" | "mergetool" | "filter-branch" | "filter-repo" | "daemon" | "instaweb"
        | "remote-ext" => Some(format!("`git {sub}` runs configured or given programs")),
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
pub(super) fn git_config_key_runs(t: &str) -> bool {
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
