//! What the sandbox costs per call: `bash -c true` started and waited for on a current-thread
//! tokio runtime (as `pod serve` runs), bare and with each layer of the sandbox added, all in the
//! same process and interleaved in rounds, so the ratios hold on a noisy machine.
//!
//! - `bare`: a process group of its own, as the bash tool started its shell before the sandbox;
//! - `session`: `setsid` and subreaper in `pre_exec` (this alone moves std from `posix_spawn` to
//!   `fork`);
//! - `domain`: plus `no_new_privs` and the Landlock domain (what [`Sandbox::prepare`] installs);
//! - `call`: plus [`CallProcess`] spawn and finish in a subreaper: the kill of the call's processes
//!   and the `/proc` sweep for leftovers, i.e. everything the bash tool now does per call.
//!
//! Also: building a session's sandbox ([`Sandbox::open`], once per session) and one sweep alone.
//!
//! `cargo bench --bench sandbox`; `POD_BENCH_RUNS` rounds (default 5) of 100 calls per variant.
//! Under `cargo test --all-targets` (no `--bench` argument) it only checks that it starts.

use std::process::Stdio;
use std::time::{Duration, Instant};

use pod::manifest::SandboxConfig;
use pod::sandbox::{reaper, CallProcess, Sandbox};
use tokio::process::Command;

const PER_ROUND: usize = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Bare,
    Session,
    Domain,
    Call,
}

const VARIANTS: [Variant; 4] = [
    Variant::Bare,
    Variant::Session,
    Variant::Domain,
    Variant::Call,
];

fn command() -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg("true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// One call of `variant`, timed from spawn to the end of its clean-up.
async fn once(variant: Variant, sandbox: &Sandbox, off: &Sandbox) -> Duration {
    let start = Instant::now();
    match variant {
        Variant::Bare => {
            let mut cmd = command();
            cmd.process_group(0);
            let status = cmd.spawn().expect("spawn").wait().await.expect("wait");
            assert!(status.success());
        }
        Variant::Session | Variant::Domain => {
            let mut cmd = command();
            if variant == Variant::Session {
                off.prepare(&mut cmd);
            } else {
                sandbox.prepare(&mut cmd);
            }
            let status = cmd.spawn().expect("spawn").wait().await.expect("wait");
            assert!(status.success());
        }
        Variant::Call => {
            let mut cmd = command();
            sandbox.prepare(&mut cmd);
            let mut call = CallProcess::spawn(&mut cmd).expect("spawn");
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

    let mut opens = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        let s = Sandbox::open(
            &SandboxConfig::default(),
            &ws,
            std::slice::from_ref(&ws),
            "bench",
        )
        .expect("sandbox");
        opens.push(start.elapsed().as_secs_f64() * 1e6);
        drop(s);
    }
    let sandbox = Sandbox::open(
        &SandboxConfig::default(),
        &ws,
        std::slice::from_ref(&ws),
        "bench",
    )
    .expect("sandbox");
    let info = sandbox.info();
    assert!(
        info.enforced,
        "the bench needs a kernel with Landlock: {info:?}"
    );
    let off = Sandbox::off();
    reaper::become_subreaper().expect("subreaper");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
    rt.block_on(async {
        for v in VARIANTS {
            for _ in 0..20 {
                once(v, &sandbox, &off).await;
            }
        }
        for _ in 0..runs {
            for (i, v) in VARIANTS.iter().enumerate() {
                for _ in 0..PER_ROUND {
                    samples[i].push(once(*v, &sandbox, &off).await.as_secs_f64() * 1e6);
                }
            }
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
            "  {:<8} {:>8.1} us per call   x{:.2} of bare   +{:.1} us",
            format!("{v:?}").to_lowercase(),
            m,
            m / bare,
            m - bare
        );
    }
    let domain = median(&mut samples[2].clone());
    let session = median(&mut samples[1].clone());
    println!(
        "  entering the domain (domain - session): {:.1} us; the whole sandbox before exec \
         (domain - bare): {:.1} us: goal < 1000 us {}",
        domain - session,
        domain - bare,
        if domain - bare < 1000.0 {
            "met"
        } else {
            "MISSED"
        }
    );
    println!(
        "  Sandbox::open (once per session): {:.1} us; one sweep with nothing left: {:.1} us",
        median(&mut opens),
        median(&mut sweeps)
    );
}
