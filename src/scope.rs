//! Scope: the directory-level write boundary (`[scope].writable`) for the file tools.
//!
//! Independent of permissions (both must pass). Checked on the target the runtime pinned (the
//! path resolved through symlinks), so writing through a symlink that points outside the
//! writable folders is refused; the writable folder found is the one the tool opens the target
//! beneath.
//!
//! Must not touch: rules, approvals, running tools.

use std::path::{Path, PathBuf};

use crate::permission::path;

/// Tools that write the file named by their `path` input.
const WRITING_TOOLS: [&str; 2] = ["file_write", "edit"];

#[derive(Debug, Clone)]
pub struct Scope {
    workspace: PathBuf,
    /// Resolved (symlink-free) writable folders.
    writable: Vec<PathBuf>,
}

impl Scope {
    /// `writable` entries should be absolute; they are resolved here.
    pub fn new(workspace: &Path, writable: &[PathBuf]) -> Scope {
        Scope {
            workspace: workspace.to_path_buf(),
            writable: writable.iter().map(|w| path::resolve(w)).collect(),
        }
    }

    /// True when `tool` writes the file its `path` names.
    pub fn writes(tool: &str) -> bool {
        WRITING_TOOLS.contains(&tool)
    }

    /// Whether `resolved` (absolute, symlinks resolved) is beneath a writable folder.
    pub fn contains(&self, resolved: &Path) -> bool {
        let resolved = path::resolve(resolved);
        self.writable.iter().any(|w| resolved.starts_with(w))
    }

    /// For a writing `tool`, the writable folder holding `resolved` (the pinned target of input
    /// path `raw`), or `Err(text)` when it is outside them; `Ok(None)` for other tools.
    pub fn check(&self, tool: &str, raw: &str, resolved: &Path) -> Result<Option<&Path>, String> {
        if !Scope::writes(tool) {
            return Ok(None);
        }
        // The deepest writable folder holding it, so the open starts as low as it can.
        if let Some(root) = self
            .writable
            .iter()
            .filter(|w| resolved.starts_with(w))
            .max_by_key(|w| w.components().count())
        {
            return Ok(Some(root));
        }
        let shown: Vec<String> = self
            .writable
            .iter()
            .map(|w| path::display(w, &self.workspace))
            .collect();
        Err(format!(
            "denied by scope: {raw} resolves to {}, outside [scope].writable ({})",
            path::display(resolved, &self.workspace),
            shown.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_through_a_symlink_pointing_outside_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("src")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("src/out")).unwrap();
        let scope = Scope::new(&ws, &[ws.join("src")]);
        let check = |tool: &str, raw: &str| {
            let resolved = path::resolve_in(&ws, Path::new(raw));
            scope
                .check(tool, raw, &resolved)
                .map(|r| r.map(Path::to_path_buf))
        };
        assert_eq!(check("file_write", "src/a.txt"), Ok(Some(ws.join("src"))));
        assert!(check("file_write", "b.txt").is_err());
        let err = check("edit", "src/out/c.txt").unwrap_err();
        assert!(err.contains("outside [scope].writable (src)"), "{err}");
        assert!(check("file_write", "src/../b.txt").is_err());
        // `..` after a symlink leaves through the link's target, not lexically.
        std::fs::create_dir(outside.path().join("deeper")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("deeper"), ws.join("src/deep")).unwrap();
        assert!(check("file_write", "src/deep/../x.txt").is_err());
        assert_eq!(check("read", "/etc/passwd"), Ok(None));
    }
}
