//! What the end-of-call check of repositories costs (`sandbox::repos`, run by
//! `Sandbox::set_aside_planted` when every `bash` call ends): the whole step, the watched names
//! and the walk of the writable folders, on a generated workspace that is a git repository.
//!
//! - `small`: 3,000 files in 300 folders (three levels), the size the check is meant for;
//! - `medium`: 10,000 files in 1,000 folders;
//! - `capped`: 40,000 files in 2,000 folders, past the walk's budget (20,000 entries): the
//!   most a check costs, whatever the workspace;
//! - `linked`: `small` with 3 symlinks in each folder to other folders of the workspace (900,
//!   as a `node_modules` of links would have): each is resolved at every check, to see whether
//!   it leads where the walk does not go.
//!
//! Each is timed with the page cache warm (the check runs right after a call that touched the
//! same folders), `POD_BENCH_RUNS` rounds (default 5) of 200 checks, medians, in two cases:
//! `unchanged` (the call changed no folder: each is only looked at, its change time compared
//! with the last walk's) and `one new file` (before each check a file is created in another
//! folder, as a call that writes: that folder is listed again). The workspace is made 3 s
//! before the first check: a folder changed in the last 2 s is always listed again. Beside them,
//! interleaved in the same rounds, `full walk`: the same walk listing every folder
//! ([`Repos::open`]), which is what each check cost before folders were listed only when changed.
//! Wall time and the thread's CPU time are both shown: on a loaded machine the CPU time is the
//! steadier of the two.
//!
//! `cargo bench --bench repos`. Under `cargo test --all-targets` it only checks that it starts.

use std::path::Path;
use std::time::Instant;

use pod::manifest::{SandboxConfig, SandboxMode};
use pod::sandbox::repos::Repos;
use pod::sandbox::Sandbox;

const PER_ROUND: usize = 200;

/// `folders` folders of `files_each` files each and `links_each` symlinks to other folders,
/// nested three deep, in a fresh repository.
fn workspace(dir: &Path, folders: usize, files_each: usize, links_each: usize) {
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .expect("git init");
    assert!(status.success());
    let folder = |f: usize| {
        dir.join(format!("a{}", f % 10))
            .join(format!("b{}", (f / 10) % 10))
            .join(format!("c{f}"))
    };
    for f in 0..folders {
        let sub = folder(f);
        std::fs::create_dir_all(&sub).expect("mkdir");
        for i in 0..files_each {
            std::fs::write(sub.join(format!("f{i}.rs")), "fn x() {}\n").expect("write");
        }
    }
    for f in 0..folders {
        for i in 0..links_each {
            let to = folder((f + 7 * i + 1) % folders);
            std::os::unix::fs::symlink(to, folder(f).join(format!("l{i}"))).expect("ln");
        }
    }
}

/// The calling thread's CPU time, in microseconds.
fn cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e6 + t.tv_nsec as f64 / 1e3
}

/// Wall and CPU time of `f`, in microseconds.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (wall, c) = (Instant::now(), cpu());
    let out = f();
    (out, wall.elapsed().as_secs_f64() * 1e6, cpu() - c)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("repos: not run in test mode (use `cargo bench --bench repos`)");
        return;
    }
    let runs: usize = std::env::var("POD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    println!(
        "pod end-of-call repository check: {runs} rounds x {PER_ROUND} checks, medians, \
         {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for (name, folders, files_each, links_each) in [
        ("small", 300, 10, 0),
        ("medium", 1_000, 10, 0),
        ("capped", 2_000, 20, 0),
        ("linked", 300, 10, 3),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical");
        workspace(&ws, folders, files_each, links_each);
        // Folders changed in the last 2 s are listed at every check (module doc).
        std::thread::sleep(std::time::Duration::from_secs(3));
        let config = SandboxConfig {
            mode: SandboxMode::Landlock,
            ..SandboxConfig::default()
        };
        let sandbox =
            Sandbox::open(&config, &ws, std::slice::from_ref(&ws), "bench").expect("sandbox");
        for _ in 0..20 {
            assert!(sandbox.set_aside_planted().is_empty());
        }
        // (wall, cpu) samples: unchanged, one new file, full walk.
        let mut samples: [(Vec<f64>, Vec<f64>); 3] = Default::default();
        let mut n = 0usize;
        for _ in 0..runs {
            for _ in 0..PER_ROUND {
                let (planted, wall, c) = timed(|| sandbox.set_aside_planted());
                assert!(planted.is_empty());
                samples[0].0.push(wall);
                samples[0].1.push(c);
            }
            for _ in 0..PER_ROUND {
                n += 1;
                let f = n % folders;
                let sub = ws
                    .join(format!("a{}", f % 10))
                    .join(format!("b{}", (f / 10) % 10))
                    .join(format!("c{f}"));
                std::fs::write(sub.join(format!("new{n}.rs")), "").expect("write");
                let (planted, wall, c) = timed(|| sandbox.set_aside_planted());
                assert!(planted.is_empty());
                samples[1].0.push(wall);
                samples[1].1.push(c);
            }
            for _ in 0..PER_ROUND / 4 {
                let (_, wall, c) = timed(|| Repos::open(&ws, std::slice::from_ref(&ws), None, &[]));
                samples[2].0.push(wall);
                samples[2].1.push(c);
            }
        }
        println!(
            "  {name:<7} {:>6} files, {:>5} folders:",
            folders * files_each,
            folders
        );
        for (what, (wall, c)) in ["unchanged", "one new file", "full walk"]
            .iter()
            .zip(samples.iter_mut())
        {
            println!(
                "    {what:<13} {:>8.1} us wall, {:>8.1} us CPU per call",
                median(wall),
                median(c)
            );
        }
    }
}
