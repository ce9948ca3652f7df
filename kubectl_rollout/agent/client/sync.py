"""The synchronous client (the CLI's): the asyncio client of ``core``, run on a private event loop.

Each call is one ``run_until_complete`` on the client's own loop, and each
event of an attached stream one more, so the protocol, the timeouts and the
error messages are ``core``'s, written once. The loop lives as long as the
client and runs only while a call does, in the caller's thread: no thread
and no signal handler of its own, so Ctrl-C (``cli.interruptible.CtrlC``)
interrupts a blocking wait as it would a socket read. A caller inside a
running event loop (a test's coroutine) cannot nest another there: its calls
run the client's loop on a thread for the call, and it waits, as it would on
a socket. Not thread-safe: one caller at a time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine, Iterator, Mapping
from typing import Any, TypeVar

from kubectl_rollout.agent.client import core
from kubectl_rollout.agent.client.cluster_calls import Call
from kubectl_rollout.agent.client.core import START_TIMEOUT, AsyncAgentClient, Trace
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.agent.protocol import MAX_LINE, JobInfo, Method
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.spec import JobSpec

T = TypeVar("T")


class AgentClient:
    """One connection to the agent, greeted (``connect``), over the asyncio client on a loop of its own."""

    def __init__(self, client: AsyncAgentClient, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop

    @classmethod
    def over_socket(
        cls, sock: socket.socket, paths: AgentPaths, *, trace: Trace | None = None, name: str = "cli"
    ) -> AgentClient:
        """A client over a connected socket, not greeted yet (tests speak to it from the other end)."""
        loop = asyncio.new_event_loop()
        reader, writer = _run_on(loop, asyncio.open_unix_connection(sock=sock, limit=MAX_LINE))
        return cls(AsyncAgentClient(reader, writer, paths, name=name, trace=trace), loop)

    @property
    def paths(self) -> AgentPaths:
        return self._client.paths

    @property
    def name(self) -> str:
        return self._client.name

    @property
    def agent(self) -> dict[str, Any]:
        """The agent's answer to hello (its pid, version, socket, running jobs...)."""
        return self._client.agent

    def _run(self, step: Coroutine[Any, Any, T]) -> T:
        return _run_on(self._loop, step)

    def call(self, method: Method, **params: Any) -> Any:
        return self._run(self._client.call(method, **params))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        with contextlib.suppress(Exception):
            self._run(self._client.close())
        with contextlib.suppress(Exception):
            self._run(self._loop.shutdown_asyncgens())
        self._loop.close()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- methods ---------------------------------------------------------------------------

    def hello(self) -> dict[str, Any]:
        return self._run(self._client.hello())

    def submit(self, spec: JobSpec) -> JobInfo:
        return self._run(self._client.submit(spec))

    def jobs(self, *, limit: int = 100) -> list[JobInfo]:
        """The newest jobs, abridged (``JobInfo.abridged``; ``show`` has one whole); fewer than ``limit`` when
        they would not all fit in one line."""
        return self._run(self._client.jobs(limit=limit))

    def show(self, job_id: str) -> JobInfo:
        return self._run(self._client.show(job_id))

    def cancel(self, job_id: str) -> JobInfo:
        return self._run(self._client.cancel(job_id))

    def pause(self, job_id: str) -> JobInfo:
        return self._run(self._client.pause(job_id))

    def resume(self, job_id: str) -> JobInfo:
        return self._run(self._client.resume(job_id))

    def shutdown(self, *, force: bool = False) -> dict[str, Any]:
        return self._run(self._client.shutdown(force=force))

    def run(self, call: Call[T]) -> T:
        """One of ``cluster_calls``' requests (``nodes``, ``plan``, ``cordon``, ``workloads``, ...), its answer read."""
        return self._run(self._client.run(call))

    def attach(self, job_id: str, *, from_seq: int = 1, follow: bool = True) -> Iterator[Envelope]:
        """The job's events from ``from_seq`` on, then (``follow``) live until its last.

        Use the connection for nothing else while iterating.
        """
        stream = self._client.attach(job_id, from_seq=from_seq, follow=follow)
        try:
            while True:
                try:
                    item = self._run(_next(stream))
                except StopAsyncIteration:
                    return
                if isinstance(item, Envelope):  # a Lagged notice changes nothing for a printer of every event
                    yield item
        finally:
            if isinstance(stream, AsyncGenerator) and not self._loop.is_closed():
                with contextlib.suppress(Exception):
                    self._run(_close(stream))


def _run_on(loop: asyncio.AbstractEventLoop, step: Coroutine[Any, Any, T]) -> T:
    """``step`` run to its end on ``loop``, a loop of one client's own that runs only now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(loop, step)
    # Called from a coroutine (a test's, a Textual worker's): a running loop cannot run another in its thread,
    # so this one runs in a thread of its own for the call, and the caller waits as on a socket read.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agent client") as pool:
        return pool.submit(_run_here, loop, step).result()


def _run_here(loop: asyncio.AbstractEventLoop, step: Coroutine[Any, Any, T]) -> T:
    task = loop.create_task(step)
    try:
        return loop.run_until_complete(task)
    except BaseException:
        # Ctrl-C (KeyboardInterrupt) lands wherever the loop was: the step is cancelled, so that the loop
        # holds nothing half-done when the client is closed.
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)
        raise


async def _next(stream: AsyncIterator[T]) -> T:
    return await anext(stream)


async def _close(stream: AsyncGenerator[Any, None]) -> None:
    await stream.aclose()


def connect(
    paths: AgentPaths | None = None,
    *,
    start: bool = True,
    environ: Mapping[str, str] | None = None,
    trace: Trace | None = None,
    name: str = "cli",
    timeout: float = START_TIMEOUT,
    io_timeout: float | None = None,
) -> AgentClient:
    """``core.connect`` for a synchronous caller: a greeted connection to this user's agent, started first if
    ``start`` and none answers; raises as it does."""
    loop = asyncio.new_event_loop()
    try:
        client = _run_on(
            loop,
            core.connect(
                paths, start=start, environ=environ, trace=trace, name=name, timeout=timeout, io_timeout=io_timeout
            ),
        )
    except BaseException:
        loop.close()
        raise
    return AgentClient(client, loop)
