#!/usr/bin/env bash
# Python client tests against the real pod binary ($POD_BIN, default <repo>/target/debug/pod).
# Standard library only: nothing to install.
set -euo pipefail
cd "$(dirname "$0")"
export POD_BIN="${POD_BIN:-$(cd ../.. && pwd)/target/debug/pod}"
exec python3 -m unittest discover -s tests -v
