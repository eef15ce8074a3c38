"""A broken pod: it holds back each turn's `toolResult` events and sends them in reverse order just
before `turnEnded`, so results no longer come in tool-call order (the conformance kit's
POD-EVT-005 must catch this).

    python3 reorder_results.py target/debug/pod serve --manifest pod.toml
"""

import json

from proxy import run

held = []


def to_client(line):
    try:
        params = json.loads(line).get("params") or {}
    except (ValueError, AttributeError):
        return [line]
    kind = params.get("type") if isinstance(params, dict) else None
    if kind == "toolResult":
        held.append(line)
        return []
    if kind == "turnEnded":
        out = list(reversed(held)) + [line]
        held.clear()
        return out
    return [line]


run(lambda line: [line], to_client)
