//! `[permissions]`' settings besides the rules, resolved: one struct, read from one file and
//! layered here, each key's rule written once (docs/manifest.md, "Layered configuration"). A key
//! added to the section is written in `file.rs` and here; `pod config` shows it as serialized.
//!
//! Owns: [`PermissionSettings`], how a file's section resolves to it, and how two layers of it
//! merge: the user's and the project's, two managed files, and the managed layer over the rest.
//!
//! Must not touch: the rules and `default_action`, which are compiled into `Rules` and layered
//! with them in `layers.rs` and `managed.rs`; deciding anything.

use std::time::Duration;

use serde::{Serialize, Serializer};

use super::file::PermissionsSection;
use super::managed::Locks;
use crate::protocol::Mode;

/// `[permissions]` but its rules and `default_action`. The defaults when no layer has the
/// section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PermissionSettings {
    /// `ask_timeout_secs`: how long an ask waits for its answer (`None`: until it is answered).
    #[serde(
        rename = "ask_timeout_secs",
        skip_serializing_if = "Option::is_none",
        serialize_with = "some_secs"
    )]
    pub ask_timeout: Option<Duration>,
    /// `mode`: the mode sessions start in.
    pub mode: Mode,
}

/// A set timeout as its whole seconds.
fn some_secs<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_u64(d.as_secs()),
        None => s.serialize_none(),
    }
}

impl PermissionSettings {
    /// As one file's `section` writes them (absent: the defaults).
    pub(super) fn resolve(section: Option<&PermissionsSection>) -> PermissionSettings {
        let Some(section) = section else {
            return PermissionSettings::default();
        };
        PermissionSettings {
            ask_timeout: section.ask_timeout_secs.map(Duration::from_secs),
            mode: section.mode.unwrap_or_default(),
        }
    }

    /// The project's settings over the user's (`None`: no user file, the defaults), trusted
    /// or not. The project's timeout, else the user's; a project may start sessions only in a
    /// stricter mode than the user's.
    pub(super) fn merge(
        user: Option<&PermissionSettings>,
        project: PermissionSettings,
    ) -> PermissionSettings {
        let user = user.cloned().unwrap_or_default();
        PermissionSettings {
            ask_timeout: project.ask_timeout.or(user.ask_timeout),
            mode: if project.mode.is_stricter() {
                project.mode
            } else {
                user.mode
            },
        }
    }

    /// Two managed files: the first's timeout, else the later's; the first's mode (a later
    /// file's is not read).
    pub(super) fn combine(first: PermissionSettings, second: &PermissionSettings) -> Self {
        PermissionSettings {
            ask_timeout: first.ask_timeout.or(second.ask_timeout),
            mode: first.mode,
        }
    }

    /// The lower layers' settings under the managed layer's and its `locks` (`layer_on`: the
    /// merged configuration has rules), with what of the lower's was overridden: the managed
    /// timeout, else the lower one's, while the layer is on; `allowed_modes` is a ceiling (a
    /// mode outside it becomes its first), and a managed mode other than the default, when
    /// allowed, is the one sessions start in.
    pub(super) fn under_managed(
        lower: PermissionSettings,
        managed: &PermissionSettings,
        locks: &Locks,
        layer_on: bool,
    ) -> (PermissionSettings, Vec<String>) {
        let ask_timeout = managed
            .ask_timeout
            .or(lower.ask_timeout)
            .filter(|_| layer_on);
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
        (PermissionSettings { ask_timeout, mode }, overridden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(mode: Mode) -> PermissionSettings {
        PermissionSettings {
            mode,
            ..PermissionSettings::default()
        }
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
            PermissionSettings::under_managed(with(Mode::Auto), &with(Mode::Default), &locks, true);
        assert_eq!(settings.mode, Mode::ReadOnly);
        assert_eq!(overridden.len(), 1, "{overridden:?}");
        let (settings, overridden) = PermissionSettings::under_managed(
            with(Mode::Default),
            &with(Mode::ReadOnly),
            &locks,
            true,
        );
        assert_eq!((settings.mode, overridden.len()), (Mode::ReadOnly, 0));
    }
}
