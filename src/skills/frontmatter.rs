//! `SKILL.md`: YAML frontmatter between `---` lines, then the Markdown body.
//!
//! Strict on purpose: a key outside the Agent Skills spec's fields is an error (the reference
//! validator does the same), so a typo such as `allowed_tools` cannot silently drop a
//! restriction.

use std::collections::BTreeMap;

use serde_yaml::Value;

use super::allowed::AllowedTools;

/// The frontmatter keys of the Agent Skills spec.
pub const KEYS: [&str; 6] = [
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

/// The parsed frontmatter and body of one `SKILL.md`.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub name: String,
    pub description: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub allowed_tools: Option<AllowedTools>,
    pub body: String,
}

/// Splits `text` into the frontmatter (without the `---` lines) and the body.
fn split(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err("does not start with a `---` line (YAML frontmatter is required)".into());
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[start..at], &text[at + line.len()..]));
        }
        at += line.len();
    }
    Err("the frontmatter has no closing `---` line".into())
}

fn string_field(map: &serde_yaml::Mapping, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Null) => Err(format!("`{key}` has no value")),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// A scalar metadata value as text (the spec says string to string; numbers and booleans are
/// taken as written).
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Parses a whole `SKILL.md`. Errors are one line and name the key or entry at fault.
pub fn parse(text: &str) -> Result<Parsed, String> {
    let (yaml, body) = split(text)?;
    let value: Value = serde_yaml::from_str(yaml).map_err(|e| {
        // Lines in serde_yaml's message count from the first frontmatter line; the file's
        // first line is `---`.
        let detail = match e.location() {
            Some(l) => format!(
                "{} (line {} of the file)",
                e.to_string().split(" at line ").next().unwrap_or_default(),
                l.line() + 1
            ),
            None => e.to_string(),
        };
        format!("invalid YAML frontmatter: {}", detail.replace('\n', " "))
    })?;
    let map = match value {
        Value::Mapping(m) => m,
        Value::Null => {
            return Err("the frontmatter is empty (`name` and `description` are required)".into())
        }
        _ => return Err("the frontmatter must be a YAML mapping of keys to values".into()),
    };
    let mut unknown = Vec::new();
    for key in map.keys() {
        match key {
            Value::String(k) if KEYS.contains(&k.as_str()) => {}
            Value::String(k) => unknown.push(format!("`{k}`")),
            other => unknown.push(format!(
                "`{}`",
                serde_yaml::to_string(other).unwrap_or_default().trim()
            )),
        }
    }
    if !unknown.is_empty() {
        return Err(format!(
            "unknown frontmatter key{} {} (pod accepts only the Agent Skills fields: {})",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", "),
            KEYS.join(", ")
        ));
    }

    let name = string_field(&map, "name")?.ok_or("`name` is required")?;
    let description = string_field(&map, "description")?
        .ok_or("`description` is required (what the skill does and when to use it)")?;
    if description.trim().is_empty() {
        return Err("`description` is empty".into());
    }
    if description.chars().count() > 1024 {
        return Err("`description` is longer than 1024 characters".into());
    }
    let license = string_field(&map, "license")?;
    let compatibility = string_field(&map, "compatibility")?;
    if let Some(c) = &compatibility {
        let n = c.chars().count();
        if n == 0 || n > 500 {
            return Err("`compatibility` must be 1 to 500 characters".into());
        }
    }
    let mut metadata = BTreeMap::new();
    match map.get("metadata") {
        None => {}
        Some(Value::Mapping(m)) => {
            for (k, v) in m {
                let (Some(k), Some(v)) = (scalar_text(k), scalar_text(v)) else {
                    return Err("`metadata` must map strings to strings".into());
                };
                metadata.insert(k, v);
            }
        }
        Some(_) => return Err("`metadata` must be a mapping of strings to strings".into()),
    }
    let allowed_tools =
        match map.get("allowed-tools") {
            None => None,
            Some(Value::String(s)) => Some(AllowedTools::parse_str(s).map_err(|e| e.to_string())?),
            Some(Value::Sequence(items)) => {
                let mut texts = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(s) => texts.push(s.clone()),
                        other => {
                            return Err(format!(
                                "allowed-tools: every list item must be a string, found `{}`",
                                serde_yaml::to_string(other).unwrap_or_default().trim()
                            ))
                        }
                    }
                }
                Some(AllowedTools::parse_list(&texts).map_err(|e| e.to_string())?)
            }
            Some(Value::Null) => {
                return Err(
                    "`allowed-tools` has no value: write `allowed-tools: []` to allow no tool, or \
                 remove the key to restrict nothing"
                        .into(),
                )
            }
            Some(_) => return Err(
                "`allowed-tools` must be a space- or comma-separated string or a list of strings"
                    .into(),
            ),
        };
    Ok(Parsed {
        name,
        description,
        license,
        compatibility,
        metadata,
        allowed_tools,
        body: body.trim_start_matches(['\r', '\n']).to_string(),
    })
}

/// Why `name` is not a valid skill name, if it is not.
pub fn name_problem(name: &str) -> Option<String> {
    let n = name.chars().count();
    if n == 0 || n > 64 {
        return Some(format!("`name` \"{name}\" must be 1 to 64 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Some(format!(
            "`name` \"{name}\" may hold only lowercase letters, digits and hyphens"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Some(format!(
            "`name` \"{name}\" must not start or end with a hyphen or hold two in a row"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_and_body() {
        let p = parse(
            "---\nname: notes\ndescription: Writes notes.\nlicense: MIT\n\
             compatibility: any\nmetadata:\n  author: me\n  version: 1.0\n\
             allowed-tools: Bash(git *) Read\n---\n\n# Notes\nDo it.\n",
        )
        .unwrap();
        assert_eq!(p.name, "notes");
        assert_eq!(p.description, "Writes notes.");
        assert_eq!(p.license.as_deref(), Some("MIT"));
        assert_eq!(p.metadata.get("version").map(String::as_str), Some("1.0"));
        assert_eq!(p.allowed_tools.unwrap().entries.len(), 2);
        assert_eq!(p.body, "# Notes\nDo it.\n");
    }

    #[test]
    fn three_spellings_in_yaml() {
        let get = |v: &str| {
            parse(&format!(
                "---\nname: a\ndescription: d\nallowed-tools: {v}\n---\n"
            ))
            .unwrap()
            .allowed_tools
            .unwrap()
        };
        let spaced = get("Bash(git *) Read");
        assert_eq!(spaced, get("\"Bash(git *), Read\""));
        assert_eq!(spaced, get("\n  - Bash(git *)\n  - Read"));
        assert_eq!(spaced, get("[\"Bash(git *)\", Read]"));
    }

    #[test]
    fn errors() {
        let cases = [
            ("no frontmatter\n", "does not start"),
            ("---\nname: a\n", "no closing"),
            ("---\nname: a\n---\n", "`description` is required"),
            (
                "---\nname: a\ndescription: \"\"\n---\n",
                "`description` is empty",
            ),
            ("---\ndescription: d\n---\n", "`name` is required"),
            (
                "---\nname: a\ndescription: d\nallowed_tools: Read\n---\n",
                "unknown frontmatter key `allowed_tools`",
            ),
            (
                "---\nname: a\ndescription: d\nallowed-tools: Bash(git *\n---\n",
                "allowed-tools entry `Bash(git *`",
            ),
            (
                "---\nname: a\ndescription: d\nallowed-tools:\n---\n",
                "`allowed-tools` has no value",
            ),
            ("---\nname: [a\n---\n", "invalid YAML frontmatter"),
        ];
        for (text, want) in cases {
            let err = parse(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn names() {
        for good in ["a", "release-notes", "x1-2", &"a".repeat(64)] {
            assert_eq!(name_problem(good), None, "{good}");
        }
        for bad in ["", "A", "-a", "a-", "a--b", "a_b", "a b", &"a".repeat(65)] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }
}
