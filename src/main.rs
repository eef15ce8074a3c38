//! The `pod` binary: parses arguments and calls the library. Nothing else lives here.

#![deny(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
enum Command {
    /// Serve the JSON-RPC protocol on stdin/stdout (the main job).
    Serve {
        #[arg(long, default_value = "pod.toml")]
        manifest: PathBuf,
        /// Resume this session id instead of starting a new session.
        #[arg(long)]
        resume: Option<String>,
        /// The folder holding the session logs (default: `[pod].state_dir`, else
        /// `$XDG_STATE_HOME/pod/<workspace>-<hash>`).
        #[arg(long)]
        state_dir: Option<PathBuf>,
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
        /// The manifest to serve; without it, the bundled example with the current directory
        /// as its workspace.
        #[arg(long)]
        manifest: Option<PathBuf>,
    },
    /// Run the conformance kit against a pod command; exit 1 when a MUST requirement fails.
    Conformance {
        /// The pod to test, run with `sh -c`; `{manifest}` is replaced by the manifest's path.
        #[arg(long)]
        pod_cmd: String,
        /// Run only the requirements whose id contains this text.
        #[arg(long)]
        filter: Option<String>,
        /// Read the kit from this folder instead of the copy built into the binary.
        #[arg(long)]
        kit: Option<PathBuf>,
    },
    /// List a pod's sessions (id, last change, size) and the folder holding them.
    Sessions {
        #[arg(long, default_value = "pod.toml")]
        manifest: PathBuf,
        /// The folder holding the session logs, as given to `pod serve --state-dir`.
        #[arg(long)]
        state_dir: Option<PathBuf>,
    },
    /// Validate a manifest and lint its rules; exit 1 on errors.
    Check { manifest: PathBuf },
    /// Print the decision for one tool call and the rule that decided each subject.
    Explain {
        manifest: PathBuf,
        #[arg(long)]
        tool: String,
        /// The tool input as a JSON object.
        #[arg(long)]
        input: String,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write schema/*.json from the Rust types, or with --check fail when they are stale.
    Schema {
        #[arg(long)]
        check: bool,
        /// The folder to write to or check.
        #[arg(long, default_value = "schema")]
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    pod::logging::init(cli.log_level.as_deref());
    // Test-only fault injection (`POD_TEST_PANIC=1`) is decided once, at start-up.
    pod::testing::panics_armed();
    let code = match cli.command {
        Command::Serve {
            manifest,
            resume,
            state_dir,
            max_message_bytes,
        } => pod::server::main(&manifest, resume, state_dir.as_deref(), max_message_bytes),
        Command::Acp {
            state_dir,
            max_message_bytes,
        } => pod::acp::main(state_dir.as_deref(), max_message_bytes),
        Command::Sessions {
            manifest,
            state_dir,
        } => pod::commands::sessions(&manifest, state_dir.as_deref()),
        Command::Chat { manifest } => pod::chat::main(manifest.as_deref()),
        Command::Conformance {
            pod_cmd,
            filter,
            kit,
        } => pod::conformance::main(&pod_cmd, filter.as_deref(), kit.as_deref()),
        Command::Check { manifest } => pod::commands::check(&manifest),
        Command::Explain {
            manifest,
            tool,
            input,
            json,
        } => pod::commands::explain(&manifest, &tool, &input, json),
        Command::Schema { check, dir } => pod::commands::schema(&dir, check),
    };
    ExitCode::from(code)
}
