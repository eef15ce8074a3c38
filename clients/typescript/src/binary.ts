/**
 * Finding the `pod` binary to start. In order, the first that exists wins:
 *
 * 1. the `podBin` option, else `$POD_BIN` (when set and not empty): a path (a relative one is
 *    taken from the current directory) or a bare name looked up on `PATH`. When it names nothing
 *    executable, that is the error: there is no fallback past an explicit choice;
 * 2. `pod` on `PATH` (empty `PATH` entries are skipped, not read as the current directory);
 * 3. `target/release/pod`, then `target/debug/pod`, of the pod repository the current directory is
 *    in: the nearest folder, from the current directory upwards, holding a `Cargo.toml` whose
 *    `[package]` table says `name = "pod"`.
 *
 * When none exists, {@link PodNotFoundError} says so in one sentence that names `POD_BIN`.
 */
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import path from "node:path";

/** No pod binary to start; the message says where it looked and names `POD_BIN`. */
export class PodNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PodNotFoundError";
  }
}

export interface FindOptions {
  /** An explicit binary (path or bare name), as `PodClient.spawn`'s `podBin`. */
  podBin?: string;
  /** Supplies `POD_BIN` and `PATH` (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Anchors relative paths and the repository search (default `process.cwd()`). */
  cwd?: string;
}

function isExecutable(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string, pathVar: string | undefined): string | undefined {
  for (const dir of (pathVar ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.resolve(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** `name` of the `[package]` table of a Cargo.toml, read line by line (headers start a table). */
function packageName(cargoToml: string): string | undefined {
  let table = "";
  for (const raw of cargoToml.split(/\r?\n/)) {
    const line = raw.trim();
    const header = /^\[\[?\s*([^\]\s]+)\s*\]\]?\s*(#.*)?$/.exec(line);
    if (header) {
      table = header[1];
      continue;
    }
    const name = /^name\s*=\s*"([^"]*)"\s*(#.*)?$/.exec(line);
    if (name && table === "package") return name[1];
  }
  return undefined;
}

/** The nearest folder at or above `start` whose Cargo.toml is the pod crate's, or undefined. */
export function podRepository(start: string = process.cwd()): string | undefined {
  let dir = path.resolve(start);
  for (;;) {
    let text: string | undefined;
    try {
      text = readFileSync(path.join(dir, "Cargo.toml"), "utf8");
    } catch {
      text = undefined;
    }
    if (text !== undefined && packageName(text) === "pod") return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The absolute path of the pod binary to start (see the module comment for the order). */
export function findPodBinary(options: FindOptions = {}): string {
  const env = options.env ?? process.env;
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const [explicit, origin] = options.podBin ? [options.podBin, "podBin"] : [env.POD_BIN || undefined, "POD_BIN"];
  if (explicit) {
    const bare = !explicit.includes(path.sep);
    const found = bare ? onPath(explicit, env.PATH) : isExecutable(path.resolve(cwd, explicit)) ? path.resolve(cwd, explicit) : undefined;
    if (found) return found;
    throw new PodNotFoundError(
      `${origin} is set to ${JSON.stringify(explicit)} but there is no executable pod binary ${bare ? "on PATH" : "there"}: ` +
        `point ${origin} at the pod binary (e.g. <repo>/target/release/pod) or unset it`,
    );
  }
  const fromPath = onPath("pod", env.PATH);
  if (fromPath) return fromPath;
  const repo = podRepository(cwd);
  if (repo) {
    for (const profile of ["release", "debug"]) {
      const candidate = path.join(repo, "target", profile, "pod");
      if (isExecutable(candidate)) return candidate;
    }
  }
  const looked = repo
    ? `${repo} has no target/release/pod or target/debug/pod (run \`cargo build --release\` there)`
    : `${cwd} is not inside a pod repository`;
  throw new PodNotFoundError(
    `cannot find the pod binary: POD_BIN is not set, there is no \`pod\` on PATH and ${looked}; ` +
      "set POD_BIN to the binary's path or put it on PATH with `cargo install --path <repo>`",
  );
}
