//! What a repository's configuration makes git read or run from elsewhere: the hooks folder
//! `core.hooksPath` names (husky's `.husky`, lefthook's) and the files `include.path` and
//! `includeIf.*.path` pull in, as git would find them when the session opens. When they lie in
//! a writable folder, a call could rewrite a hook or a configuration file there that the user's
//! next git command runs outside the sandbox, so the caller binds them read-only like
//! `.git/hooks` and `.git/config` (or seals a missing hooks folder, or watches a missing file).
//!
//! Owns: finding the configuration files git reads for a repository (the system's, the user's
//! global ones, the repository's `config` and `config.worktree`, and every file they include,
//! whatever the include's condition, at most [`MAX_DEPTH`] deep and [`MAX_FILES`] files of at
//! most [`FILE_CAP`] bytes each), and reading from them, in a subset of git's syntax read
//! generously (a line that might set the key counts), every `core.hooksPath` and include path.
//!
//! Must not touch: the files themselves (it only reads), the mount view (the caller's), and
//! git: git is never run.

use std::path::{Path, PathBuf};

use crate::permission::path::resolve;

/// The deepest chain of includes followed (git's own limit is 10).
pub const MAX_DEPTH: usize = 10;
/// The most configuration files read for one repository.
pub const MAX_FILES: usize = 64;
/// The most bytes read of one configuration file.
pub const FILE_CAP: u64 = 1024 * 1024;

/// What a repository's configuration points at.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pointed {
    /// Configuration files: the repository's own, the user's and the system's, and included
    /// ones (whether they exist or not).
    pub files: Vec<PathBuf>,
    /// Hooks folders named by `core.hooksPath` (whether they exist or not).
    pub hooks: Vec<PathBuf>,
}

/// Where git reads configuration besides a repository: the system's and the user's files.
fn global_files() -> Vec<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut out = Vec::new();
    out.push(var("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    let home = var("HOME");
    let xdg = var("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    if let Some(x) = xdg {
        out.push(x.join("git/config"));
    }
    match var("GIT_CONFIG_GLOBAL") {
        Some(g) => out.push(g),
        None => out.extend(home.map(|h| h.join(".gitconfig"))),
    }
    out
}

/// What the configuration of repository `git` (its git folder) points at, with the user's and
/// the system's files read too.
pub fn pointed(git: &Path) -> Pointed {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    pointed_with(git, &global_files(), home.as_deref())
}

fn pointed_with(git: &Path, globals: &[PathBuf], home: Option<&Path>) -> Pointed {
    let mut out = Pointed::default();
    // A relative `core.hooksPath` is relative to where hooks run: the work tree's top for a
    // repository in `.git`, the repository itself when bare; both are taken.
    let mut bases = vec![git.to_path_buf()];
    if git.file_name().is_some_and(|n| n == ".git") {
        bases.extend(git.parent().map(Path::to_path_buf));
    }
    let mut queue: Vec<(PathBuf, usize)> = globals
        .iter()
        .cloned()
        .chain([git.join("config"), git.join("config.worktree")])
        .map(|f| (resolve(&f), 0))
        .collect();
    let mut i = 0;
    while i < queue.len() && out.files.len() < MAX_FILES {
        let (file, depth) = queue[i].clone();
        i += 1;
        if out.files.contains(&file) {
            continue;
        }
        out.files.push(file.clone());
        let Some(text) = read_capped(&file) else {
            continue;
        };
        for (section, key, value) in entries(&text) {
            let value = expand_home(&value, home);
            if section == "core" && key == "hookspath" {
                for base in &bases {
                    let p = resolve(&base.join(&value));
                    if !out.hooks.contains(&p) {
                        out.hooks.push(p);
                    }
                }
            } else if (section == "include" || section == "includeif")
                && key == "path"
                && depth < MAX_DEPTH
            {
                // Relative to the folder of the file that includes it.
                let base = file.parent().unwrap_or(Path::new("/"));
                queue.push((resolve(&base.join(&value)), depth + 1));
            }
        }
    }
    out
}

fn expand_home(value: &str, home: Option<&Path>) -> PathBuf {
    match (value.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => PathBuf::from(value),
    }
}

fn read_capped(file: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(file).ok()?;
    let mut bytes = Vec::new();
    f.take(FILE_CAP).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The `(section, key, value)` entries of a configuration text that have a value: the section
/// lower-cased without its subsection (`includeIf "gitdir:…"` is `includeif`), the key
/// lower-cased. Quotes and escapes are read as git reads them, `\` at a line's end joins the
/// next line, `#` and `;` outside quotes start a comment; a `[core.x]`-style header counts as
/// section `core`. Anything not read exactly is still given (a generous reading: an entry too
/// many only binds a path more).
fn entries(text: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut rest = line.trim_start();
        if let Some(after) = rest.strip_prefix('[') {
            let Some(end) = after.find(']') else {
                continue;
            };
            let header = &after[..end];
            let name = header
                .split(|c: char| c.is_whitespace() || c == '"' || c == '.')
                .next()
                .unwrap_or("");
            section = name.to_ascii_lowercase();
            // git allows an entry on the header's line: `[core] hooksPath = x`.
            rest = after[end + 1..].trim_start();
        }
        if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
            continue;
        }
        let key_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(rest.len());
        let key = rest[..key_end].to_ascii_lowercase();
        let Some(raw) = rest[key_end..].trim_start().strip_prefix('=') else {
            continue;
        };
        let mut value = String::new();
        let mut raw = raw.to_string();
        let mut quoted = false;
        loop {
            if !read_value(&raw, &mut value, &mut quoted) {
                break;
            }
            // The line ended in a backslash outside a comment: the value goes on.
            match lines.next() {
                Some(next) => raw = next.to_string(),
                None => break,
            }
        }
        out.push((section.clone(), key, value.trim().to_string()));
    }
    out
}

/// Reads one line of a value into `value` (`quoted`: inside quotes, carried across a
/// continuation); true when it ends in a continuation.
fn read_value(raw: &str, value: &mut String, quoted: &mut bool) -> bool {
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => *quoted = !*quoted,
            '\\' => match chars.next() {
                None => return true,
                Some('n') => value.push('\n'),
                Some('t') => value.push('\t'),
                Some('b') => {
                    value.pop();
                }
                Some(other) => value.push(other),
            },
            '#' | ';' if !*quoted => return false,
            c => value.push(c),
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_path_and_includes_are_found_however_written() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = resolve(dir.path());
        let ws = root.join("ws");
        let git = ws.join(".git");
        std::fs::create_dir_all(&git).expect("git");
        std::fs::write(
            git.join("config"),
            "[core]\n\trepositoryformatversion = 0\n\tHooksPath = \".hu\\\n\
             sky\" ; husky\n[include]\n\tpath = ../team.gitconfig\n\
             [includeIf \"gitdir:~/work/\"]\n\tpath = ~/work.gitconfig\n",
        )
        .expect("config");
        // Included: a header with the entry on its line, and another include.
        std::fs::write(
            ws.join("team.gitconfig"),
            "[core] hookspath=tools/hooks # lefthook\n[include]path=deeper\n",
        )
        .expect("team");
        let home = root.join("home");
        let global = home.join(".gitconfig");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::write(&global, "[core.x]\nhooksPath = ~/hooks\n").expect("global");
        let p = pointed_with(&git, std::slice::from_ref(&global), Some(&home));
        for f in [
            global.clone(),
            git.join("config"),
            git.join("config.worktree"),
            ws.join("team.gitconfig"),
            home.join("work.gitconfig"),
            ws.join("deeper"),
        ] {
            assert!(p.files.contains(&f), "{f:?} not in {:?}", p.files);
        }
        for h in [
            ws.join(".husky"),
            ws.join("tools/hooks"),
            home.join("hooks"),
        ] {
            assert!(p.hooks.contains(&h), "{h:?} not in {:?}", p.hooks);
        }
        // The repository's own folder is a base too (bare repositories run hooks there).
        assert!(p.hooks.contains(&git.join(".husky")), "{:?}", p.hooks);
    }

    #[test]
    fn includes_stop_at_the_depth_and_count_limits() {
        let dir = tempfile::tempdir().expect("tmp");
        let git = resolve(dir.path()).join(".git");
        std::fs::create_dir_all(&git).expect("git");
        // A file that includes itself, and a chain deeper than the limit.
        std::fs::write(git.join("config"), "[include]\npath = config\npath = c0\n").expect("c");
        for n in 0..20 {
            std::fs::write(
                git.join(format!("c{n}")),
                format!("[include]\npath = c{}\n", n + 1),
            )
            .expect("chain");
        }
        let p = pointed_with(&git, &[], None);
        assert!(p.files.len() <= MAX_FILES);
        assert!(p.files.contains(&git.join(format!("c{}", MAX_DEPTH - 1))));
        assert!(
            !p.files.contains(&git.join(format!("c{}", MAX_DEPTH + 1))),
            "{:?}",
            p.files
        );
    }

    #[test]
    fn comments_and_other_keys_are_not_entries() {
        let got = entries("# [core] hooksPath = a\n[core]\n; hooksPath = b\nfsmonitor = c\n");
        assert_eq!(
            got,
            vec![("core".to_string(), "fsmonitor".to_string(), "c".to_string())]
        );
    }
}
