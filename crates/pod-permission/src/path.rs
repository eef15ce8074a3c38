//! Path subjects: the path a file tool touches, as rules see it.
//!
//! A path is made absolute against the workspace, `.` and `..` are folded lexically, and it is
//! shown relative to the workspace when inside it (the workspace itself is `.`), absolute
//! otherwise. When the path resolves through a symlink, the resolved path is a second subject,
//! so `notes -> .env` is checked as `notes` and as `.env`. This module reads the file system only
//! to resolve symlinks, and reads it as the sandboxed processes see it: where the sandbox
//! installed a view ([`set_view`]: a session's `$TMPDIR`, a tmpfs that exists only in the
//! session's mount view), a path beneath it is looked up through the view ([`reach`]).

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A path as pod's own process reaches what the sandboxed processes see there, and what keeps
/// that way open while the path is used (a view's descriptor: `/proc/self/fd/N/…` names it).
pub struct Reached {
    path: PathBuf,
    /// `Some` when the path goes through a view.
    hold: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl Reached {
    /// `path` through a view, kept open by `hold` for as long as this lives.
    pub fn through(path: PathBuf, hold: Arc<dyn std::any::Any + Send + Sync>) -> Reached {
        Reached {
            path,
            hold: Some(hold),
        }
    }

    /// Whether the path goes through a view (else it is the path asked for).
    pub fn is_redirected(&self) -> bool {
        self.hold.is_some()
    }
}

impl std::ops::Deref for Reached {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Reached {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Debug for Reached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.path.fmt(f)
    }
}

/// How a path beneath a view is reached: `None` for a path beneath none.
pub type View = fn(&Path) -> Option<Reached>;

static VIEW: OnceLock<View> = OnceLock::new();

/// Installs the sandbox's view (crate `pod`'s `sandbox::tmpfs`), once per process; a later call
/// changes nothing.
pub fn set_view(view: View) {
    let _ = VIEW.set(view);
}

/// Where pod's own process finds what the sandboxed processes see at `path` (absolute,
/// normalized): through the installed view beneath one, else `path` itself.
pub fn reach(path: &Path) -> Reached {
    through_view(path).unwrap_or_else(|| Reached {
        path: path.to_path_buf(),
        hold: None,
    })
}

/// [`reach`], `None` for a path beneath no view (nothing allocated).
fn through_view(path: &Path) -> Option<Reached> {
    VIEW.get().and_then(|view| view(path))
}

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

/// Resolves every symlink of `path` the way the kernel would: component by component, with
/// `..` applied to the resolved parent (so `link/..` is the parent of the link's target, not the
/// folder holding the link). Components that do not exist yet are appended as written, so a file
/// about to be created resolves too.
pub fn resolve(path: &Path) -> PathBuf {
    resolve_in(Path::new("/"), path)
}

/// [`resolve`] for `path` relative to `base`, which must already be resolved (canonical). Only
/// the components of `path` are looked up, which keeps the common case to a few `lstat` calls.
pub fn resolve_in(base: &Path, path: &Path) -> PathBuf {
    let mut resolved = base.to_path_buf();
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    push_components(&mut pending, path);
    // Symlinks followed so far; the kernel gives up at 40 (ELOOP), and so do we.
    let mut hops = 0;
    // Once a component is missing, nothing below it can be a symlink.
    let mut missing = false;
    while let Some(part) = pending.pop() {
        match part.to_str() {
            Some("/") => resolved = PathBuf::from("/"),
            Some(".") => {}
            Some("..") => {
                resolved.pop();
            }
            _ => {
                let candidate = resolved.join(&part);
                let link = if missing {
                    None
                } else {
                    let through = through_view(&candidate);
                    let seen = through.as_deref().unwrap_or(&candidate);
                    match std::fs::symlink_metadata(seen) {
                        Ok(meta) if meta.file_type().is_symlink() => std::fs::read_link(seen).ok(),
                        Ok(_) => None,
                        Err(_) => {
                            missing = true;
                            None
                        }
                    }
                };
                match link {
                    Some(target) if hops < 40 => {
                        hops += 1;
                        push_components(&mut pending, &target);
                    }
                    _ => resolved = candidate,
                }
            }
        }
    }
    normalize(&resolved)
}

/// Pushes `path`'s components onto `stack` so that popping yields them in order.
fn push_components(stack: &mut Vec<std::ffi::OsString>, path: &Path) {
    let parts: Vec<std::ffi::OsString> = path
        .components()
        .map(|c| match c {
            Component::RootDir | Component::Prefix(_) => std::ffi::OsString::from("/"),
            Component::CurDir => std::ffi::OsString::from("."),
            Component::ParentDir => std::ffi::OsString::from(".."),
            Component::Normal(n) => n.to_os_string(),
        })
        .collect();
    stack.extend(parts.into_iter().rev());
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
    let resolved = display(&resolve_in(workspace, Path::new(raw)), workspace);
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
        assert_eq!(
            display(&absolute("/../../etc/passwd", ws), ws),
            "/etc/passwd"
        );
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
        assert_eq!(
            subjects("link/new.txt", &ws),
            vec!["link/new.txt", "real/new.txt"]
        );
    }
}
