// A TypeScript consumer: the installed package's types are used and checked (`tsc` fails if they
// are missing, since every `@ts-expect-error` below would then be unused).
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PodClient, type EventOf, type InitializeResult, type RunResult } from "pod-client";

const dir = mkdtempSync(path.join(tmpdir(), "pod-consumer-"));
writeFileSync(path.join(dir, "pod.toml"), `[pod]\nname = "typed"\nworkspace = ${JSON.stringify(dir)}\n\n[model]\nprovider = "offline"\n`);
const pod = PodClient.spawn({ manifest: path.join(dir, "pod.toml"), cwd: dir });
const ended: EventOf<"turnEnded">[] = [];
pod.onEvent("turnEnded", (e) => ended.push(e));
const info: InitializeResult = await pod.initialize({ approval: true });
assert.equal(info.podInfo.name, "typed");
const result: RunResult = await pod.run("typed");
assert.equal(result.stopReason, "end_turn");
assert.equal(ended.length, 1);
assert.equal(await pod.dispose(), 0);
console.log("typed: ok");

// Never called: only compiled, so that wrong uses are type errors.
export function typeErrors(client: PodClient, init: InitializeResult): void {
  // @ts-expect-error: podInfo.name is a string
  const wrong: number = init.podInfo.name;
  // @ts-expect-error: run takes a string or input items
  void client.run(42);
  // @ts-expect-error: not a reply decision
  void client.permissionReply({ requestId: "x", decision: "maybe" });
  void wrong;
}
