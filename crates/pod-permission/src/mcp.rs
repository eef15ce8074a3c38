//! MCP tools in the rule language: their names (`mcp__SERVER__TOOL`), the subjects of a call,
//! and the default a tool's annotations select (docs/permissions.md, "MCP tools").
//!
//! Owns: which names are valid (for every provider: `[A-Za-z0-9_-]`, at most 64 characters) and
//! how a name splits into server and tool; how a call's arguments become subjects: one line of
//! `key=value` pairs in key order, plus one path subject per argument that names a file (by its
//! name, or a `file://` value), normalized like `read`'s against the server's working folder;
//! what the rules of `read` and `file_write` add for those paths; which default a server's
//! `default_action` table gives a tool by its annotations.
//!
//! The subjects depend only on the call's input, the tool's annotations and the manifest, never
//! on the running server, so `pod explain` decides a call exactly as the running pod does
//! without starting anything. What cannot be rendered faithfully is opaque (never allowed by a
//! default or a rule).
//!
//! Must not touch: the servers, the wire.

use std::path::{Path, PathBuf};

use super::{path, sorted_json, Problem, Protected, Rules, Subject};
pub use crate::builtin::MCP_PREFIX;
use pod_protocol::{Action, SubjectDecision, ToolAnnotations};

/// Between the server's name and the tool's: `mcp__SERVER__TOOL`.
pub const SEPARATOR: &str = "__";

/// The longest tool name every provider accepts (Anthropic and OpenAI:
/// `^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_NAME_LEN: usize = 64;

/// The name the model and the rules know a server's tool by.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{MCP_PREFIX}{server}{SEPARATOR}{tool}")
}

/// The server and tool parts of an MCP tool's name (the prefix in any case), or `None` when
/// `name` is not one.
pub fn split(name: &str) -> Option<(&str, &str)> {
    let prefix = name.get(..MCP_PREFIX.len())?;
    if !prefix.eq_ignore_ascii_case(MCP_PREFIX) {
        return None;
    }
    name.get(MCP_PREFIX.len()..)?.split_once(SEPARATOR)
}

fn name_chars_ok(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Why `name` cannot name a server (`[mcp.servers.NAME]`), if it cannot. A server's name holds
/// no `__` and neither starts nor ends with `_`, so `mcp__NAME__TOOL` splits one way only.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let longest = MAX_NAME_LEN - MCP_PREFIX.len() - 2 * SEPARATOR.len();
    if name.is_empty() {
        Err("the server's name is empty".into())
    } else if !name_chars_ok(name) {
        Err(format!(
            "\"{name}\": a server's name may hold only ASCII letters, digits, `_` and `-` (it \
             becomes part of tool names, which providers restrict to those)"
        ))
    } else if name.contains(SEPARATOR) || name.starts_with('_') || name.ends_with('_') {
        Err(format!(
            "\"{name}\": a server's name may not hold `__` nor start or end with `_` (tools are \
             named mcp__{name}__TOOL, which must split one way only)"
        ))
    } else if name.len() > longest {
        Err(format!(
            "\"{name}\" is {} characters long; at most {longest} leave room for a tool name \
             within the {MAX_NAME_LEN} characters providers accept",
            name.len()
        ))
    } else {
        Ok(())
    }
}

/// The full name of `server`'s tool `tool`, or why providers would not accept it.
pub fn check_tool_name(server: &str, tool: &str) -> Result<String, String> {
    let full = tool_name(server, tool);
    if tool.is_empty() {
        Err("a tool has an empty name".into())
    } else if !name_chars_ok(tool) {
        Err(format!(
            "tool \"{}\": its name holds characters providers do not accept in tool names \
             (only ASCII letters, digits, `_` and `-`)",
            tool.escape_debug()
        ))
    } else if full.len() > MAX_NAME_LEN {
        Err(format!(
            "tool \"{tool}\": {full} is {} characters long, more than the {MAX_NAME_LEN} \
             providers accept",
            full.len()
        ))
    } else {
        Ok(full)
    }
}

/// What a tool's annotations say it does to its environment (MCP's defaults for absent hints:
/// not read-only, destructive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// `readOnlyHint: true`.
    ReadOnly,
    /// `readOnlyHint` false or absent, `destructiveHint: false`: it only adds.
    Additive,
    /// Anything else, no annotations included.
    Destructive,
}

impl Effect {
    pub fn of(annotations: Option<&ToolAnnotations>) -> Effect {
        match annotations {
            Some(a) if a.read_only_hint == Some(true) => Effect::ReadOnly,
            Some(a) if a.destructive_hint == Some(false) => Effect::Additive,
            _ => Effect::Destructive,
        }
    }

    /// The key of a server's `default_action` table for this effect.
    pub fn key(self) -> &'static str {
        match self {
            Effect::ReadOnly => "read_only",
            Effect::Additive => "additive",
            Effect::Destructive => "destructive",
        }
    }

    /// The effect in words, for explanations.
    fn words(self) -> &'static str {
        match self {
            Effect::ReadOnly => "marked read-only (readOnlyHint)",
            Effect::Additive => "marked additive (destructiveHint: false)",
            Effect::Destructive => "not marked read-only or additive",
        }
    }
}

/// A server's `default_action` table: the default for its tools' subjects by their
/// annotations; an absent entry leaves `[permissions] default_action`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnnotationDefaults {
    pub read_only: Option<Action>,
    pub additive: Option<Action>,
    pub destructive: Option<Action>,
}

impl AnnotationDefaults {
    pub fn get(&self, effect: Effect) -> Option<Action> {
        match effect {
            Effect::ReadOnly => self.read_only,
            Effect::Additive => self.additive,
            Effect::Destructive => self.destructive,
        }
    }
}

/// What the permission layer knows of one configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerRules {
    pub name: String,
    /// The server's working folder (absolute): relative paths in its tools' arguments start
    /// here, as the server itself would read them.
    pub cwd: PathBuf,
    pub defaults: AnnotationDefaults,
}

/// The subjects of one MCP call, and the paths it names (as rules see paths).
pub(super) struct McpCall {
    pub subjects: Vec<Subject>,
    pub paths: Vec<String>,
}

/// Argument names that name a file: the whole name, or its last word (`file_path`,
/// `sourcePath`, `output-dir`).
const PATH_WORDS: [&str; 15] = [
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filenames",
    "filepath",
    "filepaths",
    "dir",
    "dirs",
    "directory",
    "directories",
    "folder",
    "folders",
    "cwd",
];

/// Whole argument names that name a file besides those of `PATH_WORDS`.
const PATH_NAMES: [&str; 6] = ["root", "source", "destination", "src", "dst", "dest"];

/// Whether an argument called `key` names a file: the whole name is one of `PATH_NAMES` or
/// `PATH_WORDS`, or its last word is one of `PATH_WORDS`, or its last word is `name(s)`
/// after one of them (`file_name`, `dirName`). Words are split at `_`, `-`, `.` and where a
/// capital follows a lower-case letter or digit (`sourcePath`, `SOURCE_FILE`, `outputPATH`).
pub fn names_a_path(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    if PATH_NAMES.contains(&lower.as_str()) || PATH_WORDS.contains(&lower.as_str()) {
        return true;
    }
    let words = words(key);
    let is_word = |w: Option<&String>| w.is_some_and(|w| PATH_WORDS.contains(&w.as_str()));
    match words.as_slice() {
        [.., before, last] if matches!(last.as_str(), "name" | "names") => is_word(Some(before)),
        _ => is_word(words.last()),
    }
}

/// The words of an argument name, lower-cased (see [`names_a_path`]).
fn words(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous: Option<char> = None;
    for c in key.chars() {
        let boundary = matches!(c, '_' | '-' | '.');
        let camel = c.is_ascii_uppercase()
            && previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit());
        if (boundary || camel) && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if !boundary {
            word.push(c.to_ascii_lowercase());
        }
        previous = Some(c);
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Whether an argument name renders as itself in a subject: ASCII letters, digits, `_`, `-`, `.`.
fn key_renders(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A value as a subject shows it: a string bare when it reads as nothing else (no space, quote,
/// backslash or control character, not a number, `true`, `false`, `null`, array or object),
/// else as a JSON string; anything else as JSON with object keys sorted. So a value can never
/// pass for a further `key=value` pair.
pub fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) if bare(s) => s.clone(),
        serde_json::Value::String(s) => serde_json::Value::String(s.clone()).to_string(),
        other => sorted_json(other),
    }
}

fn bare(s: &str) -> bool {
    !s.is_empty()
        && !s
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\\')
        && !s.starts_with(['[', '{'])
        && !matches!(s, "true" | "false" | "null")
        && serde_json::from_str::<serde_json::Number>(s).is_err()
}

/// The subjects of a call of MCP tool `tool` with `input`: the `key=value` line, one path
/// subject per file an argument names, and, when `server` has one for the tool's effect, the
/// default that applies to them.
pub(super) fn subjects(
    tool: &str,
    input: &serde_json::Value,
    effect: Effect,
    server: Option<&McpServerRules>,
    workspace: &Path,
) -> McpCall {
    let Some(object) = input.as_object() else {
        return McpCall {
            subjects: vec![Subject::new(
                tool,
                sorted_json(input),
                Some(Problem::Invalid(
                    "the input of an MCP tool must be a JSON object of arguments".into(),
                )),
            )],
            paths: Vec::new(),
        };
    };
    let cwd = server.map_or(workspace, |s| s.cwd.as_path());
    let mut found = Found::default();
    for (key, value) in object {
        walk(key, value, cwd, workspace, 0, &mut found);
    }

    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort();
    let mut line = Vec::with_capacity(keys.len());
    let mut unrenderable = Vec::new();
    for key in keys {
        if !key_renders(key) {
            unrenderable.push(key.as_str());
            continue;
        }
        let value = &object[key.as_str()];
        // A path argument shows as the path the rules see (normalized), when it is one.
        let shown = match (value, found.top_level.iter().find(|(k, _)| k == key)) {
            (serde_json::Value::String(_), Some((_, text))) => {
                value_text(&serde_json::Value::String(text.clone()))
            }
            _ => value_text(value),
        };
        line.push(format!("{key}={shown}"));
    }
    let problem = (!unrenderable.is_empty()).then(|| {
        Problem::Opaque(format!(
            "argument name {} cannot be shown as a key=value pair",
            unrenderable
                .iter()
                .map(|k| serde_json::Value::String((*k).to_string()).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    });
    let mut subjects = vec![Subject::new(tool, line.join(" "), problem)];
    subjects.extend(
        found
            .subjects
            .into_iter()
            .map(|(text, problem)| Subject::new(tool, text, problem)),
    );

    let default = server.and_then(|s| {
        s.defaults.get(effect).map(|action| {
            (
                action,
                format!(
                    "[mcp.servers.{}] default_action.{} = \"{action}\": the tool is {}",
                    s.name,
                    effect.key(),
                    effect.words()
                ),
            )
        })
    });
    if let Some(default) = default {
        for s in &mut subjects {
            s.default = Some(default.clone());
        }
    }
    McpCall {
        subjects,
        paths: found.paths,
    }
}

/// What a walk of the arguments found.
#[derive(Default)]
struct Found {
    /// `key=path` subjects (with a problem when the path cannot be read).
    subjects: Vec<(String, Option<Problem>)>,
    /// Clean path texts, for the rules of `read` and `file_write`.
    paths: Vec<String>,
    /// Top-level string arguments that are paths, and their first path text.
    top_level: Vec<(String, String)>,
}

/// Arguments nest at most this deep before the rest is opaque (serde_json itself stops at 128).
const MAX_DEPTH: usize = 32;

/// Finds the files named under argument `key` (at any depth: a nested key that names a path,
/// a `file://` string anywhere).
fn walk(
    key: &str,
    value: &serde_json::Value,
    cwd: &Path,
    workspace: &Path,
    depth: usize,
    found: &mut Found,
) {
    use serde_json::Value;
    let is_path = names_a_path(key);
    if depth > MAX_DEPTH {
        found.subjects.push((
            format!("{key}={}", value_text(value)),
            Some(Problem::Opaque(format!(
                "arguments nested more than {MAX_DEPTH} levels deep are not read"
            ))),
        ));
        return;
    }
    match value {
        Value::String(s) if is_path || looks_like_file_uri(s) => {
            match path_texts(s, cwd, workspace) {
                Ok(PathTexts { texts, caveat }) => {
                    if depth == 0 {
                        if let Some(first) = texts.first() {
                            found.top_level.push((key.to_string(), first.clone()));
                        }
                    }
                    for text in texts {
                        found
                            .subjects
                            .push((format!("{key}={text}"), caveat.clone().map(Problem::Opaque)));
                        found.paths.push(text);
                    }
                }
                Err(why) => found.subjects.push((
                    format!("{key}={}", value_text(value)),
                    Some(Problem::Opaque(why)),
                )),
            }
        }
        // A number or a boolean under a path name may still become a file name (a relative
        // one, so opaque).
        Value::Number(_) | Value::Bool(_) if is_path => {
            let text = value.to_string();
            if let Ok(PathTexts { texts, caveat }) = path_texts(&text, cwd, workspace) {
                for t in texts {
                    found
                        .subjects
                        .push((format!("{key}={t}"), caveat.clone().map(Problem::Opaque)));
                    found.paths.push(t);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Array(_) | Value::Object(_) if is_path => found.subjects.push((
                        format!("{key}={}", value_text(item)),
                        Some(Problem::Opaque(format!(
                            "argument `{key}` names files, but holds a nested list or object \
                             whose paths cannot be read"
                        ))),
                    )),
                    _ => walk(key, item, cwd, workspace, depth + 1, found),
                }
            }
        }
        Value::Object(_) if is_path => found.subjects.push((
            format!("{key}={}", value_text(value)),
            Some(Problem::Opaque(format!(
                "argument `{key}` names a file, but holds an object, which the server may read \
                 as a path in ways the rules cannot see"
            ))),
        )),
        Value::Object(map) => {
            for (k, v) in map {
                walk(k, v, cwd, workspace, depth + 1, found);
            }
        }
        _ => {}
    }
}

/// The path texts of one path argument, and why they cannot be trusted to name what the
/// server opens (then the subjects are opaque, but the rules of `read` and `file_write` still
/// decide the texts, so a deny holds).
struct PathTexts {
    texts: Vec<String>,
    caveat: Option<String>,
}

/// Why a relative path is opaque.
const RELATIVE: &str = "a relative path, which the server resolves against a folder of its own \
                        choosing (its working folder, a directory it was given, another \
                        argument) that the rules cannot know, so it is decided as if from the \
                        server's working folder (an absolute path can be allowed)";

/// Why a path not in Unicode NFC is opaque.
const NOT_NFC: &str = "the path is not in Unicode normalization form C, and a server may open a \
                       file whose name is written differently but reads the same (the \
                       filesystem server does), so it is decided as written and in NFC";

/// The path texts of a path argument (normalized as written and, when different, resolved
/// through symlinks; and the same for its NFC form when it is not in NFC), or why it cannot be
/// read at all.
fn path_texts(raw: &str, cwd: &Path, workspace: &Path) -> Result<PathTexts, String> {
    use unicode_normalization::UnicodeNormalization;
    let raw = if looks_like_file_uri(raw) {
        file_uri_path(raw)?
    } else {
        raw.to_string()
    };
    if raw.contains('\0') {
        return Err("the path holds a NUL byte".into());
    }
    if raw.is_empty() {
        return Err("the path is empty, which a server may read as its own folder".into());
    }
    if raw.starts_with('~') {
        return Err("the path starts with ~, which the server may expand to a home folder".into());
    }
    let mut forms = vec![raw.clone()];
    let mut caveat = None;
    if !unicode_normalization::is_nfc(&raw) {
        forms.push(raw.nfc().collect());
        caveat = Some(NOT_NFC.to_string());
    }
    if !raw.starts_with('/') {
        caveat = Some(match caveat {
            Some(c) => format!("{RELATIVE}; {c}"),
            None => RELATIVE.to_string(),
        });
    }
    let mut texts: Vec<String> = Vec::new();
    for form in &forms {
        let lexical = path::display(&path::absolute(form, cwd), workspace);
        let resolved = path::display(&path::resolve_in(cwd, Path::new(form)), workspace);
        for text in [lexical, resolved] {
            if !texts.contains(&text) {
                texts.push(text);
            }
        }
    }
    Ok(PathTexts { texts, caveat })
}

/// Whether a string may be read as a `file:` URI by a server: a URL parser (WHATWG's, Node's
/// `fileURLToPath`) takes the scheme in any case, after leading spaces and control characters,
/// with tabs and newlines anywhere removed.
fn looks_like_file_uri(s: &str) -> bool {
    let head: String = s
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .skip_while(|c| *c <= ' ')
        .take(5)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    head == "file:"
}

/// The local path of a `file:` URI: `file:///abs` or `file://localhost/abs`, percent-decoded.
/// Any other form (another case, no `//`, spaces or control characters around or in it, a
/// backslash, which URL parsers read as `/`) is refused: a server's URL parser reads it in ways
/// the rules would not follow.
fn file_uri_path(uri: &str) -> Result<String, String> {
    let odd = |c: char| c == '\\' || c.is_control();
    let Some(rest) = uri
        .strip_prefix("file://")
        .filter(|_| !uri.chars().any(odd) && !uri.ends_with(' '))
    else {
        return Err(
            "a file: URI not written as file:///PATH (another case, no //, a backslash, \
                    spaces or control characters), which a server's URL parser may read \
                    differently from the rules"
                .into(),
        );
    };
    let path = if rest.starts_with('/') {
        rest
    } else if let Some(p) = rest.strip_prefix("localhost") {
        p
    } else {
        return Err("a file:// URI names another host".into());
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = path
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("a file:// URI holds a broken %-escape")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let path =
        String::from_utf8(out).map_err(|_| "a file:// URI decodes to bytes that are not UTF-8")?;
    if !path.starts_with('/') {
        return Err("a file:// URI without an absolute path".into());
    }
    Ok(path)
}

/// What the rules of `read` (always) and `file_write` (for a tool that may change files) add
/// for the paths of an MCP call, as for `edit` (docs/permissions.md, "Rules follow the kind of
/// access"); a write of a protected path gets a `file_write` subject even when no rule names it,
/// so that it asks.
pub(super) fn governed(
    rules: &Rules,
    protected: &Protected,
    workspace: &Path,
    tool: &str,
    paths: &[String],
    effect: Effect,
) -> Vec<SubjectDecision> {
    let mut out = Vec::new();
    let note = |kind: &str| {
        let what = if kind == "read" {
            "read-kind"
        } else {
            "write-kind"
        };
        format!("{what} rule: {kind} rules also govern the files MCP tools name")
    };
    for text in paths {
        let mut kinds = vec!["read"];
        if effect != Effect::ReadOnly {
            kinds.push("file_write");
        }
        for kind in kinds {
            match rules.first_of_kind(tool, kind, text) {
                Some(rule) => out.push(SubjectDecision {
                    tool: kind.to_string(),
                    subject: text.clone(),
                    action: rule.spec.action,
                    rule: Some(rule.reference()),
                    opaque: false,
                    invalid: false,
                    note: Some(note(kind)),
                }),
                None if kind == "file_write" && protected.find(text, workspace).is_some() => out
                    .push(SubjectDecision {
                        tool: kind.to_string(),
                        subject: text.clone(),
                        action: Action::Allow,
                        rule: None,
                        opaque: false,
                        invalid: false,
                        note: Some(format!(
                            "{tool} may write the files it names ({})",
                            effect.words()
                        )),
                    }),
                None => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_split_one_way_and_bad_names_are_refused() {
        assert_eq!(split("mcp__fs__read_file"), Some(("fs", "read_file")));
        assert_eq!(split("mcp__a___b"), Some(("a", "_b")));
        assert_eq!(split("MCP__fs__x"), Some(("fs", "x")));
        assert_eq!(split("bash"), None);
        assert!(check_server_name("github").is_ok());
        assert!(check_server_name("my-server_2").is_ok());
        for bad in ["", "a__b", "_a", "a_", "a b", "ü", &"x".repeat(60)] {
            assert!(check_server_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_tool_name("fs", "read_file").as_deref(),
            Ok("mcp__fs__read_file")
        );
        assert!(check_tool_name("fs", "read file").is_err());
        assert!(check_tool_name("fs", "").is_err());
        assert!(check_tool_name("fs", &"t".repeat(60)).is_err());
    }

    #[test]
    fn argument_names_that_say_path() {
        for yes in [
            "path",
            "paths",
            "file_path",
            "sourcePath",
            "output-dir",
            "rootDir",
            "source",
            "destination",
            "filename",
            "cwd",
            "Path",
            "file_name",
            "fileName",
            "SOURCE_FILE",
            "outputPATH",
            "target_dir_name",
        ] {
            assert!(names_a_path(yes), "{yes}");
        }
        for no in [
            "profile",
            "content",
            "xpathy",
            "pattern",
            "query",
            "target",
            "owner",
            "name",
            "direction",
            "file_count",
            "pathological",
        ] {
            assert!(!names_a_path(no), "{no}");
        }
    }

    #[test]
    fn values_cannot_pass_for_another_pair() {
        assert_eq!(value_text(&json!("notes.md")), "notes.md");
        assert_eq!(value_text(&json!("a path=.env")), r#""a path=.env""#);
        assert_eq!(value_text(&json!("42")), r#""42""#);
        assert_eq!(value_text(&json!("true")), r#""true""#);
        assert_eq!(value_text(&json!("[1]")), r#""[1]""#);
        assert_eq!(value_text(&json!("")), r#""""#);
        assert_eq!(value_text(&json!(42)), "42");
        assert_eq!(
            value_text(&json!({"b": 1, "a": [true]})),
            r#"{"a":[true],"b":1}"#
        );
    }

    fn texts(input: serde_json::Value) -> Vec<(String, bool)> {
        let ws = Path::new("/w");
        subjects("mcp__fs__write_file", &input, Effect::Destructive, None, ws)
            .subjects
            .into_iter()
            .map(|s| (s.text, s.problem.is_some()))
            .collect()
    }

    #[test]
    fn a_call_is_its_line_plus_a_subject_per_path() {
        assert_eq!(
            texts(json!({"path": "/w/src/../.env", "content": "x y"})),
            [
                (r#"content="x y" path=.env"#.to_string(), false),
                ("path=.env".to_string(), false)
            ]
        );
        assert_eq!(
            texts(json!({"paths": ["/w/a", "/etc/passwd"], "n": 1})),
            [
                (r#"n=1 paths=["/w/a","/etc/passwd"]"#.to_string(), false),
                ("paths=a".to_string(), false),
                ("paths=/etc/passwd".to_string(), false)
            ]
        );
        assert_eq!(
            texts(json!({"edits": [{"path": "/w/b"}], "uri": "file:///w/c%20d"})),
            [
                (r#"edits=[{"path":"/w/b"}] uri="c d""#.to_string(), false),
                ("path=b".to_string(), false),
                ("uri=c d".to_string(), false)
            ]
        );
    }

    #[test]
    fn what_cannot_be_read_is_opaque() {
        let opaque =
            |input: serde_json::Value| texts(input).into_iter().filter(|(_, o)| *o).count();
        assert_eq!(opaque(json!({"path": "~/.ssh/id_rsa"})), 1);
        assert_eq!(opaque(json!({"path": {"p": "x"}})), 1);
        assert_eq!(opaque(json!({"path": ""})), 1);
        assert_eq!(opaque(json!({"a b": 1})), 1);
        assert_eq!(opaque(json!({"uri": "file://host/x"})), 1);
        assert_eq!(opaque(json!({"path": "/w/a", "q": "z"})), 0);
        let invalid = subjects(
            "mcp__a__b",
            &json!([1]),
            Effect::ReadOnly,
            None,
            Path::new("/w"),
        );
        assert!(matches!(
            invalid.subjects[0].problem,
            Some(Problem::Invalid(_))
        ));
    }

    #[test]
    fn relative_paths_start_at_the_server_folder() {
        let server = McpServerRules {
            name: "fs".into(),
            cwd: PathBuf::from("/w/sub"),
            defaults: AnnotationDefaults::default(),
        };
        let call = subjects(
            "mcp__fs__read_file",
            &json!({"path": "../x"}),
            Effect::ReadOnly,
            Some(&server),
            Path::new("/w"),
        );
        assert_eq!(call.paths, ["x"]);
    }

    fn policy(rules: &[(&str, &str, Action)], default: Action) -> super::super::Policy {
        let specs = rules
            .iter()
            .map(|(tool, pattern, action)| super::super::RuleSpec::new(*tool, *pattern, *action))
            .collect();
        let rules = Rules::compile(default, specs).unwrap();
        super::super::Policy::new(Some(rules), PathBuf::from("/w"))
            .with_protected(Protected::new(vec![super::super::ProtectedPath {
                path: PathBuf::from("/w/pod.toml"),
                what: "the manifest".into(),
            }]))
            .with_mcp([McpServerRules {
                name: "fs".into(),
                cwd: PathBuf::from("/w"),
                defaults: AnnotationDefaults {
                    read_only: Some(Action::Allow),
                    ..AnnotationDefaults::default()
                },
            }])
    }

    fn read_only() -> ToolAnnotations {
        ToolAnnotations {
            read_only_hint: Some(true),
            ..ToolAnnotations::default()
        }
    }

    #[test]
    fn read_and_write_rules_govern_the_files_an_mcp_tool_names() {
        let p = policy(
            &[
                ("read", "*.env", Action::Deny),
                ("file_write", "src/*", Action::Deny),
            ],
            Action::Allow,
        );
        let read = |path: &str, a: Option<&ToolAnnotations>| {
            p.decide_with("mcp__fs__read_file", &json!({ "path": path }), a)
                .decision
        };
        assert_eq!(read("/w/.env", Some(&read_only())), Action::Deny);
        assert_eq!(read("/w/src/a.rs", Some(&read_only())), Action::Allow);
        // Without annotations a tool may write: file_write rules apply too.
        assert_eq!(read("/w/src/a.rs", None), Action::Deny);
        // A relative path is never allowed, but the rules still decide it (from the
        // server's folder), so a deny holds.
        assert_eq!(read(".env", Some(&read_only())), Action::Deny);
        assert_eq!(read("src/a.rs", Some(&read_only())), Action::Ask);
    }

    #[test]
    fn a_write_of_pods_own_files_asks_even_when_everything_is_allowed() {
        let p = policy(&[("mcp__*", "*", Action::Allow)], Action::Allow);
        let d = p.decide(
            "mcp__fs__write_file",
            &json!({"path": "/w/pod.toml", "content": "x"}),
        );
        assert_eq!(d.decision, Action::Ask, "{d:?}");
        assert!(d
            .subjects
            .iter()
            .any(|s| s.tool == "file_write" && p.protects(s)));
        // A read-only tool reading it is up to the rules.
        let d = p.decide_with(
            "mcp__fs__read_file",
            &json!({"path": "/w/pod.toml"}),
            Some(&read_only()),
        );
        assert_eq!(d.decision, Action::Allow, "{d:?}");
    }

    #[test]
    fn the_default_by_annotation_applies_only_where_no_rule_matches() {
        let p = policy(
            &[("mcp__fs__read_file", "path=secret/*", Action::Deny)],
            Action::Ask,
        );
        let d = p.decide_with(
            "mcp__fs__read_file",
            &json!({"path": "/w/a"}),
            Some(&read_only()),
        );
        assert_eq!(d.decision, Action::Allow, "{d:?}");
        assert!(d.subjects[0]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("default_action.read_only"));
        let d = p.decide_with(
            "mcp__fs__read_file",
            &json!({"path": "/w/secret/a"}),
            Some(&read_only()),
        );
        assert_eq!(d.decision, Action::Deny);
        // Another effect keeps [permissions] default_action.
        let d = p.decide("mcp__fs__read_file", &json!({"path": "/w/a"}));
        assert_eq!(d.decision, Action::Ask);
        // What cannot be read is never allowed by the default.
        let d = p.decide_with(
            "mcp__fs__read_file",
            &json!({"path": "~/x"}),
            Some(&read_only()),
        );
        assert_eq!(d.decision, Action::Ask);
    }

    #[test]
    fn what_a_server_may_read_differently_is_never_allowed() {
        let p = policy(
            &[
                ("read", "données/*", Action::Deny),
                ("read", "/etc/*", Action::Deny),
                ("read", "*.env", Action::Deny),
            ],
            Action::Allow,
        );
        let decide = |input: serde_json::Value| {
            p.decide_with("mcp__fs__read_file", &input, Some(&read_only()))
                .decision
        };
        // A relative path: the server picks its base (server-filesystem: its first allowed
        // directory), so it asks; a deny of the reading from the server's folder holds.
        assert_eq!(decide(json!({"path": "notes/a"})), Action::Ask);
        assert_eq!(decide(json!({"path": "/w/notes/a"})), Action::Allow);
        assert_eq!(decide(json!({"path": 7})), Action::Ask);
        // Not NFC: decided in NFC too, so the deny written in NFC holds.
        assert_eq!(
            decide(json!({"path": "/w/donne\u{301}es/key"})),
            Action::Deny
        );
        assert_eq!(decide(json!({"path": "/w/caf\u{e9}"})), Action::Allow);
        assert_eq!(decide(json!({"path": "/w/cafe\u{301}"})), Action::Ask);
        // file: URIs that URL parsers read as /etc/passwd or .env, under any argument name.
        for uri in [
            "FILE:///w/notes",
            " file:///w/notes",
            "file:/w/notes",
            "fi\tle:///w/notes",
            "file:///w/notes\\..\\..\\etc/passwd",
            "file:///w/.e\nnv",
            "file:///w/notes ",
        ] {
            assert_eq!(decide(json!({ "uri": uri })), Action::Ask, "{uri:?}");
            assert_eq!(decide(json!({ "path": uri })), Action::Ask, "{uri:?}");
        }
        assert_eq!(decide(json!({"uri": "file:///w/notes"})), Action::Allow);
        assert_eq!(
            decide(json!({"uri": "file:///w/a/%2e%2e/.env"})),
            Action::Deny
        );
    }

    #[test]
    fn annotations_pick_the_effect() {
        let a = |r: Option<bool>, d: Option<bool>| ToolAnnotations {
            read_only_hint: r,
            destructive_hint: d,
            ..ToolAnnotations::default()
        };
        assert_eq!(Effect::of(None), Effect::Destructive);
        assert_eq!(
            Effect::of(Some(&a(Some(true), Some(true)))),
            Effect::ReadOnly
        );
        assert_eq!(Effect::of(Some(&a(None, Some(false)))), Effect::Additive);
        assert_eq!(Effect::of(Some(&a(Some(false), None))), Effect::Destructive);
    }
}
