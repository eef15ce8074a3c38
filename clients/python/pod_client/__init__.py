"""Python client for ``pod serve``: JSON-RPC 2.0 over stdio, with a scripted approval policy."""

from .binary import find_pod_bin
from .client import PROTOCOL_VERSION, EventStream, PodClient, default_pod_bin, text_input
from .errors import PodConnectionError, PodError, PodNotFoundError
from .policy import Policy, PolicyError, Rule, Verdict

__all__ = [
    "PROTOCOL_VERSION",
    "EventStream",
    "PodClient",
    "PodConnectionError",
    "PodError",
    "PodNotFoundError",
    "Policy",
    "PolicyError",
    "Rule",
    "Verdict",
    "default_pod_bin",
    "find_pod_bin",
    "text_input",
]
__version__ = "0.1.0"
