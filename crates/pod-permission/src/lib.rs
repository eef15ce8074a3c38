//! The permission engine: compiled rules, subjects per tool call, and decisions that explain
//! themselves.
//!
//! Owns: what a rule means (docs/permissions.md), turning a tool call into subjects,
//! first-match per subject, strictest-of-subjects per call, opaque subjects failing closed,
//! session grants, and the managed lock on network subjects ([`Rules::lock_network`]). This is
//! the only module that decides allow / deny / ask; the runtime, the server and `pod explain`
//! all call [`Policy::decide`], so they cannot disagree.
//!
//! Must not touch: the wire, the model, running tools. It reads the file system only to resolve
//! symlinks of path subjects and, for hard links, to find read-denied files by identity
//! (`links.rs`).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod builtin;
mod grants;
pub mod kinds;
pub mod links;
pub mod lint;
pub mod mcp;
pub mod network;
pub mod path;
mod pattern;
pub mod prefix;
mod protected;
mod settled;
pub mod shell;

use std::path::{Path, PathBuf};

pub use grants::{DroppedGrant, SessionGrants};
pub use links::{FileRules, LinkDenial};
pub use pattern::Pattern;
pub use protected::{Protected, ProtectedPath};
pub use settled::{Asked, Settled};

use crate::builtin::Builtin;
pub use crate::builtin::SubjectKind;
use pod_protocol::{Action, Decision, RuleRef, SubjectDecision, ToolAnnotations};

/// One rule as written in the manifest, before compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSpec {
    pub tool: String,
    pub pattern: String,
    pub action: Action,
    pub message: Option<String>,
    /// Line of the rule in its file, for explanations.
    pub line: Option<usize>,
    /// The configuration file the rule was written in (the project's `pod.toml` or the user's
    /// configuration), for explanations.
    pub file: Option<String>,
    /// `methods`: the HTTP methods a `network` rule is limited to (plain `http://` requests
    /// only: such a rule never matches a `CONNECT` tunnel). `None`: every request and tunnel.
    pub methods: Option<Vec<String>>,
}

impl RuleSpec {
    /// A rule written nowhere (no file, line or message): for rules pod builds itself and tests.
    pub fn new(tool: impl Into<String>, pattern: impl Into<String>, action: Action) -> RuleSpec {
        RuleSpec {
            tool: tool.into(),
            pattern: pattern.into(),
            action,
            message: None,
            line: None,
            file: None,
            methods: None,
        }
    }

    /// This rule limited to the HTTP `methods` (see [`RuleSpec::methods`]).
    pub fn with_methods(mut self, methods: &[&str]) -> RuleSpec {
        self.methods = Some(methods.iter().map(|m| m.to_string()).collect());
        self
    }

    /// Whether the rule can decide a `network` subject: it names the `network` tool, or its tool
    /// pattern matches `network` and its pattern reads as a host pattern (`tool = "*"`,
    /// `pattern = "*"`).
    pub fn decides_network(&self) -> bool {
        self.tool.eq_ignore_ascii_case(network::NETWORK)
            || (Pattern::case_insensitive(&self.tool).matches(network::NETWORK)
                && network::HostPattern::compile(&self.pattern).is_ok())
    }
}

/// Why a rule cannot be compiled; `field` names the offending key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct RuleError {
    pub field: &'static str,
    pub problem: String,
}

#[derive(Debug, Clone)]
struct Rule {
    spec: RuleSpec,
    index: usize,
    tool: Pattern,
    pattern: Pattern,
    /// The pattern read as a host pattern, for a rule whose tool matches `network`
    /// (`network.rs`): network subjects are compared by labels, never as strings. `None`: the
    /// rule never decides a network subject.
    host: Option<network::HostPattern>,
    /// Under `allowed_domains_only` ([`Rules::lock_network`]): an allow or ask rule of a layer
    /// below the managed one, which never decides a network subject.
    network_locked: bool,
}

impl Rule {
    fn compile(index: usize, spec: RuleSpec) -> Result<Rule, RuleError> {
        check_pattern_text("tool", &spec.tool)?;
        check_pattern_text("pattern", &spec.pattern)?;
        let tool = Pattern::case_insensitive(&spec.tool);
        let host = if spec.tool.eq_ignore_ascii_case(network::NETWORK) {
            // A rule written for the network must read as one: refused at load otherwise.
            Some(
                network::HostPattern::compile(&spec.pattern).map_err(|e| RuleError {
                    field: "pattern",
                    problem: e.0,
                })?,
            )
        } else if tool.matches(network::NETWORK) {
            // A rule for many tools (`tool = "*"`) decides network subjects only when its
            // pattern reads as a host pattern.
            network::HostPattern::compile(&spec.pattern).ok()
        } else {
            None
        };
        let methods = match &spec.methods {
            None => None,
            Some(list) => Some(network::methods(&spec.tool, list).map_err(|e| RuleError {
                field: "methods",
                problem: e.0,
            })?),
        };
        Ok(Rule {
            index,
            tool,
            pattern: Pattern::new(&spec.pattern),
            host,
            network_locked: false,
            spec: RuleSpec {
                methods: methods.clone(),
                ..spec
            },
        })
    }

    /// Whether the rule's `methods` (if any) let through a request of `method` (`None`: a
    /// `CONNECT` tunnel, whose method cannot be seen).
    fn allows_method(&self, method: Option<&str>) -> bool {
        match (&self.spec.methods, method) {
            (None, _) => true,
            (Some(list), Some(m)) => list.iter().any(|l| l == m),
            (Some(_), None) => false,
        }
    }

    /// Whether the rule's pattern matches `text`, a subject of `tool`.
    fn matches_subject(&self, tool: &str, text: &str) -> bool {
        if tool == network::NETWORK {
            return self.host.as_ref().is_some_and(|h| h.matches(text));
        }
        self.pattern.matches(text)
    }

    fn reference(&self) -> RuleRef {
        RuleRef {
            index: self.index,
            tool: self.spec.tool.clone(),
            pattern: self.spec.pattern.clone(),
            line: self.spec.line,
            file: self.spec.file.clone(),
            message: self.spec.message.clone(),
        }
    }
}

fn check_pattern_text(field: &'static str, text: &str) -> Result<(), RuleError> {
    if text.is_empty() {
        return Err(RuleError {
            field,
            problem: "must not be empty (use \"*\" to match everything)".into(),
        });
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(RuleError {
            field,
            problem: format!("contains the control character {c:?}, which no subject holds"),
        });
    }
    Ok(())
}

/// The compiled `[permissions]` section.
#[derive(Debug, Clone)]
pub struct Rules {
    default_action: Action,
    rules: Vec<Rule>,
    /// For each built-in tool name, the rules that can apply to it, so a subject is only
    /// matched against rules that can match it.
    by_tool: Vec<(&'static str, RuleIndex)>,
    /// `allowed_domains_only` ([`Rules::lock_network`]).
    network_lock: bool,
}

/// The positions of a tool's rules (in declaration order) by the first byte of the subject
/// they can match: a pattern starting with a literal byte can only match subjects starting
/// with it; one starting with a wildcard is in every bucket. A line of 100,000 distinct
/// commands meets only the rules that can match each.
#[derive(Debug, Clone)]
struct RuleIndex {
    by_first_byte: Vec<Vec<usize>>,
    /// Rules starting with a wildcard: the only ones an empty subject can meet.
    wildcard_first: Vec<usize>,
}

impl RuleIndex {
    fn new(rules: &[Rule], applicable: impl Iterator<Item = usize> + Clone) -> RuleIndex {
        let first = |i: usize| match rules[i].spec.pattern.as_bytes().first() {
            Some(b'*' | b'?') | None => None,
            Some(&b) => Some(b),
        };
        let by_first_byte = (0..=255u8)
            .map(|b| {
                applicable
                    .clone()
                    .filter(|&i| first(i).is_none_or(|f| f == b))
                    .collect()
            })
            .collect();
        let wildcard_first = applicable.filter(|&i| first(i).is_none()).collect();
        RuleIndex {
            by_first_byte,
            wildcard_first,
        }
    }

    fn candidates(&self, text: &str) -> &[usize] {
        match text.as_bytes().first() {
            Some(&b) => &self.by_first_byte[usize::from(b)],
            None => &self.wildcard_first,
        }
    }
}

impl Rules {
    /// Compiles rules in declaration order; the error carries the 0-based position of the rule.
    pub fn compile(
        default_action: Action,
        specs: Vec<RuleSpec>,
    ) -> Result<Rules, (usize, RuleError)> {
        let rules: Vec<Rule> = specs
            .into_iter()
            .enumerate()
            .map(|(i, spec)| Rule::compile(i + 1, spec).map_err(|e| (i, e)))
            .collect::<Result<_, _>>()?;
        let by_tool = Builtin::names()
            .into_iter()
            .map(|tool| {
                let applicable = (0..rules.len()).filter(|&i| rules[i].tool.matches(tool));
                (tool, RuleIndex::new(&rules, applicable))
            })
            .collect();
        Ok(Rules {
            default_action,
            rules,
            by_tool,
            network_lock: false,
        })
    }

    /// These rules under the managed lock `allowed_domains_only` (docs/permissions.md, "The
    /// network"): a `network` subject is decided only by a deny rule (any layer may narrow) or by
    /// an allow or ask rule at a position `managed` marks true (0-based, the order of
    /// [`Rules::specs`]; past its end: not managed), and one none of them matches is denied,
    /// whatever `default_action` says and whatever the host's form (a name, an IP literal, a
    /// port), so no host reaches a prompt or a lower layer's default without a managed rule.
    pub fn lock_network(mut self, managed: &[bool]) -> Rules {
        for (i, rule) in self.rules.iter_mut().enumerate() {
            rule.network_locked =
                rule.spec.action != Action::Deny && !managed.get(i).copied().unwrap_or(false);
        }
        self.network_lock = true;
        self
    }

    /// Whether [`Rules::lock_network`] holds.
    pub fn network_locked(&self) -> bool {
        self.network_lock
    }

    /// Whether the rule at 0-based position `i` is kept from network subjects by
    /// [`Rules::lock_network`].
    pub(crate) fn locked_out_of_network(&self, i: usize) -> bool {
        self.rules.get(i).is_some_and(|r| r.network_locked)
    }

    pub fn default_action(&self) -> Action {
        self.default_action
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules as written, in order.
    pub fn specs(&self) -> impl Iterator<Item = &RuleSpec> {
        self.rules.iter().map(|r| &r.spec)
    }

    /// The first rule whose tool and pattern match.
    fn first_match(&self, tool: &str, text: &str) -> Option<&Rule> {
        self.first_match_for(tool, text, None)
    }

    /// The `network` rules that match the host subject `text` and are not kept from it by
    /// the managed lock, in order.
    fn host_rules<'a, 't>(&'a self, text: &'t str) -> impl Iterator<Item = &'a Rule> + use<'a, 't> {
        self.rules.iter().filter(move |r| {
            !r.network_locked
                && r.tool.matches(network::NETWORK)
                && r.matches_subject(network::NETWORK, text)
        })
    }

    /// [`Rules::first_match`], with a network subject's request `method` (`None`: a tunnel):
    /// a rule limited to other methods passes over it.
    fn first_match_for(&self, tool: &str, text: &str, method: Option<&str>) -> Option<&Rule> {
        if tool == network::NETWORK {
            return self.host_rules(text).find(|r| r.allows_method(method));
        }
        match self.by_tool.iter().find(|(t, _)| *t == tool) {
            Some((_, index)) => index
                .candidates(text)
                .iter()
                .map(|&i| &self.rules[i])
                .find(|r| r.pattern.matches(text)),
            None => self
                .rules
                .iter()
                .find(|r| r.tool.matches(tool) && r.pattern.matches(text)),
        }
    }

    /// First match for one subject; no match: the default. An opaque or unparsed subject is
    /// never allowed (an allow becomes an ask). Deny and ask rules are also tried on the
    /// commands the subject may run (`also_from`). A guess only counts when a deny or ask rule
    /// matches it (None otherwise).
    fn decide_subject(&self, subject: Subject) -> Option<SubjectDecision> {
        let rule = self.first_match_for(&subject.tool, &subject.text, subject.method.as_deref());
        // A network rule for this host passed over for its `methods`, before the one that
        // decided: said in the decision, so a refused tunnel or POST says why.
        let passed_over = if subject.tool == network::NETWORK {
            self.host_rules(&subject.text)
                .take_while(|r| rule.is_none_or(|d| r.index < d.index))
                .find(|r| !r.allows_method(subject.method.as_deref()))
                .map(|r| network::passed_over(r.index, &r.spec, subject.method.as_deref()))
        } else {
            None
        };
        // Under `allowed_domains_only` a host no managed rule names is denied, never asked
        // about, and never left to a lower layer's default.
        let locked = self.network_lock && subject.tool == network::NETWORK;
        let default = match &subject.default {
            _ if locked => Action::Deny,
            Some((action, _)) => *action,
            None => self.default_action,
        };
        let (mut action, mut rule_ref, mut note) = match (rule, &subject.problem) {
            _ if subject.deny_only => match rule {
                Some(r) if r.spec.action == Action::Deny => (
                    Action::Deny,
                    Some(r.reference()),
                    Some("a file the command writes".to_string()),
                ),
                _ => (Action::Allow, None, None),
            },
            _ if subject.guess => match rule {
                Some(r) if r.spec.action != Action::Allow => (
                    r.spec.action,
                    Some(r.reference()),
                    Some(format!(
                        "an argument that reads as a command line (`{}`): a program the engine \
                         does not know may run it",
                        subject.text
                    )),
                ),
                _ => (Action::Allow, None, None),
            },
            (_, Some(Problem::Invalid(why))) => (Action::Deny, None, Some(why.clone())),
            // The raw text of a command that did not parse holds every command of the line
            // (bash runs the lines before a syntax error), so no rule or default may allow it:
            // matching it would be the raw-string glob the engine exists to avoid.
            (rule, Some(Problem::Unparsed(why))) => {
                let action = rule.map_or(default, |r| r.spec.action);
                let note = if action == Action::Allow {
                    format!("{why}: an unparsed command is never allowed, so it asks")
                } else {
                    why.clone()
                };
                (
                    action.max(Action::Ask),
                    rule.map(Rule::reference),
                    Some(note),
                )
            }
            // Opaque only for what its first words say (`python3 -m pytest`), and allowed by a
            // rule that spells those words out before any wildcard: the rule names it.
            (Some(rule), Some(Problem::Opaque(_)))
                if rule.spec.action == Action::Allow
                    && subject
                        .named
                        .is_some_and(|n| literal_prefix(&rule.spec.pattern).len() >= n) =>
            {
                let named = subject.text.get(..subject.named.unwrap_or(0)).unwrap_or("");
                (
                    Action::Allow,
                    Some(rule.reference()),
                    Some(format!(
                        "rule {} names `{named}` as written, so it allows what the engine cannot read of it",
                        rule.index
                    )),
                )
            }
            // Soundness: what the engine cannot read is never allowed, by a rule or a default.
            (rule, Some(Problem::Opaque(why))) => {
                let action = rule.map_or(default, |r| r.spec.action);
                let note = if action == Action::Allow {
                    format!("{why}: it is never allowed, so it asks")
                } else {
                    why.clone()
                };
                (
                    action.max(Action::Ask),
                    rule.map(Rule::reference),
                    Some(note),
                )
            }
            (Some(rule), None) => (rule.spec.action, Some(rule.reference()), None),
            (None, None) if locked => (
                Action::Deny,
                None,
                Some(
                    "allowed_domains_only: no network rule of the managed layer allows or asks \
                     for this host"
                        .to_string(),
                ),
            ),
            (None, None) => (default, None, subject.default.map(|(_, note)| note)),
        };
        for &offset in &subject.also_from {
            let Some(part) = subject.text.get(offset..) else {
                continue;
            };
            // A command given as a path (`setarch x86_64 /bin/rm -rf x`) is tried as its
            // basename too, as the command word of a subject is.
            let base = command_basename(part);
            for part in std::iter::once(part).chain(base.as_deref()) {
                match self.first_match(&subject.tool, part) {
                    Some(r) if r.spec.action != Action::Allow && r.spec.action > action => {
                        action = r.spec.action;
                        rule_ref = Some(r.reference());
                        note = Some(format!(
                            "rule {} matched `{part}`, which this command may run",
                            r.index
                        ));
                    }
                    _ => {}
                }
            }
        }
        if let Some(passed) = passed_over {
            note = Some(match note {
                Some(n) => format!("{n}; {passed}"),
                None => passed,
            });
        }
        if (subject.guess || subject.deny_only) && rule_ref.is_none() {
            return None;
        }
        Some(SubjectDecision {
            tool: subject.tool,
            subject: subject.text,
            action,
            rule: rule_ref,
            opaque: subject.problem.as_ref().is_some_and(Problem::is_opaque),
            invalid: matches!(subject.problem, Some(Problem::Invalid(_))),
            note,
        })
    }
}

/// `words` as a bash line that reads back as exactly those words.
fn quote_words(words: &[String]) -> String {
    let quote = |w: &String| {
        let plain = !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b));
        if plain {
            w.clone()
        } else {
            format!("'{}'", w.replace('\'', r"'\''"))
        }
    };
    words.iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// The literal text of a rule pattern before its first wildcard.
fn literal_prefix(pattern: &str) -> &str {
    pattern.split(['*', '?']).next().unwrap_or("")
}

/// `text` with its first word reduced to its basename, when that word is a path (`/bin/rm -rf
/// x` gives `rm -rf x`).
fn command_basename(text: &str) -> Option<String> {
    let (head, rest) = match text.split_once(' ') {
        Some((head, rest)) => (head, Some(rest)),
        None => (text, None),
    };
    let base = head.rsplit('/').next().filter(|b| !b.is_empty())?;
    if base == head {
        return None;
    }
    Some(match rest {
        Some(rest) => format!("{base} {rest}"),
        None => base.to_string(),
    })
}

/// What the permission layer knows: the rules (or none: the layer is off) and the workspace
/// path subjects are relative to.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Option<Rules>,
    workspace: PathBuf,
    /// Pod's own files, which writes never get without a person (`protected.rs`).
    protected: Protected,
    /// The MCP servers the session may have: where their paths start, their defaults.
    mcp: Vec<mcp::McpServerRules>,
}

impl Policy {
    /// `workspace` should be canonical so that symlink-resolved subjects compare with it.
    pub fn new(rules: Option<Rules>, workspace: PathBuf) -> Policy {
        Policy {
            rules,
            workspace,
            protected: Protected::default(),
            mcp: Vec::new(),
        }
    }

    /// This policy knowing `servers` as well (their working folders and defaults); a server
    /// already known by that name (in any case) is replaced.
    pub fn with_mcp(mut self, servers: impl IntoIterator<Item = mcp::McpServerRules>) -> Policy {
        for server in servers {
            self.mcp
                .retain(|s| !s.name.eq_ignore_ascii_case(&server.name));
            self.mcp.push(server);
        }
        self
    }

    /// The configured MCP server a tool name belongs to, if any.
    pub fn mcp_server(&self, tool: &str) -> Option<&mcp::McpServerRules> {
        let (server, _) = mcp::split(tool)?;
        self.mcp
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(server))
    }

    pub fn rules(&self) -> Option<&Rules> {
        self.rules.as_ref()
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The decision for one call of `tool` with `input`: one entry per subject, the call's
    /// action the strictest of them (deny > ask > allow). With the layer off, every subject is
    /// allowed and no rule is named.
    pub fn decide(&self, tool: &str, input: &serde_json::Value) -> Decision {
        self.decide_with(tool, input, None)
    }

    /// [`Policy::decide`] for a tool with `annotations` (an MCP tool's, as its server lists
    /// them; `None`: none known, which reads as MCP's defaults, a destructive tool). Ignored
    /// for other tools.
    pub fn decide_with(
        &self,
        tool: &str,
        input: &serde_json::Value,
        annotations: Option<&ToolAnnotations>,
    ) -> Decision {
        let kind = SubjectKind::of(tool);
        if kind != SubjectKind::Mcp {
            let subjects = subjects(tool, kind, input, &self.workspace);
            let governed = kinds::governed(self.rules.as_ref(), tool, &subjects);
            return self.decide_subjects(subjects, governed);
        }
        let effect = mcp::Effect::of(annotations);
        let call = mcp::subjects(tool, input, effect, self.mcp_server(tool), &self.workspace);
        let governed = match &self.rules {
            Some(rules) => mcp::governed(
                rules,
                &self.protected,
                &self.workspace,
                tool,
                &call.paths,
                effect,
            ),
            None => Vec::new(),
        };
        self.decide_subjects(call.subjects, governed)
    }

    /// The decision for one exec the exec gate stopped (docs/permissions.md, "The exec gate"):
    /// `argv` is read as the shell analysis reads the same words quoted, so a rule decides an
    /// exec as it decides that command written in a `bash` call of `tool`.
    pub fn decide_exec(&self, tool: &str, argv: &[String]) -> Decision {
        let line = quote_words(argv);
        let subjects = shell_subjects(tool, &line, &self.workspace);
        let governed = kinds::governed(self.rules.as_ref(), tool, &subjects);
        self.decide_subjects(subjects, governed)
    }

    /// The programs deny and ask rules of shell `tool` name as their first word, literally
    /// (`rm` of `rm *`): the exec gate knows copies of them by their content.
    pub fn exec_programs(&self, tool: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for spec in self.rules.iter().flat_map(|r| r.specs()) {
            if spec.action == Action::Allow || !spec.tool.eq_ignore_ascii_case(tool) {
                continue;
            }
            let word = spec.pattern.split(' ').next().unwrap_or("");
            let word = word.rsplit('/').next().unwrap_or(word);
            if !word.is_empty() && !word.contains(['*', '?', '[']) && !out.iter().any(|w| w == word)
            {
                out.push(word.to_string());
            }
        }
        out
    }

    /// The decision for a call whose subjects could not be extracted (the runtime gave up on a
    /// parse): one unparsed subject, the input's JSON, which nothing allows.
    pub fn unparsed(&self, tool: &str, input: &serde_json::Value, why: &str) -> Decision {
        let text = match input.get("command").and_then(|c| c.as_str()) {
            Some(command) => command.trim().to_string(),
            None => sorted_json(input),
        };
        self.decide_subjects(
            vec![Subject::new(
                tool,
                text,
                Some(Problem::Unparsed(why.to_string())),
            )],
            Vec::new(),
        )
    }

    /// Each subject decided (a shell line's subjects come deduplicated), plus `governed`, the
    /// subjects other tools' rules add (`kinds.rs`, `mcp.rs`), with protected writes tightened
    /// (`protected.rs`).
    fn decide_subjects(&self, subjects: Vec<Subject>, governed: Vec<SubjectDecision>) -> Decision {
        let subjects = subjects.into_iter();
        let mut subjects: Vec<SubjectDecision> = match &self.rules {
            Some(rules) => subjects
                .filter_map(|s| {
                    // A file a program writes that no deny rule names still counts when it is
                    // one of pod's own files (`git diff --output=pod.toml`).
                    let written = s.deny_only.then(|| SubjectDecision {
                        tool: s.tool.clone(),
                        subject: s.text.clone(),
                        action: Action::Allow,
                        rule: None,
                        opaque: false,
                        invalid: false,
                        note: Some("a file the command writes".into()),
                    });
                    rules
                        .decide_subject(s)
                        .or_else(|| written.filter(|w| self.protected.covers(w, &self.workspace)))
                })
                .collect(),
            None => subjects
                .filter(|s| !s.guess && !s.deny_only)
                .map(|s| SubjectDecision {
                    tool: s.tool,
                    subject: s.text,
                    action: Action::Allow,
                    rule: None,
                    opaque: s.problem.as_ref().is_some_and(Problem::is_opaque),
                    invalid: false,
                    note: Some("no [permissions] section: the layer is off".into()),
                })
                .collect(),
        };
        subjects.extend(governed);
        if self.rules.is_some() {
            self.protected.tighten(&mut subjects, &self.workspace);
        }
        let decision = subjects
            .iter()
            .map(|s| s.action)
            .max()
            .unwrap_or(Action::Allow);
        Decision { decision, subjects }
    }
}

/// Why a subject cannot simply be matched.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Problem {
    /// Its effect cannot be read statically: a default never allows it.
    Opaque(String),
    /// The command line did not parse: nothing allows it (at best it asks).
    Unparsed(String),
    /// The input is malformed for this tool: denied whatever the rules say (fail closed).
    Invalid(String),
}

impl Problem {
    fn is_opaque(&self) -> bool {
        matches!(self, Problem::Opaque(_) | Problem::Unparsed(_))
    }
}

/// One thing the rules are matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subject {
    /// Whose rules apply (the called tool, or `file_write`/`read` for shell redirections).
    tool: String,
    text: String,
    problem: Option<Problem>,
    /// Offsets in `text` where a command this one may run starts: deny and ask rules are also
    /// tried there.
    also_from: Vec<usize>,
    /// Not known to run (an argument that reads as a command line): only deny and ask rules
    /// apply.
    guess: bool,
    /// A file a program writes (`cp x .env`): only deny rules apply (and protected paths).
    deny_only: bool,
    /// Opaque only for what `text[..named]` says (see `ShellCommand::named`).
    named: Option<usize>,
    /// The default when no rule matches, when it is not `[permissions] default_action` (an MCP
    /// server's default for the tool's annotations), and the note saying so.
    default: Option<(Action, String)>,
    /// A `network` subject's HTTP method (a plain `http://` request, or `GET` for
    /// `web_fetch`); `None`: a `CONNECT` tunnel, which rules with `methods` never match.
    method: Option<String>,
}

impl Subject {
    fn plain(tool: &str, text: String) -> Subject {
        Subject::new(tool, text, None)
    }

    fn new(tool: &str, text: String, problem: Option<Problem>) -> Subject {
        Subject {
            tool: tool.to_string(),
            text,
            problem,
            also_from: Vec::new(),
            guess: false,
            deny_only: false,
            named: None,
            default: None,
            method: None,
        }
    }
}

/// The location the input of a tool of `kind` names, read here once for the subjects and for
/// the runtime's pin of the same location: `None` for a kind without one; `Some(None)` for a
/// path tool's input without a string `path`; a search root's absent `path` is `.` (the
/// workspace).
pub fn input_path(kind: SubjectKind, input: &serde_json::Value) -> Option<Option<&str>> {
    match (kind, input.get("path")) {
        (SubjectKind::Path | SubjectKind::SearchRoot, Some(serde_json::Value::String(p))) => {
            Some(Some(p.as_str()))
        }
        (SubjectKind::SearchRoot, None | Some(serde_json::Value::Null)) => Some(Some(".")),
        (SubjectKind::Path | SubjectKind::SearchRoot, _) => Some(None),
        _ => None,
    }
}

fn subjects(
    tool: &str,
    kind: SubjectKind,
    input: &serde_json::Value,
    workspace: &Path,
) -> Vec<Subject> {
    let field = |name: &str| input.get(name);
    let invalid = |why: String| {
        vec![Subject::new(
            tool,
            sorted_json(input),
            Some(Problem::Invalid(why)),
        )]
    };
    match kind {
        SubjectKind::Shell => match field("command").and_then(|c| c.as_str()) {
            Some(command) => shell_subjects(tool, command, workspace),
            None => invalid("the input has no string `command`".into()),
        },
        SubjectKind::Path | SubjectKind::SearchRoot => {
            let Some(Some(raw)) = input_path(kind, input) else {
                return invalid("the input has no string `path`".into());
            };
            path::subjects(raw, workspace)
                .into_iter()
                .map(|text| Subject::plain(tool, text))
                .collect()
        }
        // `web_fetch` sends GET requests.
        SubjectKind::Url => match field("url").and_then(|u| u.as_str()) {
            Some(url) => vec![Subject {
                method: Some("GET".into()),
                ..network_subject(url, network::url_subject(url))
            }],
            None => invalid("the input has no string `url`".into()),
        },
        SubjectKind::Network => {
            let host = field("host").and_then(|h| h.as_str());
            let port = match field("port") {
                None | Some(serde_json::Value::Null) => Some(443),
                Some(p) => p.as_u64().and_then(|p| u16::try_from(p).ok()),
            };
            let method = match field("method") {
                None | Some(serde_json::Value::Null) => Some(None),
                Some(serde_json::Value::String(m)) => Some(Some(m.clone())),
                Some(_) => None,
            };
            match (host, port, method) {
                (Some(host), Some(port), Some(method)) => vec![Subject {
                    method,
                    ..network_subject(host, network::subject(host, port))
                }],
                (None, ..) => invalid("the input has no string `host`".into()),
                (_, None, _) => invalid("`port` is not a number from 0 to 65535".into()),
                (.., None) => invalid(
                    "`method` is not a string (an HTTP method; absent for a CONNECT tunnel)".into(),
                ),
            }
        }
        SubjectKind::Nothing => Vec::new(),
        // MCP calls have subjects of their own (`Policy::decide_with`); here only as JSON.
        SubjectKind::Json | SubjectKind::Mcp => vec![Subject::plain(tool, sorted_json(input))],
    }
}

/// The `network` subject of a host, or an invalid one naming why the host is refused (a NUL,
/// a byte no DNS name has: denied whatever the rules say).
fn network_subject(raw: &str, subject: Result<String, network::HostError>) -> Subject {
    match subject {
        Ok(text) => Subject::plain(network::NETWORK, text),
        Err(e) => Subject::new(
            network::NETWORK,
            raw.escape_debug().to_string(),
            Some(Problem::Invalid(e.0)),
        ),
    }
}

/// The input as compact JSON with object keys sorted at every level, so that a rule pattern does
/// not depend on the order the model wrote the keys in.
fn sorted_json(value: &serde_json::Value) -> String {
    fn sort(value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                serde_json::Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sort(v)))
                        .collect(),
                )
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(sort).collect())
            }
            other => other.clone(),
        }
    }
    sort(value).to_string()
}

fn shell_subjects(tool: &str, command: &str, workspace: &Path) -> Vec<Subject> {
    let parsed = shell::extract(command);
    let mut out = Vec::new();
    for cmd in parsed.commands {
        let problem = cmd.opaque.as_ref().map(|o| match o {
            shell::Opaque::ParseError(_) => Problem::Unparsed(o.describe()),
            _ => Problem::Opaque(o.describe()),
        });
        if let Some(path_form) = cmd.path_form {
            out.push(Subject {
                guess: cmd.guess,
                ..Subject::new(tool, path_form, problem.clone())
            });
        }
        out.push(Subject {
            also_from: cmd.also_from,
            guess: cmd.guess,
            named: cmd.named,
            ..Subject::new(tool, cmd.text, problem)
        });
    }
    for redirect in parsed.redirects {
        // `cp key DIR` writes `DIR/key` only when DIR is a folder: look now (a command of the
        // line that may make one first makes the subject opaque instead).
        if let (Some(dir), None) = (&redirect.inside, &redirect.opaque) {
            if !workspace.join(dir).is_dir() {
                continue;
            }
        }
        let target_tool = match redirect.kind {
            shell::RedirectKind::Read => "read",
            shell::RedirectKind::Write => "file_write",
        };
        if let Some(opaque) = redirect.opaque {
            out.push(Subject::new(
                target_tool,
                redirect.path,
                Some(Problem::Opaque(opaque.describe())),
            ));
            continue;
        }
        let paths = path::subjects(&redirect.path, workspace);
        // /proc/self, /dev/fd, ...: resolved in the shell's process, not the pod's.
        let per_process = |p: &str| {
            p == "/dev/stdin"
                || p.starts_with("/proc/")
                || p.starts_with("/dev/fd/")
                || p == "/proc"
        };
        if per_process(&redirect.path) || paths.iter().any(|p| per_process(p)) {
            out.push(Subject::new(
                target_tool,
                redirect.path,
                Some(Problem::Opaque(
                    "the path names a process's own files (/proc, /dev/fd), which the shell \
                     resolves differently from the pod"
                        .into(),
                )),
            ));
            continue;
        }
        let deny_only = redirect.written_by.is_some();
        out.extend(paths.into_iter().map(|text| Subject {
            deny_only,
            ..Subject::plain(target_tool, text)
        }));
    }
    out
}
