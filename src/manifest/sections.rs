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
    /// (A managed file with `[pod]` is refused at load: the managed layer has none.)
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
    /// Which keys a file named (this one, or a layer merged into it): a key no file named is
    /// its default and restricts nothing when layers meet.
    #[serde(skip)]
    pub(super) named: ToolsKeys,
}

/// The keys of `[tools]` a file named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ToolsKeys {
    pub(super) enabled: bool,
    pub(super) max_parallel: bool,
}

impl ToolsConfig {
    /// The user's and the project's `[tools]`: restrictions add up, key by key. Only the
    /// tools both enable (in the project's order) and the smaller `max_parallel`, where both
    /// name the key; else the one that names it, or the default.
    pub(super) fn merge(user: &ToolsConfig, project: ToolsConfig) -> ToolsConfig {
        project.narrowed_by(user)
    }

    /// Two managed files: the same rule, so a `pod.d/` file narrows what an earlier one says
    /// and a key it does not name changes nothing.
    pub(super) fn combine(first: ToolsConfig, second: &ToolsConfig) -> ToolsConfig {
        first.narrowed_by(second)
    }

    /// The lower layers' `[tools]` under the managed layer's: only the tools the managed layer
    /// enables, and the smaller `max_parallel`, for each key the managed layer names.
    pub(super) fn under_managed(mut lower: ToolsConfig, managed: &ToolsConfig) -> ToolsConfig {
        if managed.named.enabled {
            lower.enabled.retain(|t| managed.enabled.contains(t));
        }
        if managed.named.max_parallel {
            lower.max_parallel = lower.max_parallel.min(managed.max_parallel);
        }
        lower
    }

    /// `self` restricted by `other`, key by key (see [`ToolsConfig::merge`]).
    fn narrowed_by(mut self, other: &ToolsConfig) -> ToolsConfig {
        match (self.named.enabled, other.named.enabled) {
            (true, true) => self.enabled.retain(|t| other.enabled.contains(t)),
            (false, true) => self.enabled = other.enabled.clone(),
            (_, false) => {}
        }
        match (self.named.max_parallel, other.named.max_parallel) {
            (true, true) => self.max_parallel = self.max_parallel.min(other.max_parallel),
            (false, true) => self.max_parallel = other.max_parallel,
            (_, false) => {}
        }
        self.named.enabled |= other.named.enabled;
        self.named.max_parallel |= other.named.max_parallel;
        self
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

    fn tools(enabled: Option<&[&str]>, max_parallel: Option<usize>) -> ToolsConfig {
        ToolsConfig {
            enabled: enabled
                .unwrap_or(&["bash", "read"])
                .iter()
                .map(|t| t.to_string())
                .collect(),
            max_parallel: max_parallel.unwrap_or(4),
            named: ToolsKeys {
                enabled: enabled.is_some(),
                max_parallel: max_parallel.is_some(),
            },
        }
    }

    #[test]
    fn a_tools_key_no_file_names_restricts_nothing() {
        // The user enables web_fetch and allows 16 at once; a project naming only one key
        // leaves the other as the user has it.
        let user = tools(Some(&["bash", "read", "web_fetch"]), Some(16));
        let got = ToolsConfig::merge(&user, tools(None, Some(2)));
        assert_eq!(
            (got.enabled.clone(), got.max_parallel),
            (user.enabled.clone(), 2)
        );
        let got = ToolsConfig::merge(&user, tools(Some(&["web_fetch", "bash", "glob"]), None));
        assert_eq!(got.enabled, ["web_fetch", "bash"]);
        assert_eq!(got.max_parallel, 16);
        // Both name both keys: the tools both enable and the smaller limit.
        let got = ToolsConfig::merge(&user, tools(Some(&["read"]), Some(32)));
        assert_eq!(
            (got.enabled, got.max_parallel),
            (vec!["read".to_string()], 16)
        );
        // Two managed files: the later narrows only what it names.
        let got = ToolsConfig::combine(tools(Some(&["bash"]), None), &tools(None, Some(3)));
        assert_eq!(
            (got.enabled, got.max_parallel),
            (vec!["bash".to_string()], 3)
        );
        let got = ToolsConfig::combine(tools(None, Some(2)), &tools(Some(&["read"]), None));
        assert_eq!(
            (got.enabled, got.max_parallel),
            (vec!["read".to_string()], 2)
        );
        // Under the managed layer: a ceiling for each key it names, nothing for the others.
        let managed = tools(None, Some(8));
        let got = ToolsConfig::under_managed(user.clone(), &managed);
        assert_eq!((got.enabled, got.max_parallel), (user.enabled.clone(), 8));
        let managed = tools(Some(&["read", "web_fetch"]), None);
        let got = ToolsConfig::under_managed(user.clone(), &managed);
        let want: Vec<String> = vec!["read".into(), "web_fetch".into()];
        assert_eq!((got.enabled, got.max_parallel), (want, 16));
    }

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
