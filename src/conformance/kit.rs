//! The conformance kit's files: requirements (TOML, one file per area, several requirements
//! each) and the manifests they run under, read from a folder or from the copy built into the
//! binary. Parses each step line into a [`Step`]; the format is `tests/conformance/README.md`.
//!
//! Must not touch: processes or matching (`runner`, `matcher`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The kit built into the binary: `(file name, text)` of every requirements file and manifest
/// under `tests/conformance/` (a unit test checks this list against the folder).
pub const EMBEDDED_REQUIREMENTS: &[(&str, &str)] = &[
    (
        "rpc.toml",
        include_str!("../../tests/conformance/requirements/rpc.toml"),
    ),
    (
        "lifecycle.toml",
        include_str!("../../tests/conformance/requirements/lifecycle.toml"),
    ),
    (
        "events.toml",
        include_str!("../../tests/conformance/requirements/events.toml"),
    ),
    (
        "permissions.toml",
        include_str!("../../tests/conformance/requirements/permissions.toml"),
    ),
];

pub const EMBEDDED_MANIFESTS: &[(&str, &str)] = &[
    (
        "example.toml",
        include_str!("../../tests/conformance/manifests/example.toml"),
    ),
    (
        "short-timeout.toml",
        include_str!("../../tests/conformance/manifests/short-timeout.toml"),
    ),
];

#[derive(Debug, thiserror::Error)]
pub enum KitError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Toml { file: String, message: String },
    #[error("{id}: step {step}: {message}")]
    Step {
        id: String,
        step: usize,
        message: String,
    },
    #[error("{id}: unknown manifest {manifest:?} (not in manifests/)")]
    Manifest { id: String, manifest: String },
    #[error("{id}: tier must be MUST or SHOULD, not {tier:?}")]
    Tier { id: String, tier: String },
    #[error("requirement id {0} appears twice")]
    Duplicate(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Must,
    Should,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Must => "MUST",
            Tier::Should => "SHOULD",
        }
    }
}

/// One step of a transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `send TEXT`: write TEXT (placeholders filled, raw line breaks turned into spaces) as one
    /// line.
    Send(String),
    /// `expect [@label] JSON`: the first not-yet-matched message matching JSON, within the
    /// timeout; `@label` names it for `order` and placeholders.
    Expect {
        label: Option<String>,
        pattern: String,
    },
    /// `none [MS] JSON`: no not-yet-matched message matches JSON, for MS milliseconds (500).
    None { window_ms: u64, pattern: String },
    /// `order @a @b ...`: the labelled messages arrived in this order.
    Order(Vec<String>),
    /// `sleep MS`.
    Sleep(u64),
    /// `close`: close the pod's stdin.
    Close,
    /// `exit CODE [MS]`: the process exits with CODE within MS milliseconds (2000).
    Exit { code: i32, within_ms: u64 },
}

/// One requirement, ready to run.
#[derive(Debug, Clone)]
pub struct Requirement {
    pub id: String,
    pub tier: Tier,
    pub title: String,
    /// The spec sentence it checks, quoted.
    pub spec: String,
    pub source: String,
    /// The manifest's file name and its text.
    pub manifest: (String, String),
    pub steps: Vec<Step>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    requirement: Vec<RawRequirement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequirement {
    id: String,
    tier: String,
    title: String,
    spec: String,
    source: String,
    manifest: String,
    steps: Vec<String>,
}

/// The kit: every requirement, in file order (rpc, lifecycle, events, permissions for the
/// embedded copy; file-name order for a folder).
pub fn load(dir: Option<&Path>) -> Result<Vec<Requirement>, KitError> {
    let (files, manifests) = match dir {
        None => (owned(EMBEDDED_REQUIREMENTS), owned(EMBEDDED_MANIFESTS)),
        Some(dir) => (
            read_dir(&dir.join("requirements"))?,
            read_dir(&dir.join("manifests"))?,
        ),
    };
    let mut out: Vec<Requirement> = Vec::new();
    for (name, text) in &files {
        let file: File = toml::from_str(text).map_err(|e| KitError::Toml {
            file: name.clone(),
            message: e.to_string(),
        })?;
        for raw in file.requirement {
            if out.iter().any(|r| r.id == raw.id) {
                return Err(KitError::Duplicate(raw.id));
            }
            out.push(requirement(raw, &manifests)?);
        }
    }
    Ok(out)
}

fn owned(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// Every `*.toml` file of a folder, sorted by name.
fn read_dir(dir: &Path) -> Result<Vec<(String, String)>, KitError> {
    let io = |source| KitError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|source| KitError::Read {
                path: path.clone(),
                source,
            })?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok((name, text))
        })
        .collect()
}

fn requirement(
    raw: RawRequirement,
    manifests: &[(String, String)],
) -> Result<Requirement, KitError> {
    let tier = match raw.tier.as_str() {
        "MUST" => Tier::Must,
        "SHOULD" => Tier::Should,
        _ => {
            return Err(KitError::Tier {
                id: raw.id,
                tier: raw.tier,
            })
        }
    };
    let manifest = manifests
        .iter()
        .find(|(name, _)| *name == raw.manifest)
        .cloned()
        .ok_or_else(|| KitError::Manifest {
            id: raw.id.clone(),
            manifest: raw.manifest.clone(),
        })?;
    let steps = raw
        .steps
        .iter()
        .enumerate()
        .map(|(i, line)| {
            parse_step(line).map_err(|message| KitError::Step {
                id: raw.id.clone(),
                step: i + 1,
                message,
            })
        })
        .collect::<Result<Vec<Step>, KitError>>()?;
    Ok(Requirement {
        id: raw.id,
        tier,
        title: raw.title,
        spec: raw.spec,
        source: raw.source,
        manifest,
        steps,
    })
}

/// Parses one step line (see [`Step`]).
pub fn parse_step(line: &str) -> Result<Step, String> {
    let line = line.trim();
    let (verb, rest) = line
        .split_once(char::is_whitespace)
        .map(|(v, r)| (v, r.trim()))
        .unwrap_or((line, ""));
    let number = |text: &str, what: &str| {
        text.parse::<u64>()
            .map_err(|_| format!("{what} must be a whole number, not {text:?}"))
    };
    match verb {
        // A message written over several lines of the kit goes out as one line.
        "send" if !rest.is_empty() => Ok(Step::Send(rest.replace(['\r', '\n'], " "))),
        "expect" => {
            let (label, pattern) = match rest.strip_prefix('@') {
                Some(labelled) => {
                    let (label, pattern) = labelled
                        .split_once(char::is_whitespace)
                        .ok_or("expect @label needs a JSON pattern after the label")?;
                    (Some(label.to_string()), pattern.trim())
                }
                None => (None, rest),
            };
            check_pattern(pattern)?;
            Ok(Step::Expect {
                label,
                pattern: pattern.to_string(),
            })
        }
        "none" => {
            let (window_ms, pattern) = match rest.split_once(char::is_whitespace) {
                Some((first, pattern)) if first.chars().all(|c| c.is_ascii_digit()) => {
                    (number(first, "the window")?, pattern.trim())
                }
                _ => (500, rest),
            };
            check_pattern(pattern)?;
            Ok(Step::None {
                window_ms,
                pattern: pattern.to_string(),
            })
        }
        "order" => {
            let labels: Vec<String> = rest
                .split_whitespace()
                .map(|l| {
                    l.strip_prefix('@')
                        .map(String::from)
                        .ok_or(format!("order takes @labels, not {l:?}"))
                })
                .collect::<Result<_, _>>()?;
            if labels.len() < 2 {
                return Err("order needs at least two @labels".into());
            }
            Ok(Step::Order(labels))
        }
        "sleep" => Ok(Step::Sleep(number(rest, "sleep")?)),
        "close" if rest.is_empty() => Ok(Step::Close),
        "exit" => {
            let mut words = rest.split_whitespace();
            let code = words
                .next()
                .ok_or("exit needs a code")?
                .parse::<i32>()
                .map_err(|_| "exit code must be a number".to_string())?;
            let within_ms = match words.next() {
                Some(ms) => number(ms, "the exit wait")?,
                None => 2000,
            };
            Ok(Step::Exit { code, within_ms })
        }
        _ => Err(format!("unknown step {line:?}")),
    }
}

/// A pattern must be JSON once its placeholders are replaced by a dummy value.
fn check_pattern(pattern: &str) -> Result<(), String> {
    let probe = super::matcher::fill(pattern, &|_| Some(serde_json::json!("x")))
        .map_err(|e| e.to_string())?;
    serde_json::from_str::<serde_json::Value>(&probe)
        .map(|_| ())
        .map_err(|e| format!("pattern is not JSON ({e}): {pattern}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_kit_is_the_folder() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
        let folder = read_dir(&root.join("requirements")).unwrap();
        let mut embedded = owned(EMBEDDED_REQUIREMENTS);
        embedded.sort();
        assert_eq!(folder, embedded, "list every requirements file in kit.rs");
        let folder = read_dir(&root.join("manifests")).unwrap();
        let mut embedded = owned(EMBEDDED_MANIFESTS);
        embedded.sort();
        assert_eq!(folder, embedded, "list every manifest in kit.rs");
    }

    #[test]
    fn the_embedded_kit_loads() {
        let kit = load(None).unwrap();
        assert!(kit.len() >= 20, "{}", kit.len());
    }

    #[test]
    fn steps_parse() {
        assert_eq!(
            parse_step(r#"expect @r {"id": 1}"#).unwrap(),
            Step::Expect {
                label: Some("r".into()),
                pattern: r#"{"id": 1}"#.into()
            }
        );
        assert_eq!(
            parse_step(r#"none 300 {"id": "<any>"}"#).unwrap(),
            Step::None {
                window_ms: 300,
                pattern: r#"{"id": "<any>"}"#.into()
            }
        );
        assert_eq!(
            parse_step("exit 0 1000").unwrap(),
            Step::Exit {
                code: 0,
                within_ms: 1000
            }
        );
        assert!(parse_step("expect {nope").is_err());
        assert!(parse_step("order @a").is_err());
        assert!(parse_step("frobnicate").is_err());
    }
}
