import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestContext } from "node:test";
import { PodClient, type Approver } from "../src/client";
import type { Event } from "../src/protocol";

// dist/test/helpers.js -> the repository root is four levels up.
const REPO = path.resolve(__dirname, "../../../..");
export const POD_BIN = process.env.POD_BIN || path.join(REPO, "target/debug/pod");
export const TIMEOUT_MS = 10_000;
export const MANIFEST_RULES = 2;

const MANIFEST = (workspace: string) => `
[pod]
name = "ts-client-tests"
workspace = ${JSON.stringify(workspace)}

[model]
provider = "offline"

[tools]
enabled = ["bash", "read", "file_write"]

[permissions]
default_action = "ask"

[[permissions.rule]]
tool = "bash"
pattern = "rm *"
action = "deny"
message = "Deleting files is not allowed in this workspace."

[[permissions.rule]]
tool = "bash"
pattern = "echo *"
action = "allow"
`;

/** A temporary workspace with pod.toml and keep.txt, removed after the test. */
export function workspace(t: TestContext): { dir: string; manifest: string; file: (name: string) => string } {
  const dir = mkdtempSync(path.join(tmpdir(), "pod-ts-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const manifest = path.join(dir, "pod.toml");
  writeFileSync(manifest, MANIFEST(dir));
  writeFileSync(path.join(dir, "keep.txt"), "keep me\n");
  return { dir, manifest, file: (name) => path.join(dir, name) };
}

/** A spawned client recording every event; disposed (and the pod reaped) after the test. */
export function startPod(
  t: TestContext,
  ws: { dir: string; manifest: string },
  approver?: Approver,
): { pod: PodClient; events: Event[] } {
  // The test's own manifest: it vouches for it, as a script does (`pod serve --trust`).
  const pod = PodClient.spawn({ podBin: POD_BIN, manifest: ws.manifest, args: ["--trust"], cwd: ws.dir, approver });
  const events: Event[] = [];
  pod.onEvent((e) => events.push(e));
  t.after(() => pod.dispose());
  return { pod, events };
}

export function ofType<T extends Event["type"]>(events: Event[], type: T): Extract<Event, { type: T }>[] {
  return events.filter((e): e is Extract<Event, { type: T }> => e.type === type);
}

/** Rejects when `promise` takes longer than `ms`. */
export function within<T>(promise: Promise<T>, ms = TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
