//! The `pod` binary: parses arguments and calls the library. Nothing else lives here.

#![deny(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use pod::conformance::kit::{Framing, Protocol};

#[derive(Parser)]
#[command(
    name = "pod",
    version,
    about = "An agent runtime driven over JSON-RPC 2.0 on stdio, with a declarative permission layer"
)]
struct Cli {
    /// Log filter for stderr (overrides RUST_LOG), e.g. `info` or `pod=debug`.
    #[arg(long, global = true)]
    log_level: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum AuditAction {
    /// Check the log's hash chain: exit 0 when every line is intact and in order, 1 at the
    /// first line edited, inserted or removed.
    Verify {
        /// The log file (default: the `[audit] path` of the configuration in effect).
        #[arg(long)]
        path: Option<PathBuf>,
        #[arg(long)]
        manifest: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum Command {
    /// Serve the JSON-RPC protocol on stdin/stdout (the main job).
    Serve {
        /// The project's manifest. Default: `./pod.toml` when it exists, else the user's
        /// configuration alone, else pod's built-in defaults (docs/manifest.md, "Layered
        /// configuration").
        #[arg(long)]
        manifest: Option<PathBuf>,
        /// Resume this session id instead of starting a new session.
        #[arg(long)]
        resume: Option<String>,
        /// The folder holding the session logs (default: `[pod].state_dir`, else
        /// `$XDG_STATE_HOME/pod/<workspace>-<hash>`).
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// Trust the project's configuration for this run (its MCP servers, hooks, model,
        /// allow rules...), as if its user had trusted the folder: for scripts and CI that
        /// vouch for the manifest they start pod with (docs/permissions.md, "Trust").
        #[arg(long)]
        trust: bool,
        /// Largest accepted message in bytes.
        #[arg(long, default_value_t = pod::server::DEFAULT_MAX_MESSAGE)]
        max_message_bytes: usize,
    },
    /// Serve the Agent Client Protocol (v1) on stdin/stdout, for editors (docs/acp.md): each
    /// session is configured by the `pod.toml` of its `cwd`.
    Acp {
        /// The folder holding every session's log (default: each manifest's `[pod].state_dir`,
        /// else `$XDG_STATE_HOME/pod/<workspace>-<hash>`).
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// Largest accepted message in bytes.
        #[arg(long, default_value_t = pod::server::DEFAULT_MAX_MESSAGE)]
        max_message_bytes: usize,
    },
    /// Chat with a pod in the terminal: spawns `pod serve` and answers its approval requests.
    Chat {
        /// The manifest to serve. Default: `./pod.toml` when it exists, else the bundled
        /// example (an offline demo) with the current directory as its workspace.
        #[arg(long)]
        manifest: Option<PathBuf>,
        /// Go on with this session (`pod sessions` lists them): its history and grants.
        #[arg(long)]
        resume: Option<String>,
    },
    /// Run the conformance kit against a pod command. Exit status: 0 passed, 1 a MUST failed
    /// (or a SHOULD, with --strict), 2 the kit does not load or nothing is selected, 3 the pod
    /// command exited without answering initialize.
    Conformance {
        /// The pod to test, run with `sh -c`; `{manifest}` is replaced by the manifest's path,
        /// `{workspace}` by the folder holding it.
        #[arg(long, required_unless_present = "list")]
        pod_cmd: Option<String>,
        /// The kit's section: `pod` (pod protocol v1, as `pod serve` speaks it) or `acp` (the
        /// Agent Client Protocol, as `pod acp` speaks it; NDJSON only).
        #[arg(long, value_enum, default_value_t = ProtocolArg::Pod)]
        protocol: ProtocolArg,
        /// Run only the requirements whose id contains this text (repeat for several).
        #[arg(long)]
        filter: Vec<String>,
        /// Read the kit from this folder instead of the copy built into the binary.
        #[arg(long)]
        kit: Option<PathBuf>,
        /// How long each `expect` step waits for its message, in milliseconds.
        #[arg(long, default_value_t = 5000)]
        expect_timeout_ms: u64,
        /// The framings to run every requirement in.
        #[arg(long, value_enum, default_value_t = FramingArg::Both)]
        framing: FramingArg,
        /// A failed SHOULD requirement fails the run (exit 1) instead of a warning.
        #[arg(long)]
        strict: bool,
        /// Print one JSON document (every result, the counts, the exit status) instead of lines.
        #[arg(long)]
        json: bool,
        /// List the requirements (id, tier, framings, title) instead of running them.
        #[arg(long)]
        list: bool,
    },
    /// List a pod's sessions (id, last change, size) and the folder holding them.
    Sessions {
        /// The project's manifest. Default: `./pod.toml` when it exists, else the user's
        /// configuration alone, else pod's built-in defaults (docs/manifest.md, "Layered
        /// configuration").
        #[arg(long)]
        manifest: Option<PathBuf>,
        /// The folder holding the session logs, as given to `pod serve --state-dir`.
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// List the denied calls of every session instead (session, call, tool, who denied).
        #[arg(long)]
        denied: bool,
    },
    /// Explain one past decision: the call, each subject with the rule that decided it, who
    /// settled an ask, and the result, from the session log (and the decision log when
    /// `[audit]` names one).
    Why {
        /// The session id (`pod sessions` lists them).
        session: String,
        /// The call id (`call_…`, as `pod sessions --denied` and the history show it).
        call: String,
        #[arg(long)]
        manifest: Option<PathBuf>,
        #[arg(long)]
        state_dir: Option<PathBuf>,
    },
    /// The decision log (`[audit]`, docs/audit.md).
    Audit {
        #[command(subcommand)]
        action: AuditAction,
    },
    /// Validate the configuration as `pod serve` would (the manifest layered over the user's
    /// configuration), lint its rules, and warn about what only the runtime can know; exit 1 on
    /// errors.
    Check {
        /// The project's manifest (default: as `pod serve` finds it).
        manifest: Option<PathBuf>,
        /// Print every rule example with the decision it gets in the configuration in effect.
        #[arg(long)]
        examples: bool,
    },
    /// Trust a folder's pod.toml (its MCP servers, hooks, model, allow rules... then take
    /// effect), list the folders you trusted, or revoke one (docs/permissions.md, "Trust").
    Trust {
        /// The folder holding the pod.toml (default: the current folder).
        dir: Option<PathBuf>,
        /// List the trusted (and declined) folders, each with whether it changed since.
        #[arg(long, conflicts_with_all = ["dir", "revoke"])]
        list: bool,
        /// Forget the decision about this folder.
        #[arg(long, value_name = "DIR", conflicts_with = "dir")]
        revoke: Option<PathBuf>,
    },
    /// Print a shell completion script, generated from this command line's definition (e.g.
    /// `pod completions bash > ~/.local/share/bash-completion/completions/pod`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), generated from this command line's definition (e.g.
    /// `pod man > ~/.local/share/man/man1/pod.1`).
    Man,
    /// Write a commented pod.toml for a project (the stack is guessed from its files when not
    /// given) and trust it, since you wrote it.
    Init {
        /// The project's folder (default: the current folder).
        dir: Option<PathBuf>,
        /// The manifest to start from: rust, node, python or generic.
        #[arg(long, value_enum)]
        stack: Option<pod::commands::Stack>,
        /// Replace an existing pod.toml.
        #[arg(long)]
        force: bool,
    },
    /// List the rules "always in this project" answers wrote for a folder, or revoke one
    /// (docs/permissions.md, "Ask").
    Grants {
        /// The project's folder (default: the current folder).
        dir: Option<PathBuf>,
        /// Remove every grant with this pattern (as listed, e.g. `cargo test *`).
        #[arg(long, value_name = "PATTERN")]
        revoke: Option<String>,
    },
    /// Print the configuration in effect, each section with the file it came from.
    Config {
        /// The project's manifest (default: as `pod serve` finds it).
        manifest: Option<PathBuf>,
    },
    /// Print the decision for one tool call and the rule that decided each subject.
    Explain {
        /// The project's manifest (default: as `pod serve` finds it).
        manifest: Option<PathBuf>,
        #[arg(long)]
        tool: String,
        /// The tool input as a JSON object.
        #[arg(long)]
        input: String,
        /// For an MCP tool: its annotations as its server lists them (JSON, such as
        /// '{"readOnlyHint":true}'); without them it counts as destructive.
        #[arg(long)]
        annotations: Option<String>,
        /// Decide as if the project's folder were trusted (its allow rules and default count).
        #[arg(long)]
        trust: bool,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write schema/*.json from the Rust types, or with --check fail when they are stale.
    Schema {
        /// Write nothing; exit 1 when a file in the folder is missing or differs from what the
        /// types generate (CI runs this in the repository).
        #[arg(long)]
        check: bool,
        /// The folder to write to or check.
        #[arg(long, default_value = "schema")]
        dir: PathBuf,
    },
}

/// `--framing` of `pod conformance`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum FramingArg {
    Ndjson,
    Headers,
    Both,
}

/// `--protocol` of `pod conformance`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum ProtocolArg {
    Pod,
    Acp,
}

impl From<ProtocolArg> for Protocol {
    fn from(arg: ProtocolArg) -> Protocol {
        match arg {
            ProtocolArg::Pod => Protocol::Pod,
            ProtocolArg::Acp => Protocol::Acp,
        }
    }
}

impl FramingArg {
    fn framings(self) -> &'static [Framing] {
        match self {
            FramingArg::Ndjson => &[Framing::Ndjson],
            FramingArg::Headers => &[Framing::Headers],
            FramingArg::Both => &Framing::BOTH,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    pod::logging::init(cli.log_level.as_deref());
    // Test-only fault injection (`POD_TEST_PANIC=1`) is decided once, at start-up.
    pod::testing::panics_armed();
    if matches!(
        cli.command,
        Command::Check { .. }
            | Command::Config { .. }
            | Command::Explain { .. }
            | Command::Sessions { .. }
            | Command::Trust { .. }
            | Command::Grants { .. }
            | Command::Init { .. }
            | Command::Completions { .. }
            | Command::Man
            | Command::Why { .. }
            | Command::Audit { .. }
    ) {
        // A listing piped into `head` ends quietly when the reader goes, as other Unix tools
        // do, instead of panicking on the closed pipe. The servers, the chat and the
        // conformance runner keep SIGPIPE ignored: a peer that goes away is an error they
        // handle.
        // SAFETY: setting a signal's disposition to its default before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let code = match cli.command {
        Command::Serve {
            manifest,
            resume,
            state_dir,
            trust,
            max_message_bytes,
        } => pod::server::main(
            manifest.as_deref(),
            resume,
            state_dir.as_deref(),
            trust,
            max_message_bytes,
        ),
        Command::Acp {
            state_dir,
            max_message_bytes,
        } => pod::acp::main(state_dir.as_deref(), max_message_bytes),
        Command::Sessions {
            manifest,
            state_dir,
            denied,
        } => {
            if denied {
                pod::commands::sessions_denied(manifest.as_deref(), state_dir.as_deref())
            } else {
                pod::commands::sessions(manifest.as_deref(), state_dir.as_deref())
            }
        }
        Command::Why {
            session,
            call,
            manifest,
            state_dir,
        } => pod::commands::why(manifest.as_deref(), state_dir.as_deref(), &session, &call),
        Command::Audit {
            action: AuditAction::Verify { path, manifest },
        } => pod::commands::audit_verify(manifest.as_deref(), path.as_deref()),
        Command::Chat { manifest, resume } => {
            pod::chat::main(manifest.as_deref(), resume.as_deref())
        }
        Command::Conformance {
            pod_cmd,
            protocol,
            filter,
            kit,
            expect_timeout_ms,
            framing,
            strict,
            json,
            list,
        } => pod::conformance::main(&pod::conformance::Options {
            pod_cmd: pod_cmd.as_deref(),
            protocol: protocol.into(),
            expect_timeout: std::time::Duration::from_millis(expect_timeout_ms),
            filters: &filter,
            kit_dir: kit.as_deref(),
            framings: framing.framings(),
            strict,
            json,
            list,
        }),
        Command::Check { manifest, examples } => {
            pod::commands::check(manifest.as_deref(), examples)
        }
        Command::Config { manifest } => pod::commands::config(manifest.as_deref()),
        Command::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "pod", &mut std::io::stdout());
            0
        }
        Command::Man => {
            let page = clap_mangen::Man::new(Cli::command());
            match page.render(&mut std::io::stdout()) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("pod man: {e}");
                    1
                }
            }
        }
        Command::Init { dir, stack, force } => pod::commands::init(dir.as_deref(), stack, force),
        Command::Grants { dir, revoke } => pod::commands::grants(dir.as_deref(), revoke.as_deref()),
        Command::Trust { dir, list, revoke } => {
            if list {
                pod::commands::trust_list()
            } else if let Some(dir) = revoke {
                pod::commands::trust_revoke(&dir)
            } else {
                pod::commands::trust(dir.as_deref())
            }
        }
        Command::Explain {
            manifest,
            tool,
            input,
            annotations,
            trust,
            json,
        } => pod::commands::explain(
            manifest.as_deref(),
            &tool,
            &input,
            annotations.as_deref(),
            trust,
            json,
        ),
        Command::Schema { check, dir } => pod::commands::schema(&dir, check),
    };
    ExitCode::from(code)
}
