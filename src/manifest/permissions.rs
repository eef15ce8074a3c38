//! `[permissions]`' settings besides the rules, resolved: one struct, read from one file and
//! layered here, each key's rule written once (docs/manifest.md, "Layered configuration"). A key
//! added to the section is written in `file.rs` and here; `pod config` shows it as serialized.
//!
//! Owns: [`PermissionSettings`], how a file's section resolves to it, and how two layers of it
//! merge: the user's and the project's, two managed files, and the managed layer over the rest.
//!
//! Must not touch: the rules and the two keys compiled with them (`default_action`,
//! `ask_timeout_secs`), which `Rules` holds and `layers.rs` and `managed.rs` layer with the
//! rules; deciding anything.

use serde::Serialize;

use super::file::PermissionsSection;
use super::managed::Locks;
use crate::protocol::Mode;

/// `[permissions]` but its rules, `default_action` and `ask_timeout_secs`. The defaults when
/// no layer has the section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PermissionSettings {
    /// `mode`: the mode sessions start in.
    pub mode: Mode,
}

impl PermissionSettings {
    /// As one file's `section` writes them (absent: the defaults).
    pub(super) fn resolve(section: Option<&PermissionsSection>) -> PermissionSettings {
        let Some(section) = section else {
            return PermissionSettings::default();
        };
        PermissionSettings {
            mode: section.mode.unwrap_or_default(),
        }
    }

    /// The project's settings over the user's (`None`: no user file, the defaults), trusted
    /// or not. A project may start sessions only in a stricter mode than the user's.
    pub(super) fn merge(
        user: Option<&PermissionSettings>,
        project: PermissionSettings,
    ) -> PermissionSettings {
        let user = user.cloned().unwrap_or_default();
        PermissionSettings {
            mode: if project.mode.is_stricter() {
                project.mode
            } else {
                user.mode
            },
        }
    }

    /// Two managed files: the first's mode (a later file's is not read).
    pub(super) fn combine(first: PermissionSettings, _second: &PermissionSettings) -> Self {
        first
    }

    /// The lower layers' settings under the managed layer's and its `locks`, with what of the
    /// lower's was overridden: `allowed_modes` is a ceiling (a mode outside it becomes its
    /// first), and a managed mode other than the default, when allowed, is the one sessions
    /// start in.
    pub(super) fn under_managed(
        lower: PermissionSettings,
        managed: &PermissionSettings,
        locks: &Locks,
    ) -> (PermissionSettings, Vec<String>) {
        let mut overridden = Vec::new();
        let mut mode = lower.mode;
        if !locks.allows_mode(mode) {
            let to = locks
                .allowed_modes
                .as_ref()
                .and_then(|m| m.first().copied())
                .unwrap_or(Mode::Unattended);
            overridden.push(format!(
                "mode = \"{}\" overridden to \"{}\": not in allowed_modes",
                mode.as_str(),
                to.as_str()
            ));
            mode = to;
        }
        if managed.mode != Mode::Default && locks.allows_mode(managed.mode) {
            mode = managed.mode;
        }
        (PermissionSettings { mode }, overridden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(mode: Mode) -> PermissionSettings {
        PermissionSettings { mode }
    }

    #[test]
    fn a_project_only_starts_sessions_in_a_stricter_mode() {
        let merged = |user: Option<Mode>, project: Mode| {
            PermissionSettings::merge(user.map(with).as_ref(), with(project)).mode
        };
        assert_eq!(merged(None, Mode::Auto), Mode::Default);
        assert_eq!(merged(None, Mode::ReadOnly), Mode::ReadOnly);
        assert_eq!(
            merged(Some(Mode::AcceptEdits), Mode::Auto),
            Mode::AcceptEdits
        );
        assert_eq!(
            merged(Some(Mode::AcceptEdits), Mode::Unattended),
            Mode::Unattended
        );
    }

    #[test]
    fn the_managed_allowed_modes_are_a_ceiling() {
        let locks = Locks {
            allowed_modes: Some(vec![Mode::ReadOnly, Mode::Default]),
            ..Locks::default()
        };
        let (settings, overridden) =
            PermissionSettings::under_managed(with(Mode::Auto), &with(Mode::Default), &locks);
        assert_eq!(settings.mode, Mode::ReadOnly);
        assert_eq!(overridden.len(), 1, "{overridden:?}");
        let (settings, overridden) =
            PermissionSettings::under_managed(with(Mode::Default), &with(Mode::ReadOnly), &locks);
        assert_eq!((settings.mode, overridden.len()), (Mode::ReadOnly, 0));
    }
}
