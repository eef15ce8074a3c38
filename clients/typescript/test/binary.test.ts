import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test, type TestContext } from "node:test";
import { findPodBinary, PodNotFoundError } from "../src/binary";
import { PodClient, PodConnectionError } from "../src/client";
import { POD_BIN, within, workspace } from "./helpers";

/** Puts variables back (assigning `undefined` to process.env would store "undefined"). */
function restoreEnv(saved: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}

function executable(file: string, body = "#!/bin/sh\nexit 0\n"): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, body);
  chmodSync(file, 0o755);
  return file;
}

/** A pod repository with both builds, a folder on PATH, a chosen binary, and a folder outside. */
function layout(t: TestContext) {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), "pod-bin-")));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const repo = path.join(root, "repo");
  mkdirSync(path.join(repo, "src", "deep"), { recursive: true });
  writeFileSync(
    path.join(repo, "Cargo.toml"),
    '[package]\nkeywords = ["agent", "rpc"]\nname = "pod" # the crate\nversion = "0.1.0"\n\n[dependencies]\nserde = "1"\n',
  );
  const outside = path.join(root, "elsewhere");
  mkdirSync(outside);
  return {
    root,
    repo,
    deep: path.join(repo, "src", "deep"),
    outside,
    release: executable(path.join(repo, "target", "release", "pod")),
    debug: executable(path.join(repo, "target", "debug", "pod")),
    onPath: executable(path.join(root, "bin", "pod")),
    chosen: executable(path.join(root, "chosen", "my-pod")),
  };
}

test("the order is POD_BIN, then PATH, then target/release, then target/debug", (t) => {
  const l = layout(t);
  const PATH = path.dirname(l.onPath);
  assert.equal(findPodBinary({ env: { POD_BIN: l.chosen, PATH }, cwd: l.deep }), l.chosen);
  assert.equal(findPodBinary({ env: { PATH }, cwd: l.deep }), l.onPath);
  assert.equal(findPodBinary({ env: { PATH: "" }, cwd: l.deep }), l.release);
  unlinkSync(l.release);
  assert.equal(findPodBinary({ env: { PATH: "" }, cwd: l.deep }), l.debug);
  unlinkSync(l.debug);
  assert.throws(
    () => findPodBinary({ env: { PATH: "" }, cwd: l.deep }),
    (err: unknown) => {
      assert.ok(err instanceof PodNotFoundError);
      assert.match(err.message, /POD_BIN is not set/);
      assert.ok(err.message.includes(`${l.repo} has no target/release/pod or target/debug/pod`), err.message);
      assert.doesNotMatch(err.message, /\n/);
      return true;
    },
  );
});

test("podBin wins over POD_BIN; a bare name is looked up on PATH; a relative path is from cwd", (t) => {
  const l = layout(t);
  const PATH = path.dirname(l.onPath);
  assert.equal(findPodBinary({ podBin: l.debug, env: { POD_BIN: l.chosen, PATH }, cwd: l.deep }), l.debug);
  assert.equal(findPodBinary({ env: { POD_BIN: "pod", PATH }, cwd: l.outside }), l.onPath);
  const relative = path.relative(l.outside, l.chosen);
  assert.equal(findPodBinary({ env: { POD_BIN: relative, PATH: "" }, cwd: l.outside }), l.chosen);
});

test("POD_BIN naming nothing is the error even when a fallback exists", (t) => {
  const l = layout(t);
  const PATH = path.dirname(l.onPath);
  assert.throws(
    () => findPodBinary({ env: { POD_BIN: path.join(l.root, "missing", "pod"), PATH }, cwd: l.deep }),
    /POD_BIN is set to ".*missing\/pod" but there is no executable pod binary there/,
  );
  const plain = path.join(l.root, "plain-file");
  writeFileSync(plain, "not a program\n");
  assert.throws(() => findPodBinary({ env: { POD_BIN: plain, PATH: "" }, cwd: l.deep }), PodNotFoundError);
  assert.throws(() => findPodBinary({ podBin: l.root, env: { PATH: "" }, cwd: l.deep }), /podBin is set to/);
});

test("outside a pod repository with an empty PATH nothing is found, and empty entries are not cwd", (t) => {
  const l = layout(t);
  executable(path.join(l.outside, "pod"));
  for (const PATH of ["", "::"]) {
    assert.throws(
      () => findPodBinary({ env: { PATH }, cwd: l.outside }),
      (err: unknown) => err instanceof PodNotFoundError && err.message.includes(`${l.outside} is not inside a pod repository`),
    );
  }
});

test("a crate with a pod binary but another package name is not the repository", (t) => {
  const l = layout(t);
  writeFileSync(path.join(l.repo, "Cargo.toml"), '[package]\nname = "other"\n\n[[bin]]\nname = "pod"\n');
  assert.throws(() => findPodBinary({ env: { PATH: "" }, cwd: l.deep }), /is not inside a pod repository/);
});

test("PodClient.spawn with POD_BIN at nothing throws the sentence before starting anything", (t) => {
  const ws = workspace(t);
  const saved = process.env.POD_BIN;
  process.env.POD_BIN = ws.file("no-such-pod");
  t.after(() => restoreEnv({ POD_BIN: saved }));
  assert.throws(
    () => PodClient.spawn({ manifest: ws.manifest, cwd: ws.dir }),
    (err: unknown) => err instanceof PodNotFoundError && err.message.includes("no-such-pod") && err.message.includes("POD_BIN"),
  );
});

test("with no POD_BIN and an empty PATH outside a repository, a script gets one sentence", (t) => {
  const ws = workspace(t);
  const script = `require(${JSON.stringify(path.resolve(__dirname, "../src/index.js"))}).PodClient.spawn({});`;
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: "" };
  delete env.POD_BIN;
  const r = spawnSync(process.execPath, ["-e", script], { cwd: ws.dir, env, encoding: "utf8" });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /PodNotFoundError: cannot find the pod binary: POD_BIN is not set/);
  assert.match(r.stderr, /set POD_BIN to the binary's path/);
});

test("pod on PATH is found and runs a turn", async (t) => {
  const ws = workspace(t);
  const bin = path.join(ws.dir, "bin");
  mkdirSync(bin);
  symlinkSync(path.resolve(POD_BIN), path.join(bin, "pod"));
  const saved = { POD_BIN: process.env.POD_BIN, PATH: process.env.PATH };
  delete process.env.POD_BIN;
  process.env.PATH = bin;
  t.after(() => restoreEnv(saved));
  const pod = PodClient.spawn({ manifest: ws.manifest, cwd: ws.dir });
  t.after(() => pod.dispose());
  assert.deepEqual(pod.child?.spawnargs.slice(0, 2), [path.join(bin, "pod"), "serve"]);
  await within(pod.initialize());
  assert.equal((await within(pod.run("found on PATH"))).stopReason, "end_turn");
});

test("a binary the kernel will not run rejects with a connection error naming it", async (t) => {
  const ws = workspace(t);
  const broken = executable(ws.file("broken-pod"), "#!/nonexistent/interpreter\n");
  const pod = PodClient.spawn({ podBin: broken, manifest: ws.manifest, cwd: ws.dir });
  t.after(() => pod.dispose());
  await assert.rejects(within(pod.initialize()), (err: unknown) => {
    assert.ok(err instanceof PodConnectionError, String(err));
    assert.match(err.message, /cannot start `.*broken-pod serve/);
    assert.doesNotMatch(err.message, /write after a stream was destroyed/);
    return true;
  });
});
