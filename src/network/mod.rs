//! The network as a capability: the `network` rules applied to connections, the addresses no
//! call may reach, and pod's own proxy ([`proxy`]).
//!
//! Owns: [`Net`], the session's gate (the permission layer's decision for a host and port, the
//! same `Policy::decide` as every tool call, with `tool = "network"`), [`resolve`] (a name
//! resolved once, every address checked, the checked addresses the only ones connected to: no
//! second lookup, so no DNS-rebinding window), [`blocked`] (loopback, private, link-local and
//! metadata, carrier-grade NAT, multicast and reserved ranges, IPv4 inside IPv6 included), and
//! the proxy a call's processes reach the network through under `[sandbox] network = "proxy"`.
//!
//! Must not touch: the decision itself (`permission` decides; this module applies it), the
//! sandbox (which only learns the proxy's port), the session log, the wire. The test resolver
//! (`testing::test_hosts`, debug builds only) is the one way a test names a local listener.

pub mod proxy;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::permission::network::{self as rules, Host, NETWORK};
use crate::permission::Policy;
use crate::protocol::{Action, Decision};

pub use proxy::{Admission, Entry, NetworkAsk, Proxy, Report};

/// How long resolving one name may take.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting to one address may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a connection is refused, with the `x-proxy-error` code a client sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct Refusal {
    /// The `x-proxy-error` value: `blocked-by-rule`, `blocked-by-ask`, `blocked-by-approval`, `invalid-host`,
    /// `blocked-address`, `resolve-failed`, `connect-failed`, `proxy-auth-required`,
    /// `bad-request`, `limit`.
    pub code: &'static str,
    pub text: String,
}

impl Refusal {
    pub fn new(code: &'static str, text: impl Into<String>) -> Refusal {
        Refusal {
            code,
            text: text.into(),
        }
    }
}

/// The session's network gate: the rules for hosts.
#[derive(Debug, Clone)]
pub struct Net {
    policy: Arc<Policy>,
    /// Names resolved to a fixed address that is exempt from [`blocked`]: set only by
    /// [`Net::pinning`], which the pod binary never calls (benches use it to serve a name from
    /// a local listener in a release build).
    pinned: Vec<(String, IpAddr)>,
}

impl Net {
    pub fn new(policy: Arc<Policy>) -> Net {
        Net {
            policy,
            pinned: Vec::new(),
        }
    }

    /// This gate with `name` resolving to `ip`, reachable even when `ip` is loopback or
    /// private. For benches and an embedder's own tests; the pod binary never calls it (its
    /// one test switch is `testing::test_hosts`, debug builds only).
    pub fn pinning(mut self, name: &str, ip: IpAddr) -> Net {
        self.pinned.push((name.to_ascii_lowercase(), ip));
        self
    }

    /// [`resolve`], with this gate's pinned names.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
        let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        if let Some((_, ip)) = self.pinned.iter().find(|(n, _)| *n == name) {
            return Ok(vec![SocketAddr::new(*ip, port)]);
        }
        resolve(host, port).await
    }

    /// The permission layer's decision for a connection to `host` on `port` (one `network`
    /// subject; an invalid host is denied whatever the rules say), for a plain-HTTP request
    /// its `method` (`None`: a `CONNECT` tunnel, whose method cannot be seen).
    pub fn decide(&self, host: &str, port: u16, method: Option<&str>) -> Decision {
        let mut input = serde_json::json!({ "host": host, "port": port });
        if let Some(method) = method {
            input["method"] = serde_json::Value::from(method);
        }
        self.policy.decide(NETWORK, &input)
    }

    /// `[permissions] default_action`, when the layer is on.
    pub fn default_action(&self) -> Option<Action> {
        self.policy.rules().map(|r| r.default_action())
    }

    /// [`Net::decide`] as a verdict: `Ok(subject)` when allowed, else the refusal naming the
    /// rule (or the default) and, for an ask, what would let it through.
    pub fn check(&self, host: &str, port: u16, method: Option<&str>) -> Result<String, Refusal> {
        let decision = self.decide(host, port, method);
        verdict(&decision, self.default_action())
    }
}

/// A decision as a verdict (see [`Net::check`]).
pub fn verdict(decision: &Decision, default: Option<Action>) -> Result<String, Refusal> {
    let subject = decision
        .subjects
        .first()
        .map(|s| s.subject.clone())
        .unwrap_or_default();
    let why = || {
        decision
            .subjects
            .iter()
            .filter(|s| s.action == decision.decision)
            .map(|s| s.for_model(default))
            .collect::<Vec<_>>()
            .join("; ")
    };
    match decision.decision {
        Action::Allow => Ok(subject),
        Action::Deny if decision.subjects.iter().any(|s| s.invalid) => {
            Err(Refusal::new("invalid-host", format!("refused: {}", why())))
        }
        Action::Deny => Err(Refusal::new(
            "blocked-by-rule",
            format!("denied: {}", why()),
        )),
        Action::Ask => Err(Refusal::new(
            "blocked-by-ask",
            format!(
                "not allowed without approval, and nobody can be asked: {}",
                why()
            ),
        )),
    }
}

/// Why `ip` is never connected to, if it is not: the ranges a call must not reach whatever
/// the rules say (the machine itself, the local network, cloud metadata).
pub fn blocked(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return blocked_v4(v4);
            }
            carried_v4(v6)
                .and_then(blocked_v4)
                .or_else(|| blocked_v6(v6))
        }
    }
}

/// The IPv4 address an IPv6 form carries: mapped (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::/96`) or
/// IPv4-compatible (`::a.b.c.d`, not `::1` or `::`).
fn carried_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0];
    let compatible = s[..6] == [0, 0, 0, 0, 0, 0] && !v6.is_loopback() && !v6.is_unspecified();
    (nat64 || compatible).then(|| {
        Ipv4Addr::new(
            (s[6] >> 8) as u8,
            (s[6] & 0xff) as u8,
            (s[7] >> 8) as u8,
            (s[7] & 0xff) as u8,
        )
    })
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address (this machine)")
    } else if ip.is_private() {
        Some("a private address (the local network)")
    } else if ip.is_link_local() {
        Some("a link-local address (where cloud metadata services answer)")
    } else if o[0] == 0 {
        Some("an address of this network (0.0.0.0/8)")
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some("a carrier-grade NAT address (100.64.0.0/10)")
    } else if o[0] == 192 && o[1] == 0 && o[2] == 0 {
        Some("an IETF protocol address (192.0.0.0/24)")
    } else if o[0] == 198 && (o[1] & 0xfe) == 18 {
        Some("a benchmarking address (198.18.0.0/15)")
    } else if ip.is_multicast() || ip.is_broadcast() || o[0] >= 240 {
        Some("a multicast, broadcast or reserved address")
    } else if ip.is_documentation() {
        Some("a documentation address")
    } else {
        None
    }
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some("a loopback address (this machine)")
    } else if ip.is_unspecified() {
        Some("the unspecified address")
    } else if (first & 0xfe00) == 0xfc00 {
        Some("a unique-local address (the local network)")
    } else if (first & 0xffc0) == 0xfe80 || (first & 0xffc0) == 0xfec0 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if first == 0x2001 && ip.segments()[1] == 0x0db8 {
        Some("a documentation address")
    } else {
        None
    }
}

/// The addresses of `host` a connection on `port` may use: resolved once (an IP literal as
/// itself), each checked against [`blocked`]. When any address of a name is blocked the whole
/// name is refused: a name that resolves to the local network is not a public host, whichever
/// address a client would have picked.
pub async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
    let host = Host::parse(host).map_err(|e| Refusal::new("invalid-host", e.0))?;
    let name = match host {
        Host::Ip(ip) => {
            if let Some(why) = blocked_here(ip, &own_addresses()) {
                return Err(Refusal::new(
                    "blocked-address",
                    format!("{ip} is {why}, which no call may reach"),
                ));
            }
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        Host::Name(name) => name,
    };
    // Debug builds only, and only for the names listed: see `testing::test_hosts`.
    if let Some((_, ip)) = crate::testing::test_hosts()
        .iter()
        .find(|(n, _)| *n == name)
    {
        return Ok(vec![SocketAddr::new(*ip, port)]);
    }
    let own = own_addresses();
    let found = tokio::time::timeout(
        RESOLVE_TIMEOUT,
        tokio::net::lookup_host((name.as_str(), port)),
    )
    .await
    .map_err(|_| {
        Refusal::new(
            "resolve-failed",
            format!(
                "resolving {name} took longer than {} s",
                RESOLVE_TIMEOUT.as_secs()
            ),
        )
    })?
    .map_err(|e| Refusal::new("resolve-failed", format!("cannot resolve {name}: {e}")))?;
    let mut addrs: Vec<SocketAddr> = Vec::new();
    for addr in found {
        if let Some(why) = blocked_here(addr.ip(), &own) {
            return Err(Refusal::new(
                "blocked-address",
                format!(
                    "{name} resolves to {}, {why}, which no call may reach",
                    addr.ip()
                ),
            ));
        }
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(Refusal::new(
            "resolve-failed",
            format!("{name} has no address"),
        ));
    }
    Ok(addrs)
}

/// [`blocked`], and `own` (this machine's addresses, [`own_addresses`]) whatever their range.
fn blocked_here(ip: IpAddr, own: &[IpAddr]) -> Option<&'static str> {
    // The IPv4 address an IPv6 form carries is the machine's own as much as the plain one is.
    let carried = match ip {
        IpAddr::V6(v6) => carried_v4(v6).map(IpAddr::V4),
        IpAddr::V4(_) => None,
    };
    blocked(ip).or_else(|| {
        (own.contains(&ip) || carried.is_some_and(|c| own.contains(&c)))
            .then_some("an address of this machine (one of its interfaces)")
    })
}

/// The addresses of this machine's interfaces (public ones included: a service listening on
/// `0.0.0.0` answers on them as on loopback), read afresh each time, since they change.
pub fn own_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut at = list;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list getifaddrs returned, alive until freeifaddrs; an
        // address is read as the struct its family says it is.
        unsafe {
            let addr = (*at).ifa_addr;
            if !addr.is_null() {
                match i32::from((*addr).sa_family) {
                    libc::AF_INET => {
                        let v4 = &*(addr as *const libc::sockaddr_in);
                        out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr))));
                    }
                    libc::AF_INET6 => {
                        let v6 = &*(addr as *const libc::sockaddr_in6);
                        out.push(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            at = (*at).ifa_next;
        }
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// Connects to the first of `addrs` that answers (each within [`CONNECT_TIMEOUT`]).
pub async fn connect(addrs: &[SocketAddr]) -> Result<tokio::net::TcpStream, Refusal> {
    let mut last = String::from("no address");
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = format!("{addr}: {e}"),
            Err(_) => last = format!("{addr}: no answer within {} s", CONNECT_TIMEOUT.as_secs()),
        }
    }
    Err(Refusal::new(
        "connect-failed",
        format!("cannot connect ({last})"),
    ))
}

/// The host (an IPv6 literal in brackets, as rules and subjects write it) and port of an
/// `http` or `https` URL: what `web_fetch`, a `url` MCP server and the proxy's plain requests
/// are decided on.
pub fn url_host_port(url: &url::Url) -> Result<(String, u16), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{url}: only http and https URLs are reached, not {}",
            url.scheme()
        ));
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        None => return Err(format!("{url} has no host")),
    };
    let port = url
        .port_or_known_default()
        .ok_or_else(|| format!("{url} has no port"))?;
    Ok((host, port))
}

/// The `network` subject of `host` and `port`, or why the host is refused.
pub fn subject(host: &str, port: u16) -> Result<String, Refusal> {
    rules::subject(host, port).map_err(|e| Refusal::new("invalid-host", e.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_and_metadata_addresses_are_blocked() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "::10.0.0.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(blocked(ip).is_some(), "{ip}");
        }
        for ip in ["1.1.1.1", "93.184.216.34", "2606:4700::1111"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(blocked(ip), None, "{ip}");
        }
    }

    #[tokio::test]
    async fn the_machines_own_addresses_are_refused_whatever_their_range() {
        // A public address on an interface of this machine is refused like loopback.
        let public: IpAddr = "8.8.4.4".parse().unwrap();
        assert_eq!(blocked(public), None);
        assert!(blocked_here(public, &[public]).is_some_and(|why| why.contains("this machine")));
        for form in [
            "::ffff:8.8.4.4",
            "::ffff:808:404",
            "64:ff9b::808:404",
            "::8.8.4.4",
        ] {
            let ip: IpAddr = form.parse().unwrap();
            assert!(blocked_here(ip, &[public]).is_some(), "{form}");
        }
        let own = own_addresses();
        assert!(own.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)), "{own:?}");
        for ip in own {
            let refused = resolve(&ip.to_string(), 80).await.unwrap_err();
            assert_eq!(refused.code, "blocked-address", "{ip}: {refused}");
        }
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused() {
        let refused = resolve("localhost", 80).await.unwrap_err();
        assert_eq!(refused.code, "blocked-address", "{refused}");
        let refused = resolve("127.0.0.1", 80).await.unwrap_err();
        assert_eq!(refused.code, "blocked-address");
        let refused = resolve("a\0.test", 80).await.unwrap_err();
        assert_eq!(refused.code, "invalid-host");
    }
}
