//! The network as a capability, through the real `pod serve`: `[sandbox] network = "proxy"`
//! with `network` rules, real clients (curl, python) in bash calls, and `web_fetch`, against a
//! local HTTP server that records every request it is sent. Each refusal is checked on the
//! server's side: it saw nothing.
//!
//! Test host names reach the local server through the debug-only test resolver
//! (`POD_TEST_HOSTS`, `testing::test_hosts`): only the names it lists resolve to 127.0.0.1;
//! any other name (`localhost`) is resolved as always and its loopback address stays blocked.
//! The proxy tests need Landlock ABI 4+ (Linux 6.7), as CI has.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::{Framing, PodProcess, Workspace};
use serde_json::{json, Value};

/// A local HTTP server: answers `/hello` with a marker, `/to-other` with a redirect to
/// `other.test`, `/to-self` with a redirect to `/hello`; records each request line.
pub(crate) struct Server {
    pub(crate) port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    /// The `Host` header of each request, in order.
    hosts: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub(crate) fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let hosts = Arc::new(Mutex::new(Vec::new()));
        let record_hosts = hosts.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let record = record.clone();
                let record_hosts = record_hosts.clone();
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && head.len() < 65536 {
                        match stream.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => break,
                        }
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let line = text.lines().next().unwrap_or("").to_string();
                    record.lock().unwrap().push(line.clone());
                    if let Some(host) = text.lines().find_map(|l| {
                        l.strip_prefix("Host: ")
                            .or_else(|| l.strip_prefix("host: "))
                    }) {
                        record_hosts.lock().unwrap().push(host.trim().to_string());
                    }
                    let path = line.split(' ').nth(1).unwrap_or("");
                    let reply = match path {
                        "/to-other" => format!(
                            "HTTP/1.1 302 Found\r\nLocation: http://other.test:{port}/hello\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        ),
                        "/to-self" => "HTTP/1.1 302 Found\r\nLocation: /hello\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
                        _ => {
                            let body = "<html><body><p>hello-from-the-server</p></body></html>";
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                                body.len()
                            )
                        }
                    };
                    let _ = stream.write_all(reply.as_bytes());
                });
            }
        });
        Server { port, seen, hosts }
    }

    pub(crate) fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

const HOSTS: &str = "allowed.test=127.0.0.1,other.test=127.0.0.1,\
                     allowed.test.evil.test=127.0.0.1,asked.test=127.0.0.1";

fn manifest(network: &str) -> String {
    format!(
        "[pod]\nname = \"network\"\n\n[tools]\nenabled = [\"bash\", \"web_fetch\"]\n\n\
         [permissions]\ndefault_action = \"deny\"\n\n\
         [[permissions.rule]]\ntool = \"bash\"\npattern = \"*\"\naction = \"allow\"\n\n\
         [[permissions.rule]]\ntool = \"network\"\npattern = \"allowed.test:*\"\naction = \"allow\"\n\n\
         [[permissions.rule]]\ntool = \"network\"\npattern = \"localhost:*\"\naction = \"allow\"\n\n\
         [[permissions.rule]]\ntool = \"network\"\npattern = \"asked.test:*\"\naction = \"ask\"\n\n\
         [sandbox]\nnetwork = \"{network}\"\n"
    )
}

fn start(network: &str) -> (Workspace, PodProcess, Value) {
    start_with(network, false)
}

fn start_with(network: &str, approval: bool) -> (Workspace, PodProcess, Value) {
    let ws = Workspace::with_manifest(&manifest(network));
    let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &[("POD_TEST_HOSTS", HOSTS)]);
    let init = pod.initialize(approval);
    (ws, pod, init)
}

/// One turn of `lines` (offline model: `!cmd` is a bash call, `@tool {json}` a call of tool);
/// each call's `toolResult`, in order.
fn run(pod: &mut PodProcess, lines: &[String]) -> Vec<Value> {
    let run = pod.call(
        "run",
        json!({"input": [{"type": "text", "text": lines.join("\n")}]}),
    );
    assert_eq!(run["stopReason"], "end_turn", "{run}");
    let turn = run["turnId"].as_str().unwrap_or_default().to_string();
    let results: Vec<Value> = pod
        .turn_events(&turn)
        .into_iter()
        .filter(|e| e["type"] == "toolResult")
        .collect();
    assert_eq!(results.len(), lines.len(), "{results:#?}");
    results
}

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

fn content(result: &Value) -> &str {
    result["content"].as_str().unwrap_or_default()
}

fn require_proxy(init: &Value) {
    assert_eq!(
        init["sandbox"]["network"], "proxy",
        "these tests need a kernel with Landlock ABI 4+ (Linux 6.7): {}",
        init["sandbox"]
    );
}

#[test]
fn an_allowed_host_is_reached_through_the_proxy_and_nothing_else_is() {
    let server = Server::start();
    let port = server.port;
    let (_ws, mut pod, init) = start("proxy");
    require_proxy(&init);
    let results = run(
        &mut pod,
        &[
            // Plain HTTP through the proxy, then a CONNECT tunnel (-p), as HTTPS goes.
            format!("!curl -sS -m 20 http://allowed.test:{port}/hello"),
            format!("!curl -sS -m 20 -p http://allowed.test:{port}/tunnel"),
        ],
    );
    for r in &results {
        assert!(
            content(r).contains("hello-from-the-server"),
            "{}",
            content(r)
        );
        assert!(
            content(r).contains(&format!("allowed.test:{port}: allowed")),
            "{}",
            content(r)
        );
    }
    // The calls ran side by side: the order the server saw them in is theirs.
    assert_eq!(
        sorted(server.seen()),
        vec![
            "GET /hello HTTP/1.1".to_string(),
            "GET /tunnel HTTP/1.1".to_string()
        ]
    );

    // A host no rule allows, a name that only starts like the allowed one, and going around
    // the proxy: the server sees none of them.
    let results = run(
        &mut pod,
        &[
            format!("!curl -sS -m 20 http://other.test:{port}/denied"),
            format!("!curl -sS -m 20 -p http://allowed.test.evil.test:{port}/evil"),
            format!("!curl -sS -m 20 --noproxy '*' http://127.0.0.1:{port}/direct"),
        ],
    );
    let text: Vec<&str> = results.iter().map(content).collect();
    assert!(
        text[0].contains("x-proxy-error") || text[0].contains("denied"),
        "{}",
        text[0]
    );
    assert!(
        text[0].contains(&format!("other.test:{port}: denied")),
        "{}",
        text[0]
    );
    assert!(
        text[1].contains(&format!("allowed.test.evil.test:{port}: denied")),
        "{}",
        text[1]
    );
    assert_eq!(results[2]["isError"], true, "{}", text[2]);
    assert!(
        text[2].contains("network connection blocked by the sandbox")
            || text[2].contains("Permission denied")
            || text[2].contains("Failed to connect"),
        "{}",
        text[2]
    );
    assert_eq!(server.seen().len(), 2, "{:?}", server.seen());
}

#[test]
fn a_host_with_a_nul_and_a_name_resolving_to_loopback_are_refused() {
    let server = Server::start();
    let port = server.port;
    let (ws, mut pod, init) = start("proxy");
    require_proxy(&init);
    // A raw client: the proxy's address and credentials from HTTP_PROXY, a CONNECT whose host
    // holds a NUL before the allowed name.
    std::fs::write(
        ws.path("nul.py"),
        format!(
            r#"import base64, os, socket, urllib.parse
u = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
auth = base64.b64encode(f"{{u.username}}:{{u.password}}".encode()).decode()
s = socket.create_connection((u.hostname, u.port), 10)
s.sendall(b"CONNECT attacker.example\x00.allowed.test:{port} HTTP/1.1\r\nProxy-Authorization: Basic " + auth.encode() + b"\r\n\r\n")
print("reply:", s.recv(200).split(b"\r\n")[0].decode())
s2 = socket.create_connection((u.hostname, u.port), 10)
s2.sendall(b"CONNECT allowed.test:{port} HTTP/1.1\r\n\r\n")
print("no-credentials:", s2.recv(200).split(b"\r\n")[0].decode())
"#
        ),
    )
    .unwrap();
    let results = run(
        &mut pod,
        &[
            "!python3 nul.py".to_string(),
            // A rule allows localhost, but it resolves to loopback: never reached.
            format!("!curl -sS -m 20 http://localhost:{port}/loopback"),
        ],
    );
    let text: Vec<&str> = results.iter().map(content).collect();
    assert!(text[0].contains("reply: HTTP/1.1 400"), "{}", text[0]);
    assert!(
        text[0].contains("no-credentials: HTTP/1.1 407"),
        "{}",
        text[0]
    );
    assert!(text[1].contains("blocked-address"), "{}", text[1]);
    assert!(server.seen().is_empty(), "{:?}", server.seen());
}

#[test]
fn web_fetch_follows_the_rules_and_decides_each_redirect_again() {
    let server = Server::start();
    let port = server.port;
    // web_fetch runs in the pod's process: no proxy needed, the rules are the same.
    let (_ws, mut pod, _init) = start("allow");
    let fetch =
        |path: &str, host: &str| format!("@web_fetch {{\"url\": \"http://{host}:{port}{path}\"}}");
    let results = run(
        &mut pod,
        &[
            fetch("/hello", "allowed.test"),
            fetch("/to-self", "allowed.test"),
            fetch("/to-other", "allowed.test"),
            fetch("/hello", "other.test"),
            fetch("/hello", "localhost"),
            "@web_fetch {\"url\": \"http://attacker.example%00.allowed.test/\"}".to_string(),
        ],
    );
    let text: Vec<&str> = results.iter().map(content).collect();
    assert_eq!(results[0]["isError"], false, "{}", text[0]);
    // HTML comes back as text.
    assert!(
        text[0].contains("hello-from-the-server") && !text[0].contains("<p>"),
        "{}",
        text[0]
    );
    assert!(
        text[1].contains("redirect") && text[1].contains("hello-from-the-server"),
        "{}",
        text[1]
    );
    assert_eq!(results[2]["isError"], true);
    assert!(
        text[2].contains(&format!("http://other.test:{port}/hello was not followed")),
        "{}",
        text[2]
    );
    assert!(text[3].contains("permission denied"), "{}", text[3]);
    assert!(text[4].contains("blocked-address"), "{}", text[4]);
    assert!(text[5].contains("permission denied"), "{}", text[5]);
    assert_eq!(
        sorted(server.seen()),
        vec![
            "GET /hello HTTP/1.1".to_string(),
            "GET /hello HTTP/1.1".to_string(),
            "GET /to-other HTTP/1.1".to_string(),
            "GET /to-self HTTP/1.1".to_string(),
        ]
    );
}

#[test]
fn a_host_that_asks_goes_through_the_approval_round_trip_of_its_call() {
    let server = Server::start();
    let port = server.port;
    let (_ws, mut pod, init) = start_with("proxy", true);
    require_proxy(&init);
    for (decision, reached) in [("deny", false), ("allow_once", true)] {
        let id = pod.start(
            "run",
            json!({"input": [{"type": "text", "text": format!("!curl -sS -m 60 http://asked.test:{port}/{decision}")}]}),
        );
        let request = pod.wait_event_type("permissionRequest");
        // The request is the bash call's, and names the host it asks about.
        assert_eq!(request["tool"], "bash", "{request}");
        assert!(
            request["subjects"].as_array().is_some_and(|s| s
                .iter()
                .any(|s| s["tool"] == "network" && s["subject"] == format!("asked.test:{port}"))),
            "{request}"
        );
        assert!(server.seen().is_empty() || reached, "{:?}", server.seen());
        pod.call(
            "permissionReply",
            json!({"requestId": request["requestId"], "decision": decision}),
        );
        let done = pod.response(&json!(id));
        let turn = done["result"]["turnId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let result = pod
            .turn_events(&turn)
            .into_iter()
            .find(|e| e["type"] == "toolResult")
            .expect("a result");
        assert_eq!(request["callId"], result["callId"]);
        assert_eq!(
            content(&result).contains("hello-from-the-server"),
            reached,
            "{}",
            content(&result)
        );
        if !reached {
            assert!(
                content(&result).contains("blocked-by-approval"),
                "{}",
                content(&result)
            );
        }
    }
    assert_eq!(server.seen(), vec!["GET /allow_once HTTP/1.1".to_string()]);
    // Each connection's item says the person settled it.
    let history = pod.call("history", json!({}));
    let settled: Vec<(Value, Value, Value)> = history["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "networkConnection")
        .map(|i| (i["decision"].clone(), i["by"].clone(), i["refused"].clone()))
        .collect();
    assert_eq!(
        settled,
        vec![
            (json!("deny"), json!("client"), json!("blocked-by-approval")),
            (json!("allow"), json!("client"), Value::Null),
        ],
        "{history:#}"
    );
}

/// `pod explain --tool network` decides a host as the proxy does, and a wildcard over a public
/// suffix is refused when the rules are loaded.
#[test]
fn explain_decides_hosts_and_public_suffix_wildcards_are_refused() {
    let ws = Workspace::with_manifest(&manifest("proxy"));
    let explain = |input: Value| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_pod"))
            .arg("explain")
            .arg(ws.manifest())
            .args(["--trust", "--tool", "network", "--json", "--input"])
            .arg(input.to_string())
            .env("POD_CONFIG", "")
            .env("XDG_STATE_HOME", ws.state_home())
            .output()
            .expect("pod explain");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).expect("explain JSON")
    };
    let allowed = explain(json!({"host": "Allowed.Test", "port": 8080}));
    assert_eq!(allowed["decision"], "allow", "{allowed}");
    assert_eq!(allowed["subjects"][0]["subject"], "allowed.test:8080");
    for host in [
        "allowed.test.evil.test",
        "attacker.example\u{0}.allowed.test",
    ] {
        let denied = explain(json!({"host": host, "port": 8080}));
        assert_eq!(denied["decision"], "deny", "{denied}");
    }
    let asked = explain(json!({"host": "asked.test", "port": 1}));
    assert_eq!(asked["decision"], "ask", "{asked}");

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pod.toml");
    for pattern in ["*.com", "*.co.uk", "*crates.io"] {
        std::fs::write(
            &path,
            format!("[permissions]\ndefault_action = \"deny\"\n\n[[permissions.rule]]\ntool = \"network\"\npattern = \"{pattern}\"\naction = \"allow\"\n"),
        )
        .expect("write");
        let err = pod::manifest::Manifest::load(&path).expect_err("must not load");
        assert!(err.to_string().contains("pattern"), "{pattern}: {err}");
    }
}

/// An untrusted project's file cannot open the network: its `web_fetch` and its network allow
/// rules are ignored, and said to be.
#[test]
fn an_untrusted_project_cannot_enable_web_fetch_or_allow_hosts() {
    let ws = Workspace::with_manifest(&manifest("proxy"));
    let mut pod = PodProcess::spawn_untrusted(&ws, Framing::Lines, &[], &[("POD_CONFIG", "")]);
    let init = pod.initialize(false);
    assert_eq!(init["workspaceTrust"]["status"], "untrusted", "{init}");
    assert!(!common::has_tool(&init, "web_fetch"), "{init}");
    let ignored: Vec<String> = init["workspaceTrust"]["ignored"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["what"].as_str().map(String::from))
        .collect();
    for expected in [
        "enables web_fetch, which sends requests from pod's own process",
        "allows network \"allowed.test:*\" (rule 2)",
    ] {
        assert!(
            ignored.iter().any(|w| w == expected),
            "{expected}: {ignored:?}"
        );
    }
}

/// Under `network = "proxy"` in namespaces, the proxy is the only way out: a call's UDP
/// datagram to the machine's loopback (where a test socket waits), and to any other address,
/// goes nowhere, and no name resolves inside. Under the Landlock fall-back the datagram
/// arrives (Landlock holds TCP only).
#[test]
fn under_the_proxy_udp_and_dns_do_not_leave_the_call() {
    let ws = Workspace::with_manifest(&format!(
        "{}\n[[permissions.rule]]\ntool = \"file_write\"\npattern = \"/dev/udp/**\"\n\
         action = \"allow\"\n",
        manifest("proxy")
    ));
    let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &[("POD_TEST_HOSTS", HOSTS)]);
    let init = pod.initialize(false);
    require_proxy(&init);
    assert_eq!(init["sandbox"]["kind"], "namespaces", "{}", init["sandbox"]);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let results = run(
        &mut pod,
        &[
            format!("!echo secret-one > /dev/udp/127.0.0.1/{port} && echo sent-one"),
            "!echo secret-two > /dev/udp/1.1.1.1/53 && echo reached".to_string(),
            "!getent hosts example.com || echo no-name-resolves".to_string(),
        ],
    );
    let text: Vec<&str> = results.iter().map(content).collect();
    // The first was sent, inside: to the call's own loopback.
    assert!(text[0].contains("sent-one"), "{}", text[0]);
    assert!(!text[1].contains("reached"), "{}", text[1]);
    assert!(
        text[1].contains("unreachable") || text[1].contains("blocked"),
        "{}",
        text[1]
    );
    assert!(text[2].contains("no-name-resolves"), "{}", text[2]);
    // Delivery on loopback happens within the sender's write: had the datagram left the call,
    // it would be queued on the socket by now.
    socket.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    match socket.recv_from(&mut buf) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a datagram left the call: {other:?}"),
    }
}

/// `pod why SESSION CALL`, as a person runs it in the workspace (trusting nothing new: it
/// only reads the session log).
fn why(ws: &Workspace, session: &str, call: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pod"))
        .args(["why", session, call])
        .env("POD_CONFIG", "")
        .env("POD_MANAGED_DIR", common::NO_MANAGED_DIR)
        .env("XDG_STATE_HOME", ws.state_home())
        .current_dir(ws.dir.path())
        .output()
        .expect("pod why");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Each connection a call's processes made through the proxy is a `networkConnection` item of
/// the session log, with its subject, decision, rule and bytes, and `pod why` shows it.
#[test]
fn each_proxied_connection_is_an_item_of_the_session_log() {
    let server = Server::start();
    let port = server.port;
    let ws = Workspace::with_manifest(&manifest("proxy"));
    // The user's configuration keeps a decision log.
    let log = ws.state_home().join("audit/decisions.jsonl");
    let user = ws.state_home().join("user.toml");
    std::fs::create_dir_all(ws.state_home()).expect("state home");
    std::fs::write(&user, format!("[audit]\npath = \"{}\"\n", log.display())).expect("user");
    let user_text = user.display().to_string();
    let mut pod = PodProcess::spawn_env(
        &ws,
        Framing::Lines,
        &[],
        &[
            ("POD_TEST_HOSTS", HOSTS),
            ("POD_CONFIG", user_text.as_str()),
        ],
    );
    let init = pod.initialize(false);
    require_proxy(&init);
    let results = run(
        &mut pod,
        &[format!(
            "!curl -sS -m 20 http://allowed.test:{port}/hello; \
             curl -sS -m 20 -p http://other.test:{port}/denied; echo done"
        )],
    );
    let call = results[0]["callId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(content(&results[0]).contains("hello-from-the-server"));
    assert_eq!(server.seen(), vec!["GET /hello HTTP/1.1".to_string()]);
    let history = pod.call("history", json!({}));
    let items: Vec<&Value> = history["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "networkConnection" && i["callId"] == call.as_str())
        .collect();
    assert_eq!(items.len(), 2, "{history:#}");
    let allowed = items
        .iter()
        .find(|i| i["host"] == format!("allowed.test:{port}"))
        .expect("the allowed connection");
    assert_eq!(allowed["port"], port, "{allowed}");
    assert_eq!(allowed["method"], "GET", "{allowed}");
    assert_eq!(allowed["decision"], "allow", "{allowed}");
    assert_eq!(allowed["by"], "rule", "{allowed}");
    assert_eq!(allowed["rule"]["pattern"], "allowed.test:*", "{allowed}");
    assert!(allowed["rule"]["line"].as_u64().is_some(), "{allowed}");
    assert!(allowed.get("refused").is_none(), "{allowed}");
    assert!(allowed["bytesUp"].as_u64().unwrap_or(0) > 0, "{allowed}");
    assert!(allowed["bytesDown"].as_u64().unwrap_or(0) > 0, "{allowed}");
    let denied = items
        .iter()
        .find(|i| i["host"] == format!("other.test:{port}"))
        .expect("the denied connection");
    // A tunnel: no method is seen.
    assert!(denied.get("method").is_none(), "{denied}");
    assert_eq!(denied["decision"], "deny", "{denied}");
    assert_eq!(denied["by"], "default", "{denied}");
    assert_eq!(denied["refused"], "blocked-by-rule", "{denied}");
    assert_eq!(denied["bytesUp"], 0, "{denied}");
    assert_eq!(denied["bytesDown"], 0, "{denied}");
    // Recorded before the call's result.
    let position = |want: &dyn Fn(&Value) -> bool| {
        history["items"]
            .as_array()
            .and_then(|a| a.iter().position(want))
            .expect("an item")
    };
    let result_at = position(&|i| i["type"] == "toolResult" && i["callId"] == call.as_str());
    let connection_at = position(&|i| i["type"] == "networkConnection");
    assert!(connection_at < result_at, "{history:#}");

    let session = init["session"]["id"].as_str().expect("session id");
    // The decision log has the call's decision, then one line per connection with its rule.
    let written = common::read(&log);
    let network: Vec<Value> = written
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|l| l["tool"] == "network" && l["call"] == call.as_str())
        .collect();
    assert_eq!(network.len(), 2, "{written}");
    let line = |host: &str| {
        network
            .iter()
            .find(|l| l["subjects"][0]["subject"] == format!("{host}:{port}"))
            .unwrap_or_else(|| panic!("{host}: {written}"))
    };
    let allowed = line("allowed.test");
    assert_eq!(
        (&allowed["decision"], &allowed["by"]),
        (&json!("allow"), &json!("rule"))
    );
    assert_eq!(
        allowed["subjects"][0]["by"],
        format!("{}:15", ws.manifest().display()),
        "{written}"
    );
    let denied = line("other.test");
    assert_eq!(
        (&denied["decision"], &denied["by"]),
        (&json!("deny"), &json!("default"))
    );
    assert_eq!(denied["subjects"][0]["by"], "default", "{written}");

    let explained = why(&ws, session, &call);
    assert!(
        explained.contains(&format!(
            "network GET `allowed.test:{port}`: allow by rule 2"
        )),
        "{explained}"
    );
    assert!(
        explained.contains(&format!("network `other.test:{port}`: deny by default"))
            && explained.contains("refused (blocked-by-rule)"),
        "{explained}"
    );
}

/// With no `[permissions]` section the layer is off: a proxied connection goes through, and
/// its `networkConnection` item says so (`by: "disabled"`, no rule), as `pod why` does.
#[test]
fn with_the_layer_off_a_proxied_connection_is_recorded_as_disabled() {
    let server = Server::start();
    let port = server.port;
    let ws = Workspace::with_manifest(
        "[pod]\nname = \"off\"\n\n[tools]\nenabled = [\"bash\"]\n\n\
         [sandbox]\nnetwork = \"proxy\"\n",
    );
    let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &[("POD_TEST_HOSTS", HOSTS)]);
    let init = pod.initialize(false);
    require_proxy(&init);
    let results = run(
        &mut pod,
        &[format!("!curl -sS -m 20 http://allowed.test:{port}/hello")],
    );
    assert!(
        content(&results[0]).contains("hello-from-the-server"),
        "{}",
        results[0]
    );
    let history = pod.call("history", json!({}));
    let items: Vec<&Value> = history["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "networkConnection")
        .collect();
    assert_eq!(items.len(), 1, "{history:#}");
    assert_eq!(items[0]["decision"], "allow", "{}", items[0]);
    assert_eq!(items[0]["by"], "disabled", "{}", items[0]);
    assert!(items[0].get("rule").is_none(), "{}", items[0]);
    // The call itself records no decision: the layer had nothing to say.
    assert!(
        !history["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|i| i["type"] == "permissionDecision"),
        "{history:#}"
    );
}

/// A network rule with `methods = ["GET"]`: a GET through the proxy reaches the server; a POST
/// and a CONNECT tunnel to the same host are refused by the default, the result saying which
/// rule passed them over and why; `pod explain` says the same; a method no rule can name,
/// and `methods` on another tool's rule, are load errors naming the line and the field.
#[test]
fn a_rule_with_methods_lets_only_those_plain_http_requests_through() {
    let server = Server::start();
    let port = server.port;
    let text = "[pod]\nname = \"methods\"\n\n[tools]\nenabled = [\"bash\"]\n\n\
                [permissions]\ndefault_action = \"deny\"\n\n\
                [[permissions.rule]]\ntool = \"bash\"\npattern = \"*\"\naction = \"allow\"\n\n\
                [[permissions.rule]]\ntool = \"network\"\npattern = \"allowed.test:*\"\n\
                action = \"allow\"\nmethods = [\"GET\", \"HEAD\"]\n\n\
                [sandbox]\nnetwork = \"proxy\"\n";
    let ws = Workspace::with_manifest(text);
    let mut pod = PodProcess::spawn_env(&ws, Framing::Lines, &[], &[("POD_TEST_HOSTS", HOSTS)]);
    let init = pod.initialize(false);
    require_proxy(&init);
    let results = run(
        &mut pod,
        &[
            format!("!curl -sS -m 20 http://allowed.test:{port}/get"),
            format!("!curl -sS -m 20 -X POST -d data http://allowed.test:{port}/post"),
            format!("!curl -sS -m 20 -p http://allowed.test:{port}/tunnel"),
        ],
    );
    let text: Vec<&str> = results.iter().map(content).collect();
    assert!(text[0].contains("hello-from-the-server"), "{}", text[0]);
    assert!(
        text[0].contains(&format!("GET allowed.test:{port}: allowed")),
        "{}",
        text[0]
    );
    assert!(
        text[1].contains(&format!("POST allowed.test:{port}: denied"))
            && text[1].contains("decides only GET, HEAD requests over plain http://, not POST")
            && text[1].contains("blocked-by-rule"),
        "{}",
        text[1]
    );
    assert!(
        text[2].contains(&format!("allowed.test:{port}: denied"))
            && text[2].contains("CONNECT tunnel (HTTPS), whose requests are inside TLS"),
        "{}",
        text[2]
    );
    // The server saw the GET only.
    assert_eq!(server.seen(), vec!["GET /get HTTP/1.1".to_string()]);

    let explain = |input: Value| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_pod"))
            .arg("explain")
            .arg(ws.manifest())
            .args(["--trust", "--tool", "network", "--input"])
            .arg(input.to_string())
            .env("POD_CONFIG", "")
            .env("POD_MANAGED_DIR", common::NO_MANAGED_DIR)
            .env("XDG_STATE_HOME", ws.state_home())
            .output()
            .expect("pod explain");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let get = explain(json!({"host": "allowed.test", "port": 8080, "method": "GET"}));
    assert!(get.contains("allow"), "{get}");
    let post = explain(json!({"host": "allowed.test", "port": 8080, "method": "POST"}));
    assert!(post.contains("deny") && post.contains("not POST"), "{post}");

    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pod.toml");
    for (rule, says) in [
        (
            "tool = \"network\"\npattern = \"a.test\"\naction = \"allow\"\nmethods = [\"GET\", \"FETCH\"]\n",
            "`FETCH` is not an HTTP method",
        ),
        (
            "tool = \"bash\"\npattern = \"*\"\naction = \"allow\"\nmethods = [\"GET\"]\n",
            "only a `tool = \"network\"` rule",
        ),
    ] {
        std::fs::write(
            &path,
            format!("[permissions]\ndefault_action = \"deny\"\n\n[[permissions.rule]]\n{rule}"),
        )
        .expect("write");
        let err = pod::manifest::Manifest::load(&path)
            .expect_err("must not load")
            .to_string();
        assert!(
            err.contains("pod.toml:8") && err.contains("permissions.rule[1].methods") && err.contains(says),
            "{err}"
        );
    }
}

/// The server is told the host the rules decided, not the `Host` header the call wrote (a
/// virtual host behind an allowed address); and under namespaces the proxy listens only inside
/// the calls' network namespace: from the machine's own loopback its port is closed.
#[test]
fn the_proxy_sends_the_decided_host_and_is_not_on_the_machines_loopback() {
    let server = Server::start();
    let port = server.port;
    let (_ws, mut pod, init) = start("proxy");
    require_proxy(&init);
    assert_eq!(init["sandbox"]["kind"], "namespaces", "{}", init["sandbox"]);
    let results = run(
        &mut pod,
        &[
            format!(
                "!curl -sS -m 20 -H 'Host: internal-admin.corp' http://allowed.test:{port}/hello"
            ),
            "!printenv HTTP_PROXY".to_string(),
        ],
    );
    let fetched = content(&results[0]);
    assert!(fetched.contains("hello-from-the-server"), "{fetched}");
    assert_eq!(
        server.hosts.lock().unwrap().clone(),
        vec![format!("allowed.test:{port}")]
    );
    let url = content(&results[1])
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let proxy_port: u16 = url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no port in {url:?}"));
    let reached = std::net::TcpStream::connect(("127.0.0.1", proxy_port));
    assert!(
        reached.is_err(),
        "the proxy answers on the machine's loopback: {url}"
    );
}

/// Real clients other than curl find the proxy from the call's environment alone: `git`'s smart
/// HTTP and `pip` reach an allowed host through it (the server sees their requests), and a host
/// no rule allows is refused to `git` too (the server sees nothing of it).
#[test]
fn git_and_pip_go_through_the_proxy_by_the_same_rules() {
    for tool in ["git", "pip3"] {
        let found = std::process::Command::new(tool).arg("--version").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "this test needs {tool} (.ci/run installs git and python3-pip)"
        );
    }
    let server = Server::start();
    let port = server.port;
    let (_ws, mut pod, init) = start("proxy");
    require_proxy(&init);
    let results = run(
        &mut pod,
        &[
            format!("!git ls-remote http://allowed.test:{port}/repo.git"),
            format!(
                "!pip3 download --no-cache-dir --no-deps --disable-pip-version-check -d dl \
                 --trusted-host allowed.test --index-url http://allowed.test:{port}/simple/ somepkg"
            ),
            format!("!git ls-remote http://other.test:{port}/denied.git"),
        ],
    );
    let seen = server.seen();
    assert!(
        seen.iter()
            .any(|l| l.starts_with("GET /repo.git/info/refs?service=git-upload-pack ")),
        "{seen:?} {}",
        content(&results[0])
    );
    assert!(
        seen.iter().any(|l| l.starts_with("GET /simple/somepkg/ ")),
        "{seen:?} {}",
        content(&results[1])
    );
    assert!(!seen.iter().any(|l| l.contains("denied.git")), "{seen:?}");
    assert!(
        content(&results[2]).contains(&format!("other.test:{port}: denied")),
        "{}",
        content(&results[2])
    );
}

/// SOCKS5 on the proxy's port (`ALL_PROXY=socks5h://…`): an allowed host is tunnelled, a host
/// no rule allows is refused (reply 2) and the server sees nothing of it; a name with a NUL
/// before the allowed one (the `endsWith` bypass of another agent's SOCKS filter) is refused;
/// wrong credentials are refused at authentication.
#[test]
fn socks5_is_decided_by_the_same_rules() {
    let server = Server::start();
    let port = server.port;
    let (ws, mut pod, init) = start("proxy");
    require_proxy(&init);
    std::fs::write(
        ws.path("socks.py"),
        format!(
            r#"import os, socket, struct, urllib.parse
u = urllib.parse.urlsplit(os.environ["ALL_PROXY"])
assert u.scheme == "socks5h", u.scheme
def attempt(name, user, password):
    s = socket.create_connection((u.hostname, u.port), 10)
    s.sendall(b"\x05\x01\x02")
    assert s.recv(2) == b"\x05\x02"
    s.sendall(bytes([1, len(user)]) + user + bytes([len(password)]) + password)
    if s.recv(2) != b"\x01\x00":
        return "auth refused"
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack(">H", {port}))
    reply = s.recv(10)
    return "reply %d" % reply[1]
user, password = u.username.encode(), u.password.encode()
print("nul:", attempt(b"attacker.example\x00.allowed.test", user, password))
print("denied:", attempt(b"other.test", user, password))
print("wrong:", attempt(b"allowed.test", user, b"not-the-token"))
"#
        ),
    )
    .unwrap();
    let results = run(
        &mut pod,
        &[
            format!("!curl -sS -m 20 -x \"$ALL_PROXY\" http://allowed.test:{port}/via-socks"),
            "!python3 socks.py".to_string(),
        ],
    );
    let text: Vec<&str> = results.iter().map(content).collect();
    assert!(text[0].contains("hello-from-the-server"), "{}", text[0]);
    assert!(text[1].contains("nul: reply 2"), "{}", text[1]);
    assert!(text[1].contains("denied: reply 2"), "{}", text[1]);
    assert!(text[1].contains("wrong: auth refused"), "{}", text[1]);
    assert!(
        text[1].contains(&format!("other.test:{port}: denied")),
        "{}",
        text[1]
    );
    assert_eq!(server.seen(), vec!["GET /via-socks HTTP/1.1".to_string()]);
}
