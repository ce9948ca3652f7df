"""Printing an eviction-based restart: the eviction lines a drain prints, plus the restart's own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TextIO

from kubectl_rollout.cli.drain_output import EVICTION_FORMATTERS
from kubectl_rollout.cli.text_output import Formatter, Line, TextPrinter, dry_run_suffix
from kubectl_rollout.jobs.events import restart as restart_events
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.views.restart import RestartView, fold


def _pods(count: int) -> str:
    return f"{count} pod" if count == 1 else f"{count} pods"


def _planned(event: restart_events.RestartPlanned, _view: RestartView) -> Iterator[Line]:
    pods = ", ".join(event.pods) or "none"
    verb = "resuming the restart of" if event.resumed else "restarting"
    done = f" ({event.already_replaced} already replaced)" if event.resumed else ""
    yield "out", f"{verb} {event.workload} by eviction, one pod at a time: {pods}{done}{dry_run_suffix(event.dry_run)}"
    if event.supersedes_unfinished:
        yield (
            "err",
            f"warning: an earlier restart of {event.workload} stopped unfinished; this one starts over "
            "(--resume continues the earlier one instead)",
        )


def _waiting_to_start(event: restart_events.WaitingToStart, _view: RestartView) -> Iterator[Line]:
    yield "out", f"waiting for {event.workload} to settle before the first eviction: {event.reason}"


def _waiting_for_replacement(event: restart_events.WaitingForReplacement, _view: RestartView) -> Iterator[Line]:
    yield "out", f"waiting for a replacement of {event.pod.name} ({event.ready}/{event.desired} available)"


def _replaced(event: restart_events.PodReplaced, _view: RestartView) -> Iterator[Line]:
    yield "out", f"pod/{event.pod.name} replaced ({event.index}/{event.total}, {event.seconds:.1f}s)"


def _finished(event: restart_events.RestartFinished, _view: RestartView) -> Iterator[Line]:
    if not event.failure:
        yield "out", f"{event.workload} restarted: {_pods(event.replaced)} replaced{dry_run_suffix(event.dry_run)}"
        return
    yield "err", f"error: {event.workload} restart stopped after {_pods(event.replaced)}: {event.failure}"
    if event.resumable:
        yield (
            "err",
            f"the pods replaced so far are recorded on {event.workload}: continue with "
            f"kubectl rollout-plus restart {event.workload} -n {event.namespace} --resume",
        )


RESTART_FORMATTERS: dict[type[Event], Formatter] = {
    **EVICTION_FORMATTERS,
    restart_events.RestartPlanned: _planned,
    restart_events.WaitingToStart: _waiting_to_start,
    restart_events.WaitingForReplacement: _waiting_for_replacement,
    restart_events.PodReplaced: _replaced,
    restart_events.RestartFinished: _finished,
}


def restart_printer(out: TextIO, err: TextIO, *, live: bool = False) -> TextPrinter:
    return TextPrinter(
        out,
        err,
        view=RestartView(),
        fold=fold,
        formatters=RESTART_FORMATTERS,
        final=(restart_events.RestartFinished,),
        live=live,
    )
