"""What a person does to a canary: ``promote [--full]``, ``abort``, ``retry``, as Argo Rollouts' plugin users
expect them.

Each reads the record, checks that the canary is where the command makes
sense (a workload without steps, or with no canary under way, is refused with
nothing changed), writes the canary's state over the version it read (a
driver's write meanwhile makes it conflict, and the command decides again on a
fresh read), says so as a Kubernetes Event on the workload, and emits what it
did. The driver (this job's, or the one holding the workload) carries it out.
"""

from __future__ import annotations

import dataclasses
import time

from kubectl_rollout.jobs import next_steps
from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.rollout import replica_sets
from kubectl_rollout.rollout.canary.driving import workload_steps
from kubectl_rollout.rollout.canary.record_state import record_canary_event, save_state, state_of, who
from kubectl_rollout.rollout.canary.state import CanaryState, Mark
from kubectl_rollout.rollout.operations import retrying_conflicts
from kubectl_rollout.rollout.record import Record, read
from kubectl_rollout.rollout.steps.format import STEPS_ANNOTATION


class NoCanary(UserFacingError):
    """The workload has no steps, or no canary under way: nothing to promote, abort or retry."""


def _under_way(cluster: Cluster, record: Record, verb: str) -> CanaryState:
    """The canary of the workload's current template; NoCanary, naming the workload and why, when there is none."""
    name = record.name
    if not workload_steps(record):
        raise NoCanary(
            f'workload "{name}" has no canary steps (annotation {STEPS_ANNOTATION}): nothing to {verb}; nothing '
            f"was changed"
            + (f"; to resume a paused workload use {next_steps.resume_workload(name)}" if verb == "promote" else "")
        )
    state = state_of(record)
    if state is None or state.canary_hash != replica_sets.current_identity(cluster, record):
        raise NoCanary(
            f'workload "{name}" has no canary under way (its steps begin with the next change of its pod '
            f"template): nothing to {verb}; nothing was changed"
        )
    return state


def promote(cluster: Cluster, namespace: str, name: str, emit: Emit, *, full: bool = False) -> Record:
    """Go past the current step (``full``: past every remaining step); the canary must be under way."""
    by, now = who(), time.time()

    def attempt() -> tuple[Record, CanaryState]:
        record = read(cluster, namespace, name)
        state = _under_way(cluster, record, "promote")
        if state.aborted is not None:
            raise NoCanary(
                f'workload "{name}"\'s canary was aborted: start its steps again with '
                f"{next_steps.command('retry', name)}; nothing was changed"
            )
        if state.done:
            raise NoCanary(
                f'workload "{name}" has gone past its last canary step: nothing to promote; nothing was changed'
            )
        after = dataclasses.replace(
            state,
            step=len(state.steps) if full else state.step + 1,
            step_started_at=now,
            paused=None,
            promoted=Mark(by=by, at=now),
            full=full,
        )
        return save_state(cluster, record, after), state

    record, before = retrying_conflicts(name, attempt)
    step = f"step {before.step + 1}/{len(before.steps)}"
    emit(cev.Promoted(workload=name, step=before.step + 1, steps=len(before.steps), by=by, when=now, full=full))
    record_canary_event(
        cluster,
        record,
        reason="Promoted",
        message=f"promoted {'past every remaining step' if full else 'past ' + step} by {by}",
    )
    return record


def abort(cluster: Cluster, namespace: str, name: str, emit: Emit) -> Record:
    """The stable ReplicaSet back at full size, the canary at 0; the workload stays aborted until ``retry`` or a
    change of its template."""
    by, now = who(), time.time()

    def attempt() -> tuple[Record, CanaryState]:
        record = read(cluster, namespace, name)
        state = _under_way(cluster, record, "abort")
        if state.aborted is not None:
            raise NoCanary(f'workload "{name}"\'s canary is already aborted; nothing was changed')
        if state.done:
            raise NoCanary(
                f'workload "{name}" has gone past its last canary step: nothing to abort (return to the previous '
                f"revision with {next_steps.command('undo', name)}); nothing was changed"
            )
        after = dataclasses.replace(state, aborted=Mark(by=by, at=now), paused=None)
        return save_state(cluster, record, after), state

    record, before = retrying_conflicts(name, attempt)
    reason = f"aborted by {by}"
    emit(cev.Aborted(workload=name, step=before.step + 1, steps=len(before.steps), by=by, when=now, reason=reason))
    record_canary_event(cluster, record, reason="Aborted", message=f"canary {reason}", warning=True)
    return record


def retry(cluster: Cluster, namespace: str, name: str, emit: Emit) -> Record:
    """An aborted canary starts its steps again from the first."""
    by, now = who(), time.time()

    def attempt() -> tuple[Record, CanaryState]:
        record = read(cluster, namespace, name)
        state = _under_way(cluster, record, "retry")
        if state.aborted is None:
            raise NoCanary(f'workload "{name}"\'s canary is not aborted: nothing to retry; nothing was changed')
        after = dataclasses.replace(
            state,
            step=0,
            step_started_at=now,
            aborted=None,
            paused=None,
            gate=None,
            full=False,
            retried=Mark(by=by, at=now),
        )
        return save_state(cluster, record, after), state

    record, before = retrying_conflicts(name, attempt)
    emit(cev.Retried(workload=name, steps=len(before.steps), by=by, when=now))
    record_canary_event(cluster, record, reason="Retried", message=f"canary steps started again by {by}")
    return record
