//! The exec gate's judge for one `bash` call, and for the session's hooks: the permission
//! engine's decision for each exec, by its role, and the analysis's prediction it is compared
//! with.
//!
//! Owns: what a call's execs are held to (docs/permissions.md, "The exec gate"): a shell-made
//! exec must be allowed by a rule, the default or a grant on its concrete argv (an ask runs only
//! when the analysis predicted it and the call was approved with it); a program-made exec is
//! held to deny and ask rules only; deny and ask rules also apply to every other name of the
//! run ([`Exec::aliases`]). And the record of every shell-made exec the analysis did not
//! predict (`analysisMismatch`). A hook's execs ([`CallJudge::for_hook`]) are all program-made:
//! its own command is the user's configuration, what it runs (a test runner, a formatter, a
//! script of the workspace the model may have written) is held to deny and ask rules, and with
//! nobody to answer an ask there, an ask stops it.
//!
//! Must not touch: the tracing (`sandbox::gate`), matching rules (`permission`): it reads
//! decisions and applies them.

use std::sync::{Arc, Mutex};

use crate::permission::{Policy, SessionGrants};
use crate::protocol::{Action, Decision, RuleAt, SubjectDecision};
use crate::sandbox::gate::{Exec, ExecJudge, Identities, Role, Verdict};

/// Most mismatches recorded for one call.
const MAX_MISMATCHES: usize = 100;

/// One shell-made exec the analysis did not predict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mismatch {
    pub line: String,
    pub argv: Vec<String>,
}

/// The judge of one call.
#[derive(Debug)]
pub(super) struct CallJudge {
    policy: Arc<Policy>,
    tool: String,
    grants: SessionGrants,
    /// The subjects the call asked for and was approved with (tool, text).
    approved: Vec<(String, String)>,
    /// The commands the analysis predicted (the call's shell subjects).
    predicted: Vec<String>,
    identities: Arc<Identities>,
    mismatches: Mutex<Vec<Mismatch>>,
    /// Every ask counts as approved (the analysis is switched off in a test build: the call
    /// runs as if the user had allowed it once, so deny rules and a deny default are what the
    /// gate alone holds).
    approve_asks: bool,
    /// Every exec counts as program-made and none is a mismatch (a hook's judge).
    hook: bool,
}

impl CallJudge {
    /// The judge of a call of shell `tool` whose decision (as it ran) is `decision`.
    pub fn new(
        policy: Arc<Policy>,
        tool: &str,
        decision: &Decision,
        grants: SessionGrants,
        identities: Arc<Identities>,
        approve_asks: bool,
    ) -> CallJudge {
        let approved = decision
            .subjects
            .iter()
            .filter(|s| s.action == Action::Ask)
            .map(|s| (s.tool.clone(), s.subject.clone()))
            .collect();
        let predicted = decision
            .subjects
            .iter()
            .filter(|s| s.tool.eq_ignore_ascii_case(tool))
            .map(|s| s.subject.clone())
            .collect();
        CallJudge {
            policy,
            tool: tool.to_string(),
            grants,
            approved,
            predicted,
            identities,
            mismatches: Mutex::new(Vec::new()),
            approve_asks,
            hook: false,
        }
    }

    /// The judge of every process a hook starts: deny and ask rules of shell `tool` hold each
    /// exec; nothing was approved.
    pub fn for_hook(policy: Arc<Policy>, tool: &str, identities: Arc<Identities>) -> CallJudge {
        CallJudge {
            policy,
            tool: tool.to_string(),
            grants: SessionGrants::default(),
            approved: Vec::new(),
            predicted: Vec::new(),
            identities,
            mismatches: Mutex::new(Vec::new()),
            approve_asks: false,
            hook: true,
        }
    }

    /// The mismatches recorded so far (taken).
    pub fn take_mismatches(&self) -> Vec<Mismatch> {
        std::mem::take(&mut *self.mismatches.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn predicted(&self, argv: &[String]) -> bool {
        self.predicted.iter().any(|p| predicts(p, argv))
    }

    fn approved(&self, s: &SubjectDecision) -> bool {
        if self.approve_asks {
            return true;
        }
        let words: Vec<String> = s.subject.split(' ').map(String::from).collect();
        self.approved.iter().any(|(tool, text)| {
            tool.eq_ignore_ascii_case(&s.tool) && (*text == s.subject || predicts(text, &words))
        }) || (!s.opaque && self.grants.contains(&s.tool, &s.subject))
    }

    /// Whether `s` was decided by a deny or ask rule.
    fn rule_restricts(&self, s: &SubjectDecision) -> bool {
        let Some(rule) = &s.rule else {
            return false;
        };
        let action = self
            .policy
            .rules()
            .and_then(|r| r.specs().nth(rule.index.wrapping_sub(1)))
            .map(|spec| spec.action);
        // A rule that cannot be found again counts (fail closed).
        action.is_none_or(|a| a != Action::Allow)
    }

    /// Why `decision` stops the exec, if it does. `rules_only`: only subjects a rule decided
    /// count (a program-made exec, or another name of the run).
    fn stops(&self, decision: &Decision, rules_only: bool) -> Option<String> {
        let default = self.policy.rules().map(|r| r.default_action());
        for s in &decision.subjects {
            // Only a deny or ask rule's own word counts here: not the default, and not the ask
            // an allow rule gives an opaque subject.
            if rules_only && !self.rule_restricts(s) {
                continue;
            }
            match s.action {
                Action::Allow => {}
                Action::Deny => return Some(s.line(default, RuleAt::Line)),
                Action::Ask if self.approved(s) => {}
                Action::Ask => {
                    return Some(format!(
                        "{}; an ask at exec time runs only when the call was approved with it",
                        s.line(default, RuleAt::Line)
                    ))
                }
            }
        }
        None
    }
}

impl ExecJudge for CallJudge {
    fn judge(&self, exec: &Exec) -> Verdict {
        let role = if self.hook { Role::Program } else { exec.role };
        if role == Role::Shell && !self.predicted(&exec.argv) {
            let mut list = self.mismatches.lock().unwrap_or_else(|e| e.into_inner());
            if list.len() < MAX_MISMATCHES {
                list.push(Mismatch {
                    line: exec.line(),
                    argv: exec.argv.clone(),
                });
            }
        }
        let primary = self.policy.decide_exec(&self.tool, &exec.argv);
        if let Some(why) = self.stops(&primary, role == Role::Program) {
            return Verdict::Stop(why);
        }
        for alias in &exec.aliases {
            let decision = self.policy.decide_exec(&self.tool, alias);
            if let Some(why) = self.stops(&decision, true) {
                return Verdict::Stop(format!(
                    "{why} (the program `{}` is {})",
                    exec.exe.display(),
                    alias.first().map_or("", String::as_str)
                ));
            }
        }
        Verdict::Run
    }

    fn identities(&self) -> Option<&Identities> {
        Some(&self.identities)
    }
}

/// Whether the predicted subject text `predicted` foresaw an exec of `argv`: the program words
/// are the same by basename and the words match, a predicted word holding an expansion or a
/// glob matching the rest (it may become any words); also when `argv` is a tail of the
/// prediction (a wrapper or prefix assignment the engine kept: `command ls`, `FOO=1 make`).
fn predicts(predicted: &str, argv: &[String]) -> bool {
    let words: Vec<&str> = predicted.split(' ').filter(|w| !w.is_empty()).collect();
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let dynamic = |w: &str| w.contains(['$', '*', '?', '[', '{', '~', '`']);
    let Some(program) = argv.first() else {
        return false;
    };
    (0..words.len()).any(|start| {
        let tail = &words[start..];
        if base(tail[0]) != base(program) {
            return false;
        }
        let mut i = 1;
        for (n, w) in tail.iter().enumerate().skip(1) {
            if dynamic(w) {
                return true;
            }
            match argv.get(n) {
                Some(a) if a == w => i = n + 1,
                _ => return false,
            }
        }
        i == argv.len()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn a_prediction_is_a_pattern_of_words() {
        assert!(predicts("rm -rf x", &argv("rm -rf x")));
        assert!(predicts("rm -rf x", &argv("/bin/rm -rf x")));
        assert!(!predicts("rm -rf x", &argv("rm -rf y")));
        assert!(!predicts("rm -rf", &argv("rm -rf y")));
        assert!(predicts("cat $F", &argv("cat a b")));
        assert!(predicts("ls *.rs", &argv("ls a.rs b.rs")));
        assert!(predicts("FOO=1 make", &argv("make")));
        assert!(predicts("timeout 5 make all", &argv("make all")));
        assert!(!predicts("git status", &argv("git push")));
    }
}
