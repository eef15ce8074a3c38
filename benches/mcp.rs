//! What an MCP tool call costs in pod beside the server's own time (docs/performance.md,
//! section 12). The server is `@modelcontextprotocol/server-everything` (installed by
//! `tests/mcp/setup.sh`), its `echo` tool, which does next to nothing, so what is measured is the
//! path around it. Every server is warmed up with `WARM` calls first (node compiles its hot paths
//! during the first calls). Three measurements of the same call, in the same run:
//!
//! - **direct**: an `rmcp` client of its own (no pod code) spawns the server and calls `echo`
//!   one call after another: the server's own time plus a minimal client's round trip, the floor;
//! - **pod's MCP layer**: `pod::mcp::start` and `McpTool::run` in-process (sandboxed server,
//!   timeouts, projection), one call after another;
//! - **through `pod serve`**: an offline-model turn of `STEPS` steps, each one response with one
//!   `echo` call (so calls go one after another, as in the direct case), minus a turn of no
//!   call, per step; beside it the same turn with one built-in `read` call per step, for what a
//!   step costs whatever the tool. The CPU time of `pod` and of the server during the turn
//!   (`/proc/PID/task/*/schedstat`) says whose time a step is.
//!
//! `cargo bench --bench mcp`; `POD_BENCH_RUNS` (default 5) repetitions, medians with min..max.
//! Under `cargo test --all-targets` it only checks that it starts.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

/// Calls per direct / in-process measurement.
const CALLS: usize = 500;
/// Steps of a measured turn.
const STEPS: usize = 200;
/// `echo` calls made before any measurement, on every server: node compiles the server's hot
/// paths during its first calls, which would otherwise be counted against the calls measured
/// first (a cold server spends about twice the CPU per call).
const WARM: usize = 200;
/// What pod spends on a step beside the tool (section 2 of docs/performance.md, about 100 µs):
/// the direct client stays busy this long between calls in its second variant.
const GAP: Duration = Duration::from_micros(100);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("mcp: not run in test mode (use `cargo bench --bench mcp`)");
        return;
    }
    let Some(everything) = server_everything() else {
        println!("mcp: skipped: npm is not installed (tests/mcp/setup.sh installs the server)");
        return;
    };
    let runs: usize = std::env::var("POD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    println!(
        "pod MCP bench: {} cores, {runs} runs, medians (min..max of runs); server-everything `echo`",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let (mut direct, mut gapped, mut layer, mut empty, mut mcp, mut read) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut lib_empty, mut lib_mcp, mut lib_read) = (vec![], vec![], vec![]);
    let (mut mcp_cpu, mut read_cpu, mut server_cpu) = (vec![], vec![], vec![]);
    let (mut direct_cpu, mut gapped_cpu, mut layer_cpu) = (vec![], vec![], vec![]);
    let (mut direct_client, mut layer_client) = (vec![], vec![]);
    let ws = Workspace::new(&everything);
    for _ in 0..runs {
        let calls = direct_calls(&everything, Duration::ZERO);
        direct.push(calls.p50);
        direct_cpu.push(calls.server_cpu);
        direct_client.push(calls.client_cpu);
        let calls = direct_calls(&everything, GAP);
        gapped.push(calls.p50);
        gapped_cpu.push(calls.server_cpu);
        let calls = layer_calls(&everything, &ws.dir);
        layer.push(calls.p50);
        layer_cpu.push(calls.server_cpu);
        layer_client.push(calls.client_cpu);
        empty.push(us(timed_turn(&ws, "empty.toml").wall));
        let turn = timed_turn(&ws, "mcp.toml");
        mcp.push(us(turn.wall));
        mcp_cpu.push(us(turn.pod_cpu) / STEPS as f64);
        server_cpu.push(us(turn.server_cpu) / STEPS as f64);
        let turn = timed_turn(&ws, "read.toml");
        read.push(us(turn.wall));
        read_cpu.push(us(turn.pod_cpu) / STEPS as f64);
        lib_empty.push(us(library_turn(&ws, "empty.toml")));
        lib_mcp.push(us(library_turn(&ws, "mcp.toml")));
        lib_read.push(us(library_turn(&ws, "read.toml")));
    }
    let base = median(&empty);
    let per_step =
        |v: &[f64]| -> Vec<f64> { v.iter().map(|t| (t - base) / STEPS as f64).collect() };
    let (mcp_step, read_step) = (per_step(&mcp), per_step(&read));
    let lib_base = median(&lib_empty);
    let lib_step =
        |v: &[f64]| -> Vec<f64> { v.iter().map(|t| (t - lib_base) / STEPS as f64).collect() };
    let (lib_mcp_step, lib_read_step) = (lib_step(&lib_mcp), lib_step(&lib_read));
    let line = |what: &str, v: &[f64]| println!("  {what:<52} {}", summary(v));
    line(
        &format!("direct rmcp client, per call (p50 of {CALLS})"),
        &direct,
    );
    line("  the server's CPU per call, direct", &direct_cpu);
    line(
        &format!(
            "direct, client busy {} µs between calls (p50)",
            GAP.as_micros()
        ),
        &gapped,
    );
    line(
        "  the server's CPU per call, direct with a busy client",
        &gapped_cpu,
    );
    line(
        &format!("pod::mcp McpTool::run, per call (p50 of {CALLS})"),
        &layer,
    );
    line(
        "  the server's CPU per call, through pod's layer",
        &layer_cpu,
    );
    line("client CPU per call, direct rmcp client", &direct_client);
    line("client CPU per call, pod's layer", &layer_client);
    line("turn of no call", &empty);
    line("pod serve, per step with one MCP `echo` call", &mcp_step);
    line("pod serve, per step with one `read` call", &read_step);
    line("pod serve, its CPU per step with an MCP call", &mcp_cpu);
    line("pod serve, its CPU per step with a `read` call", &read_cpu);
    line("  the server's CPU per call, in the MCP turn", &server_cpu);
    line(
        "Pod as a library, per step with one MCP call",
        &lib_mcp_step,
    );
    line(
        "Pod as a library, per step with one `read` call",
        &lib_read_step,
    );
    println!(
        "  => pod's MCP layer beside a bare client: {:+.1} µs per call (p50), {:+.1} µs of CPU",
        median(&layer) - median(&direct),
        median(&layer_client) - median(&direct_client)
    );
    println!(
        "  => pod serve, a step with an MCP call beside one with `read`: +{:.1} µs; the server's \
         own round trip (busy client): {:.1} µs",
        median(&mcp_step) - median(&read_step),
        median(&gapped)
    );
}

/// `tests/mcp/node_modules/.../server-everything/dist/index.js`, installed now if need be.
fn server_everything() -> Option<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    let npm = Command::new("npm")
        .arg("--version")
        .stdout(Stdio::null())
        .status();
    if !npm.is_ok_and(|s| s.success()) {
        return None;
    }
    let status = Command::new(here.join("setup.sh"))
        .status()
        .expect("run tests/mcp/setup.sh");
    assert!(status.success(), "tests/mcp/setup.sh failed");
    Some(here.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// What `CALLS` sequential `echo` calls took, each in µs: the p50 of a call, and the CPU time
/// per call of the server and of this process (the client).
struct Calls {
    p50: f64,
    server_cpu: f64,
    client_cpu: f64,
}

/// `CALLS` sequential `echo` calls through a plain `rmcp` client; with `gap`,
/// the client keeps its core busy that long between calls (as pod does, running a step).
fn direct_calls(everything: &Path, gap: Duration) -> Calls {
    use rmcp::model::CallToolRequestParams;
    use rmcp::ServiceExt;
    runtime().block_on(async {
        let mut child = tokio::process::Command::new("node")
            .arg(everything)
            .arg("stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the server");
        let io = (
            child.stdout.take().expect("stdout"),
            child.stdin.take().expect("stdin"),
        );
        let client = ().serve(io).await.expect("initialize");
        let args = json!({"message": "hi"})
            .as_object()
            .cloned()
            .expect("object");
        let pid = child.id().expect("the server's pid");
        let mut each = Vec::with_capacity(CALLS);
        let (mut cpu, mut own) = (Duration::ZERO, Duration::ZERO);
        for i in 0..CALLS + WARM {
            if i == WARM {
                cpu = cpu_time(pid);
                own = cpu_time(std::process::id());
            }
            let t = Instant::now();
            let r = client
                .peer()
                .call_tool(CallToolRequestParams::new("echo").with_arguments(args.clone()))
                .await
                .expect("echo");
            assert_ne!(r.is_error, Some(true));
            if i >= WARM {
                each.push(us(t.elapsed()));
            }
            let busy = Instant::now();
            while busy.elapsed() < gap {
                std::hint::spin_loop();
            }
        }
        let calls = Calls {
            p50: p50(each),
            server_cpu: us(cpu_time(pid).saturating_sub(cpu)) / CALLS as f64,
            client_cpu: us(cpu_time(std::process::id()).saturating_sub(own)) / CALLS as f64,
        };
        let _ = client.cancel().await;
        calls
    })
}

/// `CALLS` sequential `echo` calls through pod's MCP tool, in-process.
fn layer_calls(everything: &Path, workspace: &Path) -> Calls {
    use pod::manifest::{McpServerConfig, SandboxConfig};
    use pod::sandbox::Sandbox;
    use pod::tools::ToolContext;
    runtime().block_on(async {
        let config = McpServerConfig::stdio(
            "everything",
            "node",
            vec![everything.display().to_string(), "stdio".into()],
            workspace.to_path_buf(),
        );
        let sandbox = Arc::new(
            Sandbox::open(
                &SandboxConfig::default(),
                workspace,
                &[workspace.to_path_buf()],
                "bench",
            )
            .expect("sandbox"),
        );
        // A stdio server: the network rules (none here) are for `url` servers.
        let net = Arc::new(pod::network::Net::new(Arc::new(
            pod::permission::Policy::new(None, workspace.to_path_buf()),
        )));
        let servers = pod::mcp::start(&[config], &sandbox, &net).await;
        let tools = servers.tools();
        let echo = tools
            .iter()
            .find(|t| t.name() == "mcp__everything__echo")
            .expect("echo is offered");
        let ctx = ToolContext::new(workspace);
        // This process's children now: the server (and perhaps the direct case's, exiting).
        let children = descendants(std::process::id());
        let cpu = || -> Duration { children.iter().map(|&p| cpu_time(p)).sum() };
        let mut each = Vec::with_capacity(CALLS);
        let (mut start_cpu, mut own) = (Duration::ZERO, Duration::ZERO);
        for i in 0..CALLS + WARM {
            if i == WARM {
                start_cpu = cpu();
                own = cpu_time(std::process::id());
            }
            let t = Instant::now();
            let out = echo.run(json!({"message": "hi"}), &ctx).await;
            assert!(!out.is_error, "{}", out.content);
            if i >= WARM {
                each.push(us(t.elapsed()));
            }
        }
        let calls = Calls {
            p50: p50(each),
            server_cpu: us(cpu().saturating_sub(start_cpu)) / CALLS as f64,
            client_cpu: us(cpu_time(std::process::id()).saturating_sub(own)) / CALLS as f64,
        };
        servers.stop().await;
        calls
    })
}

/// The second turn of `manifest` run by the pod as a library (no `pod serve`, no client
/// process), its servers started and warmed up by the first.
fn library_turn(ws: &Workspace, manifest: &str) -> Duration {
    use pod::manifest::Manifest;
    use pod::protocol::InputItem;
    use pod::{Pod, PodOptions};
    let manifest = Manifest::load(&ws.dir.join(manifest)).expect("manifest");
    runtime().block_on(async {
        let pod = Pod::start(manifest, PodOptions::default())
            .await
            .expect("pod");
        let (events, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let mut elapsed = Duration::ZERO;
        for input in ["warm up", "go"] {
            let t = Instant::now();
            let result = pod
                .run(
                    vec![InputItem::Text { text: input.into() }],
                    &events,
                    tokio_util::sync::CancellationToken::new(),
                )
                .await
                .expect("run");
            elapsed = t.elapsed();
            assert_eq!(
                result.stop_reason,
                pod::protocol::StopReason::EndTurn,
                "{result:?}"
            );
        }
        drop(events);
        let _ = drain.await;
        pod.stop_mcp().await;
        elapsed
    })
}

/// One step's call of the server's `echo`, in a scenario file.
const ECHO: &str = "tool = \"mcp__everything__echo\"\ninput = { message = \"hi\" }\n";

/// A workspace with three manifests, each a warm-up turn of `WARM` MCP calls, then a turn of no
/// call, of `STEPS` MCP calls, or of `STEPS` reads.
struct Workspace {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    state: tempfile::TempDir,
}

impl Workspace {
    fn new(everything: &Path) -> Workspace {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().canonicalize().expect("canonical");
        std::fs::write(dir.join("small.txt"), "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n").expect("write");
        let server = format!(
            "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            everything.display().to_string()
        );
        let rules = "[permissions]\ndefault_action = \"ask\"\n\
                     [[permissions.rule]]\ntool = \"mcp__everything__echo\"\naction = \"allow\"\n\
                     [[permissions.rule]]\ntool = \"read\"\naction = \"allow\"\n";
        for (name, call) in [
            ("empty", None),
            ("mcp", Some(ECHO)),
            (
                "read",
                Some("tool = \"read\"\ninput = { path = \"small.txt\" }\n"),
            ),
        ] {
            // The first turn warms the server up (the same for every manifest, so the measured
            // turns start from the same history); the second is measured.
            let mut scenario = String::new();
            for _ in 0..WARM {
                scenario.push_str("[[step]]\n[[step.calls]]\n");
                scenario.push_str(ECHO);
            }
            scenario.push_str("[[step]]\ntext = \"warm\"\n");
            for _ in 0..call.map_or(0, |_| STEPS) {
                scenario.push_str("[[step]]\n[[step.calls]]\n");
                scenario.push_str(call.unwrap_or_default());
            }
            scenario.push_str("[[step]]\ntext = \"done\"\n");
            std::fs::write(dir.join(format!("{name}.scenario.toml")), scenario).expect("write");
            std::fs::write(
                dir.join(format!("{name}.toml")),
                format!(
                    "[pod]\nmax_steps = {}\n[model]\nprovider = \"offline\"\nscenario = \"{name}.scenario.toml\"\n{rules}{server}",
                    STEPS.max(WARM) + 10
                ),
            )
            .expect("write");
        }
        Workspace {
            _tmp: tmp,
            dir,
            state: tempfile::tempdir().expect("tempdir"),
        }
    }
}

/// What one measured turn of `pod serve` took: wall time, and the CPU time of `pod` and of the
/// processes it started (the MCP server), from the kernel's accounting.
struct Turn {
    wall: Duration,
    pod_cpu: Duration,
    server_cpu: Duration,
}

/// The second `run` on a fresh `pod serve` (its servers started and warmed up by the first).
fn timed_turn(ws: &Workspace, manifest: &str) -> Turn {
    let mut pod = Pod::spawn(ws, manifest);
    pod.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#);
    let init = pod.until_id(0);
    assert!(init.contains("\"result\""), "{init}");
    pod.send(r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"input":[{"type":"text","text":"warm up"}]}}"#);
    let warm = pod.until_id(1);
    assert!(warm.contains("end_turn"), "{warm}");
    let pid = pod.child.id();
    let servers = descendants(pid);
    let cpu = || (cpu_time(pid), servers.iter().map(|&p| cpu_time(p)).sum());
    let (pod0, servers0): (Duration, Duration) = cpu();
    let t = Instant::now();
    pod.send(r#"{"jsonrpc":"2.0","id":2,"method":"run","params":{"input":[{"type":"text","text":"go"}]}}"#);
    let done = pod.until_id(2);
    let wall = t.elapsed();
    let (pod1, servers1) = cpu();
    assert!(done.contains("end_turn"), "{done}");
    Turn {
        wall,
        pod_cpu: pod1.saturating_sub(pod0),
        server_cpu: servers1.saturating_sub(servers0),
    }
}

/// CPU time of every live thread of `pid` (`/proc/PID/task/*/schedstat`, nanoseconds); zero for
/// a process that is gone.
fn cpu_time(pid: u32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map(Duration::from_nanos)
        .sum()
}

/// Every process below `pid` (`/proc/PID/task/*/children`), depth first.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
            out.push(child);
            out.extend(descendants(child));
        }
    }
    out
}

struct Pod {
    child: Child,
    input: Option<BufWriter<ChildStdin>>,
    output: BufReader<ChildStdout>,
}

impl Pod {
    fn spawn(ws: &Workspace, manifest: &str) -> Pod {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pod"))
            .args(["serve", "--manifest"])
            .arg(ws.dir.join(manifest))
            .env("XDG_STATE_HOME", ws.state.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn pod serve");
        Pod {
            input: Some(BufWriter::new(child.stdin.take().expect("stdin"))),
            output: BufReader::new(child.stdout.take().expect("stdout")),
            child,
        }
    }

    fn send(&mut self, line: &str) {
        let input = self.input.as_mut().expect("stdin open");
        input.write_all(line.as_bytes()).expect("write");
        input.write_all(b"\n").expect("write");
        input.flush().expect("flush");
    }

    /// Reads lines until the response with `id`; returns it.
    fn until_id(&mut self, id: u64) -> String {
        let prefix = format!(r#"{{"jsonrpc":"2.0","id":{id},"#);
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.output.read_line(&mut line).expect("read");
            assert!(n > 0, "pod closed stdout");
            if line.starts_with(&prefix) {
                return line.clone();
            }
        }
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        self.input = None;
        let _ = self.child.wait();
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn median(v: &[f64]) -> f64 {
    p50(v.to_vec())
}

fn summary(v: &[f64]) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.1} µs ({min:.1}..{max:.1})", median(v))
}
