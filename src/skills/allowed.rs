//! A skill's `allowed-tools`: parsing the three spellings and checking a call against the list.
//!
//! Entries are `Tool` or `Tool(pattern)`. They are separated by whitespace or commas outside
//! parentheses, so `Bash(git *)` is one entry. Tool names are case-insensitive; Claude Code's
//! names map to pod's (`Write` is `file_write`). The pattern is the rule pattern language of
//! `permissions.md` ([`Pattern`]), with one translation: Claude Code's trailing `:*`
//! (`Bash(git:*)`, the spec's own example) is read as the rule language's trailing ` *`.

use std::fmt;

use crate::builtin::Builtin;
use crate::permission::Pattern;
use crate::protocol::Decision;

/// The pod tool an entry's (lowercased) tool name stands for: a built-in's own name, or Claude
/// Code's `Write` for `file_write`.
fn tool_named(lower: &str) -> Option<&'static str> {
    match lower {
        "write" => Some(Builtin::FileWrite.name()),
        _ => Builtin::from_name(lower).map(Builtin::name),
    }
}

/// Why an `allowed-tools` entry cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allowed-tools entry `{entry}`: {why}")]
pub struct EntryError {
    pub entry: String,
    pub why: String,
}

impl EntryError {
    fn new(entry: &str, why: impl Into<String>) -> EntryError {
        EntryError {
            entry: entry.to_string(),
            why: why.into(),
        }
    }
}

/// One entry: the pod tool it names and, optionally, the pattern its subjects must match.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The entry as written in `SKILL.md`.
    pub source: String,
    /// The pod tool name (`bash`, `read`, `file_write`, `edit`, `grep`, `glob`).
    pub tool: String,
    /// The pattern as the rule language reads it (after the `:*` translation).
    pub pattern: Option<String>,
    compiled: Option<Pattern>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.tool == other.tool && self.pattern == other.pattern
    }
}

impl Entry {
    /// Parses one entry (`Read`, `Bash(git *)`).
    pub fn parse(source: &str) -> Result<Entry, EntryError> {
        let source = source.trim();
        let (name, pattern) = match source.find('(') {
            None => {
                if source.contains(')') {
                    return Err(EntryError::new(
                        source,
                        "unbalanced parentheses (a \")\" without \"(\")",
                    ));
                }
                (source, None)
            }
            Some(open) => {
                let Some(inner) = source[open + 1..].strip_suffix(')') else {
                    return Err(EntryError::new(
                        source,
                        "unbalanced parentheses (write `Tool(pattern)`, ending with \")\")",
                    ));
                };
                (&source[..open], Some(inner))
            }
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(EntryError::new(source, "no tool name before \"(\""));
        }
        let lower = name.to_ascii_lowercase();
        let Some(tool) = tool_named(&lower) else {
            return Err(EntryError::new(
                source,
                format!(
                    "unknown tool \"{name}\" (known, case-insensitive: Bash, Read, Write or \
                     file_write, Edit, Grep, Glob)"
                ),
            ));
        };
        let pattern = match pattern {
            None => None,
            Some(inner) => {
                if !balanced(inner) {
                    return Err(EntryError::new(
                        source,
                        "unbalanced parentheses inside the pattern",
                    ));
                }
                let inner = inner.trim();
                if inner.is_empty() {
                    return Err(EntryError::new(
                        source,
                        "empty pattern (write the tool alone to allow all of its calls)",
                    ));
                }
                let translated = match inner.strip_suffix(":*") {
                    Some(head) if !head.is_empty() => format!("{head} *"),
                    _ => inner.to_string(),
                };
                Some(translated)
            }
        };
        Ok(Entry {
            source: source.to_string(),
            tool: (*tool).to_string(),
            compiled: pattern.as_deref().map(Pattern::new),
            pattern,
        })
    }

    /// Whether this entry covers `subject` of `tool` (the subject's tool, as the decision says).
    fn covers(&self, tool: &str, subject: &str) -> bool {
        self.tool.eq_ignore_ascii_case(tool)
            && self.compiled.as_ref().is_none_or(|p| p.matches(subject))
    }
}

/// Parentheses in `text` never close more than they opened, and all opened close.
fn balanced(text: &str) -> bool {
    let mut depth: usize = 0;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0
}

/// Splits a string of entries on whitespace and commas outside parentheses.
pub fn split(text: &str) -> Result<Vec<String>, EntryError> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth: usize = 0;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                current.push(c);
                match depth.checked_sub(1) {
                    Some(d) => depth = d,
                    None => {
                        return Err(EntryError::new(
                            &current,
                            "unbalanced parentheses (a \")\" without \"(\")",
                        ))
                    }
                }
            }
            c if depth == 0 && (c.is_whitespace() || c == ',') => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if depth > 0 {
        return Err(EntryError::new(
            current.trim(),
            "unbalanced parentheses (missing \")\")",
        ));
    }
    if !current.is_empty() {
        out.push(current);
    }
    Ok(out)
}

/// A parsed `allowed-tools` list. An empty list allows no tool at all.
#[derive(Debug, Clone, PartialEq)]
pub struct AllowedTools {
    pub entries: Vec<Entry>,
}

impl AllowedTools {
    /// Parses the spec's space-separated string or a comma-separated one.
    pub fn parse_str(text: &str) -> Result<AllowedTools, EntryError> {
        let entries = split(text)?
            .iter()
            .map(|e| Entry::parse(e))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AllowedTools { entries })
    }

    /// Parses a YAML list: each item is one entry (or several, separated as in a string).
    pub fn parse_list<S: AsRef<str>>(items: &[S]) -> Result<AllowedTools, EntryError> {
        let mut entries = Vec::new();
        for item in items {
            let item = item.as_ref();
            if item.trim().is_empty() {
                return Err(EntryError::new(item, "empty list item"));
            }
            entries.extend(AllowedTools::parse_str(item)?.entries);
        }
        Ok(AllowedTools { entries })
    }

    /// `Ok` when the list covers the call: some entry names `tool`, and every subject of the
    /// decision is covered by an entry of the subject's tool whose pattern (if any) matches the
    /// subject text. A decision without subjects is checked by the tool name alone. `Err`
    /// carries the uncovered subjects as `tool \`subject\``, or the bare tool name.
    pub fn check(&self, tool: &str, decision: &Decision) -> Result<(), Vec<String>> {
        if !self
            .entries
            .iter()
            .any(|e| e.tool.eq_ignore_ascii_case(tool))
        {
            return Err(vec![tool.to_string()]);
        }
        let uncovered: Vec<String> = decision
            .subjects
            .iter()
            .filter(|s| !self.entries.iter().any(|e| e.covers(&s.tool, &s.subject)))
            .map(|s| format!("{} `{}`", s.tool, s.subject))
            .collect();
        if uncovered.is_empty() {
            Ok(())
        } else {
            Err(uncovered)
        }
    }
}

impl fmt::Display for AllowedTools {
    /// The entries as written, comma-separated; `none` for an empty list.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.entries.is_empty() {
            return f.write_str("none");
        }
        let list: Vec<&str> = self.entries.iter().map(|e| e.source.as_str()).collect();
        f.write_str(&list.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Action, SubjectDecision};

    fn decision(subjects: &[(&str, &str)]) -> Decision {
        Decision {
            decision: Action::Allow,
            subjects: subjects
                .iter()
                .map(|(tool, subject)| SubjectDecision {
                    tool: tool.to_string(),
                    subject: subject.to_string(),
                    action: Action::Allow,
                    rule: None,
                    opaque: false,
                    invalid: false,
                    note: None,
                })
                .collect(),
        }
    }

    #[test]
    fn three_spellings_parse_to_the_same_list() {
        let spaced = AllowedTools::parse_str("Bash(git *) Read  Write(docs/*)").unwrap();
        let commas = AllowedTools::parse_str("Bash(git *), Read,Write(docs/*)").unwrap();
        let list = AllowedTools::parse_list(&["Bash(git *)", "Read", "Write(docs/*)"]).unwrap();
        assert_eq!(spaced, commas);
        assert_eq!(spaced, list);
        let tools: Vec<(&str, Option<&str>)> = spaced
            .entries
            .iter()
            .map(|e| (e.tool.as_str(), e.pattern.as_deref()))
            .collect();
        assert_eq!(
            tools,
            vec![
                ("bash", Some("git *")),
                ("read", None),
                ("file_write", Some("docs/*"))
            ]
        );
    }

    #[test]
    fn tool_names_are_case_insensitive_and_pod_names_are_accepted() {
        let a = AllowedTools::parse_str("bash READ file_write Edit grep GLOB").unwrap();
        let b = AllowedTools::parse_str("Bash Read Write edit Grep Glob").unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn claude_colon_star_reads_as_trailing_space_star() {
        let list = AllowedTools::parse_str("Bash(git:*)").unwrap();
        assert_eq!(list.entries[0].pattern.as_deref(), Some("git *"));
        assert!(list.check("bash", &decision(&[("bash", "git")])).is_ok());
        assert!(list
            .check("bash", &decision(&[("bash", "git status")]))
            .is_ok());
        assert!(list.check("bash", &decision(&[("bash", "gitk")])).is_err());
    }

    #[test]
    fn unreadable_entries_are_errors_naming_the_entry() {
        for (text, entry) in [
            ("Bash(git *", "Bash(git *"),
            ("Read Bash(git *", "Bash(git *"),
            ("Bash(git *))", "Bash(git *))"),
            ("Bash()", "Bash()"),
            ("Bash(  )", "Bash(  )"),
            ("WebFetch", "WebFetch"),
            ("(git *)", "(git *)"),
            ("Read)", "Read)"),
        ] {
            let err = AllowedTools::parse_str(text).unwrap_err();
            assert_eq!(err.entry, entry, "{text}: {err}");
        }
        assert!(AllowedTools::parse_list(&["Read", ""]).is_err());
    }

    #[test]
    fn patterns_may_hold_spaces_commas_and_nested_parentheses() {
        let list = AllowedTools::parse_str("Bash(echo (a, b) *), Read").unwrap();
        assert_eq!(list.entries.len(), 2);
        assert_eq!(list.entries[0].pattern.as_deref(), Some("echo (a, b) *"));
    }

    #[test]
    fn git_pattern_covers_git_status_not_rm() {
        let list = AllowedTools::parse_str("Bash(git *) Read").unwrap();
        assert!(list
            .check("bash", &decision(&[("bash", "git status")]))
            .is_ok());
        let err = list
            .check("bash", &decision(&[("bash", "rm x")]))
            .unwrap_err();
        assert_eq!(err, vec!["bash `rm x`".to_string()]);
        // every subject must be covered
        assert!(list
            .check(
                "bash",
                &decision(&[("bash", "git status"), ("bash", "rm x")])
            )
            .is_err());
    }

    #[test]
    fn redirection_targets_need_a_write_entry() {
        let d = decision(&[("bash", "git log"), ("file_write", "out.txt")]);
        let without = AllowedTools::parse_str("Bash(git *)").unwrap();
        assert_eq!(
            without.check("bash", &d).unwrap_err(),
            vec!["file_write `out.txt`".to_string()]
        );
        let with = AllowedTools::parse_str("Bash(git *) Write(*.txt)").unwrap();
        assert!(with.check("bash", &d).is_ok());
    }

    #[test]
    fn a_tool_the_list_does_not_name_is_denied_even_without_subjects() {
        let list = AllowedTools::parse_str("Write(*.txt)").unwrap();
        // only a redirection, no command: still a bash call, and Bash is not listed
        let d = decision(&[("file_write", "out.txt")]);
        assert_eq!(
            list.check("bash", &d).unwrap_err(),
            vec!["bash".to_string()]
        );
        assert!(list.check("file_write", &decision(&[])).is_ok());
        assert!(list.check("read", &decision(&[])).is_err());
    }

    #[test]
    fn empty_list_allows_nothing() {
        let list = AllowedTools::parse_str("").unwrap();
        assert!(list.entries.is_empty());
        assert!(list.check("read", &decision(&[("read", "x")])).is_err());
        assert_eq!(list.to_string(), "none");
    }
}
