//! Pinning a path tool's target: the one location the checks approve and the tool then opens.
//!
//! The permission layer decided on the call's path subjects (the path as written and, through
//! symlinks, as resolved) some time ago: an approval may have taken minutes. Right before the
//! tool runs, the target is resolved once more and must be one of the subjects the permission
//! layer decided; scope checks that same location and names the writable folder it is opened
//! beneath. The tool opens it following no symlink (`tools::confined`), so a folder swapped for
//! a symlink after this point makes the open fail instead of landing elsewhere.

use std::path::{Path, PathBuf};

use super::checks::Denial;
use crate::permission::{self, path, SubjectKind};
use crate::protocol::{Decision, DeniedBy};
use crate::scope::Scope;
use crate::tools::Target;

/// The pinned target of a call of `tool`, `None` for tools without a path (or an input without
/// one, which the tool refuses itself); a denial when the location changed since the decision
/// or lies outside the writable folders.
pub(super) fn pin(
    tool: &str,
    kind: SubjectKind,
    input: &serde_json::Value,
    decision: &Decision,
    workspace: &Path,
    scope: &Scope,
) -> Result<Option<Target>, Denial> {
    let raw = match permission::input_path(kind, input) {
        Some(Some(raw)) => raw,
        _ if Scope::writes(tool) => {
            return Err(Denial::new(
                DeniedBy::Scope,
                format!(
                    "denied by scope: the {tool} input has no string `path`, so its target \
                     cannot be checked"
                ),
            ))
        }
        _ => return Ok(None),
    };
    let resolved = path::resolve_in(workspace, Path::new(raw));
    let shown = path::display(&resolved, workspace);
    if !decision
        .subjects
        .iter()
        .any(|s| s.tool == tool && s.subject == shown)
    {
        let checked: Vec<&str> = decision
            .subjects
            .iter()
            .filter(|s| s.tool == tool)
            .map(|s| s.subject.as_str())
            .collect();
        return Err(Denial::new(
            DeniedBy::Scope,
            format!(
                "denied by scope: {raw} now resolves to {shown}, not to the path the permission \
                 layer checked ({}): a folder or symlink on the way changed during the checks, \
                 so nothing was run",
                checked.join(", ")
            ),
        ));
    }
    let beneath = match scope.check(tool, raw, &resolved) {
        Ok(Some(root)) => root.to_path_buf(),
        Ok(None) => PathBuf::from("/"),
        Err(text) => return Err(Denial::new(DeniedBy::Scope, text)),
    };
    Ok(Some(Target {
        path: resolved,
        beneath,
    }))
}
