"""A blue-green rollout's state on the workload's record (the ConfigMap's ``blueGreen`` key), its Kubernetes
Events, and the line ``status`` prints.

Written as a canary's is: a merge patch of one key over the version read, so
that a promote and a driver that race never overwrite each other's news (the
loser gets StaleRecord and decides again on a fresh read).
"""

from __future__ import annotations

import json
import time
from typing import Any

from kubectl_rollout.jobs import next_steps
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.durations import go_duration
from kubectl_rollout.rollout.bluegreen.format import BlueGreen, blue_green_of
from kubectl_rollout.rollout.bluegreen.state import BlueGreenState
from kubectl_rollout.rollout.canary.record_state import record_canary_event
from kubectl_rollout.rollout.record import Record, patch_data

#: the record's key that holds the blue-green state
BLUE_GREEN_KEY = "blueGreen"
REPORTING_CONTROLLER = "rollout-plus.kubectl.io/blue-green"


def settings_of(record: Record) -> BlueGreen | None:
    """The workload's blue-green settings (its manifest's annotations); None when it is not blue-green."""
    return blue_green_of(record.spec.annotations, workload=record.name, strategy_type=record.spec.strategy)


def state_of(record: Record) -> BlueGreenState | None:
    raw = (record.config_map.data or {}).get(BLUE_GREEN_KEY)
    if not raw:
        return None
    try:
        return BlueGreenState.from_dict(json.loads(raw))
    except (ValueError, TypeError):
        return None  # written by hand, or by a newer version in a shape this one cannot read: start over


def save_state(cluster: Cluster, record: Record, state: BlueGreenState | None) -> Record:
    """Store ``state`` (None: remove it) over the version read."""
    value = json.dumps(state.as_dict(), sort_keys=True) if state is not None else None
    return patch_data(cluster, record, {BLUE_GREEN_KEY: value})


def tell(cluster: Cluster, record: Record, *, reason: str, message: str, warning: bool = False) -> None:
    """A Kubernetes Event on the workload's record: ``kubectl describe configmap rollout-plus.NAME`` lists it."""
    record_canary_event(
        cluster,
        record,
        reason=reason,
        message=message,
        warning=warning,
        action="BlueGreen",
        reporting_controller=REPORTING_CONTROLLER,
    )


def blue_green_status(record: Record, *, now: float | None = None) -> str:
    """Where the workload's blue-green rollout stands, for ``status``: "" when none is under way."""
    settings = settings_of(record)
    state = state_of(record)
    if settings is None or state is None or state.done:
        return ""
    now = time.time() if now is None else now
    replicas = record.spec.replicas
    if state.aborted is not None:
        return (
            f"blue-green: aborted by {state.aborted.by}, the active Service back on ReplicaSet {state.stable}; "
            f"start again with {next_steps.command('retry', record.name)}"
        )
    if state.switched_at is not None:
        left = max(0, round(state.switched_at + settings.scale_down_delay - now))
        return f"blue-green: active switched, old scaled down in {go_duration(left)}"
    if state.first:
        return f"blue-green: first rollout, the active Service follows once {replicas}/{replicas} pods are available"
    size = settings.preview_size(replicas)
    if state.promoted is not None:
        return f"blue-green: promoted by {state.promoted.by}, the active Service switches at {replicas} ready pods"
    if state.ready_at is None:
        return f"blue-green: preview {record.status.updated_replicas}/{size} pods"
    if settings.auto_promote_after is None:
        return (
            f"blue-green: preview ready {size}/{size}, waiting for promote "
            f"({next_steps.command('promote', record.name)})"
        )
    left = max(0, round(state.ready_at + settings.auto_promote_after - now))
    return f"blue-green: preview ready {size}/{size}, promoting itself in {go_duration(left)}"


def blue_green_state(record: Record) -> dict[str, Any] | None:
    """The blue-green state as recorded, for ``status -o json``."""
    state = state_of(record)
    return state.as_dict() if state is not None else None
