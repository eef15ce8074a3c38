//! Rule patterns: wildmatch with the trailing `" *"` rule.
//!
//! `*` matches any run of characters (`/` included), `?` one character. A pattern ending in
//! `" *"` also matches its bare head: `"rm *"` matches `rm` and `rm -rf x`, never `rmdir x`.

use wildmatch::WildMatch;

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    full: WildMatch,
    /// The pattern without its trailing `" *"`, matched exactly against the bare command.
    bare: Option<WildMatch>,
}

impl Pattern {
    /// A case-sensitive pattern (rule `pattern`).
    pub fn new(source: &str) -> Self {
        Pattern {
            full: WildMatch::new(source),
            bare: source.strip_suffix(" *").map(WildMatch::new),
        }
    }

    /// A case-insensitive pattern (rule `tool`).
    pub fn case_insensitive(source: &str) -> Self {
        Pattern {
            full: WildMatch::new_case_insensitive(source),
            bare: source
                .strip_suffix(" *")
                .map(WildMatch::new_case_insensitive),
        }
    }

    pub fn matches(&self, text: &str) -> bool {
        self.full.matches(text) || self.bare.as_ref().is_some_and(|b| b.matches(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
