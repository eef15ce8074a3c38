import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";

// dist/test -> the package root is two levels up, the repository four.
const PKG = path.resolve(__dirname, "../..");
const SCHEMA = path.resolve(PKG, "../../schema/protocol.schema.json");
const GEN = path.join(PKG, "scripts/gen.mjs");

function check(schema: string, out: string) {
  return spawnSync(process.execPath, [GEN, "--check", "--schema", schema, "--out", out], { encoding: "utf8" });
}

test("src/protocol.ts is current with the schema", () => {
  const r = check(SCHEMA, path.join(PKG, "src/protocol.ts"));
  assert.equal(r.status, 0, r.stderr);
});

test("the check fails when the schema changes and passes after regenerating", (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "pod-gen-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const out = path.join(dir, "protocol.ts");
  const schemaCopy = path.join(dir, "protocol.schema.json");
  writeFileSync(out, readFileSync(path.join(PKG, "src/protocol.ts")));
  const schema = JSON.parse(readFileSync(SCHEMA, "utf8"));
  // StopReason is a oneOf of a plain enum and documented constants: add to the enum.
  const stop = schema.$defs.StopReason;
  (stop.enum ?? stop.oneOf.find((o: { enum?: string[] }) => o.enum).enum).push("budget_exhausted");
  writeFileSync(schemaCopy, JSON.stringify(schema));
  const stale = check(schemaCopy, out);
  assert.equal(stale.status, 1);
  assert.match(stale.stderr, /is stale/);
  execFileSync(process.execPath, [GEN, "--schema", schemaCopy, "--out", out]);
  assert.match(readFileSync(out, "utf8"), /"budget_exhausted"/);
  assert.equal(check(schemaCopy, out).status, 0);
});

test("every schema definition is an exported type, and permissionRequest events keep their fields", () => {
  const generated = readFileSync(path.join(PKG, "src/protocol.ts"), "utf8");
  const schema = JSON.parse(readFileSync(SCHEMA, "utf8"));
  for (const name of Object.keys(schema.$defs)) {
    assert.match(generated, new RegExp(`export (type|interface) ${name}\\b`), name);
    // No numbered duplicates (the generator's symptom of `$ref` with sibling keywords).
    assert.doesNotMatch(generated, new RegExp(`export (type|interface) ${name}\\d+\\b`), name);
  }
  assert.match(generated, /\| \(PermissionRequest & \{\s*type: "permissionRequest";\s*\}\)/);
});

test("the method table, error codes and event types follow methods.json", (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "pod-gen-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const methods = JSON.parse(readFileSync(path.resolve(PKG, "../../schema/methods.json"), "utf8"));
  const generated = readFileSync(path.join(PKG, "src/protocol.ts"), "utf8");
  for (const m of methods.methods) {
    const params = m.params.replace("#/$defs/", "");
    const result = m.result.replace("#/$defs/", "");
    const name = JSON.stringify(m.name).replace(/[/]/g, "\\/");
    assert.match(generated, new RegExp(`  ${name}: \\{ params: ${params}; result: ${result} \\};`), m.name);
  }
  for (const e of methods.errors) assert.match(generated, new RegExp(`  ${e.name}: ${e.code},`), e.name);
  // A method added to the list makes the file stale.
  methods.methods.push({ name: "ping", params: "#/$defs/EmptyParams", result: "#/$defs/EmptyResult" });
  const methodsCopy = path.join(dir, "methods.json");
  writeFileSync(methodsCopy, JSON.stringify(methods));
  const out = path.join(dir, "protocol.ts");
  writeFileSync(out, generated);
  const stale = spawnSync(process.execPath, [GEN, "--check", "--methods", methodsCopy, "--out", out], {
    encoding: "utf8",
  });
  assert.equal(stale.status, 1, stale.stderr);
});
