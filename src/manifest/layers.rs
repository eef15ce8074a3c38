//! Layered configuration: the user's configuration file and the project's `pod.toml`, merged,
//! or built-in defaults when neither exists (docs/manifest.md, "Layered configuration").
//!
//! Owns: where the user's file is, which file wins for each section, and the defaults. The rule
//! of the merge is that a project can add restrictions but never lift one the user set: the
//! project's rules are evaluated before the user's, except that the user's `deny` rules come
//! first of all, the stricter `default_action` wins, hooks of both run, a tool either file
//! disables stays disabled, the sandbox takes the stricter value of each setting, and the MCP
//! servers of both are started (a server both files name is the project's, with the stricter
//! default of each annotation kind). For the
//! other sections (`[model]`, `[pod]`, `[scope]`, `[skills]` added to the user's) the
//! project's section replaces the user's.
//!
//! Must not touch: reading one file (`mod.rs` does that, with its errors) or deciding.

use std::path::{Path, PathBuf};

use super::{Manifest, ManifestError, McpConfig, SandboxConfig, SandboxMode};
use crate::permission::{RuleError, RuleSpec, Rules};
use crate::protocol::{Action, NetworkAccess};

/// The environment variable naming the user's configuration file; empty: none.
pub const CONFIG_ENV: &str = "POD_CONFIG";

/// The project file `pod` looks for in a folder.
pub const PROJECT_FILE: &str = "pod.toml";

/// The user's configuration file: `$POD_CONFIG` when set (empty: none), else
/// `$XDG_CONFIG_HOME/pod/pod.toml`, else `~/.config/pod/pod.toml`. `None` when the variable
/// is empty or no home is known; the file may not exist.
pub fn user_config_path() -> Option<PathBuf> {
    if let Some(value) = std::env::var_os(CONFIG_ENV) {
        return (!value.is_empty()).then(|| PathBuf::from(value));
    }
    let absolute = |v: std::ffi::OsString| {
        let p = PathBuf::from(v);
        p.is_absolute().then_some(p)
    };
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".config"))
        })?;
    Some(base.join("pod").join("pod.toml"))
}

impl Manifest {
    /// The configuration a command works on: `manifest` (given on the command line) layered
    /// over the user's configuration, or, without one, what [`Manifest::discover`] finds in the
    /// current folder.
    pub fn open(manifest: Option<&Path>) -> Result<Manifest, ManifestError> {
        match manifest {
            Some(path) => Manifest::layered(Some(path), Path::new(".")),
            None => Manifest::discover(Path::new(".")),
        }
    }

    /// The configuration for a pod working in `folder`: `folder/pod.toml` (when it exists)
    /// layered over the user's configuration (when it exists), or built-in defaults.
    pub fn discover(folder: &Path) -> Result<Manifest, ManifestError> {
        let project = folder.join(PROJECT_FILE);
        let project = project.is_file().then_some(project);
        Manifest::layered(project.as_deref(), folder)
    }

    /// `project` (a manifest file that must exist) or, when `None`, nothing, layered over the
    /// user's configuration. `folder` is the workspace when there is no project file.
    pub fn layered(project: Option<&Path>, folder: &Path) -> Result<Manifest, ManifestError> {
        let user = user_config_path().filter(|p| p.is_file());
        let project = project.map(Manifest::load).transpose()?;
        let workspace = match &project {
            Some(p) => p.workspace.clone(),
            None => folder
                .canonicalize()
                .map_err(|source| ManifestError::Read {
                    path: folder.to_path_buf(),
                    source,
                })?,
        };
        let user = user
            .map(|path| {
                let text =
                    std::fs::read_to_string(&path).map_err(|source| ManifestError::Read {
                        path: path.clone(),
                        source,
                    })?;
                Manifest::parse_layer(&text, &path, Some(&workspace))
            })
            .transpose()?;
        match (project, user) {
            (Some(project), Some(user)) => merge(project, user),
            (Some(only), None) | (None, Some(only)) => Ok(only),
            (None, None) => defaults(&workspace),
        }
    }

    /// True when no configuration file was found and pod runs on its built-in defaults.
    pub fn is_defaults(&self) -> bool {
        self.files.is_empty()
    }
}

/// The stricter of two actions: deny, then ask, then allow.
fn stricter(a: Action, b: Action) -> Action {
    let rank = |x: Action| match x {
        Action::Deny => 2,
        Action::Ask => 1,
        Action::Allow => 0,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// `project` layered over `user`.
fn merge(mut project: Manifest, user: Manifest) -> Result<Manifest, ManifestError> {
    let had = |m: &Manifest, section: &str| m.origins.contains_key(section);
    // Sections the project replaces: the user's applies only when the project has none.
    if !had(&project, "model") && had(&user, "model") {
        project.model = user.model.clone();
    }
    if !had(&project, "pod") && had(&user, "pod") {
        project.name = user.name.clone();
        project.max_steps = user.max_steps;
        project.state_dir = user.state_dir.clone();
        project.state_root = user.state_root.clone();
    }
    if !had(&project, "scope") && had(&user, "scope") {
        project.writable = user.writable.clone();
    }
    // Restrictions add up.
    if had(&project, "tools") && had(&user, "tools") {
        project.tools.retain(|t| user.tools.contains(t));
        project.max_parallel = project.max_parallel.min(user.max_parallel);
    } else if had(&user, "tools") {
        project.tools = user.tools.clone();
        project.max_parallel = user.max_parallel;
    }
    project.mcp = merge_mcp(&project.mcp, &user.mcp);
    project.skill_dirs.extend(user.skill_dirs.iter().cloned());
    project.hooks.extend(user.hooks.iter().cloned());
    project.sandbox = stricter_sandbox(
        (had(&project, "sandbox"), &project.sandbox),
        (had(&user, "sandbox"), &user.sandbox),
    );
    project.permissions = merge_rules(project.permissions.take(), user.permissions.as_ref())
        .map_err(|(i, e)| ManifestError::Invalid {
            path: project.path.clone(),
            line: 1,
            column: 1,
            message: format!("the merged rules (rule {}): {e}", i + 1),
        })?;
    for (section, files) in &user.origins {
        project
            .origins
            .entry(section)
            .or_default()
            .extend(files.iter().cloned());
    }
    project.files.extend(user.files.iter().cloned());
    Ok(project)
}

/// The servers of both files, in name order. A server both name (in any case, as rules match
/// names) is started as the project says, with the stricter of the two defaults for each
/// annotation kind, so a user's `default_action` deny for a server holds in every project.
fn merge_mcp(project: &McpConfig, user: &McpConfig) -> McpConfig {
    let mut servers = project.servers.clone();
    for theirs in &user.servers {
        match servers
            .iter_mut()
            .find(|s| s.name.eq_ignore_ascii_case(&theirs.name))
        {
            Some(ours) => {
                let (a, b) = (&mut ours.defaults, &theirs.defaults);
                for (mine, user) in [
                    (&mut a.read_only, b.read_only),
                    (&mut a.additive, b.additive),
                    (&mut a.destructive, b.destructive),
                ] {
                    *mine = match (*mine, user) {
                        (Some(x), Some(y)) => Some(stricter(x, y)),
                        (x, y) => x.or(y),
                    };
                }
            }
            None => servers.push(theirs.clone()),
        }
    }
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    McpConfig { servers }
}

/// The stricter value of each sandbox setting. Extra writable folders are the user's when the
/// user lists any (a project cannot open more of the disk than the user allowed), else the
/// project's.
fn stricter_sandbox(
    (project_set, project): (bool, &SandboxConfig),
    (user_set, user): (bool, &SandboxConfig),
) -> SandboxConfig {
    match (project_set, user_set) {
        (_, false) => project.clone(),
        (false, true) => user.clone(),
        (true, true) => SandboxConfig {
            mode: if project.mode == SandboxMode::Off && user.mode == SandboxMode::Off {
                SandboxMode::Off
            } else {
                SandboxMode::Landlock
            },
            required: project.required || user.required,
            network: if project.network == NetworkAccess::Deny
                || user.network == NetworkAccess::Deny
            {
                NetworkAccess::Deny
            } else {
                NetworkAccess::Allow
            },
            writable: if user.writable.is_empty() {
                project.writable.clone()
            } else {
                user.writable.clone()
            },
            line: project.line,
        },
    }
}

/// The user's deny rules, then the project's rules, then the user's other rules; the stricter
/// default. Either layer's rules alone when only one has `[permissions]`.
fn merge_rules(
    project: Option<Rules>,
    user: Option<&Rules>,
) -> Result<Option<Rules>, (usize, RuleError)> {
    let (project, user) = match (project, user) {
        (None, None) => return Ok(None),
        (Some(p), None) => return Ok(Some(p)),
        (None, Some(u)) => return Ok(Some(u.clone())),
        (Some(p), Some(u)) => (p, u),
    };
    let user_specs: Vec<RuleSpec> = user.specs().cloned().collect();
    let (user_deny, user_rest): (Vec<RuleSpec>, Vec<RuleSpec>) = user_specs
        .into_iter()
        .partition(|s| s.action == Action::Deny);
    let specs: Vec<RuleSpec> = user_deny
        .into_iter()
        .chain(project.specs().cloned())
        .chain(user_rest)
        .collect();
    let default = stricter(project.default_action(), user.default_action());
    let timeout = project.ask_timeout().or(user.ask_timeout());
    // Every rule compiled once already, in its own file, so this does not fail; if it did,
    // pod would not start rather than drop a layer's rules.
    Rules::compile(default, specs, timeout).map(Some)
}

/// The built-in configuration when no file exists: the offline model, reads (and searches)
/// inside the workspace allowed, everything else asks.
fn defaults(workspace: &Path) -> Result<Manifest, ManifestError> {
    let text = DEFAULTS;
    let path = workspace.join(PROJECT_FILE);
    let mut manifest = Manifest::parse_layer(text, &path, Some(workspace))?;
    manifest.files.clear();
    manifest.origins.clear();
    // A home folder or the root holds keys and credentials of every project: there the
    // defaults allow nothing, and every read asks.
    let broad = holds_home(workspace);
    if broad {
        tracing::warn!(
            "{} is the root or holds your home folder: pod's built-in defaults ask before every \
             read there",
            workspace.display()
        );
    }
    // The rules came from no file: they are pod's.
    if let Some(rules) = manifest.permissions.take() {
        let specs: Vec<RuleSpec> = rules
            .specs()
            .filter(|s| !(broad && s.action == Action::Allow))
            .cloned()
            .map(|s| RuleSpec {
                line: None,
                file: Some("pod's built-in defaults".into()),
                ..s
            })
            .collect();
        let compiled = Rules::compile(rules.default_action(), specs, rules.ask_timeout());
        manifest.permissions = Some(compiled.map_err(|(i, e)| ManifestError::Invalid {
            path: path.clone(),
            line: 1,
            column: 1,
            message: format!("built-in defaults, rule {}: {e}", i + 1),
        })?);
    }
    Ok(manifest)
}

/// Whether `folder` is the file system's root or the user's home folder or one of its
/// parents (`$HOME`, compared canonically).
fn holds_home(folder: &Path) -> bool {
    if folder.parent().is_none() {
        return true;
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .map(|h| h.canonicalize().unwrap_or(h))
        .is_some_and(|home| home.starts_with(folder))
}

/// The built-in defaults, written as a manifest (docs/manifest.md shows the same text).
pub const DEFAULTS: &str = r#"
[model]
provider = "offline"

[permissions]
default_action = "ask"

# Paths outside the workspace are absolute: they ask.
[[permissions.rule]]
tool = "read"
pattern = "/*"
action = "ask"

[[permissions.rule]]
tool = "read"
pattern = "*"
action = "allow"

[[permissions.rule]]
tool = "grep"
pattern = "/*"
action = "ask"

[[permissions.rule]]
tool = "grep"
pattern = "*"
action = "allow"

[[permissions.rule]]
tool = "glob"
pattern = "/*"
action = "ask"

[[permissions.rule]]
tool = "glob"
pattern = "*"
action = "allow"
"#;
