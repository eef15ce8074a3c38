#!/usr/bin/env bash
# Runs the conformance kit against our pod in both framings, SHOULDs included (from the
# repository root, after `cargo build`).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec target/debug/pod conformance --strict --kit tests/conformance \
  --pod-cmd 'target/debug/pod serve --manifest {manifest}'
