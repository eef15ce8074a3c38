#!/usr/bin/env bash
# TypeScript client tests against the real pod binary ($POD_BIN, default <repo>/target/debug/pod):
# install the locked dependencies, check src/protocol.ts against the schema, compile, run the
# tests; then pack the package (`npm pack`), install the tarball into a scratch project and use it
# from there by name: `require`, `import`, and TypeScript with the package's own types.
set -euo pipefail
cd "$(dirname "$0")"
pkg="$PWD"
export POD_BIN="${POD_BIN:-$(cd ../.. && pwd)/target/debug/pod}"
npm ci --no-audit --no-fund
npm run check-gen
npm run build
node --test dist/test/*.test.js

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
tarball="$(npm pack --silent --pack-destination "$scratch" | tail -n 1)"
cp consumer/require.cjs consumer/import.mjs consumer/typed.mts consumer/tsconfig.json "$scratch/"
cd "$scratch"
printf '{ "name": "pod-client-consumer", "private": true }\n' > package.json
npm install --no-audit --no-fund --no-package-lock "./$tarball"
export TMPDIR="$scratch" XDG_STATE_HOME="$scratch/state"
node require.cjs
node import.mjs
# The consumer needs @types/node, as for any Node library; the package's own copy serves here.
"$pkg/node_modules/.bin/tsc" -p tsconfig.json --typeRoots "$pkg/node_modules/@types"
node out/typed.mjs
