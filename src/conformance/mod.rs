//! `pod conformance`: runs the conformance kit (`tests/conformance/`) against any pod command,
//! in one or both framings, and reports one result per requirement and framing, as lines or as
//! one JSON document. `--protocol` picks the kit's section: pod protocol v1 (`pod serve`, the
//! default) or the Agent Client Protocol (`pod acp`, NDJSON only).
//!
//! The kit is built into the binary ([`kit::EMBEDDED_REQUIREMENTS`], via `include_str!`), so the
//! command works from anywhere; `--kit DIR` reads `DIR/requirements/*.toml` and
//! `DIR/manifests/*.toml` instead (to try edits without rebuilding, or to run another kit).
//! Every requirement runs against a fresh process in a fresh temporary workspace. Before the
//! first one, the command is started once: if it exits without answering, that is reported once
//! (exit status, the end of its stderr) instead of as a failure of every requirement.
//!
//! Owns: the kit format ([`kit`]), message matching ([`matcher`]), running ([`runner`]), the
//! report and the exit status. Must not touch: the server or the engine; a pod is only ever a
//! command to run.

pub mod kit;
pub mod matcher;
pub mod runner;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use kit::{Framing, Protocol, Requirement, Tier};

/// Every requirement that ran passed (with `--strict`, SHOULD ones too).
pub const EXIT_PASSED: u8 = 0;
/// A MUST requirement failed (with `--strict`, or a SHOULD one).
pub const EXIT_FAILED: u8 = 1;
/// The kit does not load, or the filter selects nothing.
pub const EXIT_USAGE: u8 = 2;
/// The pod command exited without answering its first `initialize`.
pub const EXIT_CANNOT_START: u8 = 3;

/// What `pod conformance` was asked to do.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// The pod to test (`sh -c`, `{manifest}` and `{workspace}` replaced); not needed for
    /// `list`.
    pub pod_cmd: Option<&'a str>,
    /// The section of the kit to run: the requirements of this protocol.
    pub protocol: Protocol,
    /// How long an `expect` step waits ([`runner::EXPECT_TIMEOUT`] by default).
    pub expect_timeout: Duration,
    /// Run the requirements whose id contains any of these (all when empty).
    pub filters: &'a [String],
    pub kit_dir: Option<&'a Path>,
    pub framings: &'a [Framing],
    /// A failed SHOULD fails the run.
    pub strict: bool,
    /// One JSON document on stdout instead of lines.
    pub json: bool,
    /// List the requirements instead of running them.
    pub list: bool,
}

/// How one requirement did in one framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Pass,
    /// A MUST failed, or a SHOULD with `--strict`.
    Fail,
    /// A SHOULD failed (without `--strict`).
    Warn,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome<'a> {
    id: &'a str,
    tier: &'static str,
    framing: &'static str,
    status: Status,
    title: &'a str,
    spec: &'a str,
    source: &'a str,
    /// Why it failed: `step N: ...`.
    reason: Option<String>,
    millis: u128,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CannotStart {
    command: String,
    status: String,
    stderr: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    protocol: &'static str,
    framings: Vec<&'static str>,
    strict: bool,
    results: Vec<Outcome<'a>>,
    passed: usize,
    failed: usize,
    warned: usize,
    cannot_start: Option<CannotStart>,
    exit_code: u8,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed<'a> {
    id: &'a str,
    protocol: &'static str,
    tier: &'static str,
    title: &'a str,
    spec: &'a str,
    source: &'a str,
    manifest: &'a str,
    framings: Vec<&'static str>,
}

/// Runs (or lists) the kit; returns the exit status ([`EXIT_PASSED`], [`EXIT_FAILED`],
/// [`EXIT_USAGE`], [`EXIT_CANNOT_START`]).
pub fn main(options: &Options<'_>) -> u8 {
    let requirements = match kit::load(options.kit_dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pod conformance: the kit does not load: {e}");
            return EXIT_USAGE;
        }
    };
    let selected: Vec<&Requirement> = requirements
        .iter()
        .filter(|r| r.protocol == options.protocol)
        .filter(|r| options.filters.is_empty() || options.filters.iter().any(|f| r.id.contains(f)))
        .filter(|r| !r.framings(options.framings).is_empty())
        .collect();
    if selected.is_empty() {
        eprintln!(
            "pod conformance: no {} requirement id contains any of {:?} in framing {:?}",
            options.protocol.as_str(),
            options.filters,
            options
                .framings
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
        );
        return EXIT_USAGE;
    }
    if options.list {
        return list(&selected, options);
    }
    let Some(pod_cmd) = options.pod_cmd else {
        eprintln!("pod conformance: --pod-cmd is required to run the kit");
        return EXIT_USAGE;
    };
    let pod = runner::PodCommand {
        command: pod_cmd,
        expect_timeout: options.expect_timeout,
    };
    let mut report = Report {
        protocol: options.protocol.as_str(),
        framings: options.framings.iter().map(|f| f.as_str()).collect(),
        strict: options.strict,
        results: Vec::new(),
        passed: 0,
        failed: 0,
        warned: 0,
        cannot_start: None,
        exit_code: EXIT_PASSED,
    };
    // One start before anything else: a command that cannot start is one finding, not N.
    let first = selected[0];
    let framing = first.framings(options.framings)[0];
    if let Err(exited) = runner::preflight(&first.manifest.1, first.protocol, framing, pod) {
        report.cannot_start = Some(CannotStart {
            command: pod_cmd.to_string(),
            status: exited.status.clone(),
            stderr: exited.stderr.clone(),
        });
        report.exit_code = EXIT_CANNOT_START;
        if options.json {
            print_json(&report);
        } else {
            println!(
                "CANNOT START `{pod_cmd}`: before answering initialize, {exited}\nno requirement was run"
            );
        }
        return EXIT_CANNOT_START;
    }
    for requirement in selected {
        for framing in requirement.framings(options.framings) {
            let started = Instant::now();
            let result = runner::run(requirement, framing, pod);
            let status = match (&result, requirement.tier, options.strict) {
                (Ok(()), _, _) => Status::Pass,
                (Err(_), Tier::Should, false) => Status::Warn,
                (Err(_), _, _) => Status::Fail,
            };
            let outcome = Outcome {
                id: &requirement.id,
                tier: requirement.tier.as_str(),
                framing: framing.as_str(),
                status,
                title: &requirement.title,
                spec: &requirement.spec,
                source: &requirement.source,
                reason: result.err(),
                millis: started.elapsed().as_millis(),
            };
            match status {
                Status::Pass => report.passed += 1,
                Status::Fail => report.failed += 1,
                Status::Warn => report.warned += 1,
            }
            if !options.json {
                print_line(&outcome);
            }
            report.results.push(outcome);
        }
    }
    report.exit_code = if report.failed > 0 {
        EXIT_FAILED
    } else {
        EXIT_PASSED
    };
    if options.json {
        print_json(&report);
    } else {
        let hint = if report.warned > 0 {
            " (a SHOULD failed: --strict makes that fail the run)"
        } else {
            ""
        };
        println!(
            "{} passed, {} failed, {} warned{hint}",
            report.passed, report.failed, report.warned
        );
    }
    report.exit_code
}

fn list(selected: &[&Requirement], options: &Options<'_>) -> u8 {
    let listed: Vec<Listed> = selected
        .iter()
        .map(|r| Listed {
            id: &r.id,
            protocol: r.protocol.as_str(),
            tier: r.tier.as_str(),
            title: &r.title,
            spec: &r.spec,
            source: &r.source,
            manifest: &r.manifest.0,
            framings: r
                .framings(options.framings)
                .iter()
                .map(|f| f.as_str())
                .collect(),
        })
        .collect();
    if options.json {
        print_json(&listed);
    } else {
        for r in &listed {
            println!(
                "{} [{}] [{}] {}",
                r.id,
                r.tier,
                r.framings.join(" "),
                r.title
            );
        }
    }
    EXIT_PASSED
}

fn print_line(outcome: &Outcome<'_>) {
    let head = match outcome.status {
        Status::Pass => "PASS",
        Status::Fail => "FAIL",
        Status::Warn => "WARN",
    };
    let mut line = format!(
        "{head} {} [{}] [{}] {}",
        outcome.id, outcome.tier, outcome.framing, outcome.title
    );
    if let Some(why) = &outcome.reason {
        line.push_str(&format!(
            ": {why}\n     spec ({}): {}",
            outcome.source, outcome.spec
        ));
    }
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

fn print_json(value: &impl Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(e) => eprintln!("pod conformance: cannot write the report: {e}"),
    }
}
