//! Agent Skills: `SKILL.md` files and their `allowed-tools` restriction.
//!
//! Owns: loading `<dir>/<name>/SKILL.md` for every `[skills].directories` entry ([`frontmatter`]
//! for the file format), and the restriction a skill puts on the calls of the turn that activates
//! it ([`allowed`]). pod reads `allowed-tools` as a *restriction* (the spec calls it
//! pre-approval): it only ever narrows what the manifest allows, never grants. See
//! `docs/skills.md`.
//!
//! Must not touch: the permission rules. [`Skill::check`] reads the permission layer's
//! [`Decision`] for its subjects, never its action.

pub mod allowed;
pub mod frontmatter;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use allowed::{AllowedTools, Entry, EntryError};

use crate::protocol::Decision;

/// A skill that does not load: the file (or directory) and what is wrong, on one line.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct SkillError {
    pub path: PathBuf,
    pub message: String,
}

impl SkillError {
    fn new(path: &Path, message: impl Into<String>) -> SkillError {
        SkillError {
            path: path.to_path_buf(),
            message: message.into().replace('\n', " "),
        }
    }
}

/// One loaded skill.
#[derive(Debug, Clone)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The instructions put into context when the skill is activated.
    pub body: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// `None`: the skill restricts nothing. `Some` (even empty): only these calls may run.
    pub allowed_tools: Option<AllowedTools>,
    /// The `SKILL.md` it was read from.
    pub path: PathBuf,
}

impl Skill {
    /// Reads and validates one `SKILL.md`; `folder` is the name of the folder holding it.
    pub fn from_file(path: &Path, folder: &str) -> Result<Skill, SkillError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SkillError::new(path, format!("cannot read: {e}")))?;
        Skill::parse(&text, path, folder)
    }

    /// Validates `SKILL.md` text as if read from `path` in the folder `folder`.
    pub fn parse(text: &str, path: &Path, folder: &str) -> Result<Skill, SkillError> {
        let parsed = frontmatter::parse(text).map_err(|m| SkillError::new(path, m))?;
        if let Some(problem) = frontmatter::name_problem(&parsed.name) {
            return Err(SkillError::new(path, problem));
        }
        if parsed.name != folder {
            return Err(SkillError::new(
                path,
                format!(
                    "`name` \"{}\" must equal the skill's folder name \"{folder}\"",
                    parsed.name
                ),
            ));
        }
        Ok(Skill {
            name: parsed.name,
            description: parsed.description,
            body: parsed.body,
            license: parsed.license,
            compatibility: parsed.compatibility,
            metadata: parsed.metadata,
            allowed_tools: parsed.allowed_tools,
            path: path.to_path_buf(),
        })
    }

    /// `Err(text)` when the skill's `allowed-tools` do not cover this call: some entry must name
    /// `tool`, and every subject of `decision` must be covered by an entry of the subject's tool
    /// whose pattern matches it. Never grants: the permission hook runs after this anyway.
    pub fn check(&self, tool: &str, decision: &Decision) -> Result<(), String> {
        let Some(allowed) = &self.allowed_tools else {
            return Ok(());
        };
        allowed.check(tool, decision).map_err(|uncovered| {
            let verb = if uncovered.len() == 1 { "is" } else { "are" };
            format!(
                "denied by skill \"{}\": {} {verb} outside its allowed-tools ({allowed})",
                self.name,
                uncovered.join(", ")
            )
        })
    }
}

/// Every skill of the manifest's `[skills].directories`, by name.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    skills: Vec<Skill>,
}

impl Skills {
    /// Loads every skill; the first problem is the error.
    pub fn load(dirs: &[PathBuf]) -> Result<Skills, SkillError> {
        let (skills, mut errors) = Skills::load_all(dirs);
        if errors.is_empty() {
            Ok(skills)
        } else {
            Err(errors.remove(0))
        }
    }

    /// Loads every skill that loads and reports every one that does not (for `pod check`):
    /// a missing or unreadable directory, an invalid `SKILL.md`, a name used twice. Folders
    /// without a `SKILL.md` are skipped.
    pub fn load_all(dirs: &[PathBuf]) -> (Skills, Vec<SkillError>) {
        let mut skills: Vec<Skill> = Vec::new();
        let mut errors = Vec::new();
        for dir in dirs {
            let entries = match std::fs::read_dir(dir) {
                Ok(entries) => entries,
                Err(e) => {
                    let why = if e.kind() == std::io::ErrorKind::NotFound {
                        "skills directory does not exist (listed in [skills].directories)"
                            .to_string()
                    } else {
                        format!("cannot read skills directory: {e}")
                    };
                    errors.push(SkillError::new(dir, why));
                    continue;
                }
            };
            let mut folders: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            folders.sort();
            for folder in folders {
                let file = folder.join("SKILL.md");
                if !file.exists() {
                    continue;
                }
                let Some(name) = folder.file_name().and_then(|n| n.to_str()) else {
                    errors.push(SkillError::new(
                        &file,
                        "the skill's folder name is not valid UTF-8",
                    ));
                    continue;
                };
                match Skill::from_file(&file, name) {
                    Ok(skill) => match skills.iter().find(|s| s.name == skill.name) {
                        Some(first) => errors.push(SkillError::new(
                            &file,
                            format!(
                                "skill \"{}\" is already defined by {}",
                                skill.name,
                                first.path.display()
                            ),
                        )),
                        None => skills.push(skill),
                    },
                    Err(e) => errors.push(e),
                }
            }
        }
        (Skills { skills }, errors)
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Action, SubjectDecision};

    fn write(root: &Path, folder: &str, text: &str) -> PathBuf {
        let dir = root.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("SKILL.md");
        std::fs::write(&file, text).unwrap();
        file
    }

    fn decision(tool: &str, subject: &str) -> Decision {
        Decision {
            decision: Action::Allow,
            subjects: vec![SubjectDecision {
                tool: tool.into(),
                subject: subject.into(),
                action: Action::Allow,
                rule: None,
                opaque: false,
                invalid: false,
                note: None,
            }],
        }
    }

    #[test]
    fn loads_skills_and_skips_folders_without_skill_md() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            "release-notes",
            "---\nname: release-notes\ndescription: Drafts notes.\nallowed-tools: Bash(git *) Read\n---\nUse git log.\n",
        );
        std::fs::create_dir_all(tmp.path().join("not-a-skill")).unwrap();
        let skills = Skills::load(&[tmp.path().to_path_buf()]).unwrap();
        assert_eq!(skills.names(), vec!["release-notes"]);
        assert_eq!(
            skills.get("release-notes").map(|s| s.body.as_str()),
            Some("Use git log.\n")
        );
    }

    #[test]
    fn missing_directory_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = Skills::load(std::slice::from_ref(&missing)).unwrap_err();
        assert_eq!(err.path, missing);
        assert!(err.to_string().contains("does not exist"), "{err}");
    }

    #[test]
    fn bad_frontmatter_names_the_file_and_the_entry() {
        let tmp = tempfile::tempdir().unwrap();
        let no_desc = write(tmp.path(), "a", "---\nname: a\n---\n");
        let wrong_name = write(tmp.path(), "b", "---\nname: c\ndescription: d\n---\n");
        let bad_entry = write(
            tmp.path(),
            "e",
            "---\nname: e\ndescription: d\nallowed-tools: Read Bash(git *\n---\n",
        );
        let (skills, errors) = Skills::load_all(&[tmp.path().to_path_buf()]);
        assert!(skills.names().is_empty());
        let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with(&no_desc.display().to_string()));
        assert!(
            lines[0].contains("`description` is required"),
            "{}",
            lines[0]
        );
        assert!(lines[1].starts_with(&wrong_name.display().to_string()));
        assert!(lines[1].contains("must equal the skill's folder name \"b\""));
        assert!(lines[2].starts_with(&bad_entry.display().to_string()));
        assert!(lines[2].contains("`Bash(git *`"), "{}", lines[2]);
        assert!(lines.iter().all(|l| !l.contains('\n')));
        // `load` fails on the first
        assert!(Skills::load(&[tmp.path().to_path_buf()]).is_err());
    }

    #[test]
    fn duplicate_names_across_directories_are_an_error() {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        let text = "---\nname: s\ndescription: d\n---\n";
        write(one.path(), "s", text);
        let second = write(two.path(), "s", text);
        let err = Skills::load(&[one.path().to_path_buf(), two.path().to_path_buf()]).unwrap_err();
        assert_eq!(err.path, second);
        assert!(err.message.contains("already defined"), "{err}");
    }

    #[test]
    fn check_restricts_only_with_allowed_tools() {
        let free = Skill::parse(
            "---\nname: free\ndescription: d\n---\n",
            Path::new("free/SKILL.md"),
            "free",
        )
        .unwrap();
        assert!(free.check("bash", &decision("bash", "rm x")).is_ok());

        let notes = Skill::parse(
            "---\nname: release-notes\ndescription: d\nallowed-tools: Bash(git *), Read\n---\n",
            Path::new("release-notes/SKILL.md"),
            "release-notes",
        )
        .unwrap();
        assert!(notes.check("bash", &decision("bash", "git status")).is_ok());
        assert!(notes.check("read", &decision("read", "x")).is_ok());
        assert_eq!(
            notes.check("bash", &decision("bash", "rm x")).unwrap_err(),
            "denied by skill \"release-notes\": bash `rm x` is outside its allowed-tools \
             (Bash(git *), Read)"
        );
        let err = notes
            .check("file_write", &decision("file_write", "x"))
            .unwrap_err();
        assert!(err.contains("file_write is outside"), "{err}");
    }
}
