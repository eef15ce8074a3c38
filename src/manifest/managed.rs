//! The managed layer: an administrator's files above the user's configuration
//! (`/etc/pod/pod.toml`, then `/etc/pod/pod.d/*.toml` in name order; the folder is
//! `$POD_MANAGED_DIR` when set), which nothing below can weaken (docs/manifest.md, "Layers").
//!
//! Owns: finding and vetting the managed files (owned by root, writable by no one else), the
//! `[managed]` locks, and laying the managed layer over the merged user and project layers:
//! managed denies first, its default a floor, its sandbox and modes a ceiling, and what the
//! locks refuse of the lower layers (rules, the network allow and ask rules under
//! `allowed_domains_only`, hooks, MCP servers) removed, each named with its file:line in
//! [`Managed::overrides`].
//!
//! Must not touch: reading one file's settings (`mod.rs`), the user/project merge
//! (`layers.rs`), or deciding.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::file::McpServerMatch;
use super::layers::stricter;
use super::{
    Ignored, Manifest, ManifestError, McpConfig, McpServerConfig, McpTransport, PermissionSettings,
    Role, SandboxConfig, SandboxMode, ScopeConfig, ToolsConfig,
};
use crate::permission::network::NETWORK;
use crate::permission::{Pattern, RuleSpec, Rules};
use crate::protocol::{Action, Mode};

/// The environment variable naming the managed folder (for tests and packagers); empty or
/// unset: [`MANAGED_DIR`].
pub const MANAGED_ENV: &str = "POD_MANAGED_DIR";

/// The managed folder.
pub const MANAGED_DIR: &str = "/etc/pod";

/// The managed layer of a configuration: its files, what it overrode or refused of the layers
/// below, and its locks.
#[derive(Debug, Clone, Default)]
pub struct Managed {
    /// The managed files in effect, in the order they were read.
    pub files: Vec<PathBuf>,
    /// Each setting of a lower layer the managed layer overrode or refused, with its file:line.
    pub overrides: Vec<Ignored>,
    pub locks: Locks,
}

/// The `[managed]` locks of the managed files together.
#[derive(Debug, Clone, Default)]
pub struct Locks {
    pub require_sandbox: bool,
    /// The modes a session may be in; `None`: every mode.
    pub allowed_modes: Option<Vec<Mode>>,
    pub rules_only: bool,
    pub hooks_only: bool,
    /// `allowed_domains_only`: only managed rules allow or ask for a host
    /// (`Rules::lock_network`).
    pub domains_only: bool,
    /// Each file's `allowed_mcp_servers`: a server starts only if one entry of every list
    /// matches it.
    pub allowed_servers: Vec<Vec<ServerMatch>>,
    /// `denied_mcp_servers` of every file.
    pub denied_servers: Vec<ServerMatch>,
}

/// One `allowed_mcp_servers` / `denied_mcp_servers` entry, compiled.
#[derive(Debug, Clone)]
pub struct ServerMatch {
    name: Option<Pattern>,
    command: Option<Pattern>,
    url: Option<Pattern>,
    /// As written, for messages: `name = "x", command = "y"`.
    pub text: String,
    /// `file:line`.
    pub place: String,
}

impl ServerMatch {
    pub(super) fn new(entry: &McpServerMatch, place: String) -> Result<ServerMatch, String> {
        if entry.name.is_none() && entry.command.is_none() && entry.url.is_none() {
            return Err("an entry needs a name, a command, a url, or several".into());
        }
        if entry.command.is_some() && entry.url.is_some() {
            return Err(
                "an entry gives a command (stdio servers) or a url (HTTP servers), not both: no \
                 server has both"
                    .into(),
            );
        }
        let mut text = Vec::new();
        if let Some(n) = &entry.name {
            text.push(format!("name = \"{n}\""));
        }
        if let Some(c) = &entry.command {
            text.push(format!("command = \"{c}\""));
        }
        if let Some(u) = &entry.url {
            text.push(format!("url = \"{u}\""));
        }
        Ok(ServerMatch {
            name: entry.name.as_deref().map(Pattern::case_insensitive),
            command: entry.command.as_deref().map(Pattern::new),
            url: entry.url.as_deref().map(Pattern::new),
            text: text.join(", "),
            place,
        })
    }

    /// Whether the entry matches the server (every field it gives).
    pub fn matches(&self, server: &McpServerConfig) -> bool {
        // A field the server does not have (a URL server's command, a stdio server's URL)
        // never matches.
        let (line, url) = match &server.transport {
            McpTransport::Stdio { .. } => (Some(server.describe()), None),
            McpTransport::Http { url, .. } => (None, Some(url.as_str())),
        };
        self.name.as_ref().is_none_or(|p| p.matches(&server.name))
            && self
                .command
                .as_ref()
                .is_none_or(|p| line.as_deref().is_some_and(|l| p.matches(l)))
            && self
                .url
                .as_ref()
                .is_none_or(|p| url.is_some_and(|u| p.matches(u)))
    }
}

impl Locks {
    /// Why `server` may not start, when the locks refuse it.
    pub fn refuses(&self, server: &McpServerConfig) -> Option<String> {
        if let Some(m) = self.denied_servers.iter().find(|m| m.matches(server)) {
            return Some(format!("denied_mcp_servers ({}, {})", m.text, m.place));
        }
        for list in &self.allowed_servers {
            if !list.iter().any(|m| m.matches(server)) {
                let place = list.first().map_or("", |m| m.place.as_str());
                return Some(format!("not in allowed_mcp_servers ({place})"));
            }
        }
        None
    }

    /// Whether a session may be in `mode`.
    pub fn allows_mode(&self, mode: Mode) -> bool {
        self.allowed_modes
            .as_ref()
            .is_none_or(|modes| modes.contains(&mode))
    }

    /// Both files' locks: the stricter of each.
    fn and(mut self, other: Locks) -> Locks {
        self.require_sandbox |= other.require_sandbox;
        self.rules_only |= other.rules_only;
        self.hooks_only |= other.hooks_only;
        self.domains_only |= other.domains_only;
        self.allowed_modes = match (self.allowed_modes, other.allowed_modes) {
            (Some(a), Some(b)) => Some(a.into_iter().filter(|m| b.contains(m)).collect()),
            (a, b) => a.or(b),
        };
        self.allowed_servers.extend(other.allowed_servers);
        self.denied_servers.extend(other.denied_servers);
        self
    }
}

/// The managed folder: `$POD_MANAGED_DIR` when set and not empty, else `/etc/pod`.
pub fn managed_dir() -> PathBuf {
    match std::env::var_os(MANAGED_ENV) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(MANAGED_DIR),
    }
}

/// The managed files in `dir`: `pod.toml`, then `pod.d/*.toml` in name order, each vetted.
fn files(dir: &Path) -> Result<Vec<PathBuf>, ManifestError> {
    let mut out = Vec::new();
    let main = dir.join("pod.toml");
    if main.exists() {
        vet(dir)?;
        vet(&main)?;
        out.push(main);
    }
    let drop_in = dir.join("pod.d");
    if drop_in.is_dir() {
        vet(dir)?;
        vet(&drop_in)?;
        let entries = std::fs::read_dir(&drop_in).map_err(|source| ManifestError::Read {
            path: drop_in.clone(),
            source,
        })?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| ManifestError::Read {
                path: drop_in.clone(),
                source,
            })?;
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "toml") {
                names.push(path);
            }
        }
        names.sort();
        for path in names {
            vet(&path)?;
            out.push(path);
        }
    }
    Ok(out)
}

/// Refuses a managed file or folder that is not root's, or that group or others may write
/// (it follows a symlink: what is vetted is what is read).
fn vet(path: &Path) -> Result<(), ManifestError> {
    let meta = std::fs::metadata(path).map_err(|source| ManifestError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let problem = if meta.uid() != 0 {
        Some(format!("it is owned by uid {}, not root", meta.uid()))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!(
            "its mode {:04o} lets {} write it",
            meta.mode() & 0o7777,
            if meta.mode() & 0o002 != 0 {
                "anyone"
            } else {
                "its group"
            }
        ))
    } else {
        None
    };
    match problem {
        Some(problem) => Err(ManifestError::Managed {
            path: path.to_path_buf(),
            problem,
        }),
        None => Ok(()),
    }
}

/// The managed layer for `workspace`: every managed file, each read as the user's
/// configuration is, combined (rules in file order, the stricter default, locks added up);
/// `None` when there is no managed file.
pub(super) fn load(workspace: &Path) -> Result<Option<Manifest>, ManifestError> {
    let mut layer: Option<Manifest> = None;
    for path in files(&managed_dir())? {
        let text = std::fs::read_to_string(&path).map_err(|source| ManifestError::Read {
            path: path.clone(),
            source,
        })?;
        let next = Manifest::parse_layer(&text, &path, Role::Managed(workspace))?;
        layer = Some(match layer {
            None => next,
            Some(before) => combine(before, next)?,
        });
    }
    if let Some(layer) = &mut layer {
        layer.managed.files = layer.files.clone();
    }
    Ok(layer)
}

/// Two managed files: the later's settings added to the earlier's, the stricter of each lock.
fn combine(mut first: Manifest, second: Manifest) -> Result<Manifest, ManifestError> {
    let had = |m: &Manifest, section: &str| m.origins.contains_key(section);
    first.permissions = match (first.permissions.take(), &second.permissions) {
        (None, None) => None,
        (Some(a), None) => Some(a),
        (None, Some(b)) => Some(b.clone()),
        (Some(a), Some(b)) => Some(
            Rules::compile(
                stricter(a.default_action(), b.default_action()),
                a.specs().chain(b.specs()).cloned().collect(),
            )
            .map_err(|(i, e)| {
                invalid(
                    &second.path,
                    format!("the managed rules (rule {}): {e}", i + 1),
                )
            })?,
        ),
    };
    first.permission_settings = PermissionSettings::combine(
        std::mem::take(&mut first.permission_settings),
        &second.permission_settings,
    );
    first.tools = ToolsConfig::combine(first.tools.clone(), &second.tools);
    first.scope = ScopeConfig::combine(
        (had(&first, "scope"), first.scope.clone()),
        (had(&second, "scope"), &second.scope),
    );
    first.sandbox = SandboxConfig::merge(
        (had(&second, "sandbox"), &second.sandbox),
        (had(&first, "sandbox"), &first.sandbox),
    );
    first.mcp = McpConfig::merge(&second.mcp, &first.mcp);
    first.hooks.extend(second.hooks.iter().cloned());
    first.skill_dirs.extend(second.skill_dirs.iter().cloned());
    first.examples.extend(second.examples.iter().cloned());
    if second.audit.is_some() {
        first.audit = second.audit.clone();
    }
    if !had(&first, "model") && had(&second, "model") {
        first.model = second.model.clone();
    }
    first.managed.locks = std::mem::take(&mut first.managed.locks).and(second.managed.locks);
    for (section, files) in &second.origins {
        first
            .origins
            .entry(section)
            .or_default()
            .extend(files.iter().cloned());
    }
    first.files.extend(second.files.iter().cloned());
    Ok(first)
}

fn invalid(path: &Path, message: String) -> ManifestError {
    ManifestError::Invalid {
        path: path.to_path_buf(),
        line: 1,
        column: 1,
        message,
    }
}

/// `lower` (the user's and the project's layers, merged) under the managed layer.
pub(super) fn apply(mut lower: Manifest, managed: Manifest) -> Result<Manifest, ManifestError> {
    let had = |m: &Manifest, section: &str| m.origins.contains_key(section);
    let locks = managed.managed.locks.clone();
    let managed_path = managed.files.first().cloned().unwrap_or_default();
    let mut overrides = Vec::new();
    let first_file = |m: &Manifest, section: &str| -> PathBuf {
        m.origins
            .get(section)
            .and_then(|f| f.first())
            .cloned()
            .unwrap_or_else(|| m.path.clone())
    };

    // Rules: managed denies, the lower denies, managed asks, the other lower rules in their
    // order, managed allows; the stricter default. Under rules_only, no lower rule (a project
    // grant included: it is a rule of the user's written by an answer). Under domains_only, no
    // lower rule allows or asks for a host: a `network` one is refused, one for many tools
    // (`tool = "*"`) keeps deciding the others, and the rules are locked (`lock_network`).
    let lower_rules = lower.permissions.take();
    if let (true, Some(rules)) = (locks.rules_only, &lower_rules) {
        for spec in rules.specs().filter(|s| s.file.is_some()) {
            if spec.file.as_deref() == Some("pod's built-in defaults") {
                continue;
            }
            overrides.push(Ignored::new(
                format!(
                    "rule {} {} \"{}\" refused: allow_managed_rules_only",
                    action_word(spec.action),
                    spec.tool,
                    spec.pattern
                ),
                Path::new(spec.file.as_deref().unwrap_or("?")),
                spec.line,
            ));
        }
    }
    let lower_specs: Vec<RuleSpec> = match (&lower_rules, locks.rules_only) {
        (Some(r), false) => r
            .specs()
            .filter(|spec| {
                let locked =
                    locks.domains_only && spec.action != Action::Deny && spec.decides_network();
                if !locked {
                    return true;
                }
                let only_network = spec.tool.eq_ignore_ascii_case(NETWORK);
                overrides.push(Ignored::new(
                    format!(
                        "rule {} {} \"{}\" refused{}: allowed_domains_only",
                        action_word(spec.action),
                        spec.tool,
                        spec.pattern,
                        if only_network {
                            ""
                        } else {
                            " for network hosts"
                        }
                    ),
                    Path::new(spec.file.as_deref().unwrap_or("?")),
                    spec.line,
                ));
                !only_network
            })
            .cloned()
            .collect(),
        _ => Vec::new(),
    };
    // Each merged rule, and whether it is the managed layer's.
    let mut merged: Vec<(RuleSpec, bool)> = Vec::new();
    let default = match &managed.permissions {
        None if !locks.rules_only => lower_rules.as_ref().map(|r| {
            merged.extend(lower_specs.iter().map(|s| (s.clone(), false)));
            r.default_action()
        }),
        None => Some(Action::Ask),
        Some(m) => {
            let of = |specs: &[RuleSpec], action: Action, managed: bool| {
                specs
                    .iter()
                    .filter(|s| s.action == action)
                    .map(|s| (s.clone(), managed))
                    .collect::<Vec<_>>()
            };
            let managed_specs: Vec<RuleSpec> = m.specs().cloned().collect();
            merged.extend(of(&managed_specs, Action::Deny, true));
            merged.extend(of(&lower_specs, Action::Deny, false));
            merged.extend(of(&managed_specs, Action::Ask, true));
            merged.extend(
                lower_specs
                    .iter()
                    .filter(|s| s.action != Action::Deny)
                    .map(|s| (s.clone(), false)),
            );
            merged.extend(of(&managed_specs, Action::Allow, true));
            let lower_default = lower_rules.as_ref().map(Rules::default_action);
            Some(match lower_default {
                Some(d) if !locks.rules_only => {
                    let floor = m.default_action();
                    if stricter(d, floor) != d {
                        overrides.push(Ignored::new(
                            format!(
                                "default_action = \"{}\" raised to the managed \"{}\"",
                                action_word(d),
                                action_word(floor)
                            ),
                            &first_file(&lower, "permissions"),
                            lower.lines.get("permissions.default_action").copied(),
                        ));
                    }
                    stricter(d, floor)
                }
                _ => m.default_action(),
            })
        }
    };
    // Neither layer has [permissions]: the layer stays off, but for the network under
    // domains_only, which is then denied every host (an empty locked set of rules that allows
    // every other call, as the layer off does).
    let default = match default {
        None if locks.domains_only => Some(Action::Allow),
        d => d,
    };
    lower.permissions = match default {
        None => None,
        Some(default) => {
            let (specs, from_managed): (Vec<RuleSpec>, Vec<bool>) = merged.into_iter().unzip();
            let rules = Rules::compile(default, specs).map_err(|(i, e)| {
                invalid(
                    &managed_path,
                    format!("the merged rules (rule {}): {e}", i + 1),
                )
            })?;
            Some(if locks.domains_only {
                rules.lock_network(&from_managed)
            } else {
                rules
            })
        }
    };

    // Scope: only tighten (what both the lower and the managed `[scope]` let be written).
    let scope_file = first_file(&lower, "scope");
    let (scope, outside) = ScopeConfig::under_managed(
        lower.scope.clone(),
        (had(&managed, "scope"), &managed.scope),
    );
    lower.scope = scope;
    for w in outside {
        overrides.push(Ignored::new(
            format!(
                "scope.writable {} refused: outside the managed [scope]",
                w.display()
            ),
            &scope_file,
            lower.lines.get("scope").copied(),
        ));
    }
    lower.skill_dirs.extend(managed.skill_dirs.iter().cloned());

    // Tools: only tighten.
    lower.tools = ToolsConfig::under_managed(lower.tools.clone(), &managed.tools);

    // Sandbox: the stricter of each setting; `require_sandbox` a ceiling.
    let lower_sandbox_file = first_file(&lower, "sandbox");
    lower.sandbox = SandboxConfig::merge(
        (had(&managed, "sandbox"), &managed.sandbox),
        (had(&lower, "sandbox"), &lower.sandbox),
    );
    if locks.require_sandbox {
        if lower.sandbox.mode == SandboxMode::Off {
            overrides.push(Ignored::new(
                "sandbox mode = \"off\" overridden: require_sandbox",
                &lower_sandbox_file,
                lower.sandbox.line,
            ));
        }
        // Off becomes the default, the strongest mode; a stronger one chosen below stays.
        if lower.sandbox.mode == SandboxMode::Off {
            lower.sandbox.mode = SandboxMode::default();
        }
        lower.sandbox.required = super::Required::All;
    }

    let (settings, overridden) = PermissionSettings::under_managed(
        std::mem::take(&mut lower.permission_settings),
        &managed.permission_settings,
        &locks,
        lower.permissions.is_some(),
    );
    lower.permission_settings = settings;
    for what in overridden {
        overrides.push(Ignored::new(
            what,
            &first_file(&lower, "permissions"),
            lower.permissions_line,
        ));
    }

    // Hooks: managed first; the lower layers' only when not locked.
    let lower_hooks = std::mem::take(&mut lower.hooks);
    lower.hooks = managed.hooks.clone();
    for hook in lower_hooks {
        if locks.hooks_only {
            overrides.push(Ignored::new(
                format!(
                    "hook {} refused: allow_managed_hooks_only",
                    hook.command.join(" ")
                ),
                hook.file.as_deref().unwrap_or(Path::new("?")),
                Some(hook.line),
            ));
        } else {
            lower.hooks.push(hook);
        }
    }

    // MCP servers: a managed server wins over a lower one of its name; the lower ones only
    // when the locks allow them.
    let mut lower_mcp = std::mem::take(&mut lower.mcp);
    lower_mcp
        .servers
        .retain(|server| match locks.refuses(server) {
            Some(why) => {
                overrides.push(Ignored::new(
                    format!("MCP server \"{}\" refused: {why}", server.name),
                    server.file.as_deref().unwrap_or(Path::new("?")),
                    server.line,
                ));
                false
            }
            None => true,
        });
    lower.mcp = McpConfig::merge(&lower_mcp, &managed.mcp);

    if !had(&lower, "model") && had(&managed, "model") {
        lower.model = managed.model.clone();
    }
    if managed.audit.is_some() {
        lower.audit = managed.audit.clone();
    }
    lower.examples.extend(managed.examples.iter().cloned());
    for (section, files) in &managed.origins {
        lower
            .origins
            .entry(section)
            .or_default()
            .extend(files.iter().cloned());
    }
    lower.files.extend(managed.files.iter().cloned());
    lower.managed = super::managed::Managed {
        files: managed.files.clone(),
        overrides,
        locks,
    };
    Ok(lower)
}

fn action_word(action: Action) -> &'static str {
    match action {
        Action::Allow => "allow",
        Action::Deny => "deny",
        Action::Ask => "ask",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: Option<&str>, command: Option<&str>, url: Option<&str>) -> ServerMatch {
        let entry = McpServerMatch {
            name: name.map(str::to_string),
            command: command.map(str::to_string),
            url: url.map(str::to_string),
        };
        ServerMatch::new(&entry, "managed.toml:1".into()).unwrap()
    }

    #[test]
    fn a_later_managed_files_skill_folders_are_added() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let layer = |name: &str, skills: &str| {
            let path = ws.join(name);
            let text = format!("[skills]\ndirectories = [\"{skills}\"]\n");
            Manifest::parse_layer(&text, &path, Role::Managed(&ws)).unwrap()
        };
        let both = combine(layer("a.toml", "team"), layer("b.toml", "org")).unwrap();
        assert_eq!(both.skill_dirs, vec![ws.join("team"), ws.join("org")]);
    }

    #[test]
    fn url_entries_match_url_servers_and_command_entries_stdio_ones() {
        let dir = std::path::PathBuf::from("/w");
        let remote =
            McpServerConfig::http("gh", "https://mcp.example.com/mcp", Vec::new(), dir.clone());
        let local = McpServerConfig::stdio("gh", "node", vec!["s.js".into()], dir);
        let by_url = entry(None, None, Some("https://mcp.example.com/*"));
        assert!(by_url.matches(&remote));
        assert!(!by_url.matches(&local));
        let by_command = entry(None, Some("*"), None);
        assert!(by_command.matches(&local));
        assert!(!by_command.matches(&remote));
        let by_name = entry(Some("GH"), None, None);
        assert!(by_name.matches(&remote) && by_name.matches(&local));
        assert!(!entry(Some("gh"), None, Some("https://other.example/*")).matches(&remote));
        let both = McpServerMatch {
            name: None,
            command: Some("x".into()),
            url: Some("y".into()),
        };
        assert!(ServerMatch::new(&both, String::new()).is_err());
    }
}
