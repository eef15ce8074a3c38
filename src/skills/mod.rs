//! Agent Skills: `SKILL.md` files and their `allowed-tools` restriction.
//! (Placeholder: loading and the restriction land with the skills issue.)

use std::path::PathBuf;

use crate::protocol::Decision;

#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct SkillError {
    pub path: PathBuf,
    pub message: String,
}

/// One loaded skill.
#[derive(Debug, Clone)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The instructions put into context when the skill is activated.
    pub body: String,
}

impl Skill {
    /// `Err(text)` when the skill's `allowed-tools` do not cover this call.
    pub fn check(&self, _tool: &str, _decision: &Decision) -> Result<(), String> {
        Ok(())
    }
}

/// Every skill of the manifest's `[skills].directories`, by name.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    skills: Vec<Skill>,
}

impl Skills {
    pub fn load(dirs: &[PathBuf]) -> Result<Skills, SkillError> {
        let _ = dirs;
        Ok(Skills::default())
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }
}
