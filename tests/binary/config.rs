//! Layered configuration and the errors a newcomer meets, through the real binary: the user's
//! file under the project's `pod.toml` (a project never lifts a restriction the user set),
//! built-in defaults where neither exists, `pod check` refusing what `pod serve` refuses, a pod
//! that cannot open saying so with its own code and exit status.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{Framing, PodProcess};
use serde_json::{json, Value};

/// A project folder, a user configuration folder and a state folder, all temporary.
struct Setup {
    project: tempfile::TempDir,
    user: tempfile::TempDir,
    state: tempfile::TempDir,
}

impl Setup {
    fn new(project: Option<&str>, user: Option<&str>) -> Setup {
        let setup = Setup {
            project: tempfile::tempdir().unwrap(),
            user: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        };
        if let Some(text) = project {
            std::fs::write(setup.project.path().join("pod.toml"), text).unwrap();
        }
        if let Some(text) = user {
            std::fs::write(setup.user_file(), text).unwrap();
        }
        setup
    }

    fn user_file(&self) -> PathBuf {
        self.user.path().join("pod.toml")
    }

    /// The project's folder trusted by its user (`pod trust`): its configuration in force as
    /// written, which is what the layering tests are about.
    fn trusted(self) -> Setup {
        let out = self.pod(&["trust"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        self
    }

    /// `pod <args>` run in the project folder with this user configuration.
    fn pod(&self, args: &[&str]) -> Output {
        self.pod_env(args, &[])
    }

    fn pod_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_pod"))
            .args(args)
            .current_dir(self.project.path())
            .env("POD_CONFIG", self.user_file())
            .env("XDG_STATE_HOME", self.state.path())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `pod serve` (no `--manifest`) in the project folder, answering `initialize`.
    fn serve(&self, lines: &[Value]) -> (Vec<Value>, String, Option<i32>) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
            .arg("serve")
            .current_dir(self.project.path())
            .env("POD_CONFIG", self.user_file())
            .env("XDG_STATE_HOME", self.state.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = String::new();
        for line in lines {
            input.push_str(&line.to_string());
            input.push('\n');
        }
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = wait_output(child);
        let messages = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (
            messages,
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code(),
        )
    }

    fn explain(&self, tool: &str, input: Value) -> Value {
        let out = self.pod(&[
            "explain",
            "--tool",
            tool,
            "--input",
            &input.to_string(),
            "--json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn wait_output(child: std::process::Child) -> Output {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("pod exits")
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn initialize() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}})
}

fn decision(explained: &Value) -> &str {
    explained["decision"].as_str().unwrap_or("")
}

#[test]
fn with_no_file_at_all_pod_runs_on_safe_defaults_and_says_so() {
    let setup = Setup::new(None, None);
    std::fs::write(setup.project.path().join("notes.txt"), "x").unwrap();
    let (messages, stderr, code) = setup.serve(&[initialize()]);
    assert_eq!(code, Some(0));
    let config = &messages[0]["result"]["configuration"];
    assert_eq!(config["builtInDefaults"], true, "{config}");
    assert_eq!(config["files"], json!([]));
    assert_eq!(config["provider"], "offline");
    assert!(stderr.contains("built-in defaults"), "{stderr}");
    assert_eq!(messages[0]["result"]["permissions"]["defaultAction"], "ask");
    // Reads inside the workspace are allowed; outside, and anything else, asks.
    assert_eq!(
        decision(&setup.explain("read", json!({"path": "notes.txt"}))),
        "allow"
    );
    assert_eq!(
        decision(&setup.explain("grep", json!({"pattern": "x"}))),
        "allow"
    );
    assert_eq!(
        decision(&setup.explain("read", json!({"path": "/etc/hostname"}))),
        "ask"
    );
    assert_eq!(
        decision(&setup.explain("bash", json!({"command": "ls"}))),
        "ask"
    );
    assert_eq!(
        decision(&setup.explain("file_write", json!({"path": "a", "content": ""}))),
        "ask"
    );
}

#[test]
fn a_project_cannot_allow_what_the_user_denied() {
    let user = "[permissions]\ndefault_action = \"ask\"\n\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"rm *\"\naction = \"deny\"\nmessage = \"the user never deletes\"\n";
    let project = "[permissions]\ndefault_action = \"allow\"\n\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"*\"\naction = \"allow\"\n";
    let setup = Setup::new(Some(project), Some(user)).trusted();
    let explained = setup.explain("bash", json!({"command": "rm victim.txt"}));
    assert_eq!(decision(&explained), "deny", "{explained}");
    let rule = &explained["subjects"][0]["rule"];
    assert_eq!(
        rule["file"],
        setup.user_file().display().to_string(),
        "{rule}"
    );
    assert_eq!(rule["line"], 4);
    // What the user did not deny stays the project's to allow.
    assert_eq!(
        decision(&setup.explain("bash", json!({"command": "ls"}))),
        "allow"
    );
    let text = text(
        &setup
            .pod(&[
                "explain",
                "--tool",
                "bash",
                "--input",
                r#"{"command":"rm victim.txt"}"#,
            ])
            .stdout,
    );
    assert!(
        text.contains(&format!("at {}:4", setup.user_file().display())),
        "{text}"
    );

    // Through a real turn: the file is still there.
    let ws = common::Workspace::with_manifest(project);
    std::fs::write(ws.path("victim.txt"), "keep").unwrap();
    let user_file = setup.user_file();
    let user_env = user_file.to_str().unwrap();
    let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &[("POD_CONFIG", user_env)]);
    pod.initialize(false);
    let result = pod.call(
        "run",
        json!({"input": [{"type": "text", "text": "!rm victim.txt"}]}),
    );
    assert_eq!(result["stopReason"], "end_turn");
    let denied = pod.wait_event_type("toolResult");
    assert_eq!(denied["deniedBy"], "permission", "{denied}");
    assert!(
        denied["content"]
            .as_str()
            .unwrap_or("")
            .contains("the user never deletes"),
        "{denied}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path("victim.txt")).unwrap(),
        "keep"
    );
}

#[test]
fn the_stricter_default_wins() {
    let user = "[permissions]\ndefault_action = \"deny\"\n";
    let project = "[permissions]\ndefault_action = \"allow\"\n";
    let setup = Setup::new(Some(project), Some(user));
    assert_eq!(
        decision(&setup.explain("bash", json!({"command": "ls"}))),
        "deny"
    );
}

#[test]
fn the_model_is_the_users_unless_the_project_sets_one() {
    let user = "[model]\nprovider = \"openai\"\nmodel = \"the-users-model\"\napi_key_env = \"POD_TEST_CONFIG_KEY\"\nbase_url = \"http://127.0.0.1:9\"\n";
    let setup = Setup::new(Some("[pod]\nname = \"p\"\n"), Some(user));
    let config = text(
        &setup
            .pod_env(&["config"], &[("POD_TEST_CONFIG_KEY", "k")])
            .stdout,
    );
    assert!(config.contains("provider = \"openai\""), "{config}");
    assert!(config.contains("model = \"the-users-model\""), "{config}");
    assert!(
        config.contains(&format!("[model] # from {}", setup.user_file().display())),
        "{config}"
    );
    let setup = Setup::new(Some("[model]\nprovider = \"offline\"\n"), Some(user));
    let config = text(&setup.pod(&["config"]).stdout);
    assert!(config.contains("provider = \"offline\""), "{config}");
    assert!(!config.contains("the-users-model"), "{config}");
}

#[test]
fn restrictions_add_up_tools_and_sandbox() {
    let user = "[tools]\nenabled = [\"read\", \"grep\"]\n\n[sandbox]\nmode = \"landlock\"\nnetwork = \"deny\"\n";
    let project = "[tools]\nenabled = [\"bash\", \"read\"]\n\n[sandbox]\nmode = \"off\"\n";
    let setup = Setup::new(Some(project), Some(user));
    let (messages, _, _) = setup.serve(&[initialize()]);
    let result = &messages[0]["result"];
    let tools: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["read"], "a tool the user disabled stays disabled");
    // The stricter of the user's `landlock` and the default the project falls back to.
    assert_eq!(result["sandbox"]["kind"], "namespaces", "{result}");
    let files = result["configuration"]["files"].clone();
    assert_eq!(files.as_array().map(Vec::len), Some(2), "{files}");
}

#[test]
fn the_user_configuration_cannot_name_a_workspace() {
    let setup = Setup::new(None, Some("[pod]\nworkspace = \"/\"\n"));
    let out = setup.pod(&["check"]);
    assert!(!out.status.success());
    let said = text(&out.stdout);
    assert!(
        said.contains(&format!("{}:2:1", setup.user_file().display())),
        "{said}"
    );
    assert!(
        said.contains("only a project's pod.toml names the workspace"),
        "{said}"
    );
}

#[test]
fn a_pod_that_cannot_open_says_why_with_its_own_code_and_exits_1() {
    let project = "[model]\nprovider = \"anthropic\"\nmodel = \"m\"\napi_key_env = \"POD_TEST_UNSET_KEY_VARIABLE\"\n";
    let setup = Setup::new(Some(project), None).trusted();
    let (messages, stderr, code) = setup.serve(&[initialize()]);
    assert_eq!(code, Some(1), "{stderr}");
    let error = &messages[0]["error"];
    assert_eq!(error["code"], -32007, "{error}");
    let message = error["message"].as_str().unwrap_or("");
    assert!(message.contains("POD_TEST_UNSET_KEY_VARIABLE"), "{message}");
    assert!(stderr.contains("POD_TEST_UNSET_KEY_VARIABLE"), "{stderr}");
}

#[test]
fn check_refuses_what_serve_refuses() {
    // A network provider without a model name: serve cannot open, so check is an error.
    let setup = Setup::new(
        Some("[model]\nprovider = \"anthropic\"\napi_key_env = \"HOME\"\n"),
        None,
    );
    let out = setup.pod(&["check"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("model.model is required"),
        "{}",
        text(&out.stdout)
    );
    // A key variable that is not set here: a warning (serve may run with it set).
    let setup = Setup::new(
        Some("[model]\nprovider = \"anthropic\"\nmodel = \"m\"\napi_key_env = \"POD_TEST_UNSET_KEY_VARIABLE\"\n"),
        None,
    );
    let out = setup.pod(&["check"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("warning: model configuration"), "{said}");
    assert!(said.contains("POD_TEST_UNSET_KEY_VARIABLE"), "{said}");
    // A hook whose script does not exist would deny every call.
    let setup = Setup::new(
        Some("[[hooks.pre_tool_call]]\ncommand = [\"sh\", \"hooks/missing.sh\"]\n"),
        None,
    );
    let out = setup.pod(&["check"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("hooks/missing.sh does not exist"), "{said}");
    // A hook script directly in the workspace: what it imports from beside itself is the
    // model's; one in a folder of its own is not warned about (the folder is protected).
    let setup = Setup::new(
        Some(
            "[[hooks.pre_tool_call]]\ncommand = [\"python3\", \"guard.py\"]\n\
             [[hooks.pre_tool_call]]\ncommand = [\"python3\", \"hooks/ok.py\"]\n",
        ),
        None,
    );
    std::fs::write(setup.project.path().join("guard.py"), "").unwrap();
    std::fs::create_dir(setup.project.path().join("hooks")).unwrap();
    std::fs::write(setup.project.path().join("hooks/ok.py"), "").unwrap();
    let said = text(&setup.pod(&["check"]).stdout);
    assert!(
        said.contains("hooks.pre_tool_call: guard.py lies in")
            && said.contains("which calls can write"),
        "{said}"
    );
    assert!(!said.contains("hooks/ok.py lies in"), "{said}");
}

#[test]
fn manifest_mistakes_get_a_sentence_that_says_what_to_write() {
    let single = "[permissions]\ndefault_action = \"ask\"\n[permissions.rule]\ntool = \"bash\"\naction = \"deny\"\n";
    let setup = Setup::new(Some(single), None);
    let said = text(&setup.pod(&["check"]).stdout);
    assert!(
        said.contains(
            "pod.toml:3:1: [permissions.rule] is a list: write each entry as [[permissions.rule]]"
        ),
        "{said}"
    );
    let missing = "[permissions]\ndefault_action = \"ask\"\n[[permissions.rule]]\ntool = \"bash\"\naction = \"deny\"\n[[permissions.rule]]\npattern = \"x\"\naction = \"deny\"\n";
    let setup = Setup::new(Some(missing), None);
    let said = text(&setup.pod(&["check"]).stdout);
    assert!(
        said.contains("permissions.rule[2]: missing field `tool`"),
        "{said}"
    );
    // A rule naming no tool: a warning in check, and the same line on serve's stderr.
    let unknown = "[permissions]\ndefault_action = \"ask\"\n[[permissions.rule]]\ntool = \"shell\"\naction = \"deny\"\n";
    let setup = Setup::new(Some(unknown), None);
    let said = text(&setup.pod(&["check"]).stdout);
    assert!(
        said.contains("tool \"shell\" matches no tool pod has"),
        "{said}"
    );
    let (_, stderr, _) = setup.serve(&[initialize()]);
    assert!(
        stderr.contains("tool \"shell\" matches no tool pod has"),
        "{stderr}"
    );
}

#[test]
fn explain_names_what_is_wrong_with_its_input() {
    let setup = Setup::new(Some("[permissions]\ndefault_action = \"deny\"\n"), None);
    let out = setup.pod(&["explain", "--tool", "shell", "--input", "{}"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no tool \"shell\""),
        "{}",
        text(&out.stderr)
    );
    let out = setup.pod(&["explain", "--tool", "bash", "--input", "git status"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(r#"'{"command":"git status"}'"#),
        "{}",
        text(&out.stderr)
    );
    // A malformed input is denied by the layer, not by the default that happens to agree.
    let out = setup.pod(&["explain", "--tool", "bash", "--input", r#"{"cmd":"ls"}"#]);
    let said = text(&out.stdout);
    assert!(said.contains("the input has no string `command`"), "{said}");
    assert!(!said.contains("default_action"), "{said}");
}

#[test]
fn schema_check_outside_the_repository_says_the_files_are_missing() {
    let setup = Setup::new(None, None);
    let out = setup.pod(&["schema", "--check"]);
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stderr);
    assert!(said.contains("no generated schema"), "{said}");
    assert!(!said.contains("stale"), "{said}");
}

#[test]
fn a_write_to_the_user_configuration_is_protected() {
    let setup = Setup::new(
        Some("[permissions]\ndefault_action = \"allow\"\n"),
        Some("[pod]\nname = \"u\"\n"),
    );
    let user_file = setup.user_file();
    let explained = setup.explain(
        "file_write",
        json!({"path": user_file.display().to_string(), "content": "[permissions]\ndefault_action = \"allow\"\n"}),
    );
    assert_eq!(decision(&explained), "ask", "{explained}");
}

#[test]
fn mcp_servers_of_both_files_start_and_the_users_server_default_holds() {
    let user = "[mcp.servers.github]\ncommand = \"user-gh\"\n\n[mcp.servers.shared]\ncommand = \"user-shared\"\ndefault_action = { destructive = \"deny\" }\n";
    let project = "[permissions]\ndefault_action = \"allow\"\n\n[mcp.servers.Shared]\ncommand = \"project-shared\"\ndefault_action = { destructive = \"allow\" }\n";
    let setup = Setup::new(Some(project), Some(user)).trusted();
    let config = text(&setup.pod(&["config"]).stdout);
    assert!(config.contains("[mcp.servers.github] # "), "{config}");
    assert!(config.contains("command = \"project-shared\""), "{config}");
    assert!(!config.contains("user-shared"), "{config}");
    let explain = |tool: &str, annotations: &str| -> Value {
        let out = setup.pod(&[
            "explain",
            "--tool",
            tool,
            "--input",
            "{}",
            "--annotations",
            annotations,
            "--json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // The project's server, but the user's deny for its destructive tools still holds.
    let destructive = explain("mcp__Shared__delete", "{\"destructiveHint\":true}");
    assert_eq!(decision(&destructive), "deny", "{destructive}");
    let read_only = explain("mcp__Shared__get", "{\"readOnlyHint\":true}");
    assert_eq!(decision(&read_only), "allow", "{read_only}");
    let users = explain("mcp__github__delete", "{\"destructiveHint\":true}");
    assert_eq!(decision(&users), "allow", "{users}");
}

#[test]
fn in_the_home_folder_the_defaults_allow_no_read() {
    let setup = Setup::new(None, None);
    std::fs::write(setup.project.path().join("notes.txt"), "n").unwrap();
    let project = setup.project.path().canonicalize().unwrap();
    let explain = |home: &std::path::Path| -> Value {
        let out = setup.pod_env(
            &[
                "explain",
                "--tool",
                "read",
                "--input",
                "{\"path\":\"notes.txt\"}",
                "--json",
            ],
            &[("HOME", home.to_str().unwrap())],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // A project folder: reads inside it are allowed.
    assert_eq!(decision(&explain(setup.user.path())), "allow");
    // The same folder as the home folder, or a parent of it: every read asks.
    assert_eq!(decision(&explain(&project)), "ask");
    assert_eq!(decision(&explain(&project.join("me"))), "ask");
}

/// `pod init` writes, for each stack, a manifest that `pod check` passes without a warning,
/// named for the folder and trusted; it never replaces an existing one unless told to.
#[test]
fn pod_init_writes_a_manifest_pod_check_passes_for_every_stack() {
    for stack in ["rust", "node", "python", "generic"] {
        let setup = Setup::new(None, None);
        let out = setup.pod(&["init", "--stack", stack]);
        assert!(out.status.success(), "{stack}: {}", text(&out.stderr));
        let written = setup.project.path().join("pod.toml");
        let manifest = std::fs::read_to_string(&written).unwrap();
        let folder = setup.project.path().file_name().unwrap().to_string_lossy();
        assert!(
            manifest.contains(&format!("name = \"{folder}\"")),
            "{manifest}"
        );
        let check = setup.pod(&["check"]);
        let said = format!("{}{}", text(&check.stdout), text(&check.stderr));
        assert!(check.status.success(), "{stack}: {said}");
        assert!(!said.contains("warning"), "{stack}: {said}");
        assert!(said.contains("is trusted"), "{stack}: {said}");
        // A second init leaves the file as it is.
        std::fs::write(&written, "# mine\n").unwrap();
        let again = setup.pod(&["init", "--stack", stack]);
        assert!(!again.status.success());
        assert!(text(&again.stderr).contains("already exists"));
        assert_eq!(std::fs::read_to_string(&written).unwrap(), "# mine\n");
        let forced = setup.pod(&["init", "--stack", stack, "--force"]);
        assert!(forced.status.success(), "{}", text(&forced.stderr));
        assert_eq!(std::fs::read_to_string(&written).unwrap(), manifest);
    }
    // Without --stack, the folder's files choose.
    let setup = Setup::new(None, None);
    std::fs::write(setup.project.path().join("package.json"), "{}").unwrap();
    let out = setup.pod(&["init"]);
    assert!(
        text(&out.stdout).contains("(node stack)"),
        "{}",
        text(&out.stdout)
    );
    let manifest = std::fs::read_to_string(setup.project.path().join("pod.toml")).unwrap();
    assert!(manifest.contains("npm test *"));
}

/// A `base_url` without a scheme is refused by `pod check` (and so by `pod serve`), naming the
/// line and the fix.
#[test]
fn a_base_url_without_a_scheme_is_an_error_that_names_the_fix() {
    let setup = Setup::new(
        Some("[model]\nprovider = \"anthropic\"\nmodel = \"m\"\nbase_url = \"api.example.com\"\n"),
        None,
    );
    let out = setup.pod(&["check"]);
    assert!(!out.status.success());
    let said = text(&out.stderr) + &text(&out.stdout);
    assert!(said.contains("pod.toml:4:"), "{said}");
    assert!(said.contains("\"https://api.example.com\""), "{said}");
}

/// Completions and the man page come from the command line's definition: every subcommand is
/// in them, and the bash script is valid bash.
#[test]
fn completions_and_the_man_page_name_every_subcommand() {
    let setup = Setup::new(None, None);
    let subcommands = [
        "serve", "acp", "chat", "check", "trust", "grants", "init", "explain",
    ];
    for shell in ["bash", "zsh", "fish"] {
        let out = setup.pod(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        for sub in subcommands {
            assert!(script.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    let bash = setup.pod(&["completions", "bash"]);
    let script = setup.project.path().join("pod.bash");
    std::fs::write(&script, &bash.stdout).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{}", text(&syntax.stderr));
    let man = setup.pod(&["man"]);
    assert!(man.status.success());
    let page = text(&man.stdout);
    assert!(page.contains(".TH pod 1"), "{page}");
    for sub in subcommands {
        assert!(page.contains(sub), "the man page lacks {sub}");
    }
}
