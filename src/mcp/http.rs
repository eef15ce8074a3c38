//! One MCP server over streamable HTTP: the connection is pod's own, so it is decided like
//! `web_fetch`'s before a byte is sent.
//!
//! Owns: the gate of a `url` server (its URL's host and port one `network` subject, decided by
//! [`Net::check`]: only an allow lets it start; a deny, or an ask nobody can answer at start-up,
//! leaves it not started, naming the rule), the addresses it may reach (resolved once by
//! [`Net::resolve`], loopback, private and metadata ranges refused, the HTTP client pinned to the
//! checked addresses so no second look-up happens), and the `rmcp` streamable HTTP client
//! transport over `reqwest` 0.13 with pod's bounds: no proxy, no redirect followed (a redirect
//! could lead to a host the rules never saw), [`MAX_MESSAGE`] bytes per JSON response or SSE
//! event, [`MAX_ERROR_BODY`] of an error body, a bounded number of SSE reconnects.
//!
//! Must not touch: the rules themselves (`network::Net` applies them), the server's lifetime
//! and calls (`server.rs`, `tool.rs`), the sandbox (nothing is spawned).

use std::collections::HashMap;
use std::sync::{Arc, Once};

use reqwest_mcp::header::{HeaderName, HeaderValue};
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;

use crate::manifest::McpHeaders;
use crate::network::{self, Net};

/// Most bytes of one JSON response or one SSE event from a server (a tool's result text is cut
/// further, to `tool::OUTPUT_CAP`, before the model sees it).
pub const MAX_MESSAGE: usize = 8 << 20;
/// Most bytes of an HTTP error body read for the message that names it.
pub const MAX_ERROR_BODY: usize = 64 << 10;
/// How often a broken SSE stream is reopened before the server counts as gone.
const SSE_RETRIES: usize = 3;

/// The transport `rmcp` speaks MCP over, to a server that passed the gate.
pub type Transport = StreamableHttpClientTransport<reqwest_mcp::Client>;

/// The method streamable HTTP sends its messages with: what a `network` rule's `methods` must
/// list to let an MCP server through.
pub const METHOD: &str = "POST";

/// The transport to the server at `url`, once its host passed the `network` rules and its
/// addresses the blocked ranges; otherwise why not, naming the rule or the range and what to
/// change.
pub async fn transport(url: &str, headers: &McpHeaders, net: &Net) -> Result<Transport, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let (host, port) = network::url_host_port(&parsed)?;
    if let Err(refusal) = net.check(&host, port, Some(METHOD)) {
        let subject = network::subject(&host, port).unwrap_or_else(|_| host.clone());
        return Err(format!(
            "not started: pod connects to {url} from its own process, so its host is decided by \
             the network rules, and network `{subject}` is {refusal} ({}); to use this server, \
             allow it with a rule in your configuration: [[permissions.rule]] tool = \"network\" \
             pattern = \"{subject}\" action = \"allow\"",
            refusal.code
        ));
    }
    let addrs = net
        .resolve(&host, port)
        .await
        .map_err(|r| format!("not started: {url}: {r} ({})", r.code))?;
    install_crypto();
    let mut builder = reqwest_mcp::Client::builder()
        .no_proxy()
        .redirect(reqwest_mcp::redirect::Policy::none())
        .connect_timeout(network::CONNECT_TIMEOUT)
        .pool_max_idle_per_host(0)
        .user_agent(concat!("pod/", env!("CARGO_PKG_VERSION"), " mcp"));
    if let Some(url::Host::Domain(name)) = parsed.host() {
        // Pinned: the client connects to the checked addresses, never resolving again.
        builder = builder.resolve_to_addrs(name, &addrs);
    }
    let client = builder
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let mut custom = HashMap::new();
    for (name, value) in &headers.0 {
        // Checked when the configuration was read; a client's headers are checked by ACP.
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header {name:?} is not a valid HTTP header name"))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name} is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        custom.insert(name, value);
    }
    let mut retry = ExponentialBackoff::default();
    retry.max_times = Some(SSE_RETRIES);
    let mut config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(custom)
        .max_sse_event_size(MAX_MESSAGE)
        .max_json_response_size(MAX_MESSAGE)
        .max_error_response_size(MAX_ERROR_BODY)
        .reinit_on_expired_session(false);
    config.retry_config = Arc::new(retry);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// reqwest 0.13 (rmcp's) is built without a bundled crypto provider: ring's, which pod's other
/// HTTP client already uses, becomes the process default once.
fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err: a provider is already installed, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
