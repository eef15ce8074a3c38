"""Finding the ``pod`` binary to start.

In order, the first that exists wins:

1. the ``pod_bin`` argument, else ``$POD_BIN`` (when set and not empty): a path (relative paths
   are taken from the current directory), or a bare name looked up on ``PATH``. When it names
   nothing executable, that is the error: there is no fallback past an explicit choice;
2. ``pod`` on ``PATH`` (empty ``PATH`` entries are skipped, not read as the current directory);
3. ``target/release/pod``, then ``target/debug/pod``, of the pod repository the current directory
   is in: the nearest folder, from the current directory upwards, holding a ``Cargo.toml`` whose
   ``[package]`` table says ``name = "pod"`` (an unreadable or malformed one is passed over).

When none exists, ``PodNotFoundError`` says so in one sentence that names ``POD_BIN``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Mapping

from .errors import PodNotFoundError


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _on_path(name: str, path_var: str | None) -> Path | None:
    for entry in (path_var or "").split(os.pathsep):
        if not entry:
            continue
        candidate = Path(entry) / name
        if _executable(candidate):
            return candidate
    return None


def pod_repository(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: the current directory) whose
    ``Cargo.toml`` is the pod crate's, or ``None``."""
    here = Path(start if start is not None else os.getcwd()).resolve()
    for folder in (here, *here.parents):
        try:
            with open(folder / "Cargo.toml", "rb") as f:
                package = tomllib.load(f).get("package")
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if isinstance(package, dict) and package.get("name") == "pod":
            return folder
    return None


def find_pod_bin(
    pod_bin: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> str:
    """The absolute path of the pod binary to start (see the module doc for the order).

    ``env`` (default ``os.environ``) supplies ``POD_BIN`` and ``PATH``; ``cwd`` (default the
    current directory) anchors relative paths and the repository search.
    """
    env = os.environ if env is None else env
    base = Path(cwd if cwd is not None else os.getcwd())
    explicit, origin = (pod_bin, "pod_bin") if pod_bin else (env.get("POD_BIN") or None, "POD_BIN")
    if explicit:
        text = os.fspath(explicit)
        found = _on_path(text, env.get("PATH")) if os.sep not in text else None
        if found is None and os.sep in text and _executable(base / text):
            found = base / text
        if found is not None:
            return os.path.abspath(found)
        where = "on PATH" if os.sep not in text else "there"
        raise PodNotFoundError(
            f"{origin} is set to {text!r} but there is no executable pod binary {where}: "
            f"point {origin} at the pod binary (e.g. <repo>/target/release/pod) or unset it"
        )
    found = _on_path("pod", env.get("PATH"))
    if found is not None:
        return os.path.abspath(found)
    repo = pod_repository(base)
    if repo is not None:
        for profile in ("release", "debug"):
            candidate = repo / "target" / profile / "pod"
            if _executable(candidate):
                return str(candidate)
    looked = (
        f"{repo} has no target/release/pod or target/debug/pod (run `cargo build --release` there)"
        if repo is not None
        else f"{base.resolve()} is not inside a pod repository"
    )
    raise PodNotFoundError(
        f"cannot find the pod binary: POD_BIN is not set, there is no `pod` on PATH and {looked}; "
        "set POD_BIN to the binary's path or put it on PATH with `cargo install --path <repo>`"
    )
