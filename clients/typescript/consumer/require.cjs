// A CommonJS consumer of the installed package: `require("pod-client")` drives one turn.
"use strict";
const assert = require("node:assert/strict");
const { mkdtempSync, writeFileSync } = require("node:fs");
const { tmpdir } = require("node:os");
const path = require("node:path");
const { PodClient, PodNotFoundError, findPodBinary } = require("pod-client");

async function main() {
  assert.throws(() => PodClient.spawn({ podBin: "/nonexistent/pod" }), PodNotFoundError);
  assert.equal(findPodBinary(), path.resolve(process.env.POD_BIN));
  const dir = mkdtempSync(path.join(tmpdir(), "pod-consumer-"));
  writeFileSync(path.join(dir, "pod.toml"), `[pod]\nname = "cjs"\nworkspace = ${JSON.stringify(dir)}\n\n[model]\nprovider = "offline"\n`);
  const pod = PodClient.spawn({ manifest: path.join(dir, "pod.toml"), cwd: dir });
  let text = "";
  pod.onEvent("textDelta", (e) => (text += e.text));
  const info = await pod.initialize();
  assert.equal(info.podInfo.name, "cjs");
  const result = await pod.run("from require");
  assert.equal(result.stopReason, "end_turn");
  assert.match(text, /from require/);
  assert.equal(await pod.dispose(), 0);
  console.log("require: ok");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
