"""What a person does to a blue-green rollout: ``promote``, ``abort``, ``retry``, the same commands as a canary's.

Each reads the record, checks that a blue-green rollout of the current
template is where the command makes sense (refused with nothing changed
otherwise), writes the state over the version it read (a driver's write
meanwhile makes it conflict, and the command decides again on a fresh read),
says so as a Kubernetes Event on the workload, and emits what it did. The
driver (this job's, or the one holding the workload) carries it out: it
switches the Services and scales the ReplicaSets.
"""

from __future__ import annotations

import dataclasses
import time

from kubectl_rollout.jobs import next_steps
from kubectl_rollout.jobs.events import bluegreen as bev
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.rollout import replica_sets
from kubectl_rollout.rollout.bluegreen.record_state import save_state, settings_of, state_of, tell
from kubectl_rollout.rollout.bluegreen.state import BlueGreenState, promoted, retried
from kubectl_rollout.rollout.canary.record_state import who
from kubectl_rollout.rollout.canary.state import Mark
from kubectl_rollout.rollout.operations import retrying_conflicts
from kubectl_rollout.rollout.record import Record, read


class NoBlueGreen(UserFacingError):
    """No blue-green rollout where the command makes sense: nothing to promote, abort or retry."""


def is_blue_green(cluster: Cluster, namespace: str, name: str) -> bool:
    """Whether the workload's manifest asks for blue-green (promote, abort and retry then act on that)."""
    return settings_of(read(cluster, namespace, name)) is not None


def _under_way(cluster: Cluster, record: Record, verb: str) -> BlueGreenState:
    name = record.name
    state = state_of(record)
    if state is None or state.new_hash != replica_sets.current_identity(cluster, record):
        raise NoBlueGreen(
            f'workload "{name}" has no blue-green rollout under way (one begins with the next change of its pod '
            f"template): nothing to {verb}; nothing was changed"
        )
    if state.first:
        raise NoBlueGreen(
            f'workload "{name}" is on its first rollout (no previous ReplicaSet to switch from or back to): '
            f"nothing to {verb}; nothing was changed"
        )
    if state.done:
        raise NoBlueGreen(
            f'workload "{name}"\'s blue-green rollout is over (the old ReplicaSet is scaled down): nothing to '
            f"{verb}; return to the previous revision with {next_steps.command('undo', name)}; nothing was changed"
        )
    return state


def promote(cluster: Cluster, namespace: str, name: str, emit: Emit) -> Record:
    """Switch the active Service to the new ReplicaSet once it is at full size with every pod available."""
    by, now = who(), time.time()

    def attempt() -> Record:
        record = read(cluster, namespace, name)
        state = _under_way(cluster, record, "promote")
        if state.aborted is not None:
            raise NoBlueGreen(
                f'workload "{name}"\'s blue-green rollout was aborted: start it again with '
                f"{next_steps.command('retry', name)}; nothing was changed"
            )
        if state.promoted is not None:
            raise NoBlueGreen(f'workload "{name}" was already promoted by {state.promoted.by}; nothing was changed')
        return save_state(cluster, record, promoted(state, by=by, now=now))

    record = retrying_conflicts(name, attempt)
    emit(bev.BlueGreenPromoted(workload=name, by=by, when=now))
    tell(
        cluster,
        record,
        reason="Promoted",
        message=f"promoted by {by}: the active Service switches to the new "
        "ReplicaSet once every one of its pods is available",
    )
    return record


def abort(cluster: Cluster, namespace: str, name: str, emit: Emit) -> Record:
    """The active Service back on the stable ReplicaSet, the new one to 0; aborted until ``retry`` or a change."""
    by, now = who(), time.time()

    def attempt() -> tuple[Record, BlueGreenState]:
        record = read(cluster, namespace, name)
        state = _under_way(cluster, record, "abort")
        if state.aborted is not None:
            raise NoBlueGreen(f'workload "{name}"\'s blue-green rollout is already aborted; nothing was changed')
        after = dataclasses.replace(state, aborted=Mark(by=by, at=now), paused=None)
        return save_state(cluster, record, after), state

    record, before = retrying_conflicts(name, attempt)
    switched = before.switched_at is not None
    emit(bev.BlueGreenAborted(workload=name, by=by, when=now, switched_back=switched))
    tell(
        cluster,
        record,
        reason="Aborted",
        message=f"blue-green aborted by {by}: the active Service "
        + ("switches back to" if switched else "stays on")
        + f" ReplicaSet {before.stable}, the new one goes to 0",
        warning=True,
    )
    return record


def retry(cluster: Cluster, namespace: str, name: str, emit: Emit) -> Record:
    """An aborted blue-green rollout from the start: the preview grows again and waits to be promoted again."""
    by, now = who(), time.time()

    def attempt() -> Record:
        record = read(cluster, namespace, name)
        state = _under_way(cluster, record, "retry")
        if state.aborted is None:
            raise NoBlueGreen(
                f'workload "{name}"\'s blue-green rollout is not aborted: nothing to retry; nothing was changed'
            )
        return save_state(cluster, record, retried(state, by=by, now=now))

    record = retrying_conflicts(name, attempt)
    emit(bev.BlueGreenRetried(workload=name, by=by, when=now))
    tell(cluster, record, reason="Retried", message=f"blue-green rollout started again by {by}")
    return record
