"""One client's connection: writes that wait for the socket to drain, and a client that reads nothing dropped."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger("kubectl_rollout.agent")


class Connection:
    def __init__(self, writer: asyncio.StreamWriter, *, uid: int, pid: int, stall_seconds: float) -> None:
        self.writer = writer
        self.uid = uid
        self.pid = pid
        self.stall_seconds = stall_seconds
        self.client = "?"
        self.greeted = False
        #: dropped for reading nothing for stall_seconds
        self.dropped = False

    def write(self, data: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(data)

    async def drain(self) -> None:
        if self.dropped:
            raise ConnectionResetError("client stalled")
        try:
            await asyncio.wait_for(self.writer.drain(), self.stall_seconds)
        except TimeoutError:
            if self.dropped:  # an answer and a stream waited on it together: dropped (and logged) once
                raise ConnectionResetError("client stalled") from None
            self.dropped = True
            log.warning(
                "dropped client pid %d (%s): it read nothing for %.0f s; jobs go on",
                self.pid,
                self.client,
                self.stall_seconds,
            )
            self.writer.transport.abort()
            raise ConnectionResetError("client stalled") from None
