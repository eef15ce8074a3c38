//! Matching messages against a kit's patterns: subset matching with a few special strings, and
//! `{{label.path}}` placeholders filled from earlier matched messages.
//!
//! Messages and patterns are read into [`Json`], which keeps every number as the text it was
//! written in, so numbers compare by exact decimal value at any size (an id above 2^53, or above
//! 2^64, echoed rounded does not match).
//!
//! Must not touch: processes, files, the kit's format.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::value::RawValue;

/// A JSON value whose numbers keep their exact text.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(BTreeMap<String, Json>),
}

/// A JSON number as written; equal to another when their decimal values are equal.
#[derive(Debug, Clone)]
pub struct Number(String);

impl PartialEq for Number {
    fn eq(&self, other: &Number) -> bool {
        match (Decimal::parse(&self.0), Decimal::parse(&other.0)) {
            (Some(a), Some(b)) => a == b,
            _ => self.0 == other.0,
        }
    }
}

/// A decimal number in a canonical form: sign, significant digits without leading or trailing
/// zeros, and the power of ten of the last digit. Zero is `(false, "", 0)`.
#[derive(Debug, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    exponent: i128,
}

impl Decimal {
    fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(at) => (&rest[..at], rest[at + 1..].parse::<i128>().ok()?),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if !(int.bytes().chain(frac.bytes())).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let all = format!("{int}{frac}");
        let exponent = exponent.checked_sub(i128::try_from(frac.len()).ok()?)?;
        let trimmed = all.trim_start_matches('0');
        let digits = trimmed.trim_end_matches('0');
        if digits.is_empty() {
            return Some(Decimal {
                negative: false,
                digits: String::new(),
                exponent: 0,
            });
        }
        let zeros = i128::try_from(trimmed.len() - digits.len()).ok()?;
        Some(Decimal {
            negative,
            digits: digits.to_string(),
            exponent: exponent.checked_add(zeros)?,
        })
    }
}

impl Json {
    /// Parses one JSON text (surrounding whitespace allowed).
    pub fn parse(text: &str) -> Result<Json, serde_json::Error> {
        let raw: &RawValue = serde_json::from_str(text)?;
        Json::from_raw(raw)
    }

    fn from_raw(raw: &RawValue) -> Result<Json, serde_json::Error> {
        let text = raw.get();
        Ok(match text.as_bytes().first() {
            Some(b'{') => {
                let members: BTreeMap<String, &RawValue> = serde_json::from_str(text)?;
                Json::Object(
                    members
                        .into_iter()
                        .map(|(k, v)| Ok((k, Json::from_raw(v)?)))
                        .collect::<Result<_, serde_json::Error>>()?,
                )
            }
            Some(b'[') => {
                let items: Vec<&RawValue> = serde_json::from_str(text)?;
                Json::Array(
                    items
                        .into_iter()
                        .map(Json::from_raw)
                        .collect::<Result<_, _>>()?,
                )
            }
            Some(b'"') => Json::String(serde_json::from_str(text)?),
            Some(b't' | b'f') => Json::Bool(serde_json::from_str(text)?),
            Some(b'n') => Json::Null,
            _ => Json::Number(Number(text.to_string())),
        })
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(map) => map.get(key),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for Json {
    /// Compact JSON text; numbers exactly as they were written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Number(n) => f.write_str(&n.0),
            Json::String(s) => f.write_str(&string_text(s)),
            Json::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Json::Object(map) => {
                f.write_str("{")?;
                for (i, (key, value)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{value}", string_text(key))?;
                }
                f.write_str("}")
            }
        }
    }
}

/// `s` as a JSON string literal, quotes included.
fn string_text(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FillError {
    #[error("unclosed placeholder in {0:?}")]
    Unclosed(String),
    #[error("placeholder {{{{{0}}}}} names nothing matched so far")]
    Unknown(String),
}

/// Replaces every `{{name}}` by `lookup(name)`: a string value goes in as escaped JSON string
/// content (the pattern supplies the quotes), anything else as JSON text.
pub fn fill(text: &str, lookup: &dyn Fn(&str) -> Option<Json>) -> Result<String, FillError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| FillError::Unclosed(text.to_string()))?;
        let name = after[..end].trim();
        let value = lookup(name).ok_or_else(|| FillError::Unknown(name.to_string()))?;
        match value {
            Json::String(s) => {
                let quoted = string_text(&s);
                out.push_str(&quoted[1..quoted.len() - 1]);
            }
            other => out.push_str(&other.to_string()),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The value at `path` (dot-separated object keys or array indexes) inside `message`.
pub fn lookup_path<'a>(message: &'a Json, path: &str) -> Option<&'a Json> {
    path.split('.')
        .filter(|p| !p.is_empty())
        .try_fold(message, |v, key| match v {
            Json::Object(map) => map.get(key),
            Json::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// Whether `actual` matches `expected`:
/// - an object matches an object when every expected key matches (other keys are ignored); the
///   value `"<absent>"` requires the key to be missing;
/// - `"<TYPE>"` matches a value of that type, and `"<A|B>"` a value matching either: `any`
///   (anything but null), `null`, `string`, `number`, `integer`, `boolean`, `object`, `array`,
///   `timestamp` (an RFC 3339 date and time string); so `"<any|null>"` accepts null too;
/// - an array matches an array of the same length whose elements match one to one, in order;
///   when its first element is `"<unordered>"`, in any order (the rest of the elements); when it
///   is `"<subsequence>"`, the rest must match elements of the actual array in this order, other
///   elements in between being ignored;
/// - a string `"<contains>TEXT"` matches a string containing TEXT;
/// - anything else must be equal, numbers by exact decimal value (`1` and `1.0` are equal,
///   `9007199254740993` and `9007199254740992` are not).
pub fn matches(expected: &Json, actual: &Json) -> bool {
    match (expected, actual) {
        (Json::String(s), _) if type_pattern(s).is_some() => {
            type_pattern(s).is_some_and(|kinds| kinds.iter().any(|k| k.accepts(actual)))
        }
        (Json::String(s), Json::String(a)) if s.starts_with("<contains>") => {
            a.contains(&s["<contains>".len()..])
        }
        (Json::Object(e), Json::Object(a)) => e.iter().all(|(key, want)| match a.get(key) {
            None => is_absent(want),
            Some(got) => !is_absent(want) && matches(want, got),
        }),
        (Json::Array(e), Json::Array(a)) => match e.split_first() {
            Some((Json::String(m), rest)) if m == "<unordered>" => {
                rest.len() == a.len() && assign(rest, a, &mut vec![false; a.len()])
            }
            Some((Json::String(m), rest)) if m == "<subsequence>" => {
                let mut actual = a.iter();
                rest.iter().all(|want| actual.any(|got| matches(want, got)))
            }
            _ => e.len() == a.len() && e.iter().zip(a).all(|(want, got)| matches(want, got)),
        },
        _ => expected == actual,
    }
}

fn is_absent(value: &Json) -> bool {
    value.as_str() == Some("<absent>")
}

/// One alternative of a `"<A|B>"` pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Any,
    Null,
    String,
    Number,
    Integer,
    Boolean,
    Object,
    Array,
    Timestamp,
}

impl Kind {
    fn accepts(self, value: &Json) -> bool {
        match (self, value) {
            (Kind::Any, v) => *v != Json::Null,
            (Kind::Null, Json::Null)
            | (Kind::String, Json::String(_))
            | (Kind::Number, Json::Number(_))
            | (Kind::Boolean, Json::Bool(_))
            | (Kind::Object, Json::Object(_))
            | (Kind::Array, Json::Array(_)) => true,
            (Kind::Integer, Json::Number(n)) => {
                Decimal::parse(&n.0).is_some_and(|d| d.exponent >= 0)
            }
            (Kind::Timestamp, Json::String(s)) => {
                time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                    .is_ok()
            }
            _ => false,
        }
    }
}

/// The kinds of a `"<A|B>"` pattern; `None` when `text` is not one.
fn type_pattern(text: &str) -> Option<Vec<Kind>> {
    let inner = text.strip_prefix('<')?.strip_suffix('>')?;
    inner
        .split('|')
        .map(|name| {
            Some(match name {
                "any" => Kind::Any,
                "null" => Kind::Null,
                "string" => Kind::String,
                "number" => Kind::Number,
                "integer" => Kind::Integer,
                "boolean" => Kind::Boolean,
                "object" => Kind::Object,
                "array" => Kind::Array,
                "timestamp" => Kind::Timestamp,
                _ => return None,
            })
        })
        .collect()
}

/// Matches each expected element to a distinct actual element (backtracking; arrays are small).
fn assign(expected: &[Json], actual: &[Json], used: &mut Vec<bool>) -> bool {
    let Some((first, rest)) = expected.split_first() else {
        return true;
    };
    for i in 0..actual.len() {
        if !used[i] && matches(first, &actual[i]) {
            used[i] = true;
            if assign(rest, actual, used) {
                return true;
            }
            used[i] = false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(text: &str) -> Json {
        Json::parse(text).unwrap()
    }

    fn m(expected: &str, actual: &str) -> bool {
        matches(&j(expected), &j(actual))
    }

    #[test]
    fn subset_and_specials() {
        let msg = r#"{"id": 1, "result": {"a": 1, "b": "hello world"}, "x": null}"#;
        assert!(m(r#"{"id": 1}"#, msg));
        assert!(m(r#"{"result": {"b": "<contains>lo w"}}"#, msg));
        assert!(m(r#"{"error": "<absent>", "x": "<any|null>"}"#, msg));
        assert!(!m(r#"{"result": "<absent>"}"#, msg));
        assert!(!m(r#"{"id": 2}"#, msg));
        assert!(m(r#"{"id": 1.0}"#, msg));
        assert!(!m(r#"[{"id": 2}, {"id": 1}]"#, r#"[{"id": 1}, {"id": 2}]"#));
        assert!(m(
            r#"["<unordered>", {"id": 2}, {"id": 1}]"#,
            r#"[{"id": 1}, {"id": 2}]"#
        ));
        assert!(m(
            r#"["<subsequence>", {"id": 1}, {"id": 3}]"#,
            r#"[{"id": 1}, {"id": 2}, {"id": 3}]"#
        ));
        assert!(!m(
            r#"["<subsequence>", {"id": 3}, {"id": 1}]"#,
            r#"[{"id": 1}, {"id": 2}, {"id": 3}]"#
        ));
        assert!(!m(r#"[{"id": 1}]"#, r#"[{"id": 1}, {"id": 2}]"#));
        assert!(!m(r#"{"id": null}"#, "[]"));
    }

    #[test]
    fn any_refuses_null_unless_asked() {
        assert!(!m(r#"{"x": "<any>"}"#, r#"{"x": null}"#));
        assert!(m(r#"{"x": "<any|null>"}"#, r#"{"x": null}"#));
        assert!(!m(r#"{"x": "<any|null>"}"#, r#"{}"#));
        assert!(m(r#""<any>""#, "[]"));
    }

    #[test]
    fn types_and_timestamps() {
        assert!(m(r#""<integer>""#, "-32600"));
        assert!(m(r#""<integer>""#, "1.0e2"));
        assert!(!m(r#""<integer>""#, "1.5"));
        assert!(!m(r#""<string>""#, "null"));
        assert!(m(r#""<string|null>""#, "null"));
        assert!(m(r#""<timestamp>""#, r#""2026-11-30T06:14:03.619084603Z""#));
        assert!(m(r#""<timestamp>""#, r#""2026-11-30T06:14:03+01:00""#));
        assert!(!m(r#""<timestamp>""#, r#""tomorrow""#));
        assert!(!m(r#""<timestamp>""#, "null"));
        // Not a type name: compared as text.
        assert!(m(r#""<nope>""#, r#""<nope>""#));
        assert!(!m(r#""<nope>""#, "1"));
    }

    #[test]
    fn numbers_compare_exactly_at_any_size() {
        assert!(!m("9007199254740993", "9007199254740992"));
        assert!(m("9007199254740993", "9007199254740993"));
        assert!(!m("-9007199254740993", "-9007199254740992"));
        assert!(!m(
            "123456789012345678901234567890",
            "123456789012345678901234567891"
        ));
        assert!(!m(
            "123456789012345678901234567890",
            "1.2345678901234568e29"
        ));
        assert!(m("1e2", "100"));
        assert!(m("0.5", "5e-1"));
        assert!(m("-0", "0"));
        assert!(m("10", "1.0e1"));
        assert!(!m("1", "-1"));
        assert!(!m("1", "\"1\""));
        // Written back exactly as received.
        assert_eq!(
            j(r#"{"id":123456789012345678901234567890}"#).to_string(),
            r#"{"id":123456789012345678901234567890}"#
        );
    }

    #[test]
    fn placeholders() {
        let captured = j(r#"{"r": {"params": {"requestId": "perm_\"1", "n": 3}}}"#);
        let lookup = |name: &str| {
            let (label, path) = name.split_once('.').unwrap_or((name, ""));
            lookup_path(captured.get(label)?, path).cloned()
        };
        let text = fill(
            r#"{"requestId": "{{r.params.requestId}}", "n": {{r.params.n}}}"#,
            &lookup,
        )
        .unwrap();
        assert_eq!(j(&text), j(r#"{"requestId": "perm_\"1", "n": 3}"#));
        assert_eq!(
            fill("{{nope.x}}", &lookup),
            Err(FillError::Unknown("nope.x".into()))
        );
        assert!(fill("{{open", &lookup).is_err());
    }
}
