//! `[mcp.servers.NAME]`, resolved: which MCP servers a pod starts, how, and what the permission
//! layer needs to know of them (docs/manifest.md, "MCP servers").
//!
//! Owns: validating each server's entry (its name, `command` or `url`, timeouts, folders) with
//! the manifest's file:line:column errors, and the resolved [`McpServerConfig`], which is also
//! what other front-ends (ACP's `mcpServers`) build to start servers of their own.
//!
//! Must not touch: starting servers (`crate::mcp`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::file::{McpSection, McpServerEntry};
use super::{key_offset, line_col, ManifestError};
use crate::permission::mcp::{check_server_name, AnnotationDefaults, McpServerRules};

/// Default `startup_timeout_secs`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `tool_timeout_secs`.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// `[mcp]`, resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpConfig {
    /// In name order.
    pub servers: Vec<McpServerConfig>,
}

impl McpConfig {
    /// What the permission layer knows of these servers.
    pub fn rules(&self) -> Vec<McpServerRules> {
        self.servers.iter().map(McpServerConfig::rules).collect()
    }
}

/// One MCP server, ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// Valid for tool names (`permission::mcp::check_server_name`).
    pub name: String,
    pub transport: McpTransport,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// The defaults by annotation (`default_action`).
    pub defaults: AnnotationDefaults,
    /// The file and line of the server's header, when it comes from a manifest.
    pub file: Option<PathBuf>,
    pub line: Option<usize>,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin and stdout (newline-delimited JSON-RPC).
    Stdio {
        /// A program name (searched on PATH) or an absolute path.
        command: String,
        args: Vec<String>,
        /// Set on top of the pod's environment.
        env: Vec<(String, String)>,
        /// Absolute and canonical.
        cwd: PathBuf,
    },
}

impl McpServerConfig {
    /// A stdio server with the defaults: enabled, 30 s to start, 120 s per call, no defaults by
    /// annotation. `cwd` should be canonical.
    pub fn stdio(name: &str, command: &str, args: Vec<String>, cwd: PathBuf) -> McpServerConfig {
        McpServerConfig {
            name: name.to_string(),
            transport: McpTransport::Stdio {
                command: command.to_string(),
                args,
                env: Vec::new(),
                cwd,
            },
            enabled: true,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            defaults: AnnotationDefaults::default(),
            file: None,
            line: None,
        }
    }

    /// The server's working folder.
    pub fn cwd(&self) -> &Path {
        match &self.transport {
            McpTransport::Stdio { cwd, .. } => cwd,
        }
    }

    /// What the permission layer knows of this server.
    pub fn rules(&self) -> McpServerRules {
        McpServerRules {
            name: self.name.clone(),
            cwd: self.cwd().to_path_buf(),
            defaults: self.defaults,
        }
    }
}

/// Resolves `[mcp]` of the manifest `text` at `path`: `dir` is the manifest's folder,
/// `workspace` the (canonical) workspace.
pub(super) fn resolve(
    section: Option<McpSection>,
    text: &str,
    path: &Path,
    dir: &Path,
    workspace: &Path,
) -> Result<McpConfig, ManifestError> {
    let Some(section) = section else {
        return Ok(McpConfig::default());
    };
    let mut servers = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (name, entry) in section.servers {
        let start = entry.span().start;
        let header = format!("mcp.servers.{name}");
        let at = |offset: usize, message: String| ManifestError::at(path, text, offset, message);
        let key_at = |key: &str| {
            let offset = key_offset(text, &header, key);
            if offset == 0 {
                start
            } else {
                offset
            }
        };
        check_server_name(&name).map_err(|why| at(start, format!("{header}: {why}")))?;
        if let Some(other) = seen.insert(name.to_ascii_lowercase(), name.clone()) {
            return Err(at(
                start,
                format!(
                    "{header}: the server \"{other}\" differs only in case, and rules match tool \
                     names in any case; rename one"
                ),
            ));
        }
        let line = line_col(text, start).0;
        servers.push(server(
            &name,
            entry,
            path,
            dir,
            workspace,
            line,
            |key, why| at(key_at(key), format!("{header}.{key}: {why}")),
        )?);
    }
    Ok(McpConfig { servers })
}

fn server(
    name: &str,
    entry: Spanned<McpServerEntry>,
    path: &Path,
    dir: &Path,
    workspace: &Path,
    line: usize,
    error: impl Fn(&str, String) -> ManifestError,
) -> Result<McpServerConfig, ManifestError> {
    let entry = entry.into_inner();
    let seconds = |key: &str, value: Option<u64>, default: Duration| match value {
        Some(0) => Err(error(key, "must be at least 1".into())),
        Some(n) => Ok(Duration::from_secs(n)),
        None => Ok(default),
    };
    let startup_timeout = seconds(
        "startup_timeout_secs",
        entry.startup_timeout_secs,
        DEFAULT_STARTUP_TIMEOUT,
    )?;
    let tool_timeout = seconds(
        "tool_timeout_secs",
        entry.tool_timeout_secs,
        DEFAULT_TOOL_TIMEOUT,
    )?;
    let defaults = entry
        .default_action
        .map(|d| AnnotationDefaults {
            read_only: d.read_only,
            additive: d.additive,
            destructive: d.destructive,
        })
        .unwrap_or_default();
    let transport = match (entry.command, entry.url) {
        (Some(_), Some(_)) => {
            return Err(error(
                "url",
                "a server has either `command` (stdio) or `url` (streamable HTTP), not both".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(error(
                "url",
                "streamable HTTP servers are not supported by this pod yet (docs/manifest.md, \
                 \"MCP servers\"); start the server over stdio with `command` instead"
                    .into(),
            ))
        }
        (None, None) => {
            return Err(error(
                "command",
                "a server needs `command` (a program speaking MCP on stdin and stdout)".into(),
            ))
        }
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(error("command", "must not be empty".into()));
            }
            let args = entry.args.unwrap_or_default();
            if command.contains('\0') || args.iter().any(|a| a.contains('\0')) {
                return Err(error("args", "holds a NUL byte".into()));
            }
            let mut env = Vec::new();
            for (key, value) in entry.env.unwrap_or_default() {
                if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
                    return Err(error(
                        "env",
                        format!(
                            "{key:?}: a variable's name must be non-empty without `=` or NUL, \
                             and its value without NUL"
                        ),
                    ));
                }
                env.push((key, value));
            }
            let cwd = match entry.cwd {
                None => workspace.to_path_buf(),
                Some(raw) => {
                    let folder = dir.join(&raw);
                    match folder.canonicalize() {
                        Ok(c) if c.is_dir() => c,
                        Ok(c) => {
                            return Err(error("cwd", format!("{} is not a folder", c.display())))
                        }
                        Err(e) => {
                            return Err(error(
                                "cwd",
                                format!("{} is not a usable folder: {e}", folder.display()),
                            ))
                        }
                    }
                }
            };
            let command = if command.contains('/') {
                crate::permission::path::normalize(&dir.join(&command))
                    .to_string_lossy()
                    .into_owned()
            } else {
                command
            };
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            }
        }
    };
    Ok(McpServerConfig {
        name: name.to_string(),
        transport,
        enabled: entry.enabled.unwrap_or(true),
        startup_timeout,
        tool_timeout,
        defaults,
        file: Some(path.to_path_buf()),
        line: Some(line),
    })
}

#[cfg(test)]
mod tests {
    use super::super::Manifest;
    use super::*;

    fn load(body: &str) -> Result<Manifest, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pod.toml");
        Manifest::parse(body, &path).map_err(|e| {
            e.to_string()
                .trim_start_matches(&path.display().to_string())
                .to_string()
        })
    }

    #[test]
    fn a_stdio_server_resolves_with_defaults() {
        let m = load(
            "[mcp.servers.fs]\ncommand = \"node\"\nargs = [\"s.js\", \".\"]\n\
             env = { A = \"1\" }\n[mcp.servers.gh]\ncommand = \"./bin/gh\"\nenabled = false\n\
             tool_timeout_secs = 5\ndefault_action = { read_only = \"allow\" }\n",
        )
        .unwrap();
        let names: Vec<&str> = m.mcp.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["fs", "gh"]);
        let fs = &m.mcp.servers[0];
        assert!(fs.enabled);
        assert_eq!(fs.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(fs.line, Some(1));
        let McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &fs.transport;
        assert_eq!(command, "node");
        assert_eq!(args, &["s.js", "."]);
        assert_eq!(env, &[("A".to_string(), "1".to_string())]);
        assert_eq!(cwd, &m.workspace);
        let gh = &m.mcp.servers[1];
        assert!(!gh.enabled);
        assert_eq!(gh.tool_timeout, Duration::from_secs(5));
        assert_eq!(gh.defaults.read_only, Some(crate::protocol::Action::Allow));
        let McpTransport::Stdio { command, .. } = &gh.transport;
        assert_eq!(command, &m.dir.join("bin/gh").to_string_lossy());
    }

    #[test]
    fn mistakes_name_the_place_and_the_key() {
        let e = load("[mcp.servers.fs]\ncomand = \"node\"\n").unwrap_err();
        assert!(
            e.starts_with(":2:1: [mcp.servers.fs]: unknown field `comand`")
                && e.contains("(did you mean \"command\"?)"),
            "{e}"
        );
        let e = load("[mcp.servers.a__b]\ncommand = \"x\"\n").unwrap_err();
        assert!(
            e.starts_with(":1:") && e.contains("mcp.servers.a__b: \"a__b\""),
            "{e}"
        );
        let e = load("[mcp.servers.fs]\nargs = []\n").unwrap_err();
        assert!(
            e.contains("mcp.servers.fs.command: a server needs `command`"),
            "{e}"
        );
        let e = load("[mcp.servers.fs]\ncommand = \"x\"\nstartup_timeout_secs = 0\n").unwrap_err();
        assert!(
            e.starts_with(":3:1: mcp.servers.fs.startup_timeout_secs: must be at least 1"),
            "{e}"
        );
        let e = load("[mcp.servers.fs]\nurl = \"http://localhost:1/mcp\"\n").unwrap_err();
        assert!(e.contains("mcp.servers.fs.url: streamable HTTP"), "{e}");
        let e = load("[mcp.servers.fs]\ncommand = \"x\"\n[mcp.servers.FS]\ncommand = \"y\"\n")
            .unwrap_err();
        assert!(e.contains("differs only in case"), "{e}");
        let e = load("[mcp.servers.fs]\ncommand = \"x\"\ncwd = \"nope\"\n").unwrap_err();
        assert!(e.starts_with(":3:1: mcp.servers.fs.cwd:"), "{e}");
        let e =
            load("[mcp.servers.fs]\ncommand = \"x\"\ndefault_action = { read_onl = \"allow\" }\n")
                .unwrap_err();
        assert!(e.contains("did you mean \"read_only\""), "{e}");
    }
}
