//! The `web_fetch` tool: GETs an `http://` or `https://` URL from the pod's own process and
//! returns the response's text.
//!
//! Owns: fetching under the `network` rules. The call's subject is the URL's host (and port
//! when not 80/443), decided, and asked about, by the runtime like any call's; each redirect is
//! a new host and is decided again here: followed when the rules allow it, and otherwise the
//! result names the URL it led to and why it was not followed (a new `web_fetch` call of that
//! URL is then decided, and asked about, on its own). Every hop connects only to addresses
//! checked by `network::resolve` (no loopback, private or metadata range; the name is resolved
//! once, and the request pinned to those addresses). Bounds: [`MAX_REDIRECTS`] hops,
//! [`TIMEOUT`] per request, at most [`MAX_BYTES`] of body read (more is cut with a note);
//! only text (`text/*`, JSON, XML, JavaScript) is returned; HTML comes back with its tags
//! stripped (a plain reading, no rendering).
//!
//! Must not touch: the rules (the runtime decided the first hop; `network::Net` decides the
//! others), the sandbox (nothing is spawned), the session log.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::common::{parse_input, schema_of};
use super::{Presentation, Tool, ToolContext, ToolKind, ToolOutput};
use crate::network;

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;
/// Time for one request, from connecting to the last byte of the body.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of body read at most.
pub const MAX_BYTES: usize = 1 << 20;

/// Input of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchInput {
    /// The http:// or https:// URL to GET. Its host must be allowed by the `network` rules.
    pub url: String,
}

pub struct WebFetch;

#[async_trait]
impl Tool for WebFetch {
    fn name(&self) -> &'static str {
        "web_fetch"
    }

    fn description(&self) -> &'static str {
        "Fetch an http:// or https:// URL (GET) and return its text (HTML with the tags \
         stripped). The host must be allowed by the network rules; a redirect to another host \
         is decided again and may stop the fetch. At most 1 MiB of body, 30 s, 5 redirects."
    }

    fn input_schema(&self) -> serde_json::Value {
        schema_of::<WebFetchInput>()
    }

    fn example(&self) -> &str {
        "'{\"url\":\"https://docs.rs/tokio\"}'"
    }

    fn read_only(&self) -> bool {
        // It sends a request (its URL can carry data out): not a read of the workspace.
        false
    }

    fn present(&self, input: &serde_json::Value) -> Presentation {
        let Ok(i) = WebFetchInput::deserialize(input) else {
            return Presentation {
                kind: ToolKind::Fetch,
                ..Presentation::other()
            };
        };
        Presentation {
            kind: ToolKind::Fetch,
            title: Some(format!("fetch {}", i.url)),
            locations: Vec::new(),
            change: None,
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let input: WebFetchInput = match parse_input(input) {
            Ok(i) => i,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        let Some(net) = &ctx.net else {
            return ToolOutput::error(
                "web_fetch: this session has no network rules to fetch under",
            );
        };
        let mut url = match reqwest::Url::parse(&input.url) {
            Ok(u) => u,
            Err(e) => {
                return ToolOutput::error(format!("invalid input: field `url` is not a URL: {e}"))
            }
        };
        let mut hops = Vec::new();
        for hop in 0..=MAX_REDIRECTS {
            let (host, port) = match network::url_host_port(&url) {
                Ok(hp) => hp,
                Err(e) => return ToolOutput::error(e),
            };
            // The first hop is the call's own subject, decided (or asked) before the tool ran.
            if hop > 0 {
                if let Err(refusal) = net.check(&host, port, Some("GET")) {
                    return ToolOutput::error(format!(
                        "{}the redirect to {url} was not followed: {refusal} ({}). Call \
                         web_fetch with that URL to have it decided on its own.",
                        hops_text(&hops),
                        refusal.code
                    ));
                }
            }
            let fetched = tokio::select! {
                r = fetch(net, &url, &host, port) => r,
                () = ctx.cancel.cancelled() => return ToolOutput::error("cancelled"),
            };
            match fetched {
                Err(e) => return ToolOutput::error(format!("{}{e}", hops_text(&hops))),
                Ok(Fetched::Redirect(location)) => {
                    let next = match url.join(&location) {
                        Ok(n) => n,
                        Err(e) => {
                            return ToolOutput::error(format!(
                                "{}{url} redirected to `{}`, which is not a URL: {e}",
                                hops_text(&hops),
                                location.escape_debug()
                            ))
                        }
                    };
                    hops.push(url.to_string());
                    url = next;
                }
                Ok(Fetched::Body { status, text, note }) => {
                    let mut out = hops_text(&hops);
                    out.push_str(&format!("{url} -> HTTP {status}\n\n{text}"));
                    if let Some(note) = note {
                        out.push_str(&format!("\n\n({note})"));
                    }
                    return ToolOutput {
                        content: out,
                        is_error: !(200..300).contains(&status),
                    };
                }
            }
        }
        ToolOutput::error(format!(
            "{}more than {MAX_REDIRECTS} redirects: stopped at {url}",
            hops_text(&hops)
        ))
    }
}

fn hops_text(hops: &[String]) -> String {
    hops.iter().map(|h| format!("{h} -> redirect\n")).collect()
}

enum Fetched {
    Redirect(String),
    Body {
        status: u16,
        text: String,
        note: Option<String>,
    },
}

async fn fetch(
    net: &network::Net,
    url: &reqwest::Url,
    host: &str,
    port: u16,
) -> Result<Fetched, String> {
    let addrs = net
        .resolve(host, port)
        .await
        .map_err(|r| format!("{url}: {r} ({})", r.code))?;
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(TIMEOUT)
        .connect_timeout(network::CONNECT_TIMEOUT)
        .user_agent(concat!("pod/", env!("CARGO_PKG_VERSION"), " web_fetch"));
    if let Some(url::Host::Domain(name)) = url.host() {
        // Pinned: the client connects to the checked addresses, never resolving again.
        builder = builder.resolve_to_addrs(name, &addrs);
    }
    let client = builder
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let mut response = client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    if status.is_redirection() {
        if let Some(location) = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
        {
            return Ok(Fetched::Redirect(location.to_string()));
        }
    }
    let kind = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let textual = kind.is_empty()
        || kind.starts_with("text/")
        || kind.contains("json")
        || kind.contains("xml")
        || kind.contains("javascript");
    if !textual {
        return Ok(Fetched::Body {
            status: status.as_u16(),
            text: String::new(),
            note: Some(format!("the body is `{kind}`, not text: not shown")),
        });
    }
    let mut body = Vec::new();
    let mut cut = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_BYTES - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    cut = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => return Err(format!("{url}: reading the body: {e}")),
        }
    }
    let mut text = String::from_utf8_lossy(&body).into_owned();
    if kind.contains("html") {
        text = strip_html(&text);
    }
    Ok(Fetched::Body {
        status: status.as_u16(),
        text,
        note: cut.then(|| format!("cut at {MAX_BYTES} bytes")),
    })
}

/// HTML as plain text: tags, scripts and styles removed, common entities decoded, blank runs
/// collapsed. A reading for a model, not a renderer.
fn strip_html(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let lower = html.to_ascii_lowercase();
    let mut i = 0;
    while i < html.len() {
        let rest = &lower[i..];
        if rest.starts_with("<script") || rest.starts_with("<style") {
            let close = if rest.starts_with("<script") {
                "</script"
            } else {
                "</style"
            };
            i = rest.find(close).map_or(html.len(), |e| i + e + close.len());
            if let Some(gt) = lower[i..].find('>') {
                i += gt + 1;
            }
            continue;
        }
        if rest.starts_with('<') {
            match rest.find('>') {
                Some(gt) => {
                    let tag = &rest[1..gt];
                    if [
                        "p", "/p", "br", "div", "/div", "li", "tr", "h1", "h2", "h3", "/h1", "/h2",
                        "/h3",
                    ]
                    .iter()
                    .any(|t| tag == *t || tag.starts_with(&format!("{t} ")))
                    {
                        out.push('\n');
                    }
                    i += gt + 1;
                }
                None => break,
            }
            continue;
        }
        let next = rest.find('<').map_or(html.len(), |n| i + n);
        out.push_str(&html[i..next]);
        i = next;
    }
    let out = out
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let mut lines: Vec<&str> = Vec::new();
    for line in out.lines().map(str::trim) {
        if line.is_empty() && lines.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        lines.push(line);
    }
    lines.join("\n").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_reads_as_text() {
        let html = "<html><head><style>p{}</style><script>x()</script></head>\
                    <body><h1>Title</h1><p>a &amp; b</p><p>c</p></body></html>";
        assert_eq!(strip_html(html), "Title\n\na & b\n\nc");
    }
}
