//! `[mcp.servers.NAME]`, resolved: which MCP servers a pod starts, how, and what the permission
//! layer needs to know of them (docs/manifest.md, "MCP servers").
//!
//! Owns: validating each server's entry (its name, `command` or `url`, timeouts, folders, and
//! `headers`, which only the user's configuration and a managed file may hold) with the
//! manifest's file:line:column errors, and the resolved [`McpServerConfig`], which is also what
//! other front-ends (ACP's `mcpServers`) build to start servers of their own.
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
    /// The servers of both files, in name order. A server both name (in any case, as rules match
    /// names) is started as the project says, with the stricter of the two defaults for each
    /// annotation kind, so a user's `default_action` deny for a server holds in every project.
    pub(super) fn merge(user: &McpConfig, project: &McpConfig) -> McpConfig {
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
                            (Some(x), Some(y)) => Some(super::layers::stricter(x, y)),
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
    /// A streamable HTTP endpoint, reached from pod's own process under the `network` rules.
    Http {
        /// `http://` or `https://`, with a host, without credentials.
        url: String,
        /// Sent with every request.
        headers: McpHeaders,
        /// The folder relative paths in its tools' arguments are decided from: the workspace.
        cwd: PathBuf,
    },
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

/// HTTP headers of a `url` server: names checked, values never shown (`Debug` lists the
/// names only, so a log line or an error never carries a token).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct McpHeaders(pub Vec<(String, String)>);

impl std::fmt::Debug for McpHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| format!("{name}: <hidden>")))
            .finish()
    }
}

/// Header names pod's MCP client sets itself, which `headers` may not replace.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "connection",
    "transfer-encoding",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Checks one `headers` entry: a valid HTTP name that pod does not set itself, and a valid
/// value (visible ASCII and spaces).
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    if reqwest_mcp::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(format!("{name:?} is not a valid HTTP header name"));
    }
    if RESERVED_HEADERS
        .iter()
        .any(|r| name.eq_ignore_ascii_case(r))
    {
        return Err(format!(
            "{name:?} is set by pod's MCP client itself and cannot be replaced"
        ));
    }
    if reqwest_mcp::header::HeaderValue::from_str(value).is_err() {
        return Err(format!(
            "the value of {name:?} is not a valid HTTP header value (visible ASCII only, no \
             newline)"
        ));
    }
    Ok(())
}

/// Checks a `url` server's address: `http` or `https`, a host, no user name or password in it
/// (credentials go in `headers`).
pub fn check_url(raw: &str) -> Result<(), String> {
    let url = url::Url::parse(raw).map_err(|e| format!("{raw:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{raw:?}: a streamable HTTP server's URL is http:// or https://, not {}:",
            url.scheme()
        ));
    }
    if url.host().is_none() {
        return Err(format!("{raw:?} has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{raw:?} holds a user name or password: remove it and send credentials with \
             `headers` (in your own configuration)"
        ));
    }
    Ok(())
}

impl McpServerConfig {
    /// A streamable HTTP server with the defaults (see [`McpServerConfig::stdio`]); `url` must
    /// pass [`check_url`], `headers` [`check_header`].
    pub fn http(
        name: &str,
        url: &str,
        headers: Vec<(String, String)>,
        cwd: PathBuf,
    ) -> McpServerConfig {
        McpServerConfig {
            transport: McpTransport::Http {
                url: url.to_string(),
                headers: McpHeaders(headers),
                cwd,
            },
            ..McpServerConfig::stdio(name, "", Vec::new(), PathBuf::new())
        }
    }

    /// What the server is, in words for messages: its command line, or its URL.
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => std::iter::once(command)
                .chain(args)
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }

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
            McpTransport::Stdio { cwd, .. } | McpTransport::Http { cwd, .. } => cwd,
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
/// `workspace` the (canonical) workspace; `headers_allowed` only for the user's configuration
/// and managed files.
pub(super) fn resolve(
    section: Option<McpSection>,
    text: &str,
    path: &Path,
    dir: &Path,
    workspace: &Path,
    headers_allowed: bool,
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
        if entry.get_ref().headers.is_some() && !headers_allowed {
            return Err(at(
                key_at("headers"),
                format!(
                    "{header}.headers: only your own configuration (~/.config/pod/pod.toml) or a \
                     managed file may give an MCP server `headers`, so a project can never make \
                     pod send your credentials anywhere; move the server, with its headers, to \
                     your configuration"
                ),
            ));
        }
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
    if entry.headers.is_some() && entry.url.is_none() {
        return Err(error(
            "headers",
            "only a `url` server takes `headers` (a stdio server's are its `env`)".into(),
        ));
    }
    let transport = match (entry.command, entry.url) {
        (Some(_), Some(_)) => {
            return Err(error(
                "url",
                "a server has either `command` (stdio) or `url` (streamable HTTP), not both".into(),
            ))
        }
        (None, Some(url)) => {
            for (key, given) in [
                ("args", entry.args.is_some()),
                ("env", entry.env.is_some()),
                ("cwd", entry.cwd.is_some()),
            ] {
                if given {
                    return Err(error(
                        key,
                        format!("a `url` server runs no program, so it takes no `{key}`"),
                    ));
                }
            }
            check_url(&url).map_err(|why| error("url", why))?;
            let mut headers = Vec::new();
            for (name, value) in entry.headers.unwrap_or_default() {
                check_header(&name, &value).map_err(|why| error("headers", why))?;
                headers.push((name, value));
            }
            McpTransport::Http {
                url,
                headers: McpHeaders(headers),
                cwd: workspace.to_path_buf(),
            }
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
        } = &fs.transport
        else {
            panic!("{:?}", fs.transport)
        };
        assert_eq!(command, "node");
        assert_eq!(args, &["s.js", "."]);
        assert_eq!(env, &[("A".to_string(), "1".to_string())]);
        assert_eq!(cwd, &m.workspace);
        let gh = &m.mcp.servers[1];
        assert!(!gh.enabled);
        assert_eq!(gh.tool_timeout, Duration::from_secs(5));
        assert_eq!(gh.defaults.read_only, Some(crate::protocol::Action::Allow));
        let McpTransport::Stdio { command, .. } = &gh.transport else {
            panic!("{:?}", gh.transport)
        };
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
        let e = load("[mcp.servers.fs]\nurl = \"ftp://example.com/mcp\"\n").unwrap_err();
        assert!(e.starts_with(":2:1: mcp.servers.fs.url:"), "{e}");
        let e = load("[mcp.servers.fs]\nurl = \"https://u:p@example.com/mcp\"\n").unwrap_err();
        assert!(e.contains("send credentials with `headers`"), "{e}");
        let e =
            load("[mcp.servers.fs]\nurl = \"https://example.com/mcp\"\nargs = []\n").unwrap_err();
        assert!(e.starts_with(":3:1: mcp.servers.fs.args:"), "{e}");
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

    #[test]
    fn a_url_server_resolves_and_a_project_may_not_give_it_headers() {
        let m = load("[mcp.servers.remote]\nurl = \"https://mcp.example.com/mcp\"\n").unwrap();
        let remote = &m.mcp.servers[0];
        let McpTransport::Http { url, headers, cwd } = &remote.transport else {
            panic!("{:?}", remote.transport)
        };
        assert_eq!(url, "https://mcp.example.com/mcp");
        assert!(headers.0.is_empty());
        assert_eq!(cwd, &m.workspace);
        assert_eq!(remote.describe(), "https://mcp.example.com/mcp");
        let e = load(
            "[mcp.servers.remote]\nurl = \"https://mcp.example.com/mcp\"\n\
             headers = { Authorization = \"Bearer x\" }\n",
        )
        .unwrap_err();
        assert!(
            e.starts_with(":3:1: mcp.servers.remote.headers: only your own configuration"),
            "{e}"
        );
        assert!(!e.contains("Bearer x"), "{e}");
    }

    #[test]
    fn headers_are_checked_and_never_shown() {
        assert!(check_header("Authorization", "Bearer x").is_ok());
        assert!(check_header("Mcp-Session-Id", "x").is_err());
        assert!(check_header("bad name", "x").is_err());
        assert!(check_header("X-Token", "a\nb").is_err());
        let shown = format!(
            "{:?}",
            McpHeaders(vec![("X-Token".into(), "s3cret".into())])
        );
        assert!(
            shown.contains("X-Token") && !shown.contains("s3cret"),
            "{shown}"
        );
    }
}
