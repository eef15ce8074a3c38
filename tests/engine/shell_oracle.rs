//! The soundness oracle for the shell analysis (docs/hardening.md, "The shell oracle"), in CI.
//!
//! Command lines from the grammar-based generator (`fuzz/oracle_gen.rs`: every construct of the
//! soundness issue and bash's constructs behind issue 26's classes), driven here by a seeded
//! random generator, go through the oracle's check (`fuzz/oracle.rs`, shared with the `oracle`
//! fuzz target so that both check the same properties): the engine decides each under an
//! allow-list and a deny-list, whatever it allows is run by real bash in a scratch folder under
//! `strace -f` (contained by bubblewrap), and the trace is checked (the allow-list's command
//! execs nothing and writes only its redirection subjects; the deny-list's runs no `rm` or
//! `touch`, writes no `*.env`, and leaves `victim/f`).
//!
//! `oracle_smoke` runs a bounded number of cases in CI (`POD_ORACLE_CASES`, default 4000
//! generated lines); `oracle_long` is the long run (`cargo test --release --test engine
//! shell_oracle::oracle_long -- --ignored`, `POD_ORACLE_CASES` and `POD_ORACLE_SEED` to
//! choose). `known_classes` runs the issue's examples and every earlier finding through the
//! same checks; `fuzz_seeds_and_reproducers` replays the fuzz target's seeds and reproducers
//! (`fuzz/seeds/oracle/`, which `write_fuzz_seeds` writes) and a few hundred inputs of its
//! structure-aware modes; `replay_corpus` replays a whole fuzz corpus and counts what ran.
//! strace and bubblewrap are required: `.ci/run` installs them.

#[path = "../../fuzz/oracle.rs"]
mod oracle;

use std::path::{Path, PathBuf};
use std::time::Instant;

use oracle::grammar::{Choices, Gen};
use oracle::{
    allow_list_finding, check, deny_list_finding, line_of, run_traced, scratch, setup, Stats,
    ALLOW_LIST, MAX_INPUT,
};
use pod::protocol::Action;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The CI generator's choices: a seeded random generator.
impl Choices for StdRng {
    fn below(&mut self, n: u32) -> u32 {
        self.gen_range(0..n)
    }

    fn index(&mut self, len: usize) -> usize {
        self.gen_range(0..len)
    }
}

fn cases() -> usize {
    std::env::var("POD_ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000)
}

fn run_generated(seed: u64, cases: usize) -> Stats {
    let mut gen = Gen {
        choices: StdRng::seed_from_u64(seed),
    };
    let mut stats = Stats::default();
    for _ in 0..cases {
        let command = gen.script(0);
        check(&command, &mut stats);
    }
    stats
}

fn report(stats: &Stats, started: Instant) {
    eprintln!(
        "shell oracle: {} generated lines, {} allowed under the allow-list and {} under the \
         deny-list were run under strace in {:.1} s ({} killed strace); {} findings",
        stats.generated,
        stats.allowed[0],
        stats.allowed[1],
        started.elapsed().as_secs_f64(),
        stats.untraced.len(),
        stats.findings.len()
    );
    for f in &stats.findings {
        eprintln!("  {f}");
    }
    for line in &stats.untraced {
        eprintln!("  killed strace: {line}");
    }
}

#[test]
fn oracle_smoke() {
    let started = Instant::now();
    let stats = run_generated(0x5eed_0001, cases());
    report(&stats, started);
    assert!(
        stats.allowed[0] > 0 && stats.allowed[1] > 0,
        "nothing was allowed: the oracle checked nothing"
    );
    assert!(stats.findings.is_empty(), "{:#?}", stats.findings);
}

#[test]
#[ignore = "the long run: cargo test --release --test engine shell_oracle::oracle_long -- --ignored"]
fn oracle_long() {
    let seed = std::env::var("POD_ORACLE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let started = Instant::now();
    let stats = run_generated(seed, cases());
    report(&stats, started);
    assert!(stats.findings.is_empty(), "{:#?}", stats.findings);
}

/// The issue's examples, each class, and every earlier finding: none may be allowed with an
/// effect the rules forbid.
#[test]
fn known_classes() {
    let started = Instant::now();
    let mut stats = Stats::default();
    for command in KNOWN {
        check(command, &mut stats);
    }
    report(&stats, started);
    assert!(stats.findings.is_empty(), "{:#?}", stats.findings);
}

/// The classes of the soundness issue, as commands.
const KNOWN: &[&str] = &[
    "echo $(: <<EOF\n(\nEOF\nrm -rf victim)",
    "echo hi; ( (rm -rf victim) )",
    "echo hi; ((rm -rf victim) )",
    "x='$(rm -rf victim)'; echo \"${x@P}\"",
    "x='a[$(rm -rf victim)]'; echo $((x))",
    "x='a[$(rm -rf victim)]'; echo ${a[x]}",
    "x='a[$(rm -rf victim)]'; (( x ))",
    "x='a[$(rm -rf victim)]'; [[ $x -eq 0 ]]",
    "x='a[$(rm -rf victim)]'; let x",
    "x='a[$(rm -rf victim)]'; declare -i y=x",
    "r='a[$(rm -rf victim)]'; echo ${!r}",
    "declare -n r='a[$(rm -rf victim)]'; echo $r",
    "printf -v 'a[$(rm -rf victim)]' x",
    "echo x | read 'a[$(rm -rf victim)]'",
    "test -v 'a[$(rm -rf victim)]'",
    "[[ -v a[$(rm -rf victim)] ]]",
    "trap 'rm -rf victim' EXIT",
    "echo a | mapfile -C 'rm -rf victim' -c 1 x",
    "compgen -C 'rm -rf victim' x",
    "PS4='$(rm -rf victim)'; set -x; echo hi",
    "echo 'rm -rf victim' > out1; BASH_ENV=out1 bash -c true",
    "shopt -s expand_aliases; alias echo='rm -rf victim'\necho hi",
    "hash -p /usr/bin/rm echo; echo -rf victim",
    "env 'BASH_FUNC_echo%%=() { rm -rf victim; }' bash -c echo",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm -rf victim; false' git status",
    "echo victim | xargs --eof rm -rf",
    "echo victim | xargs --max-lines rm -rf",
    "OPT=-c; bash $OPT 'rm -rf victim'",
    "bash ${C:--c} 'rm -rf victim'",
    "X=-exec; find . $X rm -rf victim \\;",
    "find . $'-\\x65xec' rm -rf victim \\;",
    "env -S 'rm\\_-rf\\_victim'",
    "bash /dev/stdin <<< 'rm -rf victim'",
    "bash <(echo rm -rf victim)",
    "echo 'rm -rf victim' | source /dev/stdin",
    ". <(echo rm -rf victim)",
    "taskset 1 rm -rf victim",
    "unshare rm -rf victim",
    "flock out1 rm -rf victim",
    "setpriv rm -rf victim",
    "strace -o /dev/null rm -rf victim",
    "script -qc 'rm -rf victim' /dev/null",
    "rbash -c 'rm -rf victim'",
    "awk 'BEGIN{system(\"rm -rf victim\")}'",
    "sed -n '1e rm -rf victim' notes",
    "tar cf out5 --checkpoint=1 --checkpoint-action=exec='rm -rf victim' notes",
    "LESSOPEN='|rm -rf victim %s' less notes",
    "perl '-Mstrict;qx{rm -rf victim}' -e 1",
    "python3 -m timeit -n 1 'import os; os.system(\"rm -rf victim\")'",
    "ln -sf .env notes2; echo x > notes2",
    "cd secrets && echo x > key",
    "echo x > /proc/self/cwd/secrets/key",
    "X=rm; taskset 1 $X -rf victim",
    "for c in rm; do taskset 1 $c -rf victim; done",
    "f() { taskset 1 \"$@\"; }; f rm -rf victim",
    "echo rm -rf victim; $_ -rf victim",
    "echo `rm -rf victim`",
    "echo ${x:-$(rm -rf victim)}",
    "echo \"${x:-$(rm -rf victim)}\"",
    // Found by an attacker pass on the first version of the engine (docs/hardening.md).
    "cat <<EOF\nE\\\nOF\nrm -rf victim\nEOF",
    "echo <<EOF\nE\\\nOF\ntouch pwned\nEOF",
    "sed 's[a[b[;e rm -rf victim' notes",
    "sed -n 's[a[b[;w x.env' notes",
    "sed -n ':a e touch pwned' notes",
    "sed -n ':a w x.env' notes",
    "sed 't a e touch pwned\n:a' notes",
    "sed -n 'a foo\\\\\ne touch pwned' notes",
    "sed -n p {-e1e\\ rm\\ -rf\\ victim,x} notes",
    "echo >-i; sed s/a/b/ [-]i notes",
    "printf {-vPS4,'$(rm -rf victim)'}; set -x; true",
    "echo > -v; printf [-]v PS4 '$(rm -rf victim)'; set -x; true",
    "shopt -s nullglob; printf [z] -v PS4 '$(rm -rf victim)'; set -x; true",
    "[ {-v,'a[$(rm -rf victim)]'} ]; echo",
    "split -l1 {--filter=rm\\ -rf\\ victim,-a3} notes",
    "printf -vx '%s' 'a[$(rm -rf victim)]'; echo $((x))",
    "printf -vx 'a[$(touch pwned)]'; [[ $x -eq 1 ]]",
    "read -ax <<< 'a[$(rm${IFS}-rf${IFS}victim)]'; echo $((x))",
    "command printf -v x '%s' 'a[$(rm -rf victim)]'; echo $((x))",
    "builtin read x <<< 'a[$(rm -rf victim)]'; echo $((x))",
    "hBc='a[$(rm -rf victim)]'; echo $(( $- ))",
    "bash='a[$(rm -rf victim)]'; echo $(( $0 ))",
    "pc='a[$(rm -rf victim)]'; echo $((MACHTYPE))",
    "bash -c 'echo $(($0))' 'a[$(rm -rf victim)]'",
    "bash -c 'setpriv sh -c \"$0\"' 'rm -rf victim'",
    "declare -a 'x=([$(rm -rf victim)]=1)'",
    "sleep 0 & wait -n -p 'a[$(rm -rf victim)]'; echo",
    "set -o history; set -H\n: rm -rf victim\n!:1-$",
    "sh -c '((rm -rf victim))'",
    "sh -c '[[ a || rm -rf victim ]]'",
    "sh -c 'echo a &>/dev/null rm -rf victim; wait'",
    "ssh -4oProxyCommand='rm -rf victim' x",
    "git init -q r && git ls-remote --upload-pac='rm -rf victim;:' r",
    "git grep --no-index -O'rm -rf victim #' line",
    "make --ev='$(shell rm -rf victim)'",
    "make '-E$(shell rm -rf victim)'",
    "sqlite3 --cmd '.shell rm -rf victim' x.db 'select 1'",
    "split --f='rm -rf victim' notes",
    "zip --unzip-command='rm -rf victim #' -T x.zip notes",
    "ZIPOPT='-T -TT rm${IFS}-rf${IFS}victim;:' zip x.zip notes",
    "python3 -i notes <<'EOF'\nimport os;os.system('rm -rf victim')\nEOF",
    "cp notes x.env",
    "dd if=notes of=x.env",
    "ln -s notes x.env",
    "sort -o x.env notes",
    "truncate -s 0 x.env",
    // Issue 26's classes (tests/analysis_classes.rs runs them through `pod serve`).
    "echo hi <<EOF; echo hi\n$(rm -rf victim)\nEOF",
    "cat <<EOF & echo hi\n$(rm -rf victim)\nEOF",
    "echo hi; [[ -n <(rm -rf victim) ]]",
    "[[ x < >(rm -rf victim) ]]",
    "echo ${x:-<(rm -rf victim)}",
    "echo ${x:-a<(rm -rf victim)}",
    "x=a; echo ${x/a/<(rm -rf victim)}",
    "find . -maxdepth 0 ${x:--exec rm -rf victim ;}",
    "find . -maxdepth 0 ${x--exec touch pwned ;}",
    "git -C {.,-c,core.fsmonitor=rm\\ -rf\\ victim} status",
    "git -C {.,diff,--output=x.env} --no-index notes .env",
    "sqlite3 -separator {x,-cmd,'.shell rm -rf victim'} x.db 'select 1'",
    "env -u {x,rm} -rf victim",
    "awk 'BEGIN { length /#/; system(\"rm -rf victim\") }'",
    "awk 'BEGIN { x = \"a\" ~ /[]/]#/; system(\"rm -rf victim\") }'",
    "awk 'BEGIN { x = \"a\" ~ /[[:alpha:]/]#/; system(\"rm -rf victim\") }'",
    "awk 'BEGIN { x = 1 \\\n/2; system(\"rm -rf victim\") #/\n}'",
    "busybox awk 'BEGIN { a = 1; b = a++ /2; system(\"rm -rf victim\") #/ }'",
    "node -C x -e \"require('child_process').execSync('rm -rf victim')\"",
    "python3 --check-hash-based-pycs never -c \"import os; os.system('rm -rf victim')\"",
    "script -q -c true -c 'rm -rf victim' /dev/null",
    "setarch x86_64 /bin/rm -rf victim",
    "busybox rm -rf victim",
    "/lib64/ld-linux-x86-64.so.2 /bin/rm -rf victim",
    "time -- /bin/rm -rf victim",
    "jobs -x rm -rf victim",
    "cp .env secrets",
    "sort -ox.env notes",
    "env -C secrets tee x.env < notes",
    "git diff --no-index --output=x.env notes .env",
    "echo victim | xargs rm -rf",
    "echo '-exec rm -rf victim ;' | xargs find . -maxdepth 0",
    "echo 'rm -rf victim' | xargs -I{} sh -c '{}'",
    // Found by the long run of the extended generator: bash 5.2 rejects `\;` in an array
    // inside `$( )`, then runs the lines after the error.
    "echo $( (y=(victim \\;)) ) ; nice true <<'E'\n$(rm -rf victim)\nE\n",
    // Found by the fuzz target: the kernel reads these script paths as stdin.
    "bash //////dev/stdin <<< 'rm -rf victim'",
    "bash /./dev/stdin <<< 'rm -rf victim'",
    "cd /dev && bash stdin <<< \"rm -rf $OLDPWD/victim\"",
    "cd /proc/self/fd && bash 0 <<< \"rm -rf $OLDPWD/victim\"",
];

/// The checks themselves can fail: a command that runs `rm` and writes outside its subjects,
/// traced as if the engine had allowed it, is reported by both.
#[test]
fn the_checks_report_what_bash_did() {
    let dir = scratch();
    let root = dir.path().canonicalize().expect("canonical");
    let command = "echo $(rm -rf victim) > out1; echo x > notes";
    let decision = setup(ALLOW_LIST, &root)
        .policy
        .decide("bash", &serde_json::json!({ "command": command }));
    let trace = run_traced(command, &root);
    assert!(!root.join("victim").exists(), "the command did run");
    let finding = allow_list_finding(&decision, &trace, &root).expect("an allow-list finding");
    assert!(finding.contains("rm"), "{finding}");
    let finding = deny_list_finding(&trace, None).expect("a deny-list finding");
    assert!(finding.contains("rm"), "{finding}");
    // A command that does only what its subjects say is not a finding.
    let dir = scratch();
    let root = dir.path().canonicalize().expect("canonical");
    let command = "echo hi > out1; printf '%s' $(echo a)";
    let decision = setup(ALLOW_LIST, &root)
        .policy
        .decide("bash", &serde_json::json!({ "command": command }));
    assert_eq!(decision.decision, Action::Allow);
    let trace = run_traced(command, &root);
    assert_eq!(allow_list_finding(&decision, &trace, &root), None);
    assert!(root.join("out1").exists());
}

/// What the checks read from a trace: short calls (strace pads their result: `mkdir("d",
/// 0777)        = 0`), the program that made each change, and whether the trace is whole.
#[test]
fn the_trace_reads_what_the_checks_need() {
    use oracle::{parse_trace, ChangeKind};
    let dir = scratch();
    let root = dir.path().canonicalize().expect("canonical");
    let trace = run_traced("mkdir d; link notes l; mv victim v", &root);
    let has = |kind, path: &str, program: &str| {
        trace
            .changes
            .iter()
            .any(|c| c.kind == kind && c.path == path && c.program == program)
    };
    assert!(has(ChangeKind::Mkdir, "d", "mkdir"), "{trace:#?}");
    assert!(has(ChangeKind::Write, "l", "link"), "{trace:#?}");
    assert!(has(ChangeKind::Remove, "victim", "mv"), "{trace:#?}");
    assert!(trace.complete, "{trace:#?}");
    // mv may remove the victim under the deny-list.
    assert_eq!(deny_list_finding(&trace, Some(&root)), None);
    // A line that kills strace runs on untraced (or is ended with the sandbox, whichever
    // comes first): the trace says it is not whole, and holds nothing of what came after.
    let trace = run_traced("kill -9 $PPID; echo x > out1", &root);
    assert!(!trace.complete, "{trace:#?}");
    assert!(
        !trace.changes.iter().any(|c| c.path == "out1"),
        "{trace:#?}"
    );

    // The victim removed by the shell itself (a loadable builtin `rm`; none is installed
    // here, so the trace is written out) is a finding, however it was named; by a program
    // the deny-list allows, it is not.
    let dir = scratch();
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::remove_dir_all(root.join("victim")).expect("remove the victim");
    let shell =
        "10 execve(\"/usr/bin/bash\", [\"bash\", \"-c\", \"enable -f rm rm; rm -rf victim\"], \
                 0x0 /* 4 vars */) = 0\n\
                 10 openat(AT_FDCWD, \"victim\", O_RDONLY|O_DIRECTORY) = 3\n\
                 10 unlinkat(3, \"f\", 0)           = 0\n\
                 10 +++ exited with 0 +++\n";
    let trace = parse_trace(shell);
    assert!(has_removal(&trace, "f", "bash"), "{trace:#?}");
    let finding = deny_list_finding(&trace, Some(&root)).expect("a finding");
    assert!(finding.contains("victim/f is gone"), "{finding}");
    // A forked subshell of bash is bash; the child of an exec'd `find` is find.
    let forked = "10 execve(\"/usr/bin/bash\", [\"bash\"], 0x0 /* 4 vars */) = 0\n\
                  10 clone(child_stack=NULL, flags=SIGCHLD) = 11\n\
                  11 unlink(\"victim/f\")                  = 0\n\
                  11 +++ exited with 0 +++\n\
                  10 +++ exited with 0 +++\n";
    let trace = parse_trace(forked);
    assert!(has_removal(&trace, "victim/f", "bash"), "{trace:#?}");
    assert!(deny_list_finding(&trace, Some(&root)).is_some());
    let find = forked.replace(
        "10 clone(",
        "10 execve(\"/usr/bin/find\", [\"find\"], 0x0) = 0\n10 clone(",
    );
    let trace = parse_trace(&find);
    assert!(has_removal(&trace, "victim/f", "find"), "{trace:#?}");
    assert_eq!(deny_list_finding(&trace, Some(&root)), None);
    // A trace cut short (strace killed) excuses nothing and accuses nothing.
    let cut = forked.replace("10 +++ exited with 0 +++\n", "");
    let trace = parse_trace(&cut);
    assert!(!trace.complete);
    assert_eq!(deny_list_finding(&trace, Some(&root)), None);
    // Under the deny-list a `*.env` file written by the shell is a finding; by a program
    // whose writes the engine does not model (`tar cf x.env`), the sandbox's business.
    let write = |program: &str| {
        format!(
            "10 execve(\"/usr/bin/{program}\", [\"{program}\"], 0x0) = 0\n\
             10 openat(AT_FDCWD, \"x.env\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3\n\
             10 +++ exited with 0 +++\n"
        )
    };
    let finding = deny_list_finding(&parse_trace(&write("bash")), None).expect("a finding");
    assert!(finding.contains("x.env"), "{finding}");
    assert!(deny_list_finding(&parse_trace(&write("cp")), None).is_some());
    assert_eq!(deny_list_finding(&parse_trace(&write("tar")), None), None);
}

fn has_removal(trace: &oracle::Trace, path: &str, program: &str) -> bool {
    trace
        .changes
        .iter()
        .any(|c| c.kind == oracle::ChangeKind::Remove && c.path == path && c.program == program)
}

/// The `oracle` fuzz target's seeds and every reproducer it found (`fuzz/seeds/oracle/`), and
/// inputs of its two structure-aware modes, through the fuzz target's own decoding
/// ([`line_of`]) and the same check.
#[test]
fn fuzz_seeds_and_reproducers() {
    let started = Instant::now();
    let mut inputs: Vec<Vec<u8>> = seed_files()
        .iter()
        .map(|p| std::fs::read(p).expect("seed"))
        .collect();
    assert!(
        inputs.len() >= KNOWN.len(),
        "fuzz/seeds/oracle/ is missing its seeds"
    );
    let seeds = inputs.len();
    let mut rng = StdRng::seed_from_u64(0x0f22_0026);
    for i in 0..150 {
        inputs.push(random_input(&mut rng, if i % 3 == 0 { b'm' } else { b'g' }));
    }
    let mut stats = Stats::default();
    for (i, data) in inputs.iter().enumerate() {
        let line = line_of(data);
        assert!(
            line.is_some() || i >= seeds,
            "a seed that is no line: {:?}",
            String::from_utf8_lossy(data)
        );
        if let Some(line) = line {
            check(&line, &mut stats);
        }
    }
    report(&stats, started);
    assert!(
        stats.allowed[0] > 0 && stats.allowed[1] > 0,
        "nothing was allowed: the replay checked nothing"
    );
    assert!(stats.findings.is_empty(), "{:#?}", stats.findings);
}

/// What each mode of a fuzz input stands for.
#[test]
fn fuzz_inputs_become_lines() {
    assert_eq!(line_of(b"recho hi").as_deref(), Some("echo hi"));
    assert_eq!(line_of(b"").as_deref(), None);
    assert_eq!(line_of(b"r\xff").as_deref(), None, "not UTF-8");
    assert_eq!(
        line_of(b"recho \0").as_deref(),
        None,
        "bash never gets a NUL"
    );
    let long = [b'r']
        .into_iter()
        .chain([b'a'; MAX_INPUT])
        .collect::<Vec<_>>();
    assert_eq!(line_of(&long), None, "over the input bound");
    // Past its bytes every choice is the first: one command, the first payload.
    assert_eq!(line_of(b"g").as_deref(), Some("rm -rf victim"));
    // The same choices as a seeded generator's make the same line.
    let mut rng = StdRng::seed_from_u64(1);
    let bytes: Vec<u8> = (0..400).map(|_| rng.gen()).collect();
    let line = line_of(&[&b"g"[..], &bytes].concat()).expect("a line");
    let mut gen = Gen {
        choices: oracle::grammar::Bytes::new(&bytes),
    };
    assert_eq!(line, gen.script(0));
    // Splice: no choice bytes, so the line is the first payload, the text goes in at 0 and
    // replaces nothing.
    assert_eq!(
        line_of(b"m\0echo; ").as_deref(),
        Some("echo; rm -rf victim")
    );
    // Five choice bytes: one command, a payload, the first payload; then the text goes in at
    // byte 3 and replaces 3 bytes.
    assert_eq!(
        line_of(b"m\x05\x00\x00\x00\x03\x03X").as_deref(),
        Some("rm X victim")
    );
}

/// A fuzz input of the given structure-aware mode with random choice bytes.
fn random_input(rng: &mut StdRng, mode: u8) -> Vec<u8> {
    let mut data = vec![mode];
    if mode == b'm' {
        data.push(rng.gen_range(0..64));
        let n = usize::from(data[1]);
        data.extend((0..n).map(|_| rng.gen::<u8>()));
        let text = *[
            "; echo hi",
            " $(rm -rf victim)",
            " > out1",
            "\n",
            " | tee x.env",
            "",
        ]
        .get(rng.gen_range(0..6))
        .expect("a text");
        data.extend(text.as_bytes());
    } else {
        let n = rng.gen_range(1..200);
        data.extend((0..n).map(|_| rng.gen::<u8>()));
    }
    data
}

fn seed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/oracle")
}

fn seed_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(seed_dir())
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Writes the `oracle` fuzz target's generated seeds (`fuzz/seeds/oracle/`): every
/// `known_classes` line and 60 generated lines as raw lines (`r`), 30 inputs of the generator
/// mode (`g`) and 10 of the splice mode (`m`). Reproducers (`regression-*`) are kept.
/// `cargo test --test engine shell_oracle::write_fuzz_seeds -- --ignored`.
#[test]
#[ignore = "writes fuzz/seeds/oracle/"]
fn write_fuzz_seeds() {
    let dir = seed_dir();
    std::fs::create_dir_all(&dir).expect("seed folder");
    for path in seed_files() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.starts_with("regression-") {
            std::fs::remove_file(&path).expect("old seed");
        }
    }
    let write = |name: String, data: &[u8]| std::fs::write(dir.join(name), data).expect("seed");
    for (i, line) in KNOWN.iter().enumerate() {
        write(format!("known-{i:03}"), format!("r{line}").as_bytes());
    }
    let mut gen = Gen {
        choices: StdRng::seed_from_u64(0x5eed_5eed),
    };
    for i in 0..60 {
        write(
            format!("gen-{i:03}"),
            format!("r{}", gen.script(0)).as_bytes(),
        );
    }
    let mut rng = StdRng::seed_from_u64(0x5eed_0027);
    for i in 0..30 {
        write(format!("g-{i:03}"), &random_input(&mut rng, b'g'));
    }
    for i in 0..10 {
        write(format!("m-{i:03}"), &random_input(&mut rng, b'm'));
    }
}

/// Replays a fuzz corpus (every file of the folder `POD_ORACLE_CORPUS`) through the same
/// decoding and check, and reports how many of its lines each rule set allowed and ran: what a
/// fuzz run's execs amounted to. `POD_ORACLE_CORPUS=fuzz/corpus/oracle cargo test --test engine
/// shell_oracle::replay_corpus -- --ignored --nocapture`.
#[test]
#[ignore = "replays a fuzz corpus"]
fn replay_corpus() {
    let dir = PathBuf::from(std::env::var("POD_ORACLE_CORPUS").unwrap_or_default());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("POD_ORACLE_CORPUS={dir:?}: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    let started = Instant::now();
    let mut stats = Stats::default();
    for path in &files {
        if let Some(line) = line_of(&std::fs::read(path).expect("input")) {
            check(&line, &mut stats);
        }
    }
    eprintln!("{} inputs in {dir:?}", files.len());
    report(&stats, started);
    assert!(stats.findings.is_empty(), "{:#?}", stats.findings);
}

/// Triage: checks the fuzz inputs named in `POD_ORACLE_INPUTS` (files, `:`-separated; a
/// reproducer libFuzzer saved, say) or the lines of `POD_ORACLE_LINES` (separated by a `␞`
/// line), printing each line's decisions, trace and findings.
/// `POD_ORACLE_INPUTS=fuzz/artifacts/oracle/crash-… cargo test --test engine
/// shell_oracle::triage -- --ignored --nocapture`.
#[test]
#[ignore = "triage of chosen inputs"]
fn triage() {
    let mut lines: Vec<String> = std::env::var("POD_ORACLE_INPUTS")
        .unwrap_or_default()
        .split(':')
        .filter(|p| !p.is_empty())
        .filter_map(|p| line_of(&std::fs::read(p).expect("input")))
        .collect();
    if let Ok(text) = std::env::var("POD_ORACLE_LINES") {
        lines.extend(text.split("\n␞\n").map(String::from));
    }
    for line in lines {
        eprintln!("== {line:?}");
        for (name, rules) in [("allow-list", ALLOW_LIST), ("deny-list", oracle::DENY_LIST)] {
            let run = oracle::scratch_for(&line);
            let root = run.path().canonicalize().expect("canonical");
            let decision = setup(rules, &root)
                .policy
                .decide("bash", &serde_json::json!({ "command": line }));
            eprintln!("  [{name}] {:?}", decision.decision);
            if decision.decision != Action::Allow {
                continue;
            }
            let trace = run_traced(&line, &root);
            eprintln!("    {trace:#?}");
        }
        let mut stats = Stats::default();
        check(&line, &mut stats);
        eprintln!("  findings: {:#?}", stats.findings);
    }
}
