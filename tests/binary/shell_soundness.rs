//! The classes of the shell soundness issue, end to end, in both setups users write:
//!
//! - a **deny-list** (`default_action = "allow"`; `rm *`, `git push *`, writes to `*.env` and
//!   `secrets/*` denied),
//! - an **allow-list** (`default_action = "deny"`; `echo *`, `printf *`, `git status`, `sed *`,
//!   `find *`, `awk *` allowed, and writes to anything).
//!
//! Every attack is checked through the real `pod explain` (never `allow`) and through the real
//! `pod serve` without the approval capability (so an ask fails closed): its victim folder
//! still exists afterwards, the protected files are unchanged, and nothing was pushed. The
//! everyday commands that must keep their decisions are checked the same two ways.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

const DENY_LIST: &str = r#"
[tools]
enabled = ["bash"]

[permissions]
default_action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"

[[permissions.rule]]
tool = "bash"
pattern = "git push *"
action = "deny"

[[permissions.rule]]
tool = "file_write"
pattern = "*.env"
action = "deny"

[[permissions.rule]]
tool = "file_write"
pattern = "secrets/*"
action = "deny"
"#;

const ALLOW_LIST: &str = r#"
[tools]
enabled = ["bash"]

[permissions]
default_action = "deny"

[[permissions.rule]]
tool = "bash"
pattern = "echo *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "printf *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "git status"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "sed *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "find *"
action = "allow"

[[permissions.rule]]
tool = "bash"
pattern = "awk *"
action = "allow"

[[permissions.rule]]
tool = "file_write"
pattern = "*"
action = "allow"
"#;

/// The attacks, by class. `VICTIM` is replaced by a folder of the attack's own.
const ATTACKS: &[(&str, &str)] = &[
    // 1. Parser differentials.
    ("differential", "echo $(: <<EOF\n(\nEOF\nrm -rf VICTIM)"),
    ("differential", "echo hi; ( (rm -rf VICTIM) )"),
    ("differential", "echo hi; ((rm -rf VICTIM) )"),
    ("differential", "echo $((rm -rf VICTIM) )"),
    ("differential", "echo $(echo ')'; rm -rf VICTIM)"),
    ("differential", "echo $(case x in x) rm -rf VICTIM;; esac)"),
    ("differential", "echo $(echo # )\nrm -rf VICTIM)"),
    // 2. Strings bash evaluates later.
    ("evaluated", "x='$(rm -rf VICTIM)'; echo \"${x@P}\""),
    ("evaluated", "x='a[$(rm -rf VICTIM)]'; echo $((x))"),
    ("evaluated", "x='a[$(rm -rf VICTIM)]'; echo ${a[x]}"),
    ("evaluated", "x='a[$(rm -rf VICTIM)]'; (( x ))"),
    ("evaluated", "x='a[$(rm -rf VICTIM)]'; [[ $x -eq 0 ]]"),
    ("evaluated", "x='a[$(rm -rf VICTIM)]'; let x"),
    ("evaluated", "x='a[$(rm -rf VICTIM)]'; declare -i y; y=x"),
    ("evaluated", "r='a[$(rm -rf VICTIM)]'; echo ${!r}"),
    ("evaluated", "declare -n r='a[$(rm -rf VICTIM)]'; echo $r"),
    ("evaluated", "printf -v 'a[$(rm -rf VICTIM)]' x"),
    ("evaluated", "read 'a[$(rm -rf VICTIM)]' <<< x"),
    ("evaluated", "test -v 'a[$(rm -rf VICTIM)]'"),
    ("evaluated", "x='a[$(rm -rf VICTIM)]'; [[ -v $x ]]"),
    ("evaluated", "trap 'rm -rf VICTIM' EXIT"),
    ("evaluated", "echo a | mapfile -C 'rm -rf VICTIM' -c 1 x"),
    ("evaluated", "readarray -C 'rm -rf VICTIM' -c 1 x <<< a"),
    ("evaluated", "compgen -C 'rm -rf VICTIM' x"),
    ("evaluated", "PS4='$(rm -rf VICTIM)'; set -x; echo hi"),
    ("evaluated", "BASH_ENV=<(echo rm -rf VICTIM) bash -c true"),
    ("evaluated", "shopt -s expand_aliases; alias echo='rm -rf VICTIM'\necho hi"),
    ("evaluated", "hash -p /usr/bin/rm ls; ls -rf VICTIM"),
    ("evaluated", "env 'BASH_FUNC_ls%%=() { rm -rf VICTIM; }' bash -c ls"),
    ("evaluated", "echo rm -rf VICTIM; $_"),
    // 3. Assignment prefixes.
    (
        "assignment",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm -rf VICTIM; false' git status",
    ),
    ("assignment", "GIT_EXTERNAL_DIFF='rm -rf VICTIM;' git diff"),
    // 4. Wrapper and option parsing.
    ("options", "echo VICTIM | xargs --eof rm -rf"),
    ("options", "echo VICTIM | xargs --max-lines rm -rf"),
    ("options", "echo VICTIM | xargs --repl=X rm -rf X"),
    ("options", "OPT=-c; bash $OPT 'rm -rf VICTIM'"),
    ("options", "bash ${C:--c} 'rm -rf VICTIM'"),
    ("options", "X=-exec; find . $X rm -rf VICTIM \\;"),
    ("options", "find . $'-\\x65xec' rm -rf VICTIM \\;"),
    ("options", "env -S 'rm\\_-rf\\_VICTIM'"),
    ("options", "bash /dev/stdin <<< 'rm -rf VICTIM'"),
    ("options", "bash <(echo rm -rf VICTIM)"),
    ("options", "source /dev/stdin <<< 'rm -rf VICTIM'"),
    ("options", ". <(echo rm -rf VICTIM)"),
    (
        "options",
        "python3 /dev/stdin <<< 'import shutil; shutil.rmtree(\"VICTIM\")'",
    ),
    // 5. Wrappers the engine does not know.
    ("wrapper", "taskset 1 rm -rf VICTIM"),
    ("wrapper", "unshare rm -rf VICTIM"),
    ("wrapper", "flock lockfile rm -rf VICTIM"),
    ("wrapper", "setpriv rm -rf VICTIM"),
    ("wrapper", "strace -o /dev/null rm -rf VICTIM"),
    ("wrapper", "script -qc 'rm -rf VICTIM' /dev/null"),
    ("wrapper", "su root -c 'rm -rf VICTIM'"),
    ("wrapper", "rbash -c 'rm -rf VICTIM'"),
    ("wrapper", "X=rm; taskset 1 $X -rf VICTIM"),
    // 6. git's global options.
    ("git", "git -C . push origin HEAD"),
    ("git", "git -c x.y=z push origin HEAD"),
    ("git", "git --no-pager push origin HEAD"),
    ("git", "git -c alias.p=push p origin HEAD"),
    // 7. Programs whose arguments run code.
    ("code", "awk 'BEGIN{system(\"rm -rf VICTIM\")}'"),
    ("code", "sed -n '1e rm -rf VICTIM' notes"),
    ("code", "sed -n 's/.*/rm -rf VICTIM/e' notes"),
    ("code", "make -f /dev/null --eval='$(shell rm -rf VICTIM)'"),
    (
        "code",
        "tar cf out.tar --checkpoint=1 --checkpoint-action=exec='rm -rf VICTIM' notes",
    ),
    ("code", "git -c alias.x='!rm -rf VICTIM' x"),
    ("code", "LESSOPEN='|rm -rf VICTIM %s' less notes"),
    ("code", "find . -name notes -exec rm -rf VICTIM \\;"),
    ("code", "find VICTIM -delete"),
    ("code", "perl '-Mstrict;qx{rm -rf VICTIM}' -e 1"),
    (
        "code",
        "python3 -m timeit -n 1 'import shutil; shutil.rmtree(\"VICTIM\")'",
    ),
    ("code", "python3 -c 'import shutil; shutil.rmtree(\"VICTIM\")'"),
    // Found by an attacker pass on the first version of the engine (docs/hardening.md).
    ("attacker", "cat <<EOF\nE\\\nOF\nrm -rf VICTIM\nEOF"),
    ("attacker", "sed 's[a[b[;e rm -rf VICTIM' notes"),
    ("attacker", "sed -n ':a e rm -rf VICTIM' notes"),
    ("attacker", "sed -n p {-e1e\\ rm\\ -rf\\ VICTIM,x} notes"),
    ("attacker", "printf {-vPS4,'$(rm -rf VICTIM)'}; set -x; true"),
    ("attacker", "printf -vx '%s' 'a[$(rm -rf VICTIM)]'; echo $((x))"),
    ("attacker", "command printf -v x '%s' 'a[$(rm -rf VICTIM)]'; echo $((x))"),
    ("attacker", "pc='a[$(rm -rf VICTIM)]'; echo $((MACHTYPE))"),
    ("attacker", "bash -c 'echo $(($0))' 'a[$(rm -rf VICTIM)]'"),
    ("attacker", "declare -a 'x=([$(rm -rf VICTIM)]=1)'"),
    ("attacker", "set -o history; set -H\n: rm -rf VICTIM\n!:1-$"),
    ("attacker", "sh -c '((rm -rf VICTIM))'"),
    ("attacker", "sh -c 'echo a &>/dev/null rm -rf VICTIM; wait'"),
    ("attacker", "ssh -4oProxyCommand='rm -rf VICTIM' x"),
    ("attacker", "make --ev='$(shell rm -rf VICTIM)'"),
    ("attacker", "split --f='rm -rf VICTIM' notes"),
    ("attacker", "git grep --no-index -O'rm -rf VICTIM #' n"),
    ("attacker", "python3 -i notes <<'EOF'\nimport shutil;shutil.rmtree('VICTIM')\nEOF"),
];

/// Writes the deny-list forbids; the files must be unchanged afterwards.
const WRITES: &[(&str, &str)] = &[
    ("redirect", "ln -sf .env notes2; echo pwned > notes2"),
    ("redirect", "cd secrets && echo pwned > key"),
    ("redirect", "echo pwned > /proc/self/cwd/secrets/key"),
    ("redirect", "echo pwned | tee .env"),
    (
        "redirect",
        "mkdir -p d && ln -sf ../.env d/x; echo pwned >> d/x",
    ),
];

/// Everyday commands and the decision each setup must keep.
const MUST_STAY: &[(&str, &str, &str)] = &[
    // (command, deny-list decision, allow-list decision)
    ("git status", "allow", "allow"),
    ("echo \"rm x\"", "allow", "allow"),
    ("git log --oneline | head -n 3", "allow", "deny"),
    ("for f in *.md; do echo \"$f\"; done", "allow", "allow"),
    ("echo \"$HOME\" > out.txt", "allow", "allow"),
    ("ls $DIR", "allow", "deny"),
    ("git commit -m '((((((((((((('", "allow", "deny"),
    ("echo '`````````````````````````````````````````````````````````````````````````````````````````````````````'", "allow", "allow"),
    ("sed -n '1,3p' notes && awk '{print $1}' notes", "allow", "allow"),
    ("find . -name '*.md' -type f", "allow", "allow"),
    ("printf '%s\\n' a b | sed 's/a/b/'", "allow", "allow"),
    ("cat notes | grep n > out2.txt && wc -l notes", "allow", "deny"),
    ("rmdir empty", "allow", "deny"),
    ("x=5; echo $((x+1))", "allow", "allow"),
    ("for i in 1 2 3; do echo $((i*2)); done", "allow", "allow"),
    ("awk '{ if ($1 > 5) print $1 }' notes", "allow", "allow"),
    ("awk '/n|m/' notes", "allow", "allow"),
    ("echo \"${HOME@Q}\"", "allow", "allow"),
    ("cargo --version", "allow", "deny"),
];

fn victim_of(i: usize) -> String {
    format!("victim_{i}")
}

fn attack_commands() -> Vec<String> {
    ATTACKS
        .iter()
        .enumerate()
        .map(|(i, (_, c))| c.replace("VICTIM", &victim_of(i)))
        .collect()
}

/// A workspace with the victims, the protected files, and a git repository with a remote.
fn workspace(rules: &str) -> Workspace {
    let ws = Workspace::with_manifest(&format!("[pod]\nworkspace = \".\"\n{rules}"));
    let p = ws.dir.path();
    for i in 0..ATTACKS.len() {
        std::fs::create_dir_all(p.join(victim_of(i))).expect("victim");
        std::fs::write(p.join(victim_of(i)).join("f"), "x").expect("victim file");
    }
    std::fs::write(p.join("notes"), "n\n").expect("notes");
    std::fs::write(p.join("README.md"), "r\n").expect("readme");
    std::fs::write(p.join(".env"), "SECRET=1\n").expect(".env");
    std::fs::create_dir_all(p.join("secrets")).expect("secrets");
    std::fs::write(p.join("secrets/key"), "k\n").expect("key");
    std::fs::create_dir_all(p.join("empty")).expect("empty");
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(p)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .expect("git")
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "--bare", "remote.git"]);
    git(&["init", "-q"]);
    git(&["remote", "add", "origin", "remote.git"]);
    git(&["add", "notes"]);
    git(&["commit", "-qm", "first"]);
    ws
}

fn explain(ws: &Workspace, command: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("explain")
        .arg(ws.manifest())
        .args(["--trust", "--tool", "bash", "--json", "--input"])
        .arg(json!({ "command": command }).to_string())
        .output()
        .expect("pod explain");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("explain JSON")
}

/// Runs every command as one model response through `pod serve` (no approver); returns the
/// tool results in call order.
fn serve(ws: &Workspace, commands: &[String]) -> Vec<Value> {
    let mut pod = PodProcess::spawn(ws, Framing::Lines);
    pod.initialize(false);
    let input: String = commands
        .iter()
        .map(|c| format!("@bash {}\n", json!({ "command": c, "timeout_secs": 20 })))
        .collect();
    let run = pod.start("run", json!({"input": [{"type": "text", "text": input}]}));
    let mut results = Vec::new();
    for _ in commands {
        results.push(pod.wait_event_type("toolResult"));
    }
    let _ = pod.response(&json!(run));
    results
}

fn pushed(ws: &Workspace) -> bool {
    let refs = Command::new("git")
        .args(["--git-dir", "remote.git", "show-ref"])
        .current_dir(ws.dir.path())
        .output()
        .expect("git show-ref");
    !refs.stdout.is_empty()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| format!("<{e}>"))
}

fn check_attacks(rules: &str, setup: &str) {
    let ws = workspace(rules);
    let commands = attack_commands();
    for (i, c) in commands.iter().enumerate() {
        let d = explain(&ws, c);
        assert_ne!(
            d["decision"], "allow",
            "[{setup}] {} attack allowed by pod explain: {c:?}\n{d:#}",
            ATTACKS[i].0
        );
    }
    let results = serve(&ws, &commands);
    for (i, (c, r)) in commands.iter().zip(&results).enumerate() {
        assert_eq!(r["isError"], true, "[{setup}] ran {c:?}: {r}");
        assert!(
            ws.path(&victim_of(i)).join("f").exists(),
            "[{setup}] {} attack deleted its victim: {c:?}",
            ATTACKS[i].0
        );
    }
    assert!(
        !pushed(&ws),
        "[{setup}] a denied git push reached the remote"
    );
}

#[test]
fn attacks_are_never_allowed_under_a_deny_list() {
    check_attacks(DENY_LIST, "deny-list");
}

#[test]
fn attacks_are_never_allowed_under_an_allow_list() {
    check_attacks(ALLOW_LIST, "allow-list");
}

#[test]
fn denied_writes_do_not_happen_through_redirections() {
    let ws = workspace(DENY_LIST);
    let commands: Vec<String> = WRITES.iter().map(|(_, c)| c.to_string()).collect();
    for c in &commands {
        assert_ne!(explain(&ws, c)["decision"], "allow", "{c:?}");
    }
    let results = serve(&ws, &commands);
    for (c, r) in commands.iter().zip(&results) {
        assert_eq!(r["isError"], true, "ran {c:?}: {r}");
    }
    assert_eq!(read(&ws.path(".env")), "SECRET=1\n");
    assert_eq!(read(&ws.path("secrets/key")), "k\n");
}

#[test]
fn everyday_commands_keep_their_decisions() {
    for (setup, rules, column) in [("deny-list", DENY_LIST, 1), ("allow-list", ALLOW_LIST, 2)] {
        let ws = workspace(rules);
        let mut allowed = Vec::new();
        for row in MUST_STAY {
            let (command, expected) = (row.0, if column == 1 { row.1 } else { row.2 });
            let d = explain(&ws, command);
            assert_eq!(d["decision"], expected, "[{setup}] {command:?}: {d:#}");
            if expected == "allow" {
                allowed.push(command.to_string());
            }
        }
        let results = serve(&ws, &allowed);
        for (c, r) in allowed.iter().zip(&results) {
            assert!(
                r.get("deniedBy").is_none(),
                "[{setup}] {c:?} was denied: {r}"
            );
        }
        assert!(
            ws.path("out.txt").exists(),
            "[{setup}] the allowed write did not happen"
        );
    }
}

/// Huge but simple input is parsed, not refused; 41 bytes that made the old parser crawl for
/// 25 s are decided at once; the server keeps answering.
#[test]
fn huge_and_hostile_lines_are_decided_and_the_server_keeps_answering() {
    let ws = workspace(DENY_LIST);
    let mut pod = PodProcess::spawn(&ws, Framing::Lines);
    pod.initialize(false);
    let huge = "echo a; ".repeat(100_000);
    let hostile = "echo \"${M[}\"${M[}\"${M[}\"${M[}\"${M[}\"${M[}";
    let mut input = format!("@bash {}\n", json!({ "command": huge }));
    for _ in 0..300 {
        input.push_str(&format!("@bash {}\n", json!({ "command": hostile })));
    }
    let run = pod.start("run", json!({"input": [{"type": "text", "text": input}]}));
    let first = pod.wait_event_type("toolResult");
    assert!(
        first.get("deniedBy").is_none(),
        "the huge line was refused: {first}"
    );
    for _ in 0..300 {
        let r = pod.wait_event_type("toolResult");
        assert_eq!(r["deniedBy"], "permission", "{r}");
    }
    assert_eq!(
        pod.response(&json!(run))["result"]["stopReason"],
        "end_turn"
    );
    let history = pod.call("history", json!({}));
    assert!(history["items"].as_array().is_some_and(|i| !i.is_empty()));
}
