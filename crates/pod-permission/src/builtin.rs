//! The table of built-in tools: each one's name, how the permission layer reads its input, and
//! which other tools' rules govern it.
//!
//! Owns: the one list of built-in tool names. The manifest checks `[tools] enabled` against it,
//! the permission layer indexes rules and reads subjects by it, skills map `allowed-tools`
//! names onto it, and `tools::builtin` turns each entry into its implementation with an
//! exhaustive match, so a tool added here cannot be forgotten there.
//!
//! Must not touch: anything else of the crate. This module depends on nothing of ours.

/// One built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    Bash,
    Read,
    FileWrite,
    Edit,
    Grep,
    Glob,
    WebFetch,
    Plan,
}

/// How a tool's input turns into subjects (the table in docs/permissions.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectKind {
    /// `command` is a shell command line: every simple command, plus redirection targets.
    Shell,
    /// `path` is the file the tool touches (required).
    Path,
    /// `path` is a search root (optional, default the workspace).
    SearchRoot,
    /// A tool of an MCP server (`mcp__SERVER__TOOL`): its arguments as a `key=value` line, plus
    /// a path subject per argument that names a file (`permission::mcp`).
    Mcp,
    /// `url` is fetched: its host (and port when not 80/443) under the `network` rules.
    Url,
    /// The call changes nothing outside the conversation (`plan`): no subjects, so nothing to
    /// decide; leaving the tool out of `[tools] enabled` is how it is kept from the model.
    Nothing,
    /// The `network` rules' own input (`{"host": …, "port": …}`): a connection a call's
    /// processes open through pod's proxy, or `pod explain --tool network`.
    Network,
    /// Anything else: the JSON of the input, keys sorted.
    Json,
}

/// How every MCP tool's name starts: `mcp__SERVER__TOOL`.
pub const MCP_PREFIX: &str = "mcp__";

impl Builtin {
    /// Every built-in tool, in the order `initialize` lists them.
    pub const ALL: &'static [Builtin] = &[
        Builtin::Bash,
        Builtin::Read,
        Builtin::FileWrite,
        Builtin::Edit,
        Builtin::Grep,
        Builtin::Glob,
        Builtin::WebFetch,
        Builtin::Plan,
    ];

    /// The tools a manifest without `[tools] enabled` gets: all but `web_fetch`, which reaches
    /// the network from the pod's own process, and `plan`, which a client must know to show:
    /// both are enabled only by name.
    pub fn default_enabled() -> Vec<&'static str> {
        Builtin::ALL
            .iter()
            .filter(|b| !matches!(b, Builtin::WebFetch | Builtin::Plan))
            .map(|b| b.name())
            .collect()
    }

    /// The tool's name on the wire and in rules.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Bash => "bash",
            Builtin::Read => "read",
            Builtin::FileWrite => "file_write",
            Builtin::Edit => "edit",
            Builtin::Grep => "grep",
            Builtin::Glob => "glob",
            Builtin::WebFetch => "web_fetch",
            Builtin::Plan => "plan",
        }
    }

    /// The built-in tool called `name` (exactly; names are lowercase).
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.iter().copied().find(|b| b.name() == name)
    }

    /// Every name, for messages ("pod has: bash, read, …").
    pub fn names() -> Vec<&'static str> {
        Builtin::ALL.iter().map(|b| b.name()).collect()
    }

    pub fn subject_kind(self) -> SubjectKind {
        match self {
            Builtin::Bash => SubjectKind::Shell,
            Builtin::Read | Builtin::FileWrite | Builtin::Edit => SubjectKind::Path,
            Builtin::Grep | Builtin::Glob => SubjectKind::SearchRoot,
            Builtin::WebFetch => SubjectKind::Url,
            Builtin::Plan => SubjectKind::Nothing,
        }
    }

    /// The tools whose rules govern this tool's path subjects besides its own rules
    /// (docs/permissions.md, "Rules follow the kind of access"): an edit replaces a file (a
    /// write) and tells whether text occurs in it (a read); grep and glob read.
    pub fn governed_by(self) -> &'static [Builtin] {
        match self {
            Builtin::Edit => &[Builtin::FileWrite, Builtin::Read],
            Builtin::Grep | Builtin::Glob => &[Builtin::Read],
            Builtin::Bash
            | Builtin::Read
            | Builtin::FileWrite
            | Builtin::WebFetch
            | Builtin::Plan => &[],
        }
    }
}

impl SubjectKind {
    /// The kind of a tool by name: the built-ins have theirs, a name starting with `mcp__` (in
    /// any case, as rules match names) is `Mcp`, anything else is `Json`.
    pub fn of(tool: &str) -> SubjectKind {
        match Builtin::from_name(tool) {
            Some(builtin) => builtin.subject_kind(),
            None if tool == "network" => SubjectKind::Network,
            None if tool
                .get(..MCP_PREFIX.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(MCP_PREFIX)) =>
            {
                SubjectKind::Mcp
            }
            None => SubjectKind::Json,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        for &b in Builtin::ALL {
            assert_eq!(Builtin::from_name(b.name()), Some(b));
        }
        let mut names = Builtin::names();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Builtin::ALL.len());
        assert_eq!(Builtin::from_name("Bash"), None);
        assert_eq!(SubjectKind::of("mcp_thing"), SubjectKind::Json);
        assert_eq!(SubjectKind::of("grep"), SubjectKind::SearchRoot);
        assert_eq!(SubjectKind::of("mcp__fs__read_file"), SubjectKind::Mcp);
        assert_eq!(SubjectKind::of("MCP__fs__x"), SubjectKind::Mcp);
        assert_eq!(SubjectKind::of("mcp_"), SubjectKind::Json);
    }

    #[test]
    fn a_tool_is_never_governed_by_itself() {
        for &b in Builtin::ALL {
            assert!(!b.governed_by().contains(&b), "{b:?}");
        }
    }
}
