"""A fault-planting proxy: a deliberately broken pod made of a real `pod serve` (or `pod acp`)
and one named fault.

    python3 plant.py FAULT POD_COMMAND...     # serve, with FAULT planted
    python3 plant.py --list                   # the faults, as JSON (name, targets, protocol, ...)

The proxy runs the real pod as a child and copies messages both ways in the client's framing
(newline-delimited JSON or `Content-Length` headers, chosen by the client's first byte, as the
pod does). Every message keeps its exact bytes unless the fault rewrites it, and what the client
wrote in one go reaches the pod in one write, so the fault `none` is transparent: `run.py` proves
that by running the whole kit through it. Each other fault breaks one rule of docs/protocol.md
the way a real implementation could, and names the requirements of the kit that must catch it
(`targets`). Faults of `protocol` "acp" break a rule of docs/acp.md and are planted in front of
`pod acp` (NDJSON only); there the pod also sends requests of its own
(`session/request_permission`), and the client's answers to them pass through the proxy too.
Stdlib only.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

FAULTS = {}

# The pod's default --max-message-bytes.
MAX_MESSAGE = 16 * 1024 * 1024


def fault(name, targets, framing=None, exit_code=1, stderr=None, protocol="pod"):
    """Registers a fault class. `framing`: where it shows ("both", "ndjson" or "headers"; an
    ACP fault: "ndjson"); `exit_code`: what `pod conformance` must exit with when it catches the
    fault; `stderr`: a text the report must quote (for faults about reporting); `protocol`: the
    kit's section it is planted for ("pod": in front of `pod serve`; "acp": of `pod acp`)."""

    if framing is None:
        framing = "ndjson" if protocol == "acp" else "both"

    def register(cls):
        FAULTS[name] = {
            "cls": cls,
            "targets": targets,
            "protocol": protocol,
            "framing": framing,
            "exit": exit_code,
            "stderr": stderr,
            "doc": " ".join((cls.__doc__ or "").split()),
        }
        return cls

    return register


# --- messages and framing ------------------------------------------------------------------


class Message:
    """One message as it crossed the wire: its exact bytes, its body, and the body as JSON
    (None when it is not JSON). `obj` may be changed by a fault; `changed()` then says so."""

    def __init__(self, raw, body):
        self.raw = raw
        self.body = body
        self.obj = None
        self.is_json = False
        if body is not None:
            try:
                self.obj = json.loads(body.decode("utf-8"))
                self.is_json = True
            except (UnicodeDecodeError, ValueError, RecursionError):
                pass
        self.original = json.dumps(self.obj) if self.is_json else None

    def changed(self):
        return self.is_json and json.dumps(self.obj) != self.original

    # Shapes.
    def is_dict(self):
        return self.is_json and isinstance(self.obj, dict)

    def event(self, kind=None):
        """The params of an event notification (of type `kind`), or None."""
        if not self.is_dict() or self.obj.get("method") != "event":
            return None
        params = self.obj.get("params")
        if not isinstance(params, dict):
            return None
        if kind is not None and params.get("type") != kind:
            return None
        return params

    def error(self, code=None):
        """The error object of an error response (with `code`), or None."""
        if not self.is_dict() or not isinstance(self.obj.get("error"), dict):
            return None
        if code is not None and self.obj["error"].get("code") != code:
            return None
        return self.obj["error"]

    def result(self):
        if not self.is_dict() or "result" not in self.obj:
            return None
        return self.obj["result"]

    def request(self, method=None):
        """A request or notification (with `method`): the object, or None."""
        if not self.is_dict() or not isinstance(self.obj.get("method"), str):
            return None
        if method is not None and self.obj["method"] != method:
            return None
        return self.obj


def new_message(obj):
    m = Message(b"", b"null")
    m.obj = obj
    m.is_json = True
    m.original = None
    return m


def dump(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def frame(framing, body):
    if framing == "headers":
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    return body + b"\n"


class Stream:
    """A file descriptor read through a buffer that says how much it holds (`pending`): what
    the client wrote in one go is still there after the first message is cut from it."""

    def __init__(self, fd):
        self.fd = fd
        self.buffer = bytearray()
        self.eof = False

    def fill(self):
        if self.eof:
            return False
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        return True

    def take(self, n):
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    def read(self, n):
        """`n` bytes, or fewer at end of stream."""
        while len(self.buffer) < n and self.fill():
            pass
        return self.take(n)

    def readline(self):
        start = 0
        while True:
            at = self.buffer.find(b"\n", start)
            if at >= 0:
                return self.take(at + 1)
            start = len(self.buffer)
            if not self.fill():
                return self.take(len(self.buffer))

    def pending(self):
        return len(self.buffer)


class Reader:
    """Cuts a byte stream into messages in a framing, keeping every byte (leniently: what is
    not a well-formed message is passed on as it is)."""

    def __init__(self, stream):
        self.stream = stream

    def leading_whitespace(self):
        """Reads the whitespace before the first message and returns (it, first byte)."""
        spaces = b""
        while True:
            b = self.stream.read(1)
            if not b:
                return spaces, b""
            if b in b" \t\r\n":
                spaces += b
                continue
            return spaces, b

    def next(self, framing, first=b""):
        """The next Message, or None at end of stream."""
        if framing == "ndjson":
            line = first + self.stream.readline()
            if not line:
                return None
            body = line.rstrip(b"\r\n") if line.strip() else None
            return Message(line, body)
        raw = b""
        length = None
        seen = False
        while True:
            line = first + self.stream.readline()
            first = b""
            if not line:
                return Message(raw, None) if raw else None
            raw += line
            if not line.strip():
                if seen:
                    break
                continue
            seen = True
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    length = None
        if length is None:
            return Message(raw, None)
        body = self.stream.read(length)
        return Message(raw + body, body)


# --- the proxy -----------------------------------------------------------------------------


class Proxy:
    def __init__(self, fault_cls, command):
        self.command = command
        self.framing = None
        self.client_lock = threading.Lock()
        self.pod_lock = threading.Lock()
        self.fault = fault_cls(self)
        self.pod = None
        # Client request ids (as JSON text) -> method.
        self.methods = {}
        # The pod's own requests to the client (ACP), by id (as JSON text): the request object.
        self.pod_requests = {}
        self.shutdown_sent = False
        # Set once the client's first byte chose the framing (or the client left).
        self.ready = threading.Event()

    # Writing.
    def encode(self, message):
        if isinstance(message, bytes):
            return message
        if message.is_json and (message.original is None or message.changed()):
            return self.fault.frame_out(dump(message.obj))
        return message.raw

    def to_client(self, messages):
        with self.client_lock:
            out = sys.stdout.buffer
            for m in messages:
                out.write(self.encode(m) if not isinstance(m, bytes) else m)
            out.flush()

    def to_pod(self, messages):
        with self.pod_lock:
            try:
                for m in messages:
                    if isinstance(m, bytes):
                        self.pod.stdin.write(m)
                    elif m.is_json and (m.original is None or m.changed()):
                        self.pod.stdin.write(frame(self.framing, dump(m.obj)))
                    else:
                        self.pod.stdin.write(m.raw)
                self.pod.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass

    def answer(self, obj):
        """Sends the client a message the pod did not write."""
        self.to_client([frame(self.framing, dump(obj))])

    def exit(self, code):
        """Ends the broken pod at once (the real one with it)."""
        try:
            self.pod.kill()
        except OSError:
            pass
        sys.stdout.flush()
        os._exit(code)

    # Pumps.
    def pump_in(self):
        # What the client wrote in one go goes to the pod in one go: a request pipelined behind
        # `shutdown` must reach the pod before it can exit, as it does without the proxy.
        stream = Stream(sys.stdin.fileno())
        reader = Reader(stream)
        batch = []
        try:
            spaces, first = reader.leading_whitespace()
            if spaces:
                self.to_pod([spaces])
            if not first:
                self.client_eof()
                return
            self.framing = "headers" if first in b"Cc" else "ndjson"
            self.ready.set()
            self.fault.detected(bool(spaces))
            while True:
                m = reader.next(self.framing, first)
                first = b""
                if m is None:
                    break
                self.note_request(m)
                batch += self.fault.to_pod(m)
                if not stream.pending():
                    self.to_pod(batch)
                    batch = []
        except (BrokenPipeError, OSError):
            pass
        self.to_pod(batch)
        self.client_eof()

    def note_request(self, m):
        req = m.request()
        if req is not None and "id" in req:
            self.methods[json.dumps(req["id"])] = req["method"]
            if req["method"] == "shutdown":
                self.shutdown_sent = True

    def method_of(self, m):
        """The method of the request a response answers."""
        if not m.is_dict() or "id" not in m.obj:
            return None
        return self.methods.get(json.dumps(m.obj["id"]))

    def note_pod_request(self, m):
        req = m.request()
        if req is not None and "id" in req:
            self.pod_requests[json.dumps(req["id"])] = req

    def answered(self, m, method):
        """The pod's request (of `method`) that the client's response `m` answers, or None."""
        if not m.is_dict() or "id" not in m.obj or "method" in m.obj:
            return None
        req = self.pod_requests.get(json.dumps(m.obj["id"]))
        if req is None or req.get("method") != method:
            return None
        return req

    def client_eof(self):
        self.ready.set()
        self.fault.client_eof()
        with self.pod_lock:
            try:
                self.pod.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def run(self):
        self.fault.start()
        self.pod = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        threading.Thread(target=self.pump_in, daemon=True).start()
        reader = Reader(self.pod.stdout)
        # The pod writes only after the client's first byte chose the framing.
        self.ready.wait()
        while True:
            m = reader.next(self.framing or "ndjson")
            if m is None:
                break
            self.note_pod_request(m)
            self.to_client(self.fault.to_client(m))
        self.to_client(self.fault.output_end())
        code = self.pod.wait()
        os._exit(self.fault.exit_code(code))


class Fault:
    """No fault: every byte passes unchanged."""

    def __init__(self, proxy):
        self.proxy = proxy

    def start(self):
        pass

    def detected(self, after_whitespace):
        pass

    def to_pod(self, m):
        return [m]

    def to_client(self, m):
        return [m]

    def output_end(self):
        return []

    def frame_out(self, body):
        return frame(self.proxy.framing, body)

    def client_eof(self):
        pass

    def exit_code(self, code):
        return code


@fault("none", [])
class Transparent(Fault):
    """No fault: the control run of the whole kit goes through this."""


# --- framing -------------------------------------------------------------------------------


class Reframe(Fault):
    """Writes every message to the client with `frame_out` (the broken framing)."""

    def to_client(self, m):
        if m.is_json:
            m.original = None
        return [m]


@fault("length-counts-chars", ["POD-FRAME-001"], framing="headers")
class LengthCountsChars(Reframe):
    """Content-Length counts characters instead of bytes."""

    def frame_out(self, body):
        n = len(body.decode("utf-8", "replace"))
        return b"Content-Length: %d\r\n\r\n" % n + body


@fault("header-bare-lf", ["POD-FRAME-002"], framing="headers")
class HeaderBareLf(Reframe):
    """Header lines end with a bare LF."""

    def frame_out(self, body):
        return b"Content-Length: %d\n\n" % len(body) + body


@fault("headers-answered-as-lines", ["POD-FRAME-002"], framing="headers")
class HeadersAnsweredAsLines(Reframe):
    """A header-framed client is answered in newline-delimited JSON."""

    def frame_out(self, body):
        return body + b"\n"


@fault("extra-headers-rejected", ["POD-FRAME-002"], framing="headers")
class ExtraHeadersRejected(Fault):
    """A header block with a header other than Content-Length is refused with -32700."""

    def to_pod(self, m):
        headers = m.raw[: len(m.raw) - len(m.body)] if m.body is not None else m.raw
        if b"content-type" in headers.lower():
            self.proxy.answer(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad header"}}
            )
            return []
        return [m]


@fault("leading-whitespace-misread", ["POD-FRAME-003"])
class LeadingWhitespaceMisread(Fault):
    """Whitespace before the first message makes the pod misread it (as if detection looked at
    the very first byte)."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.spoil = False

    def detected(self, after_whitespace):
        self.spoil = after_whitespace

    def to_pod(self, m):
        if self.spoil:
            self.spoil = False
            return [b"x" + m.raw]
        return [m]


@fault("oversize-kills-pod", ["POD-FRAME-004"])
class OversizeKillsPod(Fault):
    """A message over the size limit makes the pod exit."""

    def to_pod(self, m):
        if m.body is not None and len(m.body) > MAX_MESSAGE:
            self.proxy.exit(101)
        return [m]


@fault("oversize-dropped", ["POD-FRAME-004"])
class OversizeDropped(Fault):
    """A message over the size limit is skipped without an answer."""

    def to_pod(self, m):
        if m.body is not None and len(m.body) > MAX_MESSAGE:
            return []
        return [m]


@fault("bad-header-exits", ["POD-FRAME-005"], framing="headers")
class BadHeaderExits(Fault):
    """A header block without Content-Length makes the pod exit."""

    def to_pod(self, m):
        if m.body is None and m.raw.strip():
            self.proxy.exit(1)
        return [m]


@fault("bad-header-ignored", ["POD-FRAME-005"], framing="headers")
class BadHeaderIgnored(Fault):
    """A header block without Content-Length is skipped without an answer."""

    def to_pod(self, m):
        if m.body is None and m.raw.strip():
            return []
        return [m]


# --- the JSON-RPC envelope ---------------------------------------------------------------


class RewriteOut(Fault):
    """Rewrites messages on their way to the client with `change(message)`."""

    def to_client(self, m):
        self.change(m)
        return [m]

    def change(self, m):
        pass


def set_code(m, old, new):
    error = m.error(old)
    if error is not None:
        error["code"] = new


@fault("parse-error-id-zero", ["POD-RPC-001"])
class ParseErrorIdZero(RewriteOut):
    """A parse error is answered with id 0 instead of null."""

    def change(self, m):
        if m.error(-32700) is not None:
            m.obj["id"] = 0


@fault("invalid-request-as-parse-error", ["POD-RPC-002"])
class InvalidRequestAsParseError(RewriteOut):
    """An invalid request gets -32700 instead of -32600."""

    def change(self, m):
        set_code(m, -32600, -32700)


@fault("unknown-method-internal-error", ["POD-RPC-003"])
class UnknownMethodInternal(RewriteOut):
    """An unknown method gets -32603 instead of -32601."""

    def change(self, m):
        set_code(m, -32601, -32603)


@fault("bad-params-invalid-request", ["POD-RPC-004"])
class BadParamsInvalidRequest(RewriteOut):
    """Bad params get -32600 instead of -32602."""

    def change(self, m):
        set_code(m, -32602, -32600)


@fault("notifications-answered", ["POD-RPC-005"])
class NotificationsAnswered(Fault):
    """A notification is handled as a request (and answered)."""

    def to_pod(self, m):
        req = m.request()
        if req is not None and "id" not in req:
            req["id"] = "notification"
        return [m]


@fault("batch-reversed", ["POD-RPC-006"])
class BatchReversed(RewriteOut):
    """A batch's responses come in reverse element order."""

    def change(self, m):
        if m.is_json and isinstance(m.obj, list):
            m.obj.reverse()


@fault("batch-split", ["POD-RPC-006"])
class BatchSplit(Fault):
    """A batch's responses come as separate messages, not one array."""

    def to_client(self, m):
        if m.is_json and isinstance(m.obj, list) and len(m.obj) > 1:
            return [new_message(item) for item in m.obj]
        return [m]


@fault("empty-batch-array", ["POD-RPC-007"])
class EmptyBatchArray(Fault):
    """An empty batch is answered with an array holding the error."""

    def to_pod(self, m):
        if m.is_json and m.obj == []:
            error = {"code": -32600, "message": "invalid request: empty batch"}
            self.proxy.answer([{"jsonrpc": "2.0", "id": None, "error": error}])
            return []
        return [m]


@fault("notification-batch-empty-array", ["POD-RPC-008"])
class NotificationBatchEmptyArray(Fault):
    """A batch of notifications is answered with []."""

    def to_pod(self, m):
        if (
            m.is_json
            and isinstance(m.obj, list)
            and m.obj
            and all(isinstance(e, dict) and "id" not in e for e in m.obj)
        ):
            self.proxy.answer([])
        return [m]


@fault("id-rounded", ["POD-RPC-009"])
class IdRounded(RewriteOut):
    """Number ids go through a double: above 2^53 they come back rounded."""

    def change(self, m):
        if m.is_dict() and isinstance(m.obj.get("id"), int) and not isinstance(m.obj["id"], bool):
            m.obj["id"] = int(float(m.obj["id"]))


@fault("ids-stringified", ["POD-RPC-009"])
class IdsStringified(RewriteOut):
    """Number ids come back as strings."""

    def change(self, m):
        if m.is_dict() and isinstance(m.obj.get("id"), int) and not isinstance(m.obj["id"], bool):
            if abs(m.obj["id"]) > 2**53:
                m.obj["id"] = str(m.obj["id"])


@fault("unknown-params-rejected", ["POD-RPC-010"])
class UnknownParamsRejected(Fault):
    """Unknown fields in params are refused with -32602 (a SHOULD: caught with --strict)."""

    KNOWN = {
        "initialize": {"protocolVersion", "clientInfo", "capabilities"},
        "history": set(),
    }

    def to_pod(self, m):
        req = m.request()
        if req is not None and req["method"] in self.KNOWN and "id" in req:
            extra = set(req.get("params") or {}) - self.KNOWN[req["method"]]
            if extra:
                error = {"code": -32602, "message": "unknown field %s" % sorted(extra)[0]}
                self.proxy.answer({"jsonrpc": "2.0", "id": req["id"], "error": error})
                return []
        return [m]


@fault("log-line-on-stdout", ["POD-RPC-011"])
class LogLineOnStdout(Fault):
    """A log line goes to stdout after the first answer."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.logged = False

    def to_client(self, m):
        if not self.logged:
            self.logged = True
            return [m, b"INFO pod: session opened\n"]
        return [m]


@fault("events-without-jsonrpc", ["POD-RPC-011"])
class EventsWithoutJsonrpc(RewriteOut):
    """Event notifications leave out "jsonrpc": "2.0"."""

    def change(self, m):
        if m.event() is not None:
            del m.obj["jsonrpc"]


@fault("error-with-result-null", ["POD-RPC-012"])
class ErrorWithResultNull(RewriteOut):
    """An error response also carries "result": null."""

    def change(self, m):
        if m.error() is not None:
            m.obj["result"] = None


@fault("error-without-message", ["POD-RPC-012"])
class ErrorWithoutMessage(RewriteOut):
    """An error object has no message."""

    def change(self, m):
        error = m.error()
        if error is not None:
            error.pop("message", None)


@fault("error-code-as-string", ["POD-RPC-012"])
class ErrorCodeAsString(RewriteOut):
    """An error code is a string, not an integer."""

    def change(self, m):
        error = m.error(-32001)
        if error is not None:
            error["code"] = "-32001"


@fault("success-with-error-null", ["POD-RPC-012"])
class SuccessWithErrorNull(RewriteOut):
    """A success response also carries "error": null."""

    def change(self, m):
        if m.result() is not None:
            m.obj["error"] = None


@fault("jsonrpc-1.0-accepted", ["POD-RPC-013"])
class Jsonrpc10Accepted(Fault):
    """A request with "jsonrpc": "1.0" is served."""

    def to_pod(self, m):
        req = m.request()
        if req is not None and req.get("jsonrpc") == "1.0":
            req["jsonrpc"] = "2.0"
        return [m]


@fault("jsonrpc-missing-accepted", ["POD-RPC-013"])
class JsonrpcMissingAccepted(Fault):
    """A request without "jsonrpc" is served."""

    def to_pod(self, m):
        req = m.request()
        if req is not None and "jsonrpc" not in req:
            req["jsonrpc"] = "2.0"
        return [m]


@fault("exit-after-parse-error", ["POD-RPC-014"])
class ExitAfterParseError(Fault):
    """The pod answers a parse error, then exits."""

    def to_client(self, m):
        if m.error(-32700) is not None:
            self.proxy.to_client([m])
            self.proxy.exit(1)
        return [m]


@fault("exit-after-invalid-request", ["POD-RPC-014"])
class ExitAfterInvalidRequest(Fault):
    """The pod answers an invalid request, then stops reading."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.deaf = False

    def to_pod(self, m):
        return [] if self.deaf else [m]

    def to_client(self, m):
        if m.error(-32600) is not None:
            self.deaf = True
        return [m]


@fault("non-utf8-replaced", ["POD-RPC-015"])
class NonUtf8Replaced(Fault):
    """Bytes that are not UTF-8 are read with replacement characters instead of refused."""

    def to_pod(self, m):
        if m.body is None or m.is_json:
            return [m]
        try:
            m.body.decode("utf-8")
            return [m]
        except UnicodeDecodeError:
            text = m.body.decode("utf-8", "replace").encode("utf-8")
            return [frame(self.proxy.framing, text)]


# --- initialize ----------------------------------------------------------------------------


@fault("initialize-without-pod-info", ["POD-INIT-001"])
class InitializeWithoutPodInfo(RewriteOut):
    """initialize leaves out podInfo."""

    def change(self, m):
        result = m.result()
        if isinstance(result, dict) and "podInfo" in result:
            del result["podInfo"]


@fault("askmode-always-fail-closed", ["POD-INIT-001"])
class AskModeAlwaysFailClosed(RewriteOut):
    """initialize reports askMode failClosed even to a client that approves."""

    def change(self, m):
        result = m.result()
        if isinstance(result, dict) and isinstance(result.get("permissions"), dict):
            result["permissions"]["askMode"] = "failClosed"


@fault("approval-true-honored", ["POD-INIT-002"])
class ApprovalTrueHonored(Fault):
    """A malformed capabilities.approval (true) counts as approval."""

    def to_pod(self, m):
        params = (m.request("initialize") or {}).get("params")
        caps = params.get("capabilities") if isinstance(params, dict) else None
        if isinstance(caps, dict) and caps.get("approval") is True:
            caps["approval"] = {}
        return [m]


@fault("version-error-without-data", ["POD-INIT-003"])
class VersionErrorWithoutData(RewriteOut):
    """-32006 leaves out data.supported."""

    def change(self, m):
        error = m.error(-32006)
        if error is not None:
            error.pop("data", None)


@fault("second-initialize-accepted", ["POD-INIT-004"])
class SecondInitializeAccepted(RewriteOut):
    """A second initialize is answered like the first."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.first = None

    def change(self, m):
        if self.proxy.method_of(m) != "initialize":
            return
        if m.result() is not None and self.first is None:
            self.first = m.result()
        elif m.error(-32002) is not None and self.first is not None:
            del m.obj["error"]
            m.obj["result"] = self.first


@fault("not-initialized-as-invalid", ["POD-INIT-005"])
class NotInitializedAsInvalid(RewriteOut):
    """A method before initialize gets -32600 instead of -32001."""

    def change(self, m):
        set_code(m, -32001, -32600)


# --- lifecycle -----------------------------------------------------------------------------


@fault("shutdown-exit-1", ["POD-LIFE-001"])
class ShutdownExit1(Fault):
    """The pod exits 1 after shutdown."""

    def exit_code(self, code):
        return 1 if self.proxy.shutdown_sent and code == 0 else code


@fault("eof-pending-not-resolved", ["POD-LIFE-002"])
class EofPendingNotResolved(RewriteOut):
    """At stdin EOF a pending request is dropped without permissionResolved."""

    def to_client(self, m):
        params = m.event("permissionResolved")
        if params is not None and params.get("by") == "disconnect":
            return []
        return [m]


@fault("eof-slow-exit", ["POD-LIFE-002", "POD-LIFE-004"])
class EofSlowExit(Fault):
    """At stdin EOF the pod takes 1.5 s to exit."""

    def client_eof(self):
        time.sleep(1.5)


@fault("shutdown-response-late", ["POD-LIFE-003", "POD-LIFE-005"])
class ShutdownResponseLate(Fault):
    """The shutdown response is sent after the messages that follow it."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.held = None

    def to_client(self, m):
        if self.held is None and self.proxy.method_of(m) == "shutdown":
            self.held = m
            return []
        return [m]

    def output_end(self):
        return [self.held] if self.held is not None else []


@fault("shutdown-resolves-as-disconnect", ["POD-LIFE-003"])
class ShutdownResolvesAsDisconnect(RewriteOut):
    """Requests pending at shutdown resolve with by: disconnect."""

    def change(self, m):
        params = m.event("permissionResolved")
        if params is not None and params.get("by") == "shutdown":
            params["by"] = "disconnect"


@fault("eof-exit-1", ["POD-LIFE-004"])
class EofExit1(Fault):
    """The pod exits 1 at stdin EOF when idle."""

    def exit_code(self, code):
        return 1 if not self.proxy.shutdown_sent and code == 0 else code


@fault("requests-after-shutdown-dropped", ["POD-LIFE-005"])
class RequestsAfterShutdownDropped(Fault):
    """Requests after shutdown are dropped instead of answered with -32005."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.closed = False

    def to_pod(self, m):
        if self.closed:
            return []
        if m.request("shutdown") is not None:
            self.closed = True
        return [m]


# --- events --------------------------------------------------------------------------------


@fault("tool-call-wrong-turn", ["POD-EVT-001"])
class ToolCallWrongTurn(RewriteOut):
    """toolCall carries another turn's id."""

    def change(self, m):
        params = m.event("toolCall")
        if params is not None:
            params["turnId"] = "turn_elsewhere"


@fault("run-response-before-turn-end", ["POD-EVT-002"])
class RunResponseBeforeTurnEnd(Fault):
    """The run response is sent before turnEnded and status idle."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.held = []

    def to_client(self, m):
        if m.event("turnEnded") is not None or (self.held and m.event("status") is not None):
            self.held.append(m)
            return []
        if self.held and self.proxy.method_of(m) == "run":
            out, self.held = [m] + self.held, []
            return out
        return [m]

    def output_end(self):
        return self.held


@fault("awaiting-status-missing", ["POD-EVT-003"])
class AwaitingStatusMissing(Fault):
    """status awaitingPermission is never sent."""

    def to_client(self, m):
        params = m.event("status")
        if params is not None and params.get("state") == "awaitingPermission":
            return []
        return [m]


@fault("resolved-twice", ["POD-EVT-004"])
class ResolvedTwice(Fault):
    """permissionResolved is sent twice."""

    def to_client(self, m):
        if m.event("permissionResolved") is not None:
            return [m, m]
        return [m]


@fault("results-reversed", ["POD-EVT-005"])
class ResultsReversed(Fault):
    """A turn's toolResult events are held back and sent in reverse order."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.held = []

    def to_client(self, m):
        if m.event("toolResult") is not None:
            self.held.append(m)
            return []
        if m.event("turnEnded") is not None:
            out = list(reversed(self.held)) + [m]
            self.held = []
            return out
        return [m]


@fault("history-results-reversed", ["POD-EVT-005"])
class HistoryResultsReversed(RewriteOut):
    """history stores a response's tool results in reverse call order."""

    def change(self, m):
        result = m.result()
        if self.proxy.method_of(m) != "history" or not isinstance(result, dict):
            return
        items = result.get("items")
        if isinstance(items, list):
            at = [i for i, item in enumerate(items) if item.get("type") == "toolResult"]
            results = [items[i] for i in at]
            for i, item in zip(at, reversed(results)):
                items[i] = item


@fault("tool-result-twice", ["POD-EVT-006"])
class ToolResultTwice(Fault):
    """A toolResult is sent twice."""

    def to_client(self, m):
        if m.event("toolResult") is not None:
            return [m, m]
        return [m]


@fault("turn-ended-twice", ["POD-EVT-007"])
class TurnEndedTwice(Fault):
    """turnEnded is sent twice."""

    def to_client(self, m):
        if m.event("turnEnded") is not None:
            return [m, m]
        return [m]


@fault("turn-started-late", ["POD-EVT-007"])
class TurnStartedLate(Fault):
    """turnStarted comes after the turn's first textDelta."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.held = None

    def to_client(self, m):
        if m.event("turnStarted") is not None:
            self.held = m
            return []
        if self.held is not None and m.event() is not None and m.event("status") is None:
            out, self.held = [m, self.held], None
            return out
        return [m]


@fault("text-delta-without-turn-id", ["POD-EVT-008"])
class TextDeltaWithoutTurnId(RewriteOut):
    """textDelta leaves out turnId."""

    def change(self, m):
        params = m.event("textDelta")
        if params is not None:
            params.pop("turnId", None)


@fault("usage-dropped", ["POD-EVT-009"])
class UsageDropped(RewriteOut):
    """turnEnded leaves out the usage the model reported."""

    def change(self, m):
        params = m.event("turnEnded")
        if params is not None:
            params.pop("usage", None)


@fault("usage-of-last-response-only", ["POD-EVT-009"])
class UsageOfLastResponseOnly(RewriteOut):
    """The run result's usage counts the last model response only (input of a second turn
    without the first turn's text)."""

    def change(self, m):
        result = m.result()
        if self.proxy.method_of(m) == "run" and isinstance(result, dict):
            usage = result.get("usage")
            if isinstance(usage, dict) and usage.get("inputTokens", 0) > 3:
                usage["inputTokens"] = 1


@fault("request-before-tool-call", ["POD-EVT-010"])
class RequestBeforeToolCall(Fault):
    """permissionRequest is sent before its toolCall."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.held = {}

    def to_client(self, m):
        call = m.event("toolCall")
        if call is not None:
            self.held[call.get("callId")] = m
            return []
        params = m.event()
        if params is not None and params.get("callId") in self.held:
            return [m, self.held.pop(params["callId"])]
        if m.event("turnEnded") is not None:
            out = list(self.held.values()) + [m]
            self.held = {}
            return out
        return [m]


# --- permissions ---------------------------------------------------------------------------


@fault("deny-rule-not-named", ["POD-PERM-001"])
class DenyRuleNotNamed(RewriteOut):
    """A deny rule's denial text does not name the rule's pattern."""

    def change(self, m):
        params = m.event("toolResult")
        if params is not None and params.get("deniedBy") == "permission":
            params["content"] = params.get("content", "").replace("rm *", "a rule")


@fault("request-without-subjects", ["POD-PERM-002"])
class RequestWithoutSubjects(RewriteOut):
    """permissionRequest leaves out subjects."""

    def change(self, m):
        params = m.event("permissionRequest")
        if params is not None:
            params.pop("subjects", None)


@fault("allow-once-denied", ["POD-PERM-003"])
class AllowOnceDenied(Fault):
    """allow_once is taken as deny."""

    def to_pod(self, m):
        req = m.request("permissionReply")
        params = (req or {}).get("params")
        if isinstance(params, dict) and params.get("decision") == "allow_once":
            params["decision"] = "deny"
        return [m]


@fault("deny-message-dropped", ["POD-PERM-004"])
class DenyMessageDropped(Fault):
    """A deny's message does not reach the result."""

    def to_pod(self, m):
        req = m.request("permissionReply")
        params = (req or {}).get("params")
        if isinstance(params, dict):
            params.pop("message", None)
        return [m]


@fault("session-grant-ignored", ["POD-PERM-005"])
class SessionGrantIgnored(Fault):
    """allow_session is taken as allow_once (no grant)."""

    def to_pod(self, m):
        req = m.request("permissionReply")
        params = (req or {}).get("params")
        if isinstance(params, dict) and params.get("decision") == "allow_session":
            params["decision"] = "allow_once"
        return [m]


@fault("requests-leak", ["POD-PERM-006"])
class RequestsLeak(Fault):
    """Clients without capabilities.approval get permissionRequest events."""

    def to_pod(self, m):
        req = m.request("initialize")
        if req is not None:
            params = req.setdefault("params", {})
            if isinstance(params, dict):
                params.setdefault("capabilities", {})
                if isinstance(params["capabilities"], dict):
                    params["capabilities"]["approval"] = {}
        return [m]


@fault("fail-closed-by-approval", ["POD-PERM-007"])
class FailClosedByApproval(RewriteOut):
    """A fail-closed ask says deniedBy approval."""

    def change(self, m):
        params = m.event("toolResult")
        if params is not None and "no approver" in str(params.get("content")):
            params["deniedBy"] = "approval"


@fault("fail-closed-text-vague", ["POD-PERM-007"])
class FailClosedTextVague(RewriteOut):
    """A fail-closed ask's text does not say that no approver is connected."""

    def change(self, m):
        params = m.event("toolResult")
        if params is not None and isinstance(params.get("content"), str):
            params["content"] = params["content"].split(", but no approver")[0]


@fault("unknown-reply-without-data", ["POD-PERM-008"])
class UnknownReplyWithoutData(RewriteOut):
    """-32004 leaves out data."""

    def change(self, m):
        error = m.error(-32004)
        if error is not None:
            error.pop("data", None)


@fault("resolved-reply-says-unknown", ["POD-PERM-009"])
class ResolvedReplySaysUnknown(RewriteOut):
    """A reply to a resolved request says state unknown."""

    def change(self, m):
        error = m.error(-32004)
        if error is not None and isinstance(error.get("data"), dict):
            error["data"]["state"] = "unknown"


@fault("bad-decision-resolves", ["POD-PERM-010"])
class BadDecisionResolves(Fault):
    """A decision outside the options resolves the request as deny."""

    def to_pod(self, m):
        req = m.request("permissionReply")
        params = (req or {}).get("params")
        if isinstance(params, dict) and params.get("decision") not in (
            "allow_once",
            "allow_session",
            "deny",
        ):
            params["decision"] = "deny"
        return [m]


@fault("cancel-leaves-calls-open", ["POD-PERM-011"])
class CancelLeavesCallsOpen(Fault):
    """cancel gives open calls no result."""

    def to_client(self, m):
        params = m.event("toolResult")
        if params is not None and str(params.get("content", "")).startswith("cancelled"):
            return []
        return [m]


@fault("cancel-idle-says-true", ["POD-PERM-012"])
class CancelIdleSaysTrue(RewriteOut):
    """cancel without a turn answers cancelled: true."""

    def change(self, m):
        result = m.result()
        if isinstance(result, dict) and result.get("cancelled") is False:
            result["cancelled"] = True


@fault("timeout-resolves-as-cancel", ["POD-PERM-013"])
class TimeoutResolvesAsCancel(RewriteOut):
    """An expired request resolves with by: cancel."""

    def change(self, m):
        params = m.event("permissionResolved")
        if params is not None and params.get("by") == "timeout":
            params["by"] = "cancel"


@fault("turn-in-progress-code", ["POD-PERM-014"])
class TurnInProgressCode(RewriteOut):
    """run during a turn gets -32600 instead of -32003."""

    def change(self, m):
        set_code(m, -32003, -32600)


@fault("opaque-offers-session", ["POD-PERM-015"])
class OpaqueOffersSession(RewriteOut):
    """An ask about an opaque command offers allow_session."""

    def change(self, m):
        params = m.event("permissionRequest")
        if params is not None and isinstance(params.get("options"), list):
            if "allow_session" not in params["options"]:
                params["options"].insert(1, "allow_session")


@fault("expires-at-null", ["POD-PERM-016"])
class ExpiresAtNull(RewriteOut):
    """expiresAt is null although a timeout is set."""

    def change(self, m):
        params = m.event("permissionRequest")
        if params is not None:
            params["expiresAt"] = None


@fault("expires-at-seconds", ["POD-PERM-016"])
class ExpiresAtSeconds(RewriteOut):
    """expiresAt is a count of seconds, not an RFC 3339 timestamp."""

    def change(self, m):
        params = m.event("permissionRequest")
        if params is not None and params.get("expiresAt") is not None:
            params["expiresAt"] = "300"


@fault("expires-at-made-up", ["POD-PERM-017"])
class ExpiresAtMadeUp(RewriteOut):
    """expiresAt is a time although no timeout is set."""

    def change(self, m):
        params = m.event("permissionRequest")
        if params is not None and params.get("expiresAt") is None:
            params["expiresAt"] = "2099-01-01T00:00:00Z"


@fault("expired-reply-accepted", ["POD-PERM-018"])
class ExpiredReplyAccepted(RewriteOut):
    """A reply to an expired request is accepted (answered {})."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.expired = set()

    def change(self, m):
        params = m.event("permissionResolved")
        if params is not None and params.get("by") == "timeout":
            self.expired.add(params.get("requestId"))
        error = m.error(-32004)
        if error is not None and (error.get("data") or {}).get("requestId") in self.expired:
            del m.obj["error"]
            m.obj["result"] = {}


# --- usability -----------------------------------------------------------------------------


@fault(
    "cannot-start",
    ["POD-RPC-001"],
    exit_code=3,
    stderr="cannot read manifest pod.toml: permission denied",
)
class CannotStart(Fault):
    """The pod exits at once with status 1 and a reason on stderr (a manifest it cannot read):
    the kit must say so once, with the status and the reason, and exit 3."""

    def start(self):
        sys.stderr.write("error: cannot read manifest pod.toml: permission denied\n")
        sys.stderr.flush()
        os._exit(1)


# --- ACP: the lifecycle (docs/acp.md, Methods) ---------------------------------------------


def acp_update(m, kind=None):
    """The `update` of a session/update notification (of `sessionUpdate` kind), or None."""
    req = m.request("session/update")
    params = (req or {}).get("params")
    update = params.get("update") if isinstance(params, dict) else None
    if not isinstance(update, dict):
        return None
    if kind is not None and update.get("sessionUpdate") != kind:
        return None
    return update


def acp_options(m):
    """The options of a session/request_permission request, or None."""
    req = m.request("session/request_permission")
    params = (req or {}).get("params")
    options = params.get("options") if isinstance(params, dict) else None
    return options if isinstance(options, list) else None


def selected(m):
    """The outcome object of a client's answer to session/request_permission, or None."""
    result = m.result()
    outcome = result.get("outcome") if isinstance(result, dict) else None
    return outcome if isinstance(outcome, dict) else None


def allow_once():
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


@fault("acp-version-2", ["ACP-LIFE-001"], protocol="acp")
class AcpVersion2(RewriteOut):
    """initialize answers protocol version 2, the version the agent would like, not 1."""

    def change(self, m):
        result = m.result()
        if self.proxy.method_of(m) == "initialize" and isinstance(result, dict):
            result["protocolVersion"] = 2


@fault("acp-served-before-initialize", ["ACP-LIFE-002"], protocol="acp")
class AcpServedBeforeInitialize(Fault):
    """A method before initialize is served (the agent initializes itself with defaults)."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.first = True

    def to_pod(self, m):
        req = m.request()
        if self.first and req is not None:
            self.first = False
            if req["method"] != "initialize":
                hello = {
                    "jsonrpc": "2.0",
                    "id": "plant-init",
                    "method": "initialize",
                    "params": {"protocolVersion": 1, "clientCapabilities": {}},
                }
                return [new_message(hello), m]
        return [m]

    def to_client(self, m):
        if m.is_dict() and m.obj.get("id") == "plant-init":
            return []
        return [m]


@fault("acp-second-initialize-accepted", ["ACP-LIFE-003"], protocol="acp")
class AcpSecondInitializeAccepted(RewriteOut):
    """A second initialize is answered like the first."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.first = None

    def change(self, m):
        if self.proxy.method_of(m) != "initialize":
            return
        if m.result() is not None and self.first is None:
            self.first = m.result()
        elif m.error(-32600) is not None and self.first is not None:
            del m.obj["error"]
            m.obj["result"] = self.first


@fault("acp-unknown-session-invalid-params", ["ACP-LIFE-004"], protocol="acp")
class AcpUnknownSessionInvalidParams(RewriteOut):
    """An unknown session id gets -32602 instead of -32002."""

    def change(self, m):
        set_code(m, -32002, -32602)


@fault("acp-unknown-session-without-data", ["ACP-LIFE-004"], protocol="acp")
class AcpUnknownSessionWithoutData(RewriteOut):
    """-32002 leaves out data.sessionId."""

    def change(self, m):
        error = m.error(-32002)
        if error is not None:
            error.pop("data", None)


@fault("acp-answer-before-updates", ["ACP-LIFE-005", "ACP-CANCEL-001"], protocol="acp")
class AcpAnswerBeforeUpdates(Fault):
    """session/prompt is answered before the turn's last updates (the agent's text, a call's
    final status) are sent."""

    def __init__(self, proxy):
        super().__init__(proxy)
        self.held = []

    def to_client(self, m):
        last = acp_update(m, "agent_message_chunk") is not None or (
            (acp_update(m, "tool_call_update") or {}).get("status") in ("completed", "failed")
        )
        if last:
            self.held.append(m)
            return []
        if self.proxy.method_of(m) == "session/prompt":
            held, self.held = self.held, []
            return [m] + held
        return [m]

    def output_end(self):
        return self.held


# --- ACP: permission requests (docs/acp.md, Permission requests) ------------------------------


@fault("acp-options-without-reject", ["ACP-PERM-001"], protocol="acp")
class AcpOptionsWithoutReject(RewriteOut):
    """A permission request offers no way to reject."""

    def change(self, m):
        options = acp_options(m)
        if options is not None:
            options[:] = [o for o in options if o.get("optionId") != "reject_once"]


@fault("acp-permission-other-call", ["ACP-PERM-001"], protocol="acp")
class AcpPermissionOtherCall(RewriteOut):
    """A permission request names a call id that no tool_call announced."""

    def change(self, m):
        req = m.request("session/request_permission")
        call = ((req or {}).get("params") or {}).get("toolCall")
        if isinstance(call, dict) and "toolCallId" in call:
            call["toolCallId"] = "%s_ask" % call["toolCallId"]


@fault("acp-option-kinds-mislabelled", ["ACP-PERM-001"], protocol="acp")
class AcpOptionKindsMislabelled(RewriteOut):
    """allow_always is offered with the kind allow_once (an editor cannot tell them apart)."""

    def change(self, m):
        for option in acp_options(m) or []:
            if option.get("optionId") == "allow_always":
                option["kind"] = "allow_once"


class RewriteAnswer(Fault):
    """Rewrites the client's answers to session/request_permission with `change(outcome, req)`
    (`outcome`: the outcome object of a result, or None for an error response)."""

    def to_pod(self, m):
        req = self.proxy.answered(m, "session/request_permission")
        if req is not None:
            self.change(m, selected(m), req)
        return [m]

    def change(self, m, outcome, req):
        pass


def choose(outcome, was, now):
    if outcome is not None and outcome.get("optionId") == was:
        outcome["optionId"] = now


@fault("acp-allow-once-denied", ["ACP-PERM-002"], protocol="acp")
class AcpAllowOnceDenied(RewriteAnswer):
    """allow_once is read as a rejection."""

    def change(self, m, outcome, req):
        choose(outcome, "allow_once", "reject_once")


@fault("acp-allow-always-as-once", ["ACP-PERM-003"], protocol="acp")
class AcpAllowAlwaysAsOnce(RewriteAnswer):
    """allow_always is read as allow_once: no grant, the same call asks again."""

    def change(self, m, outcome, req):
        choose(outcome, "allow_always", "allow_once")


@fault("acp-reject-once-allows", ["ACP-PERM-004"], protocol="acp")
class AcpRejectOnceAllows(RewriteAnswer):
    """reject_once is read as allow_once."""

    def change(self, m, outcome, req):
        choose(outcome, "reject_once", "allow_once")


class Pretend(RewriteAnswer):
    """Reads the answer `was` as `now`, and reports the call's result status as the answer
    asked (`reported`): what the client sees is right, what ran is not."""

    was, now, reported = None, None, None

    def change(self, m, outcome, req):
        choose(outcome, self.was, self.now)

    def to_client(self, m):
        update = acp_update(m, "tool_call_update")
        if update is not None and update.get("status") in ("completed", "failed"):
            update["status"] = self.reported
        return [m]


@fault("acp-rejected-call-runs", ["ACP-PERM-004"], protocol="acp")
class AcpRejectedCallRuns(Pretend):
    """reject_once runs the call, and the update says failed as if it had not."""

    was, now, reported = "reject_once", "allow_once", "failed"


@fault("acp-allowed-call-skipped", ["ACP-PERM-002"], protocol="acp")
class AcpAllowedCallSkipped(Pretend):
    """allow_once does not run the call, and the update says completed as if it had."""

    was, now, reported = "allow_once", "reject_once", "completed"


@fault("acp-denial-reported-completed", ["ACP-PERM-004", "ACP-PERM-010"], protocol="acp")
class AcpDenialReportedCompleted(RewriteOut):
    """A denied call's tool_call_update says completed, not failed."""

    def change(self, m):
        update = acp_update(m, "tool_call_update")
        if update is not None and update.get("status") == "failed":
            update["status"] = "completed"


@fault("acp-unoffered-option-allows", ["ACP-PERM-005", "ACP-PERM-007"], protocol="acp")
class AcpUnofferedOptionAllows(RewriteAnswer):
    """An option that was not offered (reject_always; allow_always for an opaque command) is
    taken as an allow."""

    def change(self, m, outcome, req):
        offered = [o.get("optionId") for o in (req.get("params") or {}).get("options") or []]
        if outcome is not None and outcome.get("outcome") == "selected":
            if outcome.get("optionId") not in offered:
                outcome["optionId"] = "allow_once"


@fault("acp-opaque-offers-always", ["ACP-PERM-006"], protocol="acp")
class AcpOpaqueOffersAlways(RewriteOut):
    """An ask about an opaque command offers allow_always."""

    def change(self, m):
        options = acp_options(m)
        if options is not None and all(o.get("optionId") != "allow_always" for o in options):
            options.insert(
                1, {"optionId": "allow_always", "name": "Allow always", "kind": "allow_always"}
            )


@fault("acp-cancelled-outcome-allows", ["ACP-PERM-008"], protocol="acp")
class AcpCancelledOutcomeAllows(RewriteAnswer):
    """The outcome cancelled is read as allow_once."""

    def change(self, m, outcome, req):
        if outcome is not None and outcome.get("outcome") == "cancelled":
            m.obj["result"] = allow_once()


@fault("acp-error-answer-allows", ["ACP-PERM-009"], protocol="acp")
class AcpErrorAnswerAllows(RewriteAnswer):
    """A JSON-RPC error answering session/request_permission is read as allow_once."""

    def change(self, m, outcome, req):
        if m.error() is not None:
            del m.obj["error"]
            m.obj["result"] = allow_once()


# --- ACP: session/cancel -----------------------------------------------------------------


@fault("acp-cancel-ignored", ["ACP-CANCEL-001", "ACP-CANCEL-002"], protocol="acp")
class AcpCancelIgnored(Fault):
    """session/cancel is ignored: the pending request stays open."""

    def to_pod(self, m):
        if m.request("session/cancel") is not None:
            return []
        return [m]


@fault("acp-cancel-ends-turn", ["ACP-CANCEL-001"], protocol="acp")
class AcpCancelEndsTurn(RewriteOut):
    """A cancelled prompt answers stopReason end_turn."""

    def change(self, m):
        result = m.result()
        if isinstance(result, dict) and result.get("stopReason") == "cancelled":
            result["stopReason"] = "end_turn"


@fault("acp-withdraw-missing", ["ACP-CANCEL-002"], protocol="acp")
class AcpWithdrawMissing(Fault):
    """A request the cancel resolved is not withdrawn ($/cancel_request never sent)."""

    def to_client(self, m):
        if m.request("$/cancel_request") is not None:
            return []
        return [m]


fault(
    "acp-cannot-start",
    ["ACP-LIFE-001"],
    exit_code=3,
    stderr="cannot read manifest pod.toml: permission denied",
    protocol="acp",
)(CannotStart)


def main():
    if sys.argv[1:] == ["--list"]:
        faults = [
            {k: v for k, v in spec.items() if k != "cls"} | {"name": name}
            for name, spec in FAULTS.items()
        ]
        print(json.dumps(faults, indent=1))
        return
    if len(sys.argv) < 3 or sys.argv[1] not in FAULTS:
        sys.exit("usage: plant.py FAULT POD_COMMAND... (plant.py --list names the faults)")
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    Proxy(FAULTS[sys.argv[1]]["cls"], sys.argv[2:]).run()


if __name__ == "__main__":
    main()
