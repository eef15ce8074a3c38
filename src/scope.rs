//! Scope: the directory-level write boundary (`[scope].writable`) for the file tools, and with
//! `[sandbox] readable` the read boundary in `$HOME` the sandbox holds for commands, held here
//! for pod's own file tools too (they run in pod's process, outside the sandbox).
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
    /// `[sandbox] readable`: `$HOME` and what of it is visible (resolved).
    hidden: Option<(PathBuf, Vec<PathBuf>)>,
}

impl Scope {
    /// `writable` entries should be absolute; they are resolved here.
    pub fn new(workspace: &Path, writable: &[PathBuf]) -> Scope {
        Scope {
            workspace: workspace.to_path_buf(),
            writable: writable.iter().map(|w| path::resolve(w)).collect(),
            hidden: None,
        }
    }

    /// This scope with `$HOME` (`home`) hidden but for `readable` (`[sandbox] readable`), the
    /// workspace and the writable folders: what a file tool may read or search.
    pub fn hiding(mut self, home: &Path, readable: &[PathBuf]) -> Scope {
        self.hidden = Some((
            path::resolve(home),
            readable.iter().map(|r| path::resolve(r)).collect(),
        ));
        self
    }

    /// Why a tool may not look at `resolved`, when `[sandbox] readable` hides it: beneath
    /// `$HOME` and beneath nothing visible, or (for a search) above `$HOME`, which a walk would
    /// enter.
    fn hidden(&self, tool: &str, raw: &str, resolved: &Path) -> Option<String> {
        let (home, shown) = self.hidden.as_ref()?;
        let visible = |p: &Path| {
            p.starts_with(&self.workspace)
                || self.writable.iter().any(|w| p.starts_with(w))
                || shown.iter().any(|r| p.starts_with(r))
        };
        let searches = matches!(tool, "grep" | "glob");
        let inside = resolved.starts_with(home) && !visible(resolved);
        let above = searches && home.starts_with(resolved) && resolved != home.as_path();
        (inside || above).then(|| {
            format!(
                "denied by [sandbox] readable: {raw} resolves to {}, in the home folder, of \
                 which only the workspace, the writable folders and the readable list are \
                 visible{}",
                path::display(resolved, &self.workspace),
                if above {
                    " (a search from there would enter it)"
                } else {
                    ""
                }
            )
        })
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
        if let Some(why) = self.hidden(tool, raw, resolved) {
            return Err(why);
        }
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
    fn readable_hides_the_rest_of_home_from_the_file_tools() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path().canonicalize().unwrap();
        for d in ["proj", ".cargo", ".ssh"] {
            std::fs::create_dir_all(h.join(d)).unwrap();
        }
        let ws = h.join("proj");
        let scope = Scope::new(&ws, std::slice::from_ref(&ws)).hiding(&h, &[h.join(".cargo")]);
        let check = |tool: &str, p: &Path| scope.check(tool, &p.display().to_string(), p);
        for tool in ["read", "grep", "glob"] {
            assert!(check(tool, &h.join(".ssh/id_rsa")).is_err(), "{tool}");
            assert!(check(tool, &h.join("notes.txt")).is_err(), "{tool}");
            assert!(check(tool, &h.join(".cargo/config.toml")).is_ok(), "{tool}");
            assert!(check(tool, &ws.join("src/main.rs")).is_ok(), "{tool}");
            assert!(check(tool, Path::new("/etc/hostname")).is_ok(), "{tool}");
        }
        // A search from above the home folder would walk into it; a read of a file there is
        // not possible, so only searches are refused.
        let err = check("grep", Path::new("/")).unwrap_err();
        assert!(
            err.contains("[sandbox] readable") && err.contains("would enter"),
            "{err}"
        );
        assert!(check("grep", &h).is_err());
        assert!(check("read", Path::new("/")).is_ok());
        // Without `readable` nothing changes.
        let open = Scope::new(&ws, std::slice::from_ref(&ws));
        assert!(open.check("read", "n", &h.join("notes.txt")).is_ok());
    }

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
