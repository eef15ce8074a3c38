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
//! structure-aware modes. strace and bubblewrap are required: `.ci/run` installs them.

#[path = "../../fuzz/oracle.rs"]
mod oracle;

use std::time::Instant;

use oracle::grammar::{Choices, Gen};
use oracle::{
    allow_list_finding, check, deny_list_finding, run_traced, scratch, setup, Stats, ALLOW_LIST,
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
         deny-list were run under strace in {:.1} s; {} findings",
        stats.generated,
        stats.allowed[0],
        stats.allowed[1],
        started.elapsed().as_secs_f64(),
        stats.findings.len()
    );
    for f in &stats.findings {
        eprintln!("  {f}");
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
    let mut stats = Stats::default();
    for command in KNOWN {
        check(command, &mut stats);
    }
    report(&stats, Instant::now());
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
