// An ES module consumer of the installed (CommonJS) package: named imports drive one turn.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, PodClient, PodError } from "pod-client";

const dir = mkdtempSync(path.join(tmpdir(), "pod-consumer-"));
writeFileSync(path.join(dir, "pod.toml"), `[pod]\nname = "esm"\nworkspace = ${JSON.stringify(dir)}\n\n[model]\nprovider = "offline"\n`);
const pod = PodClient.spawn({ manifest: path.join(dir, "pod.toml"), cwd: dir });
await assert.rejects(pod.run("too early"), (err) => err instanceof PodError && err.code === ErrorCodes.NotInitialized);
const info = await pod.initialize();
assert.equal(info.podInfo.name, "esm");
assert.equal((await pod.run("from import")).stopReason, "end_turn");
assert.equal(await pod.dispose(), 0);
console.log("import: ok");
