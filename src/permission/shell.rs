//! Shell command parsing into permission subjects. (Placeholder interface; the real parser
//! lands from the `shell` branch.)

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSubjects {
    pub commands: Vec<ShellCommand>,
    pub redirects: Vec<ShellRedirect>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellCommand {
    pub text: String,
    pub path_form: Option<String>,
    pub opaque: Option<Opaque>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    Read,
    Write,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRedirect {
    pub kind: RedirectKind,
    pub path: String,
    pub opaque: Option<Opaque>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opaque {
    ParseError(String),
}

impl Opaque {
    pub fn describe(&self) -> String {
        "unparsed".into()
    }
}

pub fn extract(command: &str) -> ShellSubjects {
    ShellSubjects {
        commands: vec![ShellCommand {
            text: command.trim().to_string(),
            path_form: None,
            opaque: Some(Opaque::ParseError("placeholder".into())),
        }],
        redirects: vec![],
    }
}
