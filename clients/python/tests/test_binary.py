"""Finding the pod binary: POD_BIN, then PATH, then the repository's target/release and
target/debug; and one sentence naming POD_BIN when there is none."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from helpers import PACKAGE_ROOT, POD_BIN, TIMEOUT, VENV, Workspace, require_pod

from pod_client import PodClient, PodConnectionError, PodNotFoundError, find_pod_bin


def executable(path: Path, body: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


class Layout:
    """A scratch tree: a pod repository with both builds, a folder on PATH, and a folder outside
    any repository."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="pod-bin-")).resolve()
        self.repo = self.root / "repo"
        (self.repo / "src" / "deep").mkdir(parents=True)
        (self.repo / "Cargo.toml").write_text(
            '[package]\nkeywords = ["agent", "rpc"]\nname = "pod"\nversion = "0.1.0"\n\n[dependencies]\nserde = "1"\n'
        )
        self.release = executable(self.repo / "target" / "release" / "pod")
        self.debug = executable(self.repo / "target" / "debug" / "pod")
        self.on_path = executable(self.root / "bin" / "pod")
        self.explicit = executable(self.root / "chosen" / "my-pod")
        self.outside = self.root / "elsewhere"
        self.outside.mkdir()

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class FindTests(unittest.TestCase):
    def setUp(self) -> None:
        self.t = Layout()
        self.addCleanup(self.t.cleanup)
        self.deep = self.t.repo / "src" / "deep"

    def find(self, env: dict[str, str], cwd: Path, pod_bin: str | None = None) -> str:
        return find_pod_bin(pod_bin, env=env, cwd=cwd)

    def test_the_order_is_pod_bin_then_path_then_release_then_debug(self) -> None:
        path = str(self.t.on_path.parent)
        self.assertEqual(self.find({"POD_BIN": str(self.t.explicit), "PATH": path}, self.deep), str(self.t.explicit))
        self.assertEqual(self.find({"PATH": path}, self.deep), str(self.t.on_path))
        self.assertEqual(self.find({"PATH": ""}, self.deep), str(self.t.release))
        self.t.release.unlink()
        self.assertEqual(self.find({"PATH": ""}, self.deep), str(self.t.debug))
        self.t.debug.unlink()
        with self.assertRaises(PodNotFoundError) as ctx:
            self.find({"PATH": ""}, self.deep)
        message = str(ctx.exception)
        self.assertIn("POD_BIN", message)
        self.assertIn(f"{self.t.repo} has no target/release/pod or target/debug/pod", message)
        self.assertNotIn("\n", message)

    def test_the_argument_wins_over_pod_bin_and_a_bare_name_is_looked_up_on_path(self) -> None:
        env = {"POD_BIN": str(self.t.explicit), "PATH": str(self.t.on_path.parent)}
        self.assertEqual(self.find(env, self.deep, pod_bin=str(self.t.debug)), str(self.t.debug))
        self.assertEqual(self.find({"POD_BIN": "pod", "PATH": env["PATH"]}, self.t.outside), str(self.t.on_path))
        relative = os.path.relpath(self.t.explicit, self.t.outside)
        self.assertEqual(self.find({"POD_BIN": relative, "PATH": ""}, self.t.outside), str(self.t.explicit))

    def test_pod_bin_naming_nothing_is_an_error_even_when_a_fallback_exists(self) -> None:
        env = {"POD_BIN": str(self.t.root / "missing" / "pod"), "PATH": str(self.t.on_path.parent)}
        with self.assertRaises(PodNotFoundError) as ctx:
            self.find(env, self.deep)
        self.assertIn("POD_BIN is set to", str(ctx.exception))
        self.assertIn("missing/pod", str(ctx.exception))
        not_executable = self.t.root / "plain-file"
        not_executable.write_text("not a program\n")
        with self.assertRaises(PodNotFoundError):
            self.find({"POD_BIN": str(not_executable), "PATH": ""}, self.deep)
        with self.assertRaises(PodNotFoundError) as ctx:
            self.find({"PATH": ""}, self.deep, pod_bin=str(self.t.root))  # a folder is no binary
        self.assertIn("pod_bin is set to", str(ctx.exception))

    def test_outside_a_pod_repository_with_an_empty_path_nothing_is_found(self) -> None:
        with self.assertRaises(PodNotFoundError) as ctx:
            self.find({"PATH": ""}, self.t.outside)
        message = str(ctx.exception)
        self.assertIn("POD_BIN is not set", message)
        self.assertIn(f"{self.t.outside} is not inside a pod repository", message)

    def test_empty_path_entries_do_not_mean_the_current_folder(self) -> None:
        executable(self.t.outside / "pod")
        with self.assertRaises(PodNotFoundError):
            self.find({"PATH": "::"}, self.t.outside)

    def test_a_crate_with_a_pod_binary_but_another_name_is_not_the_repository(self) -> None:
        (self.t.repo / "Cargo.toml").write_text('[package]\nname = "other"\n\n[[bin]]\nname = "pod"\n')
        with self.assertRaises(PodNotFoundError) as ctx:
            self.find({"PATH": ""}, self.deep)
        self.assertIn("is not inside a pod repository", str(ctx.exception))
        (self.t.repo / "Cargo.toml").write_text("[package\nname = ")  # malformed: passed over
        with self.assertRaises(PodNotFoundError):
            self.find({"PATH": ""}, self.deep)


class EndToEndTests(unittest.TestCase):
    """The client and the CLI as a user meets them."""

    def setUp(self) -> None:
        require_pod()
        self.ws = Workspace()
        self.addCleanup(self.ws.cleanup)

    def cli(self, env_changes: dict[str, str | None], *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        if VENV is None:
            env["PYTHONPATH"] = str(PACKAGE_ROOT)
        for key, value in env_changes.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return subprocess.run(
            [sys.executable, "-m", "pod_client", "run", "--manifest", str(self.ws.manifest), *args],
            cwd=self.ws.dir, env=env, capture_output=True, text=True, timeout=TIMEOUT * 2,
        )

    def test_pod_bin_at_nothing_is_one_sentence_from_the_cli(self) -> None:
        p = self.cli({"POD_BIN": str(self.ws.path("no-such-pod"))}, "hello")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(p.stdout, "")
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("POD_BIN is set to", lines[0])
        self.assertNotIn("Traceback", p.stderr)

    def test_no_pod_bin_and_an_empty_path_outside_a_repository_names_pod_bin(self) -> None:
        p = self.cli({"POD_BIN": None, "PATH": ""}, "hello")
        self.assertEqual(p.returncode, 3, p.stderr)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("cannot find the pod binary", lines[0])
        self.assertIn("set POD_BIN", lines[0])

    def test_pod_on_path_is_found_and_runs_a_turn(self) -> None:
        bin_dir = self.ws.dir / "bin"
        bin_dir.mkdir()
        (bin_dir / "pod").symlink_to(os.path.abspath(POD_BIN))
        p = self.cli({"POD_BIN": None, "PATH": str(bin_dir)}, "hello", "there")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("hello there", p.stdout)
        self.assertIn("[turn ended] end_turn", p.stdout)

    def test_the_client_raises_the_sentence_before_starting_anything(self) -> None:
        old = os.environ.get("POD_BIN")
        os.environ["POD_BIN"] = str(self.ws.path("no-such-pod"))
        try:
            with self.assertRaises(PodNotFoundError) as ctx:
                PodClient(self.ws.manifest)
        finally:
            if old is None:
                os.environ.pop("POD_BIN", None)
            else:
                os.environ["POD_BIN"] = old
        self.assertIsInstance(ctx.exception, FileNotFoundError)  # what callers caught before
        self.assertIn("no-such-pod", str(ctx.exception))

    def test_a_binary_the_kernel_will_not_run_is_a_connection_error_naming_it(self) -> None:
        broken = executable(self.ws.path("broken-pod"), "#!/nonexistent/interpreter\n")

        async def start() -> None:
            pod = PodClient(self.ws.manifest, pod_bin=str(broken))
            await pod.start()

        with self.assertRaises(PodConnectionError) as ctx:
            asyncio.run(start())
        self.assertIn("cannot start", str(ctx.exception))
        self.assertIn("broken-pod", str(ctx.exception))


@unittest.skipIf(VENV is None, "runs against the installed package (test.sh sets POD_CLIENT_VENV)")
class InstalledTests(unittest.TestCase):
    def test_the_package_comes_from_the_virtual_environment(self) -> None:
        import pod_client

        location = Path(pod_client.__file__).resolve()
        self.assertTrue(location.is_relative_to(Path(VENV).resolve()), location)
        self.assertFalse(location.is_relative_to(PACKAGE_ROOT.resolve()), location)

    def test_the_console_script_runs_a_turn(self) -> None:
        require_pod()
        ws = Workspace()
        self.addCleanup(ws.cleanup)
        p = subprocess.run(
            [str(Path(VENV) / "bin" / "pod-client"), "run", "--manifest", str(ws.manifest), "installed"],
            cwd=ws.dir, env=dict(os.environ, POD_BIN=POD_BIN), capture_output=True, text=True, timeout=TIMEOUT * 2,
        )
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("installed", p.stdout)
        self.assertIn("[turn ended] end_turn", p.stdout)


if __name__ == "__main__":
    unittest.main()
