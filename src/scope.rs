//! Scope: the directory-level write boundary (`[scope].writable`) for the file tools.
//!
//! Independent of permissions (both must pass). Checked after symlink resolution, so writing
//! through a symlink that points outside the writable folders is refused.
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

    /// `Err(text)` when `tool` would write outside the writable folders.
    pub fn check(&self, tool: &str, input: &serde_json::Value) -> Result<(), String> {
        if !WRITING_TOOLS.contains(&tool) {
            return Ok(());
        }
        let Some(raw) = input.get("path").and_then(|p| p.as_str()) else {
            return Err(format!(
                "denied by scope: the {tool} input has no string `path`, so its target cannot be checked"
            ));
        };
        let resolved = path::resolve_in(&self.workspace, Path::new(raw));
        if self.writable.iter().any(|w| resolved.starts_with(w)) {
            return Ok(());
        }
        let shown: Vec<String> = self
            .writable
            .iter()
            .map(|w| path::display(w, &self.workspace))
            .collect();
        Err(format!(
            "denied by scope: {raw} resolves to {}, outside [scope].writable ({})",
            path::display(&resolved, &self.workspace),
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
        let input = |p: &str| serde_json::json!({ "path": p, "content": "x" });
        assert!(scope.check("file_write", &input("src/a.txt")).is_ok());
        assert!(scope.check("file_write", &input("b.txt")).is_err());
        let err = scope.check("edit", &input("src/out/c.txt")).unwrap_err();
        assert!(err.contains("outside [scope].writable (src)"), "{err}");
        assert!(scope.check("file_write", &input("src/../b.txt")).is_err());
        // `..` after a symlink leaves through the link's target, not lexically.
        std::fs::create_dir(outside.path().join("deeper")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("deeper"), ws.join("src/deep")).unwrap();
        assert!(scope
            .check("file_write", &input("src/deep/../x.txt"))
            .is_err());
        assert!(scope.check("read", &input("/etc/passwd")).is_ok());
    }
}
