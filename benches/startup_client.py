#!/usr/bin/env python3
"""Start-up of `pod serve` as an outside client sees it (docs/performance.md, section 4).

    python3 benches/startup_client.py [--runs N] [--rounds R] POD [POD ...]

For each binary (and the floor: `head -n1`, which answers the same line at once), R rounds of N
starts, the binaries interleaved round by round so that a change in the machine's load hits them
alike. One start: spawn with pipes, write `initialize`, read the answer line (**start-up**); then
close stdin and wait for the exit (**exit**: the pod's wind-down after EOF). Prints the median,
p10 and p90 of each, over every round. Standard library only; 5 warm-up starts per binary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

FLOOR = "floor"


def one(argv: list[str], env: dict[str, str], cwd: str, request: bytes, answer: bytes) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request)
    proc.stdin.flush()
    line = proc.stdout.readline()
    t1 = time.perf_counter()
    proc.stdin.close()
    proc.wait()
    t2 = time.perf_counter()
    if answer not in line:
        raise SystemExit(f"{argv[0]}: unexpected answer {line[:200]!r}")
    return (t1 - t0) * 1000, (t2 - t1) * 1000


def summary(values: list[float]) -> str:
    v = sorted(values)
    at = lambda q: v[min(len(v) - 1, int(q * len(v)))]
    return f"median {statistics.median(v):6.2f} ms (p10 {at(0.1):.2f}, p90 {at(0.9):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="starts per binary per round (50)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds (6)")
    parser.add_argument("pods", nargs="+", help="pod binaries to compare")
    args = parser.parse_args()
    workspace = tempfile.mkdtemp(prefix="pod-startup-")
    env = dict(os.environ, XDG_STATE_HOME=tempfile.mkdtemp(prefix="pod-startup-state-"))
    manifest = os.path.join(workspace, "pod.toml")
    with open(manifest, "w") as f:
        f.write(
            f'[pod]\nname = "startup"\nworkspace = {json.dumps(workspace)}\n\n[model]\nprovider = "offline"\n\n'
            '[permissions]\ndefault_action = "ask"\n'
        )
    request = (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "capabilities": {"approval": {}}}})
        + "\n"
    ).encode()
    commands = {FLOOR: (["head", "-n1"], b"initialize")}
    for pod in args.pods:
        commands[pod] = ([os.path.abspath(pod), "serve", "--manifest", manifest], b'"result"')
    results: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in commands}
    for name, (argv, answer) in commands.items():
        for _ in range(5):
            one(argv, env, workspace, request, answer)
    for _ in range(args.rounds):
        for name, (argv, answer) in commands.items():
            for _ in range(args.runs):
                start, exit_ = one(argv, env, workspace, request, answer)
                results[name][0].append(start)
                results[name][1].append(exit_)
    print(f"{args.rounds} rounds x {args.runs} starts; load average {os.getloadavg()[0]:.1f}")
    for name, (starts, exits) in results.items():
        print(f"{name}\n  start-up to initialize: {summary(starts)}\n  EOF to exit:            {summary(exits)}")


if __name__ == "__main__":
    main()
