//! Permission decisions per second, and shell parsing alone for the same inputs.
//!
//! (a) a simple command with 10 rules, (b) a compound command of 10 sub-commands with 200
//! rules, (c) a path subject with 200 rules. `decide` includes parsing, so
//! `decide / parse` - 1 is what matching costs relative to parsing.

use std::hint::black_box;

/// The allocator the `pod` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{criterion_group, criterion_main, Criterion};
use pod::manifest::Manifest;
use pod::permission::shell;
use serde_json::json;

fn manifest(rules: usize) -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("[permissions]\ndefault_action = \"ask\"\n");
    for i in 0..rules {
        let (tool, pattern, action) = match i % 4 {
            0 => ("bash", format!("tool{i} *"), "allow"),
            1 => ("bash", format!("cmd{i} --flag *"), "deny"),
            2 => ("read", format!("dir{i}/*.rs"), "allow"),
            _ => ("file_write", format!("*.secret{i}"), "deny"),
        };
        text.push_str(&format!(
            "[[permissions.rule]]\ntool = \"{tool}\"\npattern = \"{pattern}\"\naction = \"{action}\"\n"
        ));
    }
    // The subjects of the inputs below match late rules, so matching scans the list.
    text.push_str(
        "[[permissions.rule]]\ntool = \"bash\"\npattern = \"git *\"\naction = \"allow\"\n",
    );
    let path = dir.path().join("pod.toml");
    std::fs::write(&path, text).expect("write manifest");
    let manifest = Manifest::load(&path).expect("manifest");
    (dir, manifest)
}

const SIMPLE: &str = "git status --short";
const COMPOUND: &str =
    "git status && git diff HEAD~1 | head -n 20; git log --oneline -5 || echo none; \
    cat README.md | grep pod > out.txt; ls -la src && wc -l src/*.rs; echo done";

fn bench(c: &mut Criterion) {
    let (_d10, m10) = manifest(10);
    let (_d200, m200) = manifest(200);
    let p10 = m10.policy();
    let p200 = m200.policy();
    let simple = json!({ "command": SIMPLE });
    let compound = json!({ "command": COMPOUND });
    let path = json!({ "path": "src/permission/../manifest/mod.rs" });

    let mut g = c.benchmark_group("permission");
    g.bench_function("a_simple_10_rules/decide", |b| {
        b.iter(|| p10.decide("bash", black_box(&simple)))
    });
    g.bench_function("a_simple_10_rules/parse", |b| {
        b.iter(|| shell::extract(black_box(SIMPLE)))
    });
    g.bench_function("b_compound_200_rules/decide", |b| {
        b.iter(|| p200.decide("bash", black_box(&compound)))
    });
    g.bench_function("b_compound_200_rules/parse", |b| {
        b.iter(|| shell::extract(black_box(COMPOUND)))
    });
    g.bench_function("c_path_200_rules/decide", |b| {
        b.iter(|| p200.decide("read", black_box(&path)))
    });
    g.bench_function("c_path_200_rules/subjects", |b| {
        b.iter(|| {
            pod::permission::path::subjects(
                black_box("src/permission/../manifest/mod.rs"),
                p200.workspace(),
            )
        })
    });
    g.finish();

    // Hostile and huge inputs: each decision must stay well under 100 ms of CPU.
    let mut worst = c.benchmark_group("worst_case");
    worst.sample_size(10);
    let nested_c = {
        // `bash -c` nested as deep as quoting allows, around a large payload: every level is
        // parsed again.
        let mut s = "echo ".to_string() + &"a ".repeat(20_000);
        for _ in 0..12 {
            s = format!("bash -c {}", shell_quote(&s));
        }
        s
    };
    let cases: Vec<(&str, String)> = vec![
        ("echo_a_800k", "echo a; ".repeat(100_000)),
        (
            "distinct_800k",
            (0..80_000).map(|i| format!("echo a{i}; ")).collect(),
        ),
        ("one_word_1m", format!("echo {}", "a".repeat(1_000_000))),
        (
            "brush_backtracking",
            "echo \"${M[}\"${M[}\"${M[}\"${M[}\"${M[}\"${M[}".repeat(1000),
        ),
        (
            "unknown_wrapper_100k_args",
            format!("taskset {}", "a ".repeat(100_000)),
        ),
        ("nested_bash_c", nested_c),
        ("deep_parens", "( ".repeat(60) + "x" + &" )".repeat(60)),
    ];
    for (name, command) in &cases {
        let input = json!({ "command": command });
        worst.bench_function(*name, |b| b.iter(|| p200.decide("bash", black_box(&input))));
    }
    worst.finish();
}

/// `s` single-quoted for bash.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

criterion_group!(benches, bench);
criterion_main!(benches);
