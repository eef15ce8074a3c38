//! The one-shot commands: `pod check`, `pod config`, `pod explain`, `pod sessions`, `pod schema`.
//! Each returns the process exit code. What a command reports is its output (stdout), `pod
//! check`'s findings included; an input it cannot read at all (a missing file, bad `--input`
//! JSON) goes to stderr. Each reads the configuration as `pod serve` does
//! ([`Manifest::open`]: the project's manifest layered over the user's configuration).

use std::path::Path;

use crate::builtin::Builtin;
use crate::manifest::{did_you_mean, Manifest, TrustStore, Vouch};
use crate::permission::lint::{self, Severity};
use crate::protocol::{Decision, RuleAt, ToolAnnotations};

/// The files a configuration came from, for the first line of `check` and `config`.
pub fn sources_text(manifest: &Manifest) -> String {
    if manifest.is_defaults() {
        return format!(
            "no pod.toml in {} and no user configuration: pod's built-in defaults (reads \
             inside the workspace allowed, everything else asks; the offline model)",
            manifest.workspace.display()
        );
    }
    let files: Vec<String> = manifest
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    format!("configuration: {}", files.join(", then "))
}

/// The trust state of a configuration, for `check`, `config` and `explain`: one line, then
/// each ignored setting on its own line, each line starting with `prefix`. Empty without a
/// project manifest.
pub fn trust_text(manifest: &Manifest, prefix: &str) -> String {
    use crate::protocol::TrustStatus;
    let trust = &manifest.trust;
    let Some(folder) = &trust.folder else {
        return String::new();
    };
    let folder = folder.display();
    let mut out = match trust.status {
        TrustStatus::Trusted => format!("{prefix}trust: {folder} is trusted\n"),
        TrustStatus::Session => format!("{prefix}trust: {folder} is trusted for this run\n"),
        TrustStatus::Untrusted if trust.ignored.is_empty() => format!(
            "{prefix}trust: {folder} is not trusted; nothing of its configuration needs trust\n"
        ),
        TrustStatus::Untrusted => {
            let why = if trust.declined {
                " (you declined)".to_string()
            } else if !trust.changed.is_empty() {
                format!(
                    " (changed since you trusted it: {})",
                    trust.changed.join(", ")
                )
            } else {
                String::new()
            };
            format!(
                "{prefix}trust: {folder} is not trusted{why}; until `pod trust {folder}`, pod \
                 ignores:\n"
            )
        }
    };
    for ignored in &trust.ignored {
        out.push_str(&format!("{prefix}  {}: {}\n", ignored.place, ignored.what));
    }
    out
}

/// The managed layer of a configuration, for `check` and `config`: its files and locks, then
/// each setting of a lower layer it overrode or refused, each line starting with `prefix`.
/// Empty without a managed file.
pub fn managed_text(manifest: &Manifest, prefix: &str) -> String {
    let managed = &manifest.managed;
    if managed.files.is_empty() {
        return String::new();
    }
    let files: Vec<String> = managed
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let mut out = format!(
        "{prefix}managed: {} (nothing below can weaken it)\n",
        files.join(", then ")
    );
    let locks = &managed.locks;
    let mut held = Vec::new();
    if locks.require_sandbox {
        held.push("require_sandbox".to_string());
    }
    if let Some(modes) = &locks.allowed_modes {
        let names: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
        held.push(format!("allowed_modes = [{}]", names.join(", ")));
    }
    if locks.rules_only {
        held.push("allow_managed_rules_only".into());
    }
    if locks.hooks_only {
        held.push("allow_managed_hooks_only".into());
    }
    if locks.domains_only {
        held.push("allowed_domains_only".into());
    }
    if !locks.allowed_servers.is_empty() {
        held.push("allowed_mcp_servers".into());
    }
    if !locks.denied_servers.is_empty() {
        held.push("denied_mcp_servers".into());
    }
    if !held.is_empty() {
        out.push_str(&format!("{prefix}  locks: {}\n", held.join(", ")));
    }
    if managed.overrides.is_empty() {
        out.push_str(&format!("{prefix}  it overrode nothing below it\n"));
    } else {
        out.push_str(&format!("{prefix}  it overrode or refused:\n"));
    }
    for o in &managed.overrides {
        out.push_str(&format!("{prefix}    {}: {}\n", o.place, o.what));
    }
    out
}

/// The rules' examples for `pod check`: each decided with the configuration in effect, which
/// may differ from the rule's own file (another layer's rule came first: that is not an
/// error, but it is shown). Returns (examples, differing, table lines).
fn examples_report(manifest: &Manifest) -> (usize, Vec<String>, Vec<String>) {
    use crate::manifest::RuleExample;
    let policy = manifest.policy();
    let mut count = 0;
    let mut differ = Vec::new();
    let mut table = Vec::new();
    for RuleExample {
        file,
        line,
        tool,
        action,
        matches,
        not_match,
        ..
    } in &manifest.examples
    {
        let Some(builtin) = Builtin::from_name(tool) else {
            continue;
        };
        let place = format!("{}:{line}", file.display());
        let cases = matches
            .iter()
            .map(|m| (m, true))
            .chain(not_match.iter().map(|m| (m, false)));
        for (text, expect) in cases {
            count += 1;
            let decision = policy.decide(tool, &crate::manifest::example_input(builtin, text));
            let this = decision.subjects.iter().any(|s| {
                s.rule.as_ref().is_some_and(|r| {
                    r.line == Some(*line) && r.file.as_deref() == Some(&*file.to_string_lossy())
                })
            });
            let holds = if expect {
                this && decision.decision == *action
            } else {
                !this
            };
            let kind = if expect { "match" } else { "not_match" };
            table.push(format!(
                "  {place}  {kind:<9}  {tool} \"{text}\"  -> {} by {}{}",
                decision.decision,
                crate::manifest::example_decided_by(&decision),
                if holds { "" } else { "  (differs in effect)" }
            ));
            if !holds {
                differ.push(format!(
                    "{place}: note: {kind} example \"{text}\" is decided {} by {} in the \
                     configuration in effect (another layer's rule, a managed lock or the project's trust \
                     comes first)",
                    decision.decision,
                    crate::manifest::example_decided_by(&decision)
                ));
            }
        }
    }
    (count, differ, table)
}

/// `pod check`: validate as `pod serve` does, then lint. Exit 1 when anything is an error.
/// Everything the files say is checked, as if trusted; what an untrusted project's
/// configuration loses is listed after.
pub fn check(path: Option<&Path>, show_examples: bool) -> u8 {
    let manifest = match Manifest::open(path, Vouch::Session) {
        Ok(m) => m,
        Err(e) => {
            println!("{e}");
            return 1;
        }
    };
    let in_force = match Manifest::open(path, Vouch::Store) {
        Ok(m) => m,
        Err(e) => {
            println!("{e}");
            return 1;
        }
    };
    println!("{}", sources_text(&manifest));
    print!("{}", managed_text(&in_force, ""));
    print!("{}", trust_text(&in_force, ""));
    if let Some(off) = in_force.permissions_off() {
        println!("WARNING: {off}");
    }
    let findings = check_findings(&manifest);
    let file = manifest.path.display().to_string();
    for f in &findings {
        let severity = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let file = f.file.as_deref().unwrap_or(&file);
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
    let (examples, differ, table) = examples_report(&in_force);
    if examples > 0 {
        println!(
            "examples: {examples} checked at load, each decided as its rule says; {} differ in \
             the configuration in effect",
            differ.len()
        );
        for line in &differ {
            println!("{line}");
        }
        if show_examples {
            for line in &table {
                println!("{line}");
            }
        }
    } else if show_examples {
        println!("examples: no rule carries examples");
    }
    print!("{}", sandbox_text(&in_force));
    println!("  {}", mismatches_text(mismatches_in(&in_force)));
    let env = crate::sandbox::ChildEnv::new(&in_force.sandbox.env);
    println!(
        "  environment: commands, hooks and MCP servers get {} of pod's variables ({}); \
         left out: {}",
        env.passed.len(),
        env.passed.join(", "),
        if env.filtered.is_empty() {
            "none".to_string()
        } else {
            env.filtered.join(", ")
        }
    );
    u8::from(errors > 0)
}

/// What this machine will enforce for the manifest's `[sandbox]`, for `pod check`.
/// Whether the exec gate runs for `config`, in words.
fn gate_text(config: &crate::manifest::SandboxConfig, plan: &crate::sandbox::Plan) -> String {
    match (config.exec_gate, crate::sandbox::gate_available(plan)) {
        (Some(false), _) => "off (exec_gate = false)".to_string(),
        (_, Ok(())) => "on: every exec of a bash call is decided on its real argv".to_string(),
        (Some(true), Err(e)) => format!("REQUIRED but unavailable: {e}; pod will not start"),
        (None, Err(e)) => format!("off: {e}"),
    }
}

pub fn sandbox_text(manifest: &Manifest) -> String {
    use crate::manifest::SandboxMode;
    use crate::permission::path;
    use crate::protocol::NetworkAccess;
    let config = &manifest.sandbox;
    let plan = crate::sandbox::plan(config);
    if config.mode == SandboxMode::Off {
        return format!(
            "sandbox: off (mode = \"off\"): processes that tool calls and hooks start run \
             with the pod's own rights\n  exec gate: {}\n",
            gate_text(config, &plan)
        );
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
    let kind = match plan.info.kind {
        crate::protocol::SandboxKind::Namespaces => "namespaces (bubblewrap) + seccomp",
        _ => "landlock + seccomp",
    };
    let mut out = format!("sandbox: {kind}, {abi}: {state}\n");
    let mut writable: Vec<String> = manifest
        .scope
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
    writable.push(match plan.tmpdir {
        Ok(_) => "$TMPDIR (a private tmpfs per session)".into(),
        Err(_) => "$TMPDIR (a private folder per session)".into(),
    });
    writable.push("/dev/null and the other device files a shell needs".into());
    out.push_str(&format!("  writable: {}\n", writable.join(", ")));
    out.push_str("  everything else: read and execute only\n");
    let namespaces = plan.bwrap.is_some();
    if let Some(list) = &config.readable {
        let shown: Vec<String> = list
            .iter()
            .map(|p| path::display(p, &manifest.workspace))
            .collect();
        out.push_str(&format!(
            "  readable of $HOME: {}{}\n",
            if shown.is_empty() {
                "nothing".to_string()
            } else {
                shown.join(", ")
            },
            if namespaces {
                ""
            } else {
                " (NOT enforced: needs the namespace sandbox; all of $HOME stays readable)"
            }
        ));
    }
    let network = match (config.network, plan.info.network) {
        (_, NetworkAccess::Deny) if namespaces => {
            "an empty network namespace (loopback only) and no Unix sockets"
        }
        (_, NetworkAccess::Proxy) if namespaces => {
            "only pod's proxy, which decides each host by the network rules (a network \
             namespace with no route out, no DNS and no Unix sockets)"
        }
        (_, NetworkAccess::Proxy) => {
            "TCP only to pod's proxy, which decides each host by the network rules (UDP and DNS \
             are not covered)"
        }
        (NetworkAccess::Proxy, NetworkAccess::Allow) => "allowed (proxy is NOT enforced)",
        (_, NetworkAccess::Deny) => {
            "TCP connect and bind refused (UDP, DNS and Unix sockets are not covered)"
        }
        (NetworkAccess::Deny, NetworkAccess::Allow) => "allowed (deny is NOT enforced)",
        _ => "allowed",
    };
    out.push_str(&format!("  network: {network}\n"));
    out.push_str(&format!(
        "  processes: every process a call starts is killed when the call ends; {}\n",
        match &plan.pids {
            Ok(_) => format!(
                "at most {} at once per call (a pids cgroup)",
                config.max_processes()
            ),
            Err(why) => format!(
                "NOT limited: {}",
                crate::sandbox::pids_gap(config.max_processes(), why)
            ),
        }
    ));
    out.push_str(&format!(
        "  $TMPDIR: {}\n",
        match &plan.tmpdir {
            Ok(size) => format!(
                "at most {} for the session (a tmpfs its calls, hooks and MCP servers share; \
                 a write past it fails with ENOSPC)",
                crate::manifest::human_size(*size)
            ),
            Err(why) => format!(
                "NOT size-limited (max_tmpdir_size = \"{}\" is not held): a folder on the \
                 host's disk, since {why}",
                crate::manifest::shown_size(config.max_tmpdir_size())
            ),
        }
    ));
    out.push_str(&format!("  exec gate: {}\n", gate_text(config, &plan)));
    for held in &plan.info.guarantees {
        out.push_str(&format!("  held: {held}\n"));
    }
    for gap in &plan.gaps {
        out.push_str(&format!("  not held: {gap}\n"));
    }
    out
}

/// Why the `network` rules of `manifest` would keep pod from connecting to the MCP server at
/// `url`, if they would.
fn url_problem(manifest: &Manifest, url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let (host, port) = crate::network::url_host_port(&parsed).ok()?;
    let net = crate::network::Net::new(std::sync::Arc::new(manifest.policy()));
    let refusal = net
        .check(&host, port, Some(crate::mcp::http::METHOD))
        .err()?;
    Some(format!(
        "{url}: network `{}` is {refusal}; allow it with a `network` rule",
        crate::network::subject(&host, port).unwrap_or(host)
    ))
}

/// Every finding about a loaded manifest: rule lints, skills that do not load, hooks that
/// cannot run.
pub fn check_findings(manifest: &Manifest) -> Vec<lint::Finding> {
    let mut findings = Vec::new();
    findings.extend(manifest.lint());
    for server in manifest.mcp.servers.iter().filter(|s| s.enabled) {
        let command = match &server.transport {
            crate::manifest::McpTransport::Stdio { command, .. } => command,
            crate::manifest::McpTransport::Http { url, .. } => {
                // Its host is decided as `serve` decides it, before it would connect.
                if let Some(problem) = url_problem(manifest, url) {
                    findings.push(lint::Finding {
                        severity: Severity::Warning,
                        file: server.file.as_ref().map(|f| f.display().to_string()),
                        line: server.line,
                        message: format!(
                            "mcp.servers.{}: {problem}, so the server will not start and its \
                             tools are not offered",
                            server.name
                        ),
                    });
                }
                continue;
            }
        };
        if let Some(problem) = program_problem(Some(command)) {
            findings.push(lint::Finding {
                severity: Severity::Warning,
                file: server.file.as_ref().map(|f| f.display().to_string()),
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
            file: None,
            severity: Severity::Error,
            line: None,
            message: format!("skill: {e}"),
        });
    }
    let plan = crate::sandbox::plan(&manifest.sandbox);
    if !plan.gaps.is_empty() {
        findings.push(lint::Finding {
            file: None,
            severity: if plan.refuses {
                Severity::Error
            } else {
                Severity::Warning
            },
            line: manifest.sandbox.line,
            message: if plan.refuses {
                format!(
                    "sandbox: required = {}, but this machine cannot enforce it (pod serve \
                     will refuse to start): {}",
                    manifest.sandbox.required.shown(),
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
    let sandboxed = manifest.sandbox.mode != crate::manifest::SandboxMode::Off;
    for missing in manifest
        .scope
        .writable
        .iter()
        .chain(&manifest.sandbox.writable)
        .filter(|w| sandboxed && !w.exists())
    {
        findings.push(lint::Finding {
            file: None,
            severity: Severity::Warning,
            line: manifest.sandbox.line,
            message: format!(
                "sandbox: writable folder {} does not exist; processes cannot write there \
                 unless it exists when the pod starts",
                crate::permission::path::display(missing, &manifest.workspace)
            ),
        });
    }
    // What `pod serve` does when it opens: build the model (its name, its key, its scenario).
    match crate::model::from_config(&manifest.model) {
        Ok(_) => {}
        Err(e @ crate::model::ModelError::Environment(_)) => findings.push(lint::Finding {
            file: None,
            severity: Severity::Warning,
            line: None,
            message: format!("{e}: `pod serve` in this environment would refuse to open"),
        }),
        Err(e) => findings.push(lint::Finding {
            file: None,
            severity: Severity::Error,
            line: None,
            message: format!("{e}: `pod serve` would refuse to open"),
        }),
    }
    let workspace = crate::permission::path::resolve(&manifest.workspace);
    for hook in &manifest.hooks {
        // A script the hook runs that lies directly in a folder calls write.
        for arg in hook.command.iter().skip(1) {
            let script = hook.dir.join(arg);
            let Some(folder) = script.parent().filter(|_| script.is_file()) else {
                continue;
            };
            // Not protected whole: the manifest's folder, or one that is or holds a writable
            // folder (`Manifest::protected_paths`).
            let exposed = folder == hook.dir || manifest.holds_a_writable_folder(folder);
            let folder = crate::permission::path::resolve(folder);
            if exposed && folder.starts_with(&workspace) {
                findings.push(lint::Finding {
                    file: None,
                    severity: Severity::Warning,
                    line: Some(hook.line),
                    message: format!(
                        "hooks.{}: {arg} lies in {}, which calls can write: what it imports or \
                         sources from beside itself (Python modules, a shell's `.`) would be the \
                         model's; put hook scripts in a folder of their own (e.g. hooks/), which \
                         pod protects whole",
                        hook.event.key(),
                        folder.display()
                    ),
                });
            }
        }
        // A script the program is given (`["python3", "hooks/guard.py"]`): a path that does not
        // exist makes every call the hook sees fail (closed).
        let scripts = hook
            .command
            .iter()
            .skip(1)
            .filter(|a| a.contains('/') && !a.starts_with('-') && !a.contains("://"));
        for arg in scripts {
            let script = hook.dir.join(arg);
            if !script.exists() {
                findings.push(lint::Finding {
                    file: None,
                    severity: Severity::Error,
                    line: Some(hook.line),
                    message: format!(
                        "hooks.{}: {arg} does not exist (looked for {}): the hook would {}",
                        hook.event.key(),
                        script.display(),
                        failing(hook.event)
                    ),
                });
            }
        }
        if let Some(problem) = program_problem(hook.command.first().map(String::as_str)) {
            findings.push(lint::Finding {
                file: None,
                severity: Severity::Error,
                line: Some(hook.line),
                message: format!("hooks.{}: {problem}", hook.event.key()),
            });
        }
    }
    findings
}

/// What a hook of `event` that always fails does, for `pod check`'s findings.
fn failing(event: crate::manifest::HookEvent) -> &'static str {
    use crate::manifest::HookEvent;
    match event {
        HookEvent::PreToolCall => "deny every call it sees",
        HookEvent::PostToolCall => "withhold every result it sees",
        HookEvent::SessionStart => "add no context to any session",
        HookEvent::UserPrompt => "refuse every prompt",
        HookEvent::PermissionDenied => "fail on every denial (logged only)",
    }
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
pub fn explain(
    path: Option<&Path>,
    tool: &str,
    input: &str,
    annotations: Option<&str>,
    trust: bool,
    json: bool,
) -> u8 {
    let vouch = if trust { Vouch::Session } else { Vouch::Store };
    let manifest = match Manifest::open(path, vouch) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let network = tool == crate::permission::network::NETWORK;
    if Builtin::from_name(tool).is_none()
        && crate::permission::mcp::split(tool).is_none()
        && !network
    {
        eprintln!(
            "--tool: no tool \"{tool}\"{} (pod has: {}; the network's rules are `network`; an \
             MCP server's tools are mcp__SERVER__TOOL)",
            did_you_mean(tool, &Builtin::names()),
            Builtin::names().join(", ")
        );
        return 1;
    }
    let shape = input_shape(tool);
    let input: serde_json::Value = match serde_json::from_str(input) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(_) => {
            eprintln!("--input: must be a JSON object: {tool} takes {shape}");
            return 1;
        }
        Err(e) => {
            eprintln!("--input: not valid JSON ({e}): {tool} takes {shape}");
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
        if !manifest.trust.ignored.is_empty() {
            print!("{}", trust_text(&manifest, "note: "));
            println!("note: `pod explain --trust` decides as if you trusted it");
        }
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

/// The input a tool takes, as an example for `pod explain`'s errors: the built-in tool's own.
fn input_shape(tool: &str) -> String {
    if tool == crate::permission::network::NETWORK {
        return "'{\"host\":\"index.crates.io\",\"port\":443}' (port optional, default 443)".into();
    }
    match crate::tools::builtin(tool) {
        Some(t) => t.example().to_string(),
        None => "a JSON object of the tool's arguments, as its server's schema says".into(),
    }
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
pub fn sessions(path: Option<&Path>, state_dir: Option<&Path>) -> u8 {
    let mut manifest = match Manifest::open(path, Vouch::Store) {
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
    // A session opened and closed without a single item has nothing to resume: not listed.
    let sessions = match crate::session::list(&dir)
        .map(|all| all.into_iter().filter(|s| s.bytes > 0).collect::<Vec<_>>())
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    println!("{} ({} sessions)", dir.display(), sessions.len());
    let mut mismatches = 0;
    for s in sessions {
        let found = s.mismatches();
        mismatches += found;
        let when = s
            .modified
            .map(time::OffsetDateTime::from)
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_else(|| "?".into());
        if found > 0 {
            println!(
                "{}  {when}  {} bytes  {found} analysis mismatches",
                s.id, s.bytes
            );
        } else {
            println!("{}  {when}  {} bytes", s.id, s.bytes);
        }
    }
    println!("{}", mismatches_text(mismatches));
    0
}

/// The line `pod sessions` and `pod check` end with: how many execs the analysis missed.
fn mismatches_text(count: usize) -> String {
    if count == 0 {
        "analysis mismatches: 0".to_string()
    } else {
        format!(
            "analysis mismatches: {count} (execs of a call's own shells the shell analysis did              not predict, seen by the exec gate: each is an analysis bug; the items are              `analysisMismatch` in the session logs)"
        )
    }
}

/// The mismatches recorded in the sessions of `manifest`'s state folder.
fn mismatches_in(manifest: &Manifest) -> usize {
    crate::session::list(&manifest.sessions_dir())
        .map(|list| list.iter().map(|s| s.mismatches()).sum())
        .unwrap_or(0)
}

/// The sessions folder of the configuration in effect (`--state-dir` when given).
fn sessions_folder(path: Option<&Path>, state_dir: Option<&Path>) -> Result<Manifest, u8> {
    let mut manifest = Manifest::open(path, Vouch::Store).map_err(|e| {
        eprintln!("{e}");
        1u8
    })?;
    if let Some(folder) = state_dir {
        manifest.set_state_dir(folder);
    }
    Ok(manifest)
}

/// `pod sessions --denied`: every denied call of every session, oldest session first: session,
/// call, tool, who denied it, and the subject that decided.
pub fn sessions_denied(path: Option<&Path>, state_dir: Option<&Path>) -> u8 {
    use crate::protocol::{Action, Item};
    let manifest = match sessions_folder(path, state_dir) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let dir = manifest.sessions_dir();
    let sessions = match crate::session::list(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let mut count = 0;
    for s in &sessions {
        let items = match crate::session::items(&dir, &s.id) {
            Ok(items) => items,
            Err(e) => {
                eprintln!("{e}");
                continue;
            }
        };
        let tool_of = |call: &str| {
            items
                .iter()
                .find_map(|i| match i {
                    Item::ToolCall { call_id, tool, .. } if call_id == call => Some(tool.as_str()),
                    _ => None,
                })
                .unwrap_or("?")
        };
        for item in &items {
            let line = match item {
                Item::PermissionDecision {
                    call_id,
                    decision: Action::Deny,
                    by,
                    subjects,
                    ..
                } => {
                    let deciding = subjects.iter().find(|s| s.action == Action::Deny);
                    let what = deciding
                        .map(|d| format!("`{}`", d.subject))
                        .unwrap_or_default();
                    let by = serde_json::to_value(by)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default();
                    let rule = deciding
                        .and_then(|d| d.rule.as_ref())
                        .and_then(|r| Some(format!(" ({}:{})", r.file.as_deref()?, r.line?)))
                        .unwrap_or_default();
                    format!(
                        "{}  {call_id}  {}  denied by {by}{rule}  {what}",
                        s.id,
                        tool_of(call_id)
                    )
                }
                Item::ToolResult(r) => match r.denied_by {
                    Some(
                        by @ (crate::protocol::DeniedBy::Hook
                        | crate::protocol::DeniedBy::Skill
                        | crate::protocol::DeniedBy::Scope),
                    ) => format!(
                        "{}  {}  {}  denied by {}",
                        s.id,
                        r.call_id,
                        tool_of(&r.call_id),
                        serde_json::to_value(by)
                            .ok()
                            .and_then(|v| v.as_str().map(String::from))
                            .unwrap_or_default()
                    ),
                    _ => continue,
                },
                _ => continue,
            };
            count += 1;
            println!("{line}");
        }
    }
    println!(
        "{count} denied calls in {} sessions ({})",
        sessions.len(),
        dir.display()
    );
    0
}

/// `pod why SESSION CALL`: the full reasoning of one past decision.
pub fn why(path: Option<&Path>, state_dir: Option<&Path>, session: &str, call: &str) -> u8 {
    use crate::protocol::{DecidedBy, Item};
    let manifest = match sessions_folder(path, state_dir) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let items = match crate::session::items(&manifest.sessions_dir(), session) {
        Ok(items) => items,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let mut found = false;
    let mut out = String::new();
    for item in &items {
        match item {
            Item::ToolCall {
                call_id,
                tool,
                input,
                ..
            } if call_id == call => {
                found = true;
                out.push_str(&format!(
                    "call {call} of session {session}: {tool} {input}\n"
                ));
            }
            Item::PermissionDecision {
                call_id,
                decision,
                by,
                request_id,
                subjects,
                ..
            } if call_id == call => {
                let who = match by {
                    DecidedBy::Rule => "a rule".to_string(),
                    DecidedBy::Default => "default_action (no rule matched)".into(),
                    DecidedBy::Disabled => "nothing: the permission layer was off".into(),
                    DecidedBy::FailClosed => {
                        "no approver was connected, so the ask was denied".into()
                    }
                    DecidedBy::Client => "a person, through the client".into(),
                    DecidedBy::SessionGrant => "a grant given earlier in the session".into(),
                    DecidedBy::Cancel => "the turn was cancelled while it asked".into(),
                    DecidedBy::Timeout => {
                        "nobody answered the ask in time (ask_timeout_secs)".into()
                    }
                    DecidedBy::Disconnect => "the client went away while it asked".into(),
                    DecidedBy::Shutdown => "the pod shut down while it asked".into(),
                    DecidedBy::Mode => "the session's mode".into(),
                };
                out.push_str(&format!("decision: {decision}, settled by {who}\n"));
                if let Some(id) = request_id {
                    out.push_str(&format!("  asked as {id}\n"));
                }
                for s in subjects {
                    let rule = match &s.rule {
                        Some(r) => match (&r.file, r.line) {
                            (Some(f), Some(l)) => format!(
                                "rule {} ({} \"{}\") at {f}:{l}",
                                r.index, r.tool, r.pattern
                            ),
                            _ => format!("rule {} ({} \"{}\")", r.index, r.tool, r.pattern),
                        },
                        None => "the default".into(),
                    };
                    let note = s
                        .note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default();
                    out.push_str(&format!(
                        "  {} `{}`: {} by {rule}{note}\n",
                        s.tool, s.subject, s.action
                    ));
                }
            }
            Item::InputAmended { call_id, input, .. } if call_id == call => {
                out.push_str(&format!(
                    "  the person edited the input before approving: {input}\n"
                ));
            }
            Item::NetworkConnection {
                call_id,
                host,
                method,
                decision,
                by,
                rule,
                refused,
                reason,
                bytes_up,
                bytes_down,
                ..
            } if call_id == call => {
                let method = method
                    .as_deref()
                    .map(|m| format!(" {m}"))
                    .unwrap_or_default();
                let by = match (by, rule) {
                    (_, Some(r)) => match (&r.file, r.line) {
                        (Some(f), Some(l)) => {
                            format!("rule {} ({} \"{}\") at {f}:{l}", r.index, r.tool, r.pattern)
                        }
                        _ => format!("rule {} ({} \"{}\")", r.index, r.tool, r.pattern),
                    },
                    (Some(by), None) => serde_json::to_value(by)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                    (None, None) => "the proxy".into(),
                };
                let outcome = match (refused, reason) {
                    (Some(code), Some(why)) => format!("refused ({code}): {why}"),
                    (Some(code), None) => format!("refused ({code})"),
                    (None, note) => format!(
                        "connected, {bytes_up} bytes sent, {bytes_down} received{}",
                        note.as_deref()
                            .map(|n| format!(" ({n})"))
                            .unwrap_or_default()
                    ),
                };
                out.push_str(&format!(
                    "  network{method} `{host}`: {decision} by {by}; {outcome}\n"
                ));
            }
            Item::NetworkConnectionsOmitted { call_id, count, .. } if call_id == call => {
                out.push_str(&format!(
                    "  … and {count} more network connections, not recorded one by one\n"
                ));
            }
            Item::ToolResult(r) if r.call_id == call => {
                let how = match r.denied_by {
                    Some(by) => format!(
                        "not run (denied by {})",
                        serde_json::to_value(by)
                            .ok()
                            .and_then(|v| v.as_str().map(String::from))
                            .unwrap_or_default()
                    ),
                    None if r.is_error => "ran, with an error".into(),
                    None => "ran".into(),
                };
                let first: String = r
                    .content
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(160)
                    .collect();
                out.push_str(&format!("result: {how}: {first}\n"));
            }
            _ => {}
        }
    }
    if !found {
        eprintln!(
            "no call {call} in session {session} (`pod sessions --denied` lists denied calls)"
        );
        return 1;
    }
    if let Some(audit) = &manifest.audit {
        let entries: Vec<_> = crate::session::audit::entries(&audit.path)
            .into_iter()
            .filter(|e| e.session == session && e.call == call)
            .collect();
        for e in &entries {
            let client = e
                .client
                .as_deref()
                .map(|c| format!(" via {c}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "decision log {} line {}: {} at {}, by {}{client}\n",
                audit.path.display(),
                e.seq,
                e.decision,
                e.time,
                e.by
            ));
        }
        if entries.is_empty() {
            out.push_str(&format!(
                "decision log {}: no line for this call\n",
                audit.path.display()
            ));
        }
    }
    print!("{out}");
    0
}

/// `pod audit verify`: the decision log's chain. Exit 1 at the first break.
pub fn audit_verify(manifest: Option<&Path>, path: Option<&Path>) -> u8 {
    let file = match path {
        Some(p) => p.to_path_buf(),
        None => match Manifest::open(manifest, Vouch::Store) {
            Ok(m) => match m.audit {
                Some(a) => a.path,
                None => {
                    eprintln!(
                        "no [audit] in the configuration in effect: give the log with --path"
                    );
                    return 1;
                }
            },
            Err(e) => {
                eprintln!("{e}");
                return 1;
            }
        },
    };
    match crate::session::audit::verify(&file) {
        Ok(v) => match v.broken {
            None => {
                println!("{}: {} lines, the chain holds", file.display(), v.lines);
                0
            }
            Some(what) => {
                println!("{what}");
                println!(
                    "{}: the chain is broken ({} lines read up to the break)",
                    file.display(),
                    v.lines
                );
                1
            }
        },
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

/// `pod schema [--check]`.
pub fn schema(dir: &Path, check: bool) -> u8 {
    let mut stale = Vec::new();
    let mut missing = Vec::new();
    for (name, text) in crate::schema::files() {
        let path = dir.join(name);
        if check {
            match std::fs::read_to_string(&path) {
                Ok(current) if current == text => {}
                Ok(_) => stale.push(path.display().to_string()),
                Err(_) => missing.push(path.display().to_string()),
            }
        } else if let Err(e) =
            std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, text))
        {
            eprintln!("{}: {e}", path.display());
            return 1;
        }
    }
    if !missing.is_empty() {
        eprintln!(
            "no generated schema at {} (run `pod schema --check` in the repository, or give \
             the folder with --dir; `pod schema` writes them)",
            missing.join(", ")
        );
    }
    if !stale.is_empty() {
        eprintln!(
            "stale generated schema (run `pod schema` and commit): {}",
            stale.join(", ")
        );
    }
    u8::from(!missing.is_empty() || !stale.is_empty())
}

/// `pod config`: the configuration in effect, section by section, each with the file it came
/// from (or "built-in default"), and every rule with its file and line.
pub fn config(path: Option<&Path>) -> u8 {
    match Manifest::open(path, Vouch::Store) {
        Ok(manifest) => {
            print!("{}", config_text(&manifest));
            0
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

/// The text of `pod config`: the layers, then every section as TOML with its origin as a
/// comment ([`Manifest::settings_toml`]).
pub fn config_text(m: &Manifest) -> String {
    let mut out = format!("# {}\n", sources_text(m));
    out.push_str(&managed_text(m, "# "));
    out.push_str(&trust_text(m, "# "));
    out.push_str(&format!("# workspace: {}\n\n", m.workspace.display()));
    out.push_str(&m.settings_toml());
    out
}

/// `pod trust [DIR]`: trusts the folder's `pod.toml` as it is now, saying what that lets it do.
/// The manifests `pod init` starts from (the files in `examples/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Stack {
    Rust,
    Node,
    Python,
    Generic,
}

impl Stack {
    /// The stack a folder's files suggest: `Cargo.toml`, `package.json`, `pyproject.toml` /
    /// `setup.py` / `requirements.txt`; else generic.
    pub fn guess(dir: &Path) -> Stack {
        let has = |name: &str| dir.join(name).is_file();
        if has("Cargo.toml") {
            Stack::Rust
        } else if has("package.json") {
            Stack::Node
        } else if has("pyproject.toml") || has("setup.py") || has("requirements.txt") {
            Stack::Python
        } else {
            Stack::Generic
        }
    }

    fn template(self) -> &'static str {
        match self {
            Stack::Rust => include_str!("../examples/rust.toml"),
            Stack::Node => include_str!("../examples/node.toml"),
            Stack::Python => include_str!("../examples/python.toml"),
            Stack::Generic => include_str!("../examples/pod.toml"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Stack::Rust => "rust",
            Stack::Node => "node",
            Stack::Python => "python",
            Stack::Generic => "generic",
        }
    }
}

/// `pod init [DIR] [--stack S] [--force]`: writes the stack's manifest as `DIR/pod.toml`, named
/// for the folder, then trusts it (the user wrote it, here and now).
pub fn init(dir: Option<&Path>, stack: Option<Stack>, force: bool) -> u8 {
    let dir = dir.unwrap_or(Path::new("."));
    if !dir.is_dir() {
        eprintln!("{}: not a folder", dir.display());
        return 1;
    }
    let file = dir.join(crate::manifest::PROJECT_FILE);
    if file.exists() && !force {
        eprintln!(
            "{}: already exists; `pod check` explains it, `pod init --force` replaces it",
            file.display()
        );
        return 1;
    }
    let stack = stack.unwrap_or_else(|| Stack::guess(dir));
    let name = std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "project".into());
    let placeholder = match stack {
        Stack::Generic => "name = \"demo\"".to_string(),
        _ => format!("name = \"{}-project\"", stack.name()),
    };
    let text = stack.template().replacen(
        &placeholder,
        &format!("name = {}", toml::Value::String(name)),
        1,
    );
    if let Err(e) = std::fs::write(&file, text) {
        eprintln!("{}: cannot write: {e}", file.display());
        return 1;
    }
    println!(
        "wrote {} ({} stack); `pod check` explains it, docs/permissions.md the rules",
        file.display(),
        stack.name()
    );
    trust(Some(dir))
}

/// `pod grants [DIR] [--revoke PATTERN]`: the project grants of a folder (manifest/grants.rs).
pub fn grants(dir: Option<&Path>, revoke: Option<&str>) -> u8 {
    use crate::manifest::grants;
    let dir = dir.unwrap_or(Path::new("."));
    let manifest = match Manifest::discover(dir, Vouch::Store) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let workspace = &manifest.workspace;
    let Some(file) = grants::path(workspace) else {
        eprintln!("no user configuration folder (POD_CONFIG is empty): no project grants");
        return 1;
    };
    if let Some(pattern) = revoke {
        return match grants::revoke(workspace, pattern) {
            Ok(0) => {
                eprintln!("{}: no grant with pattern {pattern:?}", file.display());
                1
            }
            Ok(n) => {
                println!("revoked {n} grant(s) {pattern:?} in {}", file.display());
                0
            }
            Err(e) => {
                eprintln!("{}: {e}", file.display());
                1
            }
        };
    }
    match grants::rules(&file) {
        Ok(rules) if rules.is_empty() => {
            println!("no project grants for {}", workspace.display());
            0
        }
        Ok(rules) => {
            for rule in rules {
                println!(
                    "{}:{}: {} \"{}\" allow",
                    file.display(),
                    rule.line.unwrap_or(1),
                    rule.tool,
                    rule.pattern
                );
            }
            0
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

pub fn trust(dir: Option<&Path>) -> u8 {
    use crate::manifest::trust::Decision;
    let dir = dir.unwrap_or(Path::new("."));
    if !dir.join(crate::manifest::PROJECT_FILE).is_file() {
        eprintln!(
            "{}: nothing to trust: no {} there",
            dir.display(),
            crate::manifest::PROJECT_FILE
        );
        return 1;
    }
    let manifest = match Manifest::discover(dir, Vouch::Store) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let (Some(folder), Some(print)) = (&manifest.trust.folder, &manifest.trust.fingerprint) else {
        eprintln!("{}: nothing to trust", dir.display());
        return 1;
    };
    let store = match TrustStore::default_location() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    if let Err(e) = store.record(folder, print, Decision::Trusted) {
        eprintln!("{e}");
        return 1;
    }
    println!(
        "trusted {} ({} files pinned)",
        folder.display(),
        print.0.len()
    );
    if manifest.trust.ignored.is_empty() {
        println!("  nothing of its configuration was ignored before");
    } else {
        println!("  its configuration now also:");
        for ignored in &manifest.trust.ignored {
            println!("  {}: {}", ignored.place, ignored.what);
        }
    }
    println!("  a change to any of them makes it untrusted again (`pod trust --list` shows them)");
    0
}

/// `pod trust --list`: every folder the store knows, its decision, and whether its files
/// changed since.
pub fn trust_list() -> u8 {
    let store = match TrustStore::default_location() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let entries = match store.list() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    println!("{} ({} folders)", store.path().display(), entries.len());
    for (folder, entry) in entries {
        let decision = match entry.decision {
            crate::manifest::trust::Decision::Trusted => "trusted",
            crate::manifest::trust::Decision::Declined => "declined",
        };
        let path = Path::new(&folder);
        let now = if !path.join(crate::manifest::PROJECT_FILE).is_file() {
            "no pod.toml there now".to_string()
        } else {
            match Manifest::discover(path, Vouch::Store)
                .ok()
                .and_then(|m| m.trust.fingerprint)
            {
                Some(print) if print == entry.files => "unchanged".to_string(),
                Some(print) => format!("changed: {}", entry.files.differences(&print).join(", ")),
                None => "cannot be read now".to_string(),
            }
        };
        println!("{folder}  {decision}  {}  {now}", entry.at);
    }
    0
}

/// `pod trust --revoke DIR`: forgets the decision about `dir`. Exit 1 when there was none.
pub fn trust_revoke(dir: &Path) -> u8 {
    let folder = match dir.canonicalize() {
        Ok(f) => f,
        Err(_) => crate::permission::path::normalize(
            &std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
        ),
    };
    let revoked =
        TrustStore::default_location().and_then(|store| store.revoke(&folder).map(|r| (r, store)));
    match revoked {
        Ok((true, _)) => {
            println!("{}: no longer trusted", folder.display());
            0
        }
        Ok((false, store)) => {
            eprintln!(
                "{}: not in the trust store ({})",
                folder.display(),
                store.path().display()
            );
            1
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}
