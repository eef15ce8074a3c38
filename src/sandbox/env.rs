//! The environment a tool's process starts with: pod's base set, what the configuration passes
//! or sets, and never a secret unless the user's configuration names it exactly
//! (docs/permissions.md, "Secrets").
//!
//! Owns: the base set, the patterns of names that look like secrets, and [`ChildEnv`], the
//! session's environment for commands, hooks and MCP servers, computed once from the pod's own
//! environment when the session opens.
//!
//! Must not touch: spawning (the sandbox's `prepare` applies a [`ChildEnv`]) and the manifest's
//! layering (which decides what [`EnvConfig`] holds).

use std::ffi::OsString;

use wildmatch::WildMatch;

use crate::manifest::EnvConfig;

/// Variables every process gets from the pod's environment when set: how to find programs,
/// who and where the user is, the locale and terminal, and the folders of common toolchains.
/// None holds a secret.
pub const BASE: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "HOSTNAME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "NVM_DIR",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    // Where TLS clients find the machine's certificate authorities (paths, not secrets).
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "PIP_CERT",
];

/// Names (case-insensitive wildmatch) that look like secrets: never passed, whatever a pattern
/// says, unless the user's configuration names the variable exactly.
pub const SECRET: &[&str] = &[
    "*KEY*",
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*AUTH*",
    "*COOKIE*",
    "AWS_*",
];

fn matches(patterns: &[impl AsRef<str>], name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    patterns
        .iter()
        .any(|p| WildMatch::new(&p.as_ref().to_ascii_uppercase()).matches(&name))
}

/// Whether `name` looks like a secret, or is one of `also` (the key variables pod reads).
pub fn is_secret(name: &str, also: &[String]) -> bool {
    matches(SECRET, name) || also.iter().any(|a| a == name)
}

/// The environment of a session's processes.
#[derive(Debug, Clone, Default)]
pub struct ChildEnv {
    vars: Vec<(OsString, OsString)>,
    /// Names of the pod's variables passed on, sorted.
    pub passed: Vec<String>,
    /// Names of the pod's variables left out, sorted.
    pub filtered: Vec<String>,
}

impl ChildEnv {
    /// The environment for `config`, taken from the pod's own.
    pub fn new(config: &EnvConfig) -> ChildEnv {
        ChildEnv::from_vars(config, std::env::vars_os())
    }

    /// The environment for `config`, taken from `vars`.
    pub fn from_vars(
        config: &EnvConfig,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> ChildEnv {
        let mut env = ChildEnv::default();
        for (name, value) in vars {
            let Some(text) = name.to_str() else {
                env.filtered.push(name.to_string_lossy().into_owned());
                continue;
            };
            let exact = config.exact.iter().any(|e| e == text);
            let wanted = exact || matches(BASE, text) || matches(&config.pass, text);
            if wanted && (exact || !is_secret(text, &config.secret)) {
                env.passed.push(text.to_string());
                env.vars.push((name, value));
            } else {
                env.filtered.push(text.to_string());
            }
        }
        for (name, value) in &config.set {
            env.vars.retain(|(n, _)| n.to_str() != Some(name.as_str()));
            env.vars.push((name.into(), value.into()));
        }
        env.passed.sort();
        env.filtered.sort();
        env
    }

    /// Clears `cmd`'s environment and gives it this one. Callers set their own variables after.
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        self.apply_std(cmd.as_std_mut());
    }

    /// [`ChildEnv::apply`] for a `std::process::Command` (the exec gate spawns with one).
    pub fn apply_std(&self, cmd: &mut std::process::Command) {
        cmd.env_clear();
        cmd.envs(self.vars.iter().map(|(k, v)| (k, v)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn secrets_never_pass_unless_named_exactly_by_the_user() {
        let pod_env = vars(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C"),
            ("ANTHROPIC_API_KEY", "sk-1"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("GITHUB_TOKEN", "gh"),
            ("CARGO_TARGET_DIR", "/t"),
            ("CARGO_REGISTRY_TOKEN", "crates"),
            ("MY_LLM", "k"),
            ("RANDOM_THING", "x"),
        ]);
        let config = EnvConfig {
            pass: vec!["CARGO_*".into(), "*".into()],
            set: vec![("FOO".into(), "bar".into())],
            exact: vec!["GITHUB_TOKEN".into()],
            secret: vec!["MY_LLM".into()],
        };
        let env = ChildEnv::from_vars(&config, pod_env);
        assert_eq!(
            env.passed,
            [
                "CARGO_TARGET_DIR",
                "GITHUB_TOKEN",
                "HOME",
                "LC_ALL",
                "PATH",
                "RANDOM_THING"
            ]
        );
        assert_eq!(
            env.filtered,
            [
                "ANTHROPIC_API_KEY",
                "AWS_SECRET_ACCESS_KEY",
                "CARGO_REGISTRY_TOKEN",
                "MY_LLM"
            ]
        );
        assert!(env.vars.iter().any(|(k, v)| k == "FOO" && v == "bar"));
    }

    #[test]
    fn without_configuration_only_the_base_set_passes() {
        let env = ChildEnv::from_vars(
            &EnvConfig::default(),
            vars(&[("PATH", "/bin"), ("EDITOR", "vi"), ("TERM", "xterm")]),
        );
        assert_eq!(env.passed, ["PATH", "TERM"]);
        assert_eq!(env.filtered, ["EDITOR"]);
    }
}
