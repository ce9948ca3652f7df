"""Printing drain events for people (kubectl's wording) and for programs (JSON lines).

The human printer writes kubectl's lines where kubectl has them ("node/x
cordoned", "evicting pod ns/p", "pod/p evicted", "node/x drained") and says
more where kubectl says too little: which PDB blocks a pod, its healthy/needed
counts, since when, and when the next attempt comes. On a terminal it keeps a
one-line live summary under the log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any, TextIO

from kubectl_rollout.cli.text_output import API_FORMATTERS, Formatter, Line, TextPrinter, dry_run_suffix
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events import surge as surge_events
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.events.eviction import (
    BlockReason,
    DryRun,
    EvictionBlocked,
    EvictionMethod,
    EvictionStarted,
    PdbPodsUnhealthy,
    PodEvicted,
    PodFailed,
    PodGone,
    PodSkippedWaiting,
)
from kubectl_rollout.jobs.views.drain import DrainView, NodeState, fold


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S")


def plan_as_json(plan: drain_events.DrainPlanned, surges: surge_events.SurgesPlanned | None = None) -> str:
    document = plan.as_dict()
    if surges is not None:
        document["surges"] = surges.as_dict()["surges"]
    return json.dumps(document, indent=2)


def _cordoned(event: drain_events.NodeCordoned, _view: DrainView) -> Iterator[Line]:
    verb = "cordoned" if event.changed else "already cordoned"
    yield "out", f"node/{event.node} {verb}{dry_run_suffix(event.dry_run)}"


def _uncordoned(event: drain_events.NodeUncordoned, _view: DrainView) -> Iterator[Line]:
    verb = "uncordoned" if event.changed else "already uncordoned"
    lifted = f", taint of campaign {event.campaign_taint} removed" if event.campaign_taint else ""
    yield "out", f"node/{event.node} {verb}{lifted}{dry_run_suffix(event.dry_run)}"


def _warning(event: drain_events.DrainWarning, _view: DrainView) -> Iterator[Line]:
    yield "err", f"Warning: {event.message}"


def _batch(event: drain_events.BatchStarted, _view: DrainView) -> Iterator[Line]:
    yield "out", f"batch {event.index}: {', '.join(event.nodes)}"


def _eviction_started(event: EvictionStarted, _view: Any) -> Iterator[Line]:
    if event.attempt == 1 and event.method == EvictionMethod.EVICT:
        yield "out", f"evicting pod {event.pod}{dry_run_suffix(event.dry_run)}"


def _blocked(event: EvictionBlocked, _view: Any) -> Iterator[Line]:
    yield "err", blocked_line(event)


def unhealthy_line(event: PdbPodsUnhealthy) -> str:
    """Which pods of a PDB that holds evictions it does not count as healthy, and since when."""
    named = "; ".join(
        f"pod {p.pod} (node {p.pod.node or 'none'}): {p.reason}" + (f" since {_clock(p.since)}" if p.since else "")
        for p in event.pods
    )
    more = event.unhealthy - len(event.pods)
    tail = f"; and {more} more" if more > 0 else ""
    return f"PodDisruptionBudget {event.pdb}: {event.unhealthy} of its {event.selected} pods not healthy: {named}{tail}"


def _unhealthy(event: PdbPodsUnhealthy, _view: Any) -> Iterator[Line]:
    # All healthy says nothing the blocked lines do not: a pod evicted earlier is not replaced yet.
    if event.unhealthy:
        yield "err", unhealthy_line(event)


def _evicted(event: PodEvicted, _view: Any) -> Iterator[Line]:
    if event.dry_run == DryRun.CLIENT:
        verb = "evicting" if event.method == EvictionMethod.EVICT else "deleting"
        yield "out", f"{verb} pod {event.pod}{dry_run_suffix(event.dry_run)}"


def _gone(event: PodGone, _view: Any) -> Iterator[Line]:
    verb = "deleted" if event.method == EvictionMethod.DELETE else "evicted"
    yield "out", f"pod/{event.pod.name} {verb}"


def _skipped(event: PodSkippedWaiting, _view: Any) -> Iterator[Line]:
    yield "out", f'pod "{event.pod.name}" has DeletionTimestamp older than {event.seconds} seconds, skipping'


def _failed(event: PodFailed, _view: Any) -> Iterator[Line]:
    yield "err", event.error


def _drained(event: drain_events.NodeDrained, _view: DrainView) -> Iterator[Line]:
    yield "out", f"node/{event.node} drained{dry_run_suffix(event.dry_run)}"


def _drain_failed(event: drain_events.NodeDrainFailed, _view: DrainView) -> Iterator[Line]:
    yield "err", f'error: unable to drain node "{event.node}" due to error: {event.reason}, continuing command...'


def _drain_stopped(event: drain_events.NodeDrainStopped, _view: DrainView) -> Iterator[Line]:
    left = f", {len(event.pending)} pod(s) left to it" if event.pending else ""
    yield "out", f"node/{event.node}: drain {event.why}{left}"


def _waiting_for_workloads(event: drain_events.WaitingForWorkloads, _view: DrainView) -> Iterator[Line]:
    waiting = ", ".join(map(str, event.workloads))
    yield "out", f"waiting for evicted workloads to be available before the next batch: {waiting}"


def _workloads_available(event: drain_events.WorkloadsAvailable, _view: DrainView) -> Iterator[Line]:
    yield "out", f"workloads available again after {event.seconds:.1f}s"


def _finished(event: drain_events.DrainFinished, view: DrainView) -> Iterator[Line]:
    """kubectl's closing lines for pending nodes, then what we know of each: its state, its pods' errors."""
    if not event.failed:
        return
    yield "err", "There are pending nodes to be drained:"
    for name in event.failed:
        yield "err", f" {name}"
    for node in view.nodes.values():
        if node.state is not NodeState.FAILED:
            continue
        state = "left cordoned" if node.cordoned else "uncordoned"
        if not node.pending:
            yield "err", f"node {node.name} ({state}): {drain_events.join_errors(node.reasons)}"
            continue
        # The pods' own lines carry the reasons; kubectl's aggregate of them was printed above.
        yield "err", f"node {node.name} ({state}): {len(node.pending)} pods not removed"
        for pod in node.pending:
            seen = view.pods.get(pod)
            yield "err", f"  pod {pod}: {seen.failure if seen is not None and seen.failure else 'not removed'}"
    hint = _surge_hint(event, view)
    if hint:
        yield "err", hint


def _surge_hint(event: drain_events.DrainFinished, view: DrainView) -> str:
    """Pods left waiting for a PDB by a drain without --surge: say what would have made room."""
    surged = view.surge_plan or view.not_surged or view.restored or view.surging
    if surged:
        return ""
    budgets = view.blocked_by
    if not budgets:
        return ""
    return (
        f"hint: PodDisruptionBudget {', '.join(budgets)} had no room; with --surge the drain first gives a "
        f"Deployment extra replicas on other nodes, then evicts (see what it would do: drain "
        f"{' '.join(event.failed)} --surge --plan)"
    )


def blocked_line(event: EvictionBlocked) -> str:
    wait = max(0.0, event.next_try_by - time.time())
    where = f"pod {event.pod} (node {event.pod.node})"
    tail = f"blocked since {_clock(event.since)}" + (f", attempt {event.attempts}" if event.attempts else "")
    if event.reason == BlockReason.PDB_BLOCKED:
        counts = ""
        if event.healthy is not None and event.needed is not None:
            counts = f" (healthy {event.healthy}, needs {event.needed})"
        return (
            f"{where}: PodDisruptionBudget {event.pdb}{counts} allows no disruption now; {tail}; "
            f"retrying as soon as it has room, {wait:.1f}s at the latest"
        )
    if event.reason == BlockReason.PDB_STATUS_STALE:
        return (
            f"{where}: PodDisruptionBudget {event.pdb} is still being processed by the server; {tail}; "
            f"retrying in {wait:.1f}s (Retry-After {event.retry_after:g}s)"
        )
    if event.reason == BlockReason.THROTTLED:
        asked = f"Retry-After {event.retry_after:g}s" if event.retry_after is not None else "no Retry-After"
        return f"{where}: the API server is throttling requests ({asked}); {tail}; retrying in {wait:.1f}s"
    return f"{where}: {event.message}; {tail}; retrying in {wait:.1f}s"


def plan_lines(plan: drain_events.DrainPlanned) -> Iterator[str]:
    """The pre-flight plan as a table per node."""
    for node in plan.nodes:
        state = "cordoned" if node.cordoned else "schedulable"
        yield f"node/{node.node} ({state}): {len(node.pods)} pods"
        if node.pods:
            rows = [("POD", "VERDICT", "PDB", "REASON")]
            for pod in node.pods:
                rows.append((str(pod.pod), pod.verdict, ",".join(pod.pdbs) or "-", pod.reason or "-"))
            widths = [max(len(r[i]) for r in rows) for i in range(3)]
            for row in rows:
                yield "  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3]
        for error in node.errors:
            yield f"  error: {error}"
        if node.warnings:
            yield f"  Warning: {node.warnings}"


def surge_plan_lines(plan: surge_events.SurgesPlanned) -> Iterator[str]:
    """--surge in the plan: each workload under a PDB, surged by N or why not."""
    yield f"surge: {len(plan.surges)} workload(s) under a PodDisruptionBudget"
    if not plan.surges:
        return
    rows = [("WORKLOAD", "SURGE", "PODS", "DECISION")]
    for surge in plan.surges:
        rows.append(
            (str(surge.workload), f"+{surge.surge}" if surge.surge else "-", str(len(surge.pods)), surge.reason)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        yield "  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3]
    for surge in plan.surges:
        if surge.warning:
            yield f"  Warning: {surge.workload}: {surge.warning}"


def _surges_planned(event: surge_events.SurgesPlanned, _view: DrainView) -> Iterator[Line]:
    for line in surge_plan_lines(event):
        yield "out", line


def _surge_skipped(event: surge_events.SurgeSkipped, _view: DrainView) -> Iterator[Line]:
    if event.warning:
        yield "err", f"Warning: {event.workload}: {event.warning}"
    yield "err", f"{event.workload} not surged: {event.reason}"


def _surge_waits(event: surge_events.SurgeWaitsForResume, _view: DrainView) -> Iterator[Line]:
    nodes = ", ".join(f"node/{n}" for n in event.nodes)
    yield "err", f"the job is paused: the surge for {nodes} raises nothing until it is resumed"


def _surge_started(event: surge_events.SurgeStarted, _view: DrainView) -> Iterator[Line]:
    if event.warning:
        yield "err", f"Warning: {event.workload}: {event.warning}"
    yield (
        "out",
        (
            f"{event.workload} surged from {event.original} to {event.replicas} replicas "
            f"for {len(event.pods)} pod(s) on the drained node(s) (original count recorded on it)"
        ),
    )


def _surge_ready(event: surge_events.SurgeReady, _view: DrainView) -> Iterator[Line]:
    yield "out", f"{event.workload}: extra pods Ready after {event.seconds:.1f}s ({event.replicas} replicas)"


def _surge_restored(event: surge_events.SurgeRestored, _view: DrainView) -> Iterator[Line]:
    if event.leftover:
        state = (
            f"back to {event.replicas} replicas"
            if event.count_restored
            else f"record removed; its count had been changed to {event.replicas} and was left so"
        )
        yield "err", f"restored a surge left by drain {event.drain or '?'}: {event.workload} {state}"
    elif event.count_restored:
        yield "out", f"{event.workload} restored to {event.replicas} replicas"
    else:
        yield (
            "err",
            f"{event.workload}: its count was changed by someone else during the surge; left at {event.replicas}",
        )


def _blocked_in_drain(event: EvictionBlocked, view: DrainView) -> Iterator[Line]:
    line = blocked_line(event)
    why_not = view.not_surged.get(str(event.pod))
    yield "err", f"{line} (not surged: {why_not})" if why_not else line


def _planned(event: drain_events.DrainPlanned, _view: DrainView) -> Iterator[Line]:
    for line in plan_lines(event):
        yield "out", line


#: the lines of the eviction events that drain and restart share
EVICTION_FORMATTERS: dict[type[Event], Formatter] = {
    **API_FORMATTERS,
    EvictionStarted: _eviction_started,
    EvictionBlocked: _blocked,
    PdbPodsUnhealthy: _unhealthy,
    PodEvicted: _evicted,
    PodGone: _gone,
    PodSkippedWaiting: _skipped,
    PodFailed: _failed,
}

DRAIN_FORMATTERS: dict[type[Event], Formatter] = {
    **EVICTION_FORMATTERS,
    drain_events.DrainPlanned: _planned,
    drain_events.NodeCordoned: _cordoned,
    drain_events.NodeUncordoned: _uncordoned,
    drain_events.DrainWarning: _warning,
    drain_events.BatchStarted: _batch,
    drain_events.NodeDrained: _drained,
    drain_events.NodeDrainFailed: _drain_failed,
    drain_events.NodeDrainStopped: _drain_stopped,
    drain_events.WaitingForWorkloads: _waiting_for_workloads,
    drain_events.WorkloadsAvailable: _workloads_available,
    drain_events.DrainFinished: _finished,
    EvictionBlocked: _blocked_in_drain,
    surge_events.SurgesPlanned: _surges_planned,
    surge_events.SurgeSkipped: _surge_skipped,
    surge_events.SurgeWaitsForResume: _surge_waits,
    surge_events.SurgeStarted: _surge_started,
    surge_events.SurgeReady: _surge_ready,
    surge_events.SurgeRestored: _surge_restored,
}


def drain_printer(out: TextIO, err: TextIO, *, live: bool = False) -> TextPrinter:
    """The text printer of a drain (and of cordon / uncordon)."""
    return TextPrinter(
        out,
        err,
        view=DrainView(),
        fold=fold,
        formatters=DRAIN_FORMATTERS,
        final=(drain_events.DrainFinished,),
        live=live,
    )
