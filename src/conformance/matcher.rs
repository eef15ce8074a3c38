//! Matching messages against a kit's patterns: subset matching with a few special strings, and
//! `{{label.path}}` placeholders filled from earlier matched messages.
//!
//! Must not touch: processes, files, the kit's format.

use serde_json::Value;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FillError {
    #[error("unclosed placeholder in {0:?}")]
    Unclosed(String),
    #[error("placeholder {{{{{0}}}}} names nothing matched so far")]
    Unknown(String),
}

/// Replaces every `{{name}}` by `lookup(name)`: a string value goes in as escaped JSON string
/// content (the pattern supplies the quotes), anything else as JSON text.
pub fn fill(text: &str, lookup: &dyn Fn(&str) -> Option<Value>) -> Result<String, FillError> {
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
            Value::String(s) => {
                let quoted = Value::String(s).to_string();
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
pub fn lookup_path<'a>(message: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .filter(|p| !p.is_empty())
        .try_fold(message, |v, key| match v {
            Value::Object(map) => map.get(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// Whether `actual` matches `expected`:
/// - an object matches when every expected key matches (other keys are ignored); the value
///   `"<absent>"` requires the key to be missing, `"<any>"` only requires it to be present;
/// - an array matches an array of the same length whose elements match one to one, in order;
///   when its first element is `"<unordered>"`, in any order (the rest of the elements); when it
///   is `"<subsequence>"`, the rest must match elements of the actual array in this order, other
///   elements in between being ignored;
/// - a string `"<contains>TEXT"` matches a string containing TEXT;
/// - anything else must be equal (numbers by value).
pub fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::String(s), _) if s == "<any>" => true,
        (Value::String(s), Value::String(a)) if s.starts_with("<contains>") => {
            a.contains(&s["<contains>".len()..])
        }
        (Value::Object(e), Value::Object(a)) => e.iter().all(|(key, want)| match a.get(key) {
            None => want == "<absent>",
            Some(got) => want != "<absent>" && matches(want, got),
        }),
        (Value::Array(e), Value::Array(a)) => match e.split_first() {
            Some((Value::String(m), rest)) if m == "<unordered>" => {
                rest.len() == a.len() && assign(rest, a, &mut vec![false; a.len()])
            }
            Some((Value::String(m), rest)) if m == "<subsequence>" => {
                let mut actual = a.iter();
                rest.iter().all(|want| actual.any(|got| matches(want, got)))
            }
            _ => e.len() == a.len() && e.iter().zip(a).all(|(want, got)| matches(want, got)),
        },
        (Value::Number(e), Value::Number(a)) => e.as_f64() == a.as_f64(),
        _ => expected == actual,
    }
}

/// Matches each expected element to a distinct actual element (backtracking; arrays are small).
fn assign(expected: &[Value], actual: &[Value], used: &mut Vec<bool>) -> bool {
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
    use serde_json::json;

    #[test]
    fn subset_and_specials() {
        let msg = json!({"id": 1, "result": {"a": 1, "b": "hello world"}, "x": null});
        assert!(matches(&json!({"id": 1}), &msg));
        assert!(matches(&json!({"result": {"b": "<contains>lo w"}}), &msg));
        assert!(matches(&json!({"error": "<absent>", "x": "<any>"}), &msg));
        assert!(!matches(&json!({"result": "<absent>"}), &msg));
        assert!(!matches(&json!({"id": 2}), &msg));
        assert!(matches(&json!({"id": 1.0}), &msg));
        assert!(!matches(
            &json!([{"id": 2}, {"id": 1}]),
            &json!([{"id": 1}, {"id": 2}])
        ));
        assert!(matches(
            &json!(["<unordered>", {"id": 2}, {"id": 1}]),
            &json!([{"id": 1}, {"id": 2}])
        ));
        assert!(matches(
            &json!(["<subsequence>", {"id": 1}, {"id": 3}]),
            &json!([{"id": 1}, {"id": 2}, {"id": 3}])
        ));
        assert!(!matches(
            &json!(["<subsequence>", {"id": 3}, {"id": 1}]),
            &json!([{"id": 1}, {"id": 2}, {"id": 3}])
        ));
        assert!(!matches(
            &json!([{"id": 1}]),
            &json!([{"id": 1}, {"id": 2}])
        ));
        assert!(!matches(&json!({"id": null}), &json!([])));
    }

    #[test]
    fn placeholders() {
        let captured = json!({"r": {"params": {"requestId": "perm_\"1", "n": 3}}});
        let lookup = |name: &str| {
            let (label, path) = name.split_once('.').unwrap_or((name, ""));
            lookup_path(captured.get(label)?, path).cloned()
        };
        let text = fill(
            r#"{"requestId": "{{r.params.requestId}}", "n": {{r.params.n}}}"#,
            &lookup,
        )
        .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"requestId": "perm_\"1", "n": 3})
        );
        assert_eq!(
            fill("{{nope.x}}", &lookup),
            Err(FillError::Unknown("nope.x".into()))
        );
        assert!(fill("{{open", &lookup).is_err());
    }
}
