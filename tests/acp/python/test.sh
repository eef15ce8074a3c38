#!/usr/bin/env bash
# pod acp against the official ACP Python SDK ($POD_BIN, default <repo>/target/debug/pod): a
# venv of its own with the pinned SDK, then the unittest suite.
set -euo pipefail
cd "$(dirname "$0")"
export POD_BIN="${POD_BIN:-$(cd ../../.. && pwd)/target/debug/pod}"
# Only the test's own pod.toml configures it, not the user configuration of this machine.
export POD_CONFIG=""
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
exec .venv/bin/python -m unittest discover -s . -p 'test_*.py' -v
