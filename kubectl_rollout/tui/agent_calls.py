"""How a cluster screen reaches the agent: anything with ``run(call)`` (a ``CallRunner``; the asyncio
client is one).

``SourceCalls`` is the app's: it runs calls over the app's job source whenever
that talks to the agent (a ``MethodCaller``: it connects after the first
paint; a recording has no cluster). ``ConnectingCalls`` connects on first use,
and again after a lost connection, for a screen shown without the app (its
tests).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from kubectl_rollout.agent.client import AsyncAgentClient
from kubectl_rollout.agent.client.cluster_calls import Call
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.protocol import ProtocolError

T = TypeVar("T")


class CallRunner(Protocol):
    async def run(self, call: Call[T]) -> T: ...


@runtime_checkable
class MethodCaller(Protocol):
    async def call(self, method: str, **params: Any) -> Any: ...


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
        return call.parse(await source.call(call.method.value, **call.params))


class ConnectingCalls:
    """A ``CallRunner`` that connects on first use, and again after a lost connection; one call at a time."""

    def __init__(self, connect: Callable[[], Awaitable[AsyncAgentClient]]) -> None:
        self._connect = connect
        self._client: AsyncAgentClient | None = None
        self._lock = asyncio.Lock()

    async def run(self, call: Call[T]) -> T:
        async with self._lock:
            if self._client is None:
                self._client = await self._connect()
            try:
                return await self._client.run(call)
            except ProtocolError:
                raise  # the agent answered: the connection is fine
            except AgentError:
                await self.close()  # lost: the next call connects again (and starts the agent if it must)
                raise

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
