//! Skills and user hooks through the runtime, in process: a pod built from a manifest in a
//! temporary folder, the offline model (`!cmd` is a bash call, `@tool {json}` a call of `tool`),
//! and the history the turn records. Allowed calls are recognised by having no `deniedBy`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pod::manifest::Manifest;
use pod::protocol::{CallResult, DeniedBy, InputItem, Item};
use pod::runtime::{Pod, PodOptions, RunError};
use tokio_util::sync::CancellationToken;

const RULES: &str = r#"
[permissions]
default_action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "git push *"
action = "deny"
message = "Pushing is done by CI."
"#;

const SKILL: &str = "---\nname: release-notes\ndescription: Drafts release notes from git \
                     history.\nallowed-tools: Bash(git *), Read\n---\nRead the git log and \
                     draft notes.\n";

struct Fixture {
    _tmp: tempfile::TempDir,
    _state: tempfile::TempDir,
    pod: Arc<Pod>,
}

/// A pod whose manifest has `extra` appended, with the `release-notes` skill in `skills/`.
fn fixture(extra: &str) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let skill_dir = dir.join("skills/release-notes");
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(skill_dir.join("SKILL.md"), SKILL).unwrap();
    let text = format!(
        "[pod]\nname = \"t\"\nworkspace = \".\"\n\n[model]\nprovider = \"offline\"\n\n\
         [tools]\nenabled = [\"bash\", \"read\", \"file_write\"]\n\n\
         [skills]\ndirectories = [\"skills\"]\n{RULES}\n{extra}"
    );
    let path = dir.join("pod.toml");
    std::fs::write(&path, &text).unwrap();
    let mut manifest = Manifest::parse(&text, &path).unwrap();
    let state = tempfile::tempdir().unwrap();
    manifest.set_state_dir(state.path());
    let pod = Pod::open(manifest, PodOptions::default()).unwrap();
    Fixture {
        _tmp: tmp,
        _state: state,
        pod,
    }
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// One tool result of the history: denied by whom, and its text.
#[derive(Debug)]
struct Result_ {
    denied_by: Option<DeniedBy>,
    content: String,
}

async fn run(pod: &Pod, skill: Option<&str>, text: &str) -> Result<Vec<Result_>, RunError> {
    let before = pod.history().len();
    let mut input = Vec::new();
    if let Some(name) = skill {
        input.push(InputItem::Skill { name: name.into() });
    }
    input.push(InputItem::Text { text: text.into() });
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    pod.run(input, &tx, CancellationToken::new()).await?;
    Ok(pod.history()[before..]
        .iter()
        .filter_map(|item| match item {
            Item::ToolResult(CallResult {
                denied_by, content, ..
            }) => Some(Result_ {
                denied_by: *denied_by,
                content: content.clone(),
            }),
            _ => None,
        })
        .collect())
}

#[tokio::test]
async fn active_skill_allows_listed_calls_and_denies_the_rest() {
    let f = fixture("");
    let results = run(
        &f.pod,
        Some("release-notes"),
        "!git status\n@read {\"path\":\"x\"}\n!rm x\n@file_write {\"path\":\"x\",\"content\":\"\"}\n!git log > out.txt",
    )
    .await
    .unwrap();
    assert_eq!(results.len(), 5, "{results:?}");
    // listed: not denied by any check
    assert_eq!(results[0].denied_by, None, "{results:?}");
    assert_eq!(results[1].denied_by, None, "{results:?}");
    // outside the list
    assert_eq!(results[2].denied_by, Some(DeniedBy::Skill));
    assert_eq!(
        results[2].content,
        "denied by skill \"release-notes\": bash `rm x` is outside its allowed-tools \
         (Bash(git *), Read)"
    );
    assert_eq!(results[3].denied_by, Some(DeniedBy::Skill));
    assert!(
        results[3].content.contains("file_write is outside"),
        "{}",
        results[3].content
    );
    // a redirection is a write the list does not cover
    assert_eq!(results[4].denied_by, Some(DeniedBy::Skill));
    assert!(
        results[4].content.contains("file_write `out.txt`"),
        "{}",
        results[4].content
    );
    // the activation is recorded
    assert!(f
        .pod
        .history()
        .iter()
        .any(|i| matches!(i, Item::SkillActivated { name, .. } if name == "release-notes")));
}

#[tokio::test]
async fn skill_never_grants_what_the_manifest_denies() {
    let f = fixture("");
    let results = run(&f.pod, Some("release-notes"), "!git push origin main")
        .await
        .unwrap();
    assert_eq!(results[0].denied_by, Some(DeniedBy::Permission));
    assert!(
        results[0].content.starts_with("permission denied: rule 1"),
        "{}",
        results[0].content
    );
}

#[tokio::test]
async fn next_turn_without_the_skill_is_unrestricted() {
    let f = fixture("");
    let with = run(&f.pod, Some("release-notes"), "!rm x").await.unwrap();
    assert_eq!(with[0].denied_by, Some(DeniedBy::Skill));
    let without = run(&f.pod, None, "!rm x").await.unwrap();
    assert_eq!(without[0].denied_by, None, "{without:?}");
}

#[tokio::test]
async fn unknown_skill_is_refused_naming_the_known_ones() {
    let f = fixture("");
    let err = run(&f.pod, Some("nope"), "!git status").await.unwrap_err();
    match &err {
        RunError::UnknownSkill { name, known } => {
            assert_eq!(name, "nope");
            assert_eq!(known, &vec!["release-notes".to_string()]);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("known skills: release-notes"));
    assert!(f.pod.history().is_empty());
}

#[tokio::test]
async fn a_hook_never_sees_a_call_the_permission_layer_denied() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("seen");
    let hook = script(
        tmp.path(),
        "record.sh",
        &format!(
            "cat >> {}\necho >> {}\necho '{{\"action\":\"continue\"}}'",
            marker.display(),
            marker.display()
        ),
    );
    // The hook writes its record outside the workspace: the sandbox must be told.
    let f = fixture(&format!(
        "[[hooks.pre_tool_call]]\ncommand = [\"{}\"]\n[sandbox]\nwritable = [\"{}\"]\n",
        hook.display(),
        tmp.path().display()
    ));
    let denied = run(&f.pod, None, "!git push origin main").await.unwrap();
    assert_eq!(denied[0].denied_by, Some(DeniedBy::Permission));
    assert!(!marker.exists(), "the hook saw a denied call");

    let allowed = run(&f.pod, None, "!git status").await.unwrap();
    assert_eq!(allowed[0].denied_by, None, "{allowed:?}");
    let seen = std::fs::read_to_string(&marker).unwrap();
    let call: serde_json::Value = serde_json::from_str(seen.trim()).unwrap();
    assert_eq!(call["tool"], "bash");
    assert_eq!(call["input"]["command"], "git status");
    assert_eq!(call["decision"]["decision"], "allow");
}

#[tokio::test]
async fn a_hook_never_sees_a_call_the_skill_denied() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("seen");
    let hook = script(
        tmp.path(),
        "record.sh",
        &format!(
            "touch {}\necho '{{\"action\":\"continue\"}}'",
            marker.display()
        ),
    );
    let f = fixture(&format!(
        "[[hooks.pre_tool_call]]\ncommand = [\"{}\"]\n",
        hook.display()
    ));
    let results = run(&f.pod, Some("release-notes"), "!rm x").await.unwrap();
    assert_eq!(results[0].denied_by, Some(DeniedBy::Skill));
    assert!(!marker.exists());
}

#[tokio::test]
async fn hooks_run_in_order_and_the_first_deny_stops_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("second-ran");
    let first = script(
        tmp.path(),
        "first.sh",
        "echo '{\"action\":\"deny\",\"message\":\"first says no\"}'",
    );
    let second = script(
        tmp.path(),
        "second.sh",
        &format!(
            "touch {}\necho '{{\"action\":\"continue\"}}'",
            marker.display()
        ),
    );
    let f = fixture(&format!(
        "[[hooks.pre_tool_call]]\ncommand = [\"{}\"]\n\n[[hooks.pre_tool_call]]\ncommand = [\"{}\"]\n",
        first.display(),
        second.display()
    ));
    let results = run(&f.pod, None, "!git status").await.unwrap();
    assert_eq!(results[0].denied_by, Some(DeniedBy::Hook));
    assert!(
        results[0].content.contains("first.sh"),
        "{}",
        results[0].content
    );
    assert!(
        results[0].content.ends_with(": first says no"),
        "{}",
        results[0].content
    );
    assert!(
        !marker.exists(),
        "the second hook ran after the first denied"
    );
}

#[tokio::test]
async fn hook_tools_filter_and_fail_closed_through_the_runtime() {
    let tmp = tempfile::tempdir().unwrap();
    let broken = script(tmp.path(), "broken.sh", "echo not json");
    let f = fixture(&format!(
        "[[hooks.pre_tool_call]]\ncommand = [\"{}\"]\ntools = [\"READ\"]\n",
        broken.display()
    ));
    let results = run(&f.pod, None, "!git status\n@read {\"path\":\"x\"}")
        .await
        .unwrap();
    // the hook applies to read only
    assert_eq!(results[0].denied_by, None, "{results:?}");
    assert_eq!(results[1].denied_by, Some(DeniedBy::Hook));
    assert!(
        results[1].content.contains("not a valid answer"),
        "{}",
        results[1].content
    );
}

#[tokio::test]
async fn the_documented_example_hook_works() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("python3 not found: skipping the example hook");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let f = fixture(&format!(
        "[[hooks.pre_tool_call]]\ncommand = [\"python3\", \"{}\"]\ntimeout_secs = 5\ntools = [\"bash\"]\n",
        root.join("examples/hooks/guard.py").display()
    ));
    let results = run(
        &f.pod,
        None,
        "!git push --force origin main\n!bash -c 'git status'\n!git status",
    )
    .await
    .unwrap();
    // the manifest denies every push first: the hook never sees it
    assert_eq!(results[0].denied_by, Some(DeniedBy::Permission));
    assert_eq!(results[1].denied_by, Some(DeniedBy::Hook));
    assert!(
        results[1]
            .content
            .contains("running a nested shell is not allowed"),
        "{}",
        results[1].content
    );
    assert_eq!(results[2].denied_by, None, "{results:?}");
}

/// Whether a live process runs `script` (its command line names it).
fn running(script: &Path) -> bool {
    let name = script.as_os_str().as_encoded_bytes();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == name))
        })
}

/// Cancelling the turn while a hook runs ends the call at once (the hook is killed), instead of
/// waiting out the hook's timeout.
#[tokio::test]
async fn cancel_does_not_wait_for_a_slow_hook() {
    let tmp = tempfile::tempdir().unwrap();
    // The hook's deliberate slowness: only the cancel may end it before 20 s.
    let hook = script(
        tmp.path(),
        "slow.sh",
        "sleep 20\necho '{\"action\":\"continue\"}'",
    );
    let f = fixture(&format!(
        "[[hooks.pre_tool_call]]\ncommand = [\"{}\"]\ntimeout_secs = 30\n",
        hook.display()
    ));
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    // Cancels once the hook runs (its process is in `/proc`), however long that takes.
    let canceller = {
        let cancel = cancel.clone();
        let hook = hook.clone();
        tokio::spawn(async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !running(&hook) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the hook never started"
                );
                // Paces the poll; the condition above decides.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            cancel.cancel();
        })
    };
    let started = std::time::Instant::now();
    let input = vec![InputItem::Text {
        text: "!git status".into(),
    }];
    let result = f.pod.run(input, &tx, cancel).await.unwrap();
    canceller.await.unwrap();
    assert_eq!(result.stop_reason, pod::protocol::StopReason::Cancelled);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the turn waited for the hook"
    );
    let cancelled = f.pod.history().iter().any(|i| {
        matches!(i, Item::ToolResult(CallResult { is_error: true, content, .. }) if content.starts_with("cancelled"))
    });
    assert!(cancelled);
}
