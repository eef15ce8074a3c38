//! The conformance kit's files: requirements (TOML, one file per area, several requirements
//! each) and the manifests they run under, read from a folder or from the copy built into the
//! binary. Parses each step line into a [`Step`]; the format is `tests/conformance/README.md`.
//!
//! A file's requirements are about one [`Protocol`]: pod protocol v1 (`docs/protocol.md`, the
//! default) or, for a file that says `protocol = "acp"`, the Agent Client Protocol as
//! `docs/acp.md` describes `pod acp`. ACP is framed in NDJSON only, so its requirements run in
//! that framing alone.
//!
//! Must not touch: processes or matching (`runner`, `matcher`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::matcher::Json;

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
    (
        "framing.toml",
        include_str!("../../tests/conformance/requirements/framing.toml"),
    ),
    (
        "acp-lifecycle.toml",
        include_str!("../../tests/conformance/requirements/acp-lifecycle.toml"),
    ),
    (
        "acp-permissions.toml",
        include_str!("../../tests/conformance/requirements/acp-permissions.toml"),
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
    (
        "no-timeout.toml",
        include_str!("../../tests/conformance/manifests/no-timeout.toml"),
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
    #[error(
        "{id}: framing must be \"ndjson\" or \"headers\" (or left out for both), not {framing:?}"
    )]
    Framing { id: String, framing: String },
    #[error("requirement id {0} appears twice")]
    Duplicate(String),
    #[error("{file}: protocol must be \"pod\" or \"acp\" (or left out for pod), not {protocol:?}")]
    Protocol { file: String, protocol: String },
    #[error(
        "{id}: an ACP requirement runs in NDJSON only (ACP has no header framing), not {framing:?}"
    )]
    AcpFraming { id: String, framing: String },
}

/// The protocol a requirement speaks: which command it tests and how the runner says hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// pod protocol v1, `pod serve` (`docs/protocol.md`).
    Pod,
    /// The Agent Client Protocol v1, `pod acp` (`docs/acp.md`).
    Acp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Pod => "pod",
            Protocol::Acp => "acp",
        }
    }

    /// The `initialize` request the runner sends once before the first requirement, to tell a
    /// command that cannot start from one that answers.
    pub fn hello(self) -> &'static [u8] {
        match self {
            Protocol::Pod => {
                br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#
            }
            Protocol::Acp => {
                br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#
            }
        }
    }
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

/// How messages are delimited on the wire (`docs/protocol.md`, "Transport").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    /// One JSON text per line.
    Ndjson,
    /// `Content-Length: N\r\n\r\n` then N bytes.
    Headers,
}

impl Framing {
    pub const BOTH: [Framing; 2] = [Framing::Ndjson, Framing::Headers];

    pub fn as_str(self) -> &'static str {
        match self {
            Framing::Ndjson => "ndjson",
            Framing::Headers => "headers",
        }
    }

    /// `bytes` as one message in this framing.
    pub fn frame(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Framing::Ndjson => [bytes, b"\n"].concat(),
            Framing::Headers => [
                format!("Content-Length: {}\r\n\r\n", bytes.len()).as_bytes(),
                bytes,
            ]
            .concat(),
        }
    }
}

/// One step of a transcript. Consecutive `send`, `send-bytes` and `raw` steps go out in one
/// write, as a client that pipelines its messages would send them.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `send TEXT`: write TEXT (placeholders filled, raw line breaks turned into spaces) as one
    /// message in the run's framing.
    Send(String),
    /// `send-bytes TEXT`: TEXT with placeholders filled and then the escapes `\xHH`, `\n`, `\r`,
    /// `\t`, `\\` turned into bytes (so it may be any bytes, not UTF-8), as one message in the
    /// run's framing.
    SendBytes(String),
    /// `raw TEXT`: the bytes of TEXT as in `send-bytes`, written with no framing at all.
    Raw(String),
    /// `expect [@label] JSON`: the first not-yet-matched message matching JSON, within the
    /// timeout; `@label` names it for `order` and placeholders.
    Expect {
        label: Option<String>,
        pattern: String,
    },
    /// `none [MS] [JSON]`: no not-yet-matched message matches JSON (without JSON: no
    /// not-yet-matched message at all, object or array), for MS milliseconds (500).
    None {
        window_ms: u64,
        pattern: Option<String>,
    },
    /// `order @a @b ...`: the labelled messages arrived in this order.
    Order(Vec<String>),
    /// `sleep MS`.
    Sleep(u64),
    /// `reply @label JSON`: answer the request the pod sent (the message `@label`) with the
    /// result JSON, its id echoed exactly; sent like a `send`.
    Reply { label: String, result: String },
    /// `reply-error @label JSON`: answer the request `@label` with the error object JSON.
    ReplyError { label: String, error: String },
    /// `exists PATH`: the file PATH (relative to the workspace) exists.
    Exists(String),
    /// `absent PATH`: nothing exists at PATH (relative to the workspace).
    Absent(String),
    /// `close`: close the pod's stdin.
    Close,
    /// `exit CODE [MS]`: the process exits with CODE within MS milliseconds (2000).
    Exit { code: i32, within_ms: u64 },
}

/// One requirement, ready to run.
#[derive(Debug, Clone)]
pub struct Requirement {
    pub id: String,
    pub protocol: Protocol,
    pub tier: Tier,
    pub title: String,
    /// The spec sentence it checks, quoted.
    pub spec: String,
    pub source: String,
    /// The manifest's file name and its text.
    pub manifest: (String, String),
    /// The framing it is limited to (its bytes only make sense in one), or `None` for both.
    pub only: Option<Framing>,
    pub steps: Vec<Step>,
}

impl Requirement {
    /// The framings, of `wanted`, this requirement runs in.
    pub fn framings(&self, wanted: &[Framing]) -> Vec<Framing> {
        wanted
            .iter()
            .copied()
            .filter(|f| self.only.is_none_or(|only| only == *f))
            .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// The protocol of every requirement in the file: `pod` (the default) or `acp`.
    #[serde(default)]
    protocol: Option<String>,
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
    #[serde(default)]
    framing: Option<String>,
    steps: Vec<String>,
}

/// The kit: every requirement of both protocols, in file order (rpc, lifecycle, events,
/// permissions, framing, then the ACP files for the embedded copy; file-name order for a
/// folder).
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
        let protocol = match file.protocol.as_deref() {
            None | Some("pod") => Protocol::Pod,
            Some("acp") => Protocol::Acp,
            Some(other) => {
                return Err(KitError::Protocol {
                    file: name.clone(),
                    protocol: other.to_string(),
                })
            }
        };
        for raw in file.requirement {
            if out.iter().any(|r| r.id == raw.id) {
                return Err(KitError::Duplicate(raw.id));
            }
            out.push(requirement(raw, protocol, &manifests)?);
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
    protocol: Protocol,
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
    let only = match raw.framing.as_deref() {
        None => None,
        Some("ndjson") => Some(Framing::Ndjson),
        Some("headers") => Some(Framing::Headers),
        Some(other) => {
            return Err(KitError::Framing {
                id: raw.id,
                framing: other.to_string(),
            })
        }
    };
    let only = match (protocol, only) {
        (Protocol::Pod, only) => only,
        (Protocol::Acp, None | Some(Framing::Ndjson)) => Some(Framing::Ndjson),
        (Protocol::Acp, Some(Framing::Headers)) => {
            return Err(KitError::AcpFraming {
                id: raw.id,
                framing: "headers".into(),
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
        protocol,
        tier,
        title: raw.title,
        spec: raw.spec,
        source: raw.source,
        manifest,
        only,
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
        "send-bytes" | "raw" if !rest.is_empty() => {
            // Placeholders may hold any text; the escapes around them must be well formed.
            unescape(rest)?;
            Ok(if verb == "raw" {
                Step::Raw(rest.to_string())
            } else {
                Step::SendBytes(rest.to_string())
            })
        }
        "expect" => {
            let (label, pattern) = match rest.strip_prefix('@') {
                Some(labelled) => {
                    let (label, pattern) = labelled
                        .split_once(char::is_whitespace)
                        .ok_or("expect @label needs a JSON pattern after the label")?;
                    if RESERVED.contains(&label) {
                        return Err(format!("@{label} is a reserved placeholder name"));
                    }
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
            let (first, after) = rest
                .split_once(char::is_whitespace)
                .map(|(f, a)| (f, a.trim()))
                .unwrap_or((rest, ""));
            let (window_ms, pattern) =
                if !first.is_empty() && first.chars().all(|c| c.is_ascii_digit()) {
                    (number(first, "the window")?, after)
                } else {
                    (500, rest)
                };
            let pattern = if pattern.is_empty() {
                None
            } else {
                check_pattern(pattern)?;
                // `{}` matches every object but no array: it reads as "nothing" and is not.
                if Json::parse(pattern).is_ok_and(|p| p == Json::Object(Default::default())) {
                    return Err(
                        "`none {}` lets arrays (batch answers) through: write `none` \
                                for no message at all, or `none \"<object>\"`"
                            .into(),
                    );
                }
                Some(pattern.to_string())
            };
            Ok(Step::None { window_ms, pattern })
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
        "reply" | "reply-error" => {
            let (label, json) = rest
                .strip_prefix('@')
                .and_then(|r| r.split_once(char::is_whitespace))
                .map(|(l, j)| (l.to_string(), j.trim().replace(['\r', '\n'], " ")))
                .ok_or(format!("{verb} needs @label and then JSON"))?;
            check_pattern(&json)?;
            Ok(if verb == "reply" {
                Step::Reply {
                    label,
                    result: json,
                }
            } else {
                Step::ReplyError { label, error: json }
            })
        }
        "exists" | "absent" => {
            let path = workspace_path(rest)?;
            Ok(if verb == "exists" {
                Step::Exists(path)
            } else {
                Step::Absent(path)
            })
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

/// Placeholder names the runner fills itself, so no label may take them: `{{workspace}}` (the
/// workspace folder, absolute) and `{{repeat N TEXT}}`.
pub const RESERVED: [&str; 2] = ["workspace", "repeat"];

/// The path of an `exists` / `absent` step: relative, inside the workspace (no `..`).
fn workspace_path(text: &str) -> Result<String, String> {
    use std::path::Component;
    let path = Path::new(text);
    if text.is_empty()
        || !path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "the path must be relative to the workspace and stay inside it (no `..`), not {text:?}"
        ));
    }
    Ok(text.to_string())
}

/// A pattern must be JSON once its placeholders are replaced by a dummy value: string content
/// (a placeholder inside quotes) or a number (one standing for a whole value, such as an id).
fn check_pattern(pattern: &str) -> Result<(), String> {
    let probe = |dummy: Json| {
        super::matcher::fill(pattern, &|_| Some(dummy.clone())).map_err(|e| e.to_string())
    };
    let as_text = probe(Json::String("x".into()))?;
    let as_number = probe(Json::parse("0").map_err(|e| e.to_string())?)?;
    match Json::parse(&as_text) {
        Ok(_) => Ok(()),
        Err(_) if Json::parse(&as_number).is_ok() => Ok(()),
        Err(e) => Err(format!("pattern is not JSON ({e}): {pattern}")),
    }
}

/// The bytes of a `send-bytes` / `raw` text: `\xHH` is the byte HH, `\n`, `\r`, `\t` and `\\`
/// what they are in JSON; everything else is its UTF-8.
pub fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('t') => out.push(b'\t'),
            Some('\\') => out.push(b'\\'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                let byte = u8::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 2)
                    .ok_or(format!("\\x needs two hex digits, not {hex:?}"))?;
                out.push(byte);
            }
            other => {
                return Err(format!(
                    "unknown escape \\{} (known: \\xHH \\n \\r \\t \\\\)",
                    other.map(String::from).unwrap_or_default()
                ))
            }
        }
    }
    Ok(out)
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
    fn every_sentence_quoted_from_docs_is_in_docs() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let flat = |text: &str| {
            text.replace("**", "")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        for requirement in load(None).unwrap() {
            let Some(file) = requirement
                .source
                .strip_prefix("docs/")
                .and_then(|s| s.split(',').next())
            else {
                continue;
            };
            let doc = flat(&std::fs::read_to_string(root.join("docs").join(file)).unwrap());
            for part in requirement.spec.split("[...]") {
                let part = flat(part);
                assert!(
                    doc.contains(&part),
                    "{}: docs/{file} does not say {part:?}",
                    requirement.id
                );
            }
        }
    }

    #[test]
    fn the_embedded_kit_loads() {
        let kit = load(None).unwrap();
        assert!(kit.len() >= 20, "{}", kit.len());
        let acp: Vec<&Requirement> = kit.iter().filter(|r| r.protocol == Protocol::Acp).collect();
        assert!(acp.len() >= 10, "{}", acp.len());
        assert!(acp
            .iter()
            .all(|r| r.id.starts_with("ACP-") && r.framings(&Framing::BOTH) == [Framing::Ndjson]));
        assert!(kit
            .iter()
            .filter(|r| r.protocol == Protocol::Pod)
            .all(|r| r.id.starts_with("POD-")));
    }

    /// A kit folder holding one requirements file with `text` (and `example.toml`).
    fn kit_with(text: &str) -> Result<Vec<Requirement>, KitError> {
        let dir = std::env::temp_dir().join(format!("pod-kit-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(dir.join("requirements")).unwrap();
        std::fs::create_dir_all(dir.join("manifests")).unwrap();
        std::fs::write(dir.join("requirements/a.toml"), text).unwrap();
        std::fs::write(dir.join("manifests/example.toml"), "").unwrap();
        let kit = load(Some(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        kit
    }

    #[test]
    fn a_file_names_its_protocol_and_acp_is_ndjson_only() {
        let one = |head: &str, framing: &str| {
            format!(
                "{head}\n[[requirement]]\nid = \"X-1\"\ntier = \"MUST\"\ntitle = \"t\"\n\
                 spec = \"s\"\nsource = \"s\"\nmanifest = \"example.toml\"\n{framing}\n\
                 steps = [\"sleep 1\"]\n"
            )
        };
        let kit = kit_with(&one("", "")).unwrap();
        assert_eq!(kit[0].protocol, Protocol::Pod);
        assert_eq!(kit[0].framings(&Framing::BOTH), Framing::BOTH);
        let kit = kit_with(&one("protocol = \"acp\"", "")).unwrap();
        assert_eq!(kit[0].protocol, Protocol::Acp);
        assert_eq!(kit[0].framings(&Framing::BOTH), [Framing::Ndjson]);
        assert!(matches!(
            kit_with(&one("protocol = \"acp\"", "framing = \"headers\"")),
            Err(KitError::AcpFraming { .. })
        ));
        assert!(matches!(
            kit_with(&one("protocol = \"lsp\"", "")),
            Err(KitError::Protocol { .. })
        ));
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
                pattern: Some(r#"{"id": "<any>"}"#.into())
            }
        );
        assert_eq!(
            parse_step("none 300").unwrap(),
            Step::None {
                window_ms: 300,
                pattern: None
            }
        );
        assert_eq!(
            parse_step("none").unwrap(),
            Step::None {
                window_ms: 500,
                pattern: None
            }
        );
        assert_eq!(
            parse_step(r"raw \r\n  ").unwrap(),
            Step::Raw(r"\r\n".into())
        );
        assert!(parse_step("none 500 {}").is_err());
        assert!(parse_step(r"send-bytes \xZZ").is_err());
        assert!(parse_step(r"raw \q").is_err());
        assert_eq!(
            parse_step("exit 0 1000").unwrap(),
            Step::Exit {
                code: 0,
                within_ms: 1000
            }
        );
        assert_eq!(
            parse_step(r#"reply @ask {"outcome": {"outcome": "cancelled"}}"#).unwrap(),
            Step::Reply {
                label: "ask".into(),
                result: r#"{"outcome": {"outcome": "cancelled"}}"#.into()
            }
        );
        assert_eq!(
            parse_step(r#"reply-error @ask {"code": -32603, "message": "no"}"#).unwrap(),
            Step::ReplyError {
                label: "ask".into(),
                error: r#"{"code": -32603, "message": "no"}"#.into()
            }
        );
        assert!(parse_step(r#"reply {"outcome": {}}"#).is_err());
        assert!(parse_step("reply @ask {nope").is_err());
        assert_eq!(
            parse_step("exists sub/made.txt").unwrap(),
            Step::Exists("sub/made.txt".into())
        );
        assert_eq!(parse_step("absent x").unwrap(), Step::Absent("x".into()));
        assert!(parse_step("exists ../outside").is_err());
        assert!(parse_step("absent /etc/passwd").is_err());
        assert!(parse_step("exists").is_err());
        assert!(parse_step(r#"expect @workspace {"id": 1}"#).is_err());
        assert!(parse_step("expect {nope").is_err());
        assert!(parse_step("order @a").is_err());
        assert!(parse_step("frobnicate").is_err());
    }

    #[test]
    fn escapes_give_any_bytes() {
        assert_eq!(
            unescape(r#"{"s":"\xff\x00"}\r\n\\é"#).unwrap(),
            b"{\"s\":\"\xff\x00\"}\r\n\\\xc3\xa9".to_vec()
        );
        assert!(unescape(r"\x4").is_err());
    }
}
