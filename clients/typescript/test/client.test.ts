import assert from "node:assert/strict";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ErrorCodes, PodClient, PodError } from "../src/client";
import { MANIFEST_RULES, POD_BIN, ofType, startPod, within, workspace } from "./helpers";

test("initialize with approval reports the session, tools and askMode client", async (t) => {
  const ws = workspace(t);
  const { pod } = startPod(t, ws);
  const r = await within(pod.initialize({ approval: true }));
  assert.equal(r.protocolVersion, 1);
  assert.equal(r.podInfo.name, "ts-client-tests"); // the manifest's [pod] name
  assert.equal(r.session.resumed, false);
  assert.ok(r.session.id.length > 0);
  assert.deepEqual(r.tools.map((tool) => tool.name).sort(), ["bash", "file_write", "read"]);
  const { modes, ...permissions } = r.permissions;
  assert.deepEqual(permissions, { enabled: true, defaultAction: "ask", rules: MANIFEST_RULES, askMode: "client", mode: "default" });
  // The modes this machine allows: at least these; `auto` only where the kernel bounds calls.
  for (const m of ["default", "read-only", "accept-edits", "unattended"] as const) assert.ok(modes?.includes(m), `${m} in ${modes}`);
});

test("errors come back as PodError with code and data; shutdown exits 0", async (t) => {
  const ws = workspace(t);
  const { pod } = startPod(t, ws);
  await assert.rejects(within(pod.run("hi")), (err: unknown) => {
    assert.ok(err instanceof PodError);
    assert.equal(err.code, ErrorCodes.NotInitialized);
    assert.equal(err.codeName, "NotInitialized");
    return true;
  });
  await assert.rejects(within(pod.initialize({ protocolVersion: 7 })), (err: unknown) => {
    assert.ok(err instanceof PodError);
    assert.equal(err.code, ErrorCodes.UnsupportedProtocolVersion);
    assert.deepEqual(err.data, { supported: [1] });
    return true;
  });
  await within(pod.initialize());
  assert.deepEqual(await within(pod.shutdown()), {});
  assert.equal(await within(pod.exited), 0);
});

test("a rule-denied call does not run and needs no approval", async (t) => {
  const ws = workspace(t);
  const { pod, events } = startPod(t, ws);
  await within(pod.initialize());
  const result = await within(pod.run("!rm keep.txt"));
  assert.equal(result.stopReason, "end_turn");
  assert.equal(readFileSync(ws.file("keep.txt"), "utf8"), "keep me\n");
  assert.deepEqual(ofType(events, "permissionRequest"), []);
  const [toolResult, ...more] = ofType(events, "toolResult");
  assert.equal(more.length, 0);
  assert.equal(toolResult.isError, true);
  assert.equal(toolResult.deniedBy, "permission");
  assert.match(toolResult.content, /Deleting files is not allowed/);
  const decisions = (await within(pod.history())).items.filter((i) => i.type === "permissionDecision");
  assert.deepEqual(
    decisions.map((d) => (d.type === "permissionDecision" ? [d.decision, d.by] : [])),
    [["deny", "rule"]],
  );
});

test("an ask answered allow_once runs the call; a second reply is UnknownPermissionRequest", async (t) => {
  const ws = workspace(t);
  const { pod, events } = startPod(t, ws);
  await within(pod.initialize());
  const requested = pod.waitForEvent("permissionRequest");
  const turn = pod.run("!touch approved.txt");
  const request = await requested;
  assert.equal(request.tool, "bash");
  assert.deepEqual(request.input, { command: "touch approved.txt" });
  assert.deepEqual(request.subjects.map((s) => [s.tool, s.subject, s.action]), [["bash", "touch approved.txt", "ask"]]);
  assert.deepEqual(request.options, ["allow_once", "allow_session", "deny"]);
  assert.equal(existsSync(ws.file("approved.txt")), false, "must not run before the reply");
  assert.deepEqual(await within(pod.permissionReply({ requestId: request.requestId, decision: "allow_once" })), {});
  const result = await within(turn);
  assert.equal(result.stopReason, "end_turn");
  assert.equal(existsSync(ws.file("approved.txt")), true);
  const resolved = ofType(events, "permissionResolved");
  assert.deepEqual(resolved.map((r) => [r.requestId, r.decision, r.by]), [[request.requestId, "allow", "client"]]);
  const [toolResult] = ofType(events, "toolResult");
  assert.equal(toolResult.isError, false);
  // The run response comes after turnEnded and status idle.
  const types = events.map((e) => e.type);
  assert.equal(types.at(-2), "turnEnded");
  assert.deepEqual(events.at(-1), { type: "status", state: "idle", mode: "default" });
  await assert.rejects(pod.permissionReply({ requestId: request.requestId, decision: "deny" }), (err: unknown) => {
    assert.ok(err instanceof PodError);
    assert.equal(err.code, ErrorCodes.UnknownPermissionRequest);
    assert.deepEqual(err.data, { requestId: request.requestId, state: "resolved" });
    return true;
  });
});

test("an ask denied with a message: the call does not run and the model sees the message", async (t) => {
  const ws = workspace(t);
  const { pod, events } = startPod(t, ws);
  await within(pod.initialize());
  const requested = pod.waitForEvent("permissionRequest");
  const turn = pod.run("!touch refused.txt");
  const request = await requested;
  await within(pod.permissionReply({ requestId: request.requestId, decision: "deny", message: "not in this repo" }));
  assert.equal((await within(turn)).stopReason, "end_turn");
  assert.equal(existsSync(ws.file("refused.txt")), false);
  const [resolved] = ofType(events, "permissionResolved");
  assert.deepEqual([resolved.decision, resolved.by], ["deny", "client"]);
  const [toolResult] = ofType(events, "toolResult");
  assert.equal(toolResult.isError, true);
  assert.equal(toolResult.deniedBy, "approval");
  assert.match(toolResult.content, /not in this repo/);
});

test("a decision outside the options is InvalidParams and leaves the request pending", async (t) => {
  const ws = workspace(t);
  const { pod } = startPod(t, ws);
  await within(pod.initialize());
  const requested = pod.waitForEvent("permissionRequest");
  const turn = pod.run("!touch later.txt");
  const request = await requested;
  await assert.rejects(
    pod.permissionReply({ requestId: request.requestId, decision: "maybe" as never }),
    (err: unknown) => err instanceof PodError && err.code === ErrorCodes.InvalidParams,
  );
  await within(pod.permissionReply({ requestId: request.requestId, decision: "allow_once" }));
  assert.equal((await within(turn)).stopReason, "end_turn");
  assert.equal(existsSync(ws.file("later.txt")), true);
});

test("allow_session from an approver: the identical call later resolves by session grant", async (t) => {
  const ws = workspace(t);
  let asked = 0;
  const { pod, events } = startPod(t, ws, () => {
    asked += 1;
    return { decision: "allow_session" };
  });
  await within(pod.initialize());
  await within(pod.run("!touch granted.txt"));
  await within(pod.run("!touch granted.txt"));
  assert.equal(asked, 1);
  assert.equal(ofType(events, "permissionRequest").length, 1);
  assert.deepEqual(ofType(events, "permissionResolved").map((r) => r.by), ["client", "session_grant"]);
  assert.deepEqual(ofType(events, "toolResult").map((r) => r.isError), [false, false]);
});

test("an approver that throws denies the call instead of leaving it pending", async (t) => {
  const ws = workspace(t);
  const { pod, events } = startPod(t, ws, () => {
    throw new Error("policy store offline");
  });
  await within(pod.initialize());
  assert.equal((await within(pod.run("!touch nope.txt"))).stopReason, "end_turn");
  assert.equal(existsSync(ws.file("nope.txt")), false);
  const [toolResult] = ofType(events, "toolResult");
  assert.equal(toolResult.deniedBy, "approval");
  assert.match(toolResult.content, /policy store offline/);
  assert.equal(pod.approvalErrors.length, 1);
});

test("cancel while a request is pending: resolved by cancel, run answers cancelled", async (t) => {
  const ws = workspace(t);
  const { pod, events } = startPod(t, ws);
  await within(pod.initialize());
  const requested = pod.waitForEvent("permissionRequest");
  const turn = pod.run("!touch never.txt");
  const request = await requested;
  assert.deepEqual(await within(pod.cancel()), { cancelled: true });
  assert.equal((await within(turn)).stopReason, "cancelled");
  const [resolved] = ofType(events, "permissionResolved");
  assert.deepEqual([resolved.requestId, resolved.by], [request.requestId, "cancel"]);
  assert.equal(existsSync(ws.file("never.txt")), false);
});

test("a client without approval never receives a permissionRequest; the ask fails closed", async (t) => {
  const ws = workspace(t);
  const { pod, events } = startPod(t, ws);
  const init = await within(pod.initialize({ approval: false }));
  assert.equal(init.permissions.askMode, "failClosed");
  assert.equal((await within(pod.run("!touch closed.txt"))).stopReason, "end_turn");
  assert.deepEqual(ofType(events, "permissionRequest"), []);
  assert.equal(existsSync(ws.file("closed.txt")), false);
  const [toolResult] = ofType(events, "toolResult");
  assert.equal(toolResult.isError, true);
  assert.equal(toolResult.deniedBy, "permission");
});

test("plain text is echoed through textDelta events", async (t) => {
  const ws = workspace(t);
  const { pod, events } = startPod(t, ws);
  await within(pod.initialize());
  const result = await within(pod.run([{ type: "text", text: "hello from ts" }]));
  const text = ofType(events, "textDelta").map((e) => e.text).join("");
  assert.match(text, /hello from ts/);
  const items = (await within(pod.history())).items;
  assert.deepEqual(items[0], { type: "userMessage", turnId: result.turnId, text: "hello from ts" });
});

test("a pod that cannot start rejects requests instead of hanging", async (t) => {
  const pod = PodClient.spawn({ podBin: POD_BIN, manifest: "/nonexistent/pod.toml" });
  t.after(() => pod.dispose());
  await assert.rejects(within(pod.initialize()));
  assert.notEqual(await within(pod.exited), 0);
  assert.ok(pod.stderrTail.join("\n").includes("/nonexistent/pod.toml"), pod.stderrTail.join("\n"));
});

test("the wire uses Content-Length framing both ways", async (t) => {
  const ws = workspace(t);
  // A wrapper that records both directions of the pod's stdio.
  const wrapper = path.join(ws.dir, "recording-pod.sh");
  writeFileSync(
    wrapper,
    `#!/usr/bin/env bash\ntee "${ws.dir}/in.log" | "${POD_BIN}" "$@" | tee "${ws.dir}/out.log"\n`,
  );
  chmodSync(wrapper, 0o755);
  const pod = PodClient.spawn({ podBin: wrapper, manifest: ws.manifest, cwd: ws.dir });
  t.after(() => pod.dispose());
  await within(pod.initialize());
  await within(pod.run("framed"));
  assert.equal(await within(pod.dispose()), 0);
  const sent = readFileSync(ws.file("in.log"), "utf8");
  const received = readFileSync(ws.file("out.log"), "utf8");
  for (const wire of [sent, received]) {
    assert.match(wire, /^Content-Length: \d+\r\n\r\n\{/);
    // Every message is framed: body lengths add up to the whole stream.
    let rest = Buffer.from(wire, "utf8");
    let messages = 0;
    while (rest.length > 0) {
      const text = rest.toString("latin1");
      const m = /^Content-Length: (\d+)\r\n(?:[^\r\n]+\r\n)*\r\n/.exec(text);
      assert.ok(m, `unframed bytes: ${text.slice(0, 80)}`);
      const body = rest.subarray(m[0].length, m[0].length + Number(m[1]));
      assert.equal(JSON.parse(body.toString("utf8")).jsonrpc, "2.0");
      rest = rest.subarray(m[0].length + Number(m[1]));
      messages += 1;
    }
    assert.ok(messages >= 3, `only ${messages} messages`);
  }
});
