//! The conformance kit (`tests/conformance/`) through `pod conformance`: it passes against our
//! pod, and it catches deliberately broken pods (the Python fakes in `tests/conformance/fakes/`).

use std::process::{Command, Output};

fn conformance(pod_cmd: &str, filter: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pod"));
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["conformance", "--pod-cmd", pod_cmd]);
    if let Some(filter) = filter {
        command.args(["--filter", filter]);
    }
    command.output().expect("run pod conformance")
}

fn real_pod() -> String {
    format!(
        "'{}' serve --manifest {{manifest}}",
        env!("CARGO_BIN_EXE_pod")
    )
}

fn fake(script: &str) -> String {
    format!("python3 tests/conformance/fakes/{script} {}", real_pod())
}

#[test]
fn the_kit_passes_against_our_pod() {
    let out = conformance(&real_pod(), None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let passes = text.lines().filter(|l| l.starts_with("PASS POD-")).count();
    assert!(passes >= 20, "{text}");
    assert!(!text.contains("FAIL"), "{text}");
    assert!(
        text.lines()
            .last()
            .is_some_and(|l| l == format!("{passes} passed, 0 failed")),
        "{text}"
    );
    // The key negative requirement is part of the kit.
    assert!(text.contains("PASS POD-PERM-006 [MUST] no permissionRequest ever reaches a client without capabilities.approval"), "{text}");
}

#[test]
fn the_kit_catches_a_pod_that_sends_requests_to_a_client_without_approval() {
    let out = conformance(&fake("leak_requests.py"), Some("POD-PERM-006"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL POD-PERM-006 [MUST]"), "{text}");
    assert!(text.contains("permissionRequest"), "{text}");
    assert!(text.ends_with("0 passed, 1 failed\n"), "{text}");
}

#[test]
fn the_kit_catches_a_pod_that_reorders_tool_results() {
    let out = conformance(&fake("reorder_results.py"), Some("POD-EVT-005"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL POD-EVT-005 [MUST]"), "{text}");
    assert!(text.contains("arrived before"), "{text}");
    // The same fake passes a requirement it does not break: the failure is specific.
    let out = conformance(&fake("reorder_results.py"), Some("POD-PERM-003"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_filter_that_selects_nothing_is_an_error() {
    let out = conformance(&real_pod(), Some("POD-NOPE"));
    assert_eq!(out.status.code(), Some(2));
}
