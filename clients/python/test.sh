#!/usr/bin/env bash
# Python client tests against the real pod binary ($POD_BIN, default <repo>/target/debug/pod).
# The package is installed (`pip install .`) into a fresh virtual environment and the tests run
# with that environment's Python, so they exercise what a user installs. The client needs only
# the standard library; building it fetches the build backend (flit_core) from PyPI.
set -euo pipefail
cd "$(dirname "$0")"
export POD_BIN="${POD_BIN:-$(cd ../.. && pwd)/target/debug/pod}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$PWD"
export POD_CLIENT_VENV="$scratch/venv"
tests="$PWD/tests"
# From the scratch folder: `-m` puts the current folder first on sys.path, and the source
# package must not shadow the installed one.
cd "$scratch"
"$scratch/venv/bin/python" -m unittest discover -s "$tests" -t "$tests" -v
