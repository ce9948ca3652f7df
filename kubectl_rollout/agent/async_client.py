"""Talking to the agent from an asyncio loop (the TUI's): the same protocol as ``client``, without blocking.

Standard library, the protocol and ``jobs`` only (the TUI imports this module).
A Textual app must never block its loop on a socket read, so this client reads
with ``asyncio.StreamReader``. Starting an agent that does not answer yet is
left to the synchronous ``client.connect`` (its lock, its stale-socket
cleanup), run once in a thread.

One connection answers requests in order; an attached connection carries the
job's events and is used for nothing else (PROTOCOL.md), so ``attach`` opens a
connection of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.agent import client as sync_client
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
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.next_steps import command


@dataclass(frozen=True)
class Lagged:
    """The agent left out ``skipped`` events superseded by later ones: folding what arrives stays correct."""

    job: str
    skipped: int


class AsyncAgentClient:
    """One greeted connection to the agent. Calls may come from several tasks: they take turns."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, paths: AgentPaths, *, name: str
    ) -> None:
        self.paths = paths
        self.name = name
        self.agent: dict[str, Any] = {}
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._turn = asyncio.Lock()

    @classmethod
    async def open(cls, paths: AgentPaths | None = None, *, name: str = "tui", start: bool = True) -> AsyncAgentClient:
        """A greeted connection; with ``start``, an agent is started first when none answers."""
        paths = paths or agent_paths()
        try:
            return await cls._open(paths, name=name)
        except OSError as err:
            if not start:
                raise AgentUnavailable(
                    f"no agent is running (no answer on {paths.socket}); `{command('agent', 'start')}` starts one"
                ) from err
        # The synchronous client owns starting: one lock, one agent, however many clients start at once.
        started = await asyncio.to_thread(sync_client.connect, paths, name=name)
        started.close()
        try:
            return await cls._open(paths, name=name)
        except OSError as err:
            raise AgentUnavailable(f"cannot reach the agent at {paths.socket}: {err.strerror or err}") from err

    @classmethod
    async def _open(cls, paths: AgentPaths, *, name: str) -> AsyncAgentClient:
        reader, writer = await asyncio.open_unix_connection(str(paths.ensure().socket), limit=MAX_LINE)
        connection = cls(reader, writer, paths, name=name)
        try:
            hello = connection.call(Method.HELLO, protocol=PROTOCOL_VERSION, oldest=OLDEST_ACCEPTED, client=name)
            bound = sync_client.hello_timeout()
            connection.agent = dict(await asyncio.wait_for(hello, bound))
        except TimeoutError as err:
            await connection.close()
            raise AgentUnavailable(
                f"the agent at {paths.socket} accepted the connection but did not answer within "
                f"{bound:g} s (stopped or stuck); `{command('agent', 'stop', '--force')}` ends it"
            ) from err
        except BaseException:
            await connection.close()
            raise
        return connection

    # --- plumbing --------------------------------------------------------------------------

    def _lost(self, err: BaseException | None) -> AgentError:
        why = f": {err}" if err is not None else ""
        return AgentError(
            f"lost the connection to the agent ({self.paths.socket}){why}; its jobs go on or resume when it starts "
            f"again: `{command('jobs', 'list')}`"
        )

    async def _receive(self) -> Response | Notification:
        try:
            line = await self._reader.readline()
        except (OSError, ValueError) as err:  # ValueError: a line longer than MAX_LINE
            raise self._lost(err) from err
        if not line:
            raise self._lost(None)
        message = decode(line)
        if isinstance(message, Request):
            raise ProtocolError(-32600, f"the agent sent a request ({message.method}); clients answer none")
        return message

    async def call(self, method: Method | str, **params: Any) -> Any:
        """Send a request and wait for its answer; an error answer is raised as a ProtocolError."""
        async with self._turn:
            ident = next(self._ids)
            try:
                self._writer.write(encode(Request(ident, str(method), params)))
                await self._writer.drain()
            except OSError as err:
                raise self._lost(err) from err
            while True:
                message = await self._receive()
                if isinstance(message, Response) and message.id in (ident, None):
                    if message.error is not None:
                        raise message.error
                    return message.result

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError, ConnectionError):
            await self._writer.wait_closed()

    # --- methods ---------------------------------------------------------------------------

    async def jobs(self, *, limit: int = 100) -> list[JobInfo]:
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

    async def attach(
        self, job_id: str, *, from_seq: int = 1, follow: bool = True, coalesce: bool = False
    ) -> AsyncIterator[Envelope | Lagged]:
        """The job's events from ``from_seq`` on, then (``follow``) live until its last.

        With ``coalesce``, the events the job has already are sent without those a later event of the same
        object supersedes (announced by a ``Lagged``); folding them ends at the same view. An agent older
        than this parameter ignores it and sends every event. Use this connection for nothing else while
        iterating.
        """
        await self.call(Method.ATTACH, job=job_id, from_seq=from_seq, follow=follow, coalesce=coalesce)
        while True:
            try:
                line = await self._reader.readline()
            except (OSError, ValueError) as err:  # ValueError: a line longer than MAX_LINE
                raise self._lost(err) from err
            if not line:
                raise self._lost(None)
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
