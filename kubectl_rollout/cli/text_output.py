"""The one text printer of every job: it folds the job's view and formats each event by its type.

Formatters are plain functions ``(event, view) -> lines``, one table per job
kind (``drain_output``, ``restart_output``, ``rollout_output``); the printer owns only the
terminal: which stream a line goes to, and on a terminal the one-line live
footer under the log, drawn from the view.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TextIO

from kubectl_rollout.jobs.events.api import ApiReachable, ApiUnreachable
from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.views.pods import PodState

Stream = Literal["out", "err"]
Line = tuple[Stream, str]
#: the lines one event prints, given the view after it
Formatter = Callable[[Any, Any], Iterable[Line]]
Fold = Callable[[Any, Envelope], Any]

_FOOTER_STATES = (PodState.EVICTING, PodState.BLOCKED, PodState.TERMINATING, PodState.GONE, PodState.FAILED)


def dry_run_suffix(dry_run: str) -> str:
    return {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run, "")


class TextPrinter:
    def __init__(
        self,
        out: TextIO,
        err: TextIO,
        *,
        view: Any,
        fold: Fold,
        formatters: Mapping[type[Event], Formatter],
        final: tuple[type[Event], ...] = (),
        live: bool = False,
    ) -> None:
        self.out = out
        self.err = err
        self.view = view
        self.live = live
        self._fold = fold
        self._formatters = formatters
        #: events after which the footer is gone for good (the job's summary follows)
        self._final = final
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._footer_shown = False
        self._closed = False

    def __call__(self, envelope: Envelope) -> None:
        with self._lock:
            self.view = self._fold(self.view, envelope)
            event = envelope.event
            formatter = self._formatters.get(type(event))
            lines = list(formatter(event, self.view)) if formatter is not None else []
            if isinstance(event, self._final):
                self._close_footer()
                self._closed = True
            for stream, line in lines:
                self._write(stream, line)
            if not lines:
                self._refresh()

    def close(self) -> None:
        with self._lock:
            self._close_footer()

    # --- the live footer -----------------------------------------------------------

    def _footer(self) -> str:
        pods = getattr(self.view, "pods", {})
        counts = dict.fromkeys(_FOOTER_STATES, 0)
        budgets: dict[str, int] = {}
        for pod in pods.values():
            if pod.state in counts:
                counts[pod.state] += 1
            if pod.state is PodState.BLOCKED and pod.blocker is not None and pod.blocker.pdb:
                budgets[pod.blocker.pdb] = budgets.get(pod.blocker.pdb, 0) + 1
        parts = [f"{n} {state}" for state, n in counts.items() if n]
        if budgets:
            busiest = sorted(budgets.items(), key=lambda item: -item[1])[:3]
            parts.append("waiting on " + ", ".join(f"{pdb} ({n})" for pdb, n in busiest))
        elapsed = int(time.monotonic() - self._started)
        return f"[{elapsed // 60:02d}:{elapsed % 60:02d}] " + (", ".join(parts) or "starting")

    def _write(self, stream: Stream, line: str) -> None:
        target = self.out if stream == "out" else self.err
        if self.live and self._footer_shown:
            self.out.write("\r\033[K")
            self.out.flush()
            self._footer_shown = False
        target.write(line + "\n")
        target.flush()
        self._refresh()

    def _refresh(self) -> None:
        if self.live and not self._closed:
            self.out.write("\r\033[K" + self._footer())
            self.out.flush()
            self._footer_shown = True

    def _close_footer(self) -> None:
        if self.live and self._footer_shown:
            self.out.write("\r\033[K")
            self.out.flush()
            self._footer_shown = False


def _api_unreachable(event: ApiUnreachable, _view: Any) -> Iterable[Line]:
    since = time.strftime("%H:%M:%S", time.localtime(event.since))
    yield "err", f"API server {event.server} unreachable since {since} ({event.error}); retrying until it answers"


def _api_reachable(event: ApiReachable, _view: Any) -> Iterable[Line]:
    yield "err", f"API server {event.server} answers again after {event.down_seconds:.1f}s unreachable; going on"


#: the lines every job prints when its API server goes away and comes back
API_FORMATTERS: dict[type[Event], Formatter] = {
    ApiUnreachable: _api_unreachable,
    ApiReachable: _api_reachable,
}
