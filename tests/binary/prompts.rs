//! The prompt-count benchmark of issue 28, run as a test because its numbers are exact: a
//! scripted 60-call coding session (reads, searches, edits, tests, git, an install, and commands
//! that must stay denied) replayed by the offline model against `examples/python.toml`, in each
//! mode, with a client that takes the widest grant offered once. It counts the asks, checks the
//! goals of docs/performance.md ("Prompts per mode") and that no denied command ran, by its side
//! effects.

use crate::common;

use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

/// The session: 60 calls, three per model response.
fn calls() -> Vec<(&'static str, Value)> {
    let bash = |c: &str| ("bash", json!({ "command": c }));
    let read = |p: &str| ("read", json!({ "path": p }));
    let edit = |p: &str, old: &str, new: &str| ("edit", json!({"path": p, "old": old, "new": new}));
    vec![
        // Finding one's way (20).
        bash("git status"),
        bash("ls -la"),
        read("README.md"),
        read("app.py"),
        read("test_app.py"),
        ("glob", json!({"pattern": "**/*.py"})),
        ("grep", json!({"pattern": "def ", "path": "."})),
        ("grep", json!({"pattern": "TODO"})),
        bash("git log --oneline -5"),
        bash("cat app.py"),
        bash("wc -l app.py test_app.py"),
        bash("head -5 README.md"),
        ("glob", json!({"pattern": "*.md"})),
        read("setup.cfg"),
        bash("grep -n return app.py"),
        bash("git diff"),
        ("grep", json!({"pattern": "import"})),
        read("app.py"),
        bash("python3 -m pytest -q"),
        bash("git show --stat HEAD"),
        // The work (25).
        edit("app.py", "return a + b", "return a + b  # sum"),
        bash("python3 -m pytest -q"),
        edit("app.py", "# TODO", "# done"),
        edit("test_app.py", "def test_add", "def test_add_small"),
        bash("python3 -m pytest -q test_app.py"),
        (
            "file_write",
            json!({"path": "util.py", "content": "def twice(x):\n    return 2 * x\n"}),
        ),
        bash("python3 -m pytest -q -x"),
        edit("util.py", "2 * x", "x + x"),
        bash("git diff app.py"),
        bash("git status --short"),
        (
            "file_write",
            json!({"path": "NOTES.md", "content": "notes\n"}),
        ),
        edit("README.md", "demo", "demo project"),
        bash("ruff check ."),
        bash("ruff format --check ."),
        bash("mypy app.py"),
        bash("git add app.py util.py test_app.py"),
        bash("git commit -qm 'Sum and twice'"),
        bash("git log --oneline -3"),
        edit("app.py", "# sum", "# the sum"),
        bash("python3 -m pytest -q"),
        bash("git diff --stat"),
        bash("git add app.py"),
        bash("git commit -qm 'Comment'"),
        bash("pip install --no-index --find-links=. nothing-here"),
        bash("pip install --no-index --find-links=. nothing-else"),
        // Outside the everyday loop (9).
        bash("python3 tools/gen.py"),
        bash("mkdir -p build/out"),
        bash("cp util.py build/out/"),
        bash("git push origin main"),
        read("app.py"),
        bash("git status"),
        bash("ls build"),
        bash("python3 -m pytest -q"),
        bash("git log -1"),
        // What must stay denied (6).
        bash("rm -rf keep"),
        bash("git clean -fdx"),
        bash("cat .env"),
        read(".env"),
        (
            "file_write",
            json!({"path": ".env", "content": "LEAKED=1\n"}),
        ),
        bash("rm keep/precious.txt"),
    ]
}

fn scenario() -> String {
    let steps: Vec<Value> = calls()
        .chunks(3)
        .map(|chunk| {
            let calls: Vec<Value> = chunk
                .iter()
                .map(|(tool, input)| json!({"tool": tool, "input": input}))
                .collect();
            json!({"text": "Next.", "calls": calls})
        })
        .collect();
    toml::to_string(&json!({ "step": steps })).unwrap()
}

/// The session's folder; `no_network`: `[sandbox] network = "deny"` (what `auto` needs, besides
/// namespaces and the exec gate).
fn workspace(no_network: bool) -> Workspace {
    let example = include_str!("../../examples/python.toml");
    let example = if no_network {
        example.replacen("[sandbox]\n", "[sandbox]\nnetwork = \"deny\"\n", 1)
    } else {
        example.to_string()
    };
    let manifest =
        format!("{example}\n[model]\nprovider = \"offline\"\nscenario = \"scenario.toml\"\n");
    let ws = Workspace::with_manifest(&manifest);
    let file = |p: &str, text: &str| {
        let path = ws.path(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    file("scenario.toml", &scenario());
    file("README.md", "# demo\n");
    file("app.py", "# TODO\ndef add(a, b):\n    return a + b\n");
    file(
        "test_app.py",
        "from app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    file("setup.cfg", "[metadata]\nname = demo\n");
    file("tools/gen.py", "print('generated')\n");
    file(".env", "SECRET=1\n");
    file("keep/precious.txt", "precious\n");
    file(".gitignore", "scenario.toml\npod.toml\n");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(ws.path("."))
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["config", "user.name", "pod test"]);
    git(&["config", "user.email", "pod@test.invalid"]);
    git(&["add", "README.md", "app.py", "test_app.py", "setup.cfg"]);
    git(&["commit", "-qm", "start"]);
    ws.trust();
    ws
}

/// What one session in `mode` came to.
#[derive(Debug)]
struct Tally {
    /// Permission requests pod sent.
    asks: usize,
    /// Those a person had to answer (the rest were settled by a grant meanwhile).
    answered: usize,
    /// What was asked about, in order: the command or the path.
    asked: Vec<String>,
    denied: usize,
    results: usize,
}

/// Runs the session in `mode`; the client answers each ask with the widest grant it offers
/// (`allow_prefix`, else `allow_session`), except a push, which it denies.
fn session(mode: &str) -> (Tally, Workspace) {
    let ws = workspace(mode == "auto");
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(true);
    if mode != "default" {
        pod.call("setMode", json!({ "mode": mode }));
    }
    let id = pod.start("run", json!({"input": [{"type": "text", "text": "Go."}]}));
    let mut asks = 0;
    let mut answered = 0;
    let mut asked = Vec::new();
    let mut pending = json!(id);
    loop {
        match pod.event_or_response("permissionRequest", &pending) {
            Ok(request) => {
                asks += 1;
                let options = request["options"].as_array().cloned().unwrap_or_default();
                let command = request["input"]["command"].as_str().unwrap_or("");
                let decision = if command.starts_with("git push") {
                    "deny"
                } else if options.contains(&json!("allow_prefix")) {
                    "allow_prefix"
                } else {
                    "allow_session"
                };
                let reply = pod.request(
                    "permissionReply",
                    json!({"requestId": request["requestId"], "decision": decision}),
                );
                if reply.get("result").is_some() {
                    answered += 1;
                    let what = &request["input"];
                    asked.push(format!(
                        "{} {}",
                        request["tool"].as_str().unwrap_or("?"),
                        what["command"]
                            .as_str()
                            .or(what["path"].as_str())
                            .unwrap_or("?")
                    ));
                } else {
                    // A grant taken for a sibling call of the same response settled this one
                    // before the person got to it (-32004, "resolved").
                    assert_eq!(reply["error"]["data"]["state"], "resolved", "{reply}");
                }
            }
            Err(response) => {
                assert!(response.get("result").is_some(), "{response}");
                break;
            }
        }
        pending = json!(id);
    }
    let results: Vec<&Value> = pod
        .events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .collect();
    let denied = results.iter().filter(|r| r["deniedBy"].is_string()).count();
    let tally = Tally {
        asks,
        answered,
        asked,
        denied,
        results: results.len(),
    };
    (tally, ws)
}

/// The denied commands left no trace, whatever the mode.
fn assert_nothing_denied_ran(ws: &Workspace, mode: &str) {
    assert_eq!(
        common::read(&ws.path("keep/precious.txt")),
        "precious\n",
        "{mode}"
    );
    assert_eq!(common::read(&ws.path(".env")), "SECRET=1\n", "{mode}");
    assert!(ws.path("tools/gen.py").exists(), "{mode}: git clean ran");
}

#[test]
fn a_sixty_call_session_asks_at_most_the_goal_in_each_mode_and_no_denied_command_runs() {
    assert_eq!(calls().len(), 60);
    let mut table = Vec::new();
    for (mode, goal) in [("default", 12), ("accept-edits", 8), ("unattended", 0)] {
        let (tally, ws) = session(mode);
        eprintln!("prompts: {mode}: {tally:?}");
        assert_eq!(tally.results, 60, "{mode}: every call has a result");
        assert!(tally.answered <= goal, "{mode}: {tally:?}, goal {goal}");
        assert!(tally.denied >= 6, "{mode}: the six denied calls: {tally:?}");
        assert_nothing_denied_ran(&ws, mode);
        // A denied call is never put to the person.
        assert!(
            !tally
                .asked
                .iter()
                .any(|a| a.contains(".env") || a.contains("rm ") || a.contains("git clean")),
            "{mode}: {tally:?}"
        );
        table.push((mode, tally));
    }
    // `auto` runs only where the kernel bounds every call; elsewhere it is refused, saying why.
    let ws = workspace(true);
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let init = pod.initialize(true);
    let offered = init["permissions"]["modes"]
        .as_array()
        .is_some_and(|m| m.contains(&json!("auto")));
    let reply = pod.request("setMode", json!({"mode": "auto"}));
    drop(pod);
    if reply.get("result").is_some() {
        assert!(offered, "auto was set but initialize did not offer it");
        let (tally, ws) = session("auto");
        eprintln!("prompts: auto: {tally:?}");
        assert!(tally.answered <= 3, "auto: {tally:?}");
        assert_nothing_denied_ran(&ws, "auto");
    } else {
        let message = reply["error"]["message"].as_str().unwrap_or("");
        eprintln!("prompts: auto: refused: {message}");
        assert!(!offered && message.contains("auto"), "{reply}");
    }
    // Fewer asks as the mode widens, never more; unattended never waits on a person.
    assert!(table[1].1.answered < table[0].1.answered, "{table:?}");
    assert_eq!(table[2].1.asks, 0);
    assert!(table[2].1.denied > table[0].1.denied, "{table:?}");
}
