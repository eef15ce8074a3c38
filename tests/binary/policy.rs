//! Policy for teams through the real binary (docs/manifest.md, "Layers"; docs/audit.md): a
//! managed folder (`POD_MANAGED_DIR`) whose rules nothing below can weaken, whose locks refuse
//! a lower layer's rules, network allows and MCP servers, and which is itself refused when
//! others could write it; rules whose examples are checked at load; and the decision log's hash chain. Each
//! security test asserts the side effect is absent (the file is still there, the marker is not).

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

/// A managed folder holding `pod.toml` with `text`, mode 0644 and owned by root (the tests run
/// as root), as an administrator installs it.
fn managed(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("managed dir");
    let file = dir.path().join("pod.toml");
    std::fs::write(&file, text).expect("managed file");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

/// The user's configuration file, with `text`.
fn user_config(ws: &Workspace, text: &str) -> PathBuf {
    let path = ws.state_home().join("user.toml");
    std::fs::write(&path, text).expect("user config");
    path
}

fn spawn(ws: &Workspace, managed: &Path, user: Option<&Path>) -> PodProcess {
    let managed = managed.display().to_string();
    let user = user.map(|u| u.display().to_string()).unwrap_or_default();
    PodProcess::spawn_env(
        ws,
        Framing::Lines,
        &[],
        &[("POD_MANAGED_DIR", &managed), ("POD_CONFIG", &user)],
    )
}

/// `pod ARGS` in the workspace, with `managed` as the managed folder and no user configuration.
fn pod(ws: &Workspace, managed: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(args)
        .env("POD_MANAGED_DIR", managed)
        .env("POD_CONFIG", "")
        .env("XDG_STATE_HOME", ws.state_home())
        .current_dir(ws.dir.path())
        .output()
        .expect("run pod")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run(pod: &mut PodProcess, text: &str) -> Value {
    pod.call("run", json!({"input": [{"type": "text", "text": text}]}))
}

fn bash(command: &str) -> String {
    format!("@bash {}", json!({ "command": command }))
}

/// The `toolResult` events so far, in order.
fn results(pod: &PodProcess) -> Vec<Value> {
    pod.events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .cloned()
        .collect()
}

const PROJECT_ALLOWS_RM: &str = "[model]\nprovider = \"offline\"\n[permissions]\n\
     default_action = \"allow\"\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"rm *\"\n\
     action = \"allow\"\n";

#[test]
fn a_managed_deny_holds_although_the_user_and_the_project_allow() {
    let ws = Workspace::with_manifest(PROJECT_ALLOWS_RM);
    std::fs::write(ws.path("victim"), "keep me").expect("victim");
    let user = user_config(
        &ws,
        "[permissions]\ndefault_action = \"allow\"\n[[permissions.rule]]\ntool = \"bash\"\n\
         pattern = \"rm *\"\naction = \"allow\"\n",
    );
    let admin = managed(
        "[permissions]\ndefault_action = \"ask\"\n[[permissions.rule]]\ntool = \"bash\"\n\
         pattern = \"rm *\"\naction = \"deny\"\nmessage = \"The administrator forbids rm.\"\n",
    );
    let mut pod = spawn(&ws, admin.path(), Some(&user));
    let init = pod.initialize(true);
    let file = admin.path().join("pod.toml").display().to_string();
    assert_eq!(init["configuration"]["managed"], json!([file]), "{init}");
    run(&mut pod, &bash("rm victim"));
    let results = results(&pod);
    assert_eq!(results[0]["deniedBy"], "permission", "{results:?}");
    assert!(
        results[0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("administrator")),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("victim")).expect("the managed deny did not hold"),
        "keep me"
    );
    // The managed default is a floor: what no rule matches asks, though both lower layers
    // allow it; the person says no and the file is not made.
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": bash("touch made")}]}),
    );
    let request = pod.wait_event_type("permissionRequest");
    assert_eq!(request["input"]["command"], "touch made", "{request}");
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "deny"}),
    );
    pod.response(&json!(id));
    assert!(
        !ws.path("made").exists(),
        "the managed default did not hold"
    );
}

#[test]
fn under_allow_managed_rules_only_a_lower_allow_is_ignored_and_named() {
    let ws = Workspace::with_manifest(
        "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"ask\"\n\
         [[permissions.rule]]\ntool = \"bash\"\npattern = \"touch *\"\naction = \"allow\"\n",
    );
    let admin = managed(
        "[permissions]\ndefault_action = \"ask\"\n[[permissions.rule]]\ntool = \"bash\"\n\
         pattern = \"echo *\"\naction = \"allow\"\n[managed]\nallow_managed_rules_only = true\n",
    );
    // The control: without the lock the project's allow runs the call.
    let open = managed("[permissions]\ndefault_action = \"ask\"\n");
    let mut control = spawn(&ws, open.path(), None);
    control.initialize(false);
    run(&mut control, &bash("touch control"));
    assert!(ws.path("control").exists(), "the control did not run");

    let mut pod = spawn(&ws, admin.path(), None);
    let init = pod.initialize(false);
    let overrides = &init["configuration"]["managedOverrides"];
    let manifest = ws.manifest().display().to_string();
    assert!(
        overrides.as_array().is_some_and(|o| o.iter().any(|o| {
            o["where"] == format!("{manifest}:5")
                && o["what"]
                    .as_str()
                    .is_some_and(|w| w.contains("allow_managed_rules_only"))
        })),
        "{init}"
    );
    run(&mut pod, &bash("touch made"));
    let results = results(&pod);
    assert_eq!(results[0]["isError"], true, "{results:?}");
    assert!(!ws.path("made").exists(), "a lower allow applied");
    // The managed allow does.
    run(&mut pod, &bash("echo hi > /dev/null"));
}

/// An MCP server that writes `MCP_STARTED` in its folder when it starts.
const MARKER_SERVER: &str = r#"import json, os, sys
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "MCP_STARTED"), "w").write("x")
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method = m.get("method")
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "helper", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": []}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;

#[test]
fn a_project_mcp_server_the_managed_layer_does_not_allow_never_starts() {
    let ws = Workspace::with_manifest(
        "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"ask\"\n\
         [mcp.servers.helper]\ncommand = \"python3\"\nargs = [\"server.py\"]\n",
    );
    std::fs::write(ws.path("server.py"), MARKER_SERVER).expect("server");
    // The control: allowed by name and command, it starts (the marker appears).
    let allowing = managed(
        "[managed]\nallowed_mcp_servers = [{ name = \"helper\", command = \"python3 server.py\" }]\n",
    );
    let mut control = spawn(&ws, allowing.path(), None);
    let init = control.initialize(false);
    assert_eq!(init["mcpServers"][0]["name"], "helper", "{init}");
    common::wait_until("the allowed server's marker", || {
        ws.path("MCP_STARTED").exists()
    });
    control.close_stdin();
    control.wait_exit(*common::WAIT);
    std::fs::remove_file(ws.path("MCP_STARTED")).expect("remove marker");

    for lock in [
        "[managed]\nallowed_mcp_servers = [{ name = \"other\" }]\n",
        "[managed]\nallowed_mcp_servers = [{ name = \"helper\", command = \"node *\" }]\n",
        "[managed]\ndenied_mcp_servers = [{ command = \"python3 *\" }]\n",
    ] {
        let admin = managed(lock);
        let mut pod = spawn(&ws, admin.path(), None);
        let init = pod.initialize(false);
        assert!(
            init["mcpServers"].as_array().is_none_or(|s| s.is_empty()),
            "{lock}: {init}"
        );
        let overrides = init["configuration"]["managedOverrides"].to_string();
        assert!(
            overrides.contains("MCP server \\\"helper\\\" refused"),
            "{init}"
        );
        assert!(
            overrides.contains(&format!("{}:5", ws.manifest().display())),
            "{init}"
        );
        // A turn goes by: had the server started, its marker would be there by now.
        run(&mut pod, "hello");
        pod.close_stdin();
        pod.wait_exit(*common::WAIT);
        assert!(
            !ws.path("MCP_STARTED").exists(),
            "{lock}: the server started"
        );
    }
}

#[test]
fn a_managed_file_others_can_write_is_refused_with_a_clear_error() {
    let ws = Workspace::with_manifest("[model]\nprovider = \"offline\"\n");
    let admin = managed("[permissions]\ndefault_action = \"deny\"\n");
    let file = admin.path().join("pod.toml");
    let ok = pod(&ws, admin.path(), &["check"]);
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(text(&ok).contains("managed: "), "{}", text(&ok));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o646)).expect("chmod");
    let refused = pod(&ws, admin.path(), &["check"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let said = text(&refused);
    assert!(
        said.contains(&format!(
            "{}: refused as managed configuration",
            file.display()
        )) && said.contains("lets anyone write it"),
        "{said}"
    );
    // `pod serve` refuses to start on it too: a floor that anyone could lower is none.
    let serve = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["serve", "--manifest"])
        .arg(ws.manifest())
        .env("POD_MANAGED_DIR", admin.path())
        .env("POD_CONFIG", "")
        .env("XDG_STATE_HOME", ws.state_home())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run pod serve");
    assert!(!serve.status.success(), "{}", text(&serve));
    assert!(text(&serve).contains("refused as managed configuration"));
    // And one root does not own.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::os::unix::fs::chown(&file, Some(65534), None).expect("chown");
    let refused = pod(&ws, admin.path(), &["check"]);
    assert!(
        text(&refused).contains("it is owned by uid 65534, not root"),
        "{}",
        text(&refused)
    );
    std::os::unix::fs::chown(&file, Some(0), None).expect("chown");
    // So is a drop-in folder its group may write.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let drop_in = admin.path().join("pod.d");
    std::fs::create_dir(&drop_in).expect("pod.d");
    std::fs::set_permissions(&drop_in, std::fs::Permissions::from_mode(0o775)).expect("chmod");
    let refused = pod(&ws, admin.path(), &["check"]);
    assert!(
        text(&refused).contains("lets its group write it"),
        "{}",
        text(&refused)
    );
}

#[test]
fn managed_drop_ins_are_read_in_name_order_and_modes_are_a_ceiling() {
    let ws = Workspace::with_manifest(
        "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"ask\"\n",
    );
    let admin =
        managed("[managed]\nallowed_modes = [\"default\", \"read-only\", \"unattended\"]\n");
    let drop_in = admin.path().join("pod.d");
    std::fs::create_dir(&drop_in).expect("pod.d");
    std::fs::set_permissions(&drop_in, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for (name, text) in [
        (
            "20-modes.toml",
            "[managed]\nallowed_modes = [\"default\", \"read-only\"]\n",
        ),
        ("10-rules.toml", "[permissions]\ndefault_action = \"ask\"\n"),
    ] {
        let f = drop_in.join(name);
        std::fs::write(&f, text).expect("drop-in");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let mut pod = spawn(&ws, admin.path(), None);
    let init = pod.initialize(true);
    let files: Vec<String> = ["pod.toml", "pod.d/10-rules.toml", "pod.d/20-modes.toml"]
        .iter()
        .map(|f| admin.path().join(f).display().to_string())
        .collect();
    assert_eq!(init["configuration"]["managed"], json!(files), "{init}");
    assert_eq!(
        init["permissions"]["modes"],
        json!(["default", "read-only"]),
        "{init}"
    );
    let refused = pod.request("setMode", json!({"mode": "accept-edits"}));
    assert!(refused.get("error").is_some(), "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("allowed_modes")),
        "{refused}"
    );
    // A write that accept-edits would let through still asks (no approver: denied).
    let history = pod.call("history", json!({}));
    assert!(
        common::items_of(&history, "modeChanged").is_empty(),
        "{history}"
    );
}

#[test]
fn a_failing_example_stops_the_load_with_file_line_and_the_example() {
    let manifest = "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"ask\"\n\
         [[permissions.rule]]\ntool = \"bash\"\npattern = \"rm -rf *\"\naction = \"deny\"\n\
         examples = { match = [\"rm -rf build\"], not_match = [\"rmdir x\"] }\n\n\
         [[permissions.rule]]\ntool = \"bash\"\npattern = \"git *\"\naction = \"allow\"\n\
         examples = { match = [\"git status\", \"git push --force\"], not_match = [\"gitk\"] }\n";
    let ws = Workspace::with_manifest(manifest);
    ws.trust();
    let none = tempfile::tempdir().expect("empty managed dir");
    let ok = pod(&ws, none.path(), &["check", "--examples"]);
    let said = text(&ok);
    assert!(ok.status.success(), "{said}");
    assert!(
        said.contains("examples: 5 checked at load, each decided as its rule says; 0 differ"),
        "{said}"
    );
    assert!(said.contains("not_match  bash \"gitk\""), "{said}");

    // An earlier deny shadows the allow: its example is no longer decided by it.
    let shadowed = manifest.replace("pattern = \"rm -rf *\"", "pattern = \"git push *\"");
    std::fs::write(
        ws.manifest(),
        shadowed
            .replace("\"rm -rf build\"", "\"git push x\"")
            .replace("\"rmdir x\"", "\"git pull\""),
    )
    .expect("rewrite");
    let bad = pod(&ws, none.path(), &["check"]);
    let said = text(&bad);
    assert_eq!(bad.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "pod.toml:15:12: permissions.rule[2].examples: match example \"git push --force\" \
             is decided deny by the rule at ./pod.toml:5, not allow by this rule"
        ),
        "{said}"
    );
    // `pod serve` does not start on it either.
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let status = pod.wait_exit(*common::WAIT);
    assert!(!status.success());
}

/// `pod ARGS` with the user's configuration `user` and the workspace's state folder.
fn pod_with_user(ws: &Workspace, user: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(args)
        .env("POD_MANAGED_DIR", common::NO_MANAGED_DIR)
        .env("POD_CONFIG", user)
        .env("XDG_STATE_HOME", ws.state_home())
        .current_dir(ws.dir.path())
        .output()
        .expect("run pod")
}

#[test]
fn the_decision_log_chains_every_decision_and_pod_why_explains_them() {
    let ws = Workspace::with_manifest(&common::manifest_text(1));
    std::fs::write(ws.path("victim"), "keep me").expect("victim");
    let log = ws.state_home().join("audit/decisions.jsonl");
    let user = user_config(&ws, &format!("[audit]\npath = \"{}\"\n", log.display()));
    let mut pod = spawn(&ws, Path::new(common::NO_MANAGED_DIR), Some(&user));
    let init = pod.initialize(true);
    let session = init["session"]["id"]
        .as_str()
        .expect("session id")
        .to_string();

    // Denied by a rule.
    run(&mut pod, &bash("rm victim"));
    // Approved by the person.
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": bash("touch approved")}]}),
    );
    let request = pod.wait_event_type("permissionRequest");
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "allow_once"}),
    );
    pod.response(&json!(id));
    // Timed out (ask_timeout_secs = 1): nobody answers.
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": bash("touch timed_out")}]}),
    );
    pod.wait_event_type("permissionRequest");
    pod.response(&json!(id));
    pod.close_stdin();
    pod.wait_exit(*common::WAIT);
    assert_eq!(common::read(&ws.path("victim")), "keep me");
    assert!(ws.path("approved").exists());
    assert!(!ws.path("timed_out").exists());
    let calls: Vec<String> = results(&pod)
        .iter()
        .map(|r| r["callId"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(calls.len(), 3, "{calls:?}");

    // One line per decision, each naming who decided.
    let written = common::read(&log);
    let lines: Vec<Value> = written
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 3, "{written}");
    assert_eq!(lines[0]["by"], "rule", "{written}");
    assert_eq!(lines[0]["decision"], "deny");
    assert_eq!(
        lines[0]["subjects"][0]["by"],
        format!("{}:15", ws.manifest().display()),
        "{written}"
    );
    assert_eq!(lines[1]["by"], "client");
    assert_eq!(lines[1]["client"], "test 0", "{written}");
    assert_eq!(lines[1]["decision"], "allow");
    assert_eq!(lines[2]["by"], "timeout");
    assert!(lines.iter().all(|l| l["session"] == session.as_str()));

    // pod why explains each past decision.
    let why = |call: &str| text_of(pod_with_user(&ws, &user, &["why", &session, call]));
    let denied = why(&calls[0]);
    assert!(
        denied.contains("decision: deny, settled by a rule")
            && denied.contains(&format!("at {}:15", ws.manifest().display()))
            && denied.contains("result: not run (denied by permission)")
            && denied.contains("decision log"),
        "{denied}"
    );
    let approved = why(&calls[1]);
    assert!(
        approved.contains("decision: allow, settled by a person, through the client")
            && approved.contains("via test 0")
            && approved.contains("result: ran"),
        "{approved}"
    );
    let timed_out = why(&calls[2]);
    assert!(
        timed_out.contains("nobody answered the ask in time"),
        "{timed_out}"
    );
    // pod sessions --denied lists the two denied calls.
    let denied_list = text_of(pod_with_user(&ws, &user, &["sessions", "--denied"]));
    assert!(
        denied_list.contains("2 denied calls in 1 sessions"),
        "{denied_list}"
    );
    assert!(denied_list.contains(&calls[0]) && denied_list.contains(&calls[2]));

    // The chain holds, then shows an edited line and a removed one.
    let verify = || pod_with_user(&ws, &user, &["audit", "verify"]);
    let ok = verify();
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(
        text(&ok).contains("3 lines, the chain holds"),
        "{}",
        text(&ok)
    );
    std::fs::write(
        &log,
        written.replacen("\"decision\":\"deny\"", "\"decision\":\"allow\"", 1),
    )
    .expect("edit");
    let edited = verify();
    assert_eq!(edited.status.code(), Some(1), "{}", text(&edited));
    assert!(
        text(&edited).contains(&format!("{}:1: its hash does not match", log.display())),
        "{}",
        text(&edited)
    );
    let without_second: String = written
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    std::fs::write(&log, without_second).expect("remove");
    let removed = verify();
    assert_eq!(removed.status.code(), Some(1), "{}", text(&removed));
    assert!(
        text(&removed).contains("a line was removed"),
        "{}",
        text(&removed)
    );
}

fn text_of(out: Output) -> String {
    text(&out)
}

#[test]
fn under_allow_managed_hooks_only_a_project_hook_never_runs() {
    let ws = Workspace::with_manifest(
        "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"allow\"\n\
         [[hooks.pre_tool_call]]\ncommand = [\"sh\", \"hook.sh\"]\n",
    );
    std::fs::write(
        ws.path("hook.sh"),
        "touch HOOK_RAN\necho '{\"action\":\"continue\"}'\n",
    )
    .expect("hook");
    // The control: without the lock the project's hook runs.
    let open = managed("[permissions]\ndefault_action = \"allow\"\n");
    let mut control = spawn(&ws, open.path(), None);
    control.initialize(false);
    run(&mut control, &bash("echo one"));
    assert!(
        ws.path("HOOK_RAN").exists(),
        "the control's hook did not run"
    );
    std::fs::remove_file(ws.path("HOOK_RAN")).expect("remove marker");

    let admin = managed("[managed]\nallow_managed_hooks_only = true\n");
    let mut pod = spawn(&ws, admin.path(), None);
    let init = pod.initialize(false);
    let overrides = init["configuration"]["managedOverrides"].to_string();
    assert!(
        overrides.contains("allow_managed_hooks_only")
            && overrides.contains(&format!("{}:5", ws.manifest().display())),
        "{init}"
    );
    run(&mut pod, &bash("echo two"));
    let results = results(&pod);
    assert_eq!(results[0]["isError"], false, "{results:?}");
    assert!(!ws.path("HOOK_RAN").exists(), "a refused hook ran");
}

#[test]
fn under_allow_managed_rules_only_a_project_grant_does_not_apply() {
    let ws = Workspace::with_manifest(
        "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"ask\"\n",
    );
    let user = user_config(&ws, "[model]\nprovider = \"offline\"\n");
    // An "always in this project" answer's grant, where pod writes it: beside the user's file.
    let key = pod::manifest::workspace_key(&ws.dir.path().canonicalize().expect("canonical"));
    let grants = ws.state_home().join("projects").join(format!("{key}.toml"));
    std::fs::create_dir_all(grants.parent().expect("folder")).expect("projects");
    std::fs::write(
        &grants,
        "[permissions]\ndefault_action = \"ask\"\n[[permissions.rule]]\ntool = \"bash\"\n\
         pattern = \"touch *\"\naction = \"allow\"\n",
    )
    .expect("grants");
    // The control: the grant runs the call.
    let open = managed("[permissions]\ndefault_action = \"ask\"\n");
    let mut control = spawn(&ws, open.path(), Some(&user));
    control.initialize(false);
    run(&mut control, &bash("touch control"));
    assert!(
        ws.path("control").exists(),
        "the grant did not apply in the control"
    );

    let admin = managed(
        "[permissions]\ndefault_action = \"ask\"\n[managed]\nallow_managed_rules_only = true\n",
    );
    let mut pod = spawn(&ws, admin.path(), Some(&user));
    let init = pod.initialize(false);
    let overrides = init["configuration"]["managedOverrides"].to_string();
    assert!(
        overrides.contains(&format!("{}:3", grants.display()))
            && overrides.contains("allow_managed_rules_only"),
        "{init}"
    );
    run(&mut pod, &bash("touch made"));
    assert!(
        !ws.path("made").exists(),
        "a project grant applied under rules_only"
    );
    // Nor is "always in this project" offered, where its grant could never apply.
    for (dir, offered) in [(open.path(), true), (admin.path(), false)] {
        let mut asking = spawn(&ws, dir, Some(&user));
        asking.initialize(true);
        let id = asking.start(
            "run",
            json!({"input": [{"type": "text", "text": bash("cargo test parser")}]}),
        );
        let request = asking.wait_event_type("permissionRequest");
        let options = request["options"].as_array().cloned().unwrap_or_default();
        assert_eq!(
            options.contains(&json!("allow_project")),
            offered,
            "{request}"
        );
        asking.call(
            "permissionReply",
            json!({"requestId": request["requestId"], "decision": "deny"}),
        );
        asking.response(&json!(id));
    }
}

#[test]
fn a_managed_scope_narrows_where_file_tools_write() {
    let ws = Workspace::with_manifest(
        "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"allow\"\n",
    );
    std::fs::create_dir(ws.path("src")).expect("src");
    let admin = managed("[scope]\nwritable = [\"src\"]\n");
    let mut pod = spawn(&ws, admin.path(), None);
    pod.initialize(false);
    let write = |path: &str| format!("@file_write {}", json!({"path": path, "content": "x"}));
    run(
        &mut pod,
        &format!("{}\n{}", write("src/inside.txt"), write("top.txt")),
    );
    let results = results(&pod);
    assert_eq!(results[0]["isError"], false, "{results:?}");
    assert_eq!(results[1]["deniedBy"], "scope", "{results:?}");
    assert!(ws.path("src/inside.txt").exists());
    assert!(
        !ws.path("top.txt").exists(),
        "a write outside the managed scope ran"
    );
}

/// The user's configuration under `allowed_domains_only`: each network allow and ask (and a
/// rule for every tool, as far as hosts go) is refused and named; its network deny still
/// applies. Lines: 4, 8, 12 and 16 hold the rules.
const USER_OPENS_THE_NETWORK: &str = "[model]\nprovider = \"offline\"\n[permissions]\n\
     default_action = \"allow\"\n[[permissions.rule]]\ntool = \"network\"\n\
     pattern = \"evil.test:*\"\naction = \"allow\"\n[[permissions.rule]]\ntool = \"network\"\n\
     pattern = \"127.0.0.1:*\"\naction = \"allow\"\n[[permissions.rule]]\ntool = \"*\"\n\
     pattern = \"*\"\naction = \"allow\"\n[[permissions.rule]]\ntool = \"network\"\n\
     pattern = \"other.test:*\"\naction = \"ask\"\n[[permissions.rule]]\ntool = \"network\"\n\
     pattern = \"blocked.test:*\"\naction = \"deny\"\n";

/// The managed file: two hosts allowed, one asked about, the lock on or off.
fn domains_managed(locked: bool) -> tempfile::TempDir {
    managed(&format!(
        "[permissions]\ndefault_action = \"ask\"\n[[permissions.rule]]\ntool = \"network\"\n\
         pattern = \"allowed.test:*\"\naction = \"allow\"\n[[permissions.rule]]\n\
         tool = \"network\"\npattern = \"blocked.test:*\"\naction = \"allow\"\n\
         [[permissions.rule]]\ntool = \"network\"\npattern = \"asked.test:*\"\naction = \"ask\"\n\
         [managed]\nallowed_domains_only = {locked}\n"
    ))
}

const DOMAINS_PROJECT: &str = "[model]\nprovider = \"offline\"\n[tools]\n\
     enabled = [\"web_fetch\", \"bash\"]\n[sandbox]\nnetwork = \"proxy\"\n";

#[test]
fn under_allowed_domains_only_pod_check_and_config_name_each_refused_network_rule() {
    let ws = Workspace::with_manifest(DOMAINS_PROJECT);
    let user = user_config(&ws, USER_OPENS_THE_NETWORK);
    let admin = domains_managed(true);
    let user_file = user.display().to_string();
    for command in ["check", "config"] {
        let out = Command::new(env!("CARGO_BIN_EXE_pod"))
            .arg(command)
            .env("POD_MANAGED_DIR", admin.path())
            .env("POD_CONFIG", &user)
            .env("XDG_STATE_HOME", ws.state_home())
            .current_dir(ws.dir.path())
            .output()
            .expect("run pod");
        let said = text(&out);
        assert!(out.status.success(), "pod {command}: {said}");
        assert!(
            said.lines()
                .any(|l| l.contains("locks:") && l.contains("allowed_domains_only")),
            "pod {command}: {said}"
        );
        for (line, what) in [
            (
                5,
                "rule allow network \"evil.test:*\" refused: allowed_domains_only",
            ),
            (
                9,
                "rule allow network \"127.0.0.1:*\" refused: allowed_domains_only",
            ),
            (
                13,
                "rule allow * \"*\" refused for network hosts: allowed_domains_only",
            ),
            (
                17,
                "rule ask network \"other.test:*\" refused: allowed_domains_only",
            ),
        ] {
            assert!(
                said.contains(&format!("{user_file}:{line}: {what}")),
                "pod {command}: {user_file}:{line}: {what}\n{said}"
            );
        }
        // A deny is no widening: not refused.
        assert!(!said.contains("blocked.test:*\" refused"), "{said}");
    }
    // Without the lock, nothing of that is refused.
    let open = domains_managed(false);
    let out = Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("check")
        .env("POD_MANAGED_DIR", open.path())
        .env("POD_CONFIG", &user)
        .env("XDG_STATE_HOME", ws.state_home())
        .current_dir(ws.dir.path())
        .output()
        .expect("run pod");
    assert!(
        !text(&out).contains("allowed_domains_only"),
        "{}",
        text(&out)
    );
}

#[test]
fn under_allowed_domains_only_only_managed_rules_open_a_host() {
    use crate::network::Server;
    let server = Server::start();
    let port = server.port;
    let hosts = "allowed.test=127.0.0.1,evil.test=127.0.0.1,other.test=127.0.0.1,\
                 asked.test=127.0.0.1,blocked.test=127.0.0.1,nowhere.test=127.0.0.1";
    let ws = Workspace::with_manifest(DOMAINS_PROJECT);
    let user = user_config(&ws, USER_OPENS_THE_NETWORK);
    let user_file = user.display().to_string();
    let start = |dir: &Path| {
        PodProcess::spawn_env(
            &ws,
            Framing::Lines,
            &[],
            &[
                ("POD_MANAGED_DIR", &dir.display().to_string()),
                ("POD_CONFIG", &user_file),
                ("POD_TEST_HOSTS", hosts),
            ],
        )
    };
    let fetch = |host: &str, path: &str| {
        format!(
            "@web_fetch {}",
            json!({ "url": format!("http://{host}:{port}/{path}") })
        )
    };
    // The control: without the lock the user's allow reaches the server.
    let open = domains_managed(false);
    let mut control = start(open.path());
    control.initialize(false);
    run(&mut control, &fetch("evil.test", "control"));
    let reached = results(&control);
    assert_eq!(reached[0]["isError"], false, "{reached:?}");
    assert_eq!(server.seen(), vec!["GET /control HTTP/1.1".to_string()]);

    let admin = domains_managed(true);
    let mut pod = start(admin.path());
    let init = pod.initialize(true);
    assert_eq!(
        init["sandbox"]["network"], "proxy",
        "this test needs a kernel with Landlock ABI 4+ (Linux 6.7): {}",
        init["sandbox"]
    );
    let overrides = init["configuration"]["managedOverrides"].to_string();
    assert!(
        overrides.contains(&format!("{user_file}:5"))
            && overrides
                .contains("rule allow network \\\"evil.test:*\\\" refused: allowed_domains_only"),
        "{init}"
    );
    let lines = [
        fetch("evil.test", "evil"),
        fetch("127.0.0.1", "ip-literal"),
        fetch("other.test", "lower-ask"),
        fetch("nowhere.test", "no-rule"),
        fetch("blocked.test", "lower-deny"),
        fetch("allowed.test", "allowed"),
        fetch("asked.test", "asked"),
        // The proxy a bash call's processes go through decides by the same locked rules.
        format!("!curl -sS -m 20 http://evil.test:{port}/proxy-evil"),
        format!("!curl -sS -m 20 -p http://127.0.0.1:{port}/proxy-ip"),
        format!("!curl -sS -m 20 http://allowed.test:{port}/proxy-allowed"),
    ];
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": lines.join("\n")}]}),
    );
    // The managed ask is the one prompt: the hosts only a lower layer names never reach one.
    let request = pod.wait_event_type("permissionRequest");
    assert!(
        request["subjects"].as_array().is_some_and(|s| s
            .iter()
            .any(|s| s["subject"] == format!("asked.test:{port}"))),
        "{request}"
    );
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "allow_once"}),
    );
    let done = pod.response(&json!(id));
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let prompts = pod
        .events
        .iter()
        .filter(|e| e["type"] == "permissionRequest")
        .count();
    assert_eq!(prompts, 1, "{:?}", pod.events);
    let results = results(&pod);
    assert_eq!(results.len(), lines.len(), "{results:#?}");
    let content = |i: usize| results[i]["content"].as_str().unwrap_or_default();
    for (i, by_lock) in [(0, true), (1, true), (2, true), (3, true), (4, false)] {
        assert_eq!(results[i]["isError"], true, "{}", content(i));
        assert_eq!(results[i]["deniedBy"], "permission", "{}", content(i));
        // The lock denied it, not the address check (127.0.0.1) or a fail-closed ask.
        assert_eq!(
            content(i).contains("allowed_domains_only"),
            by_lock,
            "{}",
            content(i)
        );
    }
    for (i, subject) in [
        (7, format!("evil.test:{port}")),
        (8, format!("127.0.0.1:{port}")),
    ] {
        assert!(
            content(i).contains(&format!("{subject}: denied"))
                && content(i).contains("allowed_domains_only"),
            "{}",
            content(i)
        );
    }
    for i in [5, 6, 9] {
        assert_eq!(results[i]["isError"], false, "{}", content(i));
        assert!(
            content(i).contains("hello-from-the-server"),
            "{}",
            content(i)
        );
    }
    // The server saw the control and the managed hosts, nothing else.
    let mut seen = server.seen();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            "GET /allowed HTTP/1.1".to_string(),
            "GET /asked HTTP/1.1".to_string(),
            "GET /control HTTP/1.1".to_string(),
            "GET /proxy-allowed HTTP/1.1".to_string(),
        ]
    );
}

/// With no `[permissions]` in any layer the lock still holds for the network: every host is
/// denied, while the other tools stay as the layer off leaves them.
#[test]
fn under_allowed_domains_only_without_any_rules_every_host_is_denied() {
    let ws = Workspace::with_manifest("[model]\nprovider = \"offline\"\n");
    let admin = managed("[managed]\nallowed_domains_only = true\n");
    let explain = |dir: &Path, tool: &str, input: Value| {
        let out = Command::new(env!("CARGO_BIN_EXE_pod"))
            .args(["explain", "--trust", "--json", "--tool", tool, "--input"])
            .arg(input.to_string())
            .env("POD_MANAGED_DIR", dir)
            .env("POD_CONFIG", "")
            .env("XDG_STATE_HOME", ws.state_home())
            .current_dir(ws.dir.path())
            .output()
            .expect("run pod explain");
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice::<Value>(&out.stdout).expect("explain JSON")["decision"].clone()
    };
    let host = json!({"host": "example.org", "port": 443});
    // The control: the layer off allows every host.
    let open = managed("[managed]\nallow_managed_hooks_only = true\n");
    assert_eq!(explain(open.path(), "network", host.clone()), "allow");
    assert_eq!(explain(admin.path(), "network", host), "deny");
    assert_eq!(
        explain(
            admin.path(),
            "network",
            json!({"host": "93.184.216.34", "port": 8080})
        ),
        "deny"
    );
    assert_eq!(
        explain(admin.path(), "bash", json!({"command": "ls"})),
        "allow"
    );
    // And pod check still warns that the other calls run unasked (in the trusted folder:
    // pod's built-in defaults hold in an untrusted one).
    ws.trust();
    let check = pod(&ws, admin.path(), &["check"]);
    assert!(
        text(&check).contains("WARNING: the permission layer is off but for the network"),
        "{}",
        text(&check)
    );
}

/// A managed ask about a host stays an ask: the `auto` mode, which settles asks the kernel
/// bounds, does not settle it (web_fetch connects from pod's own process), so it reaches the
/// person, who says no, and the server sees nothing.
#[test]
fn under_allowed_domains_only_a_managed_ask_reaches_a_person_even_in_auto() {
    use crate::network::Server;
    let server = Server::start();
    let port = server.port;
    let ws = Workspace::with_manifest(
        "[model]\nprovider = \"offline\"\n[tools]\nenabled = [\"web_fetch\"]\n\
         [sandbox]\nnetwork = \"deny\"\n",
    );
    let admin = domains_managed(true);
    let mut pod = PodProcess::spawn_env(
        &ws,
        Framing::Lines,
        &[],
        &[
            ("POD_MANAGED_DIR", &admin.path().display().to_string()),
            ("POD_CONFIG", ""),
            ("POD_TEST_HOSTS", "asked.test=127.0.0.1"),
        ],
    );
    let init = pod.initialize(true);
    let offered = init["permissions"]["modes"]
        .as_array()
        .is_some_and(|m| m.contains(&json!("auto")));
    if !offered {
        eprintln!("policy: auto is not offered here (the kernel cannot bound calls): {init}");
        return;
    }
    let reply = pod.request("setMode", json!({"mode": "auto"}));
    assert!(reply.get("error").is_none(), "{reply}");
    let fetch = format!(
        "@web_fetch {}",
        json!({ "url": format!("http://asked.test:{port}/auto") })
    );
    let id = pod.start("run", json!({"input": [{"type": "text", "text": fetch}]}));
    let request = match pod.event_or_response("permissionRequest", &json!(id)) {
        Ok(request) => request,
        Err(done) => panic!(
            "the ask was settled without a person: {done} {:?}",
            server.seen()
        ),
    };
    assert!(
        request["subjects"].as_array().is_some_and(|s| s
            .iter()
            .any(|s| s["subject"] == format!("asked.test:{port}"))),
        "{request}"
    );
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "deny"}),
    );
    pod.response(&json!(id));
    assert!(server.seen().is_empty(), "{:?}", server.seen());
}
