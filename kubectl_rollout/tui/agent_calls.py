"""Running the agent's cluster calls (``agent.cluster_calls``) from Textual's event loop.

The screens only need ``CallRunner.run(call)``. ``CallsOver`` does it over
any asyncio connection to the agent that has ``call(method, **params)`` (the
app's own); ``ThreadedCalls`` with the synchronous ``AgentClient`` in a
worker thread, one call at a time on one connection (that client is not
thread-safe).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from kubectl_rollout.agent.client import AgentClient
from kubectl_rollout.agent.cluster_calls import Call
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.protocol import ProtocolError

T = TypeVar("T")


class CallRunner(Protocol):
    async def run(self, call: Call[T]) -> T: ...


@runtime_checkable
class MethodCaller(Protocol):
    async def call(self, method: str, **params: Any) -> Any: ...


class CallsOver:
    """A ``CallRunner`` over an asyncio connection to the agent."""

    def __init__(self, caller: MethodCaller) -> None:
        self._caller = caller

    async def run(self, call: Call[T]) -> T:
        return call.parse(await self._caller.call(call.method.value, **call.params))


class SourceCalls:
    """A ``CallRunner`` over the app's connection to the agent, whenever it is there (it connects after the
    first paint); a source that is no agent (a recording) has no cluster to ask."""

    def __init__(self, source: Callable[[], object | None]) -> None:
        self._source = source

    async def run(self, call: Call[T]) -> T:
        source = self._source()
        if source is None:
            raise AgentError("not connected to the agent (yet): the screen tries again at its next refresh (g)")
        if not isinstance(source, MethodCaller):
            raise AgentError("these jobs come from a recording (--replay): there is no cluster to show")
        return await CallsOver(source).run(call)


class ThreadedCalls:
    """A ``CallRunner`` over the synchronous client; connects on first use, and again after a lost connection."""

    def __init__(self, connect: Callable[[], AgentClient]) -> None:
        self._connect = connect
        self._client: AgentClient | None = None
        self._lock = asyncio.Lock()

    def _run(self, call: Call[T]) -> T:
        if self._client is None:
            self._client = self._connect()
        try:
            return self._client.run(call)
        except ProtocolError:
            raise  # the agent answered: the connection is fine
        except AgentError:
            self._client.close()  # lost: the next call connects again (and starts the agent if it must)
            self._client = None
            raise

    async def run(self, call: Call[T]) -> T:
        async with self._lock:
            return await asyncio.to_thread(self._run, call)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
