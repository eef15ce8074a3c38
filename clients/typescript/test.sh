#!/usr/bin/env bash
# TypeScript client tests against the real pod binary ($POD_BIN, default <repo>/target/debug/pod):
# install the locked dependencies, check src/protocol.ts against the schema, compile, run.
set -euo pipefail
cd "$(dirname "$0")"
export POD_BIN="${POD_BIN:-$(cd ../.. && pwd)/target/debug/pod}"
npm ci --no-audit --no-fund
npm run check-gen
npm run build
node --test dist/test/*.test.js
