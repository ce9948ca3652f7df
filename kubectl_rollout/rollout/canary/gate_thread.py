"""A gate that runs on a thread of its own (a command, a Job), so that the driver keeps its Lease and its watches
while it waits: ``start`` it with what to call when it ends, read ``outcome`` once ``finished``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self


@dataclass(frozen=True, kw_only=True)
class GateOutcome:
    ok: bool
    #: a command's exit code (None: it could not start or ran out of time; a Job has none)
    exit_code: int | None
    output: str
    started_at: float
    finished_at: float


class GateThread:
    """The thread and the outcome; a subclass says what runs (``_run``, which ends by calling ``_on_end``) and
    what ``stop`` does."""

    def __init__(self, *, name: str) -> None:
        self.outcome: GateOutcome | None = None
        self._on_end: Callable[[], None] = lambda: None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self, on_end: Callable[[], None]) -> Self:
        self._on_end = on_end
        self._thread.start()
        return self

    @property
    def finished(self) -> bool:
        return self.outcome is not None

    def stop(self) -> None:
        """The driver ends without the verdict: stop waiting for it (what the gate started may go on for the
        next driver)."""
        raise NotImplementedError

    def cancel(self) -> str:
        """The verdict is no longer wanted (aborted, promoted past): end the gate and what it started; a few words
        on what was stopped."""
        raise NotImplementedError

    def _run(self) -> None:
        raise NotImplementedError
