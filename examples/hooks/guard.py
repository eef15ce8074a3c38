#!/usr/bin/env python3
"""An example pod pre_tool_call hook: refuse force-pushes and piping downloads into a shell.

pod runs this after its permission rules allowed a call. The call arrives as JSON on stdin:

    {"callId": "...", "tool": "bash", "input": {...},
     "decision": {"decision": "allow", "subjects": [{"tool": "bash", "subject": "git push -f", ...}]}}

Answer on stdout with {"action": "continue"} or {"action": "deny", "message": "..."}.
(Exiting with code 2 also denies, with stderr as the message.) Anything else - a crash, another
exit code, no or invalid output, running past timeout_secs - denies the call too: pod fails
closed.

Manifest:

    [[hooks.pre_tool_call]]
    command = ["python3", "hooks/guard.py"]   # relative to the manifest's folder
    timeout_secs = 5
    tools = ["bash"]
"""

import json
import re
import sys

# Checked against every subject of the call: the permission layer already split compound
# commands, unwrapped `sudo`/`env`/`bash -c`, and normalized paths, so match the parts it found.
RULES = [
    (re.compile(r"^git push\b.*(\s--force\b|\s-f\b|\s--force-with-lease\b)"),
     "force-pushing is not allowed; push normally or open a pull request"),
    (re.compile(r"^(sh|bash|zsh)( |$)"),
     "running a nested shell is not allowed here"),
]


def main() -> int:
    call = json.load(sys.stdin)
    for subject in call.get("decision", {}).get("subjects", []):
        if subject.get("tool") != "bash":
            continue
        text = subject.get("subject", "")
        for pattern, why in RULES:
            if pattern.search(text):
                print(json.dumps({"action": "deny", "message": f"`{text}`: {why}"}))
                return 0
    print(json.dumps({"action": "continue"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
