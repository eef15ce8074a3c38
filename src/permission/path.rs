//! Path subjects: the path a file tool touches, as rules see it.
//!
//! A path is made absolute against the workspace, `.` and `..` are folded lexically, and it is
//! shown relative to the workspace when inside it (the workspace itself is `.`), absolute
//! otherwise. When the path resolves through a symlink, the resolved path is a second subject,
//! so `notes -> .env` is checked as `notes` and as `.env`. This module reads the file system only
//! to resolve symlinks.

use std::path::{Component, Path, PathBuf};

/// Folds `.` and `..` without touching the file system. `..` above the root stays at the root.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `raw` made absolute against `workspace` and normalized.
pub fn absolute(raw: &str, workspace: &Path) -> PathBuf {
    let raw = Path::new(raw);
    if raw.is_absolute() {
        normalize(raw)
    } else {
        normalize(&workspace.join(raw))
    }
}

/// Resolves every symlink of `path`, also when its last components do not exist yet: the
/// longest existing prefix is canonicalized and the rest appended.
pub fn resolve(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut out = canonical;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// How rules see an absolute path: relative to the workspace when inside it, else absolute.
pub fn display(path: &Path, workspace: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// The subjects of a path: its normalized form, plus the symlink-resolved form when different.
/// `workspace` must be canonical.
pub fn subjects(raw: &str, workspace: &Path) -> Vec<String> {
    let lexical = absolute(raw, workspace);
    let mut out = vec![display(&lexical, workspace)];
    let resolved = display(&resolve(&lexical), workspace);
    if resolved != out[0] {
        out.push(resolved);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_and_dotdot_fold_and_inside_paths_become_relative() {
        let ws = Path::new("/w");
        assert_eq!(display(&absolute("src/../.env", ws), ws), ".env");
        assert_eq!(display(&absolute("./.env", ws), ws), ".env");
        assert_eq!(display(&absolute("/w/.env", ws), ws), ".env");
        assert_eq!(display(&absolute(".", ws), ws), ".");
        assert_eq!(display(&absolute("../x", ws), ws), "/x");
        assert_eq!(display(&absolute("/../../etc/passwd", ws), ws), "/etc/passwd");
    }

    #[test]
    fn a_symlink_adds_its_target_as_second_subject() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::write(ws.join(".env"), "x").unwrap();
        std::os::unix::fs::symlink(ws.join(".env"), ws.join("notes")).unwrap();
        assert_eq!(subjects("notes", &ws), vec!["notes", ".env"]);
        assert_eq!(subjects(".env", &ws), vec![".env"]);
        // A file that does not exist yet inside a symlinked folder resolves too.
        std::fs::create_dir(ws.join("real")).unwrap();
        std::os::unix::fs::symlink(ws.join("real"), ws.join("link")).unwrap();
        assert_eq!(subjects("link/new.txt", &ws), vec!["link/new.txt", "real/new.txt"]);
    }
}
