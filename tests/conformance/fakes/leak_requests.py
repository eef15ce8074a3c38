"""A broken pod: it tells the real pod the client can approve even when the client did not
advertise `capabilities.approval`, so `permissionRequest` events reach a client that cannot answer
them (the conformance kit's POD-PERM-006 must catch this).

    python3 leak_requests.py target/debug/pod serve --manifest pod.toml
"""

import json

from proxy import run


def to_pod(line):
    try:
        message = json.loads(line)
    except ValueError:
        return [line]
    if isinstance(message, dict) and message.get("method") == "initialize":
        params = message.setdefault("params", {})
        params.setdefault("capabilities", {})["approval"] = {}
        return [(json.dumps(message) + "\n").encode()]
    return [line]


run(to_pod, lambda line: [line])
