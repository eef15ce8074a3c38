//! Helpers shared by the built-in tools: input parsing with field-naming errors, input schemas,
//! path resolution against the workspace, the walk of `grep` and `glob` (which walks a session's
//! `$TMPDIR` tmpfs through its view, `sandbox::tmpfs`) and what it withheld, and capped output
//! text.
//!
//! Owns: how a tool turns raw JSON into its typed input (and the wording of bad-input errors),
//! how paths in inputs are resolved and shown, and how withheld files are reported. Must not
//! touch: scope or permission checks (done before a tool runs); which files are withheld is the
//! permission layer's answer ([`crate::permission::FileRules`]).

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::permission::LinkDenial;
use crate::protocol::RuleRef;
use crate::sandbox::tmpfs;

/// Why a tool's input was rejected; `field` names the offending input field when there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("invalid input: expected a JSON object with the tool's fields, got {0}")]
    NotAnObject(&'static str),
    #[error("invalid input: field `{field}` {problem}")]
    Field { field: String, problem: String },
    #[error("invalid input: {0}")]
    Other(String),
}

impl InputError {
    pub fn field(field: impl Into<String>, problem: impl Into<String>) -> Self {
        InputError::Field {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// The JSON Schema of a tool input type, as sent to models and clients.
pub fn schema_of<T: JsonSchema>() -> Value {
    let schema = schemars::schema_for!(T);
    let mut value = serde_json::to_value(schema).unwrap_or_else(|_| serde_json::json!({}));
    if let Some(obj) = value.as_object_mut() {
        // Models and clients do not need the meta-schema URL.
        obj.remove("$schema");
    }
    value
}

/// The JSON type name of a value, as JSON Schema spells it.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Parses a tool's input. Type errors are found against the input's own schema first, so that
/// the message names the field (serde_json's own type errors do not).
pub fn parse_input<T: DeserializeOwned + JsonSchema>(input: Value) -> Result<T, InputError> {
    let Some(obj) = input.as_object() else {
        return Err(InputError::NotAnObject(json_type(&input)));
    };
    let schema = schema_of::<T>();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (key, value) in obj {
            let Some(prop) = props.get(key) else {
                let known: Vec<&str> = props.keys().map(String::as_str).collect();
                return Err(InputError::field(
                    key.clone(),
                    format!("is not an input of this tool (known: {})", known.join(", ")),
                ));
            };
            check_value(key, value, prop)?;
        }
    }
    // What the schema check cannot see (a nested field, an enum's value) is named by its path.
    serde_path_to_error::deserialize(input).map_err(|e| {
        let path = e.path().to_string();
        let problem = e.into_inner().to_string();
        if path == "." || path.is_empty() {
            InputError::Other(problem)
        } else {
            InputError::field(path, format!("is wrong: {problem}"))
        }
    })
}

/// Checks one field's value against its property schema (type, minimum and maximum only).
fn check_value(key: &str, value: &Value, prop: &Value) -> Result<(), InputError> {
    let types: Vec<&str> = match prop.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    let actual = json_type(value);
    let fits = types
        .iter()
        .any(|t| *t == actual || (*t == "number" && actual == "integer"));
    if !fits {
        let wanted: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
        return Err(InputError::field(
            key,
            format!("must be {} (got {actual})", wanted.join(" or ")),
        ));
    }
    if let (Some(min), Some(n)) = (prop.get("minimum").and_then(Value::as_f64), value.as_f64()) {
        if n < min {
            return Err(InputError::field(
                key,
                format!("must be at least {min} (got {n})"),
            ));
        }
    }
    if let (Some(max), Some(n)) = (prop.get("maximum").and_then(Value::as_f64), value.as_f64()) {
        if n > max {
            return Err(InputError::field(
                key,
                format!("must be at most {max} (got {n})"),
            ));
        }
    }
    Ok(())
}

/// Resolves a path from an input: relative paths start at the workspace, absolute ones are kept.
pub fn resolve(workspace: &Path, field: &str, path: &str) -> Result<PathBuf, InputError> {
    if path.is_empty() {
        return Err(InputError::field(field, "must not be empty"));
    }
    if path.contains('\0') {
        return Err(InputError::field(field, "must not contain NUL bytes"));
    }
    let p = Path::new(path);
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        workspace.join(p)
    })
}

/// How a path is shown in results: relative to the workspace when inside it, else as is.
pub fn display(workspace: &Path, path: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// A walk under `root` that honours `.gitignore`, `.ignore` and git excludes (also outside a git
/// repository), skips hidden files and folders, and visits entries sorted by name.
fn walker(root: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(root)
        .require_git(false)
        .git_global(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
}

/// One entry a [`walk`] met, named by its host path.
pub struct Found {
    pub path: PathBuf,
    /// 0 for the root.
    pub depth: usize,
    pub file_type: Option<std::fs::FileType>,
}

/// A [`walk`] in progress: the walks of the folders entered, innermost last.
pub struct Walk {
    stack: Vec<Level>,
}

/// One walk of a [`Walk`]: of the host's folders, or of a session's `$TMPDIR` tmpfs reached
/// through its view (`sandbox::tmpfs`), whose entries are named by their host paths again.
struct Level {
    walk: ignore::Walk,
    /// The folder's host path and how it was reached, for a walk through a view.
    through: Option<(PathBuf, crate::permission::path::Reached)>,
    /// The depth of its root in the whole walk.
    depth: usize,
}

/// A walk under `root` (`.gitignore` honoured, hidden files skipped, sorted by name) that sees
/// what the sandboxed processes see: a session's `$TMPDIR` (a tmpfs in the session's mount view,
/// over an empty host folder), whether `root` lies in it or the walk meets it, is walked through
/// its view, and its entries are named by their host paths.
pub fn walk(root: &Path) -> Walk {
    Walk {
        stack: vec![level(root, 0)],
    }
}

fn level(root: &Path, depth: usize) -> Level {
    let reached = tmpfs::reach(root);
    if reached.is_redirected() {
        Level {
            walk: walker(&reached),
            through: Some((root.to_path_buf(), reached)),
            depth,
        }
    } else {
        Level {
            walk: walker(root),
            through: None,
            depth,
        }
    }
}

impl Iterator for Walk {
    type Item = Result<Found, ignore::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let top = self.stack.last_mut()?;
            let entry = match top.walk.next() {
                None => {
                    self.stack.pop();
                    continue;
                }
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(entry)) => entry,
            };
            // A nested walk's root is the entry that started it.
            if entry.depth() == 0 && top.depth > 0 {
                continue;
            }
            let depth = top.depth + entry.depth();
            let file_type = entry.file_type();
            let (path, in_view) = match &top.through {
                Some((host, reached)) => (tmpfs::back(host, reached, entry.path()), true),
                None => (entry.into_path(), false),
            };
            // The host folder of a session's `$TMPDIR` is empty: its tmpfs is walked instead.
            if !in_view
                && depth > 0
                && file_type.is_some_and(|t| t.is_dir())
                && tmpfs::covers(&path)
            {
                self.stack.push(level(&path, depth));
            }
            return Some(Ok(Found {
                path,
                depth,
                file_type,
            }));
        }
    }
}

/// The root folder or file of a search: `path` resolved, or the workspace; it must exist (as
/// the sandboxed processes see it: beneath a session's `$TMPDIR`, in its tmpfs).
pub fn search_root(workspace: &Path, path: Option<&str>) -> Result<PathBuf, String> {
    let root = match path {
        Some(p) => resolve(workspace, "path", p).map_err(|e| e.to_string())?,
        None => workspace.to_path_buf(),
    };
    if !tmpfs::reach(&crate::permission::path::normalize(&root)).exists() {
        return Err(format!("path not found: {}", display(workspace, &root)));
    }
    Ok(root)
}

/// Files a walk met but left out of its result because the rules deny reading them.
#[derive(Debug, Default)]
pub struct Withheld {
    /// Per deciding rule (by index), in first-seen order.
    by_rule: Vec<(RuleRef, usize)>,
    /// Files with several hard links whose other names could not all be checked.
    unchecked: usize,
}

impl Withheld {
    pub fn rule(&mut self, rule: RuleRef) {
        match self.by_rule.iter_mut().find(|(r, _)| r.index == rule.index) {
            Some((_, n)) => *n += 1,
            None => self.by_rule.push((rule, 1)),
        }
    }

    pub fn link(&mut self, denial: LinkDenial) {
        match denial {
            LinkDenial::OtherName { rule, .. } => self.rule(*rule),
            LinkDenial::Unchecked { .. } => self.unchecked += 1,
        }
    }

    pub fn count(&self) -> usize {
        self.by_rule.iter().map(|(_, n)| n).sum::<usize>() + self.unchecked
    }

    /// `[N files withheld by permission rules: 2 by rule 3 (read "*.env" deny), ...]`, or
    /// nothing when no file was withheld.
    pub fn note(&self) -> Option<String> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let mut parts: Vec<String> = self
            .by_rule
            .iter()
            .map(|(r, n)| {
                format!(
                    "{n} by rule {} ({} \"{}\" deny)",
                    r.index, r.tool, r.pattern
                )
            })
            .collect();
        if self.unchecked > 0 {
            parts.push(format!(
                "{} with several hard links whose other names could not all be checked",
                self.unchecked
            ));
        }
        Some(format!(
            "[{total} file{} withheld by permission rules: {}]",
            if total == 1 { "" } else { "s" },
            parts.join(", ")
        ))
    }
}

/// Text gathered up to a byte cap, keeping the head and the tail and counting what was cut.
#[derive(Debug)]
pub struct HeadTail {
    cap_head: usize,
    cap_tail: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    cut: usize,
}

impl HeadTail {
    /// Keeps at most `cap` bytes in all: half from the start, half from the end.
    pub fn new(cap: usize) -> Self {
        HeadTail {
            cap_head: cap / 2,
            cap_tail: cap - cap / 2,
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            cut: 0,
        }
    }

    pub fn push(&mut self, mut data: &[u8]) {
        if self.head.len() < self.cap_head {
            let take = (self.cap_head - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if self.cap_tail == 0 {
            self.cut += data.len();
            return;
        }
        if data.len() >= self.cap_tail {
            self.cut += self.tail.len() + data.len() - self.cap_tail;
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.cap_tail..]);
            return;
        }
        let overflow = (self.tail.len() + data.len()).saturating_sub(self.cap_tail);
        self.tail.drain(..overflow);
        self.cut += overflow;
        self.tail.extend(data);
    }

    pub fn is_empty(&self) -> bool {
        self.head.is_empty() && self.tail.is_empty()
    }

    /// The kept text (lossy UTF-8), with `[... N bytes cut ...]` where bytes were dropped.
    pub fn finish(self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.cut > 0 {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("[... {} bytes cut ...]\n", self.cut));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's `$TMPDIR` is a tmpfs over an empty host folder: a walk rooted in it, or one
    /// that meets it, walks what the sandboxed processes see there, named by host paths; and
    /// a file there opens beneath it, following no symlink.
    #[test]
    fn a_walk_and_an_open_see_a_tmpdir_through_its_view() {
        use super::super::confined;
        let top = tempfile::tempdir().unwrap();
        let top = top.path().canonicalize().unwrap();
        std::fs::write(top.join("a.txt"), "a").unwrap();
        std::fs::create_dir(top.join("tmpd")).unwrap();
        let real = tempfile::tempdir().unwrap();
        let real = real.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("sub")).unwrap();
        std::fs::write(real.join("sub/needle.txt"), "needle").unwrap();
        std::os::unix::fs::symlink(top.join("a.txt"), real.join("link")).unwrap();
        let _view = tmpfs::fake(&top.join("tmpd"), &real);
        let files = |root: &Path| -> Vec<(PathBuf, usize)> {
            walk(root)
                .flatten()
                .filter(|f| f.file_type.is_some_and(|t| !t.is_dir()))
                .map(|f| (f.path, f.depth))
                .collect()
        };
        assert_eq!(
            files(&top),
            [
                (top.join("a.txt"), 1),
                (top.join("tmpd/link"), 2),
                (top.join("tmpd/sub/needle.txt"), 3)
            ]
        );
        assert_eq!(
            files(&top.join("tmpd")),
            [
                (top.join("tmpd/link"), 1),
                (top.join("tmpd/sub/needle.txt"), 2)
            ]
        );
        assert!(search_root(&top, Some("tmpd/sub/needle.txt")).is_ok());
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut confined::open_read(&top.join("tmpd/sub/needle.txt")).unwrap(),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "needle");
        let err = confined::open_read(&top.join("tmpd/link")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP), "{err}");
        confined::write_atomic(&top, &top.join("tmpd/sub/new.txt"), b"n").unwrap();
        assert_eq!(
            std::fs::read_to_string(real.join("sub/new.txt")).unwrap(),
            "n"
        );
        assert!(
            !top.join("tmpd/sub").exists(),
            "the host folder stays empty"
        );
    }

    #[derive(Debug, serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Probe {
        /// A name.
        name: String,
        /// A count.
        count: Option<u64>,
        #[serde(default)]
        flag: bool,
    }

    #[test]
    fn parse_names_the_bad_field() {
        let e = parse_input::<Probe>(serde_json::json!({"name": 5})).unwrap_err();
        assert!(e.to_string().contains("`name`"), "{e}");
        assert!(e.to_string().contains("string"), "{e}");
        let e = parse_input::<Probe>(serde_json::json!({"name": "x", "count": -1})).unwrap_err();
        assert!(e.to_string().contains("`count`"), "{e}");
        let e = parse_input::<Probe>(serde_json::json!({"name": "x", "count": 1.5})).unwrap_err();
        assert!(e.to_string().contains("`count` must be integer"), "{e}");
        let e = parse_input::<Probe>(serde_json::json!({"count": 1})).unwrap_err();
        assert!(e.to_string().contains("`name`"), "{e}");
        let e = parse_input::<Probe>(serde_json::json!({"name": "x", "nmae": 1})).unwrap_err();
        assert!(e.to_string().contains("`nmae`"), "{e}");
        let e = parse_input::<Probe>(serde_json::json!(["x"])).unwrap_err();
        assert!(e.to_string().contains("array"), "{e}");
        let ok = parse_input::<Probe>(serde_json::json!({"name": "x", "count": null})).unwrap();
        assert_eq!(ok.name, "x");
        assert!(!ok.flag);
        assert_eq!(ok.count, None);
    }

    #[test]
    fn schema_has_descriptions() {
        let s = schema_of::<Probe>();
        assert_eq!(s["properties"]["name"]["description"], "A name.");
        assert!(s.get("$schema").is_none());
    }

    #[test]
    fn head_tail_cuts_the_middle() {
        let mut h = HeadTail::new(10);
        for _ in 0..10 {
            h.push(b"0123456789");
        }
        let s = h.finish();
        assert!(s.starts_with("01234\n[... 90 bytes cut ...]\n"), "{s}");
        assert!(s.ends_with("56789"), "{s}");

        let mut h = HeadTail::new(100);
        h.push(b"short");
        assert_eq!(h.finish(), "short");
    }
}
