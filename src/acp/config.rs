//! Which configuration a session gets: the manifest for the session's `cwd`.
//!
//! PLACEHOLDER (for the lead to swap): layered configuration (a user config file merged with
//! the project's `pod.toml`, `Manifest::discover(folder)`) is being added to `manifest` at the
//! same time as this front-end. Until it is on main, a session reads `cwd/pod.toml` with
//! `Manifest::load`; replace the body of [`session_manifest`] with
//! `Manifest::discover(cwd)` and nothing else changes.

use std::path::Path;

use crate::manifest::{Manifest, ManifestError};

/// The manifest of a session started in `cwd`.
pub(super) fn session_manifest(cwd: &Path) -> Result<Manifest, ManifestError> {
    // PLACEHOLDER: `Manifest::discover(cwd)` once layered configuration lands.
    Manifest::load(&cwd.join("pod.toml"))
}
