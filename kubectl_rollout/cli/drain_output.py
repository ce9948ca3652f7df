"""Printing drain events for people (kubectl's wording) and for programs (JSON lines).

The human printer writes kubectl's lines where kubectl has them ("node/x
cordoned", "evicting pod ns/p", "pod/p evicted", "node/x drained") and says
more where kubectl says too little: which PDB blocks a pod, its healthy/needed
counts, since when, and when the next attempt comes. On a terminal it keeps a
one-line live summary under the log.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from datetime import datetime
from typing import TextIO

from kubectl_rollout.jobs.events import drain as ev
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.events.eviction import (
    EvictionBlocked,
    EvictionStarted,
    PodEvicted,
    PodFailed,
    PodGone,
    PodSkippedWaiting,
)


def _dry(dry_run: str) -> str:
    return {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run, "")


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S")


def plan_as_json(plan: ev.DrainPlanned) -> str:
    return json.dumps(plan.as_dict(), indent=2)


class HumanPrinter:
    def __init__(self, out: TextIO, err: TextIO, *, live: bool = False) -> None:
        self.out = out
        self.err = err
        self.live = live
        self._lock = threading.Lock()
        self._state: dict[str, str] = {}  # pod -> pending/evicting/blocked/gone/failed
        self._blocked_by: dict[str, str] = {}
        self._started = time.monotonic()
        self._footer_shown = False
        self.failures: dict[str, str] = {}
        self.node_failures: list[ev.NodeDrainFailed] = []

    # --- the live footer -----------------------------------------------------------

    def _footer(self) -> str:
        counts = Counter(self._state.values())
        parts = [f"{counts[s]} {s}" for s in ("evicting", "blocked", "terminating", "gone", "failed") if counts[s]]
        budgets = Counter(
            self._blocked_by[p] for p, s in self._state.items() if s == "blocked" and p in self._blocked_by
        )
        if budgets:
            parts.append("waiting on " + ", ".join(f"{pdb} ({n})" for pdb, n in budgets.most_common(3)))
        elapsed = int(time.monotonic() - self._started)
        return f"[{elapsed // 60:02d}:{elapsed % 60:02d}] " + (", ".join(parts) or "starting")

    def _write(self, stream: TextIO, line: str) -> None:
        if self.live and self._footer_shown:
            self.out.write("\r\033[K")
            self.out.flush()
        stream.write(line + "\n")
        stream.flush()
        if self.live:
            self.out.write(self._footer())
            self.out.flush()
            self._footer_shown = True

    def _refresh(self) -> None:
        if self.live:
            self.out.write("\r\033[K" + self._footer())
            self.out.flush()
            self._footer_shown = True

    def close(self) -> None:
        if self.live and self._footer_shown:
            self.out.write("\r\033[K")
            self.out.flush()

    # --- events --------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._handle(event)

    def _handle(self, event: Event) -> None:
        if isinstance(event, ev.NodeCordoned):
            verb = "cordoned" if event.changed else "already cordoned"
            self._write(self.out, f"node/{event.node} {verb}{_dry(event.dry_run)}")
        elif isinstance(event, ev.NodeUncordoned):
            verb = "uncordoned" if event.changed else "already uncordoned"
            self._write(self.out, f"node/{event.node} {verb}{_dry(event.dry_run)}")
        elif isinstance(event, ev.DrainWarning):
            self._write(self.err, f"Warning: {event.message}")
        elif isinstance(event, ev.BatchStarted):
            self._write(self.out, f"batch {event.index}: {', '.join(event.nodes)}")
        elif isinstance(event, EvictionStarted):
            key = str(event.pod)
            self._state[key] = "evicting"
            if event.attempt == 1 and event.method == "evict":
                self._write(self.out, f"evicting pod {event.pod}{_dry(event.dry_run)}")
            else:
                self._refresh()
        elif isinstance(event, EvictionBlocked):
            key = str(event.pod)
            self._state[key] = "blocked"
            self._write(self.err, self._blocked_line(event))
            if event.pdb:
                self._blocked_by[key] = event.pdb
        elif isinstance(event, PodEvicted):
            self._state[str(event.pod)] = "terminating"
            if event.dry_run == "client" and event.method == "evict":
                self._write(self.out, f"evicting pod {event.pod}{_dry(event.dry_run)}")
            elif event.dry_run == "client":
                self._write(self.out, f"deleting pod {event.pod}{_dry(event.dry_run)}")
            else:
                self._refresh()
        elif isinstance(event, PodGone):
            self._state[str(event.pod)] = "gone"
            self._write(self.out, f"pod/{event.pod.name} evicted")
        elif isinstance(event, PodSkippedWaiting):
            self._state[str(event.pod)] = "gone"
            self._write(
                self.out, f'pod "{event.pod.name}" has DeletionTimestamp older than {event.seconds} seconds, skipping'
            )
        elif isinstance(event, PodFailed):
            self._state[str(event.pod)] = "failed"
            self.failures[str(event.pod)] = event.reason
            self._write(
                self.err, f'error when evicting pods/"{event.pod.name}" -n "{event.pod.namespace}": {event.reason}'
            )
        elif isinstance(event, ev.NodeDrained):
            self._write(self.out, f"node/{event.node} drained{_dry(event.dry_run)}")
        elif isinstance(event, ev.NodeDrainFailed):
            self.node_failures.append(event)
            self._write(
                self.err,
                f'error: unable to drain node "{event.node}" due to error: {event.reason}, continuing command...',
            )
        elif isinstance(event, ev.WaitingForWorkloads):
            self._write(
                self.out,
                "waiting for evicted workloads to be available before the next batch: "
                + ", ".join(map(str, event.workloads)),
            )
        elif isinstance(event, ev.WorkloadsAvailable):
            self._write(self.out, f"workloads available again after {event.seconds:.1f}s")
        elif isinstance(event, ev.DrainFinished):
            self.close()
            self._summary(event)

    def _blocked_line(self, event: EvictionBlocked) -> str:
        wait = max(0.0, event.next_try_by - time.time())
        where = f"pod {event.pod} (node {event.pod.node})"
        tail = f"blocked since {_clock(event.since)}" + (f", attempt {event.attempts}" if event.attempts else "")
        if event.reason == "pdb-blocked":
            counts = ""
            if event.healthy is not None and event.needed is not None:
                counts = f" (healthy {event.healthy}, needs {event.needed})"
            return (
                f"{where}: PodDisruptionBudget {event.pdb}{counts} allows no disruption now; {tail}; "
                f"retrying as soon as it has room, {wait:.1f}s at the latest"
            )
        if event.reason == "pdb-status-stale":
            return (
                f"{where}: PodDisruptionBudget {event.pdb} is still being processed by the server; {tail}; "
                f"retrying in {wait:.1f}s (Retry-After {event.retry_after:g}s)"
            )
        if event.reason == "throttled":
            asked = f"Retry-After {event.retry_after:g}s" if event.retry_after is not None else "no Retry-After"
            return f"{where}: the API server is throttling requests ({asked}); {tail}; retrying in {wait:.1f}s"
        return f"{where}: {event.message}; {tail}; retrying in {wait:.1f}s"

    def _summary(self, event: ev.DrainFinished) -> None:
        if not event.failed:
            return
        self.err.write("There are pending nodes to be drained:\n")
        for name in event.failed:
            self.err.write(f" {name}\n")
        for failure in self.node_failures:
            state = "left cordoned" if failure.cordoned else "uncordoned"
            self.err.write(f"node {failure.node} ({state}): {failure.reason}\n")
            for pod in failure.pending:
                self.err.write(f"  pod {pod}: {self.failures.get(pod, 'not removed')}\n")
        self.err.flush()


def print_plan(plan: ev.DrainPlanned, out: TextIO) -> None:
    """The pre-flight plan as a table per node."""
    for node in plan.nodes:
        state = "cordoned" if node.cordoned else "schedulable"
        out.write(f"node/{node.node} ({state}): {len(node.pods)} pods\n")
        if not node.pods:
            continue
        rows = [("POD", "VERDICT", "PDB", "REASON")]
        for pod in node.pods:
            rows.append((str(pod.pod), pod.verdict, ",".join(pod.pdbs) or "-", pod.reason or "-"))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for row in rows:
            out.write("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3] + "\n")
        for error in node.errors:
            out.write(f"  error: {error}\n")
        if node.warnings:
            out.write(f"  Warning: {node.warnings}\n")
    out.flush()
