//! MCP servers as tools: the servers a session names are started when the pod opens, their
//! tools are offered to the model as `mcp__SERVER__TOOL`, and their calls pass the same check
//! chain as the built-in tools' before they reach the server.
//!
//! Owns: each server's lifetime ([`server`]: its process, started through the sandbox and owned
//! by the reaper; the MCP client, the official Rust SDK `rmcp`, on its stdin and stdout; its
//! stderr copied to the log; stopping it), the connection to a streamable HTTP server ([`http`]:
//! its host decided by the `network` rules, its addresses checked, before anything is sent),
//! and each tool's calls ([`tool`]: timeouts,
//! cancellation sent to the server, results projected as pod's results).
//!
//! [`start`] is the one entry point: it takes a list of [`McpServerConfig`] (the manifest's, or
//! those a front-end such as ACP's `session/new` receives) and starts them in parallel, each
//! under its start-up timeout.
//!
//! Must not touch: permission decisions (a `url` server's host is decided by `network::Net`; a
//! call reaches [`tool::McpTool::run`] only after the
//! check chain allowed it; its subjects are `permission::mcp`'s), the wire.

pub mod http;
pub mod server;
pub mod tool;

use std::sync::Arc;

use crate::manifest::McpServerConfig;
use crate::network::Net;
use crate::protocol::{McpServerInfo, McpServerState};
use crate::sandbox::Sandbox;
use crate::tools::Tool;
use server::Server;

/// The MCP servers of a session, running or not.
#[derive(Default)]
pub struct McpServers {
    servers: Vec<Arc<Server>>,
}

/// Starts every enabled server of `configs` at once, each in `sandbox` (a `url` server: under
/// the `net` rules) and under its own start-up timeout; returns when each has started or
/// failed. A server that fails is reported (in [`McpServers::info`] and the log) and its tools'
/// calls get an error result; it never stops the others.
pub async fn start(
    configs: &[McpServerConfig],
    sandbox: &Arc<Sandbox>,
    net: &Arc<Net>,
) -> McpServers {
    let starting = configs
        .iter()
        .filter(|c| c.enabled)
        .map(|c| Server::start(c.clone(), sandbox.clone(), net.clone()));
    McpServers {
        servers: futures::future::join_all(starting).await,
    }
}

impl McpServers {
    /// No servers.
    pub fn none() -> McpServers {
        McpServers::default()
    }

    /// These servers and `other`'s (a front-end's servers beside the manifest's).
    pub fn merge(mut self, other: McpServers) -> McpServers {
        self.servers.extend(other.servers);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The tools of the running servers, in server then listing order.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers.iter().flat_map(|s| s.tools()).collect()
    }

    /// Each server's state, for `initialize`.
    pub fn info(&self) -> Vec<McpServerInfo> {
        self.servers.iter().map(|s| s.info()).collect()
    }

    /// Why a call of `tool`, which is not among [`McpServers::tools`], cannot run, when it names
    /// one of these servers: the server failed or was left out.
    pub fn unavailable(&self, tool: &str) -> Option<String> {
        let (server, name) = crate::permission::mcp::split(tool)?;
        let found = self.servers.iter().find(|s| s.name() == server)?;
        Some(found.unavailable(name))
    }

    /// Stops every server: closes its stdin, gives it a moment to exit, then kills what is left
    /// of its processes. Calls still running get an error result.
    pub async fn stop(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.stop())).await;
    }

    /// How many servers run now.
    pub fn running(&self) -> usize {
        self.servers
            .iter()
            .filter(|s| s.info().state == McpServerState::Running)
            .count()
    }
}
