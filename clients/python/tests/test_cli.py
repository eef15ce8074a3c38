"""``python -m pod_client run`` end to end against the real pod binary."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest

from helpers import PACKAGE_ROOT, POD_BIN, TIMEOUT, VENV, Workspace, require_pod

POLICY = """
default = "deny"
default_message = "the script says no"

[[rule]]
tool = "bash"
pattern = "touch *"
decision = "allow_once"
"""


class CliTests(unittest.TestCase):
    def setUp(self) -> None:
        require_pod()
        self.ws = Workspace()
        self.addCleanup(self.ws.cleanup)
        self.policy = self.ws.write("policy.toml", POLICY)

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, POD_BIN=POD_BIN)
        if VENV is None:
            env["PYTHONPATH"] = str(PACKAGE_ROOT)
        return subprocess.run(
            [sys.executable, "-m", "pod_client", "run", *args],
            cwd=self.ws.dir, env=env, capture_output=True, text=True, timeout=TIMEOUT * 2,
        )

    def test_policy_approves_and_output_shows_the_flow(self) -> None:
        p = self.cli("--manifest", str(self.ws.manifest), "--policy", str(self.policy), "!touch from-cli.txt")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(self.ws.path("from-cli.txt").exists())
        out = p.stdout
        self.assertIn('[tool call] call_1_0 bash {"command": "touch from-cli.txt"}', out)
        self.assertIn("[policy] bash `touch from-cli.txt`: allow_once by rule 1 (bash \"touch *\")", out)
        self.assertIn("[decision] allow_once", out)
        self.assertIn("[permission resolved] call_1_0 allow by client", out)
        self.assertIn("[tool result] call_1_0 ok", out)
        self.assertIn("[turn ended] end_turn", out)
        order = [out.index(s) for s in ("[tool call]", "[permission request]", "[decision]", "[permission resolved]", "[tool result]", "[turn ended]")]
        self.assertEqual(order, sorted(order))

    def test_policy_default_denies_with_message(self) -> None:
        p = self.cli("--manifest", str(self.ws.manifest), "--policy", str(self.policy), "!cp keep.txt copy.txt")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(self.ws.path("copy.txt").exists())
        self.assertIn("[decision] deny (the script says no)", p.stdout)
        self.assertIn("[tool result] call_1_0 error deniedBy=approval", p.stdout)
        self.assertIn("the script says no", p.stdout.split("[tool result]")[1])

    def test_text_and_rule_denial_without_policy(self) -> None:
        p = self.cli("--manifest", str(self.ws.manifest), "!rm keep.txt")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(self.ws.path("keep.txt").exists())
        self.assertNotIn("[permission request]", p.stdout)
        self.assertIn("deniedBy=permission", p.stdout)
        p = self.cli("--manifest", str(self.ws.manifest), "just", "words")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("just words", p.stdout)

    def test_bad_policy_exits_2(self) -> None:
        self.ws.write("bad.toml", '[[rule]]\ntool = "bash"\ndecision = "perhaps"\n')
        p = self.cli("--manifest", str(self.ws.manifest), "--policy", str(self.ws.path("bad.toml")), "hi")
        self.assertEqual(p.returncode, 2)
        self.assertIn("decision must be one of", p.stderr)

    def test_a_missing_policy_file_exits_2_naming_it_and_starts_no_pod(self) -> None:
        missing = str(self.ws.path("nowhere.toml"))
        p = self.cli("--manifest", str(self.ws.manifest), "--policy", missing, "!touch never.txt")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(f"policy: {missing}: cannot read it", p.stderr)
        self.assertNotIn("error: pod", p.stderr)
        self.assertFalse(os.path.exists(self.ws.path("never.txt")))


if __name__ == "__main__":
    unittest.main()
