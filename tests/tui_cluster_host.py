"""A tiny app that hosts one cluster screen of the TUI against a real agent, for Pilot and snapshot tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen

import kubectl_rollout.tui as tui_package
from kubectl_rollout.agent.client import AsyncAgentClient
from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.tui.agent_calls import ConnectingCalls
from kubectl_rollout.tui.cluster_messages import JobSubmitted
from kubectl_rollout.tui.cluster_scope import ClusterScope


class ScreenHost(App[None]):
    """Shows the screen ``make()`` builds, which takes the agent link and its scope from the app (as the TUI's
    own app provides them: ``cluster_link``, ``cluster_scope``), in the TUI's styles; records the jobs it submits."""

    CSS_PATH = str(Path(tui_package.__file__).parent / "styles.tcss")

    def __init__(self, make: Callable[[], Screen[Any]], scope: ClusterScope) -> None:
        super().__init__()
        self.cluster_link = ConnectingCalls(lambda: AsyncAgentClient.open(name="tui-test"))
        self.cluster_scope = scope
        self.make = make
        self.submitted: list[JobSubmitted] = []

    def on_mount(self) -> None:
        self.push_screen(self.make())

    def on_job_submitted(self, message: JobSubmitted) -> None:
        self.submitted.append(message)

    @property
    def jobs(self) -> list[JobInfo]:
        return [message.job for message in self.submitted]

    async def on_unmount(self) -> None:
        await self.cluster_link.close()


async def until(pilot: Pilot[Any], check: Callable[[], object], *, timeout: float = 60, what: str = "") -> None:
    """Let the app run until ``check()`` is true (the agent and the cluster answer in their own time)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            said = getattr(pilot.app.screen, "status_text", "")
            raise AssertionError(
                f"timed out after {timeout:.0f} s waiting for {what or check}; the screen says {said!r}"
            )
        await pilot.pause(0.05)
