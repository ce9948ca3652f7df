"""Ctrl-C for long commands: asking the job to stop instead of killing a thread mid-request, and a second
press that is never lost.

Python's own SIGINT handler raises KeyboardInterrupt wherever the main thread happens to be. A second press
that lands while the first is being handled (a message printed, a connection closed, the printer stopped)
then escapes that handling: what the person asked for with it (cancel the job) is lost, and a worker thread
left running keeps the process alive. ``CtrlC`` counts every press the instant it arrives and raises only
where the caller can act on it.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, TypeVar

import click

T = TypeVar("T")


class _PressedAgain(BaseException):
    """Raised by the handler inside ``CtrlC.pressed_again`` only (a BaseException, so no ``except Exception``
    on the way swallows it)."""


class CtrlC:
    """SIGINT while installed (a context manager; main thread only, elsewhere Python's handler stays).

    Presses are counted from the moment it is installed. After ``interrupt_next`` the next press raises
    KeyboardInterrupt (it has to break a blocking wait); the presses after that one are counted and raise
    nothing, outside ``pressed_again``, until ``interrupt_next`` again.
    """

    def __init__(self) -> None:
        self.presses = 0
        #: presses acted on: up to the one that raised last, or that ``pressed_again`` took
        self._handled = 0
        self._raise_next = False
        self._armed = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._pressed)
            self._installed = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def _pressed(self, signum: int, frame: FrameType | None) -> None:
        # Runs in the main thread between two bytecodes: plain assignments only (a lock taken here could be
        # the one the main thread holds).
        self.presses += 1
        if self._raise_next:
            self._raise_next = False
            self._handled = self.presses
            raise KeyboardInterrupt
        if self._armed:
            self._armed = False
            raise _PressedAgain

    def interrupt_next(self) -> None:
        """From now on a press raises KeyboardInterrupt; one that came while presses only counted (and was not
        acted on) raises it at once. Call it inside the ``try`` that handles the interrupt."""
        self._raise_next = True
        if self.presses > self._handled:
            # A press between these lines raises from the handler instead: once either way.
            self._raise_next = False
            self._handled = self.presses
            raise KeyboardInterrupt

    def pressed_again(self, *, within: float) -> bool:
        """After the press that raised: whether another one comes within ``within`` s. A press that came
        already, while the first was being handled, counts at once."""
        deadline = time.monotonic() + within
        try:
            try:
                self._armed = True
                if self.presses > self._handled:
                    self._handled = self.presses
                    return True
                left = deadline - time.monotonic()
                if left > 0:
                    time.sleep(left)  # a press during it raises _PressedAgain
                return False
            finally:
                self._armed = False
        except _PressedAgain:  # also when it came while the inner ``finally`` ran
            self._handled = self.presses
            return True


def run_interruptibly(work: Callable[[], T], cancel: threading.Event, *, on_interrupt: str, name: str) -> T:
    """Run ``work`` in a worker thread; on Ctrl-C print ``on_interrupt``, set ``cancel`` and wait for it to end.

    Further presses change nothing: the job is stopping already, and leaving it mid-request is what the
    cancel avoids.
    """
    outcome: dict[str, object] = {}
    done = threading.Event()

    def target() -> None:
        try:
            outcome["result"] = work()
        except BaseException as err:  # handed to the caller's thread
            outcome["error"] = err
        finally:
            done.set()

    # Waited through an Event, not Thread.join: on Python 3.11 a KeyboardInterrupt that lands inside join()
    # can mark a running thread as stopped (bpo-45274's fix), and the next join() returns at once.
    worker = threading.Thread(target=target, name=name)
    with CtrlC() as ctrl_c:
        worker.start()
        try:
            ctrl_c.interrupt_next()
            done.wait()
        except KeyboardInterrupt:
            cancel.set()
            click.echo(f"\n{on_interrupt}", err=True)
            done.wait()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]
