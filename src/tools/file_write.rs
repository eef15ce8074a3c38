//! The `file_write` tool: writes a whole file atomically.
//!
//! Owns: creating or replacing one file with the given content, creating missing parent
//! folders, and doing so atomically (temp file in the same folder, fsync, rename; see
//! [`confined::write_atomic`]), so a reader never sees a half-written file. It writes the target
//! the runtime pinned and checked, beneath its writable root, following no symlink; scope and
//! permissions are checked before the tool runs, not here. When the editor serves files, the
//! content goes to that same target through it ([`super::EditorFiles`]).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::common::{display, parse_input, resolve, schema_of};
use super::{confined, Change, Location, Presentation, Tool, ToolContext, ToolKind, ToolOutput};

/// Input of `file_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileWriteInput {
    /// The file to create or replace: relative to the workspace, or absolute. Missing parent
    /// folders are created.
    pub path: String,
    /// The whole new content of the file.
    pub content: String,
}

pub struct FileWrite;

#[async_trait]
impl Tool for FileWrite {
    fn name(&self) -> &'static str {
        "file_write"
    }

    fn description(&self) -> &'static str {
        "Create or replace a file with the given content (atomically: readers see the old or the \
         new file, never a part). Missing parent folders are created. To change part of a file, \
         use edit."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<FileWriteInput>()
    }

    fn example(&self) -> &str {
        "'{\"path\":\"notes.md\",\"content\":\"text\"}'"
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        let Ok(i) = FileWriteInput::deserialize(input) else {
            return Presentation {
                kind: ToolKind::Edit,
                ..Presentation::other()
            };
        };
        Presentation {
            kind: ToolKind::Edit,
            title: Some(format!("file_write {}", i.path)),
            locations: vec![Location {
                path: i.path.clone(),
                line: None,
            }],
            change: Some(Change {
                path: i.path,
                old: None,
                new: i.content,
            }),
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let input: FileWriteInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let path = match resolve(&ctx.workspace, "path", &input.path) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let shown = display(&ctx.workspace, &path);
        let target = ctx.target(&path);
        let existed = crate::sandbox::tmpfs::reach(&target.path)
            .symlink_metadata()
            .is_ok();
        let len = input.content.len();
        let verb = if existed { "replaced" } else { "created" };
        let sandbox = ctx.sandbox.clone();
        let written = target.path.clone();
        // A watched name this write made (`.envrc`, `.vscode/…`, allowed by the user) is not a
        // call's to set aside.
        let mine = move || sandbox.made_by_pod(&written);
        if let Some(editor) = ctx.editor_writes() {
            return tokio::select! {
                written = editor.write(&target.path, &input.content) => match written {
                    Ok(()) => {
                        mine();
                        ToolOutput::ok(format!("{verb} {shown}: {len} bytes written"))
                    }
                    Err(e) => ToolOutput::error(format!(
                        "cannot write {shown}: {e}; nothing was written"
                    )),
                },
                () = ctx.cancel.cancelled() => ToolOutput::error("cancelled"),
            };
        }
        let job = tokio::task::spawn_blocking(move || {
            confined::write_atomic(&target.beneath, &target.path, input.content.as_bytes())
        });
        match job.await {
            Ok(Ok(())) => {
                mine();
                ToolOutput::ok(format!("{verb} {shown}: {len} bytes written"))
            }
            Ok(Err(e)) => ToolOutput::error(format!(
                "cannot write {shown}: {}; nothing was written",
                confined::describe(&e)
            )),
            Err(e) => ToolOutput::error(format!("cannot write {shown}: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;

    fn entries(dir: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn writes_atomically_with_parents() {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(dir.path());
        let out = FileWrite
            .run(json!({"path": "a/b/new.txt", "content": "héllo\n"}), &c)
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "created a/b/new.txt: 7 bytes written");
        let p = dir.path().join("a/b/new.txt");
        assert_eq!(fs::read_to_string(&p).unwrap(), "héllo\n");
        assert_eq!(entries(&dir.path().join("a/b")), vec!["new.txt"]);

        let out = FileWrite
            .run(json!({"path": p.display().to_string(), "content": ""}), &c)
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.starts_with("replaced a/b/new.txt: 0 bytes"));
        assert_eq!(fs::read_to_string(&p).unwrap(), "");
        assert_eq!(entries(&dir.path().join("a/b")), vec!["new.txt"]);
    }

    #[tokio::test]
    async fn keeps_permissions_of_a_replaced_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.sh");
        fs::write(&p, "old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        let out = FileWrite
            .run(
                json!({"path": "run.sh", "content": "new"}),
                &ToolContext::new(dir.path()),
            )
            .await;
        assert!(!out.is_error);
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
    }

    #[tokio::test]
    async fn errors() {
        let dir = tempfile::tempdir().unwrap();
        let c = ToolContext::new(dir.path());
        fs::create_dir(dir.path().join("d")).unwrap();
        let out = FileWrite
            .run(json!({"path": "d", "content": "x"}), &c)
            .await;
        assert!(out.is_error, "{}", out.content);
        assert_eq!(entries(&dir.path().join("d")), Vec::<String>::new());

        let out = FileWrite.run(json!({"path": "x"}), &c).await;
        assert!(
            out.is_error && out.content.contains("content"),
            "{}",
            out.content
        );
        let out = FileWrite
            .run(json!({"path": "x", "content": ["a"]}), &c)
            .await;
        assert!(
            out.is_error && out.content.contains("`content`"),
            "{}",
            out.content
        );
        let out = FileWrite.run(json!({"path": "", "content": "a"}), &c).await;
        assert!(
            out.is_error && out.content.contains("`path`"),
            "{}",
            out.content
        );
    }
}
