"""The agent's wire protocol: newline-delimited JSON in the JSON-RPC 2.0 shape (see PROTOCOL.md).

Pure data and encoding, no I/O: the client, the server and the tests share it.
Standard library and ``jobs`` only, so that the TUI may import the client.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.next_steps import command

#: the protocol this code speaks, and the oldest one it still accepts from the other side
PROTOCOL_VERSION = 1
OLDEST_ACCEPTED = 1
#: the longest line either side reads (a job spec, a job's summary, one event)
MAX_LINE = 4 * 1024 * 1024
#: a request's id, echoed in its answer: a string of at most this many characters, or an integer within int64
MAX_ID_LENGTH = 256
ID_BOUND = 2**63 - 1


class ErrorCode(enum.IntEnum):
    # JSON-RPC 2.0's own
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    # ours (the range JSON-RPC leaves to servers)
    VERSION_MISMATCH = -32000
    HELLO_FIRST = -32001
    NO_SUCH_JOB = -32002
    CONFLICT = -32003
    SHUTTING_DOWN = -32004
    JOBS_RUNNING = -32005
    JOB_FINISHED = -32006
    #: the cluster refused a cluster method, or has no such object; nothing was changed
    CLUSTER_ERROR = -32007
    #: the answer would be longer than MAX_LINE; nothing was changed by asking
    REPLY_TOO_LARGE = -32008
    #: a connection asked for more than its bound (attached streams at once)
    LIMIT_REACHED = -32009


class Method(enum.StrEnum):
    HELLO = "hello"
    SUBMIT = "submit"
    LIST = "list"
    SHOW = "show"
    ATTACH = "attach"
    CANCEL = "cancel"
    PAUSE = "pause"
    RESUME = "resume"
    #: a running campaign drains these nodes through a surge
    SURGE = "surge"
    SHUTDOWN = "shutdown"
    # the cluster, for the TUI's Nodes and Workloads screens (cluster_calls.py)
    NODES = "nodes"
    PLAN = "plan"
    CORDON = "cordon"
    UNCORDON = "uncordon"
    WORKLOADS = "workloads"
    HISTORY = "history"
    PODS = "pods"
    ABORT = "abort"


class Notice(enum.StrEnum):
    """Notifications the agent sends (no id, no answer expected)."""

    #: one event of an attached job: params are the event's envelope (``Envelope.as_dict()``)
    EVENT = "event"
    #: a client fell behind: params ``{"job", "skipped"}``, events superseded by later ones were left out
    LAGGED = "lagged"
    #: an attached stream is over: params ``{"job", "last_seq"}``
    END = "end"
    #: an event longer than the line limit, not sent: params ``{"job", "seq", "bytes", "limit"}``
    OMITTED = "omitted"


class ProtocolError(AgentError):
    """A message that breaks the protocol, or an error the other side answered with."""

    def __init__(self, code: ErrorCode | int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.data = data
        #: the id of the request it answers, when the request got far enough to have a readable one
        self.request_id: int | str | None = None


@dataclass(frozen=True)
class Request:
    id: int | str
    method: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Response:
    id: int | str | None
    result: Any = None
    error: ProtocolError | None = None


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any] = field(default_factory=dict)


Message = Request | Response | Notification


def encode(message: Message) -> bytes:
    """One line of JSON, newline-terminated."""
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    if isinstance(message, Request):
        body.update(id=message.id, method=message.method, params=message.params)
    elif isinstance(message, Notification):
        body.update(method=message.method, params=message.params)
    elif message.error is not None:
        error: dict[str, Any] = {"code": message.error.code, "message": message.error.message}
        if message.error.data is not None:
            error["data"] = message.error.data
        body.update(id=message.id, error=error)
    else:
        body.update(id=message.id, result=message.result)
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def encode_event(envelope_json: str) -> bytes:
    """An ``event`` notification around an envelope already serialised (the agent encodes each event once)."""
    return b'{"jsonrpc":"2.0","method":"event","params":' + envelope_json.encode() + b"}\n"


def decode(line: bytes | str, *, strict: bool = False) -> Message:
    """Parse one line; a ProtocolError carries the JSON-RPC code to answer with, and the id when it was read.

    ``strict`` (the agent reading requests) refuses ids past ``MAX_ID_LENGTH`` / int64. ``NaN`` and
    ``Infinity``, which Python's json module reads as floats, are left to the params' schema: it refuses
    them naming the param (``limit must be an integer``), which says more than "not JSON".
    """
    try:
        body = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise ProtocolError(ErrorCode.PARSE_ERROR, f"not JSON: {err}") from err
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise ProtocolError(ErrorCode.INVALID_REQUEST, 'not a JSON-RPC 2.0 message (no "jsonrpc": "2.0")')
    ident = body.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, int | str)):
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "id must be an integer or a string")
    if strict and (
        (isinstance(ident, str) and len(ident) > MAX_ID_LENGTH) or (isinstance(ident, int) and abs(ident) > ID_BOUND)
    ):
        raise ProtocolError(
            ErrorCode.INVALID_REQUEST, f"id must be a string of at most {MAX_ID_LENGTH} characters or an int64"
        )
    try:
        return _message(body, ident)
    except ProtocolError as err:
        err.request_id = ident
        raise


def _message(body: dict[str, Any], ident: int | str | None) -> Message:
    if "method" in body:
        method, params = body["method"], body.get("params", {})
        if not isinstance(method, str):
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "method must be a string")
        if not isinstance(params, dict):
            raise ProtocolError(ErrorCode.INVALID_PARAMS, "params must be an object (named parameters)")
        return Notification(method, params) if ident is None else Request(ident, method, params)
    if "error" in body:
        error = body["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise ProtocolError(ErrorCode.INVALID_REQUEST, "error must be an object with an integer code")
        return Response(ident, error=ProtocolError(error["code"], str(error.get("message", "")), error.get("data")))
    if "result" in body:
        return Response(ident, result=body["result"])
    raise ProtocolError(ErrorCode.INVALID_REQUEST, "neither a request (method) nor a response (result or error)")


def encode_reply(response: Response) -> bytes:
    """``response`` as one line, or, when that line would pass MAX_LINE, a REPLY_TOO_LARGE error for its id.

    The other side reads at most MAX_LINE per line: a longer one would be cut, and every line after it misread.
    """
    line = encode(response)
    if len(line) <= MAX_LINE:
        return line
    refusal = ProtocolError(
        ErrorCode.REPLY_TOO_LARGE,
        f"the answer would be {len(line)} bytes, more than the protocol's line limit ({MAX_LINE}); ask for less "
        "(list: a smaller limit; a job's whole spec: show)",
        {"bytes": len(line), "limit": MAX_LINE},
    )
    return encode(Response(response.id, error=refusal))


# --- versions ---------------------------------------------------------------------------------


def negotiate(
    *,
    client_version: int,
    client_oldest: int,
    server_version: int = PROTOCOL_VERSION,
    server_oldest: int = OLDEST_ACCEPTED,
) -> int:
    """The version both sides speak: the newer side steps down to the older one, if it still accepts it."""
    agreed = min(client_version, server_version)
    if agreed >= max(client_oldest, server_oldest):
        return agreed
    stop = command("agent", "stop")
    if server_version < client_oldest:
        hint = (
            f"the running agent is older than this plugin; stop it with `{stop}` (running jobs resume when "
            "the new agent starts) and run the command again"
        )
    else:
        hint = (
            f"the running agent is newer than this plugin; use the plugin that started it, or stop the agent "
            f"with `{stop}` (running jobs resume when the new one starts)"
        )
    raise ProtocolError(
        ErrorCode.VERSION_MISMATCH,
        f"agent protocol mismatch: this client speaks {client_version} (accepts {client_oldest} and newer), "
        f"the agent speaks {server_version} (accepts {server_oldest} and newer); {hint}",
        {"server_version": server_version, "server_oldest": server_oldest},
    )


# --- what the methods return -----------------------------------------------------------------

#: the longest ``target``, ``summary`` or ``error`` in a ``list`` answer (``show`` has them whole)
ABRIDGED_TEXT = 512


def cut(text: str, limit: int, *, length: int | None = None) -> str:
    """``text`` within ``limit`` characters, saying how long it was; ``length``: its whole length, when ``text``
    is already a prefix of it (the journal reads no more than it shows)."""
    whole = len(text) if length is None else length
    if whole <= limit:
        return text
    tail = f"... ({whole} characters; see show)"
    return text[: max(0, limit - len(tail))] + tail


@dataclass(frozen=True, kw_only=True)
class JobInfo:
    """One job as ``list``, ``show``, ``submit`` and ``cancel`` return it."""

    id: str
    kind: str
    target: str
    state: str
    context: str | None = None
    namespace: str | None = None
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    summary: str = ""
    error: str = ""
    #: the sequence number of its last event so far
    last_seq: int = 0
    #: how many times it was started: 2 and more means it was resumed
    runs: int = 0
    cancel_requested: bool = False
    #: no new eviction starts until it is resumed
    paused: bool = False
    spec: dict[str, Any] = field(default_factory=dict)
    #: connections attached to its events now (0 from an agent older than this field)
    attached: int = 0
    #: the client that submitted it, as its hello named it, with its pid ("" for jobs journaled before it was kept)
    submitted_by: str = ""
    #: as ``list`` answers (``Journal.summaries``): ``spec`` has its kind, version and connection only;
    #: ``target``, ``summary`` and ``error`` are cut at ``ABRIDGED_TEXT`` characters. ``show`` has it whole
    abridged: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobInfo:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def coalesce(backlog: list[tuple[int, str | None, bytes]]) -> list[tuple[int, str | None, bytes]]:
    """A lagging client's backlog ``(seq, coalesce_key, line)`` without the events a later one supersedes.

    Events without a key all stay; of those with a key only the last stays. Order is kept, so a reducer
    folding what remains ends at the same view.
    """
    last: dict[str, int] = {}
    for seq, key, _line in backlog:
        if key is not None:
            last[key] = seq
    return [item for item in backlog if item[1] is None or last[item[1]] == item[0]]
