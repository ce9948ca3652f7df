"""A canary's state on the workload's record (the ConfigMap's ``canary`` key), and its Kubernetes Events.

Written as the status is (``record.save_status``): a merge patch of one key,
only over the version it was computed from, so that a promote and a driver
that race never overwrite each other's news: the loser gets StaleRecord and
decides again on a fresh read.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

from kubernetes import client

from kubectl_rollout.jobs import next_steps
from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.kube import object_events
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.durations import go_duration
from kubectl_rollout.kube.record_names import record_name
from kubectl_rollout.rollout.canary.state import CanaryState, step_line
from kubectl_rollout.rollout.record import Record, patch_data
from kubectl_rollout.rollout.steps.format import Pause, parse_steps, weight_at
from kubectl_rollout.rollout.steps.weights import step_goal

#: the record's key that holds the canary's state
CANARY_KEY = "canary"
REPORTING_CONTROLLER = "rollout-plus.kubectl.io/canary"


def state_of(record: Record) -> CanaryState | None:
    raw = (record.config_map.data or {}).get(CANARY_KEY)
    if not raw:
        return None
    try:
        return CanaryState.from_dict(json.loads(raw))
    except (ValueError, TypeError):
        return None  # written by hand, or by a newer version in a shape this one cannot read: start over


def save_state(
    cluster: Cluster, record: Record, state: CanaryState | None, *, status: dict[str, Any] | None = None
) -> Record:
    """Store ``state`` (None: remove it), with the status as ``status`` when given, over the version read."""
    data: dict[str, str | None] = {
        CANARY_KEY: json.dumps(state.as_dict(), sort_keys=True) if state is not None else None
    }
    if status is not None:
        data["status"] = json.dumps(status, sort_keys=True)
    return patch_data(cluster, record, data)


def record_canary_event(
    cluster: Cluster,
    record: Record,
    *,
    reason: str,
    message: str,
    warning: bool = False,
    action: str = "Canary",
    reporting_controller: str = REPORTING_CONTROLLER,
) -> None:
    """A Kubernetes Event on the workload's record: ``kubectl describe configmap rollout-plus.NAME`` lists it
    (``action`` and ``reporting_controller``: blue-green's events say they are blue-green's)."""
    involved = client.V1ObjectReference(
        api_version="v1",
        kind="ConfigMap",
        name=record_name(record.name),
        namespace=record.namespace,
        uid=record.uid,
    )
    object_events.record_event(
        cluster,
        involved,
        namespace=record.namespace,
        reason=reason,
        message=message,
        action=action,
        reporting_controller=reporting_controller,
        warning=warning,
    )


def who() -> str:
    """Who acts, as the record and the Events say it: the user and the machine (``alice@build-01``)."""
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def step_status(record: Record) -> str:
    """Where the workload's canary stands, for ``status``: "" when none is under way."""
    state = state_of(record)
    if state is None or not state.steps or (state.done and state.aborted is None):
        return ""
    line = step_line(
        steps=state.steps, index=state.step, canary=record.status.updated_replicas, replicas=record.spec.replicas
    )
    if state.aborted is not None:
        return f"aborted by {state.aborted.by}, at {line}; start again with {next_steps.command('retry', record.name)}"
    if state.paused is not None:
        return f"{line} (paused; go on with {next_steps.command('promote', record.name)})"
    started = step_started(record)
    if started is not None and started.until is not None:
        return f"{line} ({go_duration(max(0, round(started.until - time.time())))} left)"
    return line


def step_started(record: Record) -> cev.StepStarted | None:
    """The step the record says the canary is at, as the driver announced it: what a follower reports."""
    state = state_of(record)
    if state is None or state.done or state.aborted is not None:
        return None
    steps = parse_steps("\n".join(state.steps), workload=record.name)
    step = steps[state.step]
    goal = step_goal(replicas=record.spec.replicas, weight=weight_at(steps, state.step))
    return cev.StepStarted(
        workload=record.name,
        step=state.step + 1,
        steps=len(steps),
        text=str(step),
        canary=goal.canary,
        stable=goal.stable,
        replicas=record.spec.replicas,
        until=state.step_started_at + step.seconds if isinstance(step, Pause) and step.seconds else None,
    )


def canary_state(record: Record) -> dict[str, Any] | None:
    """The canary's state as recorded, for ``status -o json``."""
    state = state_of(record)
    return state.as_dict() if state is not None else None
