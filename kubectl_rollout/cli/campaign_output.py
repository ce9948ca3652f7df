"""Printing a campaign: the plan (text or JSON), then the drain's lines and the campaign's own.

The drain's lines (cordoned, evicting, blocked by which PDB, drained) come from ``drain_output``; around them
the campaign says which wave starts, what the window and the rate hold, what the hooks answered, how each
node ended, and at the end what is left and why.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import TextIO

from kubectl_rollout.cli.drain_output import DRAIN_FORMATTERS
from kubectl_rollout.cli.text_output import Formatter, Line, Stream, TextPrinter
from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.views.campaign import CampaignView, fold
from kubectl_rollout.kube.durations import go_duration


def _when(epoch: float | None) -> str:
    if epoch is None:
        return "never within a week"
    return datetime.fromtimestamp(epoch).astimezone().strftime("%a %Y-%m-%d %H:%M:%S %Z")


def _seconds(seconds: float) -> str:
    return go_duration(round(seconds, 1))


def plan_as_json(plan: ev.CampaignPlanned) -> str:
    return json.dumps(plan.as_dict(), indent=2)


def plan_lines(plan: ev.CampaignPlanned) -> Iterator[str]:
    nodes = sum(len(w.nodes) for w in plan.waves)
    scope = f"{nodes} node(s) in {len(plan.waves)} wave(s), at most {plan.budget} out at once"
    if plan.budget_text and plan.budget_text != str(plan.budget):
        scope += f" ({plan.budget_text})"
    extras = [
        "one zone at a time" if plan.per_zone else "",
        f"rate {plan.rate}" if plan.rate else "",
        f"soak {_seconds(plan.soak)}" if plan.soak else "",
    ]
    yield "campaign: " + ", ".join([scope, *(e for e in extras if e)])
    if plan.done:
        yield f"done before (not drained again): {', '.join(plan.done)}"
    if plan.pending_taint:
        yield f"nodes still to drain: tainted {plan.pending_taint} (evicted pods go elsewhere when they fit)"
    if not plan.windows:
        yield "windows: none (always allowed)"
    else:
        now = (
            f"open now, until {_when(plan.window_closes_at)}"
            if plan.window_closes_at is not None
            else f"closed now, next opens {_when(plan.next_opening)}"
        )
        yield f"windows: {'; '.join(plan.windows)} ({now})"
    for wave in plan.waves:
        zones = f" [{', '.join(z or 'no zone' for z in wave.zones)}]" if any(wave.zones) else ""
        members = ", ".join(f"{n.name} ({n.pods} pods{', cordoned' if n.cordoned else ''})" for n in wave.nodes)
        yield f"wave {wave.index}{zones}: {members}"
        for blocker in wave.blockers:
            yield (
                f"  held by PodDisruptionBudget {blocker.pdb}: {blocker.pods} of the wave's pods, "
                f"{blocker.allowed} disruption(s) allowed now: {blocker.rounds} rounds, "
                f"at least {_seconds(blocker.at_least_seconds)}"
            )
    if plan.ruled_pods:
        yield "pods kept by per-pod rules:"
        for pod in plan.ruled_pods:
            yield f"  pod {pod.pod} (node {pod.pod.node}): {pod.source}: {pod.effect}"
    yield f"estimated time: at least {_seconds(plan.estimated_seconds)} (windows not counted)"


def _planned(event: ev.CampaignPlanned, _view: CampaignView) -> Iterator[Line]:
    for line in plan_lines(event):
        yield "out", line


def _tainted(event: ev.PendingTainted, _view: CampaignView) -> Iterator[Line]:
    yield "out", f"tainted {event.taint}: {', '.join(f'node/{n}' for n in event.nodes)}"


def _untainted(event: ev.PendingUntainted, _view: CampaignView) -> Iterator[Line]:
    why = " while it waits for the next window" if event.reason == "window" else ""
    yield "out", f"taint removed{why}: {', '.join(f'node/{n}' for n in event.nodes)}"


def _wave(event: ev.WaveStarted, _view: CampaignView) -> Iterator[Line]:
    zones = f" [{', '.join(event.zones)}]" if any(event.zones) else ""
    yield "out", f"wave {event.index}{zones}: {', '.join(f'node/{n}' for n in event.nodes)}"


def _held(event: ev.PodsHeld, _view: CampaignView) -> Iterator[Line]:
    for pod in event.pods:
        yield "out", f"node/{event.node}: waiting for pod {pod.pod} ({pod.source}: {pod.effect})"


def _soak(event: ev.SoakStarted, _view: CampaignView) -> Iterator[Line]:
    workloads = ", ".join(map(str, event.workloads)) or "no workload lost a pod"
    yield "out", f"wave {event.index}: soaking {_seconds(event.seconds)} ({workloads})"


def _soak_counting(event: ev.SoakCounting, _view: CampaignView) -> Iterator[Line]:
    # Said again when the count starts over (a workload was unavailable meanwhile).
    yield "out", f"wave {event.index}: every workload available; the soak ends at {_when(event.until)}"


def _soaked(event: ev.NodeSoaked, _view: CampaignView) -> Iterator[Line]:
    yield "out", f"node/{event.node} soaked ({_seconds(event.seconds)})"


def _hook(event: ev.HookRan, _view: CampaignView) -> Iterator[Line]:
    how = "timed out" if event.timed_out else f"exited {event.exit_code}"
    line = f"node/{event.node}: {event.hook}-hook {how} after {_seconds(event.seconds)}"
    if event.ok:
        yield "out", line
        return
    yield "err", line
    for text in event.output.splitlines()[-5:]:
        yield "err", f"  {text}"


def _labelled(event: ev.NodeLabelled, _view: CampaignView) -> Iterator[Line]:
    yield "out", f"node/{event.node} labelled ({event.hook}): {', '.join(event.labels)}"


def _done(event: ev.NodeDone, _view: CampaignView) -> Iterator[Line]:
    how = "replaced" if event.replaced else ("uncordoned" if event.uncordoned else "left cordoned")
    yield "out", f"node/{event.node} done ({how})"


def _skipped(event: ev.NodeSkipped, _view: CampaignView) -> Iterator[Line]:
    state = "uncordoned" if event.uncordoned else "not uncordoned"
    yield "err", f"node/{event.node} skipped ({state}): {event.reason}"


def _kept(event: ev.NodeKept, _view: CampaignView) -> Iterator[Line]:
    yield "err", f"node/{event.node} kept cordoned, labelled {event.label}: {event.reason}"


def _closed(event: ev.WindowClosed, _view: CampaignView) -> Iterator[Line]:
    busy = ""
    if event.in_progress:
        verb = "finish" if event.at_window_end == "finish" else "stop"
        busy = f"; the nodes in progress {verb}: {', '.join(event.in_progress)}"
    yield "out", f"window closed: no node starts until {_when(event.next_opening)}{busy}"


def _opened(event: ev.WindowOpened, _view: CampaignView) -> Iterator[Line]:
    if event.closes_at is not None:
        yield "out", f"window open until {_when(event.closes_at)}"


def _rate(event: ev.WaitingForRate, _view: CampaignView) -> Iterator[Line]:
    yield "out", f"wave {event.index}: waiting for the rate until {_when(event.until)}"


def _finished(event: ev.CampaignFinished, view: CampaignView) -> Iterator[Line]:
    stream: Stream = "out" if event.succeeded else "err"
    parts = [f"{len(event.done)} done"]
    for names, what in (
        (event.skipped, "skipped"),
        (event.kept, "kept"),
        (event.failed, "failed"),
        (event.not_started, "not started"),
    ):
        if names:
            parts.append(f"{len(names)} {what} ({', '.join(names)})")
    tail = f"; stopped: {event.stopped}" if event.stopped else ""
    yield stream, f"campaign: {', '.join(parts)} in {_seconds(event.seconds)}{tail}"
    for name in (*event.skipped, *event.kept, *event.failed):
        why = view.why.get(name)
        if why:
            yield "err", f"  node/{name}: {why}"


CAMPAIGN_FORMATTERS: dict[type[Event], Formatter] = {
    **DRAIN_FORMATTERS,
    ev.CampaignPlanned: _planned,
    ev.PendingTainted: _tainted,
    ev.PendingUntainted: _untainted,
    ev.WaveStarted: _wave,
    ev.PodsHeld: _held,
    ev.SoakStarted: _soak,
    ev.SoakCounting: _soak_counting,
    ev.NodeSoaked: _soaked,
    ev.HookRan: _hook,
    ev.NodeLabelled: _labelled,
    ev.NodeDone: _done,
    ev.NodeSkipped: _skipped,
    ev.NodeKept: _kept,
    ev.WindowClosed: _closed,
    ev.WindowOpened: _opened,
    ev.WaitingForRate: _rate,
    ev.CampaignFinished: _finished,
}


def campaign_printer(out: TextIO, err: TextIO, *, live: bool = False) -> TextPrinter:
    """The text printer of a campaign."""
    return TextPrinter(
        out,
        err,
        view=CampaignView(),
        fold=fold,
        formatters=CAMPAIGN_FORMATTERS,
        final=(ev.CampaignFinished,),
        live=live,
    )
