//! The sandbox through the real `pod serve` over real pipes: every command below is allowed by the
//! rules (default allow, plus an explicit allow that also covers what a default never allows), and
//! the kernel still holds the boundary. Each test checks the side effect (the file outside is
//! absent, the server saw no connection, no process carries the marker), not only the message.
//!
//! These tests need a kernel with Landlock ABI 4 or newer (Linux 6.7), as CI has; on an older
//! one they fail saying so rather than pass without proving anything.

use crate::common;

use std::io::Read as _;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

/// Rules that allow every call, opaque ones included: only the kernel stands in the way.
fn manifest(sandbox: &str) -> String {
    format!(
        "[pod]\nname = \"sandbox\"\n\n[permissions]\ndefault_action = \"allow\"\n\n\
         [[permissions.rule]]\ntool = \"*\"\naction = \"allow\"\n\n{sandbox}"
    )
}

fn start(ws: &Workspace) -> (PodProcess, Value) {
    let mut pod = PodProcess::spawn(ws, Framing::Lines);
    let init = pod.initialize(false);
    (pod, init)
}

/// Runs one turn whose lines are bash calls (one model response, calls side by side); returns
/// each call's `toolResult`, in call order.
fn run_commands(pod: &mut PodProcess, commands: &[String]) -> Vec<Value> {
    let text: Vec<String> = commands.iter().map(|c| format!("!{c}")).collect();
    let run = pod.call(
        "run",
        json!({"input": [{"type": "text", "text": text.join("\n")}]}),
    );
    assert_eq!(run["stopReason"], "end_turn", "{run}");
    let turn = run["turnId"].as_str().unwrap_or_default().to_string();
    let results: Vec<Value> = pod
        .turn_events(&turn)
        .into_iter()
        .filter(|e| e["type"] == "toolResult")
        .collect();
    assert_eq!(results.len(), commands.len(), "{results:#?}");
    results
}

fn content(result: &Value) -> &str {
    result["content"].as_str().unwrap_or_default()
}

/// Fails with a clear message on a kernel that cannot hold what these tests prove.
fn require_landlock(init: &Value) {
    let abi = init["sandbox"]["abi"].as_u64().unwrap_or(0);
    assert!(
        abi >= 4,
        "these tests need a kernel with Landlock ABI 4+ (Linux 6.7); this one reports {}",
        init["sandbox"]
    );
}

/// Live processes whose argv is exactly `sleep <marker>` (a zombie has no cmdline).
fn sleepers(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .collect();
        if args.len() == 2 && args[0].ends_with(b"sleep") && args[1] == marker.as_bytes() {
            found.push(pid);
        }
    }
    found
}

/// A marker no other test (or run) uses: `300.<pid><n>` is a valid `sleep` argument.
fn marker(n: u32) -> String {
    format!("300.{}{n}", std::process::id())
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + *common::WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        // Paces the poll; the condition decides.
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn outside() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().canonicalize().expect("canonical");
    (dir, path)
}

#[test]
fn initialize_reports_what_the_sandbox_holds() {
    let ws = Workspace::with_manifest(&manifest("[sandbox]\nnetwork = \"deny\"\n"));
    let (_pod, init) = start(&ws);
    require_landlock(&init);
    assert_eq!(init["sandbox"]["kind"], "namespaces", "{init}");
    assert_eq!(init["sandbox"]["enforced"], true, "{init}");
    assert_eq!(init["sandbox"]["network"], "deny", "{init}");
}

#[test]
fn writes_outside_the_workspace_are_blocked_by_the_kernel() {
    let (_keep, out) = outside();
    let o = out.display();
    let ws = Workspace::with_manifest(&manifest(""));
    let (mut pod, init) = start(&ws);
    require_landlock(&init);
    let targets = ["py", "echo", "awk", "find", "script"].map(|name| out.join(name));
    // Inline code (`python3 -c`, an awk `print >`, `find -fprint`) is opaque to the rules, so
    // those programs run from files the model wrote: what the rules cannot see, and the kernel
    // bounds.
    let commands = [
        format!("printf \"open('{o}/py','w').write('x')\" > w.py && python3 w.py"),
        format!("echo x > {o}/echo"),
        format!(
            "printf '%s\\n' 'awk \"BEGIN {{ print 1 > \\\"{o}/awk\\\" }}\"' > a.sh && bash a.sh"
        ),
        format!("printf '%s\\n' 'find . -maxdepth 0 -fprint {o}/find' > f.sh && bash f.sh"),
        // A script written into the workspace, then run: the rules see only `./evil.sh`.
        format!(
            "printf '#!/bin/sh\\necho x > {o}/script\\n' > evil.sh && chmod +x evil.sh && ./evil.sh"
        ),
    ];
    let results = run_commands(&mut pod, &commands);
    for ((command, result), target) in commands.iter().zip(&results).zip(&targets) {
        assert!(
            result.get("deniedBy").is_none(),
            "rules allowed {command}: {result}"
        );
        assert_eq!(result["isError"], true, "{command}: {result}");
        let expected = format!(
            "write outside the workspace blocked by the sandbox: {}",
            target.display()
        );
        assert!(
            content(result).contains(&expected),
            "{command}: {}",
            content(result)
        );
        assert!(!target.exists(), "{command} wrote {}", target.display());
    }
    // The script itself was written inside the workspace.
    assert!(ws.path("evil.sh").exists());
    assert_eq!(std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0), 0);
}

#[test]
fn writes_inside_the_workspace_and_tmpdir_work_and_tmpdir_goes_at_close() {
    let ws = Workspace::with_manifest(&manifest(""));
    let (mut pod, init) = start(&ws);
    require_landlock(&init);
    // A file a line writes after `mkdir`, or under a computed `$TMPDIR`, cannot be resolved by
    // the rules: separate calls, and a script for `$TMPDIR`.
    let commands = [
        "mkdir -p sub/deeper".to_string(),
        "echo inside > inside.txt && mv inside.txt sub/deeper/ && cat sub/deeper/inside.txt"
            .to_string(),
        "printf '%s\\n' 'echo TMPDIR=$TMPDIR; echo temp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && f=$(mktemp) && echo ok > \"$f\" && cat \"$f\"' > t.sh && bash t.sh"
            .to_string(),
        // bash writes long here-documents to $TMPDIR.
        "echo x > /dev/null && printf 'cat <<EOF\\nheredoc\\nEOF\\n' > h.sh && bash h.sh"
            .to_string(),
    ];
    // `mkdir` in a turn of its own: the calls of one turn run side by side, so the `mv` of the
    // next line could otherwise run before the folder exists.
    let mut results = run_commands(&mut pod, &commands[..1]);
    results.extend(run_commands(&mut pod, &commands[1..]));
    for (command, result) in commands.iter().zip(&results) {
        assert_eq!(result["isError"], false, "{command}: {result}");
        assert!(
            !content(result).contains("blocked by the sandbox"),
            "{result}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(ws.path("sub/deeper/inside.txt")).unwrap_or_default(),
        "inside\n"
    );
    assert!(content(&results[3]).contains("heredoc\n"), "{}", results[3]);
    let text = content(&results[2]);
    assert!(text.contains("temp\n") && text.contains("ok\n"), "{text}");
    let tmpdir = text
        .lines()
        .find_map(|l| l.strip_prefix("TMPDIR="))
        .map(PathBuf::from)
        .expect("TMPDIR printed");
    assert!(tmpdir.is_dir(), "{}", tmpdir.display());
    assert!(!tmpdir.starts_with(ws.dir.path()), "{}", tmpdir.display());
    pod.call("shutdown", json!({}));
    assert!(pod.wait_exit(Duration::from_secs(5)).success());
    assert!(
        !tmpdir.exists(),
        "{} outlived the session",
        tmpdir.display()
    );
}

/// A loopback server that counts the connections it accepted.
fn server() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    (listener, port)
}

fn accepted(listener: &TcpListener) -> usize {
    let mut n = 0;
    while listener.accept().is_ok() {
        n += 1;
    }
    n
}

#[test]
fn network_deny_refuses_tcp_and_allow_lets_it_through() {
    for (network, connects) in [("deny", false), ("allow", true)] {
        let ws =
            Workspace::with_manifest(&manifest(&format!("[sandbox]\nnetwork = \"{network}\"\n")));
        let (mut pod, init) = start(&ws);
        require_landlock(&init);
        let (listener, port) = server();
        let commands = [
            format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected-bash"),
            format!(
                "printf \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('connected-python')\" > c.py && python3 c.py"
            ),
        ];
        let results = run_commands(&mut pod, &commands);
        for (command, result) in commands.iter().zip(&results) {
            assert_eq!(result["isError"], !connects, "{command}: {result}");
            // A line of its own: a traceback quotes the script's source.
            let said = content(result)
                .lines()
                .any(|l| l == "connected-bash" || l == "connected-python");
            assert_eq!(said, connects, "{result}");
        }
        if !connects {
            assert!(
                content(&results[0]).contains("network connection blocked by the sandbox"),
                "{}",
                content(&results[0])
            );
        }
        let seen = accepted(&listener);
        assert_eq!(seen, if connects { 2 } else { 0 }, "network = {network}");
    }
}

/// Commands that leave processes behind in every way a shell can, each first proving the
/// process is alive (`pgrep` inside the call: the call waits, up to 10 s, until the process it
/// left is there, however long the machine takes to start it).
fn leavers(markers: &[String; 3]) -> Vec<String> {
    let alive = |m: &str| {
        format!(
            "timeout 10 sh -c \"until pgrep -x -f 'sleep {m}' > /dev/null; do sleep 0.01; done\"; \
             pgrep -x -f 'sleep {m}' > /dev/null && echo alive-{m}"
        )
    };
    vec![
        // Leaves the process group and the session, and its parent exits at once.
        format!(
            "setsid -f sleep {} > /dev/null 2>&1; {}",
            markers[0],
            alive(&markers[0])
        ),
        // A double fork: the subshell starts sleep and exits, orphaning it mid-call.
        format!(
            "(sleep {} > /dev/null 2>&1 &); {}",
            markers[1],
            alive(&markers[1])
        ),
        // Plain background job that keeps the output pipe open, disowned.
        format!(
            "nohup sleep {} & disown; {}",
            markers[2],
            alive(&markers[2])
        ),
    ]
}

#[test]
fn no_process_outlives_its_call() {
    let ws = Workspace::with_manifest(&manifest(""));
    let (mut pod, _) = start(&ws);
    let markers = [marker(1), marker(2), marker(3)];
    let commands = leavers(&markers);
    let results = run_commands(&mut pod, &commands);
    for ((command, result), m) in commands.iter().zip(&results).zip(&markers) {
        assert!(
            content(result).contains(&format!("alive-{m}")),
            "{command}: {result}"
        );
        assert_eq!(result["isError"], false, "{command}: {result}");
        assert!(sleepers(m).is_empty(), "sleep {m} outlived its call");
    }
    // And none comes back later: a process of a call is the pod's descendant (the pod is a
    // subreaper), so once the pod has no live child, nothing of the calls is left to come back.
    wait_for("the pod to have no process left", || {
        common::live_children(pod.pid()).is_empty()
    });
    for m in &markers {
        assert!(sleepers(m).is_empty(), "sleep {m} came back");
    }
}

#[test]
fn no_process_outlives_a_cancelled_or_timed_out_call() {
    let ws = Workspace::with_manifest(&manifest(""));
    let (mut pod, _) = start(&ws);
    let markers = [marker(4), marker(5), marker(6)];
    // `sleep 60` keeps each call running until the cancel (or its timeout) ends it.
    let mut line: Vec<String> = leavers(&markers)
        .into_iter()
        .map(|c| format!("!{c}; sleep 60"))
        .collect();
    let timed = marker(7);
    line.push(format!(
        "@bash {}",
        json!({"command": format!("setsid -f sleep {timed} >/dev/null 2>&1; sleep 60"), "timeout_secs": 1})
    ));
    let run = pod.start(
        "run",
        json!({"input": [{"type": "text", "text": line.join("\n")}]}),
    );
    // Every process is alive before the cancel.
    wait_for("the processes to start", || {
        markers
            .iter()
            .chain([&timed])
            .all(|m| !sleepers(m).is_empty())
    });
    // The timed-out call ends by itself.
    wait_for("the timeout to kill its processes", || {
        sleepers(&timed).is_empty()
    });
    assert_eq!(pod.call("cancel", json!({})), json!({"cancelled": true}));
    let response = pod.response(&json!(run));
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    for m in &markers {
        assert!(sleepers(m).is_empty(), "sleep {m} outlived the cancel");
    }
    let results: Vec<&Value> = pod
        .events
        .iter()
        .filter(|e| e["type"] == "toolResult")
        .collect();
    assert!(
        results
            .iter()
            .any(|r| content(r).contains("timed out after 1 s")),
        "{results:#?}"
    );
}

#[test]
fn hooks_run_in_the_sandbox_and_leave_nothing_behind() {
    let (_keep, out) = outside();
    let ws = Workspace::with_manifest("");
    let m = marker(8);
    let hook = ws.path("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\necho x > {}/hook 2>/dev/null\nsetsid -f sleep {m} > /dev/null 2>&1\n\
             echo '{{\"action\":\"continue\"}}'\n",
            out.display()
        ),
    )
    .expect("write hook");
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::write(
        ws.manifest(),
        manifest(&format!(
            "[[hooks.pre_tool_call]]\ncommand = [\"{}\"]\n",
            hook.display()
        )),
    )
    .expect("write manifest");
    let (mut pod, init) = start(&ws);
    require_landlock(&init);
    let results = run_commands(&mut pod, &["echo ran".to_string()]);
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert!(!out.join("hook").exists(), "the hook wrote outside");
    assert!(
        sleepers(&m).is_empty(),
        "the hook's sleep outlived the check"
    );
}

#[test]
fn mode_off_works_as_before() {
    let (_keep, out) = outside();
    let ws = Workspace::with_manifest(&manifest("[sandbox]\nmode = \"off\"\n"));
    let (mut pod, init) = start(&ws);
    assert_eq!(init["sandbox"]["kind"], "none", "{init}");
    assert_eq!(init["sandbox"]["enforced"], false, "{init}");
    let results = run_commands(
        &mut pod,
        &[format!(
            "echo x > {}/off && echo TMPDIR=$TMPDIR",
            out.display()
        )],
    );
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert!(out.join("off").exists());
    assert!(
        !content(&results[0]).contains("TMPDIR=/tmp/pod-"),
        "{}",
        results[0]
    );
}

/// `pod serve` with `POD_TEST_NO_LANDLOCK=1`: its exit code and stderr (stdin closed at once).
fn serve_without_landlock(ws: &Workspace) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["serve", "--manifest"])
        .arg(ws.manifest())
        .env("POD_TEST_NO_LANDLOCK", "1")
        .env("POD_TEST_NO_NAMESPACES", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pod");
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let status = child.wait().expect("wait");
    (status.code(), stderr)
}

#[test]
fn required_on_a_kernel_without_landlock_refuses_to_start() {
    let ws = Workspace::with_manifest(&manifest("[sandbox]\nrequired = true\n"));
    let (code, stderr) = serve_without_landlock(&ws);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "[sandbox] required = true, but this machine cannot enforce it: calls cannot run in \
             namespaces of their own"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("falling back to Landlock and seccomp, which lose metadata changes"),
        "{stderr}"
    );
    assert!(stderr.contains("the kernel has no Landlock"), "{stderr}");
    assert!(
        stderr.contains(&ws.manifest().display().to_string()),
        "{stderr}"
    );

    // `pod check` says the same, as an error.
    let check = Command::new(env!("CARGO_BIN_EXE_pod"))
        .arg("check")
        .arg(ws.manifest())
        .env("POD_TEST_NO_LANDLOCK", "1")
        .env("POD_TEST_NO_NAMESPACES", "1")
        .output()
        .expect("pod check");
    let text = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{text}");
    assert!(text.contains("error: sandbox: required = true"), "{text}");
    assert!(text.contains("NOT enforced"), "{text}");
}

#[test]
fn not_required_on_a_kernel_without_landlock_starts_and_says_so() {
    let (_keep, out) = outside();
    let ws = Workspace::with_manifest(&manifest(""));
    let mut pod = PodProcess::spawn_env(
        &ws,
        Framing::Lines,
        &[],
        &[
            ("POD_TEST_NO_LANDLOCK", "1"),
            ("POD_TEST_NO_NAMESPACES", "1"),
        ],
    );
    let init = pod.initialize(false);
    let s = &init["sandbox"];
    assert_eq!(
        [
            &s["kind"],
            &s["abi"],
            &s["enforced"],
            &s["network"],
            &s["execGate"]
        ],
        [
            &json!("landlock"),
            &json!(0),
            &json!(false),
            &json!("allow"),
            &json!(true)
        ],
        "{init}"
    );
    // What still holds is listed, and it is not the write boundary.
    let held = s["guarantees"].to_string();
    assert!(
        held.contains("seccomp") && !held.contains("file writes"),
        "{held}"
    );
    // What it says is true: nothing holds the write boundary.
    let results = run_commands(&mut pod, &[format!("echo x > {}/unheld", out.display())]);
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert!(out.join("unheld").exists());
}

/// The manifest error for `text`, without the file name.
fn load_error(text: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pod.toml");
    std::fs::write(&path, text).expect("write");
    let err = pod::manifest::Manifest::load(&path).expect_err("must not load");
    let text = err.to_string();
    text.strip_prefix(&format!("{}:", path.display()))
        .unwrap_or(&text)
        .to_string()
}

#[test]
fn sandbox_section_mistakes_name_the_place_and_suggest() {
    assert_eq!(
        load_error("[pod]\nname = \"x\"\n[sandbox]\nmode = \"landlok\"\n"),
        "4:8: sandbox.mode: unknown variant `landlok`, expected one of `off`, `landlock`, `namespaces` (did you mean \"landlock\"?)"
    );
    assert_eq!(
        load_error("[sandbox]\nnetwrk = \"deny\"\n"),
        "2:1: [sandbox]: unknown field `netwrk`, expected one of `mode`, `required`, `network`, `writable`, `readable`, `env`, `exec_gate`, `max_processes`, `max_tmpdir_size` (did you mean \"network\"?)"
    );
    assert_eq!(
        load_error("[sandbox]\nnetwork = \"none\"\n"),
        "2:11: sandbox.network: unknown variant `none`, expected one of `allow`, `deny`, `proxy`"
    );
    assert_eq!(
        load_error("[sandbox]\nwritable = [\"ok\", \"~bob/cache\"]\n"),
        "2:19: sandbox.writable: \"~bob/cache\": only ~ and ~/… are expanded (~user is not); write the path out"
    );
    assert_eq!(
        load_error("[sandbox]\nwritable = [\"\"]\n"),
        "2:13: sandbox.writable: an entry is empty (name a folder, such as \"~/.cache/cargo\")"
    );
    assert_eq!(
        load_error("[sandbox]\nreadable = [\"~/.cargo\", \".npm\"]\n"),
        "2:25: sandbox.readable: \".npm\" is relative; name a path under ~ (\"~/.cargo\") or an absolute one"
    );
    assert_eq!(
        load_error("[sandbox]\nrequired = \"yes\"\n"),
        "2:12: sandbox.required: invalid value: string \"yes\", expected true, false, \"namespaces\" or \"landlock\""
    );
    assert_eq!(
        load_error("[sandbox]\nmax_processes = 0\n"),
        "2:1: sandbox.max_processes: must be at least 1 (a call's first process counts)"
    );
}

#[test]
fn sandbox_writable_paths_resolve_like_scope_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir(root.join("real")).expect("mkdir");
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).expect("symlink");
    let path = root.join("pod.toml");
    // A symlink inside the workspace is refused (a call may have made it); one outside is
    // followed like `[scope].writable`.
    let err_of = |text: &str| {
        pod::manifest::Manifest::parse(text, &path)
            .unwrap_err()
            .to_string()
    };
    let err = err_of("[sandbox]\nwritable = [\"link/sub\"]\n");
    assert!(err.contains("a symlink inside the workspace"), "{err}");
    // `..` after the link steps back from where it led, as the kernel walks it; and the
    // workspace named through a symlinked parent is still the workspace.
    let err = err_of("[sandbox]\nwritable = [\"link/../x\"]\n");
    assert!(err.contains("a symlink inside the workspace"), "{err}");
    let above = tempfile::tempdir().expect("tempdir");
    let alias = above.path().join("alias");
    std::os::unix::fs::symlink(&root, &alias).expect("symlink");
    let err = err_of(&format!(
        "[sandbox]\nwritable = [\"{}/link/sub\"]\n",
        alias.display()
    ));
    assert!(err.contains("a symlink inside the workspace"), "{err}");
    let outside = tempfile::tempdir().expect("tempdir");
    let out = outside.path().canonicalize().expect("canonical");
    std::fs::create_dir(out.join("real")).expect("mkdir");
    std::os::unix::fs::symlink(out.join("real"), out.join("link")).expect("symlink");
    let text = format!(
        "[sandbox]\nwritable = [\"cache\", \"{}/link/sub\", \"/abs/../x\", \"~\", \"~/.cache\"]\n",
        out.display()
    );
    let m = pod::manifest::Manifest::parse(&text, &path).expect("loads");
    let home = pod::permission::path::resolve(&PathBuf::from(
        std::env::var_os("HOME").expect("HOME is set"),
    ));
    assert_eq!(
        m.sandbox.writable,
        vec![
            root.join("cache"),
            out.join("real/sub"),
            PathBuf::from("/x"),
            home.clone(),
            home.join(".cache"),
        ]
    );
    assert_eq!(m.sandbox.line, Some(1));
}

#[test]
fn a_killed_pods_tmpdir_is_removed_by_the_next_pod() {
    let ws = Workspace::with_manifest(&manifest(""));
    let tmpdir_of = |pod: &mut PodProcess| {
        let results = run_commands(pod, &["echo TMPDIR=$TMPDIR".to_string()]);
        content(&results[0])
            .lines()
            .find_map(|l| l.strip_prefix("TMPDIR="))
            .map(PathBuf::from)
            .expect("TMPDIR printed")
    };
    let (mut killed, init) = start(&ws);
    require_landlock(&init);
    let left = tmpdir_of(&mut killed);
    killed.kill9();
    assert!(
        left.is_dir(),
        "SIGKILL leaves the folder: nothing runs at exit"
    );
    // Fresh folders are never taken (their pod may be about to lock them); age this one.
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(&left)
        .and_then(|d| d.set_modified(old))
        .expect("age the folder");

    let (mut live, _) = start(&ws);
    let own = tmpdir_of(&mut live);
    assert!(!left.exists(), "{} was left behind", left.display());
    assert!(own.is_dir());
    // A live pod's folder, however old, is locked and stays.
    std::fs::File::open(&own)
        .and_then(|d| d.set_modified(old))
        .expect("age the folder");
    let (_third, _) = start(&ws);
    assert!(own.is_dir(), "a live session's TMPDIR was removed");
}

#[test]
fn required_levels_refuse_below_them_and_say_what_is_lost() {
    let serve = |required: &str| {
        let ws =
            Workspace::with_manifest(&manifest(&format!("[sandbox]\nrequired = {required}\n")));
        let out = Command::new(env!("CARGO_BIN_EXE_pod"))
            .args(["serve", "--manifest"])
            .arg(ws.manifest())
            .env("POD_TEST_NO_NAMESPACES", "1")
            .env("XDG_STATE_HOME", ws.state_home())
            .stdin(Stdio::null())
            .output()
            .expect("pod serve");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = serve("\"namespaces\"");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("[sandbox] required = \"namespaces\", but this machine cannot enforce it"),
        "{stderr}"
    );
    assert!(stderr.contains("which lose metadata changes"), "{stderr}");
    // Landlock still holds here, so "landlock" starts (stdin closed: it exits at once).
    let (code, stderr) = serve("\"landlock\"");
    assert_eq!(code, Some(0), "{stderr}");
}
