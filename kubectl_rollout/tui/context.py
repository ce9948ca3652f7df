"""What screens may ask of the app: its job store, clock, mode and source (a protocol, so screens never import
the app module that imports them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kubectl_rollout.tui.job_source import JobSource
from kubectl_rollout.tui.job_store import JobStore


class TuiContext(Protocol):
    store: JobStore
    clock: Callable[[], float]
    #: every action that changes something is hidden
    readonly: bool
    source: JobSource | None

    def open_job(self, job_id: str) -> None: ...

    def follow(self, job_id: str) -> None: ...
