"""The conformance kit's mutation score: plants each fault of plant.py in front of a real pod and
checks that the kit catches it. Both sections: pod protocol v1 faults in front of `pod serve`,
ACP faults in front of `pod acp` (`pod conformance --protocol acp`).

    python3 tests/conformance/mutants/run.py [--pod target/debug/pod] [--jobs 4] [--fault NAME]

1. Every requirement of the kit must be the target of at least one fault (a requirement no fault
   can fail proves nothing), and every target must be a requirement.
2. Control: the whole kit, in both framings and with --strict, passes through the transparent
   proxy (fault `none`), so what the faults change is the only difference; so does the ACP
   section in front of `pod acp`.
3. Each fault runs against the requirements it targets, in the framings it shows in: it is caught
   when `pod conformance` exits with the fault's status (1, or 3 for a pod that cannot start) in
   every framing, with a failed target requirement (or the planted stderr text quoted).

Prints one line per fault and `mutation score: caught/planted`; exits 1 when a fault survives,
the control fails or a requirement has no fault. Run from the repository root after
`cargo build`. Stdlib only.
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KIT = os.path.dirname(HERE)
PLANT = os.path.join(HERE, "plant.py")
FAULT_EXPECT_MS = 2000


PROTOCOLS = ["pod", "acp"]


def conformance(pod, args):
    """Runs `pod conformance --kit KIT --json ARGS`; (exit status, report or None, stderr)."""
    run = subprocess.run(
        [pod, "conformance", "--kit", KIT, "--json"] + args,
        capture_output=True,
        text=True,
    )
    try:
        report = json.loads(run.stdout)
    except ValueError:
        report = None
    return run.returncode, report, run.stderr


def pod_cmd(pod, fault, protocol):
    """The real pod (`pod serve` for the pod protocol, `pod acp` for ACP) behind the proxy."""
    serve = "serve --trust --manifest {manifest}" if protocol == "pod" else "acp"
    return "python3 %s %s %s %s" % (
        shlex.quote(PLANT),
        shlex.quote(fault),
        shlex.quote(pod),
        serve,
    )


def framings(spec):
    return ["ndjson", "headers"] if spec["framing"] == "both" else [spec["framing"]]


def try_fault(pod, name, spec):
    """(caught, one line saying how)."""
    notes = []
    for framing in framings(spec):
        args = ["--strict", "--framing", framing, "--protocol", spec["protocol"]]
        args += ["--pod-cmd", pod_cmd(pod, name, spec["protocol"])]
        # A planted fault mostly shows as an answer that never comes: wait less than the
        # default 5 s (the real pod answers in milliseconds; the control run keeps 5 s).
        args += ["--expect-timeout-ms", str(FAULT_EXPECT_MS)]
        for target in spec["targets"]:
            args += ["--filter", target]
        code, report, stderr = conformance(pod, args)
        if code != spec["exit"] or report is None:
            return False, "[%s] exit %s, expected %s %s" % (
                framing,
                code,
                spec["exit"],
                stderr.strip()[:200],
            )
        if spec["stderr"] is not None:
            quoted = " ".join((report.get("cannotStart") or {}).get("stderr", []))
            if spec["stderr"] not in quoted:
                return False, "[%s] the report does not quote the pod's stderr" % framing
            notes.append("[%s] cannot start: %s" % (framing, report["cannotStart"]["status"]))
            continue
        failed = [r for r in report["results"] if r["status"] == "fail"]
        if not failed:
            return False, "[%s] exit %s but no requirement failed" % (framing, code)
        first = failed[0]
        notes.append("[%s] %s: %s" % (framing, first["id"], (first["reason"] or "")[:110]))
    return True, "; ".join(notes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pod", default="target/debug/pod")
    # Fault runs mostly wait (for answers that do not come), so more jobs than cores pay off.
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--fault", action="append", help="only these faults (no control run)")
    args = parser.parse_args()
    pod = os.path.abspath(args.pod)
    started = time.monotonic()

    faults = json.loads(subprocess.run(
        [sys.executable, PLANT, "--list"], capture_output=True, text=True, check=True
    ).stdout)
    faults = {f["name"]: f for f in faults if f["name"] != "none"}
    ids = []
    for protocol in PROTOCOLS:
        code, listed, stderr = conformance(pod, ["--list", "--protocol", protocol])
        if code != 0 or listed is None:
            sys.exit("cannot list the %s kit: %s" % (protocol, stderr))
        ids += [r["id"] for r in listed]
    ok = True

    targeted = {t for f in faults.values() for t in f["targets"]}
    unknown = sorted(targeted - set(ids))
    untested = [i for i in ids if i not in targeted]
    if unknown:
        print("faults target requirements that do not exist: %s" % ", ".join(unknown))
        ok = False
    if untested:
        print("requirements no fault proves can fail: %s" % ", ".join(untested))
        ok = False

    if args.fault:
        faults = {n: f for n, f in faults.items() if n in args.fault}
    else:
        for protocol in PROTOCOLS:
            t0 = time.monotonic()
            code, report, stderr = conformance(
                pod,
                ["--strict", "--framing", "both", "--protocol", protocol]
                + ["--pod-cmd", pod_cmd(pod, "none", protocol)],
            )
            if code != 0:
                failed = [r for r in (report or {}).get("results", []) if r["status"] != "pass"]
                print(
                    "control FAILED: the transparent proxy does not pass the %s kit (exit %s)"
                    % (protocol, code)
                )
                for r in failed:
                    print("  %s [%s]: %s" % (r["id"], r["framing"], r["reason"]))
                ok = False
            else:
                print(
                    "control: the %s kit passes through the transparent proxy (%d runs, %.0f s)"
                    % (protocol, report["passed"], time.monotonic() - t0)
                )

    caught = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        jobs = {name: pool.submit(try_fault, pod, name, spec) for name, spec in faults.items()}
        for name, job in jobs.items():
            was_caught, how = job.result()
            caught += was_caught
            print("%-8s %-34s %s" % ("caught" if was_caught else "SURVIVED", name, how))
    print("mutation score: %d/%d" % (caught, len(faults)))
    print("(%.0f s)" % (time.monotonic() - started))
    if caught < len(faults) or not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
