//! Prefix grants: the pattern an `allow_prefix` answer adds for a shell command, computed from
//! the program model, never from the model's text beyond the command's own words
//! (docs/permissions.md, "Ask").
//!
//! Owns: which programs take a prefix, and how many words of a command are its program and
//! subcommand (`cargo test`, `npm run build`, `git commit`); the rest is data and becomes `*`.
//! A program takes a prefix only when it is known here: a subcommand tool, or a program that
//! only reads and prints. Shells, interpreters, wrappers and unknown programs take none (what
//! they run is the rest of the line). A grant never covers an opaque subject (`grants.rs`), so
//! `find *` granted still asks for `find . -exec rm {} ;`.
//!
//! Must not touch: matching (the grants do, with [`crate::Pattern`]) or decisions.

/// Programs whose first word after the name is a subcommand: `git commit *`.
const SUBCOMMANDS: &[&str] = &[
    "git",
    "cargo",
    "go",
    "rustup",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "gh",
    "terraform",
    "dotnet",
    "deno",
    "bun",
    "brew",
];

/// Package managers whose `run` takes a script name too: `npm run build *`.
const SCRIPT_RUNNERS: &[&str] = &["npm", "pnpm", "yarn"];

/// Subcommands that run whatever their arguments name: no prefix (`npm exec`, `cargo run`
/// stays allowed per call, and `go run` too).
const RUNS_ANYTHING: &[&str] = &["exec", "x", "dlx"];

/// Programs that only read and print: `ls *`.
const READERS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "rg", "diff", "stat", "file", "du", "df", "tree",
    "pwd", "which", "sort", "uniq", "cut", "tr", "jq", "find",
];

/// A word that can be part of a prefix: a plain name, no option, no quoting or expansion.
fn plain(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('-')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '+'))
}

/// The prefix pattern for the shell subject `subject` (one simple command as the engine
/// normalized it), or `None` when its program takes none.
pub fn prefix(subject: &str) -> Option<String> {
    let words: Vec<&str> = subject.split_whitespace().collect();
    let program = *words.first()?;
    if !plain(program) {
        return None;
    }
    let arity = if READERS.contains(&program) {
        0
    } else if SUBCOMMANDS.contains(&program) {
        1
    } else if SCRIPT_RUNNERS.contains(&program) {
        match words.get(1) {
            Some(&"run") | Some(&"run-script") => 2,
            _ => 1,
        }
    } else {
        return None;
    };
    let head = words.get(..=arity)?;
    if head[1..]
        .iter()
        .any(|w| !plain(w) || RUNS_ANYTHING.contains(w))
    {
        return None;
    }
    Some(format!("{} *", head.join(" ")))
}

/// Whether `pattern` is one this module produces (a prefix grant read back from a log).
pub fn is_prefix(pattern: &str) -> bool {
    pattern
        .strip_suffix(" *")
        .is_some_and(|head| prefix(head).as_deref() == Some(pattern))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_and_its_subcommands_then_data() {
        for (subject, want) in [
            ("cargo test --lib foo", Some("cargo test *")),
            ("cargo test", Some("cargo test *")),
            ("npm run build -- --watch", Some("npm run build *")),
            ("npm install left-pad", Some("npm install *")),
            ("git commit -m x", Some("git commit *")),
            ("ls -la src", Some("ls *")),
            // Options before the subcommand, runners of anything, interpreters, unknowns.
            ("git -C other status", None),
            ("npm exec cowsay", None),
            ("npm run", None),
            ("python3 -m pytest", None),
            ("bash -c true", None),
            ("./build.sh", None),
            ("make all", None),
            ("git $(x)", None),
        ] {
            assert_eq!(prefix(subject).as_deref(), want, "{subject}");
        }
        assert!(is_prefix("cargo test *"));
        assert!(!is_prefix("cargo *"));
        assert!(!is_prefix("*"));
        assert!(!is_prefix("bash *"));
    }
}
