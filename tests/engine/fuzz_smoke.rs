//! CI smoke of the four fuzz targets (`fuzz/`, cargo-fuzz needs nightly): the same harness
//! (`fuzz/harness.rs`) driven by proptest with arbitrary bytes and JSON-ish / shell-ish /
//! TOML-ish / YAML-ish strings, a few hundred cases each. See `docs/hardening.md`.

#[path = "../../fuzz/harness.rs"]
mod harness;

use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// JSON-RPC-looking lines: valid and broken messages for the six methods, odd ids and params.
fn jsonrpc_line() -> impl Strategy<Value = String> {
    let method = prop_oneof![
        Just("initialize"),
        Just("run"),
        Just("cancel"),
        Just("permissionReply"),
        Just("history"),
        Just("nope"),
    ];
    let id = prop_oneof![
        Just("1".to_string()),
        Just("\"x\"".to_string()),
        Just("null".to_string()),
        Just("1.5".to_string()),
        Just("123456789012345678901234567890".to_string()),
        Just("true".to_string()),
        Just("{}".to_string()),
        Just("[]".to_string()),
    ];
    let value = prop_oneof![
        Just("null".to_string()),
        Just("1".to_string()),
        Just("\"s\"".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("[{\"type\":\"text\",\"text\":\"hi\"}]".to_string()),
        Just("[{\"type\":\"skill\",\"name\":\"x\"}]".to_string()),
        "[a-z\"{}\\[\\]:,0-9 ]{0,12}".prop_map(|s| s),
    ];
    let field = prop_oneof![
        Just("input"),
        Just("requestId"),
        Just("decision"),
        Just("message"),
        Just("protocolVersion"),
        Just("capabilities"),
    ];
    (method, id, field, value, any::<bool>()).prop_map(|(m, id, f, v, batch)| {
        let one = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{m}","params":{{"{f}":{v}}}}}"#);
        if batch {
            format!("[{one},{one}]")
        } else {
            one
        }
    })
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn dispatch_survives_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        harness::dispatch(&data);
    }

    #[test]
    fn dispatch_survives_jsonrpc_like_lines(
        lines in proptest::collection::vec(jsonrpc_line(), 1..6),
        headers in any::<bool>(),
    ) {
        let mut data = vec![u8::from(headers)];
        for line in lines {
            if headers {
                data.extend(format!("Content-Length: {}\r\n\r\n", line.len()).as_bytes());
                data.extend(line.as_bytes());
            } else {
                data.extend(line.as_bytes());
                data.push(b'\n');
            }
        }
        harness::dispatch(&data);
    }
}

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn manifest_parse_never_panics(text in "(\\[\\[?[a-z.]{0,12}\\]\\]?\n|[a-z_]{1,10} = (\"[^\"\n]{0,10}\"|[0-9]{1,3}|\\[\\]|true)\n|\\PC{0,8}){0,10}") {
        harness::manifest(text.as_bytes());
    }

    #[test]
    fn manifest_parse_never_panics_on_bytes(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        harness::manifest(&data);
    }

    #[test]
    fn shell_extract_and_decide_never_panic(text in "([a-z./*~$(){}<>|&;!'\"`\\\\=\\- \n]{0,40}|\\PC{0,40})") {
        harness::shell(text.as_bytes());
    }

    #[test]
    fn shell_extract_never_panics_on_bytes(data in proptest::collection::vec(any::<u8>(), 0..128)) {
        harness::shell(&data);
    }

    #[test]
    fn frontmatter_parse_never_panics(text in "(---\n)?([a-z-]{0,12}: ?[^\n]{0,16}\n|  - [^\n]{0,8}\n|---\n|\\PC{0,8}){0,8}") {
        harness::frontmatter(text.as_bytes());
    }

    #[test]
    fn frontmatter_parse_never_panics_on_bytes(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        harness::frontmatter(&data);
    }
}

/// Reproducers the fuzzers found, replayed through the same harness.
#[test]
fn fuzz_regressions() {
    let started = std::time::Instant::now();
    // shell: unclosed `(` runs made the earlier parser (brush-parser) backtrack exponentially
    // (>10 s for 36 bytes); quoted array indexes took it 25 s for 41 bytes.
    harness::shell(b"((((0((((((0(((((\0(((({(\0(((({");
    harness::shell("(".repeat(64).as_bytes());
    harness::shell(
        "echo \"${M[}\"${M[}\"${M[}\"${M[}\"${M[}\"${M[}"
            .repeat(8)
            .as_bytes(),
    );
    // shell: brush-parser panicked on an io-number over i32.
    harness::shell(b"44444444444444444444444444444444444<4444W[,$[r\x01");
    // shell: a here-doc with an empty delimiter then a comment at the end looped forever.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        harness::shell(b"''<<''&#mfe");
        harness::shell(b"cat <<\"\" #x");
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_secs(5)).is_ok(),
        "the empty here-doc delimiter case hangs"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
