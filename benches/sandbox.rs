//! What the sandbox costs per call: `bash -c true` started and waited for on a current-thread
//! tokio runtime (as `pod serve` runs), bare and with each layer of the sandbox added, all in the
//! same process and interleaved in rounds, so the ratios hold on a noisy machine.
//!
//! - `bare`: a process group of its own, as the bash tool started its shell before the sandbox;
//! - `session`: `setsid` and subreaper in `pre_exec` (this alone moves std from `posix_spawn` to
//!   `fork`);
//! - `domain`: plus `no_new_privs`, the Landlock domain and the seccomp filter (`mode =
//!   "landlock"`, and the fall-back where namespaces cannot be made);
//! - `namespaces`: the call inside bubblewrap, in namespaces of its own (`mode = "namespaces"`,
//!   the default), with `network = "deny"` (the session's network namespace, made once and
//!   entered per call);
//! - `hostnet`: the same with `network = "allow"` (no network namespace): what entering the
//!   session's costs is `namespaces - hostnet`;
//! - `call`: `namespaces` plus [`CallProcess`] spawn and finish in a subreaper, i.e. everything
//!   the bash tool does per call: the call is contained in a PID namespace of its own, so its
//!   end needs no search for leftovers;
//! - `swept`: `call` ended with the `/proc` sweep for leftovers, as every call ended before;
//! - `hosttmp`: `call` in a session whose `$TMPDIR` is the host folder, not a tmpfs of the
//!   session's (`POD_TEST_NO_TMPFS=1`): what the tmpfs costs per call is `call - hosttmp`.
//!
//! Also: a build-like load (one call running 300 short processes) bare and in namespaces;
//! building a session's sandbox ([`Sandbox::open`], once per session; the first open of a process
//! also probes bubblewrap), with and without the `$TMPDIR` tmpfs, and one sweep alone.
//!
//! `cargo bench --bench sandbox`; `POD_BENCH_RUNS` rounds (default 5) of 100 calls per variant.
//! Under `cargo test --all-targets` (no `--bench` argument) it only checks that it starts.

use std::process::Stdio;
use std::time::{Duration, Instant};

use pod::manifest::{SandboxConfig, SandboxMode};
use pod::protocol::{NetworkAccess, SandboxKind};
use pod::sandbox::{reaper, CallProcess, Sandbox};
use tokio::process::Command;

const PER_ROUND: usize = 100;
/// How many times each kind of `Sandbox::open` is timed.
const OPENS: usize = 60;
/// The build-like load: this many short processes in one call.
const LOAD: usize = 300;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Bare,
    Session,
    Domain,
    Namespaces,
    HostNet,
    Call,
    /// Namespaces made by a `bwrap` of each call's own (the fall-back where the session's
    /// namespaces cannot be held; what every call paid before `sandbox::holder`).
    PerCall,
    /// `call` ended as before the call's containment was used: with the `/proc` sweep.
    Swept,
    /// `call` with `$TMPDIR` the host folder (no tmpfs of the session's).
    HostTmp,
}

const VARIANTS: [Variant; 9] = [
    Variant::Bare,
    Variant::Session,
    Variant::Domain,
    Variant::Namespaces,
    Variant::HostNet,
    Variant::Call,
    Variant::PerCall,
    Variant::Swept,
    Variant::HostTmp,
];

struct Sandboxes {
    landlock: Sandbox,
    namespaces: Sandbox,
    host_net: Sandbox,
    per_call: Sandbox,
    host_tmp: Sandbox,
    off: Sandbox,
}

fn command(inside: Option<&Sandbox>, script: &str) -> Command {
    let mut cmd = match inside {
        Some(s) => s.command("bash"),
        None => Command::new("bash"),
    };
    cmd.arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

async fn status(mut cmd: Command) {
    let status = cmd.spawn().expect("spawn").wait().await.expect("wait");
    assert!(status.success());
}

/// One call of `variant` running `script`, timed from spawn to the end of its clean-up.
async fn once(variant: Variant, s: &Sandboxes, script: &str) -> Duration {
    let start = Instant::now();
    match variant {
        Variant::Bare => {
            let mut cmd = command(None, script);
            cmd.process_group(0);
            status(cmd).await;
        }
        Variant::Session => {
            let mut cmd = command(None, script);
            let _limit = s.off.prepare(&mut cmd);
            status(cmd).await;
        }
        Variant::Domain => {
            let mut cmd = command(None, script);
            let _limit = s.landlock.prepare(&mut cmd);
            status(cmd).await;
        }
        Variant::Namespaces => {
            let mut cmd = command(Some(&s.namespaces), script);
            let _limit = s.namespaces.prepare(&mut cmd);
            status(cmd).await;
        }
        Variant::HostNet => {
            let mut cmd = command(Some(&s.host_net), script);
            let _limit = s.host_net.prepare(&mut cmd);
            status(cmd).await;
        }
        Variant::PerCall => {
            let mut cmd = command(Some(&s.per_call), script);
            let _limit = s.per_call.prepare(&mut cmd);
            status(cmd).await;
        }
        Variant::Call | Variant::Swept | Variant::HostTmp => {
            let sandbox = if variant == Variant::HostTmp {
                &s.host_tmp
            } else {
                &s.namespaces
            };
            let mut cmd = command(Some(sandbox), script);
            let limit = sandbox.prepare(&mut cmd);
            let mut call = CallProcess::spawn(&mut cmd).expect("spawn");
            call.contain(variant != Variant::Swept && limit.contained());
            let status = call.wait().await.expect("wait");
            assert!(status.success());
            call.finish().await;
        }
    }
    start.elapsed()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("sandbox: not run in test mode (use `cargo bench --bench sandbox`)");
        return;
    }
    let runs: usize = std::env::var("POD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let workspace = tempfile::tempdir().expect("tempdir");
    let ws = workspace.path().canonicalize().expect("canonical");
    let config = |mode| SandboxConfig {
        mode,
        network: NetworkAccess::Deny,
        ..SandboxConfig::default()
    };
    let open = |mode| {
        Sandbox::open(&config(mode), &ws, std::slice::from_ref(&ws), "bench").expect("sandbox")
    };

    let first = Instant::now();
    drop(open(SandboxMode::Namespaces));
    let first_open = first.elapsed().as_secs_f64() * 1e6;
    let mut opens: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let mut open_pairs: Vec<f64> = Vec::new();
    let host_tmp = |mode| {
        std::env::set_var(pod::testing::NO_TMPFS_ENV, "1");
        let s = open(mode);
        std::env::remove_var(pod::testing::NO_TMPFS_ENV);
        s
    };
    for _ in 0..OPENS {
        for (i, mode) in [SandboxMode::Landlock, SandboxMode::Namespaces]
            .into_iter()
            .enumerate()
        {
            let start = Instant::now();
            let s = open(mode);
            opens[i].push(start.elapsed().as_secs_f64() * 1e6);
            drop(s);
        }
        let start = Instant::now();
        let s = host_tmp(SandboxMode::Namespaces);
        opens[2].push(start.elapsed().as_secs_f64() * 1e6);
        drop(s);
        open_pairs.push(opens[1][opens[1].len() - 1] - opens[2][opens[2].len() - 1]);
    }
    let s = Sandboxes {
        landlock: open(SandboxMode::Landlock),
        namespaces: open(SandboxMode::Namespaces),
        host_net: Sandbox::open(
            &SandboxConfig {
                network: NetworkAccess::Allow,
                ..config(SandboxMode::Namespaces)
            },
            &ws,
            std::slice::from_ref(&ws),
            "bench",
        )
        .expect("sandbox"),
        per_call: {
            std::env::set_var(pod::testing::NO_HOLDER_ENV, "1");
            let s = open(SandboxMode::Namespaces);
            std::env::remove_var(pod::testing::NO_HOLDER_ENV);
            s
        },
        host_tmp: host_tmp(SandboxMode::Namespaces),
        off: Sandbox::off(),
    };
    let info = s.landlock.info();
    assert!(
        info.enforced,
        "the bench needs a kernel with Landlock: {info:?}"
    );
    assert_eq!(
        s.namespaces.info().kind,
        SandboxKind::Namespaces,
        "the bench needs bubblewrap and user namespaces"
    );
    reaper::become_subreaper().expect("subreaper");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
    let load = format!("for i in $(seq {LOAD}); do /bin/true; done");
    let mut loads: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut tmpfs_pairs: Vec<f64> = Vec::new();
    rt.block_on(async {
        for v in VARIANTS {
            for _ in 0..20 {
                once(v, &s, "true").await;
            }
        }
        for _ in 0..runs {
            for (i, v) in VARIANTS.iter().enumerate() {
                for _ in 0..PER_ROUND {
                    samples[i].push(once(*v, &s, "true").await.as_secs_f64() * 1e6);
                }
            }
            for (i, v) in [Variant::Bare, Variant::Call].into_iter().enumerate() {
                for _ in 0..2 {
                    loads[i].push(once(v, &s, &load).await.as_secs_f64() * 1e6);
                }
            }
        }
        // The tmpfs's cost per call, paired: each `call` beside a `hosttmp` call made right
        // after it (in alternating order), so a change of load between blocks cancels out.
        for i in 0..runs * PER_ROUND {
            let (first, second) = if i % 2 == 0 {
                (Variant::Call, Variant::HostTmp)
            } else {
                (Variant::HostTmp, Variant::Call)
            };
            let a = once(first, &s, "true").await.as_secs_f64() * 1e6;
            let b = once(second, &s, "true").await.as_secs_f64() * 1e6;
            tmpfs_pairs.push(if first == Variant::Call { a - b } else { b - a });
        }
    });
    let mut sweeps = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        reaper::sweep();
        sweeps.push(start.elapsed().as_secs_f64() * 1e6);
    }
    let processes = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.parse::<u32>().is_ok())
                })
                .count()
        })
        .unwrap_or(0);

    println!(
        "pod sandbox bench: Landlock ABI {}, {} cores, {processes} processes on the machine, \
         {runs} rounds x {PER_ROUND} calls per variant, medians",
        info.abi,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let bare = median(&mut samples[0].clone());
    for (i, v) in VARIANTS.iter().enumerate() {
        let m = median(&mut samples[i]);
        println!(
            "  {:<10} {:>8.1} us per call   x{:.2} of bare   +{:.1} us",
            format!("{v:?}").to_lowercase(),
            m,
            m / bare,
            m - bare
        );
    }
    let domain = median(&mut samples[2].clone());
    let session = median(&mut samples[1].clone());
    let namespaces = median(&mut samples[3].clone());
    let call = median(&mut samples[5].clone());
    println!(
        "  the sandbox added per bash call (call - bare): {:.1} us: goal <= 2000 us {}; the \
         sweep a contained call skips (swept - call): {:.1} us",
        call - bare,
        if call - bare <= 2000.0 {
            "met"
        } else {
            "MISSED"
        },
        median(&mut samples[7].clone()) - call
    );
    println!(
        "  entering the session's network namespace (namespaces - hostnet): {:.1} us",
        namespaces - median(&mut samples[4].clone())
    );
    println!(
        "  entering the domain (domain - session): {:.1} us; Landlock before exec (domain - \
         bare): {:.1} us: goal < 1000 us {}",
        domain - session,
        domain - bare,
        if domain - bare < 1000.0 {
            "met"
        } else {
            "MISSED"
        }
    );
    println!(
        "  the session's namespaces entered, against a bwrap per call (percall - namespaces): \
         {:.1} us saved per call",
        median(&mut samples[6].clone()) - namespaces
    );
    println!(
        "  namespaces added per call (namespaces - bare): {:.1} us: goal <= 2000 us {}",
        namespaces - bare,
        if namespaces - bare <= 2000.0 {
            "met"
        } else {
            "MISSED"
        }
    );
    let (load_bare, load_ns) = (median(&mut loads[0]), median(&mut loads[1]));
    println!(
        "  build-like load ({LOAD} processes in one call): bare {:.1} ms, in namespaces {:.1} ms: \
         x{:.3}: goal <= x1.10 {}",
        load_bare / 1000.0,
        load_ns / 1000.0,
        load_ns / load_bare,
        if load_ns / load_bare <= 1.10 {
            "met"
        } else {
            "MISSED"
        }
    );
    println!(
        "  Sandbox::open (once per session): landlock {:.1} us, namespaces {:.1} us (goal <= \
         20000 us {}; the first in a process, with the bubblewrap probe: {:.1} us); one sweep \
         with nothing left: {:.1} us",
        median(&mut opens[0]),
        median(&mut opens[1]),
        if median(&mut opens[1].clone()) <= 20000.0 {
            "met"
        } else {
            "MISSED"
        },
        first_open,
        median(&mut sweeps)
    );
    let quartiles = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 4], v[v.len() / 2], v[v.len() * 3 / 4])
    };
    let (open_q1, open_med, open_q3) = quartiles(&mut open_pairs);
    let (call_q1, call_med, call_q3) = quartiles(&mut tmpfs_pairs);
    println!(
        "  the $TMPDIR tmpfs: Sandbox::open without it (host folder) {:.1} us; with it, paired \
         (median of differences, quartiles) {open_med:+.1} us ({open_q1:+.1} .. \
         {open_q3:+.1}); per call (call - hosttmp), {} pairs: {call_med:+.1} us ({call_q1:+.1} \
         .. {call_q3:+.1}); blocks: {:+.1} us",
        median(&mut opens[2].clone()),
        tmpfs_pairs.len(),
        call - median(&mut samples[8].clone())
    );
}
