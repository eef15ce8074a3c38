//! pod speed: the numbers of `docs/performance.md`, each beside a baseline measured in the same
//! run, so the ratios hold on a noisy machine.
//!
//! `cargo bench --bench speed` runs every section; `cargo bench --bench speed -- protocol turn`
//! runs the named ones (protocol, turn, approval, startup, session, scaling, acp). `POD_BENCH_RUNS`
//! (default 5) is how many times each measurement is repeated; medians are reported with the
//! spread (min..max) of the runs.
//!
//! The echo floor is this same binary re-run with `POD_BENCH_ECHO=line`: a minimal NDJSON process
//! that reads a line, takes its `id`, writes `{"jsonrpc":"2.0","id":..,"result":{}}` and flushes.
//! `POD_BENCH_ECHO=batch` flushes only when its input buffer is drained, so pipelined requests are
//! answered in batches: the ceiling of what any stdio server could do, reported beside it.
//!
//! `POD_BENCH_POD=/path/to/pod` measures another build of pod in the process-level sections
//! (protocol, turn, approval, start-up, `--resume`) for before/after comparisons.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) it only checks that it starts.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// The pod under test: this build's, or `POD_BENCH_POD` (e.g. an older build, for before/after).
fn pod_binary() -> std::ffi::OsString {
    std::env::var_os("POD_BENCH_POD").unwrap_or_else(|| env!("CARGO_BIN_EXE_pod").into())
}

fn main() {
    if let Some(mode) = std::env::var_os("POD_BENCH_ECHO") {
        if mode == "tokio" {
            echo_tokio();
        } else {
            echo(mode == "batch");
        }
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("speed: not run in test mode (use `cargo bench --bench speed`)");
        return;
    }
    let wanted: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let on = |name: &str| wanted.is_empty() || wanted.contains(&name);
    let runs: usize = std::env::var("POD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    println!(
        "pod speed bench: {} cores, {runs} runs per measurement, medians (min..max of runs)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("pod: {}", pod_binary().to_string_lossy());
    if on("protocol") {
        protocol(runs);
    }
    if on("turn") {
        turn(runs);
    }
    if on("approval") {
        approval(runs);
    }
    if on("startup") {
        startup(runs);
    }
    if on("session") {
        session(runs);
    }
    if on("scaling") {
        scaling(runs);
    }
    if on("acp") {
        acp(runs);
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics and printing

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Median of the runs and their spread.
fn summary(v: &[f64], unit: &str, digits: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{:.*} {unit} ({:.*}..{:.*})",
        digits,
        median(v),
        digits,
        min,
        digits,
        max
    )
}

fn goal(met: bool) -> &'static str {
    if met {
        "goal met"
    } else {
        "goal MISSED"
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

// ---------------------------------------------------------------------------------------------
// The echo floor

fn echo(batch: bool) {
    #[derive(Deserialize)]
    struct Req<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
    }
    let mut input = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut out = BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let id = serde_json::from_str::<Req>(line.trim_end())
            .ok()
            .and_then(|r| r.id)
            .map_or("null", RawValue::get);
        let _ = writeln!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        if (!batch || input.buffer().is_empty()) && out.flush().is_err() {
            break;
        }
    }
    let _ = out.flush();
}

/// The echo on tokio's stdin / stdout (a current-thread runtime, a flush per line): what the
/// blocking-thread hops of tokio's stdio cost before pod does anything.
fn echo_tokio() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    #[derive(Deserialize)]
    struct Req<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut input = tokio::io::BufReader::with_capacity(64 * 1024, tokio::io::stdin());
        let mut out = tokio::io::stdout();
        let mut line = String::new();
        loop {
            line.clear();
            match input.read_line(&mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let id = serde_json::from_str::<Req>(line.trim_end())
                .ok()
                .and_then(|r| r.id)
                .map_or("null", RawValue::get);
            let text = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n");
            if out.write_all(text.as_bytes()).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    });
    rt.shutdown_timeout(Duration::from_millis(10));
}

// ---------------------------------------------------------------------------------------------
// A workspace and a peer process over real pipes

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    /// A workspace with `pod.toml` = `manifest`, a 10-line `small.txt`, and `scenario.toml`.
    fn new(manifest: &str, scenario: &str) -> Workspace {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("pod.toml"), manifest).expect("manifest");
        std::fs::write(dir.path().join("scenario.toml"), scenario).expect("scenario");
        let small: String = (1..=10)
            .map(|i| format!("line {i} of a small file\n"))
            .collect();
        std::fs::write(dir.path().join("small.txt"), small).expect("small.txt");
        Workspace { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A manifest: offline model with `scenario.toml`, the given `[permissions]` body.
fn manifest(permissions: &str) -> String {
    format!(
        "[pod]\nname = \"bench\"\nworkspace = \".\"\nmax_steps = 10000\n\n[model]\nprovider = \"offline\"\nscenario = \"scenario.toml\"\n\n[tools]\nenabled = [\"bash\", \"read\", \"file_write\", \"edit\", \"grep\", \"glob\"]\n\n[permissions]\n{permissions}\n"
    )
}

/// A scenario whose first step makes `calls` read calls of `small.txt` (none: just text).
fn scenario_reads(steps: usize, calls_per_step: usize) -> String {
    let mut s = String::new();
    for _ in 0..steps {
        s.push_str("[[step]]\n");
        for _ in 0..calls_per_step {
            s.push_str("[[step.calls]]\ntool = \"read\"\ninput = { path = \"small.txt\" }\n");
        }
    }
    s.push_str("[[step]]\ntext = \"done\"\n");
    s
}

struct Peer {
    child: Child,
    input: Option<BufWriter<ChildStdin>>,
    output: BufReader<ChildStdout>,
    line: String,
}

impl Peer {
    fn spawn(mut command: Command) -> Peer {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let input = BufWriter::with_capacity(64 * 1024, child.stdin.take().expect("stdin"));
        let output = BufReader::with_capacity(64 * 1024, child.stdout.take().expect("stdout"));
        Peer {
            child,
            input: Some(input),
            output,
            line: String::new(),
        }
    }

    fn pod(ws: &Workspace, extra: &[&str]) -> Peer {
        let mut c = Command::new(pod_binary());
        c.arg("serve")
            .arg("--manifest")
            .arg(ws.path().join("pod.toml"))
            .args(extra)
            // Session logs stay in the throwaway workspace.
            .arg("--state-dir")
            .arg(ws.path().join(".pod"))
            .current_dir(ws.path());
        Peer::spawn(c)
    }

    /// `pod acp`, its sessions' logs in the throwaway workspace.
    fn acp(ws: &Workspace) -> Peer {
        let mut c = Command::new(pod_binary());
        c.arg("acp")
            .arg("--state-dir")
            .arg(ws.path().join(".pod"))
            .current_dir(ws.path());
        Peer::spawn(c)
    }

    /// `initialize` then `session/new` on a `pod acp` peer; the session id.
    fn acp_session(&mut self, ws: &Workspace) -> String {
        self.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#);
        let v: Value = serde_json::from_str(self.recv()).expect("json");
        assert!(v.get("result").is_some(), "initialize failed: {v}");
        let cwd = ws.path().canonicalize().expect("workspace");
        self.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
            "params": {"cwd": cwd, "mcpServers": []}})
            .to_string(),
        );
        let v: Value = serde_json::from_str(self.recv()).expect("json");
        v["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("session/new failed: {v}"))
            .to_string()
    }

    /// Sends request `id` and reads until its response (past notifications); the lines read.
    fn until_response(&mut self, id: u64, text: &str) -> usize {
        self.send(text);
        let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"#);
        let mut lines = 0;
        loop {
            lines += 1;
            let line = self.recv();
            if line.starts_with(&head) && !line.contains(r#""method""#) {
                assert!(line.contains(r#""result""#), "request {id} failed: {line}");
                return lines;
            }
        }
    }

    /// The echo floor in `mode`: `line`, `batch` or `tokio`.
    fn echo(mode: &str) -> Peer {
        let mut c = Command::new(std::env::current_exe().expect("current_exe"));
        c.env("POD_BENCH_ECHO", mode);
        Peer::spawn(c)
    }

    fn send(&mut self, text: &str) {
        let input = self.input.as_mut().expect("stdin open");
        input.write_all(text.as_bytes()).expect("write");
        input.write_all(b"\n").expect("write");
        input.flush().expect("flush");
    }

    /// The next line (without its newline).
    fn recv(&mut self) -> &str {
        self.line.clear();
        let n = self.output.read_line(&mut self.line).expect("read");
        assert!(n > 0, "peer closed its stdout");
        self.line.trim_end()
    }

    fn initialize(&mut self, approval: bool) -> Value {
        let caps = if approval {
            r#","capabilities":{"approval":{}}"#
        } else {
            ""
        };
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":1{caps}}}}}"#
        ));
        let v: Value = serde_json::from_str(self.recv()).expect("json");
        assert!(v.get("result").is_some(), "initialize failed: {v}");
        v
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes stdin and waits for exit.
    fn close(mut self) {
        self.input = None;
        let _ = self.child.wait();
    }
}

fn history(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"history","params":{{}}}}"#)
}

// ---------------------------------------------------------------------------------------------
// 1. Protocol overhead

struct Wire {
    p50: f64,
    p99: f64,
    rps: f64,
}

fn wire(peer: &mut Peer, sequential: usize, pipelined: usize) -> Wire {
    for i in 0..1000 {
        peer.send(&history(i));
        peer.recv();
    }
    let mut lat = Vec::with_capacity(sequential);
    for i in 0..sequential as u64 {
        let t = Instant::now();
        peer.send(&history(i));
        let _ = peer.recv();
        lat.push(us(t.elapsed()));
    }
    lat.sort_by(f64::total_cmp);
    let mut writer = peer.input.take().expect("stdin");
    let t = Instant::now();
    let feeder = std::thread::spawn(move || {
        for i in 0..pipelined as u64 {
            writer.write_all(history(i).as_bytes()).expect("write");
            writer.write_all(b"\n").expect("write");
        }
        writer.flush().expect("flush");
        writer
    });
    for _ in 0..pipelined {
        peer.recv();
    }
    let elapsed = t.elapsed();
    peer.input = Some(feeder.join().expect("feeder"));
    Wire {
        p50: percentile(&lat, 0.5),
        p99: percentile(&lat, 0.99),
        rps: pipelined as f64 / elapsed.as_secs_f64(),
    }
}

fn protocol(runs: usize) {
    println!("\n## 1. protocol overhead: `history` on an empty session, NDJSON over pipes");
    let ws = Workspace::new(&manifest("default_action = \"ask\""), "");
    let (seq, pipe) = (20_000, 100_000);
    let (mut pod, mut line, mut batch, mut tokio) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let mut p = Peer::pod(&ws, &[]);
        p.initialize(false);
        pod.push(wire(&mut p, seq, pipe));
        p.close();
        let mut e = Peer::echo("line");
        line.push(wire(&mut e, seq, pipe));
        e.close();
        let mut e = Peer::echo("batch");
        batch.push(wire(&mut e, seq, pipe));
        e.close();
        let mut e = Peer::echo("tokio");
        tokio.push(wire(&mut e, seq, pipe));
        e.close();
    }
    let col = |v: &[Wire], f: fn(&Wire) -> f64| v.iter().map(f).collect::<Vec<f64>>();
    println!("unpipelined ({seq} round trips per run):");
    for (name, v) in [
        ("pod", &pod),
        ("echo (flush per line)", &line),
        ("echo (batched flush)", &batch),
        ("echo on tokio stdio", &tokio),
    ] {
        println!("  {name:<22} p50 {}", summary(&col(v, |w| w.p50), "µs", 1));
        println!("  {name:<22} p99 {}", summary(&col(v, |w| w.p99), "µs", 1));
    }
    let pod50 = median(&col(&pod, |w| w.p50));
    println!(
        "  pod p50 - echo p50 = {:.1} µs; pod p50 < 50 µs: {}",
        pod50 - median(&col(&line, |w| w.p50)),
        goal(pod50 < 50.0)
    );
    println!("pipelined ({pipe} requests per run):");
    for (name, v) in [
        ("pod", &pod),
        ("echo (flush per line)", &line),
        ("echo (batched flush)", &batch),
        ("echo on tokio stdio", &tokio),
    ] {
        println!("  {name:<22} {}", summary(&col(v, |w| w.rps), "req/s", 0));
    }
    let podr = median(&col(&pod, |w| w.rps));
    let ratio = podr / median(&col(&line, |w| w.rps));
    println!(
        "  pod / echo (flush per line) {:.2}, pod / echo (batched) {:.3}; > 100k req/s: {}; >= half the echo floor (flush per line): {}",
        ratio,
        podr / median(&col(&batch, |w| w.rps)),
        goal(podr > 100_000.0),
        goal(ratio >= 0.5)
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Turn overhead

/// Runs one turn on a fresh pod; returns the time from `run` sent to its response read, with
/// every event read on the way.
fn timed_turn(ws: &Workspace) -> (Duration, usize) {
    let mut p = Peer::pod(ws, &[]);
    p.initialize(false);
    let t = Instant::now();
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"input":[{"type":"text","text":"go"}]}}"#);
    let mut events = 0;
    loop {
        let line = p.recv();
        if line.starts_with(r#"{"jsonrpc":"2.0","id":1,"#) {
            assert!(line.contains("\"result\""), "run failed: {line}");
            break;
        }
        events += 1;
    }
    let elapsed = t.elapsed();
    p.close();
    (elapsed, events)
}

/// The read tool's own cost per call, in-process, in µs: (the median of calls made one after
/// another, the average when `calls` run at once as a turn runs them).
fn read_tool_cost(ws: &Workspace, calls: usize) -> (f64, f64) {
    use futures::stream::{FuturesOrdered, StreamExt};
    use pod::tools::{read::Read, Tool, ToolContext};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let ctx = ToolContext::new(ws.path().canonicalize().expect("canonical"));
    let input = json!({ "path": "small.txt" });
    rt.block_on(async {
        for _ in 0..200 {
            assert!(!Read.run(input.clone(), &ctx).await.is_error);
        }
        let mut each = Vec::with_capacity(calls);
        for _ in 0..calls {
            let t = Instant::now();
            let _ = Read.run(input.clone(), &ctx).await;
            each.push(us(t.elapsed()));
        }
        each.sort_by(f64::total_cmp);
        let seq = percentile(&each, 0.5);
        let t = Instant::now();
        let mut all: FuturesOrdered<_> =
            (0..calls).map(|_| Read.run(input.clone(), &ctx)).collect();
        while all.next().await.is_some() {}
        let conc = us(t.elapsed()) / calls as f64;
        (seq, conc)
    })
}

fn turn(runs: usize) {
    const CALLS: usize = 1000;
    println!("\n## 2. turn overhead: one offline turn of {CALLS} `read` calls of a 10-line file");
    let allow = "default_action = \"ask\"\n[[permissions.rule]]\ntool = \"read\"\npattern = \"*\"\naction = \"allow\"";
    let deny = "default_action = \"ask\"\n[[permissions.rule]]\ntool = \"read\"\npattern = \"*\"\naction = \"deny\"";
    let ws_empty = Workspace::new(&manifest(allow), &scenario_reads(0, 0));
    let ws_allow = Workspace::new(&manifest(allow), &scenario_reads(1, CALLS));
    let ws_deny = Workspace::new(&manifest(deny), &scenario_reads(1, CALLS));
    let (mut empty, mut allowed, mut denied, mut seq, mut conc) =
        (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        empty.push(us(timed_turn(&ws_empty).0));
        let (t, events) = timed_turn(&ws_allow);
        assert!(events > 2 * CALLS);
        allowed.push(us(t));
        denied.push(us(timed_turn(&ws_deny).0));
        let (s, c) = read_tool_cost(&ws_allow, CALLS);
        seq.push(s);
        conc.push(c);
    }
    let base = median(&empty);
    let per = |v: &[f64]| {
        v.iter()
            .map(|t| (t - base) / CALLS as f64)
            .collect::<Vec<f64>>()
    };
    let (pa, pd) = (per(&allowed), per(&denied));
    println!("  turn without calls        {}", summary(&empty, "µs", 0));
    println!(
        "  turn, {CALLS} allowed reads {}",
        summary(&allowed, "µs", 0)
    );
    println!(
        "  turn, {CALLS} denied reads  {}",
        summary(&denied, "µs", 0)
    );
    println!(
        "  per allowed call (minus the empty turn) {}",
        summary(&pa, "µs", 1)
    );
    println!(
        "  read tool alone, in-process, one after another (p50) {}",
        summary(&seq, "µs", 1)
    );
    println!(
        "  read tool alone, in-process, {CALLS} at once    {}",
        summary(&conc, "µs", 1)
    );
    let over = median(&pa) - median(&conc);
    println!(
        "  pod overhead per allowed call (per call - read tool {CALLS} at once): {over:.1} µs; < 50 µs: {}",
        goal(over < 50.0)
    );
    println!(
        "  pod overhead per denied call: {}; < 50 µs: {}",
        summary(&pd, "µs", 1),
        goal(median(&pd) < 50.0)
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Approval round trip

/// One turn of `asks` asks, each answered `allow_once` at once. Returns per ask: (request
/// arrival, reply sent, the reply's response arrival, toolResult arrival).
fn ask_flow(ws: &Workspace, asks: usize) -> Vec<[Instant; 4]> {
    let mut p = Peer::pod(ws, &[]);
    p.initialize(true);
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"run","params":{"input":[{"type":"text","text":"go"}]}}"#);
    let mut out = Vec::with_capacity(asks);
    let mut pending: Option<[Instant; 4]> = None;
    let mut next_id = 10u64;
    loop {
        let line = p.recv().to_string();
        let arrived = Instant::now();
        if line.starts_with(r#"{"jsonrpc":"2.0","id":1,"#) {
            break;
        }
        if line.contains(r#""type":"permissionRequest""#) {
            let v: Value = serde_json::from_str(&line).expect("json");
            let rid = v["params"]["requestId"].as_str().expect("requestId");
            next_id += 1;
            p.send(&format!(
                r#"{{"jsonrpc":"2.0","id":{next_id},"method":"permissionReply","params":{{"requestId":"{rid}","decision":"allow_once"}}}}"#
            ));
            pending = Some([arrived, Instant::now(), arrived, arrived]);
        } else if line.starts_with(r#"{"jsonrpc":"2.0","id":"#) {
            if let Some(t) = pending.as_mut() {
                t[2] = arrived;
            }
        } else if line.contains(r#""type":"toolResult""#) {
            if let Some(mut t) = pending.take() {
                t[3] = arrived;
                out.push(t);
            }
        }
    }
    p.close();
    assert_eq!(out.len(), asks);
    out
}

fn p50_of(v: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = v.collect();
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
}

fn approval(runs: usize) {
    const ASKS: usize = 300;
    println!(
        "\n## 3. approval round trip: {ASKS} asks (one `read` per model step), answered at once"
    );
    let ws = Workspace::new(
        &manifest("default_action = \"ask\""),
        &scenario_reads(ASKS, 1),
    );
    // The same flow reading a FIFO: the tool's open() of it returns in the bench's writer
    // thread at the moment the tool starts reading, which timestamps "the tool started".
    let fifo_scenario = scenario_reads(ASKS, 1).replace("small.txt", "tool.fifo");
    let ws_fifo = Workspace::new(&manifest("default_action = \"ask\""), &fifo_scenario);
    let fifo = ws_fifo.path().join("tool.fifo");
    let c_path = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: mkfifo on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    let (seq, _) = read_tool_cost(&ws, 1000);
    let (mut total, mut after, mut reply_ack, mut start_req, mut start_reply) =
        (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let t = ask_flow(&ws, ASKS);
        total.push(p50_of(t.iter().map(|t| us(t[3] - t[0]))));
        after.push(p50_of(t.iter().map(|t| us(t[3] - t[1]))));
        reply_ack.push(p50_of(t.iter().map(|t| us(t[2] - t[1]))));
        let path = fifo.clone();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let opener = std::thread::spawn(move || {
            let mut started = Vec::with_capacity(ASKS);
            loop {
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .expect("open fifo");
                if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    break started;
                }
                started.push(Instant::now());
                let _ = f.write_all(b"x\n");
                // The tool reads the bytes and closes its end (a FIFO's size is 0, so it
                // stops there); wait for that (POLLERR) so the next open meets the next call.
                let mut pfd = libc::pollfd {
                    fd: std::os::fd::AsRawFd::as_raw_fd(&f),
                    events: 0,
                    revents: 0,
                };
                // SAFETY: one pollfd we own.
                unsafe { libc::poll(&mut pfd, 1, 5000) };
            }
        });
        let t = ask_flow(&ws_fifo, ASKS);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Meets the opener's pending open so it sees `stop`.
        let release = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .expect("open fifo");
        let started = opener.join().expect("opener");
        drop(release);
        if started.len() != ASKS {
            // A call met the previous call's writer (a scheduling race): pairs would be off.
            println!(
                "  (FIFO run discarded: {} opens for {ASKS} calls)",
                started.len()
            );
            continue;
        }
        start_req.push(p50_of(t.iter().zip(&started).map(|(t, s)| us(*s - t[0]))));
        start_reply.push(p50_of(t.iter().zip(&started).map(|(t, s)| us(*s - t[1]))));
    }
    let net: Vec<f64> = total.iter().map(|t| t - seq).collect();
    println!(
        "  request arrival -> tool started (FIFO open) p50 {}; < 200 µs: {}",
        summary(&start_req, "µs", 1),
        goal(median(&start_req) < 200.0)
    );
    println!(
        "  reply sent -> tool started (FIFO open) p50      {}",
        summary(&start_reply, "µs", 1)
    );
    println!(
        "  request arrival -> toolResult p50     {}",
        summary(&total, "µs", 1)
    );
    println!(
        "  reply sent -> toolResult p50          {}",
        summary(&after, "µs", 1)
    );
    println!(
        "  reply sent -> reply's response p50    {}",
        summary(&reply_ack, "µs", 1)
    );
    println!("  read tool alone (in-process, p50)     {seq:.1} µs");
    println!(
        "  request arrival -> toolResult minus the tool, p50 {}",
        summary(&net, "µs", 1)
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Start-up

fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn startup(runs: usize) {
    const STARTS: usize = 20;
    println!("\n## 4. start-up: spawn -> `initialize` result ({STARTS} starts per run), idle RSS");
    let ws = Workspace::new(&manifest("default_action = \"ask\""), "");
    let node = Command::new("node").arg("-e").arg("0").output().is_ok();
    let (mut pod, mut nodes, mut echo, mut rss) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let mut t_pod = vec![];
        let mut t_node = vec![];
        let mut t_echo = vec![];
        for _ in 0..STARTS {
            let t = Instant::now();
            let mut p = Peer::pod(&ws, &[]);
            p.initialize(false);
            t_pod.push(us(t.elapsed()) / 1000.0);
            std::thread::sleep(Duration::from_millis(20));
            if let Some(kib) = vm_rss_kib(p.pid()) {
                rss.push(kib as f64 / 1024.0);
            }
            p.close();
            let t = Instant::now();
            let mut e = Peer::echo("line");
            e.send(&history(0));
            e.recv();
            t_echo.push(us(t.elapsed()) / 1000.0);
            e.close();
            if node {
                let t = Instant::now();
                let _ = Command::new("node").arg("-e").arg("0").status();
                t_node.push(us(t.elapsed()) / 1000.0);
            }
        }
        pod.push(median(&t_pod));
        echo.push(median(&t_echo));
        if node {
            nodes.push(median(&t_node));
        }
    }
    println!(
        "  pod serve -> initialize result  {}",
        summary(&pod, "ms", 2)
    );
    println!(
        "  echo (this bench binary, larger than pod) -> first answer {}",
        summary(&echo, "ms", 2)
    );
    if node {
        println!(
            "  node -e 0 (spawn to exit)       {}",
            summary(&nodes, "ms", 2)
        );
    } else {
        println!("  node -e 0: node not found");
    }
    println!("  pod < 10 ms: {}", goal(median(&pod) < 10.0));
    println!(
        "  idle VmRSS after initialize {}; < 10 MiB: {}",
        summary(&rss, "MiB", 2),
        goal(median(&rss) < 10.0)
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Session log

/// A call's three items, as a turn records them.
fn call_items(n: usize) -> [pod::protocol::Item; 3] {
    let turn = "turn_0123456789abcdef0123456789abcdef";
    let call = format!("call_1_{n}");
    let content: String = (1..=10)
        .map(|i| format!("{i:>6}\tline {i} of a small file\n"))
        .collect();
    [
        json!({"type": "toolCall", "turnId": turn, "callId": call, "tool": "read",
               "input": {"path": "small.txt"}}),
        json!({"type": "permissionDecision", "turnId": turn, "callId": call,
               "decision": "allow", "by": "rule",
               "subjects": [{"tool": "read", "subject": "small.txt", "action": "allow",
                             "rule": {"index": 1, "tool": "read", "pattern": "*", "line": 12},
                             "opaque": false}]}),
        json!({"type": "toolResult", "turnId": turn, "callId": call, "isError": false,
               "content": content}),
    ]
    .map(|v| serde_json::from_value(v).expect("item"))
}

fn session(runs: usize) {
    use pod::session::SessionLog;
    // A multiple of three, so that every call has its result.
    const ITEMS: usize = 100_002;
    println!(
        "\n## 5. session log: {ITEMS} items (a call's toolCall, permissionDecision, toolResult)"
    );
    let items: Vec<pod::protocol::Item> = (0..ITEMS / 3 + 1)
        .flat_map(call_items)
        .take(ITEMS)
        .collect();
    let bytes: usize = items
        .iter()
        .map(|i| serde_json::to_string(i).map_or(0, |s| s.len() + 1))
        .sum();
    println!("  average item {} bytes", bytes / ITEMS);
    let (mut append, mut serialize, mut resume, mut process) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let ws = Workspace::new(&manifest("default_action = \"ask\""), "");
        let sessions = ws.path().join(".pod/sessions");
        let mut log = SessionLog::create(&sessions).expect("create");
        let id = log.id().to_string();
        let t = Instant::now();
        for item in &items {
            log.append(item).expect("append");
        }
        log.sync().expect("sync");
        append.push(us(t.elapsed()) / ITEMS as f64);
        drop(log);
        let t = Instant::now();
        for item in &items {
            std::hint::black_box(serde_json::to_vec(item).expect("json"));
        }
        serialize.push(us(t.elapsed()) / ITEMS as f64);
        let t = Instant::now();
        let resumed = SessionLog::resume(&sessions, &id, ws.path()).expect("resume");
        resume.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(resumed.items.len(), ITEMS);
        drop(resumed);
        let t = Instant::now();
        let mut p = Peer::pod(&ws, &["--resume", &id]);
        let v = p.initialize(false);
        process.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(v["result"]["session"]["resumed"], true);
        p.close();
    }
    println!(
        "  append per item (write + final fsync) {}",
        summary(&append, "µs", 2)
    );
    println!(
        "  of which serializing the item         {}",
        summary(&serialize, "µs", 2)
    );
    println!(
        "  SessionLog::resume, in-process        {}",
        summary(&resume, "ms", 1)
    );
    println!(
        "  pod serve --resume -> initialize     {}; < 1 s: {}",
        summary(&process, "ms", 1),
        goal(median(&process) < 1000.0)
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Scaling of Policy::decide

fn policy_with(rules: usize) -> (tempfile::TempDir, pod::permission::Policy) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from("[permissions]\ndefault_action = \"ask\"\n");
    for i in 0..rules.saturating_sub(1) {
        let (tool, pattern, action) = match i % 4 {
            0 => ("bash", format!("tool{i} *"), "allow"),
            1 => ("bash", format!("cmd{i} --flag *"), "deny"),
            2 => ("read", format!("dir{i}/*.rs"), "allow"),
            _ => ("file_write", format!("*.secret{i}"), "deny"),
        };
        let _ = write!(
            text,
            "[[permissions.rule]]\ntool = \"{tool}\"\npattern = \"{pattern}\"\naction = \"{action}\"\n"
        );
    }
    // The last rule is the one that matches: every subject scans the whole list.
    text.push_str(
        "[[permissions.rule]]\ntool = \"bash\"\npattern = \"git *\"\naction = \"allow\"\n",
    );
    let path = dir.path().join("pod.toml");
    std::fs::write(&path, text).expect("manifest");
    let policy = pod::manifest::Manifest::load(&path)
        .expect("manifest")
        .policy();
    (dir, policy)
}

/// µs per `decide`, median of `runs` samples of about 30 ms each.
fn time_decide(policy: &pod::permission::Policy, input: &Value, runs: usize) -> f64 {
    let once = || std::hint::black_box(policy.decide("bash", std::hint::black_box(input)));
    let t = Instant::now();
    let mut calib = 0u64;
    while t.elapsed() < Duration::from_millis(10) {
        once();
        calib += 1;
    }
    let iters = (calib * 3).max(1);
    let samples: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                once();
            }
            us(t.elapsed()) / iters as f64
        })
        .collect();
    median(&samples)
}

fn compound(n: usize) -> String {
    (0..n)
        .map(|i| format!("git log -n {i} --oneline"))
        .collect::<Vec<_>>()
        .join(" && ")
}

fn scaling(runs: usize) {
    println!("\n## 6. scaling of Policy::decide (bash; the matching rule is the last)");
    println!("  rules | 1 sub-command | 10 sub-commands | 100 sub-commands   (µs per decide)");
    let inputs: Vec<Value> = [1, 10, 100]
        .iter()
        .map(|&n| json!({ "command": compound(n) }))
        .collect();
    for rules in [10, 100, 1000, 10_000] {
        let (_dir, policy) = policy_with(rules);
        let d = policy.decide("bash", &inputs[0]);
        assert_eq!(d.decision, pod::protocol::Action::Allow);
        let t: Vec<f64> = inputs
            .iter()
            .map(|i| time_decide(&policy, i, runs))
            .collect();
        println!(
            "  {rules:>5} | {:>13.2} | {:>15.2} | {:>16.1}",
            t[0], t[1], t[2]
        );
    }
    let parse: Vec<f64> = [1, 10, 100]
        .iter()
        .map(|&n| {
            let c = compound(n);
            let t = Instant::now();
            let iters = 2000 / n.max(1) + 10;
            for _ in 0..iters {
                std::hint::black_box(pod::permission::shell::extract(std::hint::black_box(&c)));
            }
            us(t.elapsed()) / iters as f64
        })
        .collect();
    println!(
        "  shell parse alone | {:>5.2} | {:>15.2} | {:>16.1}",
        parse[0], parse[1], parse[2]
    );
}

// ---------------------------------------------------------------------------------------------
// 11. pod acp beside pod serve

/// Milliseconds per prompt over `prompts` prompts of `text`, and the lines each one wrote.
fn prompts_serve(ws: &Workspace, prompts: usize, text: &str) -> (f64, usize) {
    let mut p = Peer::pod(ws, &[]);
    p.initialize(false);
    let mut times = Vec::with_capacity(prompts);
    let mut lines = 0;
    for i in 0..prompts {
        let id = i as u64 + 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "run",
            "params": {"input": [{"type": "text", "text": text}]}});
        let t = Instant::now();
        lines = p.until_response(id, &request.to_string());
        times.push(us(t.elapsed()) / 1000.0);
    }
    p.close();
    (median(&times), lines)
}

fn prompts_acp(ws: &Workspace, prompts: usize, text: &str) -> (f64, usize) {
    let mut p = Peer::acp(ws);
    let session = p.acp_session(ws);
    let mut times = Vec::with_capacity(prompts);
    let mut lines = 0;
    for i in 0..prompts {
        let id = i as u64 + 2;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}});
        let t = Instant::now();
        lines = p.until_response(id, &request.to_string());
        times.push(us(t.elapsed()) / 1000.0);
    }
    p.close();
    (median(&times), lines)
}

fn acp(runs: usize) {
    const STARTS: usize = 20;
    const PROMPTS: usize = 200;
    println!("\n## 11. pod acp beside pod serve: start-up ({STARTS} starts per run), prompts ({PROMPTS} per run)");
    let ws = Workspace::new(&manifest("default_action = \"allow\""), "");
    let (mut serve, mut init, mut session, mut rss_serve, mut rss_acp) =
        (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let (mut t_serve, mut t_init, mut t_session) = (vec![], vec![], vec![]);
        for _ in 0..STARTS {
            let t = Instant::now();
            let mut p = Peer::pod(&ws, &[]);
            p.initialize(false);
            t_serve.push(us(t.elapsed()) / 1000.0);
            if let Some(kib) = vm_rss_kib(p.pid()) {
                rss_serve.push(kib as f64 / 1024.0);
            }
            p.close();
            let t = Instant::now();
            let mut a = Peer::acp(&ws);
            a.send(
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
            );
            a.recv();
            t_init.push(us(t.elapsed()) / 1000.0);
            a.close();
            let t = Instant::now();
            let mut a = Peer::acp(&ws);
            a.acp_session(&ws);
            t_session.push(us(t.elapsed()) / 1000.0);
            if let Some(kib) = vm_rss_kib(a.pid()) {
                rss_acp.push(kib as f64 / 1024.0);
            }
            a.close();
        }
        serve.push(median(&t_serve));
        init.push(median(&t_init));
        session.push(median(&t_session));
    }
    println!(
        "  pod serve -> initialize result (opens the session) {}",
        summary(&serve, "ms", 2)
    );
    println!(
        "  pod acp -> initialize result                        {}",
        summary(&init, "ms", 2)
    );
    println!(
        "  pod acp -> initialize + session/new results        {}",
        summary(&session, "ms", 2)
    );
    println!(
        "  VmRSS with one session open: pod serve {}, pod acp {}",
        summary(&rss_serve, "MiB", 2),
        summary(&rss_acp, "MiB", 2)
    );
    for (what, text) in [
        ("text only", "hello"),
        ("one read call", r#"@read {"path":"small.txt"}"#),
    ] {
        let (mut s, mut a) = (vec![], vec![]);
        let (mut s_lines, mut a_lines) = (0, 0);
        for _ in 0..runs {
            let (ms, n) = prompts_serve(&ws, PROMPTS, text);
            s.push(ms);
            s_lines = n;
            let (ms, n) = prompts_acp(&ws, PROMPTS, text);
            a.push(ms);
            a_lines = n;
        }
        println!(
            "  prompt, {what}: pod serve `run` {} ({s_lines} lines), pod acp `session/prompt` {} ({a_lines} lines)",
            summary(&s, "ms", 3),
            summary(&a, "ms", 3)
        );
    }
}
