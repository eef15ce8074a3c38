"""A scripted approval policy: a TOML rules file that answers ``permissionRequest`` events.

```toml
default = "deny"                      # optional: allow_once | allow_session | deny (default deny)
default_message = "not in policy"     # optional: message sent with a default deny

[[rule]]
tool = "bash"                         # wildcard over the subject's tool, case-insensitive
pattern = "touch *"                   # wildcard over the subject text, case-sensitive (default "*")
decision = "allow_once"               # allow_once | allow_session | deny
message = "..."                       # optional, sent with the reply (the model sees it on deny)
```

Each subject of the request is matched against the rules in order; the first rule whose ``tool``
and ``pattern`` both match decides that subject; a subject no rule matches gets ``default``.
The request's answer is the strictest decision over its subjects
(``deny`` > ``allow_once`` > ``allow_session``). Only the subjects the pod itself marked ``ask``
are put to the policy (subjects its own rules already allowed need no answer); a request that
marks none is judged on all its subjects.

Wildcards follow the pod's rule language: ``*`` matches any run of characters, ``/`` included,
``?`` one character, everything else is literal, and a pattern ending in ``" *"`` also matches the
bare command (``"rm *"`` matches ``rm`` but never ``rmdir x``).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Mapping

DECISIONS = ("allow_session", "allow_once", "deny")  # ascending strictness
_STRICTNESS = {d: i for i, d in enumerate(DECISIONS)}


class PolicyError(ValueError):
    """The policy file is malformed."""


def wildcard_regex(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    parts = []
    for ch in pattern:
        if ch == "*":
            parts.append(".*")
        elif ch == "?":
            parts.append(".")
        else:
            parts.append(re.escape(ch))
    body = "".join(parts)
    if pattern.endswith(" *"):
        # "rm *" also matches the bare "rm".
        bare = "".join(parts[:-2])
        body = f"(?:{body}|{bare})"
    return re.compile(body, re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def wildcard_match(pattern: str, text: str, *, ignore_case: bool = False) -> bool:
    return wildcard_regex(pattern, ignore_case=ignore_case).fullmatch(text) is not None


@dataclass
class Rule:
    tool: str
    pattern: str
    decision: str
    message: str | None = None
    index: int = 0
    _tool_re: re.Pattern[str] = field(init=False, repr=False)
    _pattern_re: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.decision not in _STRICTNESS:
            raise PolicyError(f"rule {self.index}: decision must be one of {', '.join(DECISIONS)}, not {self.decision!r}")
        self._tool_re = wildcard_regex(self.tool, ignore_case=True)
        self._pattern_re = wildcard_regex(self.pattern)

    def matches(self, tool: str, subject: str) -> bool:
        return self._tool_re.fullmatch(tool) is not None and self._pattern_re.fullmatch(subject) is not None


@dataclass
class Verdict:
    """The policy's answer to one request, with the reasoning per subject."""

    decision: str
    message: str | None
    # (tool, subject, decision, rule or None when the default decided)
    subjects: list[tuple[str, str, str, Rule | None]]


class Policy:
    """Ordered rules plus a default. Callable: ``policy(event) -> (decision, message)``, which makes
    it usable as ``PodClient(approver=policy)``."""

    def __init__(self, rules: list[Rule], default: str = "deny", default_message: str | None = None) -> None:
        if default not in _STRICTNESS:
            raise PolicyError(f"default must be one of {', '.join(DECISIONS)}, not {default!r}")
        self.rules = rules
        self.default = default
        self.default_message = default_message

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Policy":
        raw_rules = data.get("rule", [])
        if not isinstance(raw_rules, list):
            raise PolicyError("`rule` must be an array of tables ([[rule]])")
        rules = []
        for i, raw in enumerate(raw_rules, start=1):
            if not isinstance(raw, Mapping):
                raise PolicyError(f"rule {i}: must be a table")
            unknown = set(raw) - {"tool", "pattern", "decision", "message"}
            if unknown:
                raise PolicyError(f"rule {i}: unknown key(s) {', '.join(sorted(unknown))}")
            if "tool" not in raw or "decision" not in raw:
                raise PolicyError(f"rule {i}: `tool` and `decision` are required")
            rules.append(
                Rule(
                    tool=str(raw["tool"]),
                    pattern=str(raw.get("pattern", "*")),
                    decision=str(raw["decision"]),
                    message=raw.get("message"),
                    index=i,
                )
            )
        unknown = set(data) - {"rule", "default", "default_message"}
        if unknown:
            raise PolicyError(f"unknown top-level key(s) {', '.join(sorted(unknown))}")
        return cls(rules, str(data.get("default", "deny")), data.get("default_message"))

    @classmethod
    def from_toml(cls, text: str) -> "Policy":
        try:
            return cls.from_dict(tomllib.loads(text))
        except tomllib.TOMLDecodeError as err:
            raise PolicyError(f"invalid TOML: {err}") from err

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Policy":
        with open(path, "rb") as fh:
            try:
                return cls.from_dict(tomllib.load(fh))
            except tomllib.TOMLDecodeError as err:
                raise PolicyError(f"{os.fspath(path)}: invalid TOML: {err}") from err
            except PolicyError as err:
                raise PolicyError(f"{os.fspath(path)}: {err}") from err

    def decide_subject(self, tool: str, subject: str) -> tuple[str, Rule | None]:
        for rule in self.rules:
            if rule.matches(tool, subject):
                return rule.decision, rule
        return self.default, None

    def evaluate(self, request: Mapping[str, Any]) -> Verdict:
        """Judge a ``permissionRequest`` event (or anything with ``tool`` and ``subjects``)."""
        subjects = list(request.get("subjects") or [])
        asked = [s for s in subjects if s.get("action") == "ask"] or subjects
        if not asked:  # no subjects at all: judge the tool name with an empty subject
            asked = [{"tool": request.get("tool", ""), "subject": ""}]
        judged: list[tuple[str, str, str, Rule | None]] = []
        for s in asked:
            tool = str(s.get("tool") or request.get("tool") or "")
            text = str(s.get("subject", ""))
            decision, rule = self.decide_subject(tool, text)
            judged.append((tool, text, decision, rule))
        winner = max(judged, key=lambda j: _STRICTNESS[j[2]])
        decision, rule = winner[2], winner[3]
        message = rule.message if rule is not None else self.default_message
        # Never send a decision the request does not offer: tighten until it is offered.
        options = request.get("options")
        if options:
            for candidate in DECISIONS[_STRICTNESS[decision]:]:
                if candidate in options:
                    decision = candidate
                    break
        return Verdict(decision, message, judged)

    def __call__(self, request: Mapping[str, Any]) -> tuple[str, str | None]:
        verdict = self.evaluate(request)
        return verdict.decision, verdict.message
