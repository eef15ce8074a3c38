//! The soundness oracle for the shell analysis (docs/hardening.md, "The shell oracle").
//!
//! Command lines from a grammar-based generator (mixing every construct of the soundness
//! issue: substitutions, arithmetic, parameter operators, name-taking builtins, wrappers known and
//! unknown, interpreters, code-running arguments, redirections, here-documents) are decided by
//! the engine under two rule sets. Whatever the engine allows is then run by real bash in a
//! scratch folder under `strace -f`, and the trace is checked:
//!
//! - allow-list (`echo *`, `printf *`, `true`, `:` and writes to `out*`): an allowed command
//!   must exec nothing and write nothing but its redirection subjects;
//! - deny-list (default allow, `rm *` and `touch *` denied, writes to `*.env` denied): no `rm` or
//!   `touch` may appear in the trace of an allowed command, and no `*.env` file may be written.
//!
//! `oracle_smoke` runs a bounded number of cases in CI (`POD_ORACLE_CASES`, default 3000
//! generated lines); `oracle_long` is the long run (`cargo test --release --test engine
//! shell_oracle::oracle_long -- --ignored`, `POD_ORACLE_CASES` and `POD_ORACLE_SEED` to choose).
//! `known_classes` runs the issue's examples and every earlier finding through the same checks.
//! strace is required: `.ci/run` installs it.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pod::manifest::Manifest;
use pod::permission::Policy;
use pod::protocol::{Action, Decision};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ALLOW_LIST: &str = r#"
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
pattern = "true"
action = "allow"
[[permissions.rule]]
tool = "bash"
pattern = ":"
action = "allow"
[[permissions.rule]]
tool = "file_write"
pattern = "out*"
action = "allow"
"#;

const DENY_LIST: &str = r#"
[permissions]
default_action = "allow"
[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
[[permissions.rule]]
tool = "bash"
pattern = "touch *"
action = "deny"
[[permissions.rule]]
tool = "file_write"
pattern = "*.env"
action = "deny"
"#;

/// The programs the deny list names.
const DENIED_PROGRAMS: &[&str] = &["rm", "touch"];

struct Setup {
    _dir: tempfile::TempDir,
    policy: Policy,
}

fn setup(rules: &str, workspace: &Path) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pod.toml");
    std::fs::write(&path, rules).expect("write manifest");
    let manifest = Manifest::load(&path).expect("manifest");
    let policy = Policy::new(manifest.policy().rules().cloned(), workspace.to_path_buf());
    Setup { _dir: dir, policy }
}

/// What bash did.
#[derive(Debug, Default)]
struct Trace {
    /// Successful execve: (path, argv).
    execs: Vec<(String, Vec<String>)>,
    /// Paths opened for writing, created, removed, renamed or linked (as bash gave them).
    writes: Vec<String>,
    timed_out: bool,
}

fn strace() -> PathBuf {
    for dir in ["/usr/bin", "/bin", "/usr/local/bin"] {
        let p = Path::new(dir).join("strace");
        if p.exists() {
            return p;
        }
    }
    panic!("strace is not installed: the shell oracle needs it (.ci/run installs it with apt-get)");
}

/// A fresh scratch folder: `victim/f`, `notes`, `.env`, `secrets/key`.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("scratch");
    let p = dir.path();
    std::fs::create_dir_all(p.join("victim")).expect("victim");
    std::fs::write(p.join("victim/f"), "x").expect("victim/f");
    std::fs::write(p.join("notes"), "n").expect("notes");
    std::fs::write(p.join(".env"), "SECRET=1").expect(".env");
    std::fs::create_dir_all(p.join("secrets")).expect("secrets");
    std::fs::write(p.join("secrets/key"), "k").expect("key");
    std::fs::create_dir_all(p.join(".tmp")).expect(".tmp");
    dir
}

fn run_traced(command: &str, dir: &Path) -> Trace {
    let out = dir.join(".trace");
    let mut child = Command::new(strace())
        .args([
            "-f",
            "-qq",
            "-s",
            "256",
            "-e",
            "trace=execve,execveat,open,openat,creat,unlink,unlinkat,rename,renameat,renameat2,\
             mkdir,mkdirat,symlink,symlinkat,link,linkat,truncate",
            "-o",
        ])
        .arg(&out)
        .args(["bash", "-c", command])
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", dir)
        .env("TMPDIR", dir.join(".tmp"))
        .env("LANG", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn strace");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut timed_out = false;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            // Paces the poll for the exit; the deadline decides.
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                timed_out = true;
                // SAFETY: kill(2) on the child's own process group.
                unsafe {
                    libc::kill(-(child.id() as i32), libc::SIGKILL);
                }
                let _ = child.wait();
                break;
            }
        }
    }
    // Background jobs of the command may still run: end the group.
    // SAFETY: as above.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGKILL);
    }
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let mut trace = parse_trace(&text);
    trace.timed_out = timed_out;
    trace
}

/// Joins `<unfinished ...>` / `<... resumed>` halves and reads the calls that matter.
fn parse_trace(text: &str) -> Trace {
    let mut pending: std::collections::HashMap<String, String> = Default::default();
    let mut trace = Trace::default();
    for line in text.lines() {
        // strace pads the pid column: `812  execve(...)`.
        let (pid, rest) = line.split_once(' ').unwrap_or(("", line));
        let rest = rest.trim_start();
        let full = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid.to_string(), head.to_string());
            continue;
        } else if let Some(tail) = rest.strip_prefix("<... ") {
            let tail = tail.split_once("resumed>").map(|(_, t)| t).unwrap_or("");
            match pending.remove(pid) {
                Some(head) => format!("{head}{tail}"),
                None => continue,
            }
        } else {
            rest.to_string()
        };
        let Some((call, args)) = full.split_once('(') else {
            continue;
        };
        let result = full
            .rsplit_once(") = ")
            .map(|(_, r)| r.trim())
            .unwrap_or("");
        let ok = result.starts_with(|c: char| c.is_ascii_digit());
        if !ok {
            continue;
        }
        let strings = quoted_strings(args);
        match call {
            "execve" | "execveat" => {
                let path = strings.first().cloned().unwrap_or_default();
                let argv = strings.iter().skip(1).cloned().collect();
                trace.execs.push((path, argv));
            }
            "open" | "openat" | "creat" => {
                let writes = call == "creat"
                    || args.contains("O_WRONLY")
                    || args.contains("O_RDWR")
                    || args.contains("O_CREAT")
                    || args.contains("O_TRUNC");
                if writes {
                    trace.writes.extend(strings.first().cloned());
                }
            }
            // A link's target is not written; the new name is.
            "symlink" | "symlinkat" | "link" | "linkat" => {
                trace.writes.extend(strings.last().cloned())
            }
            "unlink" | "unlinkat" | "rename" | "renameat" | "renameat2" | "mkdir" | "mkdirat"
            | "truncate" => trace.writes.extend(strings),
            _ => {}
        }
    }
    trace
}

/// The double-quoted strings of an strace argument list, unescaped enough for paths.
fn quoted_strings(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut s = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        s.push(n);
                    }
                }
                '"' => break,
                c => s.push(c),
            }
        }
        out.push(s);
    }
    out
}

fn normalize(dir: &Path, p: &str) -> PathBuf {
    let joined = dir.join(p);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A finding of the allow-list check, if any.
fn allow_list_finding(decision: &Decision, trace: &Trace, dir: &Path) -> Option<String> {
    let execs: Vec<_> = trace.execs.iter().skip(1).collect();
    if !execs.is_empty() {
        return Some(format!("allowed, but ran {execs:?}"));
    }
    let allowed: BTreeSet<PathBuf> = decision
        .subjects
        .iter()
        .filter(|s| s.tool == "file_write")
        .map(|s| normalize(dir, &s.subject))
        .collect();
    let ignored = |p: &Path| {
        p.starts_with("/dev") || p.starts_with(dir.join(".tmp")) || p == dir.join(".trace")
    };
    let stray: Vec<_> = trace
        .writes
        .iter()
        .map(|w| normalize(dir, w))
        .filter(|w| !ignored(w) && !allowed.contains(w))
        .collect();
    if !stray.is_empty() {
        return Some(format!(
            "allowed, but wrote {stray:?} (subjects {allowed:?})"
        ));
    }
    None
}

/// A finding of the deny-list check, if any.
fn deny_list_finding(trace: &Trace) -> Option<String> {
    if let Some(w) = trace.writes.iter().find(|w| w.ends_with(".env")) {
        return Some(format!("allowed, but wrote {w}"));
    }
    let denied: Vec<_> = trace
        .execs
        .iter()
        .filter(|(path, argv)| {
            let base = path.rsplit('/').next().unwrap_or(path);
            let arg0 = argv.first().map(|a| a.rsplit('/').next().unwrap_or(a));
            DENIED_PROGRAMS.contains(&base) || arg0.is_some_and(|a| DENIED_PROGRAMS.contains(&a))
        })
        .collect();
    (!denied.is_empty()).then(|| format!("allowed, but ran a denied program: {denied:?}"))
}

#[derive(Debug, Default)]
struct Stats {
    generated: usize,
    allowed: [usize; 2],
    findings: Vec<String>,
}

/// Decides `command` under both rule sets and runs what is allowed under strace.
fn check(command: &str, stats: &mut Stats) {
    let dir = scratch();
    let root = dir.path().canonicalize().expect("canonical scratch");
    let sets = [
        ("allow-list", setup(ALLOW_LIST, &root)),
        ("deny-list", setup(DENY_LIST, &root)),
    ];
    stats.generated += 1;
    for (k, (name, s)) in sets.iter().enumerate() {
        let decision = s
            .policy
            .decide("bash", &serde_json::json!({ "command": command }));
        if decision.decision != Action::Allow {
            continue;
        }
        stats.allowed[k] += 1;
        let run = scratch();
        let run_root = run.path().canonicalize().expect("canonical");
        // Decide again against the folder bash runs in, so path subjects compare.
        let decision = setup(if k == 0 { ALLOW_LIST } else { DENY_LIST }, &run_root)
            .policy
            .decide("bash", &serde_json::json!({ "command": command }));
        if decision.decision != Action::Allow {
            continue;
        }
        let trace = run_traced(command, &run_root);
        let finding = if k == 0 {
            allow_list_finding(&decision, &trace, &run_root)
        } else {
            deny_list_finding(&trace)
        };
        if let Some(f) = finding {
            stats.findings.push(format!("[{name}] {command:?}: {f}"));
        }
    }
}

/// The grammar-based generator.
struct Gen {
    rng: StdRng,
}

impl Gen {
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.rng.gen_range(0..items.len())]
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.gen_range(0..100) < percent
    }

    fn payload(&mut self) -> String {
        self.pick(&["rm -rf victim", "touch pwned", "rm victim/f", "touch out9"])
            .to_string()
    }

    fn script(&mut self, depth: usize) -> String {
        let n = self.rng.gen_range(1..=3);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push_str(self.pick(&["; ", " && ", " || ", " | ", "\n", " & ", " |& "]));
            }
            s.push_str(&self.command(depth));
        }
        s
    }

    fn command(&mut self, depth: usize) -> String {
        let roll = self.rng.gen_range(0..100);
        if roll < 8 {
            return self.payload();
        }
        if roll < 22 && depth < 3 {
            return self.compound(depth + 1);
        }
        if roll < 30 {
            let a = self.assignment(depth);
            return if self.chance(50) {
                a
            } else {
                format!("{a} {}", self.simple(depth))
            };
        }
        self.simple(depth)
    }

    fn compound(&mut self, depth: usize) -> String {
        let s = self.script(depth);
        let w = self.word(depth);
        let p = self.payload();
        match self.rng.gen_range(0..18) {
            14 => format!("cat <<EOF\nE\\\nOF\n{p}\nEOF"),
            15 => format!("sh -c '{}'", s.replace('\'', "")),
            16 => format!("bash -c '{}' '{p}' x", s.replace('\'', "")),
            17 => format!("set -H; set -o history\n: {p}\n!:1-$"),
            0 => format!("{{ {s}; }}"),
            1 => format!("( {s} )"),
            2 => format!("if {s}; then {}; fi", self.script(depth)),
            3 => format!("for i in {w}; do {s}; done"),
            4 => format!("case {w} in *) {s};; esac"),
            5 => format!("f() {{ {s}; }}; f"),
            6 => format!("(( {w} ))"),
            7 => format!("[[ {w} -eq 0 ]]"),
            8 => format!("[[ -v {w} ]]"),
            9 => format!("(({s}) )"),
            10 => format!("while false; do {s}; done"),
            11 => format!("[[ {w} == x ]] && {s}"),
            12 => format!("echo $( ({s}) )"),
            _ => format!("{s} &"),
        }
    }

    fn assignment(&mut self, depth: usize) -> String {
        let name = self.pick(&[
            "x", "y", "a", "PS4", "BASH_ENV", "r", "a[0]", "a[x]", "OPT", "pc", "bash", "hBc",
            "ZIPOPT", "i",
        ]);
        let p = self.payload();
        let value = match self.rng.gen_range(0..12) {
            0 => format!("'$({p})'"),
            1 => format!("'a[$({p})]'"),
            2 => format!("'() {{ {p}; }}'"),
            3 => format!("\"$({p})\""),
            4 => format!("'{p}'"),
            5 => "-c".into(),
            6 => "-exec".into(),
            7 => "rm".into(),
            8 => format!("({} {})", self.word(depth), self.word(depth)),
            _ => self.word(depth),
        };
        format!("{name}={value}")
    }

    fn simple(&mut self, depth: usize) -> String {
        let head = if self.chance(55) {
            self.pick(&["echo", "printf '%s\\n'", "true", ":", "echo -n", "printf"])
                .to_string()
        } else {
            let p = self.payload();
            let prog = self.pick(&[
                "eval",
                "trap",
                "let",
                "declare -i",
                "read",
                "printf -v",
                "mapfile -C",
                "test -v",
                "set -x;",
                "shopt -s expand_aliases; alias echo=",
                "hash -p /usr/bin/rm",
                "source",
                ".",
                "exec",
                "command",
                "builtin",
                "env",
                "timeout 1",
                "nice",
                "nohup",
                "xargs",
                "find . -exec",
                "sed -n",
                "awk",
                "bash -c",
                "sh -c",
                "taskset 1",
                "setsid",
                "flock lock",
                "time",
                "declare -n",
                "export",
                "local",
                "unset",
                "cd victim;",
                "ln -sf .env out1;",
                "env -S",
                "command -v",
                "bash",
                "sh",
                "printf -v x",
                "printf -vx",
                "read -ax",
                "command printf -v x",
                "builtin read x",
                "wait -n -p",
                "declare -a",
                "sed",
                "split -l1",
                "zip x.zip",
                "git grep --no-index -O",
                "make --ev=",
                "ssh -4o",
                "python3 -i notes",
                "cp notes",
                "dd if=notes of=",
                "sort -o",
                "truncate -s 0",
                "ln -s notes",
                "tee",
                "touch",
                "mv notes",
                "install notes",
                "sh -c",
                "dash -c",
                "set -H;",
                "echo $((MACHTYPE)) $(( $- )) $(( $0 ))",
                "echo",
                "echo",
                "echo",
                ":",
            ]);
            if self.chance(30) {
                format!("{prog} {p}")
            } else {
                prog.to_string()
            }
        };
        let mut s = head;
        for _ in 0..self.rng.gen_range(0..4) {
            s.push(' ');
            s.push_str(&self.word(depth));
        }
        for _ in 0..self.rng.gen_range(0..2) {
            s.push(' ');
            s.push_str(&self.redirect(depth));
        }
        s
    }

    fn redirect(&mut self, depth: usize) -> String {
        let p = self.payload();
        match self.rng.gen_range(0..12) {
            0 => "> out1".into(),
            1 => ">> out2".into(),
            2 => "2> out3".into(),
            3 => "< notes".into(),
            4 => "> notes".into(),
            5 => "> $x".into(),
            6 => format!("<<E\n$({p})\nE\n"),
            7 => format!("<<'E'\n$({p})\nE\n"),
            8 => format!("<<< \"$({p})\""),
            9 => "> /proc/self/cwd/out4".into(),
            10 => format!("> >({})", self.script(depth + 1)),
            _ => "2>&1".into(),
        }
    }

    fn word(&mut self, depth: usize) -> String {
        let p = self.payload();
        let nested = depth < 3;
        match self.rng.gen_range(0..36) {
            0 => "hi".into(),
            1 => format!("'{p}'"),
            2 => format!("\"{p}\""),
            3 => "$x".into(),
            4 => "\"$x\"".into(),
            5 => "${x}".into(),
            6 => "${x:-d}".into(),
            7 => "${#x}".into(),
            8 => "${x@P}".into(),
            9 => "${!r}".into(),
            10 => "${a[x]}".into(),
            11 => "${a[0]}".into(),
            12 => "${x:1}".into(),
            13 => "$((x))".into(),
            14 => "$((1+2))".into(),
            15 if nested => format!("$({})", self.script(depth + 1)),
            16 if nested => format!("`{}`", self.script(depth + 1).replace('\\', "")),
            17 if nested => format!("<({})", self.script(depth + 1)),
            18 => "*".into(),
            19 => "v*".into(),
            20 => "{a,b}".into(),
            21 => "$'\\x72m'".into(),
            22 if nested => format!("$(({}) )", self.script(depth + 1)),
            23 => "${x:=y}".into(),
            24 => format!("\"${{x:-$({p})}}\""),
            25 => "\\$x".into(),
            26 => "$OPT".into(),
            27 => "-c".into(),
            28 => "-exec".into(),
            29 => "'{}'".into(),
            30 => "\\;".into(),
            31 => format!("$'{p}'"),
            32 => "a[$(echo 0)]".into(),
            33 => self
                .pick(&[
                    "{-v,x}",
                    "[-]i",
                    "{-e1e\\ rm\\ -rf\\ victim,x}",
                    "$0",
                    "$-",
                    "$_",
                    "x.env",
                    "'a[$(rm -rf victim)]'",
                    "$((MACHTYPE))",
                    "'s[a[b[;e rm -rf victim'",
                    "':a e touch pwned'",
                    "'a foo\\\\\ne touch pwned'",
                    "'1e touch pwned'",
                    "'s/x/y/w x.env'",
                    "--filter='rm -rf victim'",
                    "-vPS4",
                    "{--filter=touch\\ pwned,x}",
                    "'$(rm -rf victim)'",
                    "-i",
                    "[z]",
                    "x[z]",
                    "--upload-pac='touch pwned;:'",
                    "-O'touch pwned #'",
                    "--unzip-command='touch pwned #'",
                ])
                .to_string(),
            _ => "victim".into(),
        }
    }
}

fn cases() -> usize {
    std::env::var("POD_ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

fn run_generated(seed: u64, cases: usize) -> Stats {
    let mut gen = Gen {
        rng: StdRng::seed_from_u64(seed),
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
    let finding = deny_list_finding(&trace).expect("a deny-list finding");
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
