#!/usr/bin/env bash
# Runs the conformance kit against our pod, SHOULDs included (from the repository root, after
# `cargo build`): the pod protocol section against `pod serve` in both framings, then the ACP
# section against `pod acp` (NDJSON). Each run is bounded: a hung pod fails the job, it does not
# stall CI (about 23 s and 1 s on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
# The kit's own manifests only: no user configuration of this machine.
export POD_CONFIG=""
timeout 300 target/debug/pod conformance --strict --kit tests/conformance \
  --pod-cmd 'target/debug/pod serve --trust --manifest {manifest}'
timeout 120 target/debug/pod conformance --strict --kit tests/conformance --protocol acp \
  --pod-cmd 'target/debug/pod acp'
