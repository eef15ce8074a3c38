//! `pod acp` through the real binary over real pipes: the lifecycle and error codes ACP clients
//! rely on, and a client that goes away while an ask is pending. (The flows against the
//! official SDKs are in `tests/acp/typescript` and `tests/acp/python`, run by `.ci/run`.)

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Workspace, WAIT};
use serde_json::{json, Value};

/// `pod acp` with a line-by-line view of its stdout; every line must be a JSON-RPC message.
struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next: u64,
}

impl Agent {
    fn spawn(ws: &Workspace) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
            .args(["acp", "--state-dir"])
            .arg(ws.state_dir())
            .env("XDG_STATE_HOME", ws.state_home())
            // No user configuration: only the session's own folder configures it.
            .env("POD_CONFIG", "")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn pod acp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Agent {
            stdin: child.stdin.take(),
            child,
            lines,
            next: 100,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    fn next(&mut self, within: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(within).ok()?;
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        Some(v)
    }

    /// Sends a request and returns its response, skipping notifications.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(|v| v["id"] == id && v.get("method").is_none())
    }

    fn wait(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + *WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.next(left).expect("pod acp went silent");
            if pred(&v) {
                return v;
            }
        }
    }

    fn initialize(&mut self) {
        let init = self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    }

    /// `session/new` in `ws` with no MCP servers; the session id.
    fn new_session(&mut self, ws: &Workspace) -> String {
        let session = self.call("session/new", json!({"cwd": cwd(ws), "mcpServers": []}));
        session["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id: {session}"))
            .to_string()
    }

    /// Sends `session/prompt` with request id `id` and one text block; does not wait.
    fn prompt(&mut self, id: u64, session: &str, text: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}),
        );
    }

    /// Answers the agent's `session/request_permission` `ask` by selecting `option`.
    fn select(&mut self, ask: &Value, option: &str) {
        self.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result":
            {"outcome": {"outcome": "selected", "optionId": option}}}));
    }
}

fn code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {response}"))
}

fn cwd(ws: &Workspace) -> String {
    ws.dir
        .path()
        .canonicalize()
        .expect("canonical")
        .display()
        .to_string()
}

#[test]
fn the_lifecycle_and_bad_params_get_acp_error_codes() {
    let ws = Workspace::new(0);
    let mut agent = Agent::spawn(&ws);
    let early = agent.call("session/new", json!({"cwd": cwd(&ws), "mcpServers": []}));
    assert_eq!(code(&early), -32600, "{early}");
    agent.initialize();
    let again = agent.call("initialize", json!({"protocolVersion": 1}));
    assert_eq!(code(&again), -32600, "{again}");
    let relative = agent.call(
        "session/new",
        json!({"cwd": "some/where", "mcpServers": []}),
    );
    assert_eq!(code(&relative), -32602, "{relative}");
    let missing = agent.call("session/new", json!({"mcpServers": []}));
    assert_eq!(code(&missing), -32602);
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("cwd"),
        "{missing}"
    );
    // A folder without pod.toml opens with the built-in defaults; a broken pod.toml refuses
    // the session, naming the file and the line.
    let empty = tempfile::tempdir().expect("tempdir");
    let defaults = agent.call(
        "session/new",
        json!({"cwd": empty.path().canonicalize().expect("dir"), "mcpServers": []}),
    );
    let meta = &defaults["result"]["_meta"]["pod"];
    assert_eq!(meta["permissions"]["defaultAction"], "ask", "{defaults}");
    assert_eq!(meta["configuration"]["builtInDefaults"], true, "{defaults}");
    assert_eq!(meta["configuration"]["files"], json!([]), "{defaults}");
    std::fs::write(
        empty.path().join("pod.toml"),
        "[permissions]\ndefault_action = \"mabye\"\n",
    )
    .expect("write");
    let broken = agent.call(
        "session/new",
        json!({"cwd": empty.path().canonicalize().expect("dir"), "mcpServers": []}),
    );
    assert_eq!(code(&broken), -32603, "{broken}");
    let message = broken["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("pod.toml:2"), "{broken}");
    let unknown = agent.call("session/prompt", json!({"sessionId": "nope", "prompt": []}));
    assert_eq!(code(&unknown), -32002);
    assert_eq!(unknown["error"]["data"]["sessionId"], "nope");
    let not_ours = agent.call("session/delete", json!({"sessionId": "nope"}));
    assert_eq!(code(&not_ours), -32601);
    // An offered MCP server that cannot start does not stop the session (its tools are simply
    // not offered; tests/binary/mcp.rs starts a real one).
    let session = agent.call(
        "session/new",
        json!({"cwd": cwd(&ws), "mcpServers": [{"name": "fs", "command": "/bin/false", "args": [], "env": []}]}),
    );
    let id = session["result"]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    let image = agent.call(
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
    );
    assert_eq!(code(&image), -32602, "{image}");
    // A response to nothing the agent asked is dropped, and the agent goes on.
    agent.send(&json!({"jsonrpc": "2.0", "id": 424242, "result": {}}));
    let listed = agent.call("session/list", json!({"cwd": cwd(&ws)}));
    let sessions = listed["result"]["sessions"].as_array().expect("sessions");
    assert!(
        sessions.iter().any(|s| s["sessionId"] == id.as_str()),
        "{listed}"
    );
}

#[test]
fn a_client_that_goes_away_during_an_ask_gets_it_denied_and_the_agent_exits_zero() {
    // A long ask timeout: only the disconnect can end the ask (0 would race it).
    let ws = Workspace::new(300);
    let mut agent = Agent::spawn(&ws);
    agent.initialize();
    let id = agent.new_session(&ws);
    agent.prompt(1, &id, "!touch never-made");
    let ask = agent.wait(|v| v["method"] == "session/request_permission");
    assert_eq!(ask["params"]["sessionId"], id.as_str());
    let started = Instant::now();
    drop(agent.stdin.take());
    let status = loop {
        if let Some(status) = agent.child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "pod acp did not exit"
        );
        // Paces the poll for the exit; the deadline decides.
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "exit took {:?}",
        started.elapsed()
    );
    assert!(!Path::new(&cwd(&ws)).join("never-made").exists());
    // The log was flushed with the ask denied by the disconnect.
    let log = std::fs::read_to_string(ws.state_dir().join("sessions").join(format!("{id}.jsonl")))
        .expect("session log");
    assert!(log.contains(r#""by":"disconnect""#), "{log}");
}

#[test]
fn a_call_allowed_after_the_mode_became_read_only_does_not_run() {
    // The ask is pending when the editor switches to read-only; an "allow" that comes after
    // must not run a command the mode denies.
    let ws = Workspace::new(300);
    let mut agent = Agent::spawn(&ws);
    agent.initialize();
    let id = agent.new_session(&ws);
    agent.prompt(1, &id, "!touch made-in-read-only");
    let ask = agent.wait(|v| v["method"] == "session/request_permission");
    let mode = agent.call(
        "session/set_mode",
        json!({"sessionId": id, "modeId": "read-only"}),
    );
    assert!(mode.get("error").is_none(), "{mode}");
    agent.select(&ask, "allow_once");
    let failed = agent
        .wait(|v| v["method"] == "session/update" && v["params"]["update"]["status"] == "failed");
    let text = failed["params"]["update"]["rawOutput"]["content"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("read-only mode"), "{failed}");
    let done = agent.wait(|v| v["id"] == 1 && v.get("method").is_none());
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(!Path::new(&cwd(&ws)).join("made-in-read-only").exists());
}

/// An MCP server with one destructive tool, `drop`, that leaves `DROPPED` in its folder.
const DROP_SERVER: &str = r#"import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method = m.get("method")
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "db", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [{"name": "drop", "inputSchema": {"type": "object"},
                        "annotations": {"destructiveHint": True, "readOnlyHint": False}}]}
    elif method == "tools/call":
        open("DROPPED", "w").write("x")
        r = {"content": [{"type": "text", "text": "dropped"}]}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;

#[test]
fn an_editor_server_named_like_a_configured_one_keeps_its_default_action() {
    // The project denies the destructive tools of its server `db`; the editor offering its own
    // `db` picks the program, not looser rules.
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\nworkspace = \".\"\n[model]\nprovider = \"offline\"\n\
         [permissions]\ndefault_action = \"allow\"\n\
         [mcp.servers.db]\ncommand = \"python3\"\nargs = [\"server.py\"]\n\
         default_action = { destructive = \"deny\" }\n",
    );
    std::fs::write(ws.dir.path().join("server.py"), DROP_SERVER).expect("write server");
    let mut agent = Agent::spawn(&ws);
    agent.initialize();
    let offered = json!([{"name": "db", "command": "python3", "args": ["server.py"], "env": []}]);
    let session = agent.call(
        "session/new",
        json!({"cwd": cwd(&ws), "mcpServers": offered}),
    );
    let tools = &session["result"]["_meta"]["pod"]["tools"];
    assert!(
        tools
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "mcp__db__drop")),
        "{session}"
    );
    let id = session["result"]["sessionId"].as_str().expect("id");
    agent.prompt(1, id, "@mcp__db__drop {}");
    let result = agent.wait(|v| {
        v["method"] == "session/update"
            && matches!(
                v["params"]["update"]["status"].as_str(),
                Some("completed" | "failed")
            )
    });
    assert_eq!(result["params"]["update"]["status"], "failed", "{result}");
    let done = agent.wait(|v| v["id"] == 1 && v.get("method").is_none());
    assert!(done.get("result").is_some(), "{done}");
    assert!(!ws.dir.path().join("DROPPED").exists());
}

#[test]
fn an_allow_always_is_not_restored_in_another_project() {
    // Two projects share one state folder (`--state-dir`): a session loaded with the other
    // project's cwd does not bring its "allow for this session" grants along.
    let here = Workspace::new(300);
    let there = Workspace::new(300);
    let mut agent = Agent::spawn(&here);
    agent.initialize();
    let id = agent.new_session(&here);
    agent.prompt(1, &id, "!touch granted");
    let ask = agent.wait(|v| v["method"] == "session/request_permission");
    agent.select(&ask, "allow_always");
    agent.wait(|v| v["id"] == 1 && v.get("method").is_none());
    assert!(Path::new(&cwd(&here)).join("granted").exists());
    drop(agent.stdin.take());
    agent.child.wait().expect("exit");

    let mut agent = Agent::spawn(&here);
    agent.initialize();
    let loaded = agent.call(
        "session/load",
        json!({"sessionId": id, "cwd": cwd(&there), "mcpServers": []}),
    );
    assert_eq!(
        loaded["result"]["_meta"]["pod"]["droppedGrants"], 1,
        "{loaded}"
    );
    agent.prompt(2, &id, "!touch granted");
    let ask = agent.wait(|v| {
        v["method"] == "session/request_permission" || (v["id"] == 2 && v.get("method").is_none())
    });
    assert_eq!(ask["method"], "session/request_permission", "{ask}");
    agent.select(&ask, "reject_once");
    agent.wait(|v| v["id"] == 2 && v.get("method").is_none());
    assert!(!Path::new(&cwd(&there)).join("granted").exists());
    drop(agent.stdin.take());
    agent.child.wait().expect("exit");

    // In its own project the grant still holds.
    let mut agent = Agent::spawn(&here);
    agent.initialize();
    let loaded = agent.call(
        "session/load",
        json!({"sessionId": id, "cwd": cwd(&here), "mcpServers": []}),
    );
    assert_eq!(
        loaded["result"]["_meta"]["pod"]["droppedGrants"], 0,
        "{loaded}"
    );
}

#[test]
fn a_call_waiting_for_a_slot_when_the_mode_became_read_only_does_not_run() {
    // One slot: the first command holds it until the test lets it go (it waits for the file
    // `release`, which only the test writes); the second, allowed while the first runs, waits
    // for the slot; the mode becomes read-only meanwhile, and the second command must not run.
    // Each step waits for the state the next one needs: which command is asked first, and how
    // fast the machine is, decide nothing.
    let ws = Workspace::with_manifest(
        &common::manifest_text(300).replace("[tools]\n", "[tools]\nmax_parallel = 1\n"),
    );
    let mut agent = Agent::spawn(&ws);
    agent.initialize();
    let id = agent.new_session(&ws);
    // Bounded (20 s), so that a failing test leaves nothing running.
    let holder = "timeout 20 sh -c 'until [ -e release ]; do sleep 0.01; done'";
    agent.prompt(1, &id, &format!("!{holder}\n!touch waited"));
    // Both asks come (in either order); the holder is allowed first, the other kept.
    let is_ask = |v: &Value| v["method"] == "session/request_permission";
    let title = |ask: &Value| ask["params"]["toolCall"]["title"].clone();
    let first = agent.wait(is_ask);
    let second = agent.wait(is_ask);
    let (hold, wait) = if title(&first) == holder {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(title(&hold), holder, "{hold}");
    let holder_call = hold["params"]["toolCall"]["toolCallId"].clone();
    agent.select(&hold, "allow_once");
    agent.wait(|v| {
        v["params"]["update"]["toolCallId"] == holder_call
            && v["params"]["update"]["status"] == "in_progress"
    });
    // The holder has the slot: the second command, allowed now, can only wait for it.
    agent.select(&wait, "allow_once");
    let mode = agent.call(
        "session/set_mode",
        json!({"sessionId": id, "modeId": "read-only"}),
    );
    assert!(mode.get("error").is_none(), "{mode}");
    std::fs::write(ws.path("release"), "").expect("release the slot");
    let failed = agent
        .wait(|v| v["method"] == "session/update" && v["params"]["update"]["status"] == "failed");
    let text = failed["params"]["update"]["rawOutput"]["content"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("read-only mode"), "{failed}");
    agent.wait(|v| v["id"] == 1 && v.get("method").is_none());
    assert!(!Path::new(&cwd(&ws)).join("waited").exists());
}

#[test]
fn a_prompt_a_user_prompt_hook_refuses_ends_in_refusal_saying_why() {
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"t\"\n[model]\nprovider = \"offline\"\n\
         [[hooks.user_prompt]]\ncommand = [\"sh\", \"-c\", \"cat > /dev/null; echo 'not in this repo' >&2; exit 2\"]\n",
    );
    ws.trust();
    let mut agent = Agent::spawn(&ws);
    agent.initialize();
    let id = agent.new_session(&ws);
    agent.prompt(1, &id, "!touch made-anyway");
    let said = agent.wait(|v| {
        v["method"] == "session/update"
            && v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    });
    let text = said["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("not in this repo") && text.contains("hooks.user_prompt"),
        "{said}"
    );
    let done = agent.wait(|v| v["id"] == 1 && v.get("method").is_none());
    assert_eq!(done["result"]["stopReason"], "refusal", "{done}");
    assert!(!Path::new(&cwd(&ws)).join("made-anyway").exists());
}

/// SIGTERM of `pod acp` while a `bash` call runs: the call is cancelled and its end runs before
/// the agent exits, so the `.git/commondir` it made where there was none is set aside, not left
/// for the next session to take for the user's.
#[test]
fn a_signalled_agent_sets_aside_what_the_running_call_left() {
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"acp-signal\"\n\n[permissions]\ndefault_action = \"allow\"\n\n\
         [[permissions.rule]]\ntool = \"*\"\naction = \"allow\"\n",
    );
    ws.trust();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(ws.dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "x"]);
    let mut agent = Agent::spawn(&ws);
    agent.initialize();
    let session = agent.new_session(&ws);
    agent.prompt(7, &session, "!echo planted > .git/commondir; sleep 600");
    let planted = ws.path(".git/commondir");
    common::wait_until("the call planted .git/commondir", || planted.exists());
    // SAFETY: a signal to the child this test spawned.
    assert_eq!(
        unsafe { libc::kill(agent.child.id() as i32, libc::SIGTERM) },
        0
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = agent.child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "pod acp did not exit after SIGTERM"
        );
        // Paces the poll for the exit; the deadline decides.
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
    assert!(!planted.exists(), "the call's commondir was left");
    assert_eq!(
        common::read(&ws.path(".git/commondir.pod-planted")),
        "planted\n"
    );
}
