/**
 * A client for `pod serve` built on vscode-jsonrpc: LSP-style `Content-Length` framing over the
 * child's stdio (the pod picks the framing from the first byte it reads), typed methods and typed
 * event handlers. The protocol types come from `./protocol` (generated from the JSON Schema).
 */
import { spawn, type ChildProcess } from "node:child_process";
import {
  createMessageConnection,
  Disposable,
  ErrorCodes as LibraryErrorCodes,
  NotificationType,
  ParameterStructures,
  RequestType,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
  type RequestParam,
} from "vscode-jsonrpc/node";
import { ErrorCodes, METHOD_NAMES, type PodMethods } from "./protocol";
import { findPodBinary } from "./binary";
import type * as P from "./protocol";

export { ErrorCodes };

export const PROTOCOL_VERSION = 1;

type MethodTable = {
  readonly [K in keyof PodMethods]: RequestType<PodMethods[K]["params"], PodMethods[K]["result"], unknown>;
};

/** The methods of protocol v1 with their params and result types, from the generated list. */
export const Methods = Object.fromEntries(
  METHOD_NAMES.map((name) => [name, new RequestType(name, ParameterStructures.byName)]),
) as unknown as MethodTable;

/** The one notification the pod sends. */
export const EventNotification = new NotificationType<P.Event>("event");

export type EventType = P.Event["type"];
/** The event variant with the given `type`, e.g. `EventOf<"permissionRequest">`. */
export type EventOf<T extends EventType> = Extract<P.Event, { type: T }>;

/** A JSON-RPC error answered by the pod. */
export class PodError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "PodError";
  }

  /** The symbolic name of `code` (`"UnknownPermissionRequest"`, ...), or `"Error"`. */
  get codeName(): string {
    const entry = Object.entries(ErrorCodes).find(([, code]) => code === this.code);
    return entry ? entry[0] : "Error";
  }
}

/** The pod process went away (or never started) while a request was outstanding. */
export class PodConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PodConnectionError";
  }
}

/** Codes vscode-jsonrpc uses for its own failures (the pod never sends them). */
const LOCAL_FAILURES = new Set<number>([
  LibraryErrorCodes.MessageWriteError,
  LibraryErrorCodes.MessageReadError,
  LibraryErrorCodes.PendingResponseRejected,
  LibraryErrorCodes.ConnectionInactive,
]);

function toPodError(err: unknown): unknown {
  if (err instanceof ResponseError) return new PodError(err.code, err.message, err.data);
  return err;
}

/** Answers a `permissionRequest` automatically (see `PodClientOptions.approver`). */
export type Approver = (
  request: EventOf<"permissionRequest">,
) =>
  | { decision: P.ReplyDecision; message?: string }
  | Promise<{ decision: P.ReplyDecision; message?: string }>;

export interface SpawnOptions {
  /** `--manifest` for `pod serve` (omitted: the pod's default, `pod.toml`). */
  manifest?: string;
  /**
   * The pod binary, a path or a name on `PATH`. Default: `$POD_BIN`, else `pod` on `PATH`, else
   * `target/release/pod` or `target/debug/pod` of the pod repository holding the current
   * directory (see `findPodBinary`).
   */
  podBin?: string;
  /** Extra arguments after `serve` (e.g. `["--resume", id]`). */
  args?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Answer every `permissionRequest` with this function's decision. */
  approver?: Approver;
}

export interface InitializeOptions {
  /** Advertise `capabilities.approval` (default true). Without it every `ask` fails closed. */
  approval?: boolean;
  clientInfo?: P.PeerInfo;
  protocolVersion?: number;
}

/** A connection to one pod process. */
export class PodClient {
  readonly connection: MessageConnection;
  readonly child: ChildProcess | undefined;
  /** Resolves with the child's exit code (or null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** The last lines the pod wrote to stderr (its logs), for diagnostics. */
  readonly stderrTail: string[] = [];
  initializeResult: P.InitializeResult | undefined;
  /** Errors thrown by the approver or by its replies (e.g. -32004 after a timeout). */
  readonly approvalErrors: unknown[] = [];
  private readonly handlers = new Set<(event: P.Event) => void>();
  private closed = false;
  /** Why the connection ended, once it has. */
  private failure: PodConnectionError | undefined;
  private readonly gone: Promise<never>;

  /**
   * Spawns `pod serve [--manifest m] [args]` and connects to its stdio. Throws
   * `PodNotFoundError` (one sentence naming `POD_BIN`) when there is no binary to start.
   */
  static spawn(options: SpawnOptions = {}): PodClient {
    const podBin = findPodBinary({ podBin: options.podBin });
    const args = ["serve", ...(options.manifest ? ["--manifest", options.manifest] : []), ...(options.args ?? [])];
    const child = spawn(podBin, args, { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "pipe"] });
    return new PodClient(child, options.approver);
  }

  constructor(child: ChildProcess, approver?: Approver) {
    if (!child.stdin || !child.stdout) throw new Error("the pod process needs piped stdin and stdout");
    this.child = child;
    this.exited = new Promise((resolve) => {
      child.once("exit", (code) => resolve(code));
      child.once("error", () => resolve(null)); // spawn failure (ENOENT, ...)
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.stderrTail.push(...chunk.split("\n").filter((line) => line.length > 0));
      if (this.stderrTail.length > 200) this.stderrTail.splice(0, this.stderrTail.length - 200);
    });
    child.stdin.on("error", () => {}); // EPIPE after the pod exits surfaces as a closed connection
    this.connection = createMessageConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
    );
    this.connection.onNotification(EventNotification, (event) => {
      for (const handler of [...this.handlers]) handler(event);
    });
    this.gone = new Promise<never>((_, reject) => {
      const fail = (why: string) => {
        this.closed = true;
        // Let the stderr reader catch up so the error can say why the pod went away.
        setImmediate(() => {
          this.failure ??= new PodConnectionError(`${why}${this.stderrSummary()}`);
          reject(this.failure);
        });
      };
      this.connection.onClose(() => fail("the pod closed the connection"));
      // "close" (not "exit"): stdout is drained by then, so answers the pod wrote before exiting
      // (the shutdown result) reach their requests first.
      child.once("close", (code, signal) => fail(`the pod exited (${signal ?? `code ${code}`})`));
      child.once("error", (err) => fail(`cannot start \`${child.spawnargs.join(" ")}\`: ${err.message}`));
    });
    this.gone.catch(() => {}); // only matters to requests racing it
    if (approver) {
      this.onEvent("permissionRequest", async (request) => {
        let answer: { decision: P.ReplyDecision; message?: string };
        try {
          answer = await approver(request);
        } catch (err) {
          // A broken approver fails closed instead of leaving the call pending.
          this.approvalErrors.push(err);
          answer = { decision: "deny", message: `approver failed: ${err instanceof Error ? err.message : String(err)}` };
        }
        try {
          await this.permissionReply({ requestId: request.requestId, ...answer });
        } catch (err) {
          // Already resolved (timeout, cancel) or the pod went away: kept for inspection.
          this.approvalErrors.push(err);
        }
      });
    }
    this.connection.listen();
  }

  /** Every event. Returns a Disposable that removes the handler. */
  onEvent(handler: (event: P.Event) => void): Disposable;
  /** Events of one type, typed accordingly. */
  onEvent<T extends EventType>(type: T, handler: (event: EventOf<T>) => void): Disposable;
  onEvent<T extends EventType>(
    typeOrHandler: T | ((event: P.Event) => void),
    maybeHandler?: (event: EventOf<T>) => void,
  ): Disposable {
    let handler: (event: P.Event) => void;
    if (typeof typeOrHandler === "function") {
      handler = typeOrHandler;
    } else {
      const wanted = maybeHandler!;
      handler = (event) => {
        if (event.type === typeOrHandler) wanted(event as EventOf<T>);
      };
    }
    this.handlers.add(handler);
    return Disposable.create(() => this.handlers.delete(handler));
  }

  /**
   * The next event of `type` (matching `predicate`) that arrives after this call, or a rejection
   * after `timeoutMs`. Call it before the action that produces the event.
   */
  waitForEvent<T extends EventType>(
    type: T,
    predicate: (event: EventOf<T>) => boolean = () => true,
    timeoutMs = 10_000,
  ): Promise<EventOf<T>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        sub.dispose();
        reject(new Error(`no ${type} event within ${timeoutMs} ms`));
      }, timeoutMs);
      const sub = this.onEvent(type, (event) => {
        if (!predicate(event)) return;
        clearTimeout(timer);
        sub.dispose();
        resolve(event);
      });
    });
  }

  private async request<Params, Result>(type: RequestType<Params, Result, unknown>, params: Params): Promise<Result> {
    if (this.closed) throw new PodConnectionError(`the pod connection is closed${this.stderrSummary()}`);
    try {
      // The method table types the params; RequestParam<Params> is a conditional type TS cannot
      // resolve for a generic Params, hence the cast.
      const sent = this.connection.sendRequest(type, params as RequestParam<Params>);
      // vscode-jsonrpc leaves requests pending when the peer's stdout ends; fail them instead.
      return await Promise.race([sent, this.gone]);
    } catch (err) {
      if (err instanceof ResponseError && !LOCAL_FAILURES.has(err.code)) throw toPodError(err);
      // vscode-jsonrpc's own failure (a write to a pod that never started: "Cannot call write
      // after a stream was destroyed") can come before the spawn error: wait for that, say it.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      throw this.failure ?? new PodConnectionError(`${err instanceof Error ? err.message : String(err)}${this.stderrSummary()}`);
    }
  }

  private stderrSummary(): string {
    const tail = this.stderrTail.slice(-5).join("; ");
    return tail ? ` (stderr: ${tail})` : "";
  }

  async initialize(options: InitializeOptions = {}): Promise<P.InitializeResult> {
    const params: P.InitializeParams = {
      protocolVersion: options.protocolVersion ?? PROTOCOL_VERSION,
      clientInfo: options.clientInfo ?? { name: "pod-client-typescript", version: "0.1.0" },
      capabilities: options.approval === false ? {} : { approval: {} },
    };
    const result = await this.request(Methods.initialize, params);
    this.initializeResult = result;
    return result;
  }

  /** Runs one turn; resolves when it ends. A string becomes one text item. */
  run(input: string | P.InputItem[]): Promise<P.RunResult> {
    const items: P.InputItem[] = typeof input === "string" ? [{ type: "text", text: input }] : input;
    return this.request(Methods.run, { input: items });
  }

  cancel(): Promise<P.CancelResult> {
    return this.request(Methods.cancel, {});
  }

  permissionReply(params: P.PermissionReplyParams): Promise<P.EmptyResult> {
    const { message, ...rest } = params;
    return this.request(Methods.permissionReply, message == null ? rest : { ...rest, message });
  }

  history(): Promise<P.HistoryResult> {
    return this.request(Methods.history, {});
  }

  shutdown(): Promise<P.EmptyResult> {
    return this.request(Methods.shutdown, {});
  }

  /**
   * Shuts the pod down (`shutdown` when initialized and still connected), closes its stdin,
   * waits for it to exit (killing it after `timeoutMs`) and disposes the connection. Returns the
   * exit code.
   */
  async dispose(timeoutMs = 5_000): Promise<number | null> {
    const child = this.child!;
    const alive = child.exitCode === null && child.signalCode === null;
    if (alive && !this.closed && this.initializeResult) {
      await Promise.race([this.shutdown().catch(() => {}), delay(timeoutMs)]);
    }
    child.stdin?.end();
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        child.kill("SIGKILL");
        resolve();
      }, timeoutMs);
    });
    await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    const code = await this.exited;
    this.connection.dispose();
    return code;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
