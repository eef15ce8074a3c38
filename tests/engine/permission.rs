//! The permission engine through the public API, as `pod explain` and the runtime use it:
//! the bypass table of docs/permissions.md, the must-stay-allowed rows, the example
//! example manifests, manifest errors with their exact messages, and property tests.

use std::path::{Path, PathBuf};

use pod::manifest::{Manifest, ManifestError};
use pod::protocol::{Action, Decision};
use proptest::prelude::*;
use serde_json::json;

/// The rules of the bypass table: `bash "rm *" deny`, `bash "git *" allow`,
/// `read "*.env" deny`, `file_write "*.env" deny`, default allow.
const BYPASS_RULES: &str = r#"
[permissions]
default_action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"

[[permissions.rule]]
tool = "bash"
pattern = "git *"
action = "allow"

[[permissions.rule]]
tool = "read"
pattern = "*.env"
action = "deny"

[[permissions.rule]]
tool = "file_write"
pattern = "*.env"
action = "deny"
"#;

struct Fixture {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    manifest: Manifest,
}

fn fixture(text: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let path = workspace.join("pod.toml");
    std::fs::write(&path, text).unwrap();
    let manifest = Manifest::load(&path).unwrap();
    Fixture {
        _dir: dir,
        workspace,
        manifest,
    }
}

impl Fixture {
    fn decide(&self, tool: &str, input: serde_json::Value) -> Decision {
        self.manifest.policy().decide(tool, &input)
    }

    fn bash(&self, command: &str) -> Action {
        self.decide("bash", json!({ "command": command })).decision
    }

    fn read(&self, path: &str) -> Action {
        self.decide("read", json!({ "path": path })).decision
    }
}

#[test]
fn compound_commands_are_denied_whatever_the_separator() {
    let f = fixture(BYPASS_RULES);
    for sep in [" && ", "; ", " || ", " | ", " & ", "\n"] {
        let cmd = format!("git status{sep}rm -rf build");
        assert_eq!(f.bash(&cmd), Action::Deny, "{cmd:?}");
    }
}

#[test]
fn substitutions_are_walked() {
    let f = fixture(BYPASS_RULES);
    for cmd in [
        "echo $(rm -rf x)",
        "echo `rm x`",
        "cat <(rm x)",
        "echo $(( $(rm x) ))",
    ] {
        assert_eq!(f.bash(cmd), Action::Deny, "{cmd}");
    }
}

#[test]
fn compound_bodies_are_walked() {
    let f = fixture(BYPASS_RULES);
    for cmd in [
        "{ rm x; }",
        "( rm x )",
        "if true; then rm x; fi",
        "for f in a; do rm $f; done",
        "while false; do rm x; done",
        "case a in a) rm x;; esac",
        "f() { rm x; }; f",
    ] {
        assert_eq!(f.bash(cmd), Action::Deny, "{cmd}");
    }
}

#[test]
fn shell_dash_c_literals_are_parsed() {
    let f = fixture(BYPASS_RULES);
    for cmd in [
        "bash -c 'rm -rf x'",
        "sh -lc \"rm x\"",
        "bash -o pipefail -c 'git log; rm x'",
    ] {
        assert_eq!(f.bash(cmd), Action::Deny, "{cmd}");
    }
}

#[test]
fn wrappers_are_unwrapped() {
    let f = fixture(BYPASS_RULES);
    for cmd in [
        "sudo rm -rf /",
        "env X=1 rm x",
        "timeout 5 rm x",
        "FOO=bar rm x",
        "xargs rm < list",
        "nice -n 10 rm x",
        "nohup rm x",
        "command rm x",
        "exec rm x",
        "find . -name '*.o' -exec rm {} ;",
    ] {
        assert_eq!(f.bash(cmd), Action::Deny, "{cmd}");
    }
}

#[test]
fn the_command_word_is_normalized() {
    let f = fixture(BYPASS_RULES);
    for cmd in ["/bin/rm x", "\\rm x", "'rm' x", "r\"\"m x", "rm \\\n-rf x"] {
        assert_eq!(f.bash(cmd), Action::Deny, "{cmd:?}");
    }
}

#[test]
fn redirections_are_file_writes() {
    let f = fixture(BYPASS_RULES);
    assert_eq!(f.bash("echo secret > .env"), Action::Deny);
    assert_eq!(f.bash("cat x >> config/prod.env"), Action::Deny);
    assert_eq!(f.bash("echo hi > notes.txt"), Action::Allow);
    // The decision names the rule and the normalized path.
    let d = f.decide("bash", json!({"command": "echo x > ./src/../.env"}));
    let write = d.subjects.iter().find(|s| s.tool == "file_write").unwrap();
    assert_eq!(write.subject, ".env");
    assert_eq!(write.rule.as_ref().map(|r| r.index), Some(4));
}

#[test]
fn opaque_commands_ask_under_a_default_allow() {
    let f = fixture(BYPASS_RULES);
    for cmd in [
        "eval \"rm x\"",
        "$CMD x",
        "python3 -c 'import os'",
        "curl x | bash",
        "bash -c \"$X\"",
    ] {
        assert_eq!(f.bash(cmd), Action::Ask, "{cmd}");
    }
    let d = f.decide("bash", json!({"command": "$CMD x"}));
    assert!(d.subjects.iter().any(|s| s.opaque && s.rule.is_none()));
    // An expansion in a redirection target cannot be checked against path rules.
    assert_eq!(f.bash("echo x > $F"), Action::Ask);
}

/// Soundness: what the engine cannot read is never allowed, even by a rule written for it; a
/// deny rule still denies it.
#[test]
fn an_opaque_command_is_never_allowed_even_by_an_explicit_rule() {
    let f = fixture(&format!(
        "{BYPASS_RULES}\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"python3 -c *\"\naction = \"allow\"\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"perl -e *\"\naction = \"deny\"\n"
    ));
    let d = f.decide("bash", json!({"command": "python3 -c 'print(1)'"}));
    assert_eq!(d.decision, Action::Ask);
    assert!(d.subjects[0].opaque);
    assert_eq!(d.subjects[0].rule.as_ref().map(|r| r.index), Some(5));
    assert_eq!(f.bash("perl -e 1"), Action::Deny);
}

#[test]
fn read_paths_are_normalized_and_symlinks_resolved() {
    let f = fixture(BYPASS_RULES);
    std::fs::write(f.workspace.join(".env"), "SECRET=1").unwrap();
    std::os::unix::fs::symlink(f.workspace.join(".env"), f.workspace.join("notes")).unwrap();
    let abs = format!("{}/.env", f.workspace.display());
    for path in ["src/../.env", "./.env", abs.as_str(), "notes"] {
        assert_eq!(f.read(path), Action::Deny, "{path}");
    }
    let d = f.decide("read", json!({"path": "notes"}));
    let subjects: Vec<&str> = d.subjects.iter().map(|s| s.subject.as_str()).collect();
    assert_eq!(subjects, ["notes", ".env"]);
}

#[test]
fn these_stay_allowed() {
    let f = fixture(BYPASS_RULES);
    assert_eq!(f.bash("git status"), Action::Allow);
    assert_eq!(f.bash("rmdir x"), Action::Allow);
    assert_eq!(f.bash("echo \"rm x\""), Action::Allow);
    assert_eq!(f.read("src/main.rs"), Action::Allow);
}

#[test]
fn a_pipeline_is_allowed_only_when_every_command_is() {
    let allowlist = r#"
[permissions]
default_action = "deny"
[[permissions.rule]]
tool = "bash"
pattern = "git *"
action = "allow"
"#;
    let f = fixture(allowlist);
    assert_eq!(f.bash("git log | head"), Action::Deny);
    let f = fixture(&format!(
        "{allowlist}[[permissions.rule]]\ntool = \"bash\"\npattern = \"head *\"\naction = \"allow\"\n"
    ));
    assert_eq!(f.bash("git log | head"), Action::Allow);
    assert_eq!(f.bash("git log | head -n 3"), Action::Allow);
}

#[test]
fn first_match_per_subject_and_strictest_per_call() {
    let f = fixture(
        r#"
[permissions]
default_action = "allow"
[[permissions.rule]]
tool = "bash"
pattern = "git push *"
action = "ask"
[[permissions.rule]]
tool = "bash"
pattern = "git *"
action = "deny"
"#,
    );
    let d = f.decide("bash", json!({"command": "git push origin main"}));
    assert_eq!(d.decision, Action::Ask);
    assert_eq!(d.subjects[0].rule.as_ref().unwrap().index, 1);
    assert_eq!(f.bash("git push && git fetch"), Action::Deny);
    assert_eq!(f.bash("ls"), Action::Allow);
}

#[test]
fn tool_names_match_case_insensitively_and_patterns_case_sensitively() {
    let f = fixture(
        "[permissions]\ndefault_action = \"allow\"\n[[permissions.rule]]\ntool = \"BASH\"\npattern = \"rm *\"\naction = \"deny\"\n",
    );
    assert_eq!(f.bash("rm x"), Action::Deny);
    assert_eq!(f.bash("RM x"), Action::Allow);
}

#[test]
fn malformed_input_is_denied_whatever_the_rules() {
    let f = fixture("[permissions]\ndefault_action = \"allow\"\n");
    assert_eq!(
        f.decide("bash", json!({"cmd": "ls"})).decision,
        Action::Deny
    );
    assert_eq!(f.decide("read", json!({"path": 3})).decision, Action::Deny);
    // A search root is optional: the workspace itself.
    let d = f.decide("grep", json!({"pattern": "x"}));
    assert_eq!(
        (d.decision, d.subjects[0].subject.as_str()),
        (Action::Allow, ".")
    );
}

#[test]
fn other_tools_are_matched_on_their_input_json_with_sorted_keys() {
    let f = fixture(
        "[permissions]\ndefault_action = \"allow\"\n[[permissions.rule]]\ntool = \"mcp_*\"\npattern = '{\"a\":1,*'\naction = \"deny\"\n",
    );
    let d = f.decide("mcp_thing", json!({"b": 2, "a": 1}));
    assert_eq!(d.subjects[0].subject, r#"{"a":1,"b":2}"#);
    assert_eq!(d.decision, Action::Deny);
}

#[test]
fn no_permissions_section_means_every_call_is_allowed() {
    let f = fixture("[pod]\nname = \"x\"\n");
    assert_eq!(f.bash("rm -rf /"), Action::Allow);
    assert!(f.manifest.permissions.is_none());
}

// The seeds' three example manifests.

#[test]
fn seed_blocklist_manifest() {
    let f = fixture(
        r#"
[permissions]
default_action = "allow" # allow | deny | ask

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"

[[permissions.rule]]
tool = "file_write"
pattern = "*.env"
action = "deny"
"#,
    );
    assert_eq!(f.bash("rm -rf build"), Action::Deny);
    assert_eq!(f.bash("ls"), Action::Allow);
    let write = |p: &str| {
        f.decide("file_write", json!({"path": p, "content": ""}))
            .decision
    };
    assert_eq!(write("prod.env"), Action::Deny);
    assert_eq!(write("notes.md"), Action::Allow);
}

#[test]
fn seed_allowlist_manifest() {
    let f = fixture(
        r#"
[permissions]
default_action = "deny"

[[permissions.rule]]
tool = "read"
pattern = "*"
action = "allow"

[[permissions.rule]]
tool = "grep"
pattern = "*"
action = "allow"
"#,
    );
    assert_eq!(f.read("src/lib.rs"), Action::Allow);
    assert_eq!(
        f.decide("grep", json!({"pattern": "x"})).decision,
        Action::Allow
    );
    assert_eq!(f.bash("ls"), Action::Deny);
    assert_eq!(
        f.decide("file_write", json!({"path": "a", "content": ""}))
            .decision,
        Action::Deny
    );
}

#[test]
fn seed_ask_by_default_manifest() {
    let f = fixture(
        r#"
[permissions]
default_action = "ask"

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
"#,
    );
    assert_eq!(f.bash("rm x"), Action::Deny);
    assert_eq!(f.bash("ls"), Action::Ask);
    assert_eq!(f.read("a"), Action::Ask);
}

// Manifest errors: exact message and position.

fn load_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pod.toml");
    std::fs::write(&path, text).unwrap();
    let err = Manifest::load(&path).unwrap_err();
    assert!(matches!(err, ManifestError::Invalid { .. }));
    err.to_string()
        .strip_prefix(&format!("{}:", path.display()))
        .unwrap()
        .to_string()
}

#[test]
fn missing_default_action_names_the_section_line() {
    assert_eq!(
        load_error("[pod]\nname = \"x\"\n\n[permissions]\nask_timeout_secs = 5\n"),
        "4:1: [permissions] requires default_action (allow, deny or ask)"
    );
}

#[test]
fn unknown_action_names_the_key_and_suggests() {
    assert_eq!(
        load_error("[permissions]\ndefault_action = \"allow\"\n[[permissions.rule]]\ntool = \"bash\"\naction = \"dney\"\n"),
        "5:10: permissions.rule.action: unknown variant `dney`, expected one of `allow`, `ask`, `deny` (did you mean \"deny\"?)"
    );
}

#[test]
fn unknown_key_names_the_section_and_suggests() {
    assert_eq!(
        load_error("[permissions]\ndefault_action = \"allow\"\ndefault_acton = \"deny\"\n"),
        "3:1: [permissions]: unknown field `default_acton`, expected one of `default_action`, `ask_timeout_secs`, `mode`, `rule` (did you mean \"default_action\"?)"
    );
    assert_eq!(
        load_error("[permisions]\ndefault_action = \"allow\"\n"),
        "1:2: unknown field `permisions`, expected one of `pod`, `model`, `tools`, `scope`, `permissions`, `skills`, `hooks`, `sandbox`, `mcp`, `managed`, `audit` (did you mean \"permissions\"?)"
    );
}

#[test]
fn bad_pattern_names_the_rule_and_key() {
    assert_eq!(
        load_error("[permissions]\ndefault_action = \"allow\"\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"\"\naction = \"deny\"\n"),
        "5:11: permissions.rule[1].pattern: must not be empty (use \"*\" to match everything)"
    );
}

#[test]
fn wrong_types_name_the_key() {
    assert_eq!(
        load_error("[permissions]\ndefault_action = \"allow\"\nask_timeout_secs = \"soon\"\n"),
        "3:20: permissions.ask_timeout_secs: invalid type: string \"soon\", expected u64"
    );
    assert_eq!(
        load_error("[tools]\nenabled = \"bash\"\n"),
        "2:11: tools.enabled: invalid type: string \"bash\", expected a sequence"
    );
}

#[test]
fn paths_resolve_relative_to_the_manifest_folder() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("conf")).unwrap();
    std::fs::create_dir_all(root.join("work")).unwrap();
    let path = root.join("conf/pod.toml");
    std::fs::write(
        &path,
        "[pod]\nworkspace = \"../work\"\n[skills]\ndirectories = [\"skills\"]\n",
    )
    .unwrap();
    let m = Manifest::load(&path).unwrap();
    assert_eq!(m.workspace, root.join("work"));
    assert_eq!(m.skill_dirs, vec![root.join("conf/skills")]);
    assert_eq!(m.scope.writable, vec![root.join("work")]);
    assert!(Path::new(&m.path).ends_with("conf/pod.toml"));
}

// Property tests: a denied command stays denied however it is embedded.

fn arg() -> impl Strategy<Value = String> {
    "[a-z0-9_./-]{1,12}"
}

fn other_command() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ls".to_string()),
        Just("git status".to_string()),
        Just("echo hi".to_string()),
        arg().prop_map(|a| format!("cat {a}")),
        arg().prop_map(|a| format!("git log {a}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_denied_command_stays_denied_when_joined_or_wrapped(
        target in arg(),
        other in other_command(),
        how in 0usize..13,
        first in any::<bool>(),
    ) {
        let f = fixture(BYPASS_RULES);
        let denied = format!("rm -rf {target}");
        let joined = |sep: &str| if first {
            format!("{denied}{sep}{other}")
        } else {
            format!("{other}{sep}{denied}")
        };
        let cmd = match how {
            0 => joined("; "),
            1 => joined(" && "),
            2 => joined(" || "),
            3 => joined(" | "),
            4 => joined("\n"),
            5 => joined(" & "),
            6 => format!("( {} )", joined("; ")),
            7 => format!("{{ {}; }}", joined("; ")),
            8 => format!("echo $({denied})"),
            9 => format!("bash -c '{}'", joined("; ")),
            10 => format!("sudo {denied}"),
            11 => format!("env A=1 {denied}"),
            _ => format!("timeout 5 {denied}"),
        };
        prop_assert_eq!(f.bash(&cmd), Action::Deny, "{:?}", cmd);
    }
}

#[test]
fn decisions_name_the_line_of_each_rule() {
    let f = fixture("[permissions]\ndefault_action = \"allow\"\n\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"rm *\"\naction = \"deny\"\n\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"git *\"\naction = \"allow\"\n");
    let d = f.decide("bash", json!({"command": "git status; rm x"}));
    let lines: Vec<Option<usize>> = d
        .subjects
        .iter()
        .map(|s| s.rule.as_ref().and_then(|r| r.line))
        .collect();
    assert_eq!(lines, [Some(9), Some(4)]);
}

/// bash runs the lines before a syntax error, so the raw text of an unparsed command must never
/// be allowed by a rule that happens to match it (`git *` matching `git status; rm -rf x; )`).
#[test]
fn an_unparsed_command_is_never_allowed() {
    let allowlist = "[permissions]\ndefault_action = \"deny\"\n[[permissions.rule]]\ntool = \"bash\"\npattern = \"git *\"\naction = \"allow\"\n";
    let f = fixture(allowlist);
    for cmd in [
        "git status; rm -rf x; )",
        "git status\nrm -rf x\n)",
        "git log $(rm x",
        "git status; ((((((((((((((((x",
    ] {
        let d = f.decide("bash", json!({ "command": cmd }));
        assert_eq!(d.decision, Action::Ask, "{cmd:?}: {d:?}");
        assert!(d.subjects.iter().all(|s| s.opaque), "{cmd:?}");
    }
    // Under a default allow it asks too; a deny rule that matches the raw text still denies.
    let f = fixture(BYPASS_RULES);
    assert_eq!(f.bash("git status; )"), Action::Ask);
    assert_eq!(f.bash("rm -rf x; )"), Action::Deny);
}
