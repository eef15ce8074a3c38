//! Rule patterns: wildmatch with the trailing `" *"` rule.
//!
//! `*` matches any run of characters (`/` included), `?` one character. A pattern ending in
//! `" *"` also matches its bare head: `"rm *"` matches `rm` and `rm -rf x`, never `rmdir x`.
//!
//! Most rules are a literal, a literal prefix (`"git *"`) or a literal suffix (`"*.env"`); those
//! compile to plain string comparisons, the rest to a `WildMatch`. The semantics are the same.

use wildmatch::WildMatch;

#[derive(Debug, Clone)]
enum Matcher {
    Any,
    Exact(String),
    Prefix(String),
    Suffix(String),
    Wild(WildMatch),
}

impl Matcher {
    fn new(source: &str, case_insensitive: bool) -> Matcher {
        if case_insensitive {
            return Matcher::Wild(WildMatch::new_case_insensitive(source));
        }
        if source.contains('?') {
            return Matcher::Wild(WildMatch::new(source));
        }
        match source.matches('*').count() {
            0 => Matcher::Exact(source.to_string()),
            1 if source == "*" => Matcher::Any,
            1 if source.ends_with('*') => Matcher::Prefix(source[..source.len() - 1].to_string()),
            1 if source.starts_with('*') => Matcher::Suffix(source[1..].to_string()),
            _ => Matcher::Wild(WildMatch::new(source)),
        }
    }

    fn matches(&self, text: &str) -> bool {
        match self {
            Matcher::Any => true,
            Matcher::Exact(s) => text == s,
            Matcher::Prefix(p) => text.starts_with(p.as_str()),
            Matcher::Suffix(s) => text.ends_with(s.as_str()),
            Matcher::Wild(w) => w.matches(text),
        }
    }
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    full: Matcher,
    /// The pattern without its trailing `" *"`, matched against the bare command.
    bare: Option<Matcher>,
}

impl Pattern {
    fn compile(source: &str, case_insensitive: bool) -> Self {
        Pattern {
            full: Matcher::new(source, case_insensitive),
            bare: source
                .strip_suffix(" *")
                .map(|bare| Matcher::new(bare, case_insensitive)),
        }
    }

    /// A case-sensitive pattern (rule `pattern`).
    pub fn new(source: &str) -> Self {
        Pattern::compile(source, false)
    }

    /// A case-insensitive pattern (rule `tool`).
    pub fn case_insensitive(source: &str) -> Self {
        Pattern::compile(source, true)
    }

    pub fn matches(&self, text: &str) -> bool {
        self.full.matches(text) || self.bare.as_ref().is_some_and(|b| b.matches(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn trailing_space_star_matches_bare_command_but_not_longer_words() {
        let p = Pattern::new("rm *");
        assert!(p.matches("rm"));
        assert!(p.matches("rm -rf x"));
        assert!(!p.matches("rmdir x"));
        assert!(!p.matches("xrm y"));
    }

    #[test]
    fn star_crosses_slashes_and_question_mark_is_one_char() {
        assert!(Pattern::new("src/*").matches("src/a/b.rs"));
        assert!(Pattern::new("?.env").matches("a.env"));
        assert!(!Pattern::new("?.env").matches("ab.env"));
    }

    #[test]
    fn subject_patterns_are_case_sensitive_and_tool_patterns_are_not() {
        assert!(!Pattern::new("*.env").matches("X.ENV"));
        assert!(Pattern::case_insensitive("bash").matches("Bash"));
        assert!(Pattern::case_insensitive("file_*").matches("FILE_WRITE"));
    }

    proptest! {
        /// The fast paths agree with wildmatch itself on every pattern and text.
        #[test]
        fn fast_paths_agree_with_wildmatch(
            pattern in "[ab*? .]{0,6}",
            text in "[ab .]{0,8}",
        ) {
            let expected = WildMatch::new(&pattern).matches(&text)
                || pattern.strip_suffix(" *").is_some_and(|b| WildMatch::new(b).matches(&text));
            prop_assert_eq!(Pattern::new(&pattern).matches(&text), expected);
        }
    }
}
