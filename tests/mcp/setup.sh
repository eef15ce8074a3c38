#!/usr/bin/env bash
# Installs the real MCP servers tests/binary/mcp.rs runs pod against (@modelcontextprotocol/
# server-filesystem and server-everything, versions locked in package-lock.json) into
# tests/mcp/node_modules. Idempotent: does nothing when the locked versions are installed.
# Needs node and npm; the npm registry must be reachable the first time.
set -euo pipefail
cd "$(dirname "$0")"
# Test binaries may run this at the same time: one installs, the others wait.
exec 9>"${TMPDIR:-/tmp}/pod-mcp-setup.lock"
flock 9
stamp=node_modules/.installed-lock
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >&2
cp package-lock.json "$stamp"
