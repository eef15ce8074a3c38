// `pod acp` driven by the official ACP TypeScript SDK (@agentclientprotocol/sdk): a client
// nobody here wrote, over the real binary's stdin/stdout. Each test starts its own pod in a
// fresh workspace whose pod.toml uses the offline model: a prompt line `!cmd` is a bash call,
// `@tool {json}` a call of that tool. Security cases assert the side effect is absent (the file
// was not created, the editor was never asked for the file), not only the reported decision.

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { Readable, Writable } from "node:stream";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as acp from "@agentclientprotocol/sdk";

const POD = process.env.POD_BIN;
assert.ok(POD, "POD_BIN must name the pod binary");

/**
 * A workspace folder with a pod.toml: `rules` are [tool, pattern, action, message?]. Its user
 * trusts it (`pod trust`), so its allow rules are in force, unless `trusted` is false; `extra`
 * is appended to the manifest.
 */
function workspace(rules, { timeout, trusted = true, extra = "" } = {}) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "pod-acp-")));
  const lines = [
    "[pod]",
    'name = "acp-test"',
    "[model]",
    'provider = "offline"',
    "[permissions]",
    'default_action = "ask"',
  ];
  if (timeout) lines.push(`ask_timeout_secs = ${timeout}`);
  for (const [tool, pattern, action, message] of rules) {
    lines.push("[[permissions.rule]]", `tool = "${tool}"`, `pattern = "${pattern}"`, `action = "${action}"`);
    if (message) lines.push(`message = "${message}"`);
  }
  fs.writeFileSync(path.join(dir, "pod.toml"), lines.join("\n") + "\n" + extra);
  if (trusted) {
    const out = spawnSync(POD, ["trust", dir], { encoding: "utf8" });
    assert.equal(out.status, 0, out.stderr);
  }
  return dir;
}

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "pod-acp-state-"));

// Every pod this file starts; a test that fails before closing its editor must not leave its
// pod running, or the runner waits for it forever.
const children = [];
after(() => children.forEach((child) => child.kill()));

/**
 * One `pod acp` process and an SDK client connected to it. `answer(ctx, n)` answers the n-th
 * permission request; `buffers` are the editor's unsaved texts by absolute path.
 */
class Editor {
  constructor({ answer, readFiles = false, writeFiles = false, buffers = {}, env = {} } = {}) {
    this.answer = answer ?? (() => ({ outcome: { outcome: "selected", optionId: "allow_once" } }));
    this.updates = [];
    this.requests = [];
    this.reads = [];
    this.writes = [];
    this.buffers = buffers;
    this.capabilities = { fs: { readTextFile: readFiles, writeTextFile: writeFiles } };
    this.child = spawn(POD, ["acp", "--state-dir", stateDir], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    children.push(this.child);
    this.stderr = "";
    this.child.stderr.on("data", (d) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
    const app = acp
      .client({ name: "pod-acp-test" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        this.updates.push(params);
      })
      .onRequest(acp.methods.client.session.requestPermission, async (ctx) => {
        this.requests.push(ctx.params);
        return this.answer(ctx, this.requests.length);
      })
      .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
        this.reads.push(params.path);
        const text = this.buffers[params.path] ?? fs.readFileSync(params.path, "utf8");
        return { content: text };
      })
      .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
        this.writes.push([params.path, params.content]);
        this.buffers[params.path] = params.content;
        return {};
      });
    const stream = acp.ndJsonStream(Writable.toWeb(this.child.stdin), Readable.toWeb(this.child.stdout));
    this.connection = app.connect(stream);
    this.agent = this.connection.agent;
  }

  async initialize() {
    return this.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: this.capabilities,
      clientInfo: { name: "pod-acp-test", version: "1.0.0" },
    });
  }

  async newSession(cwd) {
    return this.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  }

  async prompt(sessionId, text) {
    const response = await this.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    // Notifications before the response are handled before it resolves; one more turn of the
    // event loop for good measure.
    await new Promise((r) => setImmediate(r));
    return response;
  }

  /** The updates of `sessionId` of kind `kind`. */
  of(sessionId, kind) {
    return this.updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind).map((u) => u.update);
  }

  /** The last tool_call_update with a final status for each tool call id. */
  results(sessionId) {
    const out = {};
    for (const u of this.of(sessionId, "tool_call_update")) {
      if (u.status === "completed" || u.status === "failed") out[u.toolCallId] = u;
    }
    return out;
  }

  /** The final update of the call whose title is `title`. */
  resultOf(sessionId, title) {
    const call = this.of(sessionId, "tool_call").find((c) => c.title === title);
    assert.ok(call, `no tool_call titled ${title}: ${JSON.stringify(this.of(sessionId, "tool_call"))}`);
    const result = this.results(sessionId)[call.toolCallId];
    assert.ok(result, `no result for ${title}`);
    return result;
  }

  async close() {
    this.connection.close();
    this.child.stdin.end();
    const code = await this.exited;
    assert.equal(code, 0, this.stderr);
  }
}

const text = (update) => (update.content ?? []).map((c) => c.content?.text ?? "").join("\n");
const selected = (optionId) => () => ({ outcome: { outcome: "selected", optionId } });

test("initialize reports pod, v1, loadSession and embedded context", async () => {
  const editor = new Editor();
  const init = await editor.initialize();
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentInfo.name, "pod");
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
  assert.equal(init.agentCapabilities.promptCapabilities.image, false);
  assert.deepEqual(init.authMethods, []);
  await editor.close();
});

test("a new session has an id, its modes and pod's details in _meta", async () => {
  const ws = workspace([]);
  const editor = new Editor();
  await editor.initialize();
  const session = await editor.newSession(ws);
  assert.match(session.sessionId, /^[0-9a-f-]{36}$/);
  assert.equal(session.modes.currentModeId, "default");
  assert.deepEqual(
    session.modes.availableModes.map((m) => m.id),
    // `auto` only where the kernel bounds every call (the namespace sandbox and the exec gate).
    ["default", "read-only", "accept-edits", "unattended"],
  );
  assert.ok(session.modes.availableModes.every((m) => m.description.length > 0));
  assert.equal(session._meta.pod.workspace, ws);
  assert.equal(session._meta.pod.permissions.askMode, "client");
  await editor.close();
});

test("a denied command is a failed update naming the rule, and the turn goes on", async () => {
  const ws = workspace([
    ["bash", "rm *", "deny", "No deleting here."],
    ["bash", "echo *", "allow"],
  ]);
  fs.writeFileSync(path.join(ws, "victim"), "keep me");
  const editor = new Editor();
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const response = await editor.prompt(sessionId, "!rm -rf victim\n!echo after");
  assert.equal(response.stopReason, "end_turn");
  const denied = editor.resultOf(sessionId, "rm -rf victim");
  assert.equal(denied.status, "failed");
  assert.match(text(denied), /permission denied: rule 1 \(bash "rm \*" deny\) for bash `rm -rf victim`/);
  assert.match(text(denied), /No deleting here\./);
  assert.equal(denied._meta.pod.deniedBy, "permission");
  const after = editor.resultOf(sessionId, "echo after");
  assert.equal(after.status, "completed");
  assert.match(text(after), /after/);
  assert.equal(editor.requests.length, 0, "a deny is never asked");
  assert.equal(fs.readFileSync(path.join(ws, "victim"), "utf8"), "keep me");
  const kinds = editor.of(sessionId, "tool_call").map((c) => c.kind);
  assert.deepEqual(kinds, ["execute", "execute"]);
  await editor.close();
});

test("an ask answered allow_once runs the call, in_progress then completed", async () => {
  const ws = workspace([]);
  const editor = new Editor({ answer: selected("allow_once") });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  await editor.prompt(sessionId, "!touch made-once");
  assert.equal(editor.requests.length, 1);
  const [request] = editor.requests;
  assert.equal(request.sessionId, sessionId);
  assert.deepEqual(
    request.options.map((o) => [o.optionId, o.kind]),
    [
      ["allow_once", "allow_once"],
      ["allow_always", "allow_always"],
      ["reject_once", "reject_once"],
    ],
  );
  assert.match(text(request.toolCall), /approval required: default_action = "ask"/);
  assert.equal(request._meta.pod.subjects[0].subject, "touch made-once");
  const call = editor.of(sessionId, "tool_call")[0];
  const statuses = editor.of(sessionId, "tool_call_update").filter((u) => u.toolCallId === call.toolCallId).map((u) => u.status);
  assert.deepEqual(statuses, ["in_progress", "completed"]);
  assert.ok(fs.existsSync(path.join(ws, "made-once")));
  await editor.close();
});

test("allow_always is a session grant: the second identical call does not ask", async () => {
  const ws = workspace([]);
  const editor = new Editor({ answer: selected("allow_always") });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  await editor.prompt(sessionId, "!touch always");
  assert.ok(fs.existsSync(path.join(ws, "always")));
  fs.rmSync(path.join(ws, "always"));
  await editor.prompt(sessionId, "!touch always");
  assert.equal(editor.requests.length, 1, "asked again after allow_always");
  assert.ok(fs.existsSync(path.join(ws, "always")), "the granted call did not run");
  // A different command still asks.
  await editor.prompt(sessionId, "!touch other");
  assert.equal(editor.requests.length, 2);
  await editor.close();
});

test("reject_once denies: failed update, nothing written", async () => {
  const ws = workspace([]);
  const editor = new Editor({ answer: selected("reject_once") });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const response = await editor.prompt(sessionId, "!touch never");
  assert.equal(response.stopReason, "end_turn");
  const result = editor.resultOf(sessionId, "touch never");
  assert.equal(result.status, "failed");
  assert.match(text(result), /permission denied by the user/);
  assert.equal(result._meta.pod.deniedBy, "approval");
  assert.ok(!fs.existsSync(path.join(ws, "never")));
  await editor.close();
});

test("an option that was not offered denies", async () => {
  const ws = workspace([]);
  const editor = new Editor({ answer: selected("yes-please") });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  await editor.prompt(sessionId, "!touch unoffered");
  const result = editor.resultOf(sessionId, "touch unoffered");
  assert.equal(result.status, "failed");
  assert.match(text(result), /could not be used \(it selected option "yes-please", which was not offered\)/);
  assert.ok(!fs.existsSync(path.join(ws, "unoffered")));
  await editor.close();
});

test("a client that answers the permission request with an error is denied", async () => {
  const ws = workspace([]);
  const editor = new Editor({
    answer: () => {
      throw new acp.RequestError(-32603, "the dialog crashed");
    },
  });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const response = await editor.prompt(sessionId, "!touch on-error");
  assert.equal(response.stopReason, "end_turn");
  const result = editor.resultOf(sessionId, "touch on-error");
  assert.equal(result.status, "failed");
  assert.match(text(result), /could not be used \(the client answered with error -32603: the dialog crashed\)/);
  assert.ok(!fs.existsSync(path.join(ws, "on-error")));
  await editor.close();
});

test("cancel while a permission request is pending: cancelled, the request withdrawn, nothing run", async () => {
  const ws = workspace([]);
  let withdrawn = false;
  const editor = new Editor({
    answer: async (ctx) => {
      await ctx.agent.notify(acp.methods.agent.session.cancel, { sessionId: ctx.params.sessionId });
      // pod withdraws the request with $/cancel_request; the SDK aborts this handler's signal.
      await new Promise((resolve) => {
        if (ctx.signal.aborted) return resolve();
        ctx.signal.addEventListener("abort", resolve);
        setTimeout(resolve, 5000);
      });
      withdrawn = ctx.signal.aborted;
      return { outcome: { outcome: "cancelled" } };
    },
  });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const response = await editor.prompt(sessionId, "!touch cancelled-file");
  assert.equal(response.stopReason, "cancelled");
  assert.ok(withdrawn, "the pending request was not withdrawn with $/cancel_request");
  const result = editor.resultOf(sessionId, "touch cancelled-file");
  assert.equal(result.status, "failed");
  assert.ok(!fs.existsSync(path.join(ws, "cancelled-file")));
  // The session goes on.
  const next = await editor.prompt(sessionId, "hello again");
  assert.equal(next.stopReason, "end_turn");
  await editor.close();
});

test("an unanswered ask times out: denied, and the client's request withdrawn", async () => {
  const ws = workspace([], { timeout: 1 });
  let withdrawn = false;
  const editor = new Editor({
    answer: async (ctx) => {
      await new Promise((resolve) => {
        ctx.signal.addEventListener("abort", resolve);
        setTimeout(resolve, 10000);
      });
      withdrawn = ctx.signal.aborted;
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    },
  });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  await editor.prompt(sessionId, "!touch too-late");
  const result = editor.resultOf(sessionId, "touch too-late");
  assert.equal(result.status, "failed");
  assert.match(text(result), /nobody answered the approval request within 1 s/);
  await new Promise((r) => setTimeout(r, 100));
  assert.ok(withdrawn, "the timed-out request was not withdrawn");
  assert.ok(!fs.existsSync(path.join(ws, "too-late")), "a late allow ran the call");
  await editor.close();
});

test("session/load replays history and restores the session grant", async () => {
  const ws = workspace([]);
  const first = new Editor({ answer: selected("allow_always") });
  await first.initialize();
  const { sessionId } = await first.newSession(ws);
  await first.prompt(sessionId, "!touch granted");
  await first.prompt(sessionId, "remember this line");
  await first.close();
  fs.rmSync(path.join(ws, "granted"));

  const second = new Editor({ answer: selected("reject_once") });
  const init = await second.initialize();
  assert.equal(init.agentCapabilities.loadSession, true);
  const loaded = await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: ws, mcpServers: [] });
  assert.equal(loaded.modes.currentModeId, "default");
  assert.equal(loaded._meta.pod.resumed, true);
  assert.equal(loaded._meta.pod.droppedGrants, 0);
  const users = second.of(sessionId, "user_message_chunk").map((u) => u.content.text);
  assert.deepEqual(users, ["!touch granted", "remember this line"]);
  assert.equal(second.of(sessionId, "tool_call")[0].title, "touch granted");
  assert.equal(Object.values(second.results(sessionId))[0].status, "completed");
  assert.ok(second.of(sessionId, "agent_message_chunk").some((u) => u.content.text === "remember this line"));
  // The grant holds after the load: no request (which this client would reject).
  await second.prompt(sessionId, "!touch granted");
  assert.equal(second.requests.length, 0);
  assert.ok(fs.existsSync(path.join(ws, "granted")));
  await second.close();
});

test("two sessions on one connection run side by side, each in its own workspace", async () => {
  const a = workspace([]);
  const b = workspace([]);
  const editor = new Editor({ answer: selected("allow_once") });
  await editor.initialize();
  const one = await editor.newSession(a);
  const two = await editor.newSession(b);
  assert.notEqual(one.sessionId, two.sessionId);
  const [ra, rb] = await Promise.all([
    editor.prompt(one.sessionId, "!touch in-a"),
    editor.prompt(two.sessionId, "!touch in-b"),
  ]);
  assert.equal(ra.stopReason, "end_turn");
  assert.equal(rb.stopReason, "end_turn");
  assert.ok(fs.existsSync(path.join(a, "in-a")) && !fs.existsSync(path.join(a, "in-b")));
  assert.ok(fs.existsSync(path.join(b, "in-b")) && !fs.existsSync(path.join(b, "in-a")));
  assert.deepEqual(editor.requests.map((r) => r.sessionId).sort(), [one.sessionId, two.sessionId].sort());
  assert.equal(editor.resultOf(one.sessionId, "touch in-a").status, "completed");
  assert.equal(editor.resultOf(two.sessionId, "touch in-b").status, "completed");
  await editor.close();
});

test("a read deny rule holds when the editor serves files: fs/read_text_file is never called for it", async () => {
  const ws = workspace([
    ["read", "*.env", "deny"],
    ["file_write", "*.env", "deny"],
    ["read", "*", "allow"],
    ["file_write", "*", "allow"],
  ]);
  fs.writeFileSync(path.join(ws, ".env"), "SECRET=on-disk");
  fs.writeFileSync(path.join(ws, "notes.txt"), "text on disk\n");
  const notes = path.join(ws, "notes.txt");
  const env = path.join(ws, ".env");
  const editor = new Editor({
    readFiles: true,
    writeFiles: true,
    buffers: { [notes]: "unsaved buffer text\n", [env]: "SECRET=in-buffer" },
  });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  await editor.prompt(
    sessionId,
    [
      '@read {"path":".env"}',
      '@read {"path":"notes.txt"}',
      '@file_write {"path":".env","content":"SECRET=overwritten"}',
      '@file_write {"path":"out.txt","content":"from the model"}',
    ].join("\n"),
  );
  assert.deepEqual(editor.reads, [notes], "the editor was asked for a denied file");
  const denied = editor.resultOf(sessionId, "read .env");
  assert.equal(denied.status, "failed");
  assert.match(text(denied), /rule 1 \(read "\*\.env" deny\)/);
  assert.doesNotMatch(JSON.stringify(editor.updates), /SECRET=in-buffer|SECRET=on-disk/);
  const read = editor.resultOf(sessionId, "read notes.txt");
  assert.equal(read.status, "completed");
  assert.match(text(read), /unsaved buffer text/, "the model did not see the editor's buffer");
  assert.deepEqual(editor.writes, [[path.join(ws, "out.txt"), "from the model"]]);
  assert.equal(editor.resultOf(sessionId, "file_write .env").status, "failed");
  assert.equal(editor.buffers[env], "SECRET=in-buffer");
  assert.equal(fs.readFileSync(env, "utf8"), "SECRET=on-disk");
  const write = editor.resultOf(sessionId, "file_write out.txt");
  assert.ok(write.content.some((c) => c.type === "diff" && c.newText === "from the model"));
  await editor.close();
});

test("read-only mode denies commands and writes, and default restores the rules", async () => {
  const ws = workspace([
    ["bash", "touch *", "allow"],
    ["read", "*", "allow"],
  ]);
  fs.writeFileSync(path.join(ws, "notes.txt"), "hello\n");
  const editor = new Editor();
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  await editor.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "read-only" });
  await editor.prompt(sessionId, '!touch ro\n@read {"path":"notes.txt"}');
  const touched = editor.resultOf(sessionId, "touch ro");
  assert.equal(touched.status, "failed");
  assert.match(text(touched), /read-only mode/);
  assert.ok(!fs.existsSync(path.join(ws, "ro")));
  assert.equal(editor.resultOf(sessionId, "read notes.txt").status, "completed");
  await assert.rejects(
    editor.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "yolo" }),
    (e) => e.code === -32602,
  );
  await editor.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "default" });
  editor.updates.length = 0;
  await editor.prompt(sessionId, "!touch ro");
  assert.ok(fs.existsSync(path.join(ws, "ro")));
  await editor.close();
});

// An MCP server (stdio) that writes MCP_STARTED in its folder when it starts, with one tool,
// `env`, answering with its environment.
const MARKER_SERVER = `import json, os, sys
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "MCP_STARTED"), "w").write("x")
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method = m.get("method")
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "helper", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [{"name": "env", "inputSchema": {"type": "object"},
                        "annotations": {"readOnlyHint": True}}]}
    elif method == "tools/call":
        r = {"content": [{"type": "text", "text": json.dumps(dict(os.environ))}]}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
`;

test("an untrusted folder's MCP server never starts until trust/apply, which reopens the session", async () => {
  const dir = workspace([["mcp__helper__*", "*", "allow"]], {
    trusted: false,
    extra: '[mcp.servers.helper]\ncommand = "python3"\nargs = ["server.py"]\n',
  });
  fs.writeFileSync(path.join(dir, "server.py"), MARKER_SERVER);
  const editor = new Editor({ env: { ANTHROPIC_API_KEY: "sk-ant-secret-one", GITHUB_TOKEN: "ghp-secret" } });
  const init = await editor.initialize();
  assert.deepEqual(init.agentCapabilities.sessionCapabilities.workspaceTrust, {});
  const session = await editor.newSession(dir);
  assert.equal(session.workspaceTrust.status, "untrusted");
  assert.deepEqual(session.workspaceTrust.details.availableDecisions, ["trust_cwd", "trust_session", "decline"]);
  assert.deepEqual(session.workspaceTrust.details.ignoredPaths, [path.join(dir, "pod.toml")]);
  const ignored = session._meta.pod.workspaceTrust.ignored.map((i) => i.what);
  assert.ok(ignored.includes('starts MCP server "helper": python3 server.py'), JSON.stringify(ignored));
  assert.ok(!fs.existsSync(path.join(dir, "MCP_STARTED")), "the untrusted server started");
  assert.ok(!session._meta.pod.tools.includes("mcp__helper__env"));

  const applied = await editor.agent.request("trust/apply", {
    cwd: dir,
    decision: "trust_cwd",
    sessionId: session.sessionId,
  });
  assert.equal(applied.workspaceTrust.status, "trusted");
  assert.ok(fs.existsSync(path.join(dir, "MCP_STARTED")), "trusting did not start the server");
  await editor.prompt(session.sessionId, "@mcp__helper__env {}");
  const result = editor.resultOf(session.sessionId, "mcp__helper__env {}");
  assert.equal(result.status, "completed", JSON.stringify(result));
  const output = text(result);
  assert.ok(output.includes("PATH"), output);
  assert.ok(!output.includes("sk-ant-secret-one") && !output.includes("ghp-secret"), output);
  // A decision that is no longer offered is refused.
  await assert.rejects(
    editor.agent.request("trust/apply", { cwd: dir, decision: "trust_cwd", sessionId: session.sessionId }),
    /not available/,
  );
  await editor.close();
});

test("accept-edits writes inside the workspace without asking; a deny rule still holds", async () => {
  const ws = workspace([["file_write", "*.env", "deny"]]);
  const editor = new Editor({ answer: selected("reject_once") });
  await editor.initialize();
  const session = await editor.newSession(ws);
  await editor.agent.request(acp.methods.agent.session.setMode, { sessionId: session.sessionId, modeId: "accept-edits" });
  await editor.prompt(session.sessionId, '@file_write {"path":"notes.md","content":"hello"}\n@file_write {"path":"x.env","content":"K=1"}');
  assert.equal(editor.requests.length, 0, JSON.stringify(editor.requests));
  assert.equal(fs.readFileSync(path.join(ws, "notes.md"), "utf8"), "hello");
  assert.ok(!fs.existsSync(path.join(ws, "x.env")), "the deny rule did not hold");
  await assert.rejects(
    editor.agent.request(acp.methods.agent.session.setMode, { sessionId: session.sessionId, modeId: "auto" }),
    /mode auto: calls cannot run unasked here/,
  );
  await editor.close();
});

test("session/resume after the process restarts keeps the session's grants, without a replay", async () => {
  const ws = workspace([]);
  const first = new Editor({ answer: selected("allow_always") });
  const init = await first.initialize();
  assert.ok(init.agentCapabilities.sessionCapabilities.resume, JSON.stringify(init.agentCapabilities));
  assert.ok(init.agentCapabilities.sessionCapabilities.close);
  const { sessionId } = await first.newSession(ws);
  await first.prompt(sessionId, "!touch resumed");
  await first.close();
  fs.rmSync(path.join(ws, "resumed"));

  const second = new Editor({ answer: selected("reject_once") });
  await second.initialize();
  const resumed = await second.agent.request(acp.methods.agent.session.resume, { sessionId, cwd: ws, mcpServers: [] });
  assert.equal(resumed._meta.pod.resumed, true);
  assert.equal(resumed.modes.currentModeId, "default");
  // No replay: the editor kept the conversation.
  assert.equal(second.updates.length, 0, JSON.stringify(second.updates));
  // The grant survived the restart: no request (which this client would reject).
  await second.prompt(sessionId, "!touch resumed");
  assert.equal(second.requests.length, 0);
  assert.ok(fs.existsSync(path.join(ws, "resumed")));
  await second.close();
});

test("session/close ends a session: its pending ask is denied and nothing runs", async () => {
  const ws = workspace([]);
  let asked;
  const seen = new Promise((resolve) => (asked = resolve));
  // This client never answers: it closes the session instead.
  const editor = new Editor({
    answer: () => {
      asked();
      return new Promise(() => {});
    },
  });
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  const turn = editor.prompt(sessionId, "!touch after-close");
  await seen;
  await editor.agent.request(acp.methods.agent.session.close, { sessionId });
  const response = await turn;
  assert.equal(response.stopReason, "cancelled");
  assert.ok(!fs.existsSync(path.join(ws, "after-close")));
  // The session left the connection: prompting it is an error naming it.
  await assert.rejects(editor.prompt(sessionId, "hello"), (e) => String(e.message).includes(`no session ${sessionId}`));
  const again = await editor.agent.request(acp.methods.agent.session.load, { sessionId, cwd: ws, mcpServers: [] });
  assert.equal(again._meta.pod.resumed, true);
  await editor.close();
});

test("the mode is a session config option; setting it there changes what runs", async () => {
  const ws = workspace([]);
  const editor = new Editor({ answer: selected("reject_once") });
  await editor.initialize();
  const session = await editor.newSession(ws);
  const mode = session.configOptions.find((o) => o.id === "mode");
  assert.ok(mode, JSON.stringify(session.configOptions));
  assert.equal(mode.category, "mode");
  assert.equal(mode.currentValue, "default");
  assert.ok(mode.options.some((o) => o.value === "accept-edits"));
  const set = await editor.agent.request(acp.methods.agent.session.setConfigOption, {
    sessionId: session.sessionId,
    configId: "mode",
    value: "accept-edits",
  });
  assert.equal(set.configOptions.find((o) => o.id === "mode").currentValue, "accept-edits");
  // accept-edits: a write inside the workspace runs without asking (this client rejects asks).
  await editor.prompt(session.sessionId, '@file_write {"path": "edited.txt", "content": "x"}');
  assert.equal(editor.requests.length, 0);
  assert.equal(fs.readFileSync(path.join(ws, "edited.txt"), "utf8"), "x");
  await assert.rejects(
    editor.agent.request(acp.methods.agent.session.setConfigOption, {
      sessionId: session.sessionId,
      configId: "model",
      value: "x",
    }),
    /unknown config option/,
  );
  await editor.close();
});

test("a plan call is ACP's plan update, not a tool call, live and in a replay", async () => {
  const ws = workspace([], { extra: '[tools]\nenabled = ["bash", "read", "plan"]\n' });
  const steps = {
    entries: [
      { content: "Read the code", status: "completed" },
      { content: "Fix the bug", status: "in_progress", priority: "high" },
      { content: "Run the tests", status: "pending", priority: "low" },
    ],
  };
  const editor = new Editor();
  await editor.initialize();
  const { sessionId } = await editor.newSession(ws);
  await editor.prompt(sessionId, `@plan ${JSON.stringify(steps)}`);
  const plans = editor.of(sessionId, "plan");
  assert.equal(plans.length, 1, JSON.stringify(editor.updates));
  assert.deepEqual(
    plans[0].entries.map((e) => [e.content, e.status, e.priority]),
    [
      ["Read the code", "completed", "medium"],
      ["Fix the bug", "in_progress", "high"],
      ["Run the tests", "pending", "low"],
    ],
  );
  assert.equal(editor.of(sessionId, "tool_call").length, 0);
  assert.equal(editor.of(sessionId, "tool_call_update").length, 0);
  // A plan that is not one (a status ACP has no word for) is an error for the model, and no plan.
  await editor.prompt(sessionId, '@plan {"entries": [{"content": "x", "status": "started"}]}');
  assert.equal(editor.of(sessionId, "plan").length, 1);
  await editor.close();

  const second = new Editor();
  await second.initialize();
  await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: ws, mcpServers: [] });
  const replayed = second.of(sessionId, "plan");
  assert.equal(replayed.length, 1);
  assert.equal(replayed[0].entries[1].content, "Fix the bug");
  await second.close();
});
