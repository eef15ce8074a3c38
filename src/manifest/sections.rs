//! `[pod]`, `[tools]` and `[scope]`, resolved, and how their layers merge, each rule written
//! here once (docs/manifest.md, "Layered configuration" and "Layers").
//!
//! Owns: [`PodSettings`], [`ToolsConfig`], [`ScopeConfig`] and their merges: between the
//! user's and the project's files (`merge`), two managed files (`combine`), and the managed
//! layer over the rest (`under_managed`, where it applies). `pod config` shows each as serde
//! serializes it.
//!
//! Must not touch: reading one file (`mod.rs` resolves each section, with its errors), what an
//! untrusted project's file keeps (`layers.rs`, `restrict`), or deciding.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// `[pod]` but `workspace` (the project's alone, never layered: it stays a field of
/// `Manifest`).
#[derive(Debug, Clone, Serialize)]
pub struct PodSettings {
    /// `name`: reported to clients.
    pub name: String,
    /// `max_steps`: model requests per turn.
    pub max_steps: u32,
    /// `max_session_bytes`: the log's budget.
    pub max_session_bytes: u64,
    /// The folder holding this pod's session logs (`sessions/`): `state_dir`, or the
    /// per-user default keyed by workspace (`default_state_dir`).
    pub state_dir: PathBuf,
    /// The state folder writes are kept out of: `state_dir` when it was set, else the per-user
    /// `pod` state folder holding every workspace's sessions.
    #[serde(skip)]
    pub state_root: PathBuf,
}

impl PodSettings {
    /// The user's and the project's `[pod]` (each with whether its file has the section): the
    /// project's replaces the user's; the user's applies only when the project has none.
    /// (The managed layer's `[pod]` is not read: neither `combine` nor `under_managed`.)
    pub(super) fn merge(
        (user_set, user): (bool, &PodSettings),
        (project_set, project): (bool, PodSettings),
    ) -> PodSettings {
        if !project_set && user_set {
            user.clone()
        } else {
            project
        }
    }
}

/// `[tools]`, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct ToolsConfig {
    /// `enabled`: the enabled tools, in manifest order.
    pub enabled: Vec<String>,
    /// `max_parallel`: most tool calls running at once.
    pub max_parallel: usize,
}

impl ToolsConfig {
    /// The user's and the project's `[tools]` (each with whether its file has the section):
    /// restrictions add up. With both, only the tools both enable and the smaller
    /// `max_parallel`; else the one file's section, or the defaults.
    pub(super) fn merge(
        (user_set, user): (bool, &ToolsConfig),
        (project_set, mut project): (bool, ToolsConfig),
    ) -> ToolsConfig {
        match (project_set, user_set) {
            (true, true) => {
                project.enabled.retain(|t| user.enabled.contains(t));
                project.max_parallel = project.max_parallel.min(user.max_parallel);
                project
            }
            (false, true) => user.clone(),
            (_, false) => project,
        }
    }

    /// Two managed files (each with whether it has the section): when the later has
    /// `[tools]`, only the tools both enable (or the later's, when the first has none) and
    /// the smaller `max_parallel` (the first's default counts when it has none).
    pub(super) fn combine(
        (first_set, mut first): (bool, ToolsConfig),
        (second_set, second): (bool, &ToolsConfig),
    ) -> ToolsConfig {
        if second_set {
            if first_set {
                first.enabled.retain(|t| second.enabled.contains(t));
            } else {
                first.enabled = second.enabled.clone();
            }
            first.max_parallel = first.max_parallel.min(second.max_parallel);
        }
        first
    }

    /// The lower layers' `[tools]` under the managed layer's (when `managed_set`): only the
    /// tools the managed layer enables, and the smaller `max_parallel`.
    pub(super) fn under_managed(
        mut lower: ToolsConfig,
        (managed_set, managed): (bool, &ToolsConfig),
    ) -> ToolsConfig {
        if managed_set {
            lower.enabled.retain(|t| managed.enabled.contains(t));
            lower.max_parallel = lower.max_parallel.min(managed.max_parallel);
        }
        lower
    }
}

/// `[scope]`, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct ScopeConfig {
    /// `writable`: the folders `file_write` and `edit` may write in, absolute and normalized.
    pub writable: Vec<PathBuf>,
}

impl ScopeConfig {
    /// The user's and the project's `[scope]` (each with whether its file has the section):
    /// the project's replaces the user's; the user's applies only when the project has none.
    pub(super) fn merge(
        (user_set, user): (bool, &ScopeConfig),
        (project_set, project): (bool, ScopeConfig),
    ) -> ScopeConfig {
        if !project_set && user_set {
            user.clone()
        } else {
            project
        }
    }

    /// Two managed files (each with whether it has the section): what both let be written, as
    /// under the managed layer; a file without `[scope]` adds no limit.
    pub(super) fn combine(
        (first_set, first): (bool, ScopeConfig),
        (second_set, second): (bool, &ScopeConfig),
    ) -> ScopeConfig {
        match (first_set, second_set) {
            (_, false) => first,
            (false, true) => second.clone(),
            (true, true) => ScopeConfig::under_managed(first, (true, second)).0,
        }
    }

    /// The lower layers' `[scope]` under the managed layer's (when `managed_set`): only what
    /// both let be written, a lower folder inside a managed one or a managed folder inside a
    /// lower one. Also the lower folders outside every managed one, refused.
    pub(super) fn under_managed(
        lower: ScopeConfig,
        (managed_set, managed): (bool, &ScopeConfig),
    ) -> (ScopeConfig, Vec<PathBuf>) {
        if !managed_set {
            return (lower, Vec::new());
        }
        let mut kept: Vec<PathBuf> = Vec::new();
        for w in &lower.writable {
            for m in &managed.writable {
                let inner = if w.starts_with(m) { w } else { m };
                if (w.starts_with(m) || m.starts_with(w)) && !kept.contains(inner) {
                    kept.push(inner.clone());
                }
            }
        }
        let outside = lower
            .writable
            .into_iter()
            .filter(|w| {
                !managed
                    .writable
                    .iter()
                    .any(|m| w.starts_with(m) || m.starts_with(w))
            })
            .collect();
        (ScopeConfig { writable: kept }, outside)
    }

    /// As `pod config` shows it: each folder as the workspace shows it (`.`, `sub`).
    pub(super) fn shown_in(&self, workspace: &Path) -> ScopeConfig {
        ScopeConfig {
            writable: self
                .writable
                .iter()
                .map(|w| PathBuf::from(crate::permission::path::display(w, workspace)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(paths: &[&str]) -> ScopeConfig {
        ScopeConfig {
            writable: paths.iter().map(PathBuf::from).collect(),
        }
    }

    #[test]
    fn a_later_managed_file_narrows_the_scope_and_one_without_it_adds_nothing() {
        let first = scope(&["/w"]);
        let second = scope(&["/w/src", "/elsewhere"]);
        let both = ScopeConfig::combine((true, first.clone()), (true, &second));
        assert_eq!(both.writable, vec![PathBuf::from("/w/src")]);
        let only_second = ScopeConfig::combine((false, first.clone()), (true, &second));
        assert_eq!(only_second.writable, second.writable);
        let only_first = ScopeConfig::combine((true, first.clone()), (false, &second));
        assert_eq!(only_first.writable, first.writable);
    }
}
