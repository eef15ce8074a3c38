#!/usr/bin/env bash
# pod acp against the official ACP TypeScript SDK ($POD_BIN, default <repo>/target/debug/pod):
# install the locked SDK, run the node:test suite.
set -euo pipefail
cd "$(dirname "$0")"
export POD_BIN="${POD_BIN:-$(cd ../../.. && pwd)/target/debug/pod}"
# Only the test's own pod.toml configures it, not the user configuration of this machine.
export POD_CONFIG=""
# A trust store of its own (the tests trust their folders with `pod trust`).
XDG_STATE_HOME="$(mktemp -d)"
export XDG_STATE_HOME
trap 'rm -rf "$XDG_STATE_HOME"' EXIT
npm ci --no-audit --no-fund
node --test acp.test.mjs
