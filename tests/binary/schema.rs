//! The checked-in `schema/` matches the protocol types (`pod schema --check`).

#[test]
fn schema_is_up_to_date() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["schema", "--check"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run pod schema --check");
    assert!(
        output.status.success(),
        "schema/ is stale; run `cargo run -- schema`:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
