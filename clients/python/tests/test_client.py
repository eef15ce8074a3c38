"""PodClient against the real pod binary (offline model)."""

from __future__ import annotations

import asyncio
import unittest

from helpers import MANIFEST_RULES, POD_BIN, TIMEOUT, Workspace, require_pod

from pod_client import PodClient, PodError, Policy


def of_type(events, kind):
    return [e for e in events if e.get("type") == kind]


class PodTestCase(unittest.IsolatedAsyncioTestCase):
    def setUp(self) -> None:
        require_pod()
        self.ws = Workspace()
        self.addCleanup(self.ws.cleanup)

    async def client(self, *, approval: bool = True, approver=None) -> tuple[PodClient, list]:
        """A started, initialized client and the list every event is appended to."""
        events: list = []
        # The test's own manifest: it vouches for it, as a script does (`pod serve --trust`).
        pod = PodClient(
            self.ws.manifest,
            pod_bin=POD_BIN,
            args=["--trust"],
            cwd=self.ws.dir,
            on_event=events.append,
            approver=approver,
        )
        await pod.start()
        self.addAsyncCleanup(pod.close)
        self.init = await asyncio.wait_for(pod.initialize(approval=approval), TIMEOUT)
        return pod, events

    async def run_turn(self, pod: PodClient, text: str) -> dict:
        result = await asyncio.wait_for(pod.run(text), TIMEOUT)
        self.assertEqual(result["stopReason"], "end_turn", result)
        return result


class InitializeTests(PodTestCase):
    async def test_initialize_result_with_approval(self) -> None:
        await self.client(approval=True)
        r = self.init
        self.assertEqual(r["protocolVersion"], 1)
        self.assertEqual(r["podInfo"]["name"], "client-tests")  # the manifest's [pod] name
        self.assertFalse(r["session"]["resumed"])
        self.assertTrue(r["session"]["id"])
        self.assertEqual(sorted(t["name"] for t in r["tools"]), ["bash", "file_write", "read"])
        permissions = dict(r["permissions"])
        modes = permissions.pop("modes")
        self.assertEqual(
            permissions,
            {"enabled": True, "defaultAction": "ask", "rules": MANIFEST_RULES, "askMode": "client", "mode": "default"},
        )
        # The modes this machine allows: at least these; `auto` only where the kernel bounds calls.
        self.assertLessEqual({"default", "read-only", "accept-edits", "unattended"}, set(modes))

    async def test_initialize_without_approval_fails_closed(self) -> None:
        await self.client(approval=False)
        self.assertEqual(self.init["permissions"]["askMode"], "failClosed")

    async def test_errors_are_pod_errors_with_code_and_data(self) -> None:
        pod = PodClient(self.ws.manifest, pod_bin=POD_BIN, cwd=self.ws.dir)
        await pod.start()
        self.addAsyncCleanup(pod.close)
        with self.assertRaises(PodError) as ctx:
            await asyncio.wait_for(pod.run("hello"), TIMEOUT)
        self.assertEqual(ctx.exception.code, -32001)
        self.assertEqual(ctx.exception.name, "NotInitialized")
        with self.assertRaises(PodError) as ctx:
            await asyncio.wait_for(pod.initialize(protocol_version=99), TIMEOUT)
        self.assertEqual(ctx.exception.code, -32006)
        self.assertEqual(ctx.exception.data, {"supported": [1]})
        await asyncio.wait_for(pod.initialize(), TIMEOUT)
        with self.assertRaises(PodError) as ctx:
            await asyncio.wait_for(pod.initialize(), TIMEOUT)
        self.assertEqual(ctx.exception.code, -32002)

    async def test_shutdown_exits_zero(self) -> None:
        pod, _ = await self.client()
        self.assertEqual(await asyncio.wait_for(pod.shutdown(), TIMEOUT), {})
        self.assertEqual(await pod.close(), 0)


class TurnTests(PodTestCase):
    async def test_plain_text_is_echoed_and_streamed(self) -> None:
        pod, events = await self.client()
        stream = pod.events()
        result = await self.run_turn(pod, "hello there")
        text = "".join(e["text"] for e in of_type(events, "textDelta"))
        self.assertIn("hello there", text)
        # The same events reached the async iterator, turnEnded before the run result.
        ended = await stream.wait_for(lambda e: e["type"] == "turnEnded", TIMEOUT)
        self.assertEqual(ended["turnId"], result["turnId"])
        items = await asyncio.wait_for(pod.history(), TIMEOUT)
        self.assertEqual(items[0], {"type": "userMessage", "turnId": result["turnId"], "text": "hello there"})

    async def test_rule_denied_call_does_not_run(self) -> None:
        pod, events = await self.client()
        await self.run_turn(pod, "!rm keep.txt")
        self.assertTrue(self.ws.path("keep.txt").exists())
        self.assertEqual(of_type(events, "permissionRequest"), [])
        [result] = of_type(events, "toolResult")
        self.assertTrue(result["isError"])
        self.assertEqual(result["deniedBy"], "permission")
        self.assertIn("Deleting files is not allowed", result["content"])
        decisions = [i for i in await pod.history() if i["type"] == "permissionDecision"]
        self.assertEqual([(d["decision"], d["by"]) for d in decisions], [("deny", "rule")])

    async def test_rule_allowed_call_runs_without_request(self) -> None:
        pod, events = await self.client()
        await self.run_turn(pod, "!echo from-bash")
        self.assertEqual(of_type(events, "permissionRequest"), [])
        [result] = of_type(events, "toolResult")
        self.assertFalse(result["isError"], result)
        self.assertIn("from-bash", result["content"])

    async def test_manual_reply_allow_once_then_second_reply_is_unknown(self) -> None:
        pod, events = await self.client()
        stream = pod.events()
        run = asyncio.create_task(pod.run("!touch manual.txt"))
        request = await stream.wait_for(lambda e: e["type"] == "permissionRequest", TIMEOUT)
        self.assertEqual(request["tool"], "bash")
        self.assertEqual([s["subject"] for s in request["subjects"]], ["touch manual.txt"])
        self.assertEqual(request["options"], ["allow_once", "allow_session", "deny"])
        self.assertFalse(self.ws.path("manual.txt").exists())
        self.assertEqual(await pod.reply(request["requestId"], "allow_once"), {})
        result = await asyncio.wait_for(run, TIMEOUT)
        self.assertEqual(result["stopReason"], "end_turn")
        self.assertTrue(self.ws.path("manual.txt").exists())
        [resolved] = of_type(events, "permissionResolved")
        self.assertEqual((resolved["requestId"], resolved["decision"], resolved["by"]), (request["requestId"], "allow", "client"))
        with self.assertRaises(PodError) as ctx:
            await pod.reply(request["requestId"], "deny")
        self.assertEqual(ctx.exception.code, -32004)
        self.assertEqual(ctx.exception.data, {"requestId": request["requestId"], "state": "resolved"})

    async def test_cancel_resolves_pending_request(self) -> None:
        pod, events = await self.client()
        stream = pod.events()
        run = asyncio.create_task(pod.run("!touch never.txt"))
        request = await stream.wait_for(lambda e: e["type"] == "permissionRequest", TIMEOUT)
        self.assertEqual(await pod.cancel(), {"cancelled": True})
        result = await asyncio.wait_for(run, TIMEOUT)
        self.assertEqual(result["stopReason"], "cancelled")
        [resolved] = of_type(events, "permissionResolved")
        self.assertEqual((resolved["requestId"], resolved["by"]), (request["requestId"], "cancel"))
        self.assertFalse(self.ws.path("never.txt").exists())
        self.assertEqual(await pod.cancel(), {"cancelled": False})

    async def test_client_without_approval_never_gets_a_request(self) -> None:
        pod, events = await self.client(approval=False)
        await self.run_turn(pod, "!touch closed.txt")
        self.assertEqual(of_type(events, "permissionRequest"), [])
        self.assertFalse(self.ws.path("closed.txt").exists())
        [result] = of_type(events, "toolResult")
        self.assertTrue(result["isError"])
        self.assertEqual(result["deniedBy"], "permission")
        decisions = [i for i in await pod.history() if i["type"] == "permissionDecision"]
        self.assertEqual([(d["decision"], d["by"]) for d in decisions], [("deny", "failClosed")])


class PolicyFlowTests(PodTestCase):
    POLICY = """
default = "deny"
default_message = "not covered by the policy"

[[rule]]
tool = "bash"
pattern = "touch secret*"
decision = "deny"
message = "secrets stay out"

[[rule]]
tool = "bash"
pattern = "touch *"
decision = "allow_once"

[[rule]]
tool = "bash"
pattern = "mkdir *"
decision = "allow_session"
"""

    async def policy_client(self):
        policy = Policy.from_toml(self.POLICY)
        return await self.client(approver=policy)

    async def test_policy_auto_approves_an_ask(self) -> None:
        pod, events = await self.policy_client()
        await self.run_turn(pod, "!touch created.txt")
        self.assertTrue(self.ws.path("created.txt").exists())
        [request] = of_type(events, "permissionRequest")
        [resolved] = of_type(events, "permissionResolved")
        self.assertEqual((resolved["requestId"], resolved["decision"], resolved["by"]), (request["requestId"], "allow", "client"))
        [result] = of_type(events, "toolResult")
        self.assertFalse(result["isError"], result)

    async def test_policy_auto_denies_with_its_message(self) -> None:
        pod, events = await self.policy_client()
        await self.run_turn(pod, "!touch secret.txt")
        self.assertFalse(self.ws.path("secret.txt").exists())
        [result] = of_type(events, "toolResult")
        self.assertTrue(result["isError"])
        self.assertEqual(result["deniedBy"], "approval")
        self.assertIn("secrets stay out", result["content"])

    async def test_policy_default_denies_unmatched_with_default_message(self) -> None:
        pod, events = await self.policy_client()
        await self.run_turn(pod, "!cp keep.txt copy.txt")
        self.assertFalse(self.ws.path("copy.txt").exists())
        [result] = of_type(events, "toolResult")
        self.assertEqual(result["deniedBy"], "approval")
        self.assertIn("not covered by the policy", result["content"])

    async def test_allow_session_answers_later_identical_asks(self) -> None:
        pod, events = await self.policy_client()
        await self.run_turn(pod, "!mkdir granted")
        self.assertTrue(self.ws.path("granted").is_dir())
        self.assertEqual(len(of_type(events, "permissionRequest")), 1)
        self.ws.path("granted").rmdir()
        events.clear()
        await self.run_turn(pod, "!mkdir granted")
        self.assertTrue(self.ws.path("granted").is_dir())
        self.assertEqual(of_type(events, "permissionRequest"), [])
        [resolved] = of_type(events, "permissionResolved")
        self.assertEqual((resolved["decision"], resolved["by"]), ("allow", "session_grant"))
        grants = [i for i in await pod.history() if i["type"] == "sessionGrant"]
        workspace = str(self.ws.dir.resolve())
        self.assertEqual(
            grants,
            [{"type": "sessionGrant", "tool": "bash", "subjects": ["mkdir granted"], "workspace": workspace}],
        )

    async def test_a_failing_approver_denies_instead_of_hanging(self) -> None:
        def broken(event):
            raise RuntimeError("policy store offline")

        pod, events = await self.client(approver=broken)
        await self.run_turn(pod, "!touch nope.txt")
        self.assertFalse(self.ws.path("nope.txt").exists())
        [result] = of_type(events, "toolResult")
        self.assertEqual(result["deniedBy"], "approval")
        self.assertIn("policy store offline", result["content"])
        self.assertEqual([str(e) for e in pod.approval_errors], ["policy store offline"])

    async def test_allow_once_asks_again(self) -> None:
        pod, events = await self.policy_client()
        await self.run_turn(pod, "!touch twice.txt")
        await self.run_turn(pod, "!touch twice.txt")
        self.assertEqual(len(of_type(events, "permissionRequest")), 2)
        self.assertEqual([e["by"] for e in of_type(events, "permissionResolved")], ["client", "client"])


if __name__ == "__main__":
    unittest.main()
