//! The conformance kit (`tests/conformance/`) through `pod conformance`: it passes against our
//! pod in both framings (and its ACP section against `pod acp`), it catches deliberately broken
//! pods (faults planted by `tests/conformance/mutants/plant.py`; `run.py` there plants every
//! fault), and its report says what a CI system needs: exit status, warnings for SHOULDs, a pod
//! that cannot start, JSON.

use std::process::{Command, Output};

use serde_json::Value;

fn conformance(pod_cmd: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pod"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["conformance", "--pod-cmd", pod_cmd])
        .args(args)
        // The kit's manifests alone: no user configuration of this machine (its grants).
        .env("POD_CONFIG", "")
        .output()
        .expect("run pod conformance")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn real_pod() -> String {
    format!(
        "'{}' serve --trust --manifest {{manifest}}",
        env!("CARGO_BIN_EXE_pod")
    )
}

/// The real pod behind the fault-planting proxy, with `fault` planted.
fn planted(fault: &str) -> String {
    format!(
        "python3 tests/conformance/mutants/plant.py {fault} {}",
        real_pod()
    )
}

#[test]
fn the_kit_passes_against_our_pod_in_both_framings() {
    let out = conformance(&real_pod(), &["--strict"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    let passes = |framing: &str| {
        text.lines()
            .filter(|l| l.starts_with("PASS POD-") && l.contains(&format!("] [{framing}] ")))
            .count()
    };
    assert!(passes("ndjson") >= 50, "{text}");
    // Every requirement runs in header framing too, but for those made of NDJSON bytes.
    assert!(passes("headers") >= passes("ndjson") - 3, "{text}");
    assert!(!text.contains("FAIL") && !text.contains("WARN"), "{text}");
    let total = passes("ndjson") + passes("headers");
    assert_eq!(
        text.lines().last(),
        Some(format!("{total} passed, 0 failed, 0 warned").as_str()),
        "{text}"
    );
    // The key negative requirement is part of the kit.
    assert!(text.contains("PASS POD-PERM-006 [MUST] [ndjson] no permissionRequest ever reaches a client without capabilities.approval"), "{text}");
}

#[test]
fn the_kit_catches_a_pod_that_sends_requests_to_a_client_without_approval() {
    let out = conformance(&planted("requests-leak"), &["--filter", "POD-PERM-006"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL POD-PERM-006 [MUST] [ndjson]"), "{text}");
    assert!(
        text.contains("FAIL POD-PERM-006 [MUST] [headers]"),
        "{text}"
    );
    assert!(text.contains("permissionRequest"), "{text}");
    assert!(text.ends_with("0 passed, 2 failed, 0 warned\n"), "{text}");
}

#[test]
fn the_kit_catches_a_pod_that_reorders_tool_results_and_only_there() {
    let args = ["--filter", "POD-EVT-005", "--framing", "ndjson"];
    let out = conformance(&planted("results-reversed"), &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL POD-EVT-005 [MUST] [ndjson]"), "{text}");
    assert!(text.contains("arrived before"), "{text}");
    // The same fault passes a requirement it does not break: the failure is specific.
    let out = conformance(&planted("results-reversed"), &["--filter", "POD-PERM-003"]);
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn numbers_are_compared_exactly() {
    // 2^53 + 1 echoed through a double comes back as 2^53.
    let args = ["--filter", "POD-RPC-009", "--framing", "ndjson"];
    let out = conformance(&planted("id-rounded"), &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("9007199254740992"), "{text}");
}

#[test]
fn header_framing_is_checked_byte_exact() {
    let args = ["--filter", "POD-FRAME-001"];
    let out = conformance(&planted("length-counts-chars"), &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL POD-FRAME-001 [MUST] [headers]") && text.contains("characters"),
        "{text}"
    );
    let out = conformance(&planted("header-bare-lf"), &["--filter", "POD-FRAME-002"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("bare LF"), "{text}");
}

#[test]
fn a_failed_should_warns_and_fails_the_run_only_with_strict() {
    let args = ["--filter", "POD-RPC-010", "--framing", "ndjson"];
    let out = conformance(&planted("unknown-params-rejected"), &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("WARN POD-RPC-010 [SHOULD] [ndjson]"),
        "{text}"
    );
    assert!(text.contains("0 passed, 0 failed, 1 warned"), "{text}");
    let strict = [&args[..], &["--strict"]].concat();
    let out = conformance(&planted("unknown-params-rejected"), &strict);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL POD-RPC-010 [SHOULD] [ndjson]"),
        "{text}"
    );
}

#[test]
fn a_pod_that_cannot_start_is_reported_once_with_its_status_and_stderr() {
    let broken =
        "echo 'starting' >&2; echo 'error: cannot read manifest x.toml: denied' >&2; exit 7";
    let out = conformance(broken, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("CANNOT START"), "{text}");
    assert!(text.contains("exited with status 7"), "{text}");
    assert!(
        text.contains("starting | error: cannot read manifest x.toml: denied"),
        "{text}"
    );
    assert!(!text.contains("PASS") && !text.contains("FAIL"), "{text}");
    // The same in JSON.
    let out = conformance(broken, &["--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(report["exitCode"], 3);
    assert_eq!(report["cannotStart"]["status"], "exited with status 7");
    assert_eq!(report["results"], serde_json::json!([]));
}

#[test]
fn a_pod_that_exits_during_a_requirement_is_named_in_the_failure() {
    let args = ["--filter", "POD-RPC-014", "--framing", "ndjson"];
    let out = conformance(&planted("exit-after-parse-error"), &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("the pod exited with status 1"), "{text}");
}

#[test]
fn the_json_report_holds_every_result() {
    let out = conformance(&real_pod(), &["--filter", "POD-RPC-001", "--json"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(report["exitCode"], 0);
    assert_eq!(report["passed"], 2);
    let results = report["results"].as_array().expect("results");
    let framings: Vec<&str> = results
        .iter()
        .map(|r| r["framing"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(framings, ["ndjson", "headers"]);
    assert!(results
        .iter()
        .all(|r| r["id"] == "POD-RPC-001" && r["status"] == "pass" && r["reason"].is_null()));
}

#[test]
fn list_names_every_requirement_without_a_pod() {
    let out = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["conformance", "--list", "--json"])
        .output()
        .expect("run pod conformance --list");
    assert!(out.status.success());
    let listed: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    let listed = listed.as_array().expect("a list");
    assert!(listed.len() >= 50);
    let frame = listed
        .iter()
        .find(|r| r["id"] == "POD-FRAME-001")
        .expect("POD-FRAME-001 listed");
    assert_eq!(frame["framings"], serde_json::json!(["headers"]));
    assert!(listed
        .iter()
        .all(|r| r["spec"].as_str().is_some_and(|s| !s.is_empty())));
}

#[test]
fn a_filter_that_selects_nothing_is_an_error() {
    let out = conformance(&real_pod(), &["--filter", "POD-NOPE"]);
    assert_eq!(out.status.code(), Some(2));
}

fn real_acp() -> String {
    format!("'{}' acp", env!("CARGO_BIN_EXE_pod"))
}

#[test]
fn the_acp_section_passes_against_pod_acp_in_ndjson_only() {
    let out = conformance(&real_acp(), &["--protocol", "acp", "--strict"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    let passes = text.lines().filter(|l| l.starts_with("PASS ACP-")).count();
    assert!(passes >= 15, "{text}");
    assert_eq!(
        passes,
        text.lines()
            .filter(|l| l.starts_with("PASS ACP-") && l.contains("] [ndjson] "))
            .count(),
        "{text}"
    );
    assert!(!text.contains("POD-"), "only the ACP section runs: {text}");
    assert_eq!(
        text.lines().last(),
        Some(format!("{passes} passed, 0 failed, 0 warned").as_str()),
        "{text}"
    );
    // The default section is still the pod protocol: `pod acp` does not speak it.
    let out = conformance(
        &real_acp(),
        &["--filter", "POD-INIT-001", "--framing", "ndjson"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}

#[test]
fn the_acp_section_catches_an_agent_that_runs_a_rejected_call_and_says_it_failed() {
    let planted = format!(
        "python3 tests/conformance/mutants/plant.py acp-rejected-call-runs {}",
        real_acp()
    );
    let args = ["--protocol", "acp", "--filter", "ACP-PERM-004"];
    let out = conformance(&planted, &args);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // Everything on the wire looks right: only the workspace shows that the call ran.
    assert!(
        text.contains("FAIL ACP-PERM-004 [MUST] [ndjson]")
            && text.contains("rejected.txt exists in the workspace"),
        "{text}"
    );
}

#[test]
fn the_acp_section_lists_on_its_own_and_has_no_header_framing() {
    let out = Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["conformance", "--list", "--json", "--protocol", "acp"])
        .output()
        .expect("run pod conformance --list");
    assert!(out.status.success());
    let listed: Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    let listed = listed.as_array().expect("a list");
    assert!(listed.len() >= 15);
    assert!(listed.iter().all(|r| r["protocol"] == "acp"
        && r["id"].as_str().is_some_and(|id| id.starts_with("ACP-"))
        && r["framings"] == serde_json::json!(["ndjson"])));
    let out = conformance(&real_acp(), &["--protocol", "acp", "--framing", "headers"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
}

#[test]
fn the_pod_command_may_name_the_workspace() {
    // `{workspace}` is the folder holding the manifest as `pod.toml`.
    let cmd = format!(
        "'{}' serve --trust --manifest {{workspace}}/pod.toml",
        env!("CARGO_BIN_EXE_pod")
    );
    let out = conformance(&cmd, &["--filter", "POD-PERM-003", "--framing", "ndjson"]);
    assert!(out.status.success(), "{}", stdout(&out));
}
