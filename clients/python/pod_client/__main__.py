"""``python -m pod_client run --manifest pod.toml --policy p.toml "prompt"``.

Runs one turn against ``pod serve``, answering every ``permissionRequest`` with the policy, and
prints the assistant text, each tool call and result, and each permission decision. Exit code: 0
when the turn ends with ``end_turn``, 1 for any other stop reason, 2 for usage or policy errors,
3 when the pod fails (JSON-RPC error or connection lost).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any, TextIO

from .client import PodClient
from .errors import PodConnectionError, PodError, PodNotFoundError
from .policy import Policy, PolicyError


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Printer:
    """Turns events into readable lines. Text deltas are printed as they come; every other line
    starts on a fresh line."""

    def __init__(self, out: TextIO, policy: Policy | None) -> None:
        self.out = out
        self.policy = policy
        self.mid_line = False

    def line(self, text: str) -> None:
        if self.mid_line:
            self.out.write("\n")
            self.mid_line = False
        self.out.write(text + "\n")
        self.out.flush()

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "textDelta":
            text = event.get("text", "")
            self.out.write(text)
            self.out.flush()
            self.mid_line = not text.endswith("\n") if text else self.mid_line
        elif kind == "toolCall":
            self.line(f"[tool call] {event.get('callId')} {event.get('tool')} {_short(event.get('input'))}")
        elif kind == "permissionRequest":
            self.line(f"[permission request] {event.get('callId')} {event.get('reason')}")
            if self.policy is not None:
                verdict = self.policy.evaluate(event)
                for tool, subject, decision, rule in verdict.subjects:
                    why = f'rule {rule.index} ({rule.tool} "{rule.pattern}")' if rule else "default"
                    self.line(f"[policy] {tool} `{subject}`: {decision} by {why}")
                extra = f" ({verdict.message})" if verdict.message else ""
                self.line(f"[decision] {verdict.decision}{extra}")
        elif kind == "permissionResolved":
            self.line(f"[permission resolved] {event.get('callId')} {event.get('decision')} by {event.get('by')}")
        elif kind == "toolResult":
            status = "error" if event.get("isError") else "ok"
            denied = f" deniedBy={event['deniedBy']}" if event.get("deniedBy") else ""
            self.line(f"[tool result] {event.get('callId')} {status}{denied}: {_short(event.get('content', ''))}")
        elif kind == "turnEnded":
            self.line(f"[turn ended] {event.get('stopReason')}")


def load_policy(path: str | None) -> Policy | None:
    """The policy file, read before the pod starts: a file that cannot be read is a policy
    error (exit 2) naming the file, not a failure of the pod."""
    if not path:
        return None
    try:
        return Policy.load(path)
    except OSError as err:
        raise PolicyError(f"{path}: cannot read it: {err.strerror or err}") from err


async def run_command(args: argparse.Namespace, out: TextIO, policy: Policy | None) -> int:
    printer = Printer(out, policy)
    client = PodClient(
        args.manifest,
        pod_bin=args.pod_bin,
        args=["--trust"] if args.trust else [],
        on_event=printer,
        approver=policy,
    )
    async with client:
        await client.initialize(approval=policy is not None)
        result = await client.run(" ".join(args.prompt))
    if result.get("error"):
        printer.line(f"[error] {result['error']}")
    return 0 if result.get("stopReason") == "end_turn" else 1


def main(argv: list[str] | None = None, out: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(prog="python -m pod_client", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one turn, auto-answering approvals with a policy file")
    run.add_argument("--manifest", default="pod.toml", help="the pod manifest (default: pod.toml)")
    run.add_argument(
        "--policy",
        help="TOML policy answering permission requests; without it the client does not advertise "
        "approval and every ask fails closed in the pod",
    )
    run.add_argument(
        "--pod-bin",
        help="the pod binary (default: $POD_BIN, else `pod` on PATH, else target/release/pod or "
        "target/debug/pod of the pod repository holding the current directory)",
    )
    run.add_argument(
        "--trust",
        action="store_true",
        help="vouch for the manifest's folder for this run (`pod serve --trust`): its MCP servers, "
        "hooks, model and allow rules apply even if you never ran `pod trust` on it",
    )
    run.add_argument("prompt", nargs="+", help="the user message (several words are joined by spaces)")
    args = parser.parse_args(argv)
    try:
        policy = load_policy(args.policy)
        return asyncio.run(run_command(args, out, policy))
    except PolicyError as err:
        print(f"error: policy: {err}", file=sys.stderr)
        return 2
    except PodNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 3
    except (PodError, PodConnectionError, OSError) as err:
        print(f"error: pod: {err}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
