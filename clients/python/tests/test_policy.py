"""The policy file: parsing, wildcard matching, first match, strictest wins, default."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

import helpers  # noqa: F401  (puts the package on sys.path)

from pod_client.policy import Policy, PolicyError, wildcard_match


def request(*subjects, tool="bash", options=("allow_once", "allow_session", "deny")):
    return {
        "type": "permissionRequest",
        "requestId": "perm_x",
        "tool": tool,
        "subjects": [
            {"tool": t, "subject": s, "action": a, "opaque": False} for (t, s, a) in subjects
        ],
        "options": list(options),
    }


class WildcardTests(unittest.TestCase):
    def test_star_crosses_slashes_and_question_is_one_char(self) -> None:
        self.assertTrue(wildcard_match("cat *", "cat a/b/c.txt"))
        self.assertTrue(wildcard_match("*.env", "config/prod.env"))
        self.assertTrue(wildcard_match("ls ?", "ls a"))
        self.assertFalse(wildcard_match("ls ?", "ls ab"))

    def test_trailing_space_star_matches_bare_command_only(self) -> None:
        self.assertTrue(wildcard_match("rm *", "rm"))
        self.assertTrue(wildcard_match("rm *", "rm -rf x"))
        self.assertFalse(wildcard_match("rm *", "rmdir x"))

    def test_other_characters_are_literal(self) -> None:
        self.assertTrue(wildcard_match("test [ -f x ]", "test [ -f x ]"))
        self.assertFalse(wildcard_match("a.c", "abc"))
        self.assertFalse(wildcard_match("git *", "Git status"))  # patterns are case-sensitive


class PolicyTests(unittest.TestCase):
    TEXT = """
default = "deny"
[[rule]]
tool = "bash"
pattern = "git push *"
decision = "deny"
message = "no pushing"
[[rule]]
tool = "bash"
pattern = "git *"
decision = "allow_session"
[[rule]]
tool = "BASH"
pattern = "touch *"
decision = "allow_once"
[[rule]]
tool = "file_write"
pattern = "*.txt"
decision = "allow_session"
"""

    def setUp(self) -> None:
        self.policy = Policy.from_toml(self.TEXT)

    def test_first_match_per_subject(self) -> None:
        self.assertEqual(self.policy(request(("bash", "git push origin", "ask"))), ("deny", "no pushing"))
        self.assertEqual(self.policy(request(("bash", "git status", "ask"))), ("allow_session", None))

    def test_tool_is_case_insensitive(self) -> None:
        self.assertEqual(self.policy(request(("bash", "touch a", "ask"))), ("allow_once", None))

    def test_strictest_subject_wins(self) -> None:
        both = request(("bash", "git status", "ask"), ("bash", "touch a", "ask"))
        self.assertEqual(self.policy(both), ("allow_once", None))
        with_deny = request(("bash", "touch a", "ask"), ("bash", "git push x", "ask"))
        self.assertEqual(self.policy(with_deny), ("deny", "no pushing"))

    def test_redirection_subject_uses_its_own_tool(self) -> None:
        r = request(("bash", "git log", "ask"), ("file_write", "out.txt", "ask"))
        self.assertEqual(self.policy(r), ("allow_session", None))
        r = request(("bash", "git log", "ask"), ("file_write", "out.env", "ask"))
        self.assertEqual(self.policy(r), ("deny", None))

    def test_subjects_the_pod_already_allowed_are_not_judged(self) -> None:
        r = request(("bash", "ls", "allow"), ("bash", "touch a", "ask"))
        self.assertEqual(self.policy(r), ("allow_once", None))
        verdict = self.policy.evaluate(r)
        self.assertEqual([s[1] for s in verdict.subjects], ["touch a"])

    def test_default_applies_when_nothing_matches(self) -> None:
        self.assertEqual(self.policy(request(("bash", "curl x", "ask"))), ("deny", None))
        lenient = Policy.from_toml('default = "allow_once"\ndefault_message = "ok"')
        self.assertEqual(lenient(request(("bash", "curl x", "ask"))), ("allow_once", "ok"))
        self.assertEqual(Policy.from_toml("").default, "deny")

    def test_decision_is_tightened_to_an_offered_option(self) -> None:
        r = request(("bash", "git status", "ask"), options=("allow_once", "deny"))
        self.assertEqual(self.policy(r), ("allow_once", None))

    def test_load_from_file_and_errors(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            p = Path(d, "p.toml")
            p.write_text(self.TEXT)
            self.assertEqual(len(Policy.load(p).rules), 4)
            for bad, needle in [
                ('[[rule]]\ntool = "bash"\ndecision = "maybe"', "decision"),
                ('[[rule]]\npattern = "x"\ndecision = "deny"', "required"),
                ('[[rule]]\ntool = "x"\ndecision = "deny"\naction = "deny"', "unknown key"),
                ('default = "ask"', "default"),
                ("rule = [", "invalid TOML"),
            ]:
                p.write_text(bad)
                with self.assertRaises(PolicyError) as ctx:
                    Policy.load(p)
                self.assertIn(needle, str(ctx.exception))
                self.assertIn(str(p), str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
