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
//! project's section replaces the user's. A section with a resolved struct of its own has its
//! merge beside it (`PermissionSettings::merge`, `SandboxConfig::merge`, `McpConfig::merge`,
//! `PodSettings::merge`, `ToolsConfig::merge`, `ScopeConfig::merge`); `merge` calls each.
//!
//! Must not touch: reading one file (`mod.rs` does that, with its errors) or deciding.

use std::path::{Path, PathBuf};

use super::trust::{Fingerprint, Lookup};
use super::{
    default_state_root, workspace_key, Ignored, Manifest, ManifestError, McpConfig,
    McpServerConfig, McpTransport, PermissionSettings, PodSettings, Provider, Role, SandboxConfig,
    ScopeConfig, ToolsConfig, Trust, TrustStore, Vouch,
};
use crate::permission::{RuleError, RuleSpec, Rules};
use crate::protocol::{Action, TrustStatus};

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
    /// current folder. `vouch` says who decides whether the project is trusted.
    pub fn open(manifest: Option<&Path>, vouch: Vouch) -> Result<Manifest, ManifestError> {
        match manifest {
            Some(path) => Manifest::layered(Some(path), Path::new("."), vouch),
            None => Manifest::discover(Path::new("."), vouch),
        }
    }

    /// The configuration for a pod working in `folder`: `folder/pod.toml` (when it exists)
    /// layered over the user's configuration (when it exists), or built-in defaults.
    pub fn discover(folder: &Path, vouch: Vouch) -> Result<Manifest, ManifestError> {
        let project = folder.join(PROJECT_FILE);
        let project = project.is_file().then_some(project);
        Manifest::layered(project.as_deref(), folder, vouch)
    }

    /// `project` (a manifest file that must exist) or, when `None`, nothing, layered over the
    /// user's configuration. `folder` is the workspace when there is no project file. An
    /// untrusted project keeps only what restricts (docs/permissions.md, "Trust").
    pub fn layered(
        project: Option<&Path>,
        folder: &Path,
        vouch: Vouch,
    ) -> Result<Manifest, ManifestError> {
        let user = user_config_path().filter(|p| p.is_file());
        let mut ignored = Vec::new();
        let project = match project {
            Some(path) => Some(project_layer(path, vouch, &mut ignored)?),
            None => None,
        };
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
                Manifest::parse_layer(&text, &path, Role::User(&workspace))
            })
            .transpose()?;
        let mut manifest = match (project, user) {
            (Some(mut project), user) => {
                if !project.trust.is_trusted() {
                    project.extra_protected = project.protected_paths();
                    ignored.extend(restrict(&mut project, user.as_ref())?);
                }
                // Whatever [model] a project names its endpoint in, it names the key too.
                let project_endpoint =
                    project.origins.contains_key("model") && project.model.base_url.is_some();
                let mut merged = match user {
                    Some(user) => merge(project, user)?,
                    None => {
                        project.permission_settings =
                            PermissionSettings::merge(None, project.permission_settings);
                        project
                    }
                };
                if project_endpoint {
                    merged.model.default_key = false;
                }
                merged
            }
            (None, Some(mut user)) => {
                // A layer without [permissions] has no opinion about them: the defaults hold.
                if user.permissions.is_none() {
                    user.permissions = Some(default_rules(&workspace)?);
                }
                user.trust = Trust::no_project();
                user
            }
            (None, None) => defaults(&workspace)?,
        };
        manifest.trust.ignored = ignored;
        manifest.add_project_grants()?;
        // The managed layer goes on last, over everything the lower layers hold (the project
        // grants included, so `allow_managed_rules_only` refuses them too).
        if let Some(managed) = super::managed::load(&workspace)? {
            manifest = super::managed::apply(manifest, managed)?;
        }
        Ok(manifest.with_key_variables())
    }

    /// The rules "always in this project" answers wrote for this workspace (`grants.rs`), after
    /// every other rule: they settle what would otherwise fall to the default, never what a
    /// deny or ask rule decides.
    fn add_project_grants(&mut self) -> Result<(), ManifestError> {
        let Some(file) = super::grants::path(&self.workspace) else {
            return Ok(());
        };
        let extra = super::grants::rules(&file)?;
        let Some(rules) = &self.permissions else {
            return Ok(());
        };
        if extra.is_empty() {
            return Ok(());
        }
        let specs: Vec<RuleSpec> = rules.specs().cloned().chain(extra).collect();
        self.permissions = Some(Rules::compile(rules.default_action(), specs).map_err(
            |(i, e)| ManifestError::Invalid {
                path: file.clone(),
                line: 1,
                column: 1,
                message: format!("the project grants (rule {}): {e}", i + 1),
            },
        )?);
        self.files.push(file);
        Ok(())
    }

    /// True when no configuration file was found and pod runs on its built-in defaults.
    pub fn is_defaults(&self) -> bool {
        self.files.is_empty()
    }

    /// Why the permission layer is off, when it is: a trusted project manifest without
    /// `[permissions]`, and none in the user's configuration. Also when only the managed
    /// `allowed_domains_only` lock holds it on (no rule, `default_action = "allow"`): every
    /// call but the network's runs unasked then.
    pub fn permissions_off(&self) -> Option<String> {
        match &self.permissions {
            None => Some(format!(
                "the permission layer is off: {} has no [permissions] and neither has your \
                 configuration, so every tool call runs unasked; add [permissions] (for example \
                 default_action = \"ask\") to turn it on",
                self.path.display()
            )),
            Some(rules)
                if rules.network_locked()
                    && rules.is_empty()
                    && rules.default_action() == Action::Allow =>
            {
                Some(format!(
                    "the permission layer is off but for the network: no rule applies and \
                     default_action = \"allow\", so every tool call runs unasked, and only \
                     the managed lock allowed_domains_only holds (it denies every host); add \
                     [permissions] to {} (for example default_action = \"ask\") to turn it on",
                    self.path.display()
                ))
            }
            Some(_) => None,
        }
    }
}

/// The project's manifest at `path`, with its trust decided: the file as written when trusted;
/// when not, with `[pod] workspace` kept only beneath its folder (`ignored` says when it was
/// not). What else an untrusted project loses is [`restrict`]'s.
fn project_layer(
    path: &Path,
    vouch: Vouch,
    ignored: &mut Vec<Ignored>,
) -> Result<Manifest, ManifestError> {
    let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut project = Manifest::parse_layer(&text, path, Role::Project)?;
    let print = Fingerprint::of(&project);
    let folder = project.dir.clone();
    let mut trust = Trust {
        folder: Some(folder.clone()),
        fingerprint: Some(print.clone()),
        ..Trust::no_project()
    };
    match vouch {
        Vouch::Session => trust.status = TrustStatus::Session,
        Vouch::Store => {
            match TrustStore::default_location().and_then(|s| s.lookup(&folder, &print)) {
                Ok(Lookup::Trusted) => trust.status = TrustStatus::Trusted,
                Ok(Lookup::Declined) => trust.declined = true,
                Ok(Lookup::Changed(files)) => trust.changed = files,
                Ok(Lookup::Unknown) => {}
                // Fail closed: a store pod cannot read trusts nothing.
                Err(e) => tracing::warn!("{e}: {} is treated as untrusted", folder.display()),
            }
        }
    }
    if !trust.is_trusted() && !project.workspace.starts_with(&folder) {
        ignored.push(Ignored::new(
            format!("makes {} the workspace", project.workspace.display()),
            path,
            project.lines.get("pod.workspace").copied(),
        ));
        project = Manifest::parse_layer(&text, path, Role::ProjectIn(&folder))?;
    }
    project.trust = trust;
    Ok(project)
}

/// Makes an untrusted `project` inert wherever it would run code, send data, or widen what
/// `user` (or, without it, the built-in defaults) allows, and says what it ignored. What only
/// restricts stays: deny and ask rules, a stricter default, a narrower tool list or sandbox,
/// the `default_action`s of MCP servers the user configured.
fn restrict(
    project: &mut Manifest,
    user: Option<&Manifest>,
) -> Result<Vec<Ignored>, ManifestError> {
    let file = project.path.clone();
    let at = |line: Option<usize>| (file.as_path(), line);
    let shown = |p: &Path| crate::permission::path::display(p, &project.dir);
    let mut out = Vec::new();
    let mut ignore = |what: String, (file, line): (&Path, Option<usize>)| {
        out.push(Ignored::new(what, file, line));
    };

    let servers = std::mem::take(&mut project.mcp.servers);
    for mut server in servers {
        if server.enabled {
            let what = match &server.transport {
                McpTransport::Stdio { .. } => "starts",
                McpTransport::Http { .. } => "connects to",
            };
            ignore(
                format!(
                    "{what} MCP server \"{}\": {}",
                    server.name,
                    shorten(&server.describe())
                ),
                at(server.line),
            );
        }
        let defaults = &mut server.defaults;
        for (kind, action) in [
            ("read-only", &mut defaults.read_only),
            ("additive", &mut defaults.additive),
            ("destructive", &mut defaults.destructive),
        ] {
            if *action == Some(Action::Allow) {
                ignore(
                    format!(
                        "allows the {kind} tools of MCP server \"{}\" unasked",
                        server.name
                    ),
                    at(server.line),
                );
                *action = None;
            }
        }
        // Its restricting defaults still hold: for the user's server of that name (which keeps
        // the user's program; McpConfig::merge takes the stricter of each default), or for one an
        // editor offers; the project's own program never starts.
        match user.and_then(|u| {
            u.mcp
                .servers
                .iter()
                .find(|s| s.name.eq_ignore_ascii_case(&server.name))
        }) {
            Some(theirs) => project.mcp.servers.push(McpServerConfig {
                defaults: server.defaults,
                ..theirs.clone()
            }),
            None => project.mcp.servers.push(McpServerConfig {
                enabled: false,
                ..server
            }),
        }
    }
    for hook in std::mem::take(&mut project.hooks) {
        ignore(
            format!(
                "runs the hook `{}` {}",
                shorten(&hook.command.join(" ")),
                match hook.event {
                    super::HookEvent::PreToolCall => "before tool calls",
                    super::HookEvent::PostToolCall => "on tool results",
                    super::HookEvent::SessionStart => "when a session starts",
                    super::HookEvent::UserPrompt => "before each prompt",
                    super::HookEvent::PermissionDenied => "after denied calls",
                }
            ),
            at(Some(hook.line)),
        );
    }
    for dir in std::mem::take(&mut project.skill_dirs) {
        ignore(
            format!("loads the skills in {}", shown(&dir)),
            at(project.lines.get("skills").copied()),
        );
    }
    if project.origins.contains_key("model") && project.model.provider != Provider::Offline {
        let model = &project.model;
        let endpoint = model
            .base_url
            .clone()
            .unwrap_or_else(|| format!("{}'s public API", model.provider.as_str()));
        let key = match (&model.api_key_env, &model.api_key_file) {
            (Some(var), _) => format!(", with the key in ${var}"),
            (None, Some(f)) => format!(", with the key in {}", shown(f)),
            (None, None) => String::new(),
        };
        ignore(
            format!(
                "sends the conversation to {endpoint} ({}{key})",
                model.provider.as_str()
            ),
            at(project.lines.get("model").copied()),
        );
        project.origins.remove("model");
        project.model = user.map(|u| u.model.clone()).unwrap_or_default();
    }
    if let Some(&line) = project.lines.get("pod.state_dir") {
        ignore(
            format!("keeps session logs in {}", shown(&project.pod.state_dir)),
            at(Some(line)),
        );
        match user.filter(|u| u.lines.contains_key("pod.state_dir")) {
            Some(u) => {
                project.pod.state_dir = u.pod.state_dir.clone();
                project.pod.state_root = u.pod.state_root.clone();
            }
            None => {
                let root = default_state_root().map_err(|problem| ManifestError::Invalid {
                    path: file.clone(),
                    line,
                    column: 1,
                    message: problem.to_string(),
                })?;
                project.pod.state_dir = root.join(workspace_key(&project.workspace));
                project.pod.state_root = root;
            }
        }
    }
    // web_fetch sends requests from pod's own process, which no sandbox bounds: only the
    // user enables it for an untrusted project.
    if project.tools.enabled.iter().any(|t| t == "web_fetch")
        && !user.is_some_and(|u| u.tools.enabled.iter().any(|t| t == "web_fetch"))
    {
        ignore(
            "enables web_fetch, which sends requests from pod's own process".into(),
            at(project.lines.get("tools").copied()),
        );
        project.tools.enabled.retain(|t| t != "web_fetch");
    }
    let sandbox_line = project.sandbox.line;
    for what in project.sandbox.untrusted(&shown) {
        ignore(what, at(sandbox_line));
    }
    if project.origins.contains_key("scope") {
        let base: Vec<PathBuf> = match user.filter(|u| u.origins.contains_key("scope")) {
            Some(u) => u.scope.writable.clone(),
            None => vec![project.workspace.clone()],
        };
        let (kept, widening): (Vec<PathBuf>, Vec<PathBuf>) =
            std::mem::take(&mut project.scope.writable)
                .into_iter()
                .partition(|w| base.iter().any(|b| w.starts_with(b)));
        for w in widening {
            ignore(
                format!("lets file_write, edit and commands write in {}", shown(&w)),
                at(project.lines.get("scope").copied()),
            );
        }
        project.scope.writable = kept;
    }
    let base_default = user
        .and_then(|u| u.permissions.as_ref())
        .map_or(Action::Ask, Rules::default_action);
    let rules = match project.permissions.take() {
        Some(rules) => {
            let mut specs = Vec::new();
            for (i, spec) in rules.specs().enumerate() {
                if spec.action == Action::Allow {
                    ignore(
                        format!("allows {} \"{}\" (rule {})", spec.tool, spec.pattern, i + 1),
                        at(spec.line),
                    );
                } else {
                    specs.push(spec.clone());
                }
            }
            let default = stricter(rules.default_action(), base_default);
            if default != rules.default_action() {
                ignore(
                    format!(
                        "makes {} what no rule matches (default_action = \"{}\")",
                        action_word(rules.default_action()),
                        action_word(rules.default_action())
                    ),
                    at(project.lines.get("permissions.default_action").copied()),
                );
            }
            Some(
                Rules::compile(default, specs).map_err(|(i, e)| ManifestError::Invalid {
                    path: file.clone(),
                    line: 1,
                    column: 1,
                    message: format!("the untrusted project's rules (rule {}): {e}", i + 1),
                })?,
            )
        }
        None => {
            if user.is_none_or(|u| u.permissions.is_none()) {
                ignore(
                    "turns the permission layer off (no [permissions]: every tool call would \
                     run unasked)"
                        .into(),
                    at(None),
                );
            }
            // With the user's rules, merge takes them; without, the built-in defaults hold.
            match user.and_then(|u| u.permissions.as_ref()) {
                Some(_) => None,
                None => Some(default_rules(&project.workspace)?),
            }
        }
    };
    project.permissions = rules;
    Ok(out)
}

/// `allow`, `deny` or `ask`.
fn action_word(action: Action) -> &'static str {
    match action {
        Action::Allow => "allow",
        Action::Deny => "deny",
        Action::Ask => "ask",
    }
}

/// A command line cut to a length a prompt can show.
fn shorten(text: &str) -> String {
    const MAX: usize = 160;
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

/// The stricter of two actions: deny, then ask, then allow.
pub(super) fn stricter(a: Action, b: Action) -> Action {
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
    project.pod = PodSettings::merge(
        (had(&user, "pod"), &user.pod),
        (had(&project, "pod"), project.pod.clone()),
    );
    project.scope = ScopeConfig::merge(
        (had(&user, "scope"), &user.scope),
        (had(&project, "scope"), project.scope.clone()),
    );
    // Restrictions add up.
    project.tools = ToolsConfig::merge(&user.tools, project.tools.clone());
    project.mcp = McpConfig::merge(&user.mcp, &project.mcp);
    project.skill_dirs.extend(user.skill_dirs.iter().cloned());
    project.hooks.extend(user.hooks.iter().cloned());
    project.sandbox = SandboxConfig::merge(
        (had(&user, "sandbox"), &user.sandbox),
        (had(&project, "sandbox"), &project.sandbox),
    );
    project.permission_settings = PermissionSettings::merge(
        Some(&user.permission_settings),
        std::mem::take(&mut project.permission_settings),
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
    project.examples.extend(user.examples.iter().cloned());
    project.audit = user.audit.clone();
    Ok(project)
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
    // Every rule compiled once already, in its own file, so this does not fail; if it did,
    // pod would not start rather than drop a layer's rules.
    Rules::compile(default, specs).map(Some)
}

/// The built-in configuration when no file exists: the offline model, reads (and searches)
/// inside the workspace allowed, everything else asks.
fn defaults(workspace: &Path) -> Result<Manifest, ManifestError> {
    let path = workspace.join(PROJECT_FILE);
    let mut manifest = Manifest::parse_layer(DEFAULTS, &path, Role::User(workspace))?;
    manifest.files.clear();
    manifest.origins.clear();
    manifest.lines.clear();
    manifest.trust = Trust::no_project();
    manifest.permissions = Some(default_rules(workspace)?);
    Ok(manifest)
}

/// The built-in rules for `workspace`: reads and searches inside it allowed, everything else
/// asks; in a folder holding the home folder, everything asks.
fn default_rules(workspace: &Path) -> Result<Rules, ManifestError> {
    let path = workspace.join(PROJECT_FILE);
    let manifest = Manifest::parse_layer(DEFAULTS, &path, Role::User(workspace))?;
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
    let Some(rules) = manifest.permissions else {
        return Err(ManifestError::Invalid {
            path,
            line: 1,
            column: 1,
            message: "built-in defaults without [permissions]".into(),
        });
    };
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
    Rules::compile(rules.default_action(), specs).map_err(|(i, e)| ManifestError::Invalid {
        path: path.clone(),
        line: 1,
        column: 1,
        message: format!("built-in defaults, rule {}: {e}", i + 1),
    })
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

#[cfg(test)]
mod timeout_tests {
    use super::{merge, Manifest, Role};
    use std::time::Duration;

    fn layer(text: &str, dir: &std::path::Path, user: bool) -> Manifest {
        let path = dir.join(if user { "user.toml" } else { "pod.toml" });
        let role = if user {
            Role::User(dir)
        } else {
            Role::ProjectIn(dir)
        };
        Manifest::parse_layer(text, &path, role).expect("a layer")
    }

    /// `ask_timeout_secs` is the project's, else the user's; a layer without `[permissions]`
    /// has none, and with neither the layer is off and nothing waits.
    #[test]
    fn the_ask_timeout_is_the_projects_else_the_users() {
        let dir = tempfile::tempdir().expect("a folder");
        let dir = dir.path();
        let with = |secs: Option<u64>| match secs {
            Some(s) => format!("[permissions]\ndefault_action = \"ask\"\nask_timeout_secs = {s}\n"),
            None => "[permissions]\ndefault_action = \"ask\"\n".to_string(),
        };
        let off = "[pod]\nname = \"off\"\n";
        let merged = |project: &str, user: &str| {
            merge(layer(project, dir, false), layer(user, dir, true))
                .expect("merged")
                .permission_settings
                .ask_timeout
        };
        let secs = |s| Some(Duration::from_secs(s));
        assert_eq!(merged(&with(Some(5)), &with(Some(9))), secs(5));
        assert_eq!(merged(&with(None), &with(Some(9))), secs(9));
        assert_eq!(merged(off, &with(Some(9))), secs(9));
        assert_eq!(merged(&with(Some(5)), off), secs(5));
        assert_eq!(merged(&with(None), off), None);
        assert_eq!(merged(off, off), None);
    }
}
