//! The configuration in effect as TOML (`pod config`): every section serialized by serde from
//! its resolved settings, headed by the files it came from.
//!
//! Owns: the shown form of each setting (the file's key names, durations in whole seconds,
//! credentials and values set for commands hidden) and the origin comments. A resolved struct
//! that derives `Serialize` (`PodSettings`, `ModelConfig`, `ToolsConfig`, `ScopeConfig` with
//! its folders as the workspace shows them, `SandboxConfig`, `HookConfig`, `AuditConfig`) is
//! shown as it is, so a key added to it is shown without a change here; the rest (the rules,
//! `[skills]`, `[mcp.servers]`) are named here once, in the file's words.
//!
//! Must not touch: layering (`layers.rs`, `managed.rs`), the file format (`file.rs`), or the
//! lines about the layers as a whole (sources, trust, the managed layer: `commands.rs`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::{Manifest, McpTransport, PermissionSettings};
use crate::protocol::Action;

impl Manifest {
    /// Every section in effect, as TOML, each with its origin as a comment on its header.
    pub fn settings_toml(&self) -> String {
        let origin = |section: &str| -> String {
            match self.origins.get(section) {
                Some(files) if !files.is_empty() => {
                    let files: Vec<String> =
                        files.iter().map(|f| f.display().to_string()).collect();
                    format!("from {}", files.join(" and "))
                }
                _ if self.is_defaults() => "pod's built-in defaults".to_string(),
                _ => "built-in default".to_string(),
            }
        };
        let mut out = vec![
            table(&["pod"], &self.pod, &origin("pod")),
            table(&["model"], &self.model, &origin("model")),
            table(&["tools"], &self.tools, &origin("tools")),
            table(
                &["scope"],
                &self.scope.shown_in(&self.workspace),
                &origin("scope"),
            ),
        ];
        match &self.permissions {
            None => out.push(format!(
                "# [permissions]: none, so the permission layer is off and every tool call runs \
                 # {}\n",
                origin("permissions")
            )),
            Some(rules) => {
                out.push(table(
                    &["permissions"],
                    &Permissions {
                        default_action: rules.default_action(),
                        settings: &self.permission_settings,
                    },
                    &origin("permissions"),
                ));
                for (i, rule) in rules.specs().enumerate() {
                    let at = match (&rule.file, rule.line) {
                        (Some(f), Some(l)) => format!("{f}:{l}"),
                        (Some(f), None) => f.clone(),
                        (None, Some(l)) => format!("line {l}"),
                        (None, None) => "built in".into(),
                    };
                    let shown = Rule {
                        tool: &rule.tool,
                        pattern: &rule.pattern,
                        action: rule.action,
                        message: rule.message.as_deref(),
                        methods: rule.methods.as_deref(),
                    };
                    out.push(table(
                        &["permissions", "rule"],
                        &[shown],
                        &format!("rule {}, {at}", i + 1),
                    ));
                }
            }
        }
        if !self.skill_dirs.is_empty() {
            out.push(table(
                &["skills"],
                &Skills {
                    directories: &self.skill_dirs,
                },
                &origin("skills"),
            ));
        }
        for hook in &self.hooks {
            let file = hook.file.as_deref().unwrap_or(&hook.dir);
            out.push(table(
                &["hooks", hook.event.key()],
                &[hook],
                &format!("{}:{}", file.display(), hook.line),
            ));
        }
        out.push(table(&["sandbox"], &self.sandbox, &origin("sandbox")));
        for server in &self.mcp.servers {
            let at = match (&server.file, server.line) {
                (Some(file), Some(line)) => format!("{}:{line}", file.display()),
                _ => "given by the client".into(),
            };
            let (command, args, env, cwd, url, headers) = match &server.transport {
                McpTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => (Some(command), Some(args), Some(env), Some(cwd), None, None),
                McpTransport::Http { url, headers, .. } => {
                    (None, None, None, None, Some(url), Some(&headers.0))
                }
            };
            let defaults = &server.defaults;
            let defaults = DefaultActions {
                read_only: defaults.read_only,
                additive: defaults.additive,
                destructive: defaults.destructive,
            };
            let shown = Server {
                command: command.map(String::as_str),
                args: args.map(Vec::as_slice),
                cwd: cwd.map(PathBuf::as_path),
                url: url.map(String::as_str),
                enabled: server.enabled,
                startup_timeout: server.startup_timeout,
                tool_timeout: server.tool_timeout,
                default_action: (defaults.read_only.is_some()
                    || defaults.additive.is_some()
                    || defaults.destructive.is_some())
                .then_some(defaults),
                env: env.map(Vec::as_slice).filter(|e| !e.is_empty()),
                headers: headers.map(Vec::as_slice).filter(|h| !h.is_empty()),
            };
            out.push(table(&["mcp", "servers", &server.name], &shown, &at));
        }
        if let Some(audit) = &self.audit {
            out.push(table(&["audit"], audit, &origin("audit")));
        }
        out.join("\n")
    }
}

/// `value` as the TOML table (or array of tables, for a slice) at `path`, `# comment` on its
/// first header. A value TOML cannot hold (a path that is not UTF-8) is named, not shown.
fn table<T: Serialize + ?Sized>(path: &[&str], value: &T, comment: &str) -> String {
    match toml::to_string(&Nested(path, value)) {
        Ok(text) => match text.split_once('\n') {
            Some((header, rest)) if header.starts_with('[') => {
                format!("{header} # {comment}\n{rest}")
            }
            _ => format!("# {comment}\n{text}"),
        },
        Err(e) => format!("# [{}] # {comment}: cannot be shown: {e}\n", path.join(".")),
    }
}

/// `value` under the keys of `.0`, outermost first.
struct Nested<'a, T: ?Sized>(&'a [&'a str], &'a T);

impl<T: Serialize + ?Sized> Serialize for Nested<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.split_first() {
            None => self.1.serialize(s),
            Some((key, rest)) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(key, &Nested(rest, self.1))?;
                map.end()
            }
        }
    }
}

/// A duration as the whole seconds a `..._secs` key takes.
pub(super) fn secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_secs())
}

/// A provider by its name in the file. (`Provider` itself is not `Serialize`: schemars would
/// then write its default into the generated schema.)
pub(super) fn provider<S: Serializer>(p: &super::Provider, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.as_str())
}

/// Names with their values hidden: a header's value is a credential, and a variable set for
/// commands or a server may be one.
pub(super) fn hidden<S: Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(pairs.len()))?;
    for (name, _) in pairs {
        map.serialize_entry(name, "<hidden>")?;
    }
    map.end()
}

/// Like [`hidden`], for an optional list.
fn hidden_some<S: Serializer>(
    pairs: &Option<&[(String, String)]>,
    s: S,
) -> Result<S::Ok, S::Error> {
    hidden(pairs.unwrap_or_default(), s)
}

/// `[permissions]` but its rules.
#[derive(Serialize)]
struct Permissions<'a> {
    default_action: Action,
    #[serde(flatten)]
    settings: &'a PermissionSettings,
}

/// One `[[permissions.rule]]`.
#[derive(Serialize)]
struct Rule<'a> {
    tool: &'a str,
    pattern: &'a str,
    action: Action,
    message: Option<&'a str>,
    methods: Option<&'a [String]>,
}

/// `[skills]`.
#[derive(Serialize)]
struct Skills<'a> {
    directories: &'a [PathBuf],
}

/// `[mcp.servers.NAME]`.
#[derive(Serialize)]
struct Server<'a> {
    command: Option<&'a str>,
    args: Option<&'a [String]>,
    cwd: Option<&'a Path>,
    url: Option<&'a str>,
    enabled: bool,
    #[serde(rename = "startup_timeout_secs", serialize_with = "secs")]
    startup_timeout: Duration,
    #[serde(rename = "tool_timeout_secs", serialize_with = "secs")]
    tool_timeout: Duration,
    default_action: Option<DefaultActions>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "hidden_some"
    )]
    env: Option<&'a [(String, String)]>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "hidden_some"
    )]
    headers: Option<&'a [(String, String)]>,
}

/// A server's `default_action`.
#[derive(Serialize)]
struct DefaultActions {
    read_only: Option<Action>,
    additive: Option<Action>,
    destructive: Option<Action>,
}

#[cfg(test)]
mod tests {
    use super::super::{file::ManifestFile, Manifest};

    /// What `pod config` shows is written in the file's own keys: it reads back as a manifest
    /// (`deny_unknown_fields` refuses a key the file does not have), with every setting given.
    #[test]
    fn the_shown_configuration_reads_back_as_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let text = "[pod]\nname = \"p\"\nmax_steps = 7\n\
                    [model]\nprovider = \"openai\"\nmodel = \"m\"\n\
                    base_url = \"http://127.0.0.1:9\"\n\
                    system = \"be brief\"\n\
                    [tools]\nenabled = [\"read\", \"bash\"]\nmax_parallel = 5\n\
                    [scope]\nwritable = [\".\", \"sub\"]\n\
                    [permissions]\ndefault_action = \"ask\"\nask_timeout_secs = 30\n\
                    mode = \"read-only\"\n\
                    [[permissions.rule]]\ntool = \"bash\"\npattern = \"rm *\"\naction = \"deny\"\n\
                    message = \"no \\\"rm\\\"\"\n\
                    [[permissions.rule]]\ntool = \"network\"\npattern = \"example.com:*\"\n\
                    action = \"allow\"\nmethods = [\"GET\"]\n\
                    [skills]\ndirectories = [\"skills\"]\n\
                    [[hooks.pre_tool_call]]\ncommand = [\"true\"]\ntools = [\"bash\"]\n\
                    [sandbox]\nrequired = \"landlock\"\nnetwork = \"deny\"\nexec_gate = true\n\
                    max_tmpdir_size = \"512M\"\n\
                    readable = [\"/opt\"]\n\
                    [sandbox.env]\npass = [\"LANG\"]\nset = { TOKEN = \"s3cret\" }\n\
                    [mcp.servers.local]\ncommand = \"echo\"\nargs = [\"a\"]\n\
                    env = { KEY = \"s3cret\" }\n\
                    default_action = { destructive = \"deny\" }\n";
        let m = Manifest::parse(text, &dir.path().join("pod.toml")).unwrap();
        let shown = m.settings_toml();
        let read: ManifestFile = toml::from_str(&shown).unwrap_or_else(|e| panic!("{e}\n{shown}"));
        assert!(read.mcp.is_some() && read.hooks.is_some(), "{shown}");
        for expected in [
            "[pod] # from ",
            "max_steps = 7",
            "system = \"be brief\"",
            "max_parallel = 5",
            "writable = [\".\", \"sub\"]",
            "mode = \"read-only\"",
            "ask_timeout_secs = 30",
            "[[permissions.rule]] # rule 2, ",
            "methods = [\"GET\"]",
            "tools = [\"bash\"]",
            "required = \"landlock\"",
            "exec_gate = true",
            "max_tmpdir_size = \"512M\"",
            "readable = [\"/opt\"]",
            "pass = [\"LANG\"]",
            "TOKEN = \"<hidden>\"",
            "KEY = \"<hidden>\"",
            "destructive = \"deny\"",
            "[mcp.servers.local] # ",
        ] {
            assert!(shown.contains(expected), "{expected}\n{shown}");
        }
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
