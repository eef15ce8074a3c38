//! Lints over compiled rules, for `pod check`: mistakes the manifest parser cannot see.
//!
//! - a rule shadowed by an earlier rule (it can never decide anything);
//! - `default_action = "allow"` with only deny rules (a blocklist: the weakest posture);
//! - a rule for tools that are not enabled, or for an MCP server the manifest does not name;
//! - a pattern no subject can ever match (subjects are normalized, see permissions.md);
//! - a bash allow rule for commands the engine cannot read (`python3 -c *`): it can only ask;
//! - an allow for `edit`, `grep` or `glob` on paths that a rule of a tool governing it
//!   (`file_write`, `read`) denies: the deny wins there, so the allow does nothing.

use std::path::Path;

use super::{Pattern, RuleSpec, Rules, SubjectKind};
use crate::builtin::Builtin;
use pod_protocol::Action;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// One lint finding, about the rule at `line` (or the section when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// The file the rule is in, when it has one (layered configuration).
    pub file: Option<String>,
    pub line: Option<usize>,
    pub message: String,
}

/// Every tool name rules can be about: the built-ins, whether enabled or not, plus the subject
/// tools of shell redirections (`read`, `file_write`).
fn known_tools() -> Vec<&'static str> {
    let mut tools = Builtin::names();
    tools.push(crate::network::NETWORK);
    tools
}

pub fn lint(
    rules: &Rules,
    enabled: &[String],
    workspace: &Path,
    section_line: Option<usize>,
) -> Vec<Finding> {
    let specs: Vec<&RuleSpec> = rules.specs().collect();
    let mut out = Vec::new();
    for (j, rule) in specs.iter().enumerate() {
        let warn = |message: String| Finding {
            severity: Severity::Warning,
            file: rule.file.clone(),
            line: rule.line,
            message,
        };
        // Under `allowed_domains_only` a lower layer's allow or ask rule decides no host, so it
        // shadows no host either.
        let shadows = |i: usize| {
            covers(specs[i], rule) && !(rules.locked_out_of_network(i) && rule.decides_network())
        };
        if let Some(i) = (0..j).find(|&i| shadows(i)) {
            out.push(warn(format!(
                "rule {} ({} \"{}\" {}) is unreachable: rule {} ({} \"{}\" {}{}) matches everything it matches first",
                j + 1,
                rule.tool,
                rule.pattern,
                rule.action,
                i + 1,
                specs[i].tool,
                specs[i].pattern,
                specs[i].action,
                specs[i].line.map(|l| format!(", line {l}")).unwrap_or_default(),
            )));
        }
        let tool = Pattern::case_insensitive(&rule.tool);
        let known: Vec<&str> = known_tools()
            .iter()
            .copied()
            .filter(|t| tool.matches(t))
            .collect();
        let bash_redirect_target = known.iter().any(|t| *t == "read" || *t == "file_write")
            && enabled.iter().any(|e| e == "bash");
        // The network's rules decide what bash's processes reach through the proxy and what
        // web_fetch fetches.
        let bash_redirect_target = bash_redirect_target
            || (known.contains(&crate::network::NETWORK)
                && enabled.iter().any(|e| e == "bash" || e == "web_fetch"));
        let names_mcp = rule
            .tool
            .get(..crate::builtin::MCP_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(crate::builtin::MCP_PREFIX));
        if known.is_empty() && names_mcp {
            // Checked against the configured servers by `mcp_servers`.
        } else if known.is_empty() {
            out.push(warn(format!(
                "rule {}: tool \"{}\" matches no tool pod has ({})",
                j + 1,
                rule.tool,
                known_tools().join(", ")
            )));
        } else if !known.iter().any(|t| enabled.iter().any(|e| e == t)) && !bash_redirect_target {
            out.push(warn(format!(
                "rule {}: tool \"{}\" is not enabled in [tools] (enabled: {})",
                j + 1,
                rule.tool,
                enabled.join(", ")
            )));
        }
        if let Some(why) = allows_only_opaque(rule, &known) {
            out.push(warn(format!(
                "rule {} ({} \"{}\" allow) can never allow: {why}, which is never allowed, so it asks",
                j + 1,
                rule.tool,
                rule.pattern
            )));
        }
        for why in never_matches(rule, &known, workspace) {
            out.push(warn(format!(
                "rule {}: pattern \"{}\" can never match: {why}",
                j + 1,
                rule.pattern
            )));
        }
    }
    out.extend(kind_conflicts(&specs));
    if rules.default_action() == Action::Allow
        && !specs.is_empty()
        && specs.iter().all(|r| r.action == Action::Deny)
    {
        out.push(Finding {
            severity: Severity::Warning,
            file: None,
            line: section_line,
            message:
                "default_action = \"allow\" with only deny rules is a blocklist: every command \
                      nobody thought of runs unasked. Consider default_action = \"ask\" (or \
                      \"deny\" plus allow rules)"
                    .into(),
        });
    }
    out
}

/// An allow for a tool on paths a governing tool's rule denies: `file_write "*.env" deny` with
/// `edit "*.env" allow` (in either order) denies every edit of those paths anyway.
fn kind_conflicts(specs: &[&RuleSpec]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (j, allow) in specs.iter().enumerate() {
        if allow.action != Action::Allow {
            continue;
        }
        let allow_tool = Pattern::case_insensitive(&allow.tool);
        for governed in Builtin::ALL {
            let tool = governed.name();
            if !allow_tool.matches(tool) {
                continue;
            }
            for kind in governed.governed_by().iter().map(|b| b.name()) {
                let conflict = specs.iter().enumerate().find(|(_, deny)| {
                    let deny_tool = Pattern::case_insensitive(&deny.tool);
                    deny.action == Action::Deny
                        && deny_tool.matches(kind)
                        && !deny_tool.matches(tool)
                        && (deny.pattern == allow.pattern
                            || pattern_covers(&deny.pattern, &allow.pattern, false)
                            || pattern_covers(&allow.pattern, &deny.pattern, false))
                });
                if let Some((i, deny)) = conflict {
                    out.push(Finding {
                        severity: Severity::Warning,
                        file: allow.file.clone(),
                        line: allow.line,
                        message: format!(
                            "rule {} allows {tool} on \"{}\", but rule {} ({} \"{}\" deny{}) \
                             denies {kind} there, and {kind} rules also govern {tool}: those \
                             {tool} calls are denied. Deny {tool} there too, or narrow the allow",
                            j + 1,
                            allow.pattern,
                            i + 1,
                            deny.tool,
                            deny.pattern,
                            deny.line.map(|l| format!(", line {l}")).unwrap_or_default(),
                        ),
                    });
                }
            }
        }
    }
    out
}

/// True when `earlier` matches
/// every subject `later` can match, so `later` never decides. Conservative: it may miss some
/// shadowing, it never reports a rule that can still decide.
fn covers(earlier: &RuleSpec, later: &RuleSpec) -> bool {
    // An earlier rule limited to some HTTP methods passes over the others, and over tunnels.
    let methods_cover = match (&earlier.methods, &later.methods) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(a), Some(b)) => b.iter().all(|m| a.contains(m)),
    };
    methods_cover
        && pattern_covers(&earlier.tool, &later.tool, true)
        && pattern_covers(&earlier.pattern, &later.pattern, false)
}

/// Does pattern `a` match every string pattern `b` matches? Sound when `a` has no `?`: then each
/// wildcard of `b` must line up with a `*` of `a`, which absorbs whatever it expands to.
fn pattern_covers(a: &str, b: &str, case_insensitive: bool) -> bool {
    let compile = |s: &str| {
        if case_insensitive {
            Pattern::case_insensitive(s)
        } else {
            Pattern::new(s)
        }
    };
    let pa = compile(a);
    let b_literal = !b.contains(['*', '?']);
    if !b_literal && a.contains('?') {
        return false;
    }
    // `b`'s bare form (from a trailing " *") is part of what it matches.
    pa.matches(b) && b.strip_suffix(" *").is_none_or(|bare| pa.matches(bare))
}

/// Why a bash allow rule only matches commands the engine cannot read, judged on its pattern
/// with each wildcard read as a plain word.
fn allows_only_opaque(rule: &RuleSpec, tools: &[&str]) -> Option<String> {
    if rule.action != Action::Allow || tools != ["bash"] {
        return None;
    }
    let sample = rule.pattern.replace(['*', '?'], "x");
    let subjects = super::shell::extract(&sample);
    // A rule that spells out what makes a command opaque (`python3 -m pytest *`) allows it.
    let literal = rule.pattern.split(['*', '?']).next().unwrap_or("");
    match subjects.commands.as_slice() {
        [only] if only.named.is_some_and(|n| literal.len() >= n) => None,
        [only] => only.opaque.as_ref().map(|o| o.describe()),
        _ => None,
    }
}

fn never_matches(rule: &RuleSpec, tools: &[&str], workspace: &Path) -> Vec<String> {
    let p = &rule.pattern;
    let mut out = Vec::new();
    let kinds: Vec<SubjectKind> = tools.iter().map(|t| SubjectKind::of(t)).collect();
    let only = |k: &[SubjectKind]| !kinds.is_empty() && kinds.iter().all(|x| k.contains(x));
    if only(&[SubjectKind::Shell]) {
        let body = p.strip_suffix(" *").unwrap_or(p);
        if body.starts_with(' ') || body.ends_with(' ') || body.contains("  ") {
            out.push("command subjects are trimmed and single-spaced".to_string());
        }
    }
    if only(&[SubjectKind::Path, SubjectKind::SearchRoot]) {
        let ws = workspace.to_string_lossy();
        if p.starts_with("./") || p.contains("/./") || p.contains("/../") || p.starts_with("../") {
            out.push("path subjects are normalized (no `.` or `..` components)".to_string());
        } else if p.len() > 1 && p.ends_with('/') {
            out.push("path subjects never end with `/`".to_string());
        } else if !ws.is_empty() && p.starts_with(ws.as_ref()) && !p.starts_with('*') {
            out.push(format!(
                "paths inside the workspace are matched relative to it (write \"{}\")",
                p.strip_prefix(ws.as_ref())
                    .unwrap_or(p)
                    .trim_start_matches('/')
            ));
        }
    }
    out
}

/// Rules naming an MCP server (`mcp__NAME__…` with a literal NAME) that is not among `servers`:
/// they match no tool the pod offers.
pub fn mcp_servers(rules: &Rules, servers: &[&str]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (j, rule) in rules.specs().enumerate() {
        let Some((server, _)) = super::mcp::split(&rule.tool) else {
            continue;
        };
        if server.contains(['*', '?']) || servers.iter().any(|s| s.eq_ignore_ascii_case(server)) {
            continue;
        }
        out.push(Finding {
            severity: Severity::Warning,
            file: rule.file.clone(),
            line: rule.line,
            message: format!(
                "rule {}: tool \"{}\" names MCP server \"{server}\", which is not in \
                 [mcp.servers] ({})",
                j + 1,
                rule.tool,
                if servers.is_empty() {
                    "none is configured".to_string()
                } else {
                    format!("configured: {}", servers.join(", "))
                }
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(tool: &str, pattern: &str, action: Action) -> RuleSpec {
        RuleSpec::new(tool, pattern, action)
    }

    #[test]
    fn covering_is_sound_for_prefixes_and_suffixes() {
        assert!(pattern_covers("git *", "git push *", false));
        assert!(pattern_covers("*", "anything *", false));
        assert!(pattern_covers("*.env", "config/*.env", false));
        assert!(pattern_covers("rm *", "rm", false));
        assert!(!pattern_covers("git push *", "git *", false));
        assert!(!pattern_covers("git ?", "git *", false));
        assert!(!pattern_covers("rm -rf *", "rm *", false)); // bare `rm`
        assert!(pattern_covers("BASH", "bash", true));
    }

    /// A rule limited to some methods passes the others (and tunnels) on: it hides a later
    /// rule only when that one is limited to methods it lists.
    #[test]
    fn a_rule_with_methods_shadows_only_rules_within_its_methods() {
        let get = spec("network", "a.test", Action::Allow).with_methods(&["GET", "HEAD"]);
        assert!(!covers(&get, &spec("network", "a.test", Action::Deny)));
        assert!(!covers(
            &get,
            &spec("network", "a.test", Action::Deny).with_methods(&["POST"])
        ));
        assert!(covers(
            &get,
            &spec("network", "a.test", Action::Deny).with_methods(&["HEAD"])
        ));
        assert!(covers(
            &spec("network", "a.test", Action::Allow),
            &spec("network", "a.test", Action::Deny).with_methods(&["GET"])
        ));
    }

    #[test]
    fn a_rule_the_network_lock_keeps_from_hosts_shadows_no_host() {
        let specs = vec![
            spec("*", "*", Action::Ask),
            spec("network", "*.corp.example", Action::Allow),
        ];
        let unreachable = |rules: &Rules| {
            lint(rules, &[], Path::new("/w"), Some(1))
                .iter()
                .any(|f| f.message.starts_with("rule 2 ") && f.message.contains("unreachable"))
        };
        let open = Rules::compile(Action::Ask, specs).unwrap();
        assert!(unreachable(&open));
        assert!(!unreachable(&open.lock_network(&[false, true])));
    }

    #[test]
    fn shadowed_blocklist_disabled_and_never_matching_rules_are_reported() {
        let rules = Rules::compile(
            Action::Allow,
            vec![
                spec("bash", "git *", Action::Deny),
                spec("bash", "git push *", Action::Deny),
                spec("edit", "*", Action::Deny),
                spec("read", "./.env", Action::Deny),
                spec("bsh", "x", Action::Deny),
            ],
        )
        .unwrap();
        let enabled = vec!["bash".to_string(), "read".to_string()];
        let found = lint(&rules, &enabled, Path::new("/w"), Some(1));
        let text: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
        assert!(text
            .iter()
            .any(|m| m.starts_with("rule 2 ") && m.contains("unreachable")));
        assert!(text
            .iter()
            .any(|m| m.starts_with("rule 3: tool \"edit\" is not enabled")));
        assert!(text
            .iter()
            .any(|m| m.starts_with("rule 4: pattern \"./.env\" can never match")));
        assert!(text
            .iter()
            .any(|m| m.starts_with("rule 5: tool \"bsh\" matches no tool")));
        assert!(text.iter().any(|m| m.contains("is a blocklist")));
        assert_eq!(found.len(), 5);
    }

    #[test]
    fn an_allow_rule_for_commands_the_engine_cannot_read_is_reported() {
        let rules = Rules::compile(
            Action::Ask,
            vec![
                spec("bash", "python3 -c *", Action::Allow),
                // It names the module it runs, so it allows it.
                spec("bash", "python3 -m pytest *", Action::Allow),
                spec("bash", "python3 *", Action::Allow),
                spec("bash", "eval *", Action::Deny),
            ],
        )
        .unwrap();
        let found = lint(&rules, &["bash".to_string()], Path::new("/w"), None);
        let text: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].starts_with("rule 1 (bash \"python3 -c *\" allow) can never allow"));
    }

    #[test]
    fn an_edit_allow_under_a_file_write_deny_is_reported() {
        let rules = Rules::compile(
            Action::Ask,
            vec![
                spec("edit", "*.env", Action::Allow),
                spec("file_write", "*.env", Action::Deny),
                spec("grep", "*", Action::Allow),
                spec("read", "secrets/*", Action::Deny),
                spec("edit", "src/*", Action::Allow),
            ],
        )
        .unwrap();
        let all: Vec<String> = known_tools().iter().map(|t| t.to_string()).collect();
        let found = lint(&rules, &all, Path::new("/w"), None);
        let text: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
        assert!(
            text.iter()
                .any(|m| m.starts_with("rule 1 allows edit on \"*.env\", but rule 2")),
            "{text:#?}"
        );
        assert!(
            text.iter()
                .any(|m| m.starts_with("rule 3 allows grep on \"*\", but rule 4")),
            "{text:#?}"
        );
        assert!(!text.iter().any(|m| m.starts_with("rule 5 ")), "{text:#?}");
    }
}
