"""The agent as the TUI's job source: its asyncio client, on Textual's own loop (no thread blocks on a read)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from kubectl_rollout.agent.client import AsyncAgentClient, Lagged
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.jobs.events.base import Envelope

CLIENT_NAME = "tui"


class AgentJobs:
    """A ``JobSource`` over the agent: one connection for requests; each followed job gets a connection of its
    own (PROTOCOL.md)."""

    can_act = True

    def __init__(self, requests: AsyncAgentClient) -> None:
        self.client = requests
        self.paths: AgentPaths = requests.paths
        self.description = f"agent pid {requests.agent.get('pid', '?')}"

    @classmethod
    async def connect(cls, paths: AgentPaths | None = None, *, start: bool = True) -> AgentJobs:
        return cls(await AsyncAgentClient.open(paths, name=CLIENT_NAME, start=start))

    async def call(self, method: str, **params: Any) -> Any:
        """Any agent method, for screens that need more than jobs (the cluster's nodes and workloads)."""
        return await self.client.call(method, **params)

    async def jobs(self) -> list[JobInfo]:
        return await self.client.jobs()

    async def follow(
        self, job_id: str, *, from_seq: int = 1, coalesce: bool = False
    ) -> AsyncIterator[Envelope | Lagged]:
        stream = await AsyncAgentClient.open(self.paths, name=CLIENT_NAME, start=False)
        try:
            async for item in stream.attach(job_id, from_seq=from_seq, coalesce=coalesce):
                yield item
        finally:
            await stream.close()

    async def cancel(self, job_id: str) -> JobInfo:
        return await self.client.cancel(job_id)

    async def pause(self, job_id: str) -> JobInfo:
        return await self.client.pause(job_id)

    async def resume(self, job_id: str) -> JobInfo:
        return await self.client.resume(job_id)

    async def close(self) -> None:
        await self.client.close()
