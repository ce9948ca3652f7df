"""Running a long engine call so that Ctrl-C asks it to stop instead of killing a thread mid-request."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import click

T = TypeVar("T")


def run_interruptibly(work: Callable[[], T], cancel: threading.Event, *, on_interrupt: str, name: str) -> T:
    """Run ``work`` in a worker thread; on Ctrl-C print ``on_interrupt``, set ``cancel`` and wait for it to end."""
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["result"] = work()
        except BaseException as err:  # handed to the caller's thread
            outcome["error"] = err

    worker = threading.Thread(target=target, name=name)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        click.echo(f"\n{on_interrupt}", err=True)
        cancel.set()
        worker.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]
