"""Shared fixtures: a temp workspace with a small manifest, and the pod binary.

``test.sh`` installs the package into a fresh virtual environment and runs these tests with its
Python, setting ``POD_CLIENT_VENV``: then ``pod_client`` is imported from that environment, as a
user would get it. Without it (``python3 -m unittest`` from a checkout) the source folder is used.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent
REPO = HERE.parents[2]
VENV = os.environ.get("POD_CLIENT_VENV") or None
if VENV is None:
    sys.path.insert(0, str(PACKAGE_ROOT))

POD_BIN = os.environ.get("POD_BIN") or str(REPO / "target" / "debug" / "pod")

MANIFEST = """\
[pod]
name = "client-tests"
workspace = "{workspace}"

[model]
provider = "offline"

[tools]
enabled = ["bash", "read", "file_write"]

[permissions]
default_action = "ask"

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
message = "Deleting files is not allowed in this workspace."

[[permissions.rule]]
tool = "bash"
pattern = "echo *"
action = "allow"
"""
MANIFEST_RULES = 2

TIMEOUT = 10.0


def require_pod() -> None:
    if not os.access(POD_BIN, os.X_OK):
        raise RuntimeError(f"pod binary not found at {POD_BIN}: run `cargo build` or set POD_BIN")


class Workspace:
    """A temporary directory holding ``pod.toml`` and a ``keep.txt``."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pod-py-"))
        self.manifest = self.dir / "pod.toml"
        self.manifest.write_text(MANIFEST.format(workspace=self.dir))
        (self.dir / "keep.txt").write_text("keep me\n")

    def path(self, name: str) -> Path:
        return self.dir / name

    def write(self, name: str, text: str) -> Path:
        p = self.dir / name
        p.write_text(text)
        return p

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
