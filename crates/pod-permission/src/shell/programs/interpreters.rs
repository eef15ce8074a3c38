//! Interpreters: which options of `python3`, `node`, `perl`, `ruby`, ... run code given on the
//! command line or from a module, and which name a script file.

use super::*;

/// Interpreters: inline code, modules and preloads, and scripts read from stdin are opaque; a
/// script file is not (its contents are not read: see docs/permissions.md).
pub(super) fn interpreter(name: &str, args: &[Wd]) -> Option<Analysis> {
    struct Interp {
        /// Short option letters that run code given on the command line (or load it).
        code: &'static str,
        /// Long options that do.
        code_long: &'static [&'static str],
        /// Short options taking a value in the next word (to find the script operand).
        values: &'static str,
        /// Reads its program from stdin when no script is given.
        stdin: bool,
    }
    let spec = if name.starts_with("python") || name.starts_with("pypy") {
        Interp {
            code: "cmi",
            code_long: &[],
            values: "WXQ",
            stdin: true,
        }
    } else if matches!(name, "node" | "nodejs") {
        Interp {
            code: "epri",
            code_long: &[
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
            ],
            values: "",
            stdin: true,
        }
    } else if name == "bun" {
        Interp {
            code: "epr",
            code_long: &["eval", "print", "preload", "require"],
            values: "",
            stdin: false,
        }
    } else if name == "perl" || name.starts_with("perl5") {
        Interp {
            code: "eEMmdxF",
            code_long: &[],
            values: "I",
            stdin: true,
        }
    } else if name == "ruby" {
        Interp {
            code: "erx",
            code_long: &["require"],
            values: "I",
            stdin: true,
        }
    } else if name == "php" {
        Interp {
            code: "raBREFdczS",
            code_long: &[
                "run",
                "interactive",
                "process-begin",
                "process-code",
                "process-end",
                "process-file",
                "define",
                "php-ini",
                "zend-extension",
            ],
            values: "f",
            stdin: true,
        }
    } else if name.starts_with("lua") {
        Interp {
            code: "eli",
            code_long: &[],
            values: "",
            stdin: true,
        }
    } else if matches!(name, "Rscript" | "R") {
        Interp {
            code: "e",
            code_long: &["expr"],
            values: "",
            stdin: true,
        }
    } else if name == "julia" {
        Interp {
            code: "eEL",
            code_long: &["eval", "print", "load"],
            values: "",
            stdin: true,
        }
    } else if matches!(name, "tclsh" | "wish" | "expect") {
        Interp {
            code: "c",
            code_long: &[],
            values: "",
            stdin: true,
        }
    } else if name == "osascript" {
        Interp {
            code: "e",
            code_long: &[],
            values: "",
            stdin: true,
        }
    } else if matches!(name, "pwsh" | "powershell") {
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
        return Some(if inline || args.is_empty() {
            Analysis::from(Opaque::InlineCode)
        } else {
            Analysis::default().changes_paths()
        });
    } else {
        return None;
    };
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let Some(t) = w.lit() else {
            if w.may_start_dash {
                return Some(Analysis::from(computed_option(name, w)));
            }
            break;
        };
        if t == "--" {
            i += 1;
            break;
        }
        if t == "-" {
            return Some(Analysis::from(Opaque::StdinScript));
        }
        if let Some(long) = t.strip_prefix("--") {
            let opt = long.split('=').next().unwrap_or("");
            if spec
                .code_long
                .iter()
                .any(|c| c.starts_with(opt) && opt.len() >= 2)
            {
                return Some(Analysis::from(Opaque::InlineCode));
            }
            i += 1;
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-') {
            if cluster.chars().any(|c| spec.code.contains(c)) {
                return Some(Analysis::from(Opaque::InlineCode));
            }
            let takes_next = cluster
                .chars()
                .last()
                .is_some_and(|c| spec.values.contains(c));
            i += if takes_next { 2 } else { 1 };
            continue;
        }
        break;
    }
    let analysis = match args.get(i) {
        Some(script) => Analysis::default()
            .changes_paths()
            .with(script_operand(name, script)),
        None if spec.stdin => Analysis::from(Opaque::StdinScript),
        None => Analysis::default().changes_paths(),
    };
    Some(analysis)
}
