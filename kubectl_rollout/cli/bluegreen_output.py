"""Printing a blue-green rollout's events for people (part of the rollout printer, ``rollout_output``).

stdout says where the rollout stands (``blue-green: preview ready 10/10,
waiting for promote``, ``blue-green: active switched, old scaled down in
30s``); stderr, indented, the Services the driver pointed elsewhere on the way.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubectl_rollout.cli.text_output import Formatter, Line
from kubectl_rollout.jobs.events import bluegreen as bev
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.views.rollout import RolloutView
from kubectl_rollout.kube.durations import go_duration


def _started(event: bev.BlueGreenStarted, _view: RolloutView) -> Iterator[Line]:
    yield (
        "out",
        f"blue-green: new revision beside ReplicaSet {event.stable}, which the active Service "
        f"{event.active_service} keeps selecting until promote",
    )


def _switched(event: bev.ServiceSwitched, _view: RolloutView) -> Iterator[Line]:
    if event.role is bev.ServiceRole.ACTIVE and event.scale_down_in is not None:
        yield (
            "out",
            f"blue-green: active switched to ReplicaSet {event.replica_set}, old scaled down in "
            f"{go_duration(event.scale_down_in)}",
        )
        return
    yield "err", f"  {event.role.value} Service {event.service} selects ReplicaSet {event.replica_set}"


def _preview_ready(event: bev.PreviewReady, _view: RolloutView) -> Iterator[Line]:
    if event.waits:
        then = "waiting for promote"
    elif event.auto_promote_in:
        then = f"promoting itself in {go_duration(event.auto_promote_in)}"
    else:
        then = "promoting itself"
    yield "out", f"blue-green: preview ready {event.available}/{event.replicas}, {then}"


def _scaled_down(event: bev.OldScaledDown, _view: RolloutView) -> Iterator[Line]:
    after = event.scaled_down_at - event.switched_at
    yield "out", f"blue-green: old ReplicaSet {event.replica_set} scaled down to 0, {after:.1f}s after the switch"


def _promoted(event: bev.BlueGreenPromoted, _view: RolloutView) -> Iterator[Line]:
    yield "out", f"workload/{event.workload} promoted by {event.by}"


def _aborted(event: bev.BlueGreenAborted, _view: RolloutView) -> Iterator[Line]:
    back = "switches back to" if event.switched_back else "stays on"
    yield "out", f"workload/{event.workload} blue-green aborted: the active Service {back} the stable ReplicaSet"


def _retried(event: bev.BlueGreenRetried, _view: RolloutView) -> Iterator[Line]:
    yield "out", f"workload/{event.workload} blue-green retried: the preview grows again"


def _progressed(event: bev.BlueGreenProgressed, _view: RolloutView) -> Iterator[Line]:
    yield "out", event.line


BLUE_GREEN_FORMATTERS: dict[type[Event], Formatter] = {
    bev.BlueGreenProgressed: _progressed,
    bev.BlueGreenStarted: _started,
    bev.ServiceSwitched: _switched,
    bev.PreviewReady: _preview_ready,
    bev.OldScaledDown: _scaled_down,
    bev.BlueGreenPromoted: _promoted,
    bev.BlueGreenAborted: _aborted,
    bev.BlueGreenRetried: _retried,
}
