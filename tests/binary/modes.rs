//! Modes (docs/permissions.md, "Modes") where the real binary matters: a project may start a
//! session in a stricter mode only, the user's configuration (`POD_CONFIG`) in `accept-edits`;
//! "always in this project" writes a user-owned rule that the next process, `pod explain` and
//! `pod grants` read; `auto` is offered only where the sandbox bounds every call. The modes'
//! protocol round trips are in `tests/engine/modes.rs`, over an in-memory connection.

use crate::common;

use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

const RULES: &str = "[model]\nprovider = \"offline\"\n[permissions]\ndefault_action = \"ask\"\n\
     [[permissions.rule]]\ntool = \"file_write\"\npattern = \"*.env\"\naction = \"deny\"\n";

fn run(pod: &mut PodProcess, text: &str) -> Value {
    pod.call("run", json!({"input": [{"type": "text", "text": text}]}))
}

#[test]
fn a_project_starts_a_session_in_a_stricter_mode_only() {
    for (mode, expected) in [
        ("unattended", "unattended"),
        ("read-only", "read-only"),
        ("accept-edits", "default"),
    ] {
        let ws = Workspace::with_manifest(&RULES.replace(
            "default_action = \"ask\"\n",
            &format!("default_action = \"ask\"\nmode = \"{mode}\"\n"),
        ));
        let mut pod = PodProcess::spawn(&ws, Framing::Lines);
        let init = pod.initialize(false);
        assert_eq!(init["permissions"]["mode"], expected, "{mode}: {init}");
    }
    // The user's configuration may start sessions in accept-edits.
    let ws = Workspace::with_manifest(RULES);
    let user = ws.state_home().join("user.toml");
    std::fs::write(
        &user,
        "[permissions]\ndefault_action = \"ask\"\nmode = \"accept-edits\"\n",
    )
    .expect("user");
    let user = user.display().to_string();
    let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &[("POD_CONFIG", &user)]);
    let init = pod.initialize(false);
    assert_eq!(init["permissions"]["mode"], "accept-edits", "{init}");
}

#[test]
fn always_in_this_project_writes_a_user_owned_rule_the_next_session_reads() {
    let ws = Workspace::with_manifest(RULES);
    let user = ws.state_home().join("config/pod.toml");
    let user_text = user.display().to_string();
    let env = [("POD_CONFIG", user_text.as_str())];
    let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &env);
    pod.initialize(true);
    let id = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": "!ls -a"}]}),
    );
    let request = pod.wait_event_type("permissionRequest");
    assert!(request["options"]
        .as_array()
        .is_some_and(|o| o.contains(&json!("allow_project"))));
    pod.call(
        "permissionReply",
        json!({"requestId": request["requestId"], "decision": "allow_project"}),
    );
    pod.response(&json!(id));
    drop(pod);
    // The rule is in a file beside the user's configuration, not in the project.
    let grants: Vec<_> = std::fs::read_dir(ws.state_home().join("config/projects"))
        .expect("projects folder")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .collect();
    assert_eq!(grants.len(), 1);
    let text = std::fs::read_to_string(grants[0].path()).expect("grants");
    assert!(text.contains("pattern = \"ls *\""), "{text}");
    assert!(!common::read(&ws.manifest()).contains("ls *"));
    // A new session (not resumed) runs `ls` unasked, citing that file.
    let mut next = PodProcess::spawn_env(&ws, Framing::Lines, &[], &env);
    next.initialize(true);
    run(&mut next, "!ls -l");
    assert!(
        !next.events.iter().any(|e| e["type"] == "permissionRequest"),
        "the project grant was not read"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pod"))
        .args([
            "explain",
            "--tool",
            "bash",
            "--input",
            r#"{"command":"ls -R"}"#,
        ])
        .arg(ws.manifest())
        .env("POD_CONFIG", &user_text)
        .env("XDG_STATE_HOME", ws.state_home())
        .output()
        .expect("explain");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("allow by rule") && shown.contains("projects/"),
        "{shown}"
    );
    // `pod grants --revoke` removes it: the next session asks again.
    let pod_cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_pod"))
            .args(args)
            .arg(ws.path("."))
            .env("POD_CONFIG", &user_text)
            .env("XDG_STATE_HOME", ws.state_home())
            .output()
            .expect("pod grants")
    };
    let listed = pod_cli(&["grants"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("bash \"ls *\" allow"));
    let revoked = pod_cli(&["grants", "--revoke", "ls *"]);
    assert!(revoked.status.success(), "{revoked:?}");
    let mut after = PodProcess::spawn_env(&ws, Framing::Lines, &[], &env);
    after.initialize(true);
    after.start(
        "run",
        json!({"input": [{"type": "text", "text": "!ls -l"}]}),
    );
    after.wait_event_type("permissionRequest");
}

/// Where calls run in namespaces with the exec gate on and the network denied, the kernel
/// bounds every call: `auto` is offered and can be set. Elsewhere the refusal names what is
/// missing (the test then checks that).
#[test]
fn auto_is_offered_where_namespaces_the_gate_and_no_network_hold() {
    let ws = Workspace::with_manifest(&format!("{RULES}\n[sandbox]\nnetwork = \"deny\"\n"));
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    let init = pod.initialize(true);
    let s = &init["sandbox"];
    let bounded = s["kind"] == "namespaces"
        && s["enforced"] == true
        && s["execGate"] == true
        && s["network"] == "deny";
    let offered = init["permissions"]["modes"]
        .as_array()
        .is_some_and(|m| m.contains(&json!("auto")));
    assert_eq!(offered, bounded, "{init}");
    let reply = pod.request("setMode", json!({"mode": "auto"}));
    if bounded {
        assert!(reply.get("error").is_none(), "{reply}");
    } else {
        eprintln!("modes: auto refused here: {reply}");
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
    }
}
