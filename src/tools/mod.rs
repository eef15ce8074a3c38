//! The built-in tools: what each does, its input schema, and running it.
//!
//! Owns: `bash`, `read`, `file_write`, `edit`, `grep`, `glob`, `web_fetch`, `plan`, each in its own file, and the
//! [`Tool`] trait they share. A tool gets input the permission layer has already let through;
//! it validates the input's shape itself (bad input is an error result, never a panic).
//!
//! Must not touch: permission decisions, scope, the session log, the wire. Which subjects a
//! tool's input yields is decided by `permission::SubjectKind::of`, not here, so that runtime and
//! `pod explain` share one code path. A path tool opens the [`Target`] the runtime pinned and
//! checked, through [`confined`], never its input path again; what the rules say about the files
//! a walk meets or about other names of a file comes from [`FileRules`]. When the client is an
//! editor serving its buffers, `read`, `file_write` and `edit` go through [`EditorFiles`] for
//! that same target.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::builtin::Builtin;
use crate::network::{Net, NetworkAsk, Proxy, Report};
use crate::permission::{path, FileRules};
use crate::protocol::{ToolAnnotations, ToolInfo};
use crate::sandbox::Sandbox;
pub use editor::{EditorError, EditorFiles};

pub mod bash;
pub mod common;
pub mod confined;
pub mod edit;
pub mod editor;
pub mod file_write;
pub mod glob;
pub mod grep;
pub mod plan;
pub mod read;
pub mod web_fetch;

/// What a tool run produced: text for the model, and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
        }
    }
}

/// The location a path tool works on, pinned by the runtime when the checks passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Absolute and symlink-free: the location the permission layer and scope checked.
    pub path: PathBuf,
    /// The folder it is opened beneath: the writable root holding it for writes, `/` for reads.
    pub beneath: PathBuf,
}

/// What a running tool may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace (canonical); relative paths in inputs start here.
    pub workspace: PathBuf,
    /// Cancelled when the turn is cancelled: a tool stops (and kills its processes) promptly.
    pub cancel: CancellationToken,
    /// For `read`, `file_write`, `edit`, `grep` and `glob`: the checked location of `path`.
    pub target: Option<Target>,
    /// The rules' view of the files a walk meets and of hard links.
    pub files: Arc<FileRules>,
    /// The session's sandbox: every process a tool starts is prepared by it.
    pub sandbox: Arc<Sandbox>,
    /// The editor's files, when the client serves them: `read`, `file_write` and `edit` go
    /// through it for the pinned target instead of the disk.
    pub editor: Option<Arc<dyn EditorFiles>>,
    /// The call's id (for what the proxy records of it).
    pub call_id: String,
    /// The `network` rules, for `web_fetch` (its redirects are decided again per hop).
    pub net: Option<Arc<Net>>,
    /// The session's proxy under `[sandbox] network = "proxy"`: `bash` sends its processes
    /// through it.
    pub proxy: Option<Arc<Proxy>>,
    /// Where the proxy's asks for this call go (the runtime settles them).
    pub asks: Option<tokio::sync::mpsc::Sender<NetworkAsk>>,
    /// Where the proxy reports this call's connections (the runtime records them).
    pub connections: Option<tokio::sync::mpsc::UnboundedSender<Report>>,
    /// Decides each exec of a `bash` call when the sandbox's exec gate is on (the runtime's
    /// judge for this call); `None`: the call runs ungated.
    pub exec_gate: Option<Arc<dyn crate::sandbox::gate::ExecJudge>>,
}

impl ToolContext {
    /// A context for `workspace` with a fresh, uncancelled token, no pinned target, no rules
    /// and no sandbox ([`Sandbox::off`]), for using tools without a pod; the pod passes its
    /// session's own.
    pub fn new(workspace: impl Into<PathBuf>) -> ToolContext {
        let workspace = workspace.into();
        ToolContext {
            files: Arc::new(FileRules::none(&workspace)),
            workspace,
            cancel: CancellationToken::new(),
            target: None,
            sandbox: Arc::new(Sandbox::off()),
            editor: None,
            call_id: String::new(),
            net: None,
            proxy: None,
            asks: None,
            connections: None,
            exec_gate: None,
        }
    }

    /// The editor, when reads go through it.
    pub fn editor_reads(&self) -> Option<&Arc<dyn EditorFiles>> {
        self.editor
            .as_ref()
            .filter(|e| e.reads() && !self.in_tmpfs())
    }

    /// The editor, when writes go through it.
    pub fn editor_writes(&self) -> Option<&Arc<dyn EditorFiles>> {
        self.editor
            .as_ref()
            .filter(|e| e.writes() && !self.in_tmpfs())
    }

    /// Whether the pinned target lies in a session's `$TMPDIR` tmpfs, which the editor cannot
    /// serve: it runs outside the sandbox, where that folder is empty (`sandbox::tmpfs`).
    fn in_tmpfs(&self) -> bool {
        self.target
            .as_ref()
            .is_some_and(|t| crate::sandbox::tmpfs::covers(&t.path))
    }

    /// The location to open for the input path `raw`: the pinned target, or without one `raw`
    /// resolved now.
    pub fn target(&self, raw: &Path) -> Target {
        match &self.target {
            Some(target) => target.clone(),
            None => Target {
                path: path::resolve_in(&self.workspace, raw),
                beneath: PathBuf::from("/"),
            },
        }
    }
}

/// What kind of thing a call does, as an editor groups calls (ACP's tool kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Execute,
    Read,
    Edit,
    Search,
    Fetch,
    Other,
}

/// A file a call touches: its path as the input names it, and for a ranged read its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    pub line: Option<u32>,
}

/// The change a write proposes: the new text (of the file, or of the replaced snippet) and, for
/// an edit, the text it replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub old: Option<String>,
    pub new: String,
}

/// How a front-end shows a call: its kind, a one-line title, the files it touches, the change
/// it proposes. Each tool builds it from its own typed input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presentation {
    pub kind: ToolKind,
    /// `None`: the tool's name and input JSON.
    pub title: Option<String>,
    pub locations: Vec<Location>,
    pub change: Option<Change>,
}

impl Presentation {
    /// A call pod knows nothing particular about (an MCP tool, or input a tool cannot read).
    pub fn other() -> Presentation {
        Presentation {
            kind: ToolKind::Other,
            title: None,
            locations: Vec::new(),
            change: None,
        }
    }

    /// A search (`glob`, `grep`) for `pattern` under `root` (the workspace when `None`); a
    /// search whose input cannot be read is still a search.
    pub fn search(tool: &str, input: Option<(&str, Option<String>)>) -> Presentation {
        let Some((pattern, root)) = input else {
            return Presentation {
                kind: ToolKind::Search,
                ..Presentation::other()
            };
        };
        let root = root.unwrap_or_else(|| ".".into());
        Presentation {
            kind: ToolKind::Search,
            title: Some(format!("{tool} {pattern} in {root}")),
            locations: vec![Location {
                path: root,
                line: None,
            }],
            change: None,
        }
    }
}

/// How `tool` presents a call with `input`: the built-in tool's own presentation, or
/// [`Presentation::other`].
pub fn present(tool: &str, input: &serde_json::Value) -> Presentation {
    builtin(tool).map_or_else(Presentation::other, |t| t.present(input))
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the input (from schemars for the built-in tools).
    fn input_schema(&self) -> serde_json::Value;
    /// An example input, for messages about bad input (`pod explain --input`).
    fn example(&self) -> &str {
        "a JSON object"
    }
    /// True when the tool only reads: it may run in a read-only session. Never true for a
    /// tool whose effects pod does not know (an MCP tool's annotations are its server's word).
    fn read_only(&self) -> bool {
        false
    }
    /// How a front-end shows a call of this tool with `input` (ACP's kind, title, locations
    /// and diff).
    fn present(&self, input: &serde_json::Value) -> Presentation {
        let _ = input;
        Presentation::other()
    }
    /// What the tool's provider says about its effects (an MCP server's annotations); none for
    /// the built-in tools, whose effects the permission layer knows.
    fn annotations(&self) -> Option<&ToolAnnotations> {
        None
    }
    /// Whether calls of this tool may run at the same time as other calls of the same model
    /// response. Results are committed in call order either way.
    fn concurrent(&self) -> bool {
        true
    }
    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput;
}

/// The enabled tools, by name.
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: Vec<Arc<dyn Tool>>,
}

impl Toolbox {
    /// The built-in tools named in `enabled` (unknown names are skipped: the manifest already
    /// rejected them).
    pub fn builtin(enabled: &[String]) -> Toolbox {
        Toolbox {
            tools: enabled.iter().filter_map(|n| builtin(n)).collect(),
        }
    }

    /// This toolbox with `tools` after its own (MCP tools, whose names never clash with a
    /// built-in's: they start with `mcp__`).
    pub fn with(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Toolbox {
        self.tools.extend(tools);
        self
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    pub fn info(&self) -> Vec<ToolInfo> {
        self.tools
            .iter()
            .map(|t| ToolInfo {
                name: t.name().to_string(),
                description: t.description().to_string(),
                input_schema: t.input_schema(),
                annotations: t.annotations().cloned(),
            })
            .collect()
    }
}

/// A built-in tool by name.
pub fn builtin(name: &str) -> Option<Arc<dyn Tool>> {
    let tool: Arc<dyn Tool> = match Builtin::from_name(name)? {
        Builtin::Bash => Arc::new(bash::Bash),
        Builtin::Read => Arc::new(read::Read),
        Builtin::FileWrite => Arc::new(file_write::FileWrite),
        Builtin::Edit => Arc::new(edit::Edit),
        Builtin::Grep => Arc::new(grep::Grep),
        Builtin::Glob => Arc::new(glob::Glob),
        Builtin::WebFetch => Arc::new(web_fetch::WebFetch),
        Builtin::Plan => Arc::new(plan::Plan),
    };
    Some(tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_presents_its_own_example_and_says_whether_it_only_reads() {
        let kinds = [
            ("bash", ToolKind::Execute, false),
            ("read", ToolKind::Read, true),
            ("file_write", ToolKind::Edit, false),
            ("edit", ToolKind::Edit, false),
            ("grep", ToolKind::Search, true),
            ("glob", ToolKind::Search, true),
            ("web_fetch", ToolKind::Fetch, false),
            ("plan", ToolKind::Other, true),
        ];
        for (name, kind, read_only) in kinds {
            let tool = builtin(name).unwrap();
            assert_eq!(tool.read_only(), read_only, "{name}");
            let example = tool.example().trim_matches('\'');
            let input: serde_json::Value = serde_json::from_str(example).unwrap();
            let shown = tool.present(&input);
            assert_eq!(shown.kind, kind, "{name}");
            assert!(
                shown.title.is_some(),
                "{name}: its example does not read as its input"
            );
            // Input the tool cannot read keeps the kind and leaves the title to the caller.
            let bad = tool.present(&serde_json::json!({"nope": 1}));
            assert_eq!((bad.kind, bad.title), (kind, None), "{name}");
        }
        assert_eq!(
            present("mcp__x__y", &serde_json::json!({})),
            Presentation::other()
        );
    }

    #[test]
    fn builtins_have_the_spec_names_and_inputs() {
        let spec: [(&str, &[&str], &[&str]); 7] = [
            ("bash", &["command", "timeout_secs"], &["command"]),
            ("read", &["path", "offset", "limit"], &["path"]),
            ("file_write", &["path", "content"], &["path", "content"]),
            (
                "edit",
                &["path", "old", "new", "replace_all"],
                &["path", "old", "new"],
            ),
            ("grep", &["pattern", "path", "glob"], &["pattern"]),
            ("glob", &["pattern", "path"], &["pattern"]),
            ("web_fetch", &["url"], &["url"]),
        ];
        for (name, fields, required) in spec {
            let tool = builtin(name).unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(tool.name(), name);
            assert!(!tool.description().is_empty());
            let schema = tool.input_schema();
            assert_eq!(schema["type"], "object", "{name}");
            let props = schema["properties"].as_object().expect("properties");
            let mut got: Vec<&str> = props.keys().map(String::as_str).collect();
            got.sort();
            let mut want = fields.to_vec();
            want.sort();
            assert_eq!(got, want, "{name}");
            for (field, prop) in props {
                assert!(prop.get("description").is_some(), "{name}.{field}");
            }
            let mut req: Vec<&str> = schema["required"]
                .as_array()
                .expect("required")
                .iter()
                .filter_map(|v| v.as_str())
                .collect();
            req.sort();
            let mut want_req = required.to_vec();
            want_req.sort();
            assert_eq!(req, want_req, "{name}");
        }
        assert!(builtin("nope").is_none());
        let names: Vec<String> = ["bash", "grep", "nope"].map(String::from).to_vec();
        assert_eq!(Toolbox::builtin(&names).names(), vec!["bash", "grep"]);
    }
}
