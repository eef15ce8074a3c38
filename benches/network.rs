//! What pod's proxy costs: requests to a local origin server made directly and through the
//! proxy (`[sandbox] network = "proxy"`), in the same process and interleaved in rounds, so the
//! ratios hold on a noisy machine.
//!
//! - latency: one small `GET` per connection (connect, request, read to EOF), direct vs as a
//!   plain-HTTP request through the proxy (which decides the host by the `network` rules,
//!   resolves it, connects and copies);
//! - throughput: a 100 MB body read directly vs through a `CONNECT` tunnel.
//!
//! The origin's name is pinned to 127.0.0.1 with `Net::pinning` (the pod binary never pins a
//! name, and its loopback block stays whole).
//!
//! `cargo bench --bench network`; `POD_BENCH_RUNS` rounds (default 5). Under `cargo test
//! --all-targets` (no `--bench` argument) it only checks that it starts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pod::network::{Net, Proxy};
use pod::permission::{Policy, RuleSpec, Rules};
use pod::protocol::Action;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SMALL_PER_ROUND: usize = 200;
const BIG: u64 = 100 * 1000 * 1000;

async fn origin() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let big = head.windows(4).any(|w| w == b"/big");
                if big {
                    let _ = s
                        .write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {BIG}\r\nConnection: close\r\n\r\n").as_bytes())
                        .await;
                    let chunk = vec![b'x'; 64 * 1024];
                    let mut left = BIG;
                    while left > 0 {
                        let n = left.min(chunk.len() as u64) as usize;
                        if s.write_all(&chunk[..n]).await.is_err() {
                            return;
                        }
                        left -= n as u64;
                    }
                } else {
                    let _ = s
                        .write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                        )
                        .await;
                }
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

/// Sends `request` on a fresh connection to `to` and reads to EOF; the bytes read.
async fn exchange(to: SocketAddr, request: &[u8], tunnel: Option<&[u8]>) -> u64 {
    let mut s = TcpStream::connect(to).await.unwrap();
    if let Some(connect) = tunnel {
        s.write_all(connect).await.unwrap();
        let mut reply = Vec::new();
        let mut byte = [0u8; 1];
        while !reply.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut byte).await.unwrap();
            reply.push(byte[0]);
        }
        assert!(
            reply.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&reply)
        );
    }
    s.write_all(request).await.unwrap();
    let mut total = 0u64;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n as u64,
        }
    }
    total
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let runs: usize = std::env::var("POD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let (runs, small) = if bench {
        (runs, SMALL_PER_ROUND)
    } else {
        (1, 5)
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let origin = origin().await;
        let rules = Rules::compile(Action::Deny, vec![RuleSpec::new("network", "bench.test:*", Action::Allow)])
        .unwrap();
        let policy = Arc::new(Policy::new(Some(rules), "/".into()));
        let net = Net::new(policy).pinning("bench.test", "127.0.0.1".parse().unwrap());
        let proxy = Proxy::start(Arc::new(net)).unwrap();
        let admission = proxy.admit("bench", None, None);
        let via: SocketAddr = ([127, 0, 0, 1], proxy.port()).into();
        let auth = admission.authorization().to_string();
        let port = origin.port();
        let direct_small = b"GET /small HTTP/1.1\r\nHost: bench.test\r\n\r\n".to_vec();
        let proxied_small = format!(
            "GET http://bench.test:{port}/small HTTP/1.1\r\nHost: bench.test\r\nProxy-Authorization: {auth}\r\n\r\n"
        )
        .into_bytes();
        let connect = format!(
            "CONNECT bench.test:{port} HTTP/1.1\r\nProxy-Authorization: {auth}\r\n\r\n"
        )
        .into_bytes();
        let big = format!("GET /big HTTP/1.1\r\nHost: bench.test:{port}\r\n\r\n").into_bytes();
        let (mut direct_lat, mut proxied_lat) = (Vec::new(), Vec::new());
        let (mut direct_tp, mut proxied_tp) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t = Instant::now();
            for _ in 0..small {
                exchange(origin, &direct_small, None).await;
            }
            direct_lat.push(t.elapsed() / small as u32);
            let t = Instant::now();
            for _ in 0..small {
                assert!(exchange(via, &proxied_small, None).await > 0);
            }
            proxied_lat.push(t.elapsed() / small as u32);
            if bench {
                let t = Instant::now();
                let n = exchange(origin, &big, None).await;
                direct_tp.push(n as f64 / t.elapsed().as_secs_f64() / 1e6);
                let t = Instant::now();
                let n = exchange(via, &big, Some(&connect)).await;
                assert!(n >= BIG, "{n}");
                proxied_tp.push(n as f64 / t.elapsed().as_secs_f64() / 1e6);
            }
        }
        let median = |v: &mut Vec<Duration>| {
            v.sort();
            v[v.len() / 2]
        };
        let medf = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let (d, p) = (median(&mut direct_lat), median(&mut proxied_lat));
        println!(
            "latency per request (median of {runs} rounds of {small}): direct {:.1} us, through the proxy {:.1} us, added {:.1} us ({:.2}x)",
            d.as_secs_f64() * 1e6,
            p.as_secs_f64() * 1e6,
            (p.as_secs_f64() - d.as_secs_f64()) * 1e6,
            p.as_secs_f64() / d.as_secs_f64()
        );
        if bench {
            let (d, p) = (medf(&mut direct_tp), medf(&mut proxied_tp));
            println!(
                "100 MB download (median of {runs}): direct {d:.0} MB/s, through a CONNECT tunnel {p:.0} MB/s ({:.2}x)",
                p / d
            );
        }
        let _ = admission.summary();
    });
}
