//! `pod conformance`: runs the conformance kit (`tests/conformance/`) against any pod command and
//! reports one line per requirement.
//!
//! The kit is built into the binary ([`kit::EMBEDDED_REQUIREMENTS`], via `include_str!`), so the
//! command works from anywhere; `--kit DIR` reads `DIR/requirements/*.toml` and
//! `DIR/manifests/*.toml` instead (to try edits without rebuilding, or to run another kit).
//! Every requirement runs against a fresh process in a fresh temporary workspace.
//!
//! Owns: the kit format ([`kit`]), message matching ([`matcher`]), running ([`runner`]) and the
//! report. Must not touch: the server or the engine; a pod is only ever a command to run.

pub mod kit;
pub mod matcher;
pub mod runner;

use std::path::Path;

use kit::Tier;

/// Runs the kit; returns the exit code: 0 when every MUST requirement passed, 1 when one failed,
/// 2 when the kit does not load or the filter selects nothing.
pub fn main(pod_cmd: &str, filter: Option<&str>, kit_dir: Option<&Path>) -> u8 {
    let requirements = match kit::load(kit_dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pod conformance: the kit does not load: {e}");
            return 2;
        }
    };
    let selected: Vec<&kit::Requirement> = requirements
        .iter()
        .filter(|r| filter.is_none_or(|f| r.id.contains(f)))
        .collect();
    if selected.is_empty() {
        eprintln!("pod conformance: no requirement id contains {filter:?}");
        return 2;
    }
    let (mut passed, mut failed, mut must_failed) = (0, 0, 0);
    for requirement in selected {
        let tier = requirement.tier.as_str();
        match runner::run(requirement, pod_cmd) {
            Ok(()) => {
                passed += 1;
                println!("PASS {} [{tier}] {}", requirement.id, requirement.title);
            }
            Err(why) => {
                failed += 1;
                if requirement.tier == Tier::Must {
                    must_failed += 1;
                }
                println!(
                    "FAIL {} [{tier}] {}: {why}\n     spec ({}): {}",
                    requirement.id, requirement.title, requirement.source, requirement.spec
                );
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    u8::from(must_failed > 0)
}
