"""An asyncio client for ``pod serve`` (JSON-RPC 2.0, newline-delimited JSON on stdio)."""

from __future__ import annotations

import asyncio
import collections
import inspect
import json
import os
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Mapping, Union

from .binary import find_pod_bin
from .errors import PodConnectionError, PodError

PROTOCOL_VERSION = 1
CLIENT_NAME = "pod-client-python"
CLIENT_VERSION = "0.1.0"

Event = dict[str, Any]
InputItem = Mapping[str, Any]
RunInput = Union[str, InputItem, Iterable[InputItem]]
# An event callback: plain function or coroutine function.
EventCallback = Callable[[Event], Union[None, Awaitable[None]]]
# An approver: given a permissionRequest event, returns (decision, message) or an awaitable of it.
Approval = tuple[str, Union[str, None]]
Approver = Callable[[Event], Union[Approval, Awaitable[Approval]]]

_EOF = object()


def default_pod_bin() -> str:
    """The pod binary ``PodClient`` starts when given none: ``$POD_BIN``, else ``pod`` on
    ``PATH``, else the repository's ``target/release/pod`` or ``target/debug/pod``; raises
    ``PodNotFoundError`` when there is none (``pod_client.binary`` defines the search)."""
    return find_pod_bin()


def text_input(run_input: RunInput) -> list[dict[str, Any]]:
    """Normalize ``run`` input: a string becomes one text item; items pass through."""
    if isinstance(run_input, str):
        return [{"type": "text", "text": run_input}]
    if isinstance(run_input, Mapping):
        return [dict(run_input)]
    return [dict(item) for item in run_input]


class EventStream:
    """An async iterator over the events received after it was opened.

    It ends when the connection closes. Use ``next(timeout=...)`` or ``wait_for`` to wait with a
    deadline.
    """

    def __init__(self, client: "PodClient") -> None:
        self._client = client
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._closed = False

    def _push(self, item: Any) -> None:
        if not self._closed:
            self._queue.put_nowait(item)

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> Event:
        item = await self._queue.get()
        if item is _EOF:
            self._queue.put_nowait(_EOF)  # stay ended for later readers
            raise StopAsyncIteration
        return item

    async def next(self, timeout: float | None = 10.0) -> Event:
        """The next event; ``asyncio.TimeoutError`` after ``timeout`` seconds, ``EOFError`` at the end."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except StopAsyncIteration:
            raise EOFError("the pod connection closed") from None

    async def wait_for(self, predicate: Callable[[Event], bool], timeout: float | None = 10.0) -> Event:
        """Skip events until one satisfies ``predicate``; the whole wait is bounded by ``timeout``."""

        async def scan() -> Event:
            async for event in self:
                if predicate(event):
                    return event
            raise EOFError("the pod connection closed before the awaited event")

        return await asyncio.wait_for(scan(), timeout)

    def close(self) -> None:
        self._closed = True
        self._client._streams.discard(self)

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PodClient:
    """Spawns ``pod serve --manifest <manifest>`` and speaks the protocol to it.

    Use as ``async with PodClient(manifest) as pod:`` (starts the process; on exit it shuts the pod
    down and reaps it). Events are delivered to ``on_event`` callbacks and to every open
    ``events()`` stream. When ``approver`` is set, each ``permissionRequest`` is answered with its
    decision automatically (see ``pod_client.policy.Policy``).
    """

    def __init__(
        self,
        manifest: str | os.PathLike[str] | None = None,
        *,
        pod_bin: str | None = None,
        args: Iterable[str] = (),
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        on_event: EventCallback | None = None,
        approver: Approver | None = None,
        max_line_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        # Resolved now, so a missing binary is one sentence here rather than an OSError later.
        self.pod_bin = find_pod_bin(pod_bin)
        self.argv = [self.pod_bin, "serve"]
        if manifest is not None:
            self.argv += ["--manifest", os.fspath(manifest)]
        self.argv += list(args)
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.approver = approver
        self.max_line_bytes = max_line_bytes
        self.initialize_result: dict[str, Any] | None = None
        self.returncode: int | None = None
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=200)
        # Exceptions raised by the approver or by its replies (e.g. -32004 after a timeout).
        self.approval_errors: list[BaseException] = []
        self._callbacks: list[EventCallback] = [on_event] if on_event else []
        self._streams: set[EventStream] = set()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_id = 1
        self._proc: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._closed = asyncio.Event()
        self._write_lock = asyncio.Lock()

    # ----------------------------------------------------------------------------- lifecycle

    async def start(self) -> "PodClient":
        if self._proc is not None:
            raise RuntimeError("already started")
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=self.env,
                limit=self.max_line_bytes,
            )
        except OSError as err:  # found, but the kernel would not run it (or `cwd` is missing)
            raise PodConnectionError(f"cannot start `{' '.join(self.argv)}`: {err.strerror or err}") from err
        self._tasks = [
            asyncio.create_task(self._read_stdout(), name="pod-stdout"),
            asyncio.create_task(self._read_stderr(), name="pod-stderr"),
        ]
        return self

    async def __aenter__(self) -> "PodClient":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    async def close(self, timeout: float = 5.0) -> int | None:
        """Shut the pod down politely (``shutdown`` if possible, then EOF), reap it, return its
        exit code. Kills it if it does not exit within ``timeout`` seconds."""
        proc = self._proc
        if proc is None:
            return None
        if proc.returncode is None and not self._closed.is_set() and self.initialize_result is not None:
            try:
                await asyncio.wait_for(self.shutdown(), timeout)
            except (PodError, PodConnectionError, asyncio.TimeoutError, OSError):
                pass
        if proc.stdin and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
        for task in self._tasks:
            try:
                await asyncio.wait_for(task, timeout)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                task.cancel()
        for task in list(self._background):
            task.cancel()
        self.returncode = proc.returncode
        return proc.returncode

    # ----------------------------------------------------------------------------- events

    def on_event(self, callback: EventCallback) -> EventCallback:
        """Register a callback for every event (usable as a decorator)."""
        self._callbacks.append(callback)
        return callback

    def events(self) -> EventStream:
        """A stream of the events that arrive from now on (open it before ``run``)."""
        stream = EventStream(self)
        if self._closed.is_set():
            stream._push(_EOF)
        else:
            self._streams.add(stream)
        return stream

    # ----------------------------------------------------------------------------- methods

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its result; a JSON-RPC error raises ``PodError``."""
        if self._proc is None:
            raise PodConnectionError("the pod is not started")
        if self._closed.is_set():
            raise PodConnectionError("the pod connection is closed")
        request_id = self._next_id
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {} if params is None else params}
        try:
            await self._send(message)
            return await future
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: Any = None) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": {} if params is None else params})

    async def initialize(
        self,
        approval: bool = True,
        *,
        client_name: str = CLIENT_NAME,
        client_version: str = CLIENT_VERSION,
        protocol_version: int = PROTOCOL_VERSION,
    ) -> dict[str, Any]:
        """``initialize``; ``approval=True`` advertises ``capabilities.approval`` (asks come to us)."""
        params: dict[str, Any] = {
            "protocolVersion": protocol_version,
            "clientInfo": {"name": client_name, "version": client_version},
            "capabilities": {"approval": {}} if approval else {},
        }
        result = await self.request("initialize", params)
        self.initialize_result = result
        return result

    async def run(self, run_input: RunInput) -> dict[str, Any]:
        """Run one turn; returns ``{turnId, stopReason, ...}`` when it ends. Events stream meanwhile."""
        return await self.request("run", {"input": text_input(run_input)})

    async def reply(self, request_id: str, decision: str, message: str | None = None) -> dict[str, Any]:
        """``permissionReply``: ``decision`` is ``allow_once``, ``allow_session`` or ``deny``."""
        params: dict[str, Any] = {"requestId": request_id, "decision": decision}
        if message is not None:
            params["message"] = message
        return await self.request("permissionReply", params)

    async def cancel(self) -> dict[str, Any]:
        return await self.request("cancel", {})

    async def history(self) -> list[dict[str, Any]]:
        """The session's history items, in order."""
        result = await self.request("history", {})
        return result["items"]

    async def shutdown(self) -> dict[str, Any]:
        return await self.request("shutdown", {})

    # ----------------------------------------------------------------------------- plumbing

    async def _send(self, message: Any) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        async with self._write_lock:
            try:
                self._proc.stdin.write(line)
                await self._proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as err:
                raise PodConnectionError(f"cannot write to the pod: {err}") from err

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while True:
            line = await self._proc.stderr.readline()
            if not line:
                return
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip("\n"))

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        reason = "the pod closed its stdout"
        try:
            while True:
                try:
                    line = await self._proc.stdout.readline()
                except ValueError as err:  # line over the limit
                    reason = f"unreadable message from the pod: {err}"
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except json.JSONDecodeError as err:
                    reason = f"the pod wrote invalid JSON: {err}: {line[:200]!r}"
                    break
                for item in message if isinstance(message, list) else [message]:
                    await self._dispatch(item)
        finally:
            self._closed.set()
            tail = "; ".join(list(self.stderr_tail)[-5:])
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(PodConnectionError(reason + (f" (stderr: {tail})" if tail else "")))
            for stream in list(self._streams):
                stream._push(_EOF)

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if message.get("method") == "event" and "id" not in message:
                await self._deliver(message.get("params") or {})
            return  # the pod sends no requests to clients in v1; unknown notifications are ignored
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if "error" in message:
            err = message["error"] or {}
            future.set_exception(PodError(err.get("code", 0), err.get("message", ""), err.get("data")))
        else:
            future.set_result(message.get("result"))

    async def _deliver(self, event: Event) -> None:
        for stream in list(self._streams):
            stream._push(event)
        for callback in list(self._callbacks):
            outcome = callback(event)
            if inspect.isawaitable(outcome):
                self._spawn(outcome)
        if self.approver is not None and event.get("type") == "permissionRequest":
            self._spawn(self._auto_reply(event))

    async def _auto_reply(self, event: Event) -> None:
        assert self.approver is not None
        try:
            outcome = self.approver(event)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            decision, message = outcome
        except Exception as err:  # a broken approver fails closed instead of leaving the call pending
            self.approval_errors.append(err)
            decision, message = "deny", f"approver failed: {err}"
        try:
            await self.reply(event["requestId"], decision, message)
        except (PodError, PodConnectionError) as err:
            # Already resolved (timeout, cancel) or the pod went away: kept for inspection.
            self.approval_errors.append(err)

    def _spawn(self, awaitable: Awaitable[Any]) -> None:
        async def wrap() -> None:
            await awaitable

        task = asyncio.ensure_future(wrap())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
