//! What the exec gate costs, gated against ungated in the same run, interleaved in rounds so the
//! ratios hold on a noisy machine:
//!
//! - `per exec`: `bash -c 'for i in $(seq 300); do /bin/true; done'`, 300 execs each stopped,
//!   read from `/proc`, decided by the permission engine (`Policy::decide_exec`, a deny-list of
//!   three rules, the aliases too) and resumed; the difference over 300 is the cost of one
//!   stopped exec (goal: under 100 µs);
//! - `build`: `make -j1` of 30 C files, each `cc -c` (cc, cc1, as: three execs and their forks)
//!   and a link, the build-like load (goal: within 10% of ungated);
//!
//! - `env true`: 100 × `env true`, whose search of PATH (`execvp`) makes an exec that fails in
//!   each folder before the one holding `true`;
//! - `in namespaces`: the `per exec` loop inside the namespace sandbox (`Sandbox::command`,
//!   bubblewrap; its exec of the call's shell is stopped too), gated against ungated;
//!
//! the pair's order alternating round by round; each unpinned, then with the whole process (the tracer threads and every child) pinned to
//! CPU 0. `cargo bench --bench exec_gate`; `POD_BENCH_RUNS` rounds (default 3). Under `cargo
//! test --all-targets` (no `--bench` argument) it only checks that it starts.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pod::manifest::{SandboxConfig, SandboxMode};
use pod::permission::{Policy, RuleSpec, Rules};
use pod::protocol::Action;
use pod::protocol::{NetworkAccess, SandboxKind};
use pod::sandbox::gate::{Exec, ExecJudge, GatedProcess, Verdict};
use pod::sandbox::Sandbox;

/// Decides as the runtime's judge does for a deny-list (every exec decided, aliases too).
#[derive(Debug)]
struct Judge {
    policy: Policy,
}

impl ExecJudge for Judge {
    fn judge(&self, exec: &Exec) -> Verdict {
        for argv in std::iter::once(&exec.argv).chain(&exec.aliases) {
            let d = self.policy.decide_exec("bash", argv);
            if d.decision == Action::Deny {
                return Verdict::Stop("denied".into());
            }
        }
        Verdict::Run
    }
}

fn command(dir: &Path, script: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn gated(rt: &tokio::runtime::Runtime, dir: &Path, script: &str, judge: &Arc<Judge>) -> Duration {
    let start = Instant::now();
    let mut cmd = command(dir, script);
    pod::sandbox::gate::trace_me(&mut cmd);
    let mut p = GatedProcess::spawn(cmd, judge.clone()).expect("gated spawn");
    let status = rt.block_on(p.wait()).expect("status");
    assert!(status.success(), "{script}: {status}");
    assert!(p.stopped().is_empty());
    start.elapsed()
}

/// `script` in `sandbox`'s namespaces, under the gate or not, as the bash tool starts it.
fn in_namespaces(
    rt: &tokio::runtime::Runtime,
    sandbox: &Sandbox,
    dir: &Path,
    script: &str,
    judge: Option<&Arc<Judge>>,
) -> Duration {
    let start = Instant::now();
    let mut cmd = sandbox.command("bash").into_std();
    cmd.arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _limit = sandbox.prepare_std(&mut cmd, judge.is_some());
    match judge {
        Some(judge) => {
            let mut p = GatedProcess::spawn(cmd, judge.clone()).expect("gated spawn");
            let status = rt.block_on(p.wait()).expect("status");
            assert!(status.success(), "{script}: {status}");
            assert!(p.stopped().is_empty());
        }
        None => {
            let status = cmd.status().expect("spawn");
            assert!(status.success(), "{script}: {status}");
        }
    }
    start.elapsed()
}

fn ungated(dir: &Path, script: &str) -> Duration {
    let start = Instant::now();
    let status = command(dir, script).status().expect("spawn");
    assert!(status.success(), "{script}: {status}");
    start.elapsed()
}

fn pin_to_cpu0() {
    // SAFETY: a zeroed cpu_set_t with one bit set, passed by pointer with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let rounds: usize = std::env::var("POD_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    if let Err(e) = pod::sandbox::gate::available() {
        println!("exec gate unavailable here: {e}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let files = if benching { 30 } else { 2 };
    let mut make = String::from("all: prog\n");
    let objs: Vec<String> = (0..files).map(|i| format!("f{i}.o")).collect();
    make.push_str(&format!(
        "prog: {}\n\tcc -o prog {}\n",
        objs.join(" "),
        objs.join(" ")
    ));
    for i in 0..files {
        let body = if i == 0 {
            "int main(void) { return 0; }\n".to_string()
        } else {
            format!("int f{i}(int x) {{ return x * {i}; }}\n")
        };
        std::fs::write(dir.path().join(format!("f{i}.c")), body).expect("source");
        make.push_str(&format!("f{i}.o: f{i}.c\n\tcc -O0 -c f{i}.c -o f{i}.o\n"));
    }
    std::fs::write(dir.path().join("Makefile"), make).expect("Makefile");
    let execs = if benching { 300 } else { 3 };
    let loop_script = format!("for i in $(seq {execs}); do /bin/true; done");
    // `env` finds `true` by trying each folder of PATH with execve (execvp): the folders before
    // /usr/bin are execs that fail.
    let searches = if benching { 100 } else { 2 };
    let search_script = format!("for i in $(seq {searches}); do env true; done");
    let build_script = "rm -f *.o prog && make -s -j1";
    let specs = vec![
        RuleSpec::new("bash", "rm -rf *", Action::Deny),
        RuleSpec::new("bash", "git push *", Action::Deny),
        RuleSpec::new("bash", "curl *", Action::Deny),
    ];
    let rules = Rules::compile(Action::Allow, specs).expect("rules");
    let judge = Arc::new(Judge {
        policy: Policy::new(Some(rules), dir.path().to_path_buf()),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rounds = if benching { rounds } else { 1 };
    let ws = dir.path().canonicalize().expect("canonical");
    let sandbox = Sandbox::open(
        &SandboxConfig {
            mode: SandboxMode::Namespaces,
            network: NetworkAccess::Allow,
            ..SandboxConfig::default()
        },
        &ws,
        std::slice::from_ref(&ws),
        "bench",
    )
    .expect("sandbox");
    let namespaces = sandbox.info().kind == SandboxKind::Namespaces;
    if !namespaces {
        println!("no namespace sandbox here (bubblewrap, user namespaces): its pair is skipped");
    }
    for pinned in [false, true] {
        if pinned {
            pin_to_cpu0();
        }
        let (mut lg, mut lu, mut bg, mut bu) = (vec![], vec![], vec![], vec![]);
        let (mut ng, mut nu) = (vec![], vec![]);
        let (mut sg, mut su) = (vec![], vec![]);
        for round in 0..rounds {
            if namespaces {
                let gate = Some(&judge);
                if round % 2 == 0 {
                    nu.push(in_namespaces(&rt, &sandbox, &ws, &loop_script, None));
                    ng.push(in_namespaces(&rt, &sandbox, &ws, &loop_script, gate));
                } else {
                    ng.push(in_namespaces(&rt, &sandbox, &ws, &loop_script, gate));
                    nu.push(in_namespaces(&rt, &sandbox, &ws, &loop_script, None));
                }
            }
            // Which of the pair runs first alternates, so an order effect cancels out.
            if round % 2 == 0 {
                lu.push(ungated(dir.path(), &loop_script));
                lg.push(gated(&rt, dir.path(), &loop_script, &judge));
                bu.push(ungated(dir.path(), build_script));
                bg.push(gated(&rt, dir.path(), build_script, &judge));
                su.push(ungated(dir.path(), &search_script));
                sg.push(gated(&rt, dir.path(), &search_script, &judge));
            } else {
                lg.push(gated(&rt, dir.path(), &loop_script, &judge));
                lu.push(ungated(dir.path(), &loop_script));
                bg.push(gated(&rt, dir.path(), build_script, &judge));
                bu.push(ungated(dir.path(), build_script));
                sg.push(gated(&rt, dir.path(), &search_script, &judge));
                su.push(ungated(dir.path(), &search_script));
            }
        }
        let (lg, lu, bg, bu) = (median(lg), median(lu), median(bg), median(bu));
        let per_exec = lg.saturating_sub(lu).as_secs_f64() * 1e6 / execs as f64;
        let where_ = if pinned {
            "pinned to CPU 0"
        } else {
            "unpinned"
        };
        println!(
            "{where_}: per exec: ungated {:.1} ms, gated {:.1} ms for {execs} execs: +{per_exec:.1} µs per stopped exec",
            lu.as_secs_f64() * 1e3,
            lg.as_secs_f64() * 1e3
        );
        if namespaces {
            let (ng, nu) = (median(ng), median(nu));
            println!(
                "{where_}: in namespaces: ungated {:.1} ms, gated {:.1} ms for {execs} execs: \
                 +{:.1} µs per stopped exec",
                nu.as_secs_f64() * 1e3,
                ng.as_secs_f64() * 1e3,
                ng.saturating_sub(nu).as_secs_f64() * 1e6 / execs as f64
            );
        }
        let (sg, su) = (median(sg), median(su));
        println!(
            "{where_}: env true (a search of PATH): ungated {:.1} ms, gated {:.1} ms for \
             {searches}: +{:.1} µs each",
            su.as_secs_f64() * 1e3,
            sg.as_secs_f64() * 1e3,
            sg.saturating_sub(su).as_secs_f64() * 1e6 / searches as f64
        );
        println!(
            "{where_}: build ({files} files, make -j1 + cc): ungated {:.0} ms, gated {:.0} ms: x{:.3}",
            bu.as_secs_f64() * 1e3,
            bg.as_secs_f64() * 1e3,
            bg.as_secs_f64() / bu.as_secs_f64()
        );
    }
}
