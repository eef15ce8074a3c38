//! The network as a subject: host names as rules see them, and the patterns of `network` rules.
//!
//! A `network` subject is a host, with `:port` when the port is not 80 or 443
//! (`index.crates.io`, `localhost:8080`, `[2001:db8::1]:22`). The same subject comes from the
//! proxy a call's processes go through (`{"host": …, "port": …}`) and from `web_fetch`'s URL.
//!
//! Host names are checked before anything matches them: ASCII letters, digits, `-` and `.` only
//! (an IDN must arrive in its `xn--` form), labels of 1 to 63 bytes not starting or ending with
//! `-`, at most 253 bytes, lowercased, one trailing dot dropped. A NUL or any other byte no DNS
//! name has is refused, never cut off (`attacker.example\0.allowed.test`). A last label of
//! digits only is no name (`2130706433`, `127.1`): such a host is refused unless it is a
//! dotted-quad IPv4 literal.
//!
//! Patterns compare labels, never strings: `*.crates.io` is one or more whole labels followed by
//! the labels `crates` and `io`, so `crates.io.evil.test` and `evilcrates.io` do not match it.
//! `*` alone matches every name (never an IP literal: an address is allowed only by a rule that
//! names it). A wildcard over a public suffix (`*.com`, `*.co.uk`) is refused when the rule is
//! loaded: it would allow half the internet.
//!
//! A rule's `methods` ([`methods`]) limits a `network` rule to some plain-HTTP methods: it
//! decides a subject only when the request's method is listed, never a `CONNECT` tunnel (no
//! method: its requests are inside TLS), and a decision it passed over says so
//! (`passed_over`).
//!
//! Under the managed lock `allowed_domains_only` (`Rules::lock_network`, in the crate's root) a
//! host is allowed or asked for only by a managed rule; every other host, in any form, is
//! denied.
//!
//! Must not touch: resolving names or connecting (`pod::network` does both, and checks the
//! resolved address), the rest of the engine.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The name rules use for the network: `tool = "network"`.
pub const NETWORK: &str = "network";

/// Why a host cannot be a subject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HostError(pub String);

/// A checked host: a DNS name (lowercase, no trailing dot) or an IP literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl Host {
    /// Reads `raw` strictly (see the module header). An IPv6 literal may be bracketed.
    pub fn parse(raw: &str) -> Result<Host, HostError> {
        if let Some(inner) = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            return inner
                .parse::<Ipv6Addr>()
                .map(|ip| Host::Ip(IpAddr::V6(ip)))
                .map_err(|_| {
                    HostError(format!("`{}` is not an IPv6 address", raw.escape_debug()))
                });
        }
        if let Ok(ip) = raw.parse::<Ipv6Addr>() {
            return Ok(Host::Ip(IpAddr::V6(ip)));
        }
        if let Some(b) = raw
            .bytes()
            .find(|b| !(b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.'))
        {
            return Err(HostError(format!(
                "the host `{}` holds the byte {:#04x}, which no DNS name has (an international \
                 name must be written in its xn-- form)",
                raw.escape_debug(),
                b
            )));
        }
        let name = raw.strip_suffix('.').unwrap_or(raw).to_ascii_lowercase();
        if name.is_empty() || name.len() > 253 {
            return Err(HostError(format!(
                "the host `{raw}` is {} bytes long: a DNS name has 1 to 253",
                name.len()
            )));
        }
        let labels: Vec<&str> = name.split('.').collect();
        for label in &labels {
            if label.is_empty() || label.len() > 63 {
                return Err(HostError(format!(
                    "the host `{raw}` has a label of {} bytes: each has 1 to 63",
                    label.len()
                )));
            }
            if label.starts_with('-') || label.ends_with('-') {
                return Err(HostError(format!(
                    "the host `{raw}` has a label starting or ending with `-`"
                )));
            }
        }
        let last = labels.last().copied().unwrap_or("");
        if last.bytes().all(|b| b.is_ascii_digit()) {
            // Only the canonical dotted quad is an address; `127.1` or `2130706433` are other
            // spellings a resolver may also read as one, and no name.
            return match name.parse::<Ipv4Addr>() {
                Ok(ip) if ip.to_string() == name => Ok(Host::Ip(IpAddr::V4(ip))),
                _ => Err(HostError(format!(
                    "the host `{raw}` ends in a numeric label: it is neither a name nor an IPv4 \
                     address in dotted-quad form"
                ))),
            };
        }
        Ok(Host::Name(name))
    }

    /// The host as subjects show it (an IPv6 address in brackets).
    pub fn text(&self) -> String {
        match self {
            Host::Name(n) => n.clone(),
            Host::Ip(IpAddr::V4(ip)) => ip.to_string(),
            Host::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
        }
    }
}

/// The subject of a connection to `host` on `port`: the host, with `:port` unless it is 80 or
/// 443.
pub fn subject(host: &str, port: u16) -> Result<String, HostError> {
    let host = Host::parse(host)?;
    Ok(match port {
        80 | 443 => host.text(),
        _ => format!("{}:{port}", host.text()),
    })
}

/// The subject of a URL: its host and port (`http` and `https` only).
pub fn url_subject(raw: &str) -> Result<String, HostError> {
    let url = url::Url::parse(raw).map_err(|e| HostError(format!("`{raw}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(HostError(format!(
            "`{raw}` is a {} URL: only http and https are fetched",
            url.scheme()
        )));
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        None => return Err(HostError(format!("`{raw}` has no host"))),
    };
    let port = url.port_or_known_default().unwrap_or(443);
    subject(&host, port)
}

/// The HTTP methods a rule's `methods` may list (`CONNECT` is no request a rule can limit: a
/// tunnel's requests are inside TLS).
pub const METHODS: &[&str] = &[
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE",
];

/// A rule's `methods` checked: only on a `tool = "network"` rule, not empty, each one of
/// [`METHODS`] (in any case; kept uppercase, each once).
pub fn methods(tool: &str, list: &[String]) -> Result<Vec<String>, HostError> {
    if !tool.eq_ignore_ascii_case(NETWORK) {
        return Err(HostError(format!(
            "only a `tool = \"network\"` rule can be limited to HTTP methods; this rule's tool \
             is `{tool}` (leave `methods` out, or write the rule for the network)"
        )));
    }
    if list.is_empty() {
        return Err(HostError(
            "is empty: list the HTTP methods the rule decides (`[\"GET\", \"HEAD\"]`), or leave \
             `methods` out for every request and tunnel"
                .into(),
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for m in list {
        let upper = m.to_ascii_uppercase();
        if upper == "CONNECT" {
            return Err(HostError(
                "`CONNECT` cannot be listed: a tunnel's requests are inside TLS, so a rule with \
                 `methods` never decides one; leave `methods` out of a rule for tunnels (HTTPS)"
                    .into(),
            ));
        }
        if !METHODS.contains(&upper.as_str()) {
            return Err(HostError(format!(
                "`{}` is not an HTTP method a rule can name ({})",
                m.escape_debug(),
                METHODS.join(", ")
            )));
        }
        if !out.contains(&upper) {
            out.push(upper);
        }
    }
    Ok(out)
}

/// The note of a decision about a request of `method` (`None`: a `CONNECT` tunnel) that the
/// rule at `index` (limited to `spec.methods`) matched the host of but did not decide.
pub(crate) fn passed_over(index: usize, spec: &crate::RuleSpec, method: Option<&str>) -> String {
    let list = spec.methods.as_deref().unwrap_or_default().join(", ");
    let rule = format!(
        "rule {index} ({} \"{}\" {}) decides only {list} requests over plain http://",
        spec.tool, spec.pattern, spec.action
    );
    match method {
        None => format!(
            "{rule}, and this is a CONNECT tunnel (HTTPS), whose requests are inside TLS and \
             cannot be seen, so it does not apply"
        ),
        Some(m) => format!("{rule}, not {}", m.escape_debug()),
    }
}

/// A public suffix a wildcard may not stand over, besides every single label (`*.com`,
/// `*.io`). A short list of the widely used shared ones; a wildcard over any other suffix under
/// which anyone can register a name is the writer's responsibility (docs/permissions.md).
const PUBLIC_SUFFIXES: &[&str] = &[
    "co.uk",
    "org.uk",
    "ac.uk",
    "gov.uk",
    "me.uk",
    "com.au",
    "net.au",
    "org.au",
    "co.jp",
    "ne.jp",
    "or.jp",
    "co.nz",
    "com.br",
    "com.cn",
    "com.mx",
    "co.in",
    "co.za",
    "com.tr",
    "github.io",
    "gitlab.io",
    "pages.dev",
    "workers.dev",
    "vercel.app",
    "netlify.app",
    "herokuapp.com",
    "appspot.com",
    "cloudfront.net",
    "amazonaws.com",
    "azurewebsites.net",
    "blogspot.com",
    "web.app",
    "firebaseapp.com",
    "s3.amazonaws.com",
    "ngrok.io",
    "ngrok.app",
];

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    /// `*`: every name, never an address.
    AnyName,
    /// `*.a.b`: one or more labels, then these.
    Below(Vec<String>),
    Exact(Host),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortMatch {
    /// No port written: 80 and 443, the subjects without one.
    Default,
    Any,
    Exact(u16),
}

/// A compiled `network` rule pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostMatch,
    port: PortMatch,
}

impl HostPattern {
    /// Compiles `host`, `*.suffix` or `*`, each optionally followed by `:PORT` or `:*`.
    pub fn compile(pattern: &str) -> Result<HostPattern, HostError> {
        let (host, port) = split_port(pattern)
            .ok_or_else(|| HostError(format!("`{pattern}` has an unreadable `:port`")))?;
        let port = match port {
            None => PortMatch::Default,
            Some("*") => PortMatch::Any,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => PortMatch::Exact(n),
                _ => {
                    return Err(HostError(format!(
                        "`{pattern}`: the port `{p}` is not 1 to 65535 or `*`"
                    )))
                }
            },
        };
        let host = if host == "*" {
            HostMatch::AnyName
        } else if let Some(suffix) = host.strip_prefix("*.") {
            let checked = match Host::parse(suffix) {
                Ok(Host::Name(n)) => n,
                Ok(Host::Ip(_)) => {
                    return Err(HostError(format!(
                        "`{pattern}`: a wildcard stands over names, not over an address"
                    )))
                }
                Err(e) => return Err(HostError(format!("`{pattern}`: {e}"))),
            };
            if !checked.contains('.') || PUBLIC_SUFFIXES.contains(&checked.as_str()) {
                return Err(HostError(format!(
                    "`{pattern}` stands over the public suffix `{checked}`, under which anyone \
                     can register a name: name the domain (`*.example.{checked}`)"
                )));
            }
            HostMatch::Below(checked.split('.').map(String::from).collect())
        } else if host.contains(['*', '?']) {
            return Err(HostError(format!(
                "`{pattern}`: in a network pattern `*` is only the whole first label (`*.crates.io`) \
                 or the whole host (`*`)"
            )));
        } else {
            HostMatch::Exact(Host::parse(host).map_err(|e| HostError(format!("`{pattern}`: {e}")))?)
        };
        Ok(HostPattern { host, port })
    }

    /// Whether the subject `text` (as [`subject`] writes it) matches.
    pub fn matches(&self, text: &str) -> bool {
        let Some((host, port)) = split_port(text) else {
            return false;
        };
        let port_ok = match (self.port, port) {
            (PortMatch::Any, _) => true,
            (PortMatch::Default, None) => true,
            (PortMatch::Exact(n), Some(p)) => p.parse::<u16>().is_ok_and(|p| p == n),
            (PortMatch::Exact(n), None) => n == 80 || n == 443,
            (PortMatch::Default, Some(_)) => false,
        };
        if !port_ok {
            return false;
        }
        let Ok(host) = Host::parse(host) else {
            return false;
        };
        match (&self.host, &host) {
            (HostMatch::AnyName, Host::Name(_)) => true,
            (HostMatch::Below(suffix), Host::Name(name)) => {
                let labels: Vec<&str> = name.split('.').collect();
                labels.len() > suffix.len()
                    && labels[labels.len() - suffix.len()..]
                        .iter()
                        .zip(suffix)
                        .all(|(a, b)| a == b)
            }
            (HostMatch::Exact(want), got) => want == got,
            _ => false,
        }
    }
}

/// `host[:port]` split, an IPv6 host in brackets; `None` for a bracket left open.
fn split_port(text: &str) -> Option<(&str, Option<&str>)> {
    if text.starts_with('[') {
        let end = text.find(']')?;
        let (host, rest) = text.split_at(end + 1);
        return match rest {
            "" => Some((host, None)),
            _ => rest.strip_prefix(':').map(|p| (host, Some(p))),
        };
    }
    // A bare IPv6 address has several colons and no port.
    if text.matches(':').count() > 1 {
        return Some((text, None));
    }
    Some(match text.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (text, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_strictly() {
        assert_eq!(subject("Index.Crates.IO.", 443).unwrap(), "index.crates.io");
        assert_eq!(subject("localhost", 8080).unwrap(), "localhost:8080");
        assert_eq!(subject("[::1]", 80).unwrap(), "[::1]");
        assert_eq!(subject("10.0.0.1", 22).unwrap(), "10.0.0.1:22");
        for bad in [
            "attacker.example\0.allowed.test",
            "a b.test",
            "a/b.test",
            "a_b.test",
            "-a.test",
            "a..test",
            "",
            "2130706433",
            "127.1",
            "0x7f.0.0.1",
            "b\u{fc}cher.de",
        ] {
            assert!(subject(bad, 443).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn patterns_compare_labels() {
        let p = HostPattern::compile("*.crates.io").unwrap();
        assert!(p.matches("index.crates.io"));
        assert!(p.matches("a.b.crates.io"));
        assert!(!p.matches("crates.io"));
        assert!(!p.matches("evilcrates.io"));
        assert!(!p.matches("crates.io.evil.test"));
        assert!(!p.matches("index.crates.io:8080"));
        let exact = HostPattern::compile("allowed.test").unwrap();
        assert!(exact.matches("allowed.test"));
        assert!(!exact.matches("allowed.test.evil.test"));
        assert!(!exact.matches("x.allowed.test"));
        let any = HostPattern::compile("*").unwrap();
        assert!(any.matches("example.org"));
        assert!(
            !any.matches("10.0.0.1"),
            "an address needs a rule naming it"
        );
        assert!(HostPattern::compile("10.0.0.1:*")
            .unwrap()
            .matches("10.0.0.1:22"));
        assert!(HostPattern::compile("localhost:8080")
            .unwrap()
            .matches("localhost:8080"));
        assert!(!HostPattern::compile("localhost:8080")
            .unwrap()
            .matches("localhost"));
        assert!(HostPattern::compile("[::1]:*").unwrap().matches("[::1]:5"));
    }

    #[test]
    fn wildcards_over_public_suffixes_and_odd_patterns_are_refused() {
        for bad in [
            "*.com",
            "*.io",
            "*.co.uk",
            "*.github.io",
            "*crates.io",
            "crates.*",
            "a?.test",
            "*.10.0.0.1",
            "x.test:0",
            "x.test:http",
            "a\0b.test",
        ] {
            assert!(HostPattern::compile(bad).is_err(), "{bad:?}");
        }
        assert!(HostPattern::compile("*.example.co.uk").is_ok());
    }

    /// Under `allowed_domains_only` only the managed rules allow or ask; a lower deny still
    /// narrows; every host no managed rule names is denied, whatever its form.
    #[test]
    fn the_managed_lock_denies_every_host_no_managed_rule_names() {
        use crate::{Policy, RuleSpec, Rules};
        use pod_protocol::Action;
        let rule = |tool: &str, pattern: &str, action| RuleSpec::new(tool, pattern, action);
        // As the managed layer orders them: managed denies, lower denies, managed asks, the
        // lower others, managed allows; `true` marks the managed ones.
        let specs = vec![
            (rule("network", "blocked.managed.test", Action::Deny), true),
            (
                rule("network", "*.narrowed.corp.example", Action::Deny),
                false,
            ),
            (rule("network", "asked.managed.test", Action::Ask), true),
            (rule("network", "evil.example", Action::Allow), false),
            (rule("*", "*", Action::Allow), false),
            (rule("network", "lower.example:*", Action::Ask), false),
            (rule("network", "93.184.216.34", Action::Allow), false),
            (rule("network", "*.corp.example", Action::Allow), true),
            (
                rule("network", "allowed.managed.test:8443", Action::Allow),
                true,
            ),
        ];
        let managed: Vec<bool> = specs.iter().map(|(_, m)| *m).collect();
        let specs: Vec<RuleSpec> = specs.into_iter().map(|(s, _)| s).collect();
        for default in [Action::Allow, Action::Ask, Action::Deny] {
            let open = Rules::compile(default, specs.clone()).unwrap();
            assert!(!open.network_locked());
            let locked = open.clone().lock_network(&managed);
            assert!(locked.network_locked());
            let decide = |rules: &Rules, host: &str, port: u16| {
                Policy::new(Some(rules.clone()), "/ws".into())
                    .decide(NETWORK, &serde_json::json!({ "host": host, "port": port }))
            };
            // The control: unlocked, the lower allows apply.
            assert_eq!(decide(&open, "evil.example", 443).decision, Action::Allow);
            assert_eq!(decide(&open, "93.184.216.34", 443).decision, Action::Allow);
            for (host, port, want) in [
                ("x.corp.example", 443, Action::Allow),
                ("allowed.managed.test", 8443, Action::Allow),
                ("asked.managed.test", 443, Action::Ask),
                ("blocked.managed.test", 443, Action::Deny),
                // A lower deny narrows a managed allow.
                ("a.narrowed.corp.example", 443, Action::Deny),
                // Allowed and asked for only below: denied.
                ("evil.example", 443, Action::Deny),
                ("lower.example", 8080, Action::Deny),
                ("no-rule.test", 443, Action::Deny),
                // A port no managed rule names.
                ("x.corp.example", 8080, Action::Deny),
                ("allowed.managed.test", 443, Action::Deny),
                // IP literals, which `*` never matches, whichever rule below names them.
                ("93.184.216.34", 443, Action::Deny),
                ("93.184.216.34", 22, Action::Deny),
                ("[2606:4700::1111]", 443, Action::Deny),
                ("2606:4700::1111", 8080, Action::Deny),
                ("::ffff:93.184.216.34", 443, Action::Deny),
                // Not a host at all.
                ("attacker.example\0.x.example", 443, Action::Deny),
                ("2130706433", 443, Action::Deny),
            ] {
                let d = decide(&locked, host, port);
                assert_eq!(d.decision, want, "{host}:{port} with {default:?}: {d:?}");
                let s = &d.subjects[0];
                if want != Action::Deny || s.rule.is_some() {
                    continue;
                }
                assert!(
                    s.invalid
                        || s.note
                            .as_deref()
                            .is_some_and(|n| n.contains("allowed_domains_only")),
                    "{s:?}"
                );
            }
            // Only the network is locked: the lower `*` allow still decides other tools.
            let bash = Policy::new(Some(locked.clone()), "/ws".into())
                .decide("bash", &serde_json::json!({ "command": "ls" }));
            assert_eq!(bash.decision, Action::Allow, "{bash:?}");
            // web_fetch's subject is the same network subject.
            let fetch = |url: &str| {
                Policy::new(Some(locked.clone()), "/ws".into())
                    .decide("web_fetch", &serde_json::json!({ "url": url }))
                    .decision
            };
            assert_eq!(fetch("https://x.corp.example/a"), Action::Allow);
            assert_eq!(fetch("https://evil.example/a"), Action::Deny);
            assert_eq!(fetch("http://93.184.216.34/"), Action::Deny);
            assert_eq!(fetch("http://[2606:4700::1111]:8080/"), Action::Deny);
            assert_eq!(fetch("http://0x5d.0xb8.0xd8.0x22/"), Action::Deny);
        }
    }

    #[test]
    fn which_rules_decide_network_subjects() {
        use crate::RuleSpec;
        use pod_protocol::Action;
        let d = |tool: &str, pattern: &str| {
            RuleSpec::new(tool, pattern, Action::Allow).decides_network()
        };
        assert!(d("network", "x.test"));
        assert!(d("Network", "*"));
        assert!(d("*", "*"));
        assert!(d("net*", "*.example.org"));
        assert!(!d("*", "rm *"));
        assert!(!d("bash", "*"));
        assert!(!d("web_fetch", "*"));
    }

    /// `methods` limits a network rule to plain-HTTP requests of those methods: another
    /// method or a CONNECT tunnel passes it over to the next rule or the default, and the
    /// decision says why.
    #[test]
    fn methods_limit_a_rule_to_plain_http_requests() {
        use crate::{Policy, RuleSpec, Rules};
        use pod_protocol::Action;
        let rules = Rules::compile(
            Action::Deny,
            vec![
                RuleSpec::new("network", "api.test", Action::Allow).with_methods(&["get", "HEAD"]),
                RuleSpec::new("network", "*.ask.test", Action::Ask),
                RuleSpec::new("network", "x.ask.test", Action::Allow).with_methods(&["POST"]),
            ],
        )
        .unwrap();
        let policy = Policy::new(Some(rules), "/ws".into());
        let decide = |input: serde_json::Value| policy.decide(NETWORK, &input);
        for method in ["GET", "HEAD"] {
            let d = decide(serde_json::json!({"host": "api.test", "method": method}));
            assert_eq!(d.decision, Action::Allow, "{method}: {d:?}");
            assert_eq!(d.subjects[0].rule.as_ref().map(|r| r.index), Some(1));
            assert_eq!(d.subjects[0].note, None);
        }
        // Another method, and a tunnel: rule 1 does not apply; nothing else names the host.
        let post = decide(serde_json::json!({"host": "api.test", "method": "POST"}));
        assert_eq!(post.decision, Action::Deny, "{post:?}");
        assert_eq!(post.subjects[0].rule, None);
        let note = post.subjects[0].note.clone().unwrap_or_default();
        assert!(
            note.contains("rule 1") && note.contains("not POST"),
            "{note}"
        );
        // HTTP methods are case-sensitive: `get` is not GET.
        let lower = decide(serde_json::json!({"host": "api.test", "method": "get"}));
        assert_eq!(lower.decision, Action::Deny, "{lower:?}");
        let tunnel = decide(serde_json::json!({"host": "api.test", "port": 443}));
        assert_eq!(tunnel.decision, Action::Deny, "{tunnel:?}");
        let note = tunnel.subjects[0].note.clone().unwrap_or_default();
        assert!(
            note.contains("CONNECT tunnel") && note.contains("inside TLS"),
            "{note}"
        );
        // A rule with methods after the deciding one changes nothing and is not mentioned.
        let asked = decide(serde_json::json!({"host": "x.ask.test", "method": "POST"}));
        assert_eq!(asked.decision, Action::Ask, "{asked:?}");
        assert_eq!(asked.subjects[0].note, None);
        // A method that is no string is an invalid input.
        let bad = decide(serde_json::json!({"host": "api.test", "method": 5}));
        assert!(bad.subjects[0].invalid, "{bad:?}");
        // web_fetch sends GET.
        let fetch = policy.decide(
            "web_fetch",
            &serde_json::json!({"url": "http://api.test/x"}),
        );
        assert_eq!(fetch.decision, Action::Allow, "{fetch:?}");
        let fetch = policy.decide(
            "web_fetch",
            &serde_json::json!({"url": "https://api.test/x"}),
        );
        assert_eq!(fetch.decision, Action::Allow, "{fetch:?}");
    }

    #[test]
    fn methods_are_checked_when_the_rules_load() {
        use crate::{RuleSpec, Rules};
        use pod_protocol::Action;
        let load = |spec: RuleSpec| Rules::compile(Action::Deny, vec![spec]);
        let ok = load(
            RuleSpec::new("Network", "a.test", Action::Allow).with_methods(&["get", "GET", "head"]),
        )
        .unwrap();
        assert_eq!(
            ok.specs().next().and_then(|s| s.methods.clone()),
            Some(vec!["GET".to_string(), "HEAD".to_string()])
        );
        for (spec, says) in [
            (
                RuleSpec::new("bash", "*", Action::Allow).with_methods(&["GET"]),
                "tool = \"network\"",
            ),
            (
                RuleSpec::new("*", "*", Action::Allow).with_methods(&["GET"]),
                "tool = \"network\"",
            ),
            (
                RuleSpec::new("network", "a.test", Action::Allow).with_methods(&[]),
                "empty",
            ),
            (
                RuleSpec::new("network", "a.test", Action::Allow).with_methods(&["FETCH"]),
                "`FETCH`",
            ),
            (
                RuleSpec::new("network", "a.test", Action::Allow).with_methods(&["CONNECT"]),
                "TLS",
            ),
        ] {
            let (at, e) = load(spec).unwrap_err();
            assert_eq!((at, e.field), (0, "methods"), "{e}");
            assert!(e.problem.contains(says), "{says}: {e}");
        }
    }

    #[test]
    fn url_subjects() {
        assert_eq!(url_subject("https://Docs.RS/x?y").unwrap(), "docs.rs");
        assert_eq!(url_subject("http://a.test:8080/").unwrap(), "a.test:8080");
        assert_eq!(url_subject("http://0x7f.1/").unwrap(), "127.0.0.1");
        assert!(url_subject("file:///etc/passwd").is_err());
        assert!(url_subject("ftp://x.test/").is_err());
    }
}
