//! Issue 17: MCP servers as tools, under the same rules, sandbox and explanations. The real
//! `pod` binary over real pipes, against real MCP servers nobody here wrote:
//! `@modelcontextprotocol/server-filesystem` and `@modelcontextprotocol/server-everything`,
//! installed by `tests/mcp/setup.sh` (versions locked in `tests/mcp/package-lock.json`). Without
//! npm the tests say so and pass, unless `POD_REQUIRE_MCP_SERVERS` is set: `.ci/run` sets it
//! (after running `setup.sh` itself), so on CI they run or fail, never skip. Security tests
//! assert the side effect is absent (the file was not written), not only the decision.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::provider::{self, Api, Provider};
use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

/// `tests/mcp/node_modules/@modelcontextprotocol`, installed once per test binary; `None` (the
/// test is skipped, with a message) only when npm is not installed and `POD_REQUIRE_MCP_SERVERS`
/// is not set.
fn servers() -> Option<&'static Path> {
    static INSTALLED: OnceLock<Option<PathBuf>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
            let npm = Command::new("npm")
                .arg("--version")
                .stdout(Stdio::null())
                .status();
            if !npm.is_ok_and(|s| s.success()) {
                assert!(
                    std::env::var_os("POD_REQUIRE_MCP_SERVERS").is_none(),
                    "POD_REQUIRE_MCP_SERVERS is set, but npm is not installed, so the MCP servers \
                     these tests run against (tests/mcp/setup.sh) cannot be installed"
                );
                eprintln!(
                    "SKIPPED: npm is not installed, so the MCP servers these tests run against \
                     (tests/mcp/setup.sh) cannot be installed"
                );
                return None;
            }
            let status = Command::new(here.join("setup.sh"))
                .status()
                .expect("run tests/mcp/setup.sh");
            assert!(status.success(), "tests/mcp/setup.sh failed: {status}");
            Some(here.join("node_modules/@modelcontextprotocol"))
        })
        .as_deref()
}

fn index_js(servers: &Path, package: &str) -> String {
    servers
        .join(package)
        .join("dist/index.js")
        .display()
        .to_string()
}

/// `[mcp.servers.fs]`: the filesystem server, allowed the workspace (and `extra` folders).
fn fs_server(servers: &Path, extra: &[&Path]) -> String {
    let mut args = vec![
        format!("{:?}", index_js(servers, "server-filesystem")),
        "\".\"".into(),
    ];
    args.extend(
        extra
            .iter()
            .map(|p| format!("{:?}", p.display().to_string())),
    );
    format!(
        "[mcp.servers.fs]\ncommand = \"node\"\nargs = [{}]\n",
        args.join(", ")
    )
}

/// `[mcp.servers.everything]`.
fn everything_server(servers: &Path) -> String {
    format!(
        "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
        index_js(servers, "server-everything")
    )
}

/// `[mcp.servers.everything]` behind the tap (`tests/mcp/tap.py`), which appends every line the
/// pod sends the server to `tap.log` in the workspace.
fn tapped_everything_server(servers: &Path) -> String {
    let tap = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/tap.py");
    format!(
        "[mcp.servers.everything]\ncommand = \"python3\"\nargs = [{:?}, \"tap.log\", \"--\", \"node\", {:?}, \"stdio\"]\n",
        tap.display().to_string(),
        index_js(servers, "server-everything")
    )
}

fn manifest(body: &str) -> String {
    format!("[pod]\nname = \"mcp-test\"\n[model]\nprovider = \"offline\"\n{body}")
}

fn text(input: &str) -> Value {
    json!({"input": [{"type": "text", "text": input}]})
}

/// One offline-model line calling `tool` with `input`.
fn call_line(tool: &str, input: Value) -> String {
    format!("@{tool} {input}")
}

/// The `toolResult` events of the last turn, in order.
fn results(pod: &PodProcess, turn: &Value) -> Vec<Value> {
    let id = turn["turnId"].as_str().unwrap_or_default();
    pod.turn_events(id)
        .into_iter()
        .filter(|e| e["type"] == "toolResult")
        .collect()
}

fn server_state<'a>(init: &'a Value, name: &str) -> &'a Value {
    init["mcpServers"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == name))
        .unwrap_or_else(|| panic!("no server {name} in {init}"))
}

/// Live processes started by `pid` (its children, or under the namespace sandbox the program
/// its child runs inside the call's namespaces) whose command line holds `marker`.
fn children_with(pid: u32, marker: &str) -> Vec<u32> {
    let holds = |p: u32| {
        let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&cmdline).contains(marker)
    };
    let all = common::live_descendants(pid);
    // The outermost: a server's own children (if it starts any) are not servers.
    all.iter()
        .copied()
        .filter(|p| holds(*p) && !common::parent_of(*p).is_some_and(holds))
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + *common::WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        // Paces the poll; the condition decides.
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn server_tools_are_listed_in_initialize_with_their_annotations() {
    let Some(servers) = servers() else { return };
    let ws = Workspace::with_manifest(&manifest(&format!(
        "{}{}",
        fs_server(servers, &[]),
        everything_server(servers)
    )));
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let init = pod.initialize(false);
    for name in ["fs", "everything"] {
        let server = server_state(&init, name);
        assert_eq!(server["state"], "running", "{server}");
        assert!(server["tools"].as_u64().unwrap_or(0) > 5, "{server}");
    }
    let tools = init["tools"].as_array().expect("tools");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not offered: {tools:?}"))
    };
    let read = tool("mcp__fs__read_text_file");
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    assert_eq!(read["inputSchema"]["type"], "object");
    assert!(read["inputSchema"]["properties"].get("path").is_some());
    assert_eq!(
        tool("mcp__fs__write_file")["annotations"]["destructiveHint"],
        true
    );
    tool("mcp__everything__trigger-long-running-operation");
    // Built-in tools have no annotations field.
    assert!(tool("bash").get("annotations").is_none());
}

#[test]
fn a_read_tool_allowed_by_a_rule_runs_and_the_reapers_sweep_spares_the_server() {
    let Some(servers) = servers() else { return };
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"deny\"\n\
         [[permissions.rule]]\ntool = \"mcp__fs__read_text_file\"\npattern = \"path=notes/*\"\naction = \"allow\"\n\
         [[permissions.rule]]\ntool = \"bash\"\npattern = \"true\"\naction = \"allow\"\n{}",
        fs_server(servers, &[])
    )));
    std::fs::create_dir(ws.path("notes")).expect("mkdir");
    std::fs::write(ws.path("notes/a.md"), "hello from a file\n").expect("write");
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    // A bash call first: its end sweeps the pod's children that are not calls' processes.
    let turn = pod.call("run", text("!true"));
    assert_eq!(results(&pod, &turn)[0]["isError"], false);
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__fs__read_text_file",
            json!({"path": ws.path("notes/a.md").display().to_string()}),
        )),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["content"], "hello from a file\n");
    // The same tool outside the allowed pattern falls to the default.
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__fs__read_text_file",
            json!({"path": "notes/../pod.toml"}),
        )),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["deniedBy"], "permission", "{result}");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("mcp__fs__read_text_file `path=pod.toml`")),
        "{result}"
    );
}

#[test]
fn a_server_gets_no_secret_of_pods_environment_only_its_own_env() {
    let Some(servers) = servers() else { return };
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"deny\"\n\
         [[permissions.rule]]\ntool = \"mcp__everything__get-env\"\naction = \"allow\"\n{}\
         env = {{ SERVER_SETTING = \"from-the-manifest\" }}\n",
        everything_server(servers)
    )));
    let secrets = [
        ("ANTHROPIC_API_KEY", "sk-ant-secret-one"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret-two"),
        ("GITHUB_TOKEN", "ghp-secret-three"),
        ("MY_DB_PASSWORD", "db-secret-four"),
    ];
    let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &secrets);
    let init = pod.initialize(false);
    assert_eq!(
        server_state(&init, "everything")["state"],
        "running",
        "{init}"
    );
    let turn = pod.call(
        "run",
        text(&call_line("mcp__everything__get-env", json!({}))),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["isError"], false, "{result}");
    let env = result["content"].as_str().unwrap_or_default();
    // The real server prints its whole environment: the base set and its own `env` are there,
    // no secret is.
    assert!(env.contains("\"PATH\""), "{env}");
    assert!(env.contains("from-the-manifest"), "{env}");
    for (name, value) in secrets {
        assert!(!env.contains(value), "{name} reached the MCP server: {env}");
    }
}

#[test]
fn a_write_denied_by_a_path_pattern_writes_nothing() {
    let Some(servers) = servers() else { return };
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"allow\"\n\
         [[permissions.rule]]\ntool = \"mcp__fs__write_file\"\npattern = \"path=*.env\"\naction = \"deny\"\n\
         message = \"No secrets files.\"\n\
         [[permissions.rule]]\ntool = \"read\"\npattern = \"secret*\"\naction = \"deny\"\n{}",
        fs_server(servers, &[])
    )));
    std::fs::write(ws.path("secret.txt"), "the secret").expect("write");
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let lines = [
        call_line(
            "mcp__fs__write_file",
            json!({"path": "x.env", "content": "KEY=1"}),
        ),
        call_line(
            "mcp__fs__write_file",
            json!({"path": "sub/../y.env", "content": "KEY=2"}),
        ),
        call_line(
            "mcp__fs__write_file",
            json!({"path": ws.path("ok.txt").display().to_string(), "content": "fine"}),
        ),
        // read rules govern the files MCP tools name, as they govern `edit` and `grep`.
        call_line("mcp__fs__read_text_file", json!({"path": "secret.txt"})),
    ];
    let turn = pod.call("run", text(&lines.join("\n")));
    let results = results(&pod, &turn);
    assert_eq!(results.len(), 4);
    for denied in &results[..2] {
        assert_eq!(denied["deniedBy"], "permission", "{denied}");
        assert!(denied["content"]
            .as_str()
            .is_some_and(|c| c.contains("No secrets files.")));
    }
    assert_eq!(results[2]["isError"], false, "{}", results[2]);
    assert_eq!(results[3]["deniedBy"], "permission", "{}", results[3]);
    assert!(!results[3]["content"]
        .as_str()
        .unwrap_or("")
        .contains("the secret"));
    assert!(!ws.path("x.env").exists(), "a denied write was written");
    assert!(!ws.path("y.env").exists(), "a denied write was written");
    assert_eq!(common::read(&ws.path("ok.txt")), "fine");
}

/// The filesystem server resolves a relative path against its first allowed directory, not its
/// working folder, and opens a file whose name reads the same in Unicode NFC: neither may slip
/// past a deny written for the file it really opens.
#[test]
fn paths_a_server_reads_differently_from_the_rules_are_never_allowed() {
    let Some(servers) = servers() else { return };
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"allow\"\n\
         [[permissions.rule]]\ntool = \"read\"\npattern = \"data/private/*\"\naction = \"deny\"\n\
         [[permissions.rule]]\ntool = \"file_write\"\npattern = \"data/private/*\"\naction = \"deny\"\n\
         [[permissions.rule]]\ntool = \"read\"\npattern = \"données/*\"\naction = \"deny\"\n\
         [[permissions.rule]]\ntool = \"file_write\"\npattern = \"données/*\"\naction = \"deny\"\n\
         [mcp.servers.fs]\ncommand = \"node\"\nargs = [{:?}, \"data\", \".\"]\n",
        index_js(servers, "server-filesystem")
    )));
    std::fs::create_dir_all(ws.path("data/private")).expect("mkdir");
    std::fs::write(ws.path("data/private/key"), "TOP SECRET").expect("write");
    std::fs::create_dir(ws.path("donn\u{e9}es")).expect("mkdir");
    std::fs::write(ws.path("donn\u{e9}es/key"), "NFC SECRET").expect("write");
    let decomposed = ws.path("donne\u{301}es").display().to_string();
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let lines = [
        // The server reads these as data/private/...: relative to its first directory.
        call_line("mcp__fs__read_text_file", json!({"path": "private/key"})),
        call_line(
            "mcp__fs__write_file",
            json!({"path": "private/new", "content": "pwned"}),
        ),
        // The server reads these as données/... (NFC).
        call_line(
            "mcp__fs__read_text_file",
            json!({"path": format!("{decomposed}/key")}),
        ),
        call_line(
            "mcp__fs__write_file",
            json!({"path": format!("{decomposed}/new"), "content": "pwned"}),
        ),
    ];
    let turn = pod.call("run", text(&lines.join("\n")));
    let results = results(&pod, &turn);
    assert_eq!(results.len(), 4);
    for result in &results {
        assert_eq!(result["deniedBy"], "permission", "{result}");
        let content = result["content"].as_str().unwrap_or("");
        assert!(!content.contains("SECRET"), "{result}");
    }
    assert!(
        !ws.path("data/private/new").exists(),
        "a denied write was written"
    );
    assert!(
        !ws.path("donn\u{e9}es/new").exists(),
        "a denied write was written"
    );
    assert!(!ws.path("private").exists() && !ws.path("donne\u{301}es").exists());
}

#[test]
fn an_ask_is_answered_over_the_wire_and_shows_the_annotations() {
    let Some(servers) = servers() else { return };
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"ask\"\n{}",
        fs_server(servers, &[])
    )));
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(true);
    for (file, reply, written) in [("yes.txt", "allow_once", true), ("no.txt", "deny", false)] {
        let id = pod.start(
            "run",
            text(&call_line(
                "mcp__fs__write_file",
                json!({"path": file, "content": "hi"}),
            )),
        );
        let request = pod.wait_event_type("permissionRequest");
        assert_eq!(request["tool"], "mcp__fs__write_file");
        assert_eq!(request["annotations"]["destructiveHint"], true, "{request}");
        let subjects: Vec<&str> = request["subjects"]
            .as_array()
            .expect("subjects")
            .iter()
            .filter_map(|s| s["subject"].as_str())
            .collect();
        assert!(
            subjects.contains(&format!("path={file}").as_str()),
            "{subjects:?}"
        );
        assert!(!ws.path(file).exists(), "written before the answer");
        pod.call(
            "permissionReply",
            json!({"requestId": request["requestId"], "decision": reply}),
        );
        let turn = pod.response(&json!(id))["result"].clone();
        let result = &results(&pod, &turn)[0];
        assert_eq!(result["isError"], !written, "{result}");
        assert_eq!(ws.path(file).exists(), written, "{file}");
    }
}

#[test]
fn a_default_by_annotation_allows_read_only_tools_and_nothing_else() {
    let Some(servers) = servers() else { return };
    // Headless: no approver, so an ask fails closed.
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"ask\"\n{}default_action = {{ read_only = \"allow\" }}\n",
        fs_server(servers, &[])
    )));
    std::fs::write(ws.path("a.txt"), "content a").expect("write");
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__fs__read_text_file",
            json!({"path": ws.path("a.txt").display().to_string()}),
        )),
    );
    assert_eq!(results(&pod, &turn)[0]["content"], "content a");
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__fs__write_file",
            json!({"path": "b.txt", "content": "x"}),
        )),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["deniedBy"], "permission", "{result}");
    assert!(!ws.path("b.txt").exists(), "a write ran without approval");
    // An argument the engine cannot read is never allowed by that default either.
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__fs__read_text_file",
            json!({"path": "~/.bashrc"}),
        )),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["deniedBy"], "permission", "{result}");
}

#[test]
fn an_is_error_result_reaches_the_provider_as_is_error() {
    let Some(servers) = servers() else { return };
    let api = Api::Anthropic;
    let provider = Provider::start(vec![
        provider::sse(api.calls(&[(
            "toolu_1",
            "mcp__fs__read_text_file",
            json!({"path": "missing.txt"}),
        )])),
        provider::sse(api.text("done")),
    ]);
    let ws = Workspace::with_manifest(&provider::manifest(
        api,
        &provider,
        "",
        &fs_server(servers, &[]),
    ));
    std::fs::write(ws.path("key"), "test-key").expect("key");
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let turn = pod.call("run", text("read it"));
    assert_eq!(turn["stopReason"], "end_turn", "{turn}");
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["isError"], true, "{result}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let tool_result = requests[1]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_array())
        .and_then(|c| c.iter().find(|b| b["type"] == "tool_result"))
        .cloned()
        .expect("a tool_result in the second request");
    assert_eq!(tool_result["tool_use_id"], "toolu_1");
    assert_eq!(tool_result["is_error"], true, "{tool_result}");
    assert!(
        tool_result["content"].to_string().contains("ENOENT"),
        "{tool_result}"
    );
}

#[test]
fn a_server_killed_mid_call_gives_an_error_result_and_the_turn_goes_on() {
    let Some(servers) = servers() else { return };
    // The server behind the tap (`tests/mcp/tap.py`), so that the test sees the call reach it.
    let ws = Workspace::with_manifest(&manifest(&tapped_everything_server(servers)));
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let node = children_with(pod.pid(), "server-everything");
    assert_eq!(node.len(), 1, "the server is the pod's child: {node:?}");
    let lines = [
        call_line(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 60, "steps": 60}),
        ),
        "@bash {\"command\":\"echo still here\"}".to_string(),
    ];
    let id = pod.start("run", text(&lines.join("\n")));
    pod.wait_event_type("toolCall");
    // The kill lands mid-call: once the call has reached the server.
    let log = ws.path("tap.log");
    wait_until("the call reaches the server", || {
        common::read(&log).contains("trigger-long-running-operation")
    });
    // SAFETY: kill(2) on the server's pid, found a moment ago as the pod's child.
    unsafe {
        libc::kill(node[0] as i32, libc::SIGKILL);
    }
    let turn = pod.response(&json!(id))["result"].clone();
    assert_eq!(turn["stopReason"], "end_turn", "{turn}");
    let results = results(&pod, &turn);
    let killed = &results[0];
    assert_eq!(killed["isError"], true, "{killed}");
    let content = killed["content"].as_str().unwrap_or_default();
    assert!(
        content.contains("MCP server everything") && content.contains("signal 9"),
        "{content}"
    );
    // The other call of the response ran; the turn went back to the model, which wrote its
    // summary.
    assert!(
        results[1]["content"]
            .as_str()
            .is_some_and(|c| c.contains("still here")),
        "{}",
        results[1]
    );
    let text_events: Vec<&Value> = pod
        .events
        .iter()
        .filter(|e| e["type"] == "textDelta")
        .collect();
    assert!(!text_events.is_empty());
    // Later calls are refused at once, saying why.
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__everything__echo",
            json!({"message": "hi"}),
        )),
    );
    let result = &pod
        .turn_events(turn["turnId"].as_str().unwrap_or_default())
        .into_iter()
        .find(|e| e["type"] == "toolResult")
        .expect("a result");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("is not running")),
        "{result}"
    );
}

#[test]
fn a_server_that_never_answers_initialize_times_out_with_a_clear_error() {
    if servers().is_none() {
        return;
    }
    let marker = format!("600.{}", std::process::id());
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[mcp.servers.mute]\ncommand = \"sleep\"\nargs = [\"{marker}\"]\nstartup_timeout_secs = 1\n"
    )));
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let init = pod.initialize(false);
    let mute = server_state(&init, "mute");
    assert_eq!(mute["state"], "failed", "{mute}");
    let error = mute["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("within 1 s (startup_timeout_secs)"),
        "{error}"
    );
    // The server was stopped, not left running.
    wait_until("the mute server is gone", || {
        children_with(pod.pid(), &marker).is_empty()
    });
    let turn = pod.call("run", text(&call_line("mcp__mute__anything", json!({}))));
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["isError"], true);
    let content = result["content"].as_str().unwrap_or_default();
    assert!(
        content.contains("MCP server mute is not running") && content.contains("failed to start"),
        "{content}"
    );
}

#[test]
fn cancel_during_a_slow_tool_reaches_the_server() {
    let Some(servers) = servers() else { return };
    let ws = Workspace::with_manifest(&manifest(&tapped_everything_server(servers)));
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let id = pod.start(
        "run",
        text(&call_line(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 60, "steps": 60}),
        )),
    );
    pod.wait_event_type("toolCall");
    let log = ws.path("tap.log");
    let sent = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until("the call reaches the server", || {
        sent().contains("trigger-long-running-operation")
    });
    assert_eq!(pod.call("cancel", json!({}))["cancelled"], true);
    let turn = pod.response(&json!(id))["result"].clone();
    assert_eq!(turn["stopReason"], "cancelled", "{turn}");
    let call_id = sent()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|m| m["method"] == "tools/call")
        .map(|m| m["id"].clone())
        .expect("the tools/call request in the tap's log");
    wait_until("notifications/cancelled reaches the server", || {
        sent()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|m| {
                m["method"] == "notifications/cancelled" && m["params"]["requestId"] == call_id
            })
    });
    // The server lives on: the next call works.
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__everything__echo",
            json!({"message": "after cancel"}),
        )),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["isError"], false, "{result}");
    assert!(result["content"]
        .as_str()
        .is_some_and(|c| c.contains("after cancel")));
}

#[test]
fn servers_run_inside_the_sandbox() {
    let Some(servers) = servers() else { return };
    // The filesystem server may write outside the workspace by its own configuration, and the
    // rules allow everything: only the kernel stops it.
    let outside = tempfile::tempdir().expect("tempdir");
    let outside = outside.path().canonicalize().expect("canonical");
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"allow\"\n{}",
        fs_server(servers, &[&outside])
    )));
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let init = pod.initialize(false);
    assert_eq!(
        init["sandbox"]["enforced"], true,
        "needs Landlock ABI 3+: {init}"
    );
    let target = outside.join("escaped.txt");
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__fs__write_file",
            json!({"path": target.display().to_string(), "content": "out"}),
        )),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["isError"], true, "{result}");
    // Refused by the kernel (a read-only mount; EACCES under the Landlock fall-back), not by
    // the server's own checks.
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("EROFS") || c.contains("EACCES")),
        "{result}"
    );
    assert!(
        !target.exists(),
        "the server wrote outside the writable folders"
    );
    // Inside the workspace the same server writes.
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__fs__write_file",
            json!({"path": ws.path("in.txt").display().to_string(), "content": "in"}),
        )),
    );
    assert_eq!(results(&pod, &turn)[0]["isError"], false);
    assert_eq!(common::read(&ws.path("in.txt")), "in");
    drop(pod);
    // The control: with the sandbox off, the same call does write there.
    std::fs::write(
        ws.manifest(),
        manifest(&format!(
            "[sandbox]\nmode = \"off\"\n[permissions]\ndefault_action = \"allow\"\n{}",
            fs_server(servers, &[&outside])
        )),
    )
    .expect("rewrite the manifest");
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__fs__write_file",
            json!({"path": target.display().to_string(), "content": "out"}),
        )),
    );
    assert_eq!(results(&pod, &turn)[0]["isError"], false);
    assert!(target.exists());
}

#[test]
fn servers_stop_at_eof_and_their_stderr_goes_to_the_log() {
    let Some(servers) = servers() else { return };
    let ws = Workspace::with_manifest(&manifest(&format!(
        "{}{}",
        fs_server(servers, &[]),
        everything_server(servers)
    )));
    let log = tempfile::NamedTempFile::new().expect("log file");
    let stderr = Stdio::from(log.reopen().expect("reopen"));
    let mut pod = PodProcess::spawn_logging(
        &ws,
        Framing::Lines,
        &["--log-level", "pod::mcp=info"],
        stderr,
    );
    pod.initialize(false);
    let mut running = children_with(pod.pid(), "@modelcontextprotocol");
    running.sort();
    assert_eq!(running.len(), 2, "{running:?}");
    pod.close_stdin();
    assert!(pod.wait_exit(*common::WAIT).success());
    for pid in running {
        assert!(!alive(pid), "server {pid} outlived the pod");
    }
    let logged = common::read(log.path());
    // Both servers announce themselves on stderr; pod logs it (stdout held only protocol
    // messages, or the harness would have failed).
    assert!(
        logged.contains("fs: Secure MCP Filesystem Server running on stdio"),
        "{logged}"
    );
    assert!(logged.contains("MCP server fs: stopped"), "{logged}");
}

#[test]
fn explain_decides_an_mcp_call_without_starting_the_server() {
    let ws = Workspace::with_manifest(&manifest(
        "[permissions]\ndefault_action = \"ask\"\n\
         [[permissions.rule]]\ntool = \"mcp__fs__write_file\"\npattern = \"path=*.env\"\naction = \"deny\"\n\
         [[permissions.rule]]\ntool = \"mcp__fs__*\"\naction = \"allow\"\n\
         [mcp.servers.fs]\ncommand = \"/nonexistent/mcp-server\"\n",
    ));
    let explain = |input: &str, extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_pod"))
            .arg("explain")
            .arg(ws.manifest())
            .args(["--trust", "--tool", "mcp__fs__write_file", "--input", input])
            .args(extra)
            .output()
            .expect("pod explain");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = explain(r#"{"path":"sub/../x.env","content":"a b"}"#, &[]);
    assert!(text.starts_with("decision: deny\n"), "{text}");
    assert!(
        text.contains(
            "mcp__fs__write_file `path=x.env`: deny by rule 1 (mcp__fs__write_file \"path=*.env\")"
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"`content="a b" path=x.env`: allow by rule 2"#),
        "{text}"
    );
    assert!(text.contains("annotations: none given"), "{text}");
    let json: Value = serde_json::from_str(&explain(
        &json!({"path": ws.path("notes.md").display().to_string()}).to_string(),
        &["--json"],
    ))
    .expect("json");
    assert_eq!(json["decision"], "allow", "{json}");
}

#[test]
fn a_server_that_hangs_in_a_call_times_out_and_the_turn_goes_on() {
    let Some(servers) = servers() else { return };
    let ws = Workspace::with_manifest(&manifest(&format!(
        "{}tool_timeout_secs = 1\n",
        everything_server(servers)
    )));
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 60, "steps": 2}),
        )),
    );
    assert_eq!(turn["stopReason"], "end_turn", "{turn}");
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("did not answer within 1 s (tool_timeout_secs)")),
        "{result}"
    );
    // The server is still there for the next call.
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__everything__echo",
            json!({"message": "still up"}),
        )),
    );
    assert_eq!(results(&pod, &turn)[0]["isError"], false);
}

/// `pod acp` with an editor's `mcpServers`: the servers (stdio, and streamable HTTP under the
/// session's network rules) are started for the session, their tools are offered as
/// `mcp__NAME__TOOL` and decided by the session's rules; a transport pod does not speak is
/// refused, naming the entry.
#[test]
fn acp_sessions_start_the_mcp_servers_the_editor_offers() {
    use std::io::{BufRead, BufReader, Write};
    let Some(servers) = servers() else {
        return;
    };
    let web = HttpEverything::start(servers);
    let recorder = Recorder::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let state = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("pod.toml"),
        format!(
            "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"deny\"\n\
             [[permissions.rule]]\ntool = \"mcp__everything__echo\"\npattern = \"*\"\naction = \"allow\"\n\
             [[permissions.rule]]\ntool = \"mcp__web__echo\"\naction = \"allow\"\n\
             [[permissions.rule]]\ntool = \"network\"\npattern = \"{MCP_HOST}:{}\"\naction = \"allow\"\n\
             [[permissions.rule]]\ntool = \"network\"\npattern = \"heard.test:{}\"\naction = \"allow\"\n",
            web.port, recorder.port
        ),
    )
    .expect("write pod.toml");
    common::trust(dir.path(), state.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("acp")
        .env("POD_CONFIG", "")
        .env("XDG_STATE_HOME", state.path())
        .env(
            "POD_TEST_HOSTS",
            format!("{},other.test=127.0.0.1,heard.test=127.0.0.1", test_hosts()),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn pod acp");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let mut updates: Vec<Value> = Vec::new();
    let mut call = |id: u64, method: &str, params: Value| -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(input, "{request}").expect("write");
        loop {
            let mut line = String::new();
            let n = output.read_line(&mut line).expect("read");
            assert!(n > 0, "pod acp closed stdout");
            let v: Value = serde_json::from_str(&line).expect("JSON line");
            if v["id"] == id && v.get("method").is_none() {
                return v;
            }
            updates.push(v);
        }
    };
    let init = call(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(
        init["result"]["agentCapabilities"]["mcpCapabilities"],
        json!({"http": true, "sse": false}),
        "{init}"
    );
    let cwd = dir.path().canonicalize().expect("cwd");
    let sse = call(
        2,
        "session/new",
        json!({"cwd": cwd, "mcpServers": [{"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}]}),
    );
    assert_eq!(sse["error"]["code"], -32602, "{sse}");
    assert!(
        sse["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("mcpServers[0]")),
        "{sse}"
    );
    let everything = json!({"name": "everything", "command": "node",
        "args": [index_js(servers, "server-everything"), "stdio"], "env": []});
    let http = json!({"type": "http", "name": "web", "url": web.url(), "headers": []});
    // Allowed, with the editor's header: the listener (no MCP server) hears it once.
    let heard = json!({"type": "http", "name": "heard",
        "url": format!("http://heard.test:{}/mcp", recorder.port),
        "headers": [{"name": "X-Editor", "value": "zed"}]});
    // No rule allows this one's host: it is not started, and its listener hears nothing.
    let blocked = json!({"type": "http", "name": "blocked",
        "url": format!("http://other.test:{}/mcp", recorder.port), "headers": []});
    let session = call(
        3,
        "session/new",
        json!({"cwd": cwd, "mcpServers": [everything, http, heard, blocked]}),
    );
    let tools = &session["result"]["_meta"]["pod"]["tools"];
    let offered = |name: &str| {
        tools
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == name))
    };
    assert!(offered("mcp__everything__echo"), "{session}");
    assert!(offered("mcp__web__echo"), "{session}");
    assert!(!offered("mcp__blocked__echo"), "{session}");
    let heads: Vec<String> = recorder
        .heads()
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(heads[0].starts_with("post /mcp http/1.1"), "{heads:?}");
    assert!(heads[0].contains("x-editor: zed"), "{heads:?}");
    assert!(
        heads[0].contains(&format!("host: heard.test:{}", recorder.port)),
        "{heads:?}"
    );
    let id = session["result"]["sessionId"].clone();
    let prompt = format!(
        "{}\n{}",
        call_line(
            "mcp__everything__echo",
            json!({"message": "from-the-editor"})
        ),
        call_line("mcp__everything__get-sum", json!({"a": 1, "b": 2}))
    );
    let prompt = format!(
        "{prompt}\n{}",
        call_line(
            "mcp__web__echo",
            json!({"message": "over-http-from-the-editor"})
        )
    );
    let done = call(
        4,
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text", "text": prompt}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let finished: Vec<&Value> = updates
        .iter()
        .map(|u| &u["params"]["update"])
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u.get("rawOutput").is_some())
        .collect();
    assert_eq!(finished.len(), 3, "{updates:?}");
    assert_eq!(finished[0]["status"], "completed", "{:?}", finished[0]);
    assert!(
        finished[0]["content"]
            .to_string()
            .contains("from-the-editor"),
        "{:?}",
        finished[0]
    );
    assert_eq!(finished[1]["status"], "failed", "{:?}", finished[1]);
    assert!(
        finished[1]["content"].to_string().contains("denied"),
        "{:?}",
        finished[1]
    );
    assert_eq!(finished[2]["status"], "completed", "{:?}", finished[2]);
    assert!(
        finished[2]["content"]
            .to_string()
            .contains("Echo: over-http-from-the-editor"),
        "{:?}",
        finished[2]
    );
    drop(input);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
}

// Streamable HTTP servers (`url`): pod's own connection, decided by the `network` rules and the
// blocked address ranges like `web_fetch`'s. A loopback listener is reached only through a test
// host name (`POD_TEST_HOSTS`, debug builds only), as tests/binary/network.rs does.

/// The test host name the HTTP servers are reached by.
const MCP_HOST: &str = "mcp.test";

fn test_hosts() -> String {
    format!("{MCP_HOST}=127.0.0.1")
}

/// `@modelcontextprotocol/server-everything` in streamable HTTP mode on a free loopback port;
/// killed when dropped.
struct HttpEverything {
    child: std::process::Child,
    port: u16,
}

impl HttpEverything {
    fn start(servers: &Path) -> HttpEverything {
        let deadline = Instant::now() + *common::WAIT;
        loop {
            // A free port: the server takes it from PORT (it reports no port it picked itself).
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let mut child = Command::new("node")
                .arg(index_js(servers, "server-everything"))
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start server-everything streamableHttp");
            loop {
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return HttpEverything { child, port };
                }
                // It exits when another process took the port first: try another one.
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "server-everything streamableHttp did not listen on {port}"
                );
                // Paces the poll; the connection decides.
                std::thread::sleep(Duration::from_millis(50));
            }
            assert!(Instant::now() < deadline, "no port for server-everything");
        }
    }

    fn url(&self) -> String {
        format!("http://{MCP_HOST}:{}/mcp", self.port)
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback listener that records the request head of every connection it gets and answers
/// `404`: a stand-in for a server that must see no request, or whose request is checked.
struct Recorder {
    port: u16,
    heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Recorder {
    fn start() -> Recorder {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                record
                    .lock()
                    .expect("lock")
                    .push(String::from_utf8_lossy(&head).into_owned());
                let _ = stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            }
        });
        Recorder { port, heads }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("lock").clone()
    }
}

#[test]
fn a_streamable_http_server_allowed_by_a_network_rule_runs_its_tools() {
    let Some(servers) = servers() else { return };
    let server = HttpEverything::start(servers);
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"deny\"\n\
         [[permissions.rule]]\ntool = \"network\"\npattern = \"{MCP_HOST}:{port}\"\naction = \"allow\"\n\
         [[permissions.rule]]\ntool = \"mcp__remote__echo\"\naction = \"allow\"\n\
         [mcp.servers.remote]\nurl = \"{url}\"\n",
        port = server.port,
        url = server.url()
    )));
    let mut pod = PodProcess::spawn_env(
        &ws,
        Framing::Lines,
        &[],
        &[("POD_TEST_HOSTS", &test_hosts())],
    );
    let init = pod.initialize(false);
    let state = server_state(&init, "remote");
    assert_eq!(state["state"], "running", "{state}");
    assert!(common::has_tool(&init, "mcp__remote__echo"), "{init}");
    let turn = pod.call(
        "run",
        text(&call_line(
            "mcp__remote__echo",
            json!({"message": "over http"}),
        )),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["content"], "Echo: over http");
    // A tool the rules do not allow is still decided by them.
    let turn = pod.call(
        "run",
        text(&call_line("mcp__remote__get-sum", json!({"a": 1, "b": 2}))),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["deniedBy"], "permission", "{result}");
}

#[test]
fn a_url_server_whose_host_no_rule_allows_is_not_started_and_gets_no_request() {
    let recorder = Recorder::start();
    let port = recorder.port;
    // `denied`: no rule allows its host. `loopback`: a rule allows the address, but loopback is
    // a range no connection from pod reaches. `asked`: an ask nobody can answer at start-up.
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"deny\"\n\
         [[permissions.rule]]\ntool = \"network\"\npattern = \"127.0.0.1:{port}\"\naction = \"allow\"\n\
         [[permissions.rule]]\ntool = \"network\"\npattern = \"asked.test:{port}\"\naction = \"ask\"\n\
         [[permissions.rule]]\ntool = \"mcp__*\"\naction = \"allow\"\n\
         [mcp.servers.denied]\nurl = \"http://{MCP_HOST}:{port}/mcp\"\n\
         [mcp.servers.loopback]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
         [mcp.servers.asked]\nurl = \"http://asked.test:{port}/mcp\"\n"
    )));
    let hosts = format!("{},asked.test=127.0.0.1", test_hosts());
    let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &[("POD_TEST_HOSTS", &hosts)]);
    let init = pod.initialize(false);
    for (name, says) in [
        (
            "denied",
            format!("network `{MCP_HOST}:{port}` is denied: default_action"),
        ),
        ("loopback", "a loopback address".to_string()),
        (
            "asked",
            format!("network `asked.test:{port}` is not allowed without approval"),
        ),
    ] {
        let state = server_state(&init, name);
        assert_eq!(state["state"], "failed", "{state}");
        let error = state["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("not started") && error.contains(&says),
            "{name}: {error}"
        );
        assert!(!common::has_tool(&init, &format!("mcp__{name}__echo")));
    }
    let denied = server_state(&init, "denied")["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        denied.contains(&format!(
            "tool = \"network\" pattern = \"{MCP_HOST}:{port}\" action = \"allow\""
        )),
        "{denied}"
    );
    // A call of such a server's tool says why it cannot run.
    let turn = pod.call(
        "run",
        text(&call_line("mcp__denied__echo", json!({"message": "x"}))),
    );
    let result = &results(&pod, &turn)[0];
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result["content"]
            .as_str()
            .is_some_and(|c| c.contains("MCP server denied is not running")),
        "{result}"
    );
    // initialize answered after every server started or failed: nothing reached the listener.
    assert_eq!(recorder.heads(), Vec::<String>::new());
}

#[test]
fn headers_reach_a_url_server_from_the_users_configuration_only() {
    let recorder = Recorder::start();
    let port = recorder.port;
    let config = tempfile::tempdir().expect("tempdir");
    let user = config.path().join("pod.toml");
    std::fs::write(
        &user,
        format!(
            "[permissions]\ndefault_action = \"ask\"\n\
             [[permissions.rule]]\ntool = \"network\"\npattern = \"{MCP_HOST}:{port}\"\naction = \"allow\"\n\
             [mcp.servers.mine]\nurl = \"http://{MCP_HOST}:{port}/mcp\"\n\
             headers = {{ Authorization = \"Bearer user-t0ken\" }}\n"
        ),
    )
    .expect("write user configuration");
    let ws = Workspace::with_manifest(&manifest(""));
    let mut pod = PodProcess::spawn_env(
        &ws,
        Framing::Lines,
        &[],
        &[
            ("POD_TEST_HOSTS", &test_hosts()),
            ("POD_CONFIG", &user.display().to_string()),
        ],
    );
    let init = pod.initialize(false);
    // The listener is no MCP server: the handshake fails, after its request arrived.
    assert_eq!(server_state(&init, "mine")["state"], "failed", "{init}");
    let heads = recorder.heads();
    let first = heads
        .first()
        .map(|h| h.to_ascii_lowercase())
        .unwrap_or_default();
    assert!(first.starts_with("post /mcp http/1.1"), "{heads:?}");
    assert!(
        first.contains("authorization: bearer user-t0ken"),
        "{heads:?}"
    );
    assert!(
        first.contains(&format!("host: {MCP_HOST}:{port}")),
        "{heads:?}"
    );
    // Nor does the token show in what initialize reports.
    assert!(!init.to_string().contains("user-t0ken"), "{init}");

    // The same `headers` in a project's pod.toml is a load error naming file:line.
    let project = Workspace::with_manifest(&manifest(&format!(
        "[mcp.servers.theirs]\nurl = \"http://{MCP_HOST}:{port}/mcp\"\n\
         headers = {{ Authorization = \"Bearer user-t0ken\" }}\n"
    )));
    let out = Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("check")
        .arg(project.manifest())
        .env("POD_CONFIG", "")
        .env("POD_MANAGED_DIR", common::NO_MANAGED_DIR)
        .env("XDG_STATE_HOME", project.state_home())
        .output()
        .expect("run pod check");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    let place = format!(
        "{}:7:1: mcp.servers.theirs.headers:",
        project.manifest().display()
    );
    assert!(said.contains(&place), "{said}");
    assert!(said.contains("only your own configuration"), "{said}");
}

#[test]
fn an_untrusted_projects_url_server_never_gets_a_connection() {
    let recorder = Recorder::start();
    let port = recorder.port;
    let ws = Workspace::with_manifest(&manifest(&format!(
        "[permissions]\ndefault_action = \"ask\"\n\
         [[permissions.rule]]\ntool = \"network\"\npattern = \"{MCP_HOST}:{port}\"\naction = \"allow\"\n\
         [mcp.servers.theirs]\nurl = \"http://{MCP_HOST}:{port}/mcp\"\n"
    )));
    let mut pod = PodProcess::spawn_untrusted(
        &ws,
        Framing::Lines,
        &[],
        &[("POD_TEST_HOSTS", &test_hosts())],
    );
    let init = pod.initialize(false);
    let servers = init["mcpServers"].as_array().cloned().unwrap_or_default();
    assert!(servers.iter().all(|s| s["name"] != "theirs"), "{servers:?}");
    let ignored: Vec<&str> = init["workspaceTrust"]["ignored"]
        .as_array()
        .map(|a| a.iter().filter_map(|i| i["what"].as_str()).collect())
        .unwrap_or_default();
    let expected = format!("connects to MCP server \"theirs\": http://{MCP_HOST}:{port}/mcp");
    assert!(ignored.contains(&expected.as_str()), "{ignored:?}");
    assert_eq!(recorder.heads(), Vec::<String>::new());
}
