"""Drive a managed workload's rollout, or follow another driver's until its lease could lapse, then drive.

One driver acts at a time (the workload's Lease). A job that finds the lease
held follows the record's status instead, reporting it as the driver writes
it; once the lease could have lapsed (its holder finished, or died and stopped
renewing) the job tries to take it over, and goes on following if the holder
renewed it. So ``status -w`` both watches a rollout and finishes one whose
driver was killed. A holder that is a process of this machine is looked at on
every turn of the follow loop: once it has provably ended, the job takes the
lease over at once (``kube.holder_identity``) instead of waiting for it to lapse.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time

from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.jobs.events.bluegreen import BlueGreenProgressed
from kubectl_rollout.jobs.events.canary import StepStarted
from kubectl_rollout.jobs.spec import DriveOptions as DriveOptions
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.holder_identity import holder_verdict
from kubectl_rollout.kube.record_names import WORKLOAD_LABEL, record_name
from kubectl_rollout.kube.watched_collection import WatchedCollection
from kubectl_rollout.kube.workload_lease import LEASE_SECONDS, LeaseHeld
from kubectl_rollout.rollout import replica_sets
from kubectl_rollout.rollout.bluegreen.record_state import blue_green_state, blue_green_status
from kubectl_rollout.rollout.canary.record_state import step_started
from kubectl_rollout.rollout.driver import RolloutDriver, RolloutResult
from kubectl_rollout.rollout.progress_events import condition_changes, outcome_of, progress_event
from kubectl_rollout.rollout.record import Record, from_config_map
from kubectl_rollout.rollout.state import RolloutStatus, rollout_phase, status_message

#: at least this long between two attempts to take the lease over
MIN_FOLLOW_SECONDS = 1.0


def drive(
    cluster: Cluster,
    namespace: str,
    name: str,
    options: DriveOptions,
    context: JobContext,
    *,
    following: str | None = None,
) -> RolloutResult:
    """Drive the rollout to its end; LeaseHeld when another driver holds the workload (see ``RolloutDriver``)."""
    return RolloutDriver(cluster, namespace, name, context, options, following=following).run()


class _Follower:
    """Follows the record's status while another driver writes it."""

    def __init__(self, cluster: Cluster, namespace: str, name: str, emit: Emit, cancel: threading.Event) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.emit = emit
        self.cancel = cancel
        #: the last state reported while following (across every period of following)
        self.reported = ""
        #: the last status seen, whose conditions were reported
        self.status = RolloutStatus()
        #: the canary's step as last reported (None: no canary under way)
        self.step: StepStarted | None = None
        #: the blue-green state as last reported ("" : none under way)
        self.blue_green = ""

    def _report_blue_green(self, record: Record) -> None:
        """Where a blue-green rollout stands, each time its state on the record changes."""
        state = blue_green_state(record)
        key = json.dumps(state, sort_keys=True) if state is not None else ""
        if key == self.blue_green:
            return
        self.blue_green = key
        line = blue_green_status(record)
        if line:
            self.emit(BlueGreenProgressed(workload=self.name, line=line))

    def follow(
        self, until: float, deadline: float | None, timeout: float | None, *, holder: str = ""
    ) -> RolloutResult | None:
        """Report the status as it changes until ``until`` (monotonic), or until ``holder`` (the driver followed)
        is a process of this machine that has provably ended; a result when the rollout ended first."""
        key = (self.namespace, record_name(self.name))
        records = WatchedCollection(
            self.cluster.core.list_namespaced_config_map,
            namespace=self.namespace,
            field_selector=f"metadata.name={record_name(self.name)}",
            description="the record",
        )
        rs_watch = WatchedCollection(
            self.cluster.apps.list_namespaced_replica_set,
            namespace=self.namespace,
            label_selector=f"{WORKLOAD_LABEL}={self.name}",
            description="ReplicaSets",
        )
        try:
            records.start()
            rs_watch.start()
            while time.monotonic() < until:
                if holder and holder_verdict(holder).gone:
                    return None  # no need to wait for its lease to lapse: take it over now
                if self.cancel.is_set():
                    return RolloutResult(
                        succeeded=False,
                        message="interrupted; the rollout goes on with its driver",
                        outcome=ev.RolloutOutcome.INTERRUPTED,
                    )
                raw = records.get(key)
                if raw is None:
                    return RolloutResult(
                        succeeded=False,
                        message=f'managed workload "{self.name}" was deleted',
                        outcome=ev.RolloutOutcome.DELETED,
                    )
                record = from_config_map(raw)
                target = record.target()
                phase = rollout_phase(target, record.status)
                message = status_message(self.name, target, record.status, phase)
                for change in condition_changes(self.name, self.status, record.status):
                    self.emit(change)
                self.status = record.status
                started = step_started(record)
                if started is not None and started != self.step:
                    self.emit(started)
                self.step = started
                self._report_blue_green(record)
                if message != self.reported:
                    mine = replica_sets.owned(rs_watch.snapshot(), record)
                    current = replica_sets.current_identity(self.cluster, record)
                    new = next((m.name for m in map(replica_sets.to_managed, mine) if m.template_hash == current), "")
                    self.emit(progress_event(record, record.status, phase, message, replica_sets.rows(mine, new)))
                    self.reported = message
                if phase.done:
                    return RolloutResult(succeeded=not phase.failed, message=message, outcome=outcome_of(phase))
                if deadline is not None and time.monotonic() > deadline:
                    return RolloutResult(
                        succeeded=False,
                        message=f"timed out after {timeout:g}s: {message}",
                        outcome=ev.RolloutOutcome.TIMED_OUT,
                    )
                version = record.resource_version

                def changed(collection: WatchedCollection, version: str = version) -> bool:
                    current = collection.objects_locked().get(key)
                    return current is None or current.metadata.resource_version != version

                records.wait_until(changed, min(1.0, max(0.0, until - time.monotonic())), self.cancel)
            return None
        finally:
            records.stop()
            rs_watch.stop()


def follow_or_drive(
    cluster: Cluster,
    namespace: str,
    name: str,
    options: DriveOptions,
    context: JobContext,
) -> RolloutResult:
    """Drive the rollout; while another driver holds the lease, follow the record's status instead.

    ``context.paused``: the job's pause switch; it pauses the workload once this job drives it (see
    ``RolloutDriver``)."""
    emit = context.emit
    deadline = None if options.timeout is None else time.monotonic() + options.timeout
    follower = _Follower(cluster, namespace, name, emit, context.cancel)
    holder: str | None = None
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            remaining = dataclasses.replace(options, timeout=left)
            return drive(cluster, namespace, name, remaining, context, following=holder)
        except LeaseHeld as held:
            holder = held.holder
            emit(
                ev.FollowingDriver(
                    workload=name,
                    lease=held.lease,
                    holder=held.holder,
                    expires_at=held.expires_at,
                    seconds_left=held.seconds_left,
                )
            )
            # Try again as soon as the lease could have lapsed; a holder that renews it meanwhile is followed on.
            wait = min(float(LEASE_SECONDS), max(MIN_FOLLOW_SECONDS, held.seconds_left))
        result = follower.follow(time.monotonic() + wait, deadline, options.timeout, holder=holder or "")
        if result is not None:
            return result
