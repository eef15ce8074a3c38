"""Errors raised by the pod client."""

from __future__ import annotations

from typing import Any

# Standard JSON-RPC 2.0 codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# Pod-specific codes (docs/protocol.md, "Errors").
NOT_INITIALIZED = -32001
ALREADY_INITIALIZED = -32002
TURN_IN_PROGRESS = -32003
UNKNOWN_PERMISSION_REQUEST = -32004
SHUTTING_DOWN = -32005
UNSUPPORTED_PROTOCOL_VERSION = -32006
CANNOT_OPEN = -32007

ERROR_NAMES = {
    PARSE_ERROR: "ParseError",
    INVALID_REQUEST: "InvalidRequest",
    METHOD_NOT_FOUND: "MethodNotFound",
    INVALID_PARAMS: "InvalidParams",
    INTERNAL_ERROR: "InternalError",
    NOT_INITIALIZED: "NotInitialized",
    ALREADY_INITIALIZED: "AlreadyInitialized",
    TURN_IN_PROGRESS: "TurnInProgress",
    UNKNOWN_PERMISSION_REQUEST: "UnknownPermissionRequest",
    SHUTTING_DOWN: "ShuttingDown",
    UNSUPPORTED_PROTOCOL_VERSION: "UnsupportedProtocolVersion",
    CANNOT_OPEN: "CannotOpen",
}


class PodError(Exception):
    """A JSON-RPC error response from the pod: ``code``, ``message`` and ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code} {ERROR_NAMES.get(code, 'Error')}: {message}")
        self.code = code
        self.message = message
        self.data = data

    @property
    def name(self) -> str:
        return ERROR_NAMES.get(self.code, "Error")


class PodConnectionError(ConnectionError):
    """The pod process went away (or was never started) while a request was outstanding."""


class PodNotFoundError(PodConnectionError, FileNotFoundError):
    """No pod binary to start: ``POD_BIN`` (or ``pod_bin``) names nothing executable, or none of
    the places searched holds one (see ``pod_client.binary``). The message says which."""
