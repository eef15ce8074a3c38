//! Project grants: what "always in this project" answers allowed, kept in a file the user owns
//! beside the user's configuration (`<config folder>/projects/<workspace>-<hash>.toml`), never in
//! the project's `pod.toml`, which the model's project is free to ship (docs/permissions.md,
//! "Ask").
//!
//! Owns: where that file is for a workspace, reading its rules (plain `[[permissions.rule]]`
//! allow entries, each keeping its file and line) and appending one, under a lock. Must not
//! touch: deciding (the rules are compiled with the others, after them) or the wire.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::{user_config_path, workspace_key, ManifestError};
use crate::permission::RuleSpec;
use crate::protocol::Action;

/// The project grants file of `workspace`: `projects/<key>.toml` beside the user's
/// configuration file; `None` when there is no user configuration (`POD_CONFIG` empty).
pub fn path(workspace: &Path) -> Option<PathBuf> {
    let config = user_config_path()?;
    let dir = config.parent()?;
    Some(
        dir.join("projects")
            .join(format!("{}.toml", workspace_key(workspace))),
    )
}

/// The rules of the grants file at `file`, in order, each an `allow` with its file and line;
/// none when it does not exist.
pub fn rules(file: &Path) -> Result<Vec<RuleSpec>, ManifestError> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(ManifestError::Read {
                path: file.to_path_buf(),
                source,
            })
        }
    };
    let manifest = super::Manifest::parse_layer(
        &text,
        file,
        super::Role::User(file.parent().unwrap_or(Path::new("/"))),
    )?;
    let Some(rules) = manifest.permissions else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for spec in rules.specs() {
        if spec.action != Action::Allow {
            return Err(ManifestError::Invalid {
                path: file.to_path_buf(),
                line: spec.line.unwrap_or(1),
                column: 1,
                message: "a project grants file holds allow rules only (pod writes them; \
                          put other rules in your configuration)"
                    .into(),
            });
        }
        out.push(spec.clone());
    }
    Ok(out)
}

/// Appends an allow rule for `tool` and `pattern` to the grants file of `workspace`, creating
/// it; returns the file and the rule's line.
pub fn append(workspace: &Path, tool: &str, pattern: &str) -> std::io::Result<(PathBuf, usize)> {
    let file = path(workspace)
        .ok_or_else(|| std::io::Error::other("no user configuration folder for project grants"))?;
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let _lock = lock(dir)?;
    let existing = std::fs::read_to_string(&file).unwrap_or_default();
    let mut text = String::new();
    if existing.is_empty() {
        text.push_str(&format!(
            "# Project grants for {}: written by pod when you answer \"always in this \
             project\".\n# Remove an entry (or run `pod grants --revoke PATTERN`) to revoke \
             it.\n[permissions]\ndefault_action = \"ask\"\n",
            workspace.display()
        ));
    } else if !existing.ends_with('\n') {
        text.push('\n');
    }
    let line = existing.lines().count() + text.lines().count() + 1;
    text.push_str(&format!(
        "[[permissions.rule]]\ntool = {}\npattern = {}\naction = \"allow\"\n",
        toml_string(tool),
        toml_string(pattern)
    ));
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)?;
    out.write_all(text.as_bytes())?;
    out.sync_all()?;
    Ok((file, line))
}

/// Removes every rule whose pattern is `pattern` from the grants file of `workspace`; returns
/// how many.
pub fn revoke(workspace: &Path, pattern: &str) -> std::io::Result<usize> {
    let Some(file) = path(workspace) else {
        return Ok(0);
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    if !dir.exists() {
        return Ok(0);
    }
    let _lock = lock(dir)?;
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let wanted = format!("pattern = {}", toml_string(pattern));
    let mut out = Vec::new();
    let mut removed = 0;
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let entry =
            lines[i] == "[[permissions.rule]]" && lines.get(i + 2).is_some_and(|l| *l == wanted);
        if entry {
            removed += 1;
            i += 4;
            continue;
        }
        out.push(lines[i]);
        i += 1;
    }
    if removed > 0 {
        let mut kept = out.join("\n");
        kept.push('\n');
        let mut temp = tempfile::NamedTempFile::new_in(dir)?;
        temp.write_all(kept.as_bytes())?;
        temp.persist(&file).map_err(|e| e.error)?;
    }
    Ok(removed)
}

/// Holds the grants folder's lock until dropped: appends and revokes of two pods never interleave.
fn lock(dir: &Path) -> std::io::Result<std::fs::File> {
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".lock"))?;
    lock.lock()?;
    Ok(lock)
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}
