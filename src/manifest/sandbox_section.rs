//! `[sandbox]`, resolved, and how two layers of it merge: the stricter value of each key, so
//! a key added to the section is resolved in `mod.rs` and layered here, once.
//!
//! Owns: [`SandboxConfig`], [`EnvConfig`], [`Required`] and their merge (`SandboxConfig::merge`),
//! used between the user's and the project's files, two managed files, and the managed layer
//! over the rest; and what of an untrusted project's `[sandbox]` is ignored
//! (`SandboxConfig::untrusted`).
//!
//! Must not touch: confining anything (`crate::sandbox` plans and enforces what this says).

use std::path::{Path, PathBuf};

use super::{RequiredLevel, RequiredSetting, SandboxMode};
use crate::protocol::NetworkAccess;

/// `[sandbox] env`, resolved and layered.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct EnvConfig {
    /// Patterns of the pod's variables to pass (besides the base set).
    pub pass: Vec<String>,
    /// Values to set.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "super::shown::hidden"
    )]
    pub set: Vec<(String, String)>,
    /// Names the user's configuration passes exactly: they pass even when they look secret.
    #[serde(skip)]
    pub exact: Vec<String>,
    /// Variables pod itself reads a key from (`[model] api_key_env`): never passed unless
    /// named exactly.
    #[serde(skip)]
    pub secret: Vec<String>,
}

impl EnvConfig {
    /// Whether it passes and sets nothing beyond the base set.
    pub fn is_empty(&self) -> bool {
        self.pass.is_empty() && self.set.is_empty()
    }
}

/// What `[sandbox] required` asks of this machine, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Required {
    /// Nothing: the pod starts with what holds, and says so.
    #[default]
    No,
    /// At least Landlock's write boundary.
    Landlock,
    /// Calls in namespaces of their own.
    Namespaces,
    /// Everything the configuration asks for (`required = true`).
    All,
}

impl Required {
    /// From the file's setting.
    pub fn from_setting(setting: Option<RequiredSetting>) -> Required {
        match setting {
            None | Some(RequiredSetting::All(false)) => Required::No,
            Some(RequiredSetting::All(true)) => Required::All,
            Some(RequiredSetting::Level(RequiredLevel::Landlock)) => Required::Landlock,
            Some(RequiredSetting::Level(RequiredLevel::Namespaces)) => Required::Namespaces,
        }
    }

    /// As the file would say it.
    pub fn shown(self) -> &'static str {
        match self {
            Required::No => "false",
            Required::Landlock => "\"landlock\"",
            Required::Namespaces => "\"namespaces\"",
            Required::All => "true",
        }
    }
}

impl serde::Serialize for Required {
    /// As the file would say it: a bool, or the level's name.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Required::No => s.serialize_bool(false),
            Required::All => s.serialize_bool(true),
            Required::Landlock => s.serialize_str("landlock"),
            Required::Namespaces => s.serialize_str("namespaces"),
        }
    }
}

/// `[sandbox]`, resolved.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    /// What must hold for the pod to start.
    pub required: Required,
    pub network: NetworkAccess,
    /// Extra writable folders, absolute and normalized (`~` expanded).
    pub writable: Vec<PathBuf>,
    /// `readable`: `Some` hides `$HOME` but for these paths (absolute, `~` expanded).
    pub readable: Option<Vec<PathBuf>>,
    /// Line of the `[sandbox]` header, when the section is present.
    #[serde(skip)]
    pub line: Option<usize>,
    /// The environment of commands, hooks and MCP servers.
    #[serde(skip_serializing_if = "EnvConfig::is_empty")]
    pub env: EnvConfig,
    /// `exec_gate`: `None` is on where ptrace works.
    pub exec_gate: Option<bool>,
    /// `max_processes`: `None` is [`DEFAULT_MAX_PROCESSES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_processes: Option<u32>,
    /// `max_tmpdir_size` in bytes: `None` is [`DEFAULT_MAX_TMPDIR_SIZE`]. Shown as the size in
    /// effect, in the file's words (`"1G"`).
    #[serde(serialize_with = "shown_tmpdir_size")]
    pub max_tmpdir_size: Option<u64>,
}

/// `[sandbox] max_tmpdir_size` when no layer sets it: 1 GiB. `$TMPDIR` is a tmpfs, held in
/// memory (and swap), so the default is a small share of a laptop's memory that a runaway
/// call cannot grow past, and still more than what programs put there (compilers' and
/// package managers' scratch files, test suites' temporary folders, `sort`'s spills).
pub const DEFAULT_MAX_TMPDIR_SIZE: u64 = 1 << 30;
/// The smallest `max_tmpdir_size`: below it, a shell's here-documents and a compiler's
/// scratch files fail.
pub const MIN_TMPDIR_SIZE: u64 = 1 << 20;
/// The largest `max_tmpdir_size`: `$TMPDIR` is held in memory, and above this the limit bounds
/// nothing; large data belongs in a `writable` folder on disk.
pub const MAX_TMPDIR_SIZE: u64 = 1 << 40;

/// The units of a size, largest first: each a power of 1024.
const UNITS: [(&str, u64); 4] = [
    ("T", 1 << 40),
    ("G", 1 << 30),
    ("M", 1 << 20),
    ("K", 1 << 10),
];

/// A `max_tmpdir_size` value (an integer of bytes, or a whole number with a unit: `"512M"`,
/// `"1G"`, `"2GiB"`) in bytes, within [`MIN_TMPDIR_SIZE`] and [`MAX_TMPDIR_SIZE`]; `Err` says
/// what is wrong, in words for a load error.
pub fn parse_tmpdir_size(value: &toml::Value) -> Result<u64, String> {
    const FORM: &str = "bytes as an integer, or a string such as \"512M\" or \"1G\" (K, M, G, \
                        T: powers of 1024)";
    let bytes = match value {
        toml::Value::Integer(n) => {
            u64::try_from(*n).map_err(|_| format!("{n} is negative; it must be a size: {FORM}"))?
        }
        toml::Value::String(text) => {
            let t = text.trim();
            let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (number, unit) = t.split_at(digits);
            let unit = unit.trim();
            let scale = if unit.is_empty() {
                Some(1)
            } else {
                UNITS.iter().find_map(|(u, scale)| {
                    let upper = unit.to_ascii_uppercase();
                    (upper == *u || upper == format!("{u}IB")).then_some(*scale)
                })
            };
            match (number.parse::<u64>(), scale) {
                (Ok(n), Some(scale)) => n.saturating_mul(scale),
                _ => return Err(format!("{text:?} is not a size: it must be {FORM}")),
            }
        }
        other => return Err(format!("must be a size, {FORM}; got {}", other.type_str())),
    };
    if bytes == 0 {
        return Err(format!(
            "must be more than 0 (at least {}: $TMPDIR holds the shell's here-documents)",
            shown_size(MIN_TMPDIR_SIZE)
        ));
    }
    if bytes < MIN_TMPDIR_SIZE {
        return Err(format!(
            "{bytes} bytes is too small: at least {} (a shell's here-documents and a compiler's \
             scratch files go there)",
            shown_size(MIN_TMPDIR_SIZE)
        ));
    }
    if bytes > MAX_TMPDIR_SIZE {
        return Err(format!(
            "{} is too large: at most {} ($TMPDIR is held in memory; put large data in a \
             [sandbox] writable folder on disk)",
            shown_size(bytes),
            shown_size(MAX_TMPDIR_SIZE)
        ));
    }
    Ok(bytes)
}

/// A size as the manifest writes it: the largest unit that divides it (`"1G"`, `"1536M"`), else
/// bytes (`"1000000"`).
pub fn shown_size(bytes: u64) -> String {
    UNITS
        .iter()
        .find(|(_, scale)| bytes >= *scale && bytes.is_multiple_of(*scale))
        .map(|(unit, scale)| format!("{}{unit}", bytes / scale))
        .unwrap_or_else(|| bytes.to_string())
}

/// A size for people: `1 GiB`, `512 MiB`, `1.5 GiB`, `4096 bytes`.
pub fn human_size(bytes: u64) -> String {
    for (unit, scale) in UNITS {
        if bytes >= scale {
            let whole = bytes / scale;
            let tenths = (bytes % scale) * 10 / scale;
            return if tenths == 0 {
                format!("{whole} {unit}iB")
            } else {
                format!("{whole}.{tenths} {unit}iB")
            };
        }
    }
    format!("{bytes} bytes")
}

fn shown_tmpdir_size<S: serde::Serializer>(size: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&shown_size(size.unwrap_or(DEFAULT_MAX_TMPDIR_SIZE)))
}

/// `[sandbox] max_processes` when no layer sets it: more than a parallel build's processes and
/// threads on a large machine (the pids cgroup counts threads too), far fewer than a fork bomb.
pub const DEFAULT_MAX_PROCESSES: u32 = 4096;

impl SandboxConfig {
    /// The most processes and threads one call may have at once.
    pub fn max_processes(&self) -> u32 {
        self.max_processes.unwrap_or(DEFAULT_MAX_PROCESSES)
    }

    /// The most the session's `$TMPDIR` may hold, in bytes.
    pub fn max_tmpdir_size(&self) -> u64 {
        self.max_tmpdir_size.unwrap_or(DEFAULT_MAX_TMPDIR_SIZE)
    }

    /// An untrusted project's `[sandbox]`: what would widen the user's or the defaults'
    /// (`mode = "off"`, extra writable folders, variables passed or set) dropped, and said
    /// (`shown` names a path); what only restricts stays.
    pub(super) fn untrusted(&mut self, shown: &dyn Fn(&Path) -> String) -> Vec<String> {
        let mut ignored = Vec::new();
        if self.mode == SandboxMode::Off {
            ignored.push(
                "runs commands, hooks and MCP servers without the sandbox (mode = \"off\")".into(),
            );
            self.mode = SandboxMode::default();
        }
        let extra = std::mem::take(&mut self.writable);
        if !extra.is_empty() {
            let list: Vec<String> = extra.iter().map(|p| shown(p)).collect();
            ignored.push(format!("lets commands write in {}", list.join(", ")));
        }
        let env = std::mem::take(&mut self.env);
        if !env.pass.is_empty() {
            ignored.push(format!(
                "passes {} of pod's environment to commands",
                env.pass.join(", ")
            ));
        }
        if !env.set.is_empty() {
            let names: Vec<&str> = env.set.iter().map(|(k, _)| k.as_str()).collect();
            ignored.push(format!("sets {} for commands", names.join(", ")));
        }
        if let Some(n) = self.max_processes.filter(|n| *n > DEFAULT_MAX_PROCESSES) {
            ignored.push(format!(
                "lets a call run up to {n} processes (max_processes; the default is \
                 {DEFAULT_MAX_PROCESSES})"
            ));
            self.max_processes = None;
        }
        if let Some(n) = self
            .max_tmpdir_size
            .filter(|n| *n > DEFAULT_MAX_TMPDIR_SIZE)
        {
            ignored.push(format!(
                "lets the session's $TMPDIR hold up to {} (max_tmpdir_size; the default is {})",
                human_size(n),
                human_size(DEFAULT_MAX_TMPDIR_SIZE)
            ));
            self.max_tmpdir_size = None;
        }
        ignored
    }

    /// The user's and the project's `[sandbox]` (each with whether its file has the section):
    /// the stricter value of each key (the managed layer is merged as the user's over the rest,
    /// a later managed file as the user's over an earlier). Extra writable folders are the
    /// user's when the user lists any (a project cannot open more of the disk than the user
    /// allowed), else the project's.
    pub(super) fn merge(
        (user_set, user): (bool, &SandboxConfig),
        (project_set, project): (bool, &SandboxConfig),
    ) -> SandboxConfig {
        match (project_set, user_set) {
            (_, false) => project.clone(),
            (false, true) => user.clone(),
            (true, true) => SandboxConfig {
                mode: project.mode.max(user.mode),
                required: project.required.max(user.required),
                network: project.network.stricter(user.network),
                writable: if user.writable.is_empty() {
                    project.writable.clone()
                } else {
                    user.writable.clone()
                },
                readable: stricter_readable(project.readable.as_ref(), user.readable.as_ref()),
                line: project.line,
                env: merge_env(&project.env, &user.env),
                // On wins; the user's own `false` turns it off.
                exec_gate: match (project.exec_gate, user.exec_gate) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (_, Some(false)) => Some(false),
                    (project, None) => project,
                },
                max_processes: smaller(project.max_processes, user.max_processes),
                max_tmpdir_size: smaller(project.max_tmpdir_size, user.max_tmpdir_size),
            },
        }
    }
}

/// `max_processes` or `max_tmpdir_size` of two layers: the smaller of those set.
fn smaller<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `readable` of two layers: either one's list turns the allow-list on (any list shows less of
/// `$HOME` than none); with both, what both let through (an entry of one beneath an entry of
/// the other).
fn stricter_readable(a: Option<&Vec<PathBuf>>, b: Option<&Vec<PathBuf>>) -> Option<Vec<PathBuf>> {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (Some(a), Some(b)) => {
            let mut out: Vec<PathBuf> = Vec::new();
            for (one, other) in [(a, b), (b, a)] {
                for p in one {
                    if other.iter().any(|o| p.starts_with(o)) && !out.contains(p) {
                        out.push(p.clone());
                    }
                }
            }
            Some(out)
        }
    }
}

/// The variables both pass and set (the project's value of a name both set), and the user's
/// exact names, which alone may pass a secret.
fn merge_env(project: &EnvConfig, user: &EnvConfig) -> EnvConfig {
    let mut pass = user.pass.clone();
    pass.extend(
        project
            .pass
            .iter()
            .filter(|p| !pass.contains(p))
            .cloned()
            .collect::<Vec<_>>(),
    );
    let mut set = user.set.clone();
    for (name, value) in &project.set {
        set.retain(|(n, _)| n != name);
        set.push((name.clone(), value.clone()));
    }
    EnvConfig {
        pass,
        set,
        exact: user.exact.clone(),
        secret: Vec::new(),
    }
}

#[cfg(test)]
mod readable_tests {
    use super::stricter_readable;
    use std::path::PathBuf;

    fn list(paths: &[&str]) -> Vec<PathBuf> {
        paths.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn readable_of_two_layers_is_what_both_let_through() {
        assert_eq!(stricter_readable(None, None), None);
        let user = list(&["/h/.cargo", "/h/.npm"]);
        assert_eq!(stricter_readable(None, Some(&user)), Some(user.clone()));
        // A project's list turns the allow-list on even when the user has none.
        let project = list(&["/h/.aws"]);
        assert_eq!(
            stricter_readable(Some(&project), None),
            Some(project.clone())
        );
        // With both, an entry only one names is dropped; one beneath the other's is kept.
        let project = list(&["/h/.aws", "/h/.cargo/registry", "/h/.npm"]);
        assert_eq!(
            stricter_readable(Some(&project), Some(&user)),
            Some(list(&["/h/.cargo/registry", "/h/.npm"]))
        );
        assert_eq!(
            stricter_readable(Some(&list(&[])), Some(&user)),
            Some(list(&[]))
        );
    }
}

#[cfg(test)]
mod max_processes_tests {
    use super::{SandboxConfig, DEFAULT_MAX_PROCESSES};

    fn with(n: Option<u32>) -> SandboxConfig {
        SandboxConfig {
            max_processes: n,
            ..SandboxConfig::default()
        }
    }

    fn merged(user: Option<u32>, project: Option<u32>) -> u32 {
        SandboxConfig::merge((true, &with(user)), (true, &with(project))).max_processes()
    }

    #[test]
    fn the_smaller_of_two_layers_wins_and_the_default_is_generous() {
        assert_eq!(with(None).max_processes(), DEFAULT_MAX_PROCESSES);
        assert_eq!(merged(Some(100), Some(50)), 50);
        assert_eq!(merged(Some(50), Some(100)), 50);
        assert_eq!(merged(None, Some(80)), 80);
        assert_eq!(merged(Some(80), None), 80);
        assert_eq!(merged(None, None), DEFAULT_MAX_PROCESSES);
        // A project above the user's value does not raise it (a managed file merges as the
        // user's over the rest: its value is a ceiling).
        assert_eq!(merged(Some(64), Some(100_000)), 64);
        // Only one file has the section: its value.
        assert_eq!(
            SandboxConfig::merge((false, &with(None)), (true, &with(Some(30)))).max_processes(),
            30
        );
    }

    #[test]
    fn an_untrusted_project_may_only_lower_it() {
        let mut lower = with(Some(100));
        assert!(lower.untrusted(&|p| p.display().to_string()).is_empty());
        assert_eq!(lower.max_processes, Some(100));
        let mut higher = with(Some(DEFAULT_MAX_PROCESSES + 1));
        let ignored = higher.untrusted(&|p| p.display().to_string());
        assert_eq!(higher.max_processes, None);
        assert!(
            ignored.iter().any(|i| i.contains("max_processes")),
            "{ignored:?}"
        );
        assert_eq!(
            SandboxConfig::merge((true, &with(None)), (true, &higher)).max_processes(),
            DEFAULT_MAX_PROCESSES
        );
    }
}

#[cfg(test)]
mod max_tmpdir_size_tests {
    use super::{human_size, shown_size, SandboxConfig, DEFAULT_MAX_TMPDIR_SIZE};

    fn with(n: Option<u64>) -> SandboxConfig {
        SandboxConfig {
            max_tmpdir_size: n,
            ..SandboxConfig::default()
        }
    }

    fn merged(user: Option<u64>, project: Option<u64>) -> u64 {
        SandboxConfig::merge((true, &with(user)), (true, &with(project))).max_tmpdir_size()
    }

    #[test]
    fn the_smaller_of_two_layers_wins_and_an_untrusted_project_may_only_lower_it() {
        assert_eq!(with(None).max_tmpdir_size(), DEFAULT_MAX_TMPDIR_SIZE);
        assert_eq!(merged(Some(64 << 20), Some(32 << 20)), 32 << 20);
        assert_eq!(merged(Some(32 << 20), Some(64 << 20)), 32 << 20);
        assert_eq!(merged(None, Some(8 << 20)), 8 << 20);
        assert_eq!(merged(Some(8 << 20), None), 8 << 20);
        assert_eq!(merged(None, None), DEFAULT_MAX_TMPDIR_SIZE);
        let mut lower = with(Some(256 << 20));
        assert!(lower.untrusted(&|p| p.display().to_string()).is_empty());
        assert_eq!(lower.max_tmpdir_size, Some(256 << 20));
        let mut higher = with(Some(4 << 30));
        let ignored = higher.untrusted(&|p| p.display().to_string());
        assert_eq!(higher.max_tmpdir_size, None);
        assert!(
            ignored
                .iter()
                .any(|i| i.contains("max_tmpdir_size") && i.contains("4 GiB")),
            "{ignored:?}"
        );
    }

    #[test]
    fn sizes_are_shown_in_the_files_words_and_for_people() {
        assert_eq!(shown_size(1 << 30), "1G");
        assert_eq!(shown_size(1536 << 20), "1536M");
        assert_eq!(shown_size(1_000_000), "1000000");
        assert_eq!(human_size(1 << 30), "1 GiB");
        assert_eq!(human_size(1536 << 20), "1.5 GiB");
        assert_eq!(human_size(4 << 20), "4 MiB");
        assert_eq!(human_size(512), "512 bytes");
    }
}
