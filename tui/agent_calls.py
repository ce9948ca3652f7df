"""Running the agent's cluster calls (``agent.cluster_calls``) from Textual's event loop.

The screens only need ``CallRunner.run(call)``. ``ThreadedCalls`` does it
with the synchronous ``AgentClient`` in a worker thread, one call at a time
on one connection (the client is not thread-safe); an asyncio link to the
agent satisfies the same protocol by sending ``call.method`` and
``call.params`` and returning ``call.parse(result)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol, TypeVar

from kubectl_rollout.agent.client import AgentClient
from kubectl_rollout.agent.cluster_calls import Call
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.protocol import ProtocolError

T = TypeVar("T")


class CallRunner(Protocol):
    async def run(self, call: Call[T]) -> T: ...


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
