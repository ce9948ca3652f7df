"""Talking to the agent, the one implementation: connect (starting it if needed), hello, then submit, list,
show, attach, cancel, pause, resume, shutdown, and the cluster methods of ``cluster_calls`` (``run``).

An asyncio client: the TUI uses it on Textual's loop (a Textual app must never
block its loop on a socket read), and the synchronous ``sync.AgentClient``
runs it on a private loop of its own, so the protocol is written once (kr8s
does the same). Standard library, the protocol and ``jobs`` only: the CLI
imports it before every job command, and the TUI imports it.

One connection answers requests in order, one at a time; an attached
connection carries the job's events and is used for nothing else
(PROTOCOL.md), so a client that follows a job opens a connection for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kubectl_rollout.agent.client import starting
from kubectl_rollout.agent.client.cluster_calls import Call
from kubectl_rollout.agent.errors import AgentError, AgentUnavailable
from kubectl_rollout.agent.paths import AgentPaths, agent_paths
from kubectl_rollout.agent.protocol import (
    MAX_LINE,
    OLDEST_ACCEPTED,
    PROTOCOL_VERSION,
    JobInfo,
    Method,
    Notice,
    Notification,
    ProtocolError,
    Request,
    Response,
    decode,
    encode,
)
from kubectl_rollout.agent.settings import seconds_from
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import JobSpec

#: how long a spawned agent may take to answer (it imports the kubernetes client first)
START_TIMEOUT = 20.0
#: how long a listening agent may take to answer hello: one that accepts and never answers (stopped, wedged)
#: must not hang every command that connects
HELLO_TIMEOUT = 10.0
#: seconds instead of HELLO_TIMEOUT (the tests of a wedged agent shorten it; a very slow machine may lengthen it)
ENV_HELLO_TIMEOUT = "ROLLOUT_PLUS_AGENT_HELLO_TIMEOUT"
#: sees every line sent (">") and received ("<"), for tests and debugging
Trace = Callable[[str, bytes], None]

T = TypeVar("T")

_NOT_LISTENING = (errno.ENOENT, errno.ECONNREFUSED, errno.ECONNRESET)


def hello_timeout(environ: Mapping[str, str] = os.environ) -> float:
    """HELLO_TIMEOUT, or the positive number of seconds ENV_HELLO_TIMEOUT gives (at most 30 times it)."""
    return seconds_from(environ, ENV_HELLO_TIMEOUT, HELLO_TIMEOUT)


@dataclass(frozen=True)
class Lagged:
    """The agent left out ``skipped`` events superseded by later ones: folding what arrives stays correct."""

    job: str
    skipped: int


class AsyncAgentClient:
    """One connection to the agent (greeted by ``connect``). Calls may come from several tasks: they take turns.

    ``io_timeout``: the longest any read or write may wait (None: no bound; an attached stream may wait long
    between events).
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        paths: AgentPaths,
        *,
        name: str = "cli",
        trace: Trace | None = None,
        io_timeout: float | None = None,
    ) -> None:
        self.paths = paths
        self.name = name
        self.agent: dict[str, Any] = {}
        self.io_timeout = io_timeout
        self._reader = reader
        self._writer = writer
        self._trace = trace
        self._ids = itertools.count(1)
        self._turn = asyncio.Lock()

    @classmethod
    async def open(cls, paths: AgentPaths | None = None, *, name: str = "tui", start: bool = True) -> AsyncAgentClient:
        """A greeted connection; with ``start``, an agent is started first when none answers."""
        return await connect(paths, start=start, name=name)

    # --- plumbing --------------------------------------------------------------------------

    def _lost(self, err: BaseException | None) -> AgentError:
        if err is None:
            why = ""
        elif isinstance(err, TimeoutError) and not str(err):
            why = ": timed out"
        else:
            why = f": {getattr(err, 'strerror', None) or err}"
        return AgentError(
            f"lost the connection to the agent ({self.paths.socket}){why}; its jobs go on or resume when it starts "
            f"again: `{command('jobs', 'list')}`; its log: `{command('agent', 'logs')}`"
        )

    async def _bounded(self, step: Any) -> Any:
        if self.io_timeout is None:
            return await step
        return await asyncio.wait_for(step, self.io_timeout)

    async def _send(self, data: bytes) -> None:
        if self._trace is not None:
            self._trace(">", data)
        try:
            self._writer.write(data)
            await self._bounded(self._writer.drain())
        except OSError as err:  # TimeoutError included
            raise self._lost(err) from err

    async def _line(self) -> bytes:
        """The next line; a lost connection or a line past the protocol's limit is an AgentError."""
        try:
            line: bytes = await self._bounded(self._reader.readline())
        except ValueError:  # longer than MAX_LINE: the rest of it is still in the socket
            self._writer.close()
            raise AgentError(
                f"the agent sent a line longer than the protocol's limit ({MAX_LINE} bytes); this connection is "
                f"closed. An older agent answers `jobs list` with whole jobs: `{command('agent', 'stop')}` and run "
                "the command again to use this version's agent"
            ) from None
        except OSError as err:  # TimeoutError included
            raise self._lost(err) from err
        if self._trace is not None and line:
            self._trace("<", line)
        if not line:
            raise self._lost(None)
        return line

    async def _receive(self) -> Response | Notification:
        message = decode(await self._line())
        if isinstance(message, Request):
            raise ProtocolError(-32600, f"the agent sent a request ({message.method}); clients answer none")
        return message

    async def call(self, method: Method | str, **params: Any) -> Any:
        """Send a request and wait for its answer; an error answer is raised as a ProtocolError."""
        async with self._turn:
            ident = next(self._ids)
            await self._send(encode(Request(ident, str(method), params)))
            while True:
                message = await self._receive()
                if isinstance(message, Response) and message.id in (ident, None):
                    if message.error is not None:
                        raise message.error
                    return message.result

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError, ConnectionError, RuntimeError):
            await self._writer.wait_closed()

    async def __aenter__(self) -> AsyncAgentClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    # --- methods ---------------------------------------------------------------------------

    async def hello(self) -> dict[str, Any]:
        result = await self.call(Method.HELLO, protocol=PROTOCOL_VERSION, oldest=OLDEST_ACCEPTED, client=self.name)
        self.agent = dict(result)
        return self.agent

    async def submit(self, spec: JobSpec) -> JobInfo:
        return JobInfo.from_dict(await self.call(Method.SUBMIT, spec=spec.as_dict()))

    async def jobs(self, *, limit: int = 100) -> list[JobInfo]:
        """The newest jobs, abridged (``JobInfo.abridged``; ``show`` has one whole); fewer than ``limit`` when
        they would not all fit in one line."""
        result = await self.call(Method.LIST, limit=limit)
        return [JobInfo.from_dict(item) for item in result["jobs"]]

    async def show(self, job_id: str) -> JobInfo:
        return JobInfo.from_dict(await self.call(Method.SHOW, job=job_id))

    async def cancel(self, job_id: str) -> JobInfo:
        return JobInfo.from_dict(await self.call(Method.CANCEL, job=job_id))

    async def pause(self, job_id: str) -> JobInfo:
        return JobInfo.from_dict(await self.call(Method.PAUSE, job=job_id))

    async def resume(self, job_id: str) -> JobInfo:
        return JobInfo.from_dict(await self.call(Method.RESUME, job=job_id))

    async def shutdown(self, *, force: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = await self.call(Method.SHUTDOWN, force=force)
        return result

    async def run(self, call: Call[T]) -> T:
        """One of ``cluster_calls``' requests (``nodes``, ``plan``, ``cordon``, ``workloads``, ...), its answer read."""
        return call.parse(await self.call(call.method, **call.params))

    async def attach(
        self, job_id: str, *, from_seq: int = 1, follow: bool = True, coalesce: bool = False
    ) -> AsyncIterator[Envelope | Lagged]:
        """The job's events from ``from_seq`` on, then (``follow``) live until its last.

        With ``coalesce``, the events the job has already are sent without those a later event of the same
        object supersedes (announced by a ``Lagged``); folding them ends at the same view. An agent older
        than this parameter ignores it and sends every event. Use this connection for nothing else while
        iterating.
        """
        params: dict[str, Any] = {"job": job_id, "from_seq": from_seq, "follow": follow}
        if coalesce:
            params["coalesce"] = True
        await self.call(Method.ATTACH, **params)
        while True:
            line = await self._line()
            # Nearly every line is an event: parsed once, straight into its envelope (a 5000-pod drain's
            # backlog is 15 000 of them); anything else goes through the protocol's checks.
            try:
                body = json.loads(line)
            except ValueError:
                body = None  # decode() below says what is wrong with it
            if isinstance(body, dict) and body.get("method") == Notice.EVENT and "id" not in body:
                yield Envelope.from_dict(body["params"])
                continue
            message = decode(line)
            if isinstance(message, Request):
                raise ProtocolError(-32600, f"the agent sent a request ({message.method}); clients answer none")
            if not isinstance(message, Notification):
                continue
            if message.method == Notice.EVENT:
                yield Envelope.from_dict(message.params)
            elif message.method == Notice.LAGGED:
                yield Lagged(job=str(message.params.get("job", job_id)), skipped=int(message.params["skipped"]))
            elif message.method == Notice.END:
                return


# --- connecting, and starting the agent ----------------------------------------------------------


async def _open(
    paths: AgentPaths, *, trace: Trace | None, name: str, io_timeout: float | None = None
) -> AsyncAgentClient:
    """A greeted connection, or OSError when nothing listens (or the agent hung up during hello)."""
    bound = hello_timeout()
    greeting = bound if io_timeout is None else min(io_timeout, bound)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_unix_connection(str(paths.socket), limit=MAX_LINE), greeting
        )
    except TimeoutError as err:
        raise TimeoutError("timed out") from err
    client = AsyncAgentClient(reader, writer, paths, name=name, trace=trace, io_timeout=greeting)
    try:
        await client.hello()
        client.io_timeout = io_timeout  # an attached stream may wait long between events: no bound unless asked
    except ProtocolError:
        await client.close()
        raise
    except AgentError as err:
        await client.close()
        if isinstance(err.__cause__, TimeoutError):
            # Listening, and silent: starting another beside it would fail on its pid lock. Said at once.
            raise AgentUnavailable(
                f"the agent at {paths.socket} accepted the connection but did not answer within "
                f"{bound:g} s (stopped or stuck); `{command('agent', 'status')}` shows it, "
                f"`{command('agent', 'stop', '--force')}` ends it"
            ) from err
        # Accepted, then reset: the agent is exiting (a killed agent's last thread still held the socket).
        raise ConnectionResetError(errno.ECONNRESET, "the agent hung up during hello") from err
    except BaseException:
        await client.close()
        raise
    return client


def _not_listening(err: OSError) -> bool:
    return err.errno in _NOT_LISTENING


def _unreachable(paths: AgentPaths, err: OSError) -> AgentUnavailable:
    return AgentUnavailable(f"cannot reach the agent at {paths.socket}: {err.strerror or err}")


async def connect(
    paths: AgentPaths | None = None,
    *,
    start: bool = True,
    environ: Mapping[str, str] | None = None,
    trace: Trace | None = None,
    name: str = "cli",
    timeout: float = START_TIMEOUT,
    io_timeout: float | None = None,
) -> AsyncAgentClient:
    """A greeted connection to this user's agent, started first if ``start`` and none answers.

    ``io_timeout``: the longest any read or write on the connection may wait (``agent stop`` and ``status``
    must not hang on an agent that accepts and never answers). Raises AgentUnavailable when there is no agent
    (``start=False``) or it could not be started, and ProtocolError when it speaks a protocol this client does
    not accept.
    """
    paths = (paths or agent_paths(environ)).ensure()
    try:
        return await _open(paths, trace=trace, name=name, io_timeout=io_timeout)
    except OSError as err:
        if not _not_listening(err):
            raise _unreachable(paths, err) from err
        if not start:
            raise AgentUnavailable(
                f"no agent is running (no answer on {paths.socket}); `{command('agent', 'start')}` starts one, "
                "and so does any job command run in a terminal"
            ) from err
    async with starting.spawn_lock(paths.spawn_lock):
        try:
            return await _open(paths, trace=trace, name=name)  # another client may have started it meanwhile
        except OSError as err:
            if not _not_listening(err):
                raise _unreachable(paths, err) from err
        if not starting.agent_alive(paths):
            paths.socket.unlink(missing_ok=True)  # stale: left by an agent that died
        process = starting.spawn(paths, environ)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await _open(paths, trace=trace, name=name)
            except OSError as err:
                if not _not_listening(err):
                    raise _unreachable(paths, err) from err
            code = process.poll()
            if code is not None and not starting.agent_alive(paths):
                said = paths.start_errors.read_text(errors="replace").strip().splitlines()
                why = said[-1] if said else f"it exited with code {code}"
                raise AgentUnavailable(f"the agent did not start: {why} (its log: {paths.log})")
            if time.monotonic() > deadline:
                raise AgentUnavailable(
                    f"the agent did not answer on {paths.socket} within {timeout:.0f} s of starting; see its log "
                    f"{paths.log}"
                )
            await asyncio.sleep(0.05)
