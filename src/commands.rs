//! The one-shot commands: `pod check`, `pod explain`, `pod sessions`, `pod schema`. Each returns
//! the process exit code. What a command reports is its output (stdout), `pod check`'s findings
//! included; an input it cannot read at all (a missing file, bad `--input` JSON) goes to stderr.

use std::path::Path;

use crate::manifest::Manifest;
use crate::permission::lint::{self, Severity};
use crate::protocol::{Decision, RuleAt, ToolAnnotations};

/// `pod check`: validate, then lint. Exit 1 when anything is an error.
pub fn check(path: &Path) -> u8 {
    let manifest = match Manifest::load(path) {
        Ok(m) => m,
        Err(e) => {
            println!("{e}");
            return 1;
        }
    };
    let findings = check_findings(&manifest);
    let file = path.display();
    for f in &findings {
        let severity = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match f.line {
            Some(line) => println!("{file}:{line}: {severity}: {}", f.message),
            None => println!("{file}: {severity}: {}", f.message),
        }
    }
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    if findings.is_empty() {
        let permissions = match &manifest.permissions {
            Some(r) => format!(
                "{} rules, default_action = \"{}\"",
                r.len(),
                r.default_action()
            ),
            None => "no [permissions]: every tool call runs".to_string(),
        };
        println!("{file}: ok ({permissions})");
    }
    print!("{}", sandbox_text(&manifest));
    u8::from(errors > 0)
}

/// What this machine will enforce for the manifest's `[sandbox]`, for `pod check`.
pub fn sandbox_text(manifest: &Manifest) -> String {
    use crate::manifest::SandboxMode;
    use crate::permission::path;
    use crate::protocol::NetworkAccess;
    let config = &manifest.sandbox;
    let plan = crate::sandbox::plan(config);
    if config.mode == SandboxMode::Off {
        return "sandbox: off (mode = \"off\"): processes that tool calls and hooks start run \
                with the pod's own rights\n"
            .to_string();
    }
    let abi = match plan.info.abi {
        0 => "the kernel has no Landlock".to_string(),
        n => format!("kernel Landlock ABI {n}"),
    };
    let state = if plan.info.enforced {
        "enforced".to_string()
    } else if plan.apply {
        "partly enforced".to_string()
    } else {
        "NOT enforced".to_string()
    };
    let mut out = format!("sandbox: landlock, {abi}: {state}\n");
    let mut writable: Vec<String> = manifest
        .writable
        .iter()
        .chain(&config.writable)
        .map(|w| {
            let shown = path::display(w, &manifest.workspace);
            if w.exists() {
                shown
            } else {
                format!("{shown} (missing: not writable until created)")
            }
        })
        .collect();
    writable.push("$TMPDIR (a private folder per session)".into());
    writable.push("/dev/null and the other device files a shell needs".into());
    out.push_str(&format!("  writable: {}\n", writable.join(", ")));
    out.push_str("  everything else: read and execute only\n");
    let network = match (config.network, plan.info.network) {
        (_, NetworkAccess::Deny) => {
            "TCP connect and bind refused (UDP, DNS and Unix sockets are not covered)"
        }
        (NetworkAccess::Deny, NetworkAccess::Allow) => "allowed (deny is NOT enforced)",
        _ => "allowed",
    };
    out.push_str(&format!("  network: {network}\n"));
    out.push_str("  processes: every process a call starts is killed when the call ends\n");
    for gap in &plan.gaps {
        out.push_str(&format!("  not held: {gap}\n"));
    }
    out
}

/// Every finding about a loaded manifest: rule lints, skills that do not load, hooks that
/// cannot run.
pub fn check_findings(manifest: &Manifest) -> Vec<lint::Finding> {
    let mut findings = Vec::new();
    if let Some(rules) = &manifest.permissions {
        findings.extend(lint::lint(
            rules,
            &manifest.tools,
            &manifest.workspace,
            manifest.permissions_line,
        ));
    }
    if let Some(rules) = &manifest.permissions {
        let servers: Vec<&str> = manifest
            .mcp
            .servers
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        findings.extend(lint::mcp_servers(rules, &servers));
    }
    for server in manifest.mcp.servers.iter().filter(|s| s.enabled) {
        let crate::manifest::McpTransport::Stdio { command, .. } = &server.transport;
        if let Some(problem) = program_problem(Some(command)) {
            findings.push(lint::Finding {
                severity: Severity::Warning,
                line: server.line,
                message: format!(
                    "mcp.servers.{}: {problem}, so the server will not start and its tools are \
                     not offered",
                    server.name
                ),
            });
        }
    }
    for e in crate::skills::Skills::load_all(&manifest.skill_dirs).1 {
        findings.push(lint::Finding {
            severity: Severity::Error,
            line: None,
            message: format!("skill: {e}"),
        });
    }
    let plan = crate::sandbox::plan(&manifest.sandbox);
    if !plan.gaps.is_empty() {
        findings.push(lint::Finding {
            severity: if manifest.sandbox.required {
                Severity::Error
            } else {
                Severity::Warning
            },
            line: manifest.sandbox.line,
            message: if manifest.sandbox.required {
                format!(
                    "sandbox: required = true, but this machine cannot enforce it (pod serve \
                     will refuse to start): {}",
                    plan.gaps.join("; ")
                )
            } else {
                format!(
                    "sandbox: this machine cannot enforce all of it: {}",
                    plan.gaps.join("; ")
                )
            },
        });
    }
    let sandboxed = manifest.sandbox.mode == crate::manifest::SandboxMode::Landlock;
    for missing in manifest
        .writable
        .iter()
        .chain(&manifest.sandbox.writable)
        .filter(|w| sandboxed && !w.exists())
    {
        findings.push(lint::Finding {
            severity: Severity::Warning,
            line: manifest.sandbox.line,
            message: format!(
                "sandbox: writable folder {} does not exist; processes cannot write there \
                 unless it exists when the pod starts",
                crate::permission::path::display(missing, &manifest.workspace)
            ),
        });
    }
    for hook in &manifest.hooks {
        if let Some(problem) = program_problem(hook.command.first().map(String::as_str)) {
            findings.push(lint::Finding {
                severity: Severity::Error,
                line: Some(hook.line),
                message: format!("hooks.pre_tool_call: {problem}"),
            });
        }
    }
    findings
}

/// Why `program` cannot be started, if it cannot.
fn program_problem(program: Option<&str>) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let program = program?;
    let executable = |p: &Path| {
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let p = Path::new(program);
        return if !p.exists() {
            Some(format!("{program} does not exist"))
        } else if !executable(p) {
            Some(format!("{program} is not an executable file"))
        } else {
            None
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|dir| executable(&dir.join(program))) {
        None
    } else {
        Some(format!("{program} is not found on PATH"))
    }
}

/// `pod explain`: the decision for one call, per subject. Exit 0 whatever the decision.
/// `annotations` (JSON, an MCP tool's as its server lists them) select an MCP tool's default;
/// without them an MCP tool is taken as MCP's default, destructive.
pub fn explain(path: &Path, tool: &str, input: &str, annotations: Option<&str>, json: bool) -> u8 {
    let manifest = match Manifest::load(path) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let input: serde_json::Value = match serde_json::from_str(input) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(_) => {
            eprintln!("--input: must be a JSON object, such as '{{\"command\":\"ls\"}}'");
            return 1;
        }
        Err(e) => {
            eprintln!("--input: not valid JSON: {e}");
            return 1;
        }
    };
    let annotations: Option<ToolAnnotations> = match annotations.map(serde_json::from_str) {
        None => None,
        Some(Ok(a)) => Some(a),
        Some(Err(e)) => {
            eprintln!(
                "--annotations: not MCP tool annotations ({e}), such as \
                 '{{\"readOnlyHint\":true}}'"
            );
            return 1;
        }
    };
    let decision = manifest
        .policy()
        .decide_with(tool, &input, annotations.as_ref());
    if json {
        match serde_json::to_string(&decision) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("cannot print the decision: {e}");
                return 1;
            }
        }
    } else {
        let text = explain_text(&manifest, &decision);
        let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
        let mcp = mcp_explain_text(&manifest, tool, annotations.as_ref());
        print!("{first}\n{mcp}{rest}");
    }
    0
}

/// For an MCP tool, the lines `pod explain` adds before the subjects: which annotations the
/// decision took, and whether the manifest names the server.
fn mcp_explain_text(
    manifest: &Manifest,
    tool: &str,
    annotations: Option<&ToolAnnotations>,
) -> String {
    use crate::permission::mcp;
    let Some((server, _)) = mcp::split(tool) else {
        return String::new();
    };
    let mut out = String::new();
    if !manifest
        .mcp
        .servers
        .iter()
        .any(|s| s.name.eq_ignore_ascii_case(server))
    {
        out.push_str(&format!(
            "  note: no [mcp.servers.{server}] in {}: its paths are read from the workspace\n",
            manifest.path.display()
        ));
    }
    let effect = mcp::Effect::of(annotations);
    match annotations.and_then(|a| serde_json::to_string(a).ok()) {
        Some(given) => out.push_str(&format!(
            "  annotations: {given} (given): the tool counts as {}\n",
            effect.key()
        )),
        None => out.push_str(
            "  annotations: none given, so the tool counts as destructive (MCP's default); pass \
             --annotations '{\"readOnlyHint\":true}' as its server lists them\n",
        ),
    }
    if effect != mcp::Effect::ReadOnly {
        out.push_str(&format!(
            "  rules consulted: {tool}'s own, and those of read and file_write for the files it \
             names (rules follow the kind of access)\n"
        ));
    } else {
        out.push_str(&format!(
            "  rules consulted: {tool}'s own, and those of read for the files it names (rules \
             follow the kind of access)\n"
        ));
    }
    out
}

/// The human form of `pod explain`.
pub fn explain_text(manifest: &Manifest, decision: &Decision) -> String {
    let mut out = format!("decision: {}\n", decision.decision);
    let file = manifest.path.display().to_string();
    if let Some(tool) = decision.subjects.first().map(|s| s.tool.as_str()) {
        let governing = crate::permission::kinds::governing(tool);
        if !governing.is_empty() {
            out.push_str(&format!(
                "  rules consulted: {tool}'s own, and those of {} (rules follow the kind of access)\n",
                governing
                    .iter()
                    .map(|b| b.name())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
    }
    for s in &decision.subjects {
        out.push_str("  ");
        out.push_str(&s.line(manifest.default_action(), RuleAt::File(&file)));
        out.push('\n');
    }
    out
}

/// `pod sessions`: the folder holding a pod's session logs, then one line per session (id, last
/// change, size), oldest first. A session is removed by deleting its file.
pub fn sessions(path: &Path, state_dir: Option<&Path>) -> u8 {
    let mut manifest = match Manifest::load(path) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    if let Some(folder) = state_dir {
        manifest.set_state_dir(folder);
    }
    let dir = manifest.sessions_dir();
    let sessions = match crate::session::list(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    println!("{} ({} sessions)", dir.display(), sessions.len());
    for s in sessions {
        let when = s
            .modified
            .map(time::OffsetDateTime::from)
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_else(|| "?".into());
        println!("{}  {when}  {} bytes", s.id, s.bytes);
    }
    0
}

/// `pod schema [--check]`.
pub fn schema(dir: &Path, check: bool) -> u8 {
    let mut stale = Vec::new();
    for (name, text) in crate::schema::files() {
        let path = dir.join(name);
        if check {
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                stale.push(path.display().to_string());
            }
        } else if let Err(e) =
            std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, text))
        {
            eprintln!("{}: {e}", path.display());
            return 1;
        }
    }
    if !stale.is_empty() {
        eprintln!(
            "stale generated schema (run `pod schema` and commit): {}",
            stale.join(", ")
        );
        return 1;
    }
    0
}
