"""pod acp driven by the official ACP Python SDK (`agent-client-protocol` on PyPI), a second
client nobody here wrote, through the ask flow: allow_once, allow_always (the second identical
call does not ask), reject_once, and an error answer. Each case checks the file the command
would have made: present only when the answer allowed it."""

import asyncio
import os
import tempfile
import unittest
from pathlib import Path

from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    RequestPermissionResponse,
)
from acp.stdio import spawn_agent_process

POD = os.environ["POD_BIN"]


def workspace() -> Path:
    ws = Path(tempfile.mkdtemp(prefix="pod-acp-py-")).resolve()
    (ws / "pod.toml").write_text(
        '[pod]\nname = "acp-py"\n[model]\nprovider = "offline"\n'
        '[permissions]\ndefault_action = "ask"\n'
        '[[permissions.rule]]\ntool = "bash"\npattern = "rm *"\naction = "deny"\n'
    )
    return ws


class Editor:
    """The client side: answers each permission request with `answer(n)` and records updates."""

    def __init__(self, answer):
        self.answer = answer
        self.requests = []
        self.updates = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.requests.append((session_id, tool_call, options))
        return self.answer(len(self.requests))

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append((session_id, update))

    def results(self):
        """Final status of each tool call, by its title."""
        titles = {
            u.tool_call_id: u.title
            for _, u in self.updates
            if getattr(u, "session_update", None) == "tool_call"
        }
        out = {}
        for _, u in self.updates:
            if getattr(u, "session_update", None) == "tool_call_update" and u.status in ("completed", "failed"):
                out[titles.get(u.tool_call_id)] = u
        return out


def selected(option_id):
    return lambda n: RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))


class AskFlow(unittest.IsolatedAsyncioTestCase):
    async def session(self, editor, ws):
        state = tempfile.mkdtemp(prefix="pod-acp-py-state-")
        self.cm = spawn_agent_process(editor, POD, "acp", "--state-dir", state)
        conn, self.process = await self.cm.__aenter__()
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="pod-acp-py", version="1.0"),
        )
        self.assertEqual(init.protocol_version, 1)
        self.assertEqual(init.agent_info.name, "pod")
        session = await conn.new_session(cwd=str(ws), mcp_servers=[])
        return conn, session.session_id

    async def asyncTearDown(self):
        await self.cm.__aexit__(None, None, None)
        code = await asyncio.wait_for(self.process.wait(), 5)
        self.assertEqual(code, 0)

    async def test_allow_once_runs_the_call(self):
        ws = workspace()
        editor = Editor(selected("allow_once"))
        conn, sid = await self.session(editor, ws)
        response = await conn.prompt(session_id=sid, prompt=[text_block("!touch once")])
        self.assertEqual(response.stop_reason, "end_turn")
        self.assertEqual(len(editor.requests), 1)
        _, tool_call, options = editor.requests[0]
        self.assertEqual(
            [(o.option_id, o.kind) for o in options],
            [("allow_once", "allow_once"), ("allow_always", "allow_always"), ("reject_once", "reject_once")],
        )
        self.assertEqual(editor.results()["touch once"].status, "completed")
        self.assertTrue((ws / "once").exists())

    async def test_allow_always_does_not_ask_twice(self):
        ws = workspace()
        editor = Editor(selected("allow_always"))
        conn, sid = await self.session(editor, ws)
        await conn.prompt(session_id=sid, prompt=[text_block("!touch twice")])
        (ws / "twice").unlink()
        await conn.prompt(session_id=sid, prompt=[text_block("!touch twice")])
        self.assertEqual(len(editor.requests), 1)
        self.assertTrue((ws / "twice").exists())

    async def test_reject_once_denies(self):
        ws = workspace()
        editor = Editor(selected("reject_once"))
        conn, sid = await self.session(editor, ws)
        await conn.prompt(session_id=sid, prompt=[text_block("!touch rejected")])
        result = editor.results()["touch rejected"]
        self.assertEqual(result.status, "failed")
        self.assertIn("permission denied by the user", result.content[0].content.text)
        self.assertFalse((ws / "rejected").exists())

    async def test_an_error_answer_denies(self):
        ws = workspace()

        def fail(n):
            raise RequestError(-32603, "no dialog here")

        editor = Editor(fail)
        conn, sid = await self.session(editor, ws)
        await conn.prompt(session_id=sid, prompt=[text_block("!touch errored")])
        result = editor.results()["touch errored"]
        self.assertEqual(result.status, "failed")
        self.assertIn("could not be used", result.content[0].content.text)
        self.assertFalse((ws / "errored").exists())

    async def test_a_denied_command_never_asks(self):
        ws = workspace()
        (ws / "victim").write_text("keep")
        editor = Editor(selected("allow_once"))
        conn, sid = await self.session(editor, ws)
        await conn.prompt(session_id=sid, prompt=[text_block("!rm victim")])
        self.assertEqual(editor.requests, [])
        self.assertIn('rule 1 (bash "rm *" deny)', editor.results()["rm victim"].content[0].content.text)
        self.assertEqual((ws / "victim").read_text(), "keep")


if __name__ == "__main__":
    unittest.main()
