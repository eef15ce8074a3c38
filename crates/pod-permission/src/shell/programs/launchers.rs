//! Programs that start another program through an option: `tar --to-command`, `make --eval`,
//! pagers, `man`, `sqlite3`, `ssh`, `rsync -e`.

use super::*;

pub(super) fn tar(args: &[Wd]) -> Analysis {
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

pub(super) fn make(args: &[Wd]) -> Analysis {
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

pub(super) fn pager(name: &str, args: &[Wd]) -> Analysis {
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

pub(super) fn man(args: &[Wd]) -> Analysis {
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

pub(super) fn sqlite(args: &[Wd]) -> Analysis {
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
            | "-pagecache" | "-lookaside" | "-heap" => match args.get(i + 1) {
                Some(v) if v.model_chosen() || v.splits => {
                    return Analysis::from(split_value("sqlite3", v))
                }
                _ => i += 2,
            },
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

pub(super) fn ssh(name: &str, args: &[Wd]) -> Analysis {
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

pub(super) fn rsync(args: &[Wd]) -> Analysis {
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

/// `go`: building and testing run the project's own code (as `cargo` does), not its
/// arguments; the flags that give go a program to run (`-exec`, `-toolexec`, `-vettool`, linker
/// and gccgo flags, which can name an external linker or a wrapper) and `go env -w` (which sets
/// `GOFLAGS` for every later build) are opaque.
pub(super) fn go(args: &[Wd]) -> Analysis {
    const RUNS: &[&str] = &[
        "exec",
        "toolexec",
        "vettool",
        "ldflags",
        "gccgoflags",
        "compiler",
        "overlay",
    ];
    let a = Analysis {
        runs_args: true,
        ..Analysis::default()
    }
    .changes_paths();
    if args.first().and_then(Wd::lit) == Some("env")
        && args
            .iter()
            .any(|w| matches!(w.lit(), Some("-w" | "--w" | "-u" | "--u")))
    {
        return a.with(Some(Opaque::Code(
            "`go env -w` sets configuration (`GOFLAGS`) every later go command reads".into(),
        )));
    }
    for w in args {
        if w.model_chosen() && w.may_start_dash {
            return a.with(Some(computed_option("go", w)));
        }
        let Some(t) = w.lit() else { continue };
        let Some(flag) = t.strip_prefix("--").or_else(|| t.strip_prefix('-')) else {
            continue;
        };
        let flag = flag.split('=').next().unwrap_or("");
        if RUNS.contains(&flag) {
            return a.with(Some(Opaque::Code(format!(
                "`go {t}` gives go a program to run"
            ))));
        }
    }
    a
}
