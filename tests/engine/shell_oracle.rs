//! The soundness oracle for the shell analysis (docs/hardening.md, "The shell oracle").
//!
//! Command lines from a grammar-based generator (mixing every construct of the soundness
//! issue: substitutions, arithmetic, parameter operators, name-taking builtins, wrappers known and
//! unknown, interpreters, code-running arguments, redirections, here-documents; and bash's
//! constructs behind issue 26's classes: here-documents after `;` and `&`, process substitution
//! in every word position, every parameter-expansion operator with literal text, brace expansion
//! and splitting in option values, repeated options, interpreter option tables, awk's readings
//! of `/`, keywords such as `time`, programs that run programs, files programs write, `xargs`)
//! are decided by the engine under two rule sets. Whatever the engine allows is then run by real
//! bash in a scratch folder under `strace -f`, and the trace is checked:
//!
//! - allow-list (`echo *`, `printf *`, `true`, `:` and writes to `out*`): an allowed command
//!   must exec nothing and write nothing but its redirection subjects;
//! - deny-list (default allow, `rm *` and `touch *` denied, writes to `*.env` denied): no `rm` or
//!   `touch` may appear in the trace of an allowed command (as the program, a busybox applet or
//!   the program the dynamic loader runs), no `*.env` file may be written, and the scratch
//!   folder's `victim/f` must survive.
//!
//! `oracle_smoke` runs a bounded number of cases in CI (`POD_ORACLE_CASES`, default 4000
//! generated lines); `oracle_long` is the long run (`cargo test --release --test engine
//! shell_oracle::oracle_long -- --ignored`, `POD_ORACLE_CASES` and `POD_ORACLE_SEED` to choose). `known_classes` runs the
//! issue's examples and every earlier finding through the same checks. strace is required:
//! `.ci/run` installs it.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use pod::manifest::Manifest;
use pod::permission::{Policy, Rules};
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
    policy: Policy,
}

/// The compiled rules of `rules`, read once per rule set.
fn compiled(rules: &'static str) -> Option<Rules> {
    static CACHE: OnceLock<Mutex<HashMap<usize, Option<Rules>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = rules.as_ptr() as usize;
    let mut cache = cache.lock().expect("rules cache");
    cache
        .entry(key)
        .or_insert_with(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("pod.toml");
            std::fs::write(&path, rules).expect("write manifest");
            let manifest = Manifest::load(&path).expect("manifest");
            manifest.policy().rules().cloned()
        })
        .clone()
}

fn setup(rules: &'static str, workspace: &Path) -> Setup {
    Setup {
        policy: Policy::new(compiled(rules), workspace.to_path_buf()),
    }
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

/// A fresh scratch folder for `command`: `victim/f`, `notes`, `.env`, `secrets/key`, and an
/// empty git repository when the command uses git.
fn scratch_for(command: &str) -> tempfile::TempDir {
    let dir = scratch();
    if command.contains("git") {
        let ok = Command::new("git")
            .args(["init", "-q", "--template=", "."])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git init in the scratch folder");
    }
    dir
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

/// A finding of the deny-list check, if any: a denied program in the trace, a `*.env` file
/// written, or (in `dir`, when given) the victim deleted (which no command the deny-list
/// allows here does: only `rm` would).
fn deny_list_finding(trace: &Trace, dir: Option<&Path>) -> Option<String> {
    if let Some(w) = trace.writes.iter().find(|w| w.ends_with(".env")) {
        return Some(format!("allowed, but wrote {w}"));
    }
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let denied: Vec<_> = trace
        .execs
        .iter()
        .filter(|(path, argv)| {
            let program = base(path);
            let arg0 = argv.first().map(|a| base(a));
            // A busybox applet, or the program the dynamic loader runs, is argv[1].
            let runs_argv1 =
                program == "busybox" || (program.starts_with("ld-") && program.contains(".so"));
            let arg1 = argv.get(1).filter(|_| runs_argv1).map(|a| base(a));
            [Some(program), arg0, arg1]
                .iter()
                .flatten()
                .any(|p| DENIED_PROGRAMS.contains(&p.as_str()))
        })
        .collect();
    if !denied.is_empty() {
        return Some(format!("allowed, but ran a denied program: {denied:?}"));
    }
    let dir = dir?;
    if !dir.join("victim/f").exists() {
        return Some(format!(
            "allowed, but victim/f is gone (ran {:?})",
            trace.execs
        ));
    }
    None
}

#[derive(Debug, Default)]
struct Stats {
    generated: usize,
    allowed: [usize; 2],
    findings: Vec<String>,
}

/// A scratch folder nothing runs in, where lines are first decided.
fn pristine() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, root) = DIR.get_or_init(|| {
        let dir = scratch_for("git");
        let root = dir.path().canonicalize().expect("canonical scratch");
        (dir, root)
    });
    root
}

/// Decides `command` under both rule sets and runs what is allowed under strace.
fn check(command: &str, stats: &mut Stats) {
    let input = serde_json::json!({ "command": command });
    stats.generated += 1;
    for (k, (name, rules)) in [("allow-list", ALLOW_LIST), ("deny-list", DENY_LIST)]
        .into_iter()
        .enumerate()
    {
        let decision = setup(rules, pristine()).policy.decide("bash", &input);
        if decision.decision != Action::Allow {
            continue;
        }
        stats.allowed[k] += 1;
        let run = scratch_for(command);
        let run_root = run.path().canonicalize().expect("canonical");
        // Decide again against the folder bash runs in, so path subjects compare.
        let decision = setup(rules, &run_root).policy.decide("bash", &input);
        if decision.decision != Action::Allow {
            continue;
        }
        let trace = run_traced(command, &run_root);
        let finding = if k == 0 {
            allow_list_finding(&decision, &trace, &run_root)
        } else {
            deny_list_finding(&trace, Some(&run_root))
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
        if roll < 20 && depth < 3 {
            return self.compound(depth + 1);
        }
        if roll < 44 && depth < 3 {
            return self.construct(depth + 1);
        }
        if roll < 50 {
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

    /// The constructs of issue 26's classes, each with a payload where bash would run it.
    fn construct(&mut self, depth: usize) -> String {
        let p = self.payload();
        match self.rng.gen_range(0..13) {
            0 => self.heredoc_after_separator(&p, depth),
            1 => self.process_substitution_anywhere(&p),
            2 => self.parameter_with_text(),
            3 => self.option_value_that_splits(&p),
            4 => self.repeated_option(&p),
            5 => self.interpreter(&p),
            6 => {
                let keyword = self.pick(&[
                    "time",
                    "time -p",
                    "time --",
                    "time -p --",
                    "!",
                    "time !",
                    "time -- !",
                    "! time",
                ]);
                format!("{keyword} {}", self.command(depth))
            }
            7 => self.awk_reading(&p),
            8 => self.program_running_a_program(&p),
            9 => self.file_a_program_writes(),
            10 => self.xargs(&p),
            11 => self.computed_operand(&p),
            _ => {
                // An option or operand in a word that expands: what a program sees.
                let head = self.pick(&[
                    "find . -maxdepth 0",
                    "sort notes",
                    "git diff --no-index notes",
                    "timeout 1",
                    "env",
                    "nice",
                    "sed -n p",
                    "git -C",
                ]);
                format!("{head} {} {}", self.word(depth), self.word(depth))
            }
        }
    }

    /// A here-document whose command ends at `;` or `&`: its body follows the next newline.
    fn heredoc_after_separator(&mut self, p: &str, depth: usize) -> String {
        let head = self.pick(&["echo", "cat", ":", "true", "printf %s", "echo hi"]);
        let sep = self.pick(&[";", " ;", "&", " &", " && true;", " | cat;", "; echo a &"]);
        let next = if self.chance(50) {
            self.simple(depth)
        } else {
            self.pick(&["echo b", "true", ":", "wait"]).to_string()
        };
        let body = match self.rng.gen_range(0..6) {
            0 => format!("$({p})"),
            1 => format!("`{p}`"),
            2 => format!("${{x:-$({p})}}"),
            3 => format!("a $({p}) b"),
            4 => format!("$(({p}) )"),
            _ => "plain text".to_string(),
        };
        match self.rng.gen_range(0..4) {
            0 => format!("{head} <<E{sep} {next}\n{body}\nE"),
            1 => format!("{head} <<'E'{sep} {next}\n{body}\nE"),
            2 => format!("{head} <<-E{sep} {next}\n\t{body}\n\tE"),
            _ => format!("{head} <<A{sep} {head} <<B{sep}\n{body}\nA\n{body}\nB"),
        }
    }

    /// `<(...)` and `>(...)` in every word position bash reads them in (and some it does not).
    fn process_substitution_anywhere(&mut self, p: &str) -> String {
        let ps = format!("{}({p})", self.pick(&["<", ">"]));
        let set = if self.chance(30) { "x=a; " } else { "" };
        let line = match self.rng.gen_range(0..18) {
            0 => format!("[[ -n {ps} ]]"),
            1 => format!("[[ x < {ps} ]]"),
            2 => format!("[[ {ps} == x ]]"),
            3 => format!("echo ${{x:-{ps}}}"),
            4 => format!("echo ${{x:+{ps}}}"),
            5 => format!("echo ${{x/a/{ps}}}"),
            6 => format!("echo ${{x#{ps}}}"),
            7 => format!("y={ps}"),
            8 => format!("a=({ps})"),
            9 => format!("case {ps} in *) :;; esac"),
            10 => format!("for i in {ps}; do :; done"),
            11 => format!("cat <<< {ps}"),
            12 => format!("echo > {ps}"),
            13 => format!("echo ${{x:-a{ps}}}"),
            14 => format!("declare y={ps}"),
            15 => format!("echo \"${{x:-{ps}}}\""),
            16 => format!("echo a{ps}"),
            _ => format!("y={ps} true"),
        };
        format!("{set}{line}")
    }

    /// Every parameter-expansion operator with literal text, given to programs that read
    /// options.
    fn parameter_with_text(&mut self) -> String {
        let var = self.pick(&["x", "HOME", "PWD", "1", "y", "@"]);
        let op = self.pick(&[
            ":-", "-", ":=", "=", ":+", "+", ":?", "?", "#", "##", "%", "%%", "/a/", "//a/", "/#/",
            "/%/", "/*/", "^", "^^", ",", ",,", ":0:1",
        ]);
        let text = self.pick(&[
            "-exec rm -rf victim ;",
            "-exec touch pwned ;",
            "-delete",
            "-c",
            "-c 'rm -rf victim'",
            "--output=x.env",
            "-ox.env",
            "rm -rf victim",
            "-e 1e\\ touch\\ pwned",
            "-fprint x.env",
            "d",
            "",
        ]);
        let op = if op == ":0:1" {
            op.to_string()
        } else {
            format!("{op}{text}")
        };
        let head = self.pick(&[
            "find victim -maxdepth 0",
            "echo",
            "sort notes",
            "git diff --no-index notes .env",
            "env",
            "timeout 1",
            "bash",
            "sh",
            "printf",
            "xargs",
            "sed -n p notes",
            "nice",
        ]);
        let set = self.pick(&["", "", "x=a; ", "y=-; ", "set -- -c; "]);
        let quote = if self.chance(20) { "\"" } else { "" };
        format!("{set}{head} {quote}${{{var}{op}}}{quote}")
    }

    /// An option value that brace expansion, splitting or a glob makes several words.
    fn option_value_that_splits(&mut self, p: &str) -> String {
        let (prog, rest) = p.split_once(' ').unwrap_or((p, ""));
        match self.rng.gen_range(0..12) {
            0 => "find victim -maxdepth 0 -name {x,-delete}".into(),
            1 => "sort -o {out1,x.env} notes".into(),
            2 => "git -C {.,-c,core.fsmonitor=touch\\ pwned} status".into(),
            3 => "git -C {.,diff,--output=x.env} --no-index notes .env".into(),
            4 => format!("timeout {{1,{prog}}} {rest}"),
            5 => format!("d='1 {p}'; timeout $d"),
            6 => format!("env -u {{x,{prog}}} {rest}"),
            7 => format!("nice -n {{1,{prog}}} {rest}"),
            8 => format!("python3 -W {{ignore,-c}} 'import os; os.system(\"{p}\")'"),
            9 => "git -C * status".into(),
            10 => format!("stdbuf -o {{L,{prog}}} {rest}"),
            _ => format!("sqlite3 -separator {{x,-cmd,'.shell {p}'}} x.db 'select 1'"),
        }
    }

    /// An option given twice, where programs differ on which one counts.
    fn repeated_option(&mut self, p: &str) -> String {
        match self.rng.gen_range(0..8) {
            0 => format!("script -q -c true -c '{p}' /dev/null"),
            1 => format!("script -q -c '{p}' -c true /dev/null"),
            2 => "sort -o out1 -o x.env notes".into(),
            3 => "env -C secrets -C . tee x.env < notes".into(),
            4 => format!("echo '{p}' | xargs -I A -I B sh -c B"),
            5 => format!("sed -e p -e '1e {p}' notes"),
            6 => format!("timeout -s KILL -s TERM 1 {p}"),
            _ => format!("cp -t secrets -t . notes x.env; {p}"),
        }
    }

    /// An interpreter given options around its code: known, unknown, taking values.
    fn interpreter(&mut self, p: &str) -> String {
        match self.rng.gen_range(0..4) {
            0 => {
                let opts = self.pick(&[
                    "",
                    "-u",
                    "-X dev",
                    "-W ignore",
                    "--check-hash-based-pycs never",
                    "-Wignore",
                    "-bB",
                    "-I",
                    "-q",
                    "-E -s",
                    "-J x",
                ]);
                let code = format!("import os; os.system('{p}')");
                match self.rng.gen_range(0..3) {
                    0 => format!("python3 {opts} -c \"{code}\""),
                    1 => format!("python3 {opts} notes"),
                    _ => format!("python3 {opts} -m timeit -n 1 \"{code}\""),
                }
            }
            1 => {
                let opts = self.pick(&[
                    "",
                    "-C x",
                    "--title x",
                    "--no-warnings",
                    "--stack-size=100",
                    "--conditions x",
                    "--inspect-port 0",
                    "--frobnicate x",
                ]);
                let code = format!("require('child_process').execSync('{p}')");
                match self.rng.gen_range(0..3) {
                    0 => format!("node {opts} -e \"{code}\""),
                    1 => format!("node {opts} -pe \"{code}\""),
                    _ => format!("node {opts} notes"),
                }
            }
            2 => {
                let opts =
                    self.pick(&["", "-I x", "-Ix", "-l", "-w", "-ln", "-0777", "-Z", "-i.x"]);
                let code = format!("system('{p}')");
                match self.rng.gen_range(0..2) {
                    0 => format!("perl {opts} -e \"{code}\""),
                    _ => format!("perl {opts} notes"),
                }
            }
            _ => {
                let prog = self.pick(&["bash", "sh"]);
                let opts = self.pick(&["", "-e", "-o pipefail", "-x", "--norc", "-O extglob"]);
                format!("{prog} {opts} -c '{p}'")
            }
        }
    }

    /// awk programs where awks read `/` differently.
    fn awk_reading(&mut self, p: &str) -> String {
        let sys = format!("system(\"{p}\")");
        let awk = self.pick(&["awk", "mawk", "busybox awk"]);
        let program = match self.rng.gen_range(0..11) {
            0 => format!("BEGIN {{ length /#/; {sys} }}"),
            1 => format!("BEGIN {{ x = length /2; {sys} #/ }}"),
            2 => format!("BEGIN {{ a = 1; b = a++ /2; {sys} #/ }}"),
            3 => format!("BEGIN {{ getline /2; {sys} #/ }}"),
            4 => format!("BEGIN {{ x = \"a\" ~ /[]/]#/; {sys} }}"),
            5 => format!("BEGIN {{ x = \"a\" ~ /[[:alpha:]/]#/; {sys} }}"),
            6 => format!("BEGIN {{ x = 1 \\\n/2; {sys} #/\n}}"),
            7 => format!("BEGIN {{ x = \"a\" ~ /[^]/]#/; {sys} }}"),
            8 => "{ print length / 2 }".to_string(),
            9 => "BEGIN { print length(\"ab\") / 2 }".to_string(),
            _ => format!("BEGIN {{ x = \"a\" ~ /[/]#/; {sys} }}"),
        };
        format!("{awk} '{program}' notes < /dev/null")
    }

    /// A program that runs the program in its arguments, under a name or form the deny rules
    /// must still see.
    fn program_running_a_program(&mut self, p: &str) -> String {
        let form = self.pick(&[
            "setarch x86_64 /bin/",
            "setarch x86_64 -R ",
            "linux64 ",
            "busybox ",
            "/lib64/ld-linux-x86-64.so.2 /bin/",
            "/lib64/ld-linux-x86-64.so.2 --argv0 x /bin/",
            "time -- /bin/",
            "time -p -- ",
            "jobs -x ",
            "jobs -lx ",
            "command -p ",
            "nohup /bin/",
            "stdbuf -oL /bin/",
            "nice -n 1 /bin/",
            "exec -a x /bin/",
            "env -C secrets /bin/",
            "taskset 1 /bin/",
            "unshare -U /bin/",
            "/usr/bin/env ",
        ]);
        format!("{form}{p}")
    }

    /// A file a program writes, named as the program reads it.
    fn file_a_program_writes(&mut self) -> String {
        self.pick(&[
            "cp .env secrets",
            "cp notes x.env",
            "cp -t secrets .env",
            "cp --target-directory=secrets .env",
            "mv notes x.env",
            "ln .env secrets",
            "ln -s .env secrets/",
            "sort -ox.env notes",
            "sort --output=x.env notes",
            "shuf -o x.env notes",
            "uniq notes x.env",
            "env -C secrets tee x.env < notes",
            "env --chdir=secrets cp ../notes x.env",
            "git diff --no-index --output=x.env notes .env",
            "git -C secrets diff --no-index --output=x.env key ../notes",
            "dd if=notes of=x.env status=none",
            "tee x.env < notes",
            "install notes x.env",
            "install -t secrets .env",
            "mkdir d && cp .env d",
            "cp notes secrets/ && cp .env secrets/",
        ])
        .to_string()
    }

    /// xargs with a command, its input appended or put in place of a replace string.
    fn xargs(&mut self, p: &str) -> String {
        match self.rng.gen_range(0..10) {
            0 => "echo victim | xargs rm -rf".into(),
            1 => "echo victim | xargs -0 rm -rf".into(),
            2 => "echo '-exec rm -rf victim ;' | xargs find . -maxdepth 0".into(),
            3 => format!("echo '{p}' | xargs -I{{}} sh -c '{{}}'"),
            4 => format!("echo x | xargs -I{{}} {p}"),
            5 => format!("echo -c '{p}' | xargs sh"),
            6 => "echo victim | xargs --version".into(),
            7 => "find . -name notes | xargs grep -n n".into(),
            8 => "echo --output=x.env | xargs git diff --no-index notes .env".into(),
            _ => format!("echo '{p}' | xargs env"),
        }
    }

    /// Operands computed at run time: substitutions, globs.
    fn computed_operand(&mut self, p: &str) -> String {
        match self.rng.gen_range(0..10) {
            0 => "find victim $(echo -delete)".into(),
            1 => "find victim $(git merge-base HEAD HEAD 2>/dev/null)".into(),
            2 => "git diff $(git rev-parse --verify HEAD 2>/dev/null)".into(),
            3 => "git diff $(git log -1 --format=%s 2>/dev/null)".into(),
            4 => "echo > ./-delete; find victim -depth -o -name x -o -de*".into(),
            5 => "find . -name *.py".into(),
            6 => "echo > ./-delete; find victim -name x -o *".into(),
            7 => format!("timeout 1 $(echo {p})"),
            8 => "find victim -name *.env -o -name x".into(),
            _ => format!("timeout `echo 1` {p}"),
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
        .unwrap_or(4000)
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
