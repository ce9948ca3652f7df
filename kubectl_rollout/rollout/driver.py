"""The rollout driver: the Deployment controller's sync loop, run by the plugin for one managed workload.

Watch-driven: one watch each on the workload's ReplicaSets, its pods and its
record wakes the loop on every change; a one-second tick only serves the
progress deadline. Each pass takes the lease, plans one sync
(``rollout_plan``), applies it, and writes the status the controller would
(``rollout_state``). Beyond the controller: old ReplicaSets never shrink
faster than the workload's PodDisruptionBudgets allow, new pods that
crash-loop or cannot pull their image fail the rollout at once, and
``auto_rollback`` returns to the last good revision when a rollout fails.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.jobs import next_steps
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.rollout import RolloutOutcome, RolloutPhase
from kubectl_rollout.jobs.spec import DriveOptions
from kubectl_rollout.jobs.views.rollout import rows_after
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UsageError
from kubectl_rollout.kube.label_selectors import selector_matches, selector_to_string
from kubectl_rollout.kube.record_names import WORKLOAD_LABEL, driver_lease_name, record_name
from kubectl_rollout.kube.watched_collection import Transform, WatchedCollection
from kubectl_rollout.kube.workload_lease import WorkloadLease
from kubectl_rollout.rollout import operations, replica_sets
from kubectl_rollout.rollout.bluegreen.driving import BlueGreenWalker
from kubectl_rollout.rollout.bluegreen.record_state import settings_of
from kubectl_rollout.rollout.canary.driving import CanaryPass, CanaryWalker
from kubectl_rollout.rollout.plan import (
    Action,
    CanaryGoal,
    CopyAnnotations,
    CreateReplicaSet,
    DeleteReplicaSet,
    ManagedReplicaSet,
    ScaleReplicaSet,
    SetMinReadySeconds,
    SetRevision,
    old_pods_running,
    plan,
    split,
)
from kubectl_rollout.rollout.progress_events import condition_changes, outcome_of, progress_event
from kubectl_rollout.rollout.record import Record, StaleRecord, from_config_map, read, save_spec, save_status
from kubectl_rollout.rollout.spec import parse_workload
from kubectl_rollout.rollout.state import (
    FAILED_RS_CREATE,
    PODS_FAILING,
    PROGRESSING,
    REPLICA_FAILURE,
    TIMED_OUT,
    RolloutStatus,
    condition,
    is_complete,
    rollout_phase,
    set_condition,
    status_message,
    sync_rollout_status,
)
from kubectl_rollout.rollout.steps.weights import Counts
from kubectl_rollout.rollout.watched_pods import WatchedPod, live_pods, watched_pod

#: the driver's own last status writes it remembers, for a record watch that lags them
WRITES_KEPT = 8
#: waiting reasons that mean a new pod will not start without a change to the workload
IMAGE_FAILURES = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName"})


@dataclass(frozen=True, kw_only=True)
class RolloutResult:
    succeeded: bool
    message: str
    outcome: RolloutOutcome
    rolled_back_to: int | None = None
    paused: bool = False


@dataclass(frozen=True, kw_only=True)
class _PodFailure:
    """A new pod that will not start without a change to the workload."""

    pod: str
    container: str
    reason: str
    restart_count: int
    image: str


class RolloutDriver:
    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        name: str,
        context: JobContext,
        options: DriveOptions,
        *,
        following: str | None = None,
    ) -> None:
        """``following``: the holder of the lease this driver's job followed until now (it emits TookOver).

        ``context.lease_holder``: the identity to hold the workload's Lease under (default: one of this
        process's own); an agent that resumes its jobs passes a stable one, so that it takes back a Lease it held
        before a crash at once instead of waiting for it to lapse.

        ``context.paused``: the job's pause switch (the agent's ``jobs pause ID``). When it is set, the driver
        pauses the workload as ``pause NAME`` does (no rollout progress, no progress deadline; scaling still
        applies) and, instead of ending as it does for a pause made by someone else, waits holding the Lease;
        when it is cleared, the driver resumes the workload and drives on.
        """
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.emit = context.emit
        self.cancel = context.cancel
        self.timeout = options.timeout
        self.respect_pdbs = not options.ignore_pdb
        self.auto_rollback = options.auto_rollback
        self.fail_after_restarts = options.fail_after_restarts
        self.following = following
        self.lease_holder = context.lease_holder
        self.paused = context.paused
        #: what the pause switch asked for when the driver last acted on it
        self._paused_by_switch = False
        #: spec.paused as last known: from our own pause write, or from a record at least as new as it
        self._workload_paused = False
        self._wake = threading.Event()
        self._last_message = ""
        self._last_paused = False
        self._rolled_back_to: tuple[int, str] | None = None
        #: after a rollback, act only on a record at least this new
        self._awaited_generation = 0
        #: PDB uid -> (status resourceVersion, disruptions already spent against it)
        self._spent: dict[str, tuple[str, int]] = {}
        #: the hold last reported (ScaleDownHeldByPdb), None once a scale-down went through unheld: every watch
        #: event wakes a pass, and a hold that did not change is not news
        self._reported_hold: ev.ScaleDownHeldByPdb | None = None
        #: what made this pass's ReplicaFailure condition, if a new pod did
        self._failure: _PodFailure | None = None
        #: the conditions as last reported (ConditionChanged)
        self._reported = RolloutStatus()
        #: the ReplicaSets this driver created (and reported): each is reported once, however far a watch lags
        self._created: set[str] = set()
        #: our last status writes: the record's resourceVersion each was written over -> the record as written
        self._written: dict[str, Record] = {}
        #: what this pass did to the ReplicaSets, so that its report shows them as they now are
        self._done: list[ev.ReplicaSetAction] = []
        #: the workload's canary steps, when it has some
        self._canary = CanaryWalker(cluster, name, context.emit, wake=self._wake.set)
        #: the workload's blue-green rollout, when its manifest asks for one
        self._blue_green = BlueGreenWalker(cluster, name, context.emit)
        #: when the canary's timed pause ends (epoch seconds), if one runs: the loop wakes then, not up to 1 s later
        self._pause_ends_at: float | None = None
        #: each ReplicaSet's template identity, kept from pass to pass
        self._identities = replica_sets.TemplateIdentities()
        #: the collections the driver watches, once started (``prefetch`` or ``run``); the pods' once the record
        #: gives their selector
        self._records: WatchedCollection | None = None
        self._replica_sets: WatchedCollection | None = None
        self._pdbs: WatchedCollection | None = None
        self._pods: WatchedCollection | None = None
        self._watches: list[WatchedCollection] = []
        self._watches_lock = threading.Lock()
        #: a spec change is being written for this driver to carry out: a record not there yet is coming
        self._record_expected = False
        #: the Lease ``take_lease_if_free`` took before that change was written, until ``run`` holds it on
        self._early_lease: WorkloadLease | None = None

    def _watch(
        self, list_func: Callable[..., Any], description: str, transform: Transform | None = None, **kwargs: Any
    ) -> WatchedCollection:
        """Start watching; the caller waits for its first list (``wait_synced``), so lists overlap."""
        return WatchedCollection(
            list_func,
            description=description,
            on_change=self._wake.set,
            transform=transform,
            namespace=self.namespace,
            **kwargs,
        ).start(wait_synced=None)

    def _start_pods(self, selector: Mapping[str, Any]) -> WatchedCollection:
        """The pods' collection, started at most once (from the record watch's thread or the loop)."""
        with self._watches_lock:
            if self._pods is None:
                self._pods = self._watch(
                    self.cluster.core.list_namespaced_pod,
                    "pods",
                    # the few fields the driver reads (watched_pods.py), not the pods' models
                    transform=watched_pod,
                    label_selector=selector_to_string(selector),
                )
                self._watches.append(self._pods)
            return self._pods

    def _record_changed(self) -> None:
        """Wake the loop; and once the record is known, start listing its pods (they need its selector)."""
        self._wake.set()
        records = self._records
        if self._pods is not None or records is None:
            return
        raw = records.get((self.namespace, record_name(self.name)))
        if raw is not None:
            self._start_pods(from_config_map(raw).spec.selector)

    def _start_watches(self) -> None:
        """List and watch the record, the ReplicaSets, the PDBs and (once a selector is known) the pods."""
        with self._watches_lock:
            if self._records is not None:
                return
            self._records = WatchedCollection(
                self.cluster.core.list_namespaced_config_map,
                description="the record",
                on_change=self._record_changed,
                namespace=self.namespace,
                field_selector=f"metadata.name={record_name(self.name)}",
            )
            self._watches.append(self._records)
        # The record's list goes first: the spec change waits for it, and so do the pods', which need its selector
        # (its first list, or its watch for a record still to be written, starts them: _record_changed).
        self._records.start(wait_synced=None)
        with self._watches_lock:
            self._replica_sets = self._watch(
                self.cluster.apps.list_namespaced_replica_set,
                "ReplicaSets",
                label_selector=f"{WORKLOAD_LABEL}={self.name}",
            )
            if self.respect_pdbs:
                self._pdbs = self._watch(self.cluster.policy.list_namespaced_pod_disruption_budget, "PDBs")
            self._watches += [c for c in (self._replica_sets, self._pdbs) if c is not None]

    def prefetch(self) -> None:
        """Start listing and watching now, while the caller writes the spec change this driver is to carry out.

        The lists then overlap the change's own requests instead of following them, so the first pass acts on
        the change as soon as the record's watch brings it; ``run(after_generation=...)`` acts on nothing older.
        A caller that ends up not running the driver calls ``stop``.
        """
        self._record_expected = True
        self._start_watches()

    def listed_record(self, timeout: float = 1.0) -> Record | None:
        """The record as the ``prefetch``'s list (or watch) has it; None when it is not listed within ``timeout`` or
        there is none."""
        records = self._records
        if records is None:
            return None
        try:
            records.wait_synced(timeout)
        except TimeoutError:
            return None
        raw = records.get((self.namespace, record_name(self.name)))
        return None if raw is None else from_config_map(raw)

    def stop(self) -> None:
        """Stop every watch, and give back a Lease taken for a ``run`` that never came (``run`` does both itself
        when it ends)."""
        early, self._early_lease = self._early_lease, None
        try:
            if early is not None:
                early.release()
        finally:
            with self._watches_lock:
                watches = list(self._watches)
            for collection in watches:
                collection.stop()

    def _new_lease(self) -> WorkloadLease:
        return WorkloadLease(
            self.cluster,
            self.namespace,
            self.name,
            self.lease_holder,
            lease_name=driver_lease_name(self.name),
            subject=f'managed workload "{self.name}" is being driven',
            advice=f"wait for it to finish, or follow it with {next_steps.follow_rollout(self.name)}",
        )

    def take_lease_if_free(self) -> bool:
        """Take the workload's Lease now if nobody holds one (before the caller writes the change this driver is
        to carry out); whether it did. ``run`` then holds it on, and ``stop`` gives it back if ``run`` never
        comes. A Lease already there is judged by ``run`` as usual."""
        lease = self._new_lease()
        if not lease.take_if_free():
            return False
        self._early_lease = lease
        return True

    def run(self, *, after_generation: int = 0, written: tuple[str, Record] | None = None) -> RolloutResult:
        """Drive the rollout to its end. ``after_generation``: the generation of the spec change just written for
        this driver; no pass acts on an older record (one a ``prefetch`` listed before the change).

        ``written``: that change as (the resourceVersion it was written over, the record as stored). The first
        pass acts on it at once, as on our own status writes, instead of waiting for the watch to bring it back.
        """
        self._awaited_generation = max(self._awaited_generation, after_generation)
        if written is not None:
            self._written[written[0]] = written[1]
        early, self._early_lease = self._early_lease, None
        lease = early or self._new_lease()

        def take_lease() -> None:
            if lease is early:
                return  # taken free before the change was written: nobody to take it over from
            lease.acquire()
            if self.following is not None or lease.took_from_gone:
                self.emit(
                    ev.TookOver(
                        workload=self.name,
                        lease=f"{self.namespace}/{lease.name}",
                        previous_holder=lease.took_from_gone or self.following or "",
                        holder_ended=lease.gone_because,
                    )
                )

        # A job that lists while it writes a spec change (prefetch) takes the Lease once the change is written. One
        # that may well find the Lease held (status -w) takes it first, so that it does not list everything only to
        # follow another driver. Nothing is acted on before the Lease is ours.
        listing_first = self._records is not None
        if not listing_first:
            take_lease()
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            self._start_watches()
            if listing_first:
                take_lease()
            records = self._records
            assert records is not None
            records.wait_synced()
            synced = False
            while True:
                # Cancellation is checked between passes only: a pass's writes each leave the record whole.
                if self.cancel.is_set():
                    if self._paused_by_switch and self._workload_paused:
                        # Cancelled while paused by this job: the workload stays paused, and says so.
                        return RolloutResult(
                            succeeded=False,
                            message=f'interrupted while paused; workload "{self.name}" stays paused: resume it '
                            f"with {next_steps.resume_workload(self.name)}",
                            outcome=RolloutOutcome.INTERRUPTED,
                            paused=True,
                        )
                    return RolloutResult(
                        succeeded=False,
                        message="interrupted; the rollout continues with the next "
                        f"driver ({next_steps.follow_rollout(self.name)})",
                        outcome=RolloutOutcome.INTERRUPTED,
                    )
                self._wake.clear()
                lease.renew()
                raw = records.get((self.namespace, record_name(self.name)))
                if raw is not None:
                    self._record_expected = False
                    outcome = self._pass(raw, synced=synced)
                    synced = True
                    if outcome is not None:
                        return outcome
                elif not self._record_expected:
                    return RolloutResult(
                        succeeded=False,
                        message=f'managed workload "{self.name}" was deleted',
                        outcome=RolloutOutcome.DELETED,
                    )
                # else listed before the change that creates it (apply): the record comes with the watch
                if deadline is not None and time.monotonic() > deadline:
                    return RolloutResult(
                        succeeded=False,
                        message=f"timed out after {self.timeout:g}s: {self._last_message}",
                        outcome=RolloutOutcome.TIMED_OUT,
                    )
                self._wait_for_change()
        finally:
            self._canary.stop()
            try:
                # Before the watches stop: a stopped watch's socket is shut down, and a request after it would
                # find that dead connection in the pool first and open a new one (a TLS handshake at the end).
                lease.release()
            finally:
                self.stop()

    def _pass(self, raw: Any, *, synced: bool) -> RolloutResult | None:
        """One pass on the record as the watch has it; the first waits for every collection's first list."""
        record = self._as_written(raw)
        if record.generation >= self._awaited_generation:
            self._workload_paused = bool(record.spec.paused)
        self._follow_pause_switch(record)
        pods = self._start_pods(record.spec.selector)
        rs_watch = self._replica_sets
        assert rs_watch is not None
        if not synced:
            with self._watches_lock:
                watches = list(self._watches)
            for collection in watches:
                collection.wait_synced()
        return self._sync(record, rs_watch.snapshot(), pods.snapshot(), self._pdbs)

    def _as_written(self, raw: Any) -> Record:
        """The record as the watch has it, or as our own status writes left it when the watch has not brought
        them back yet: a pass on an older version would be refused (409) and wait for the watch."""
        version = raw.metadata.resource_version
        if version not in self._written:
            return from_config_map(raw)
        seen = {version}
        record = self._written[version]
        while record.resource_version in self._written and record.resource_version not in seen:
            seen.add(record.resource_version)
            record = self._written[record.resource_version]
        return record

    def _wait_for_change(self) -> None:
        """Until a watch wakes the loop, the pause switch is flipped, or a second has passed (the deadline's tick);
        sooner when a canary's timed pause ends before."""
        tick = 1.0
        if self._pause_ends_at is not None:
            tick = min(tick, max(0.0, self._pause_ends_at - time.time()))
        if self.paused is None:
            self._wake.wait(tick)
            return
        until = time.monotonic() + tick
        while time.monotonic() < until:
            if self._wake.wait(0.1) or self.paused.is_set() != self._paused_by_switch:
                return

    def _follow_pause_switch(self, record: Record) -> None:
        """Pause or resume the workload when the job's pause switch was flipped since the last pass."""
        if self.paused is None or self.paused.is_set() == self._paused_by_switch:
            return
        wanted = self.paused.is_set()
        self._paused_by_switch = wanted
        if bool(record.spec.paused) == wanted:
            return  # already so (paused by `pause NAME`, or the job resumed after a crash while paused)
        try:
            changed = operations.set_paused(self.cluster, self.namespace, self.name, self.emit, paused=wanted)
        except UsageError:
            self._workload_paused = wanted
            return  # the watch had not caught up: it is already so
        # A cancel before the watch brings this change back must still know the workload is paused.
        self._workload_paused = wanted
        # Act on nothing older than the change: a pass on the record as it was would make progress while paused.
        self._awaited_generation = max(self._awaited_generation, changed.record.generation)

    # --- one pass ---------------------------------------------------------------------

    def _sync(
        self, record: Record, all_rs: list[Any], pods: list[WatchedPod], pdbs: WatchedCollection | None
    ) -> RolloutResult | None:
        if record.generation < self._awaited_generation:
            return None  # our own spec change (a rollback) has not come back through the watch yet
        spec = record.spec
        mine = replica_sets.owned(all_rs, record)
        live = live_pods(pods)
        managed = [
            dataclasses.replace(
                replica_sets.to_managed(rs, identities=self._identities), live=live.get(rs.metadata.uid, 0)
            )
            for rs in mine
        ]
        template_hash = replica_sets.current_identity(self.cluster, record)
        new, old = split(template_hash, managed)
        new_rs = next((rs for rs in mine if new is not None and rs.metadata.name == new.name), None)
        target = record.target()
        views = [replica_sets.to_view(rs) for rs in mine]
        new_view = next((v for v in views if new is not None and v.name == new.name), None)
        now = time.time()
        canary = CanaryPass()
        blue_green = settings_of(record)
        if spec.paused:
            # Paused, the steps wait; the plan must still know a canary (or a blue-green preview) holds its counts.
            walker = self._blue_green if blue_green is not None else self._canary
            stable = walker.under_way(record, template_hash=template_hash)
            if stable is not None:
                canary = CanaryPass(goal=Counts(canary=0, stable=0), stable=stable, holding=True)
        else:
            try:
                if blue_green is not None:
                    pod_hashes = {rs.metadata.name: replica_sets.pod_template_hash_of(rs) for rs in mine}
                    canary = self._blue_green.pass_(
                        record,
                        blue_green,
                        template_hash=template_hash,
                        new=new,
                        old=old,
                        pod_hashes=pod_hashes,
                        now=now,
                    )
                else:
                    canary = self._canary.pass_(record, template_hash=template_hash, new=new, old=old, now=now)
            except StaleRecord:
                return None  # the watch has not caught up with a write (ours, or a promote's); the next pass will
            self._pause_ends_at = canary.until
            if canary.wrote:
                return None  # the canary's state changed: decide again on the record as the watch brings it
            if canary.holding:
                # A pause, a gate or an abort waits for time or a person: no progress deadline runs meanwhile.
                target = dataclasses.replace(target, paused=True)
        status = sync_rollout_status(target, views, new_view, record.status, now)
        status = self._pod_failures(status, new_rs, pods, now)

        uids = {rs.metadata.uid for rs in mine}
        pod_phases: dict[str, list[str]] = {}
        for pod in pods:
            owner = pod.controller_uid
            if owner is not None and owner in uids:
                pod_phases.setdefault(str(owner), []).append(pod.phase or "Pending")
        running = old_pods_running(
            new_uid=new_rs.metadata.uid if new_rs is not None else None,
            old_status_replicas=[m.current for m in managed if new is None or m.name != new.name],
            pod_phases=pod_phases,
        )
        actions = plan(
            spec,
            template_hash,
            managed,
            status_replicas=status.replicas,
            old_pods_running=running,
            complete=is_complete(target, status),
            canary=(
                CanaryGoal(counts=canary.goal, stable=canary.stable, at_once=blue_green is not None)
                if canary.goal is not None
                else None
            ),
        )
        actions = self._respect_pdbs(actions, managed, new, pdbs, spec.template)
        self._done = []
        by_name = {m.name: m for m in managed}
        for action in actions:
            status = self._apply(action, record, mine, by_name, new, status)
        before = record.status
        if status != record.status:
            try:
                written_over = record.resource_version
                record = save_status(self.cluster, record, status)
                self._written[written_over] = record
                while len(self._written) > WRITES_KEPT:
                    self._written.pop(next(iter(self._written)))
            except StaleRecord:
                return None  # the watch has not caught up with our last write; the next pass will
        self._report_conditions(record.status)
        self._report_failures(record, before, record.status, new.name if new else "")

        phase = rollout_phase(target, status)
        message = status_message(spec.name, target, status, phase)
        self._report(message, phase, record, status, mine, new.name if new else "", bool(actions))
        if phase.failed and self.auto_rollback and self._rolled_back_to is None:
            rolled_back = self._rollback(record, mine)
            if rolled_back is not None:
                self._rolled_back_to = rolled_back
                return None
        if spec.paused and not actions and not phase.failed and self._paused_by_switch:
            return None  # paused by this job (`jobs pause`): wait, holding the Lease, for `jobs resume`
        if spec.paused and not actions and not phase.failed:
            # No progress while paused (scaling only, done above): leave the lease for whoever resumes it.
            return RolloutResult(
                succeeded=True,
                message=f'workload "{spec.name}" is paused ({message}); resume it '
                f"with {next_steps.resume_workload(spec.name)}",
                outcome=RolloutOutcome.PAUSED,
                paused=True,
            )
        if canary.end is not None and not actions and not phase.failed:
            paused = canary.end.outcome is RolloutOutcome.PAUSED
            return RolloutResult(
                succeeded=paused, message=canary.end.message, outcome=canary.end.outcome, paused=paused
            )
        if phase.done and not actions and (phase.failed or canary.goal is None):
            if self._rolled_back_to is not None:
                revision, rs_name = self._rolled_back_to
                self.emit(
                    ev.RolledBack(
                        workload=self.name, to_revision=revision, replica_set=rs_name, complete=not phase.failed
                    )
                )
                return RolloutResult(
                    succeeded=False,
                    message=f"rolled back to revision {revision}: {message}",
                    outcome=RolloutOutcome.ROLLED_BACK,
                    rolled_back_to=revision,
                )
            return RolloutResult(succeeded=not phase.failed, message=message, outcome=outcome_of(phase))
        return None

    def _apply(
        self,
        action: Action,
        record: Record,
        mine: list[Any],
        managed: dict[str, ManagedReplicaSet],
        new: ManagedReplicaSet | None,
        status: RolloutStatus,
    ) -> RolloutStatus:
        """Carry one action out and report it; returns the status with what the action itself records."""
        if isinstance(action, CreateReplicaSet):
            try:
                creation = replica_sets.create(
                    self.cluster,
                    record,
                    replicas=action.replicas,
                    revision=action.revision,
                    collision_count=status.collision_count,
                )
            except replica_sets.ReplicaSetCreateFailed as failed:
                # getNewReplicaSet: Progressing False / ReplicaSetCreateError (with a deadline), and the next
                # sync tries again; the deadline (or --timeout) ends it if the refusal lasts.
                if record.target().progress_deadline_seconds is None:
                    return status
                cond = condition(PROGRESSING, False, FAILED_RS_CREATE, str(failed), time.time())
                return dataclasses.replace(status, conditions=set_condition(status.conditions, cond))
            name = creation.replica_set.metadata.name
            if creation.already_there and name in self._created:
                # This driver created it a pass ago and reported it then; the ReplicaSet watch lags the record's.
                return status
            self._created.add(name)
            self._did(
                ev.ReplicaSetCreated(
                    workload=self.name,
                    name=name,
                    revision=action.revision,
                    replicas=action.replicas,
                    collision_count=creation.collision_count,
                )
            )
            status = dataclasses.replace(status, collision_count=creation.collision_count)
            if record.target().progress_deadline_seconds is None:
                return status  # no deadline, no Progressing condition (HasProgressDeadline)
            return _with_progress(status, "NewReplicaSetCreated", f'Created new replica set "{name}"')
        if isinstance(action, ScaleReplicaSet):
            replica_sets.scale(self.cluster, record, action.name, action.replicas)
            before = managed[action.name].replicas if action.name in managed else 0
            if before == action.replicas:
                return status  # only the desired-/max-replicas annotations were rewritten
            self._did(
                ev.ReplicaSetScaled(
                    workload=self.name,
                    name=action.name,
                    from_replicas=before,
                    to_replicas=action.replicas,
                    updated=new is not None and new.name == action.name,
                )
            )
        elif isinstance(action, SetRevision):
            rs = next(r for r in mine if r.metadata.name == action.name)
            replica_sets.set_revision(self.cluster, record, rs, action.revision)
            previous = managed[action.name].revision if action.name in managed else 0
            self._did(
                ev.RevisionAssigned(
                    workload=self.name, name=action.name, revision=action.revision, previous_revision=previous
                )
            )
            if record.target().progress_deadline_seconds is None or status.condition(PROGRESSING) is not None:
                # getNewReplicaSet: FoundNewReplicaSet only starts a Progressing condition; it never replaces one.
                return status
            return _with_progress(status, "FoundNewReplicaSet", f'Found new replica set "{action.name}"')
        elif isinstance(action, CopyAnnotations):
            replica_sets.copy_annotations(self.cluster, record, action.name, action.annotations)
        elif isinstance(action, SetMinReadySeconds):
            replica_sets.set_min_ready_seconds(self.cluster, record, action.name, action.seconds)
        elif isinstance(action, DeleteReplicaSet):
            replica_sets.delete(self.cluster, record, action.name)
            revision = managed[action.name].revision if action.name in managed else 0
            self._did(ev.ReplicaSetDeleted(workload=self.name, name=action.name, revision=revision))
        return status

    def _did(self, action: ev.ReplicaSetAction) -> None:
        self._done.append(action)
        self.emit(action)

    # --- beyond the controller ------------------------------------------------------------

    def _respect_pdbs(
        self, actions: list[Action], managed: list[Any], new: Any, pdbs: WatchedCollection | None, template: Any
    ) -> list[Action]:
        """Never shrink old ReplicaSets by more than the PDBs over the workload's pods allow right now."""
        previous_hold = self._reported_hold
        if pdbs is None:
            return actions
        sizes = {rs.name: rs.replicas for rs in managed}
        shrinking = [
            a
            for a in actions
            if isinstance(a, ScaleReplicaSet)
            and (new is None or a.name != new.name)
            and a.replicas < sizes.get(a.name, 0)
        ]
        if not shrinking:
            # Nothing asked to shrink (new pods not Ready yet): the hold last reported still stands, and the
            # same hold seen again at the next scale-down is not news.
            return actions
        labels = (template.get("metadata") or {}).get("labels") or {}
        budgets = [p for p in pdbs.snapshot() if selector_matches(p.spec.selector, labels)]
        if not budgets:
            self._reported_hold = None
            return actions
        # A PDB's status lags our scale-downs: each status version's room is spent once.
        rooms = tuple(self._pdb_room(b) for b in budgets)
        room = min(self._room(b) for b in budgets)
        kept: list[Action] = [a for a in actions if a not in shrinking]
        held: list[ev.HeldScaleDown] = []
        for action in shrinking:
            assert isinstance(action, ScaleReplicaSet)
            cut = min(sizes[action.name] - action.replicas, room)
            room -= cut
            for budget in budgets:
                self._spend(budget, cut)
            if cut > 0:
                kept.append(ScaleReplicaSet(action.name, sizes[action.name] - cut))
            if sizes[action.name] - cut != action.replicas:
                held.append(
                    ev.HeldScaleDown(
                        name=action.name,
                        replicas=sizes[action.name],
                        wanted=action.replicas,
                        allowed=sizes[action.name] - cut,
                    )
                )
        hold = ev.ScaleDownHeldByPdb(workload=self.name, pdbs=rooms, held=tuple(held)) if held else None
        if hold is not None and hold != previous_hold:
            self.emit(hold)
        self._reported_hold = hold
        return kept

    def _pdb_room(self, budget: Any) -> ev.PdbRoom:
        status = budget.status
        version, spent = self._spent.get(budget.metadata.uid, ("", 0))
        return ev.PdbRoom(
            namespace=budget.metadata.namespace,
            name=budget.metadata.name,
            disruptions_allowed=(status.disruptions_allowed or 0) if status else 0,
            healthy=(status.current_healthy or 0) if status else 0,
            needed=(status.desired_healthy or 0) if status else 0,
            expected_pods=(status.expected_pods or 0) if status else 0,
            spent=spent if version == budget.metadata.resource_version else 0,
        )

    def _room(self, budget: Any) -> int:
        allowed = (budget.status.disruptions_allowed or 0) if budget.status else 0
        version, spent = self._spent.get(budget.metadata.uid, ("", 0))
        return max(0, allowed - spent) if version == budget.metadata.resource_version else allowed

    def _spend(self, budget: Any, count: int) -> None:
        version, spent = self._spent.get(budget.metadata.uid, ("", 0))
        if version != budget.metadata.resource_version:
            spent = 0
        self._spent[budget.metadata.uid] = (budget.metadata.resource_version, spent + count)

    def _pod_failures(self, status: RolloutStatus, new_rs: Any, pods: list[WatchedPod], now: float) -> RolloutStatus:
        """New pods that crash-loop past the threshold, or cannot pull their image, fail the rollout."""
        self._failure = None
        if new_rs is None:
            return status
        new_hash = replica_sets.pod_template_hash_of(new_rs)
        for pod in pods:
            if pod.template_hash != new_hash:
                continue
            for container in pod.waiting:
                if container.reason in IMAGE_FAILURES:
                    message = (
                        f"pod {pod.name}: container {container.name} cannot pull its image "
                        f"({container.reason}): {container.message or container.image}"
                    )
                elif container.reason == "CrashLoopBackOff" and container.restart_count >= self.fail_after_restarts:
                    message = (
                        f"pod {pod.name}: container {container.name} is in CrashLoopBackOff "
                        f"(restarted {container.restart_count} times)"
                    )
                else:
                    continue
                self._failure = _PodFailure(
                    pod=pod.name,
                    container=container.name,
                    reason=container.reason,
                    restart_count=container.restart_count,
                    image=container.image,
                )
                cond = condition(REPLICA_FAILURE, True, PODS_FAILING, message, now)
                return dataclasses.replace(status, conditions=set_condition(status.conditions, cond))
        return status

    def _rollback(self, record: Record, mine: list[Any]) -> tuple[int, str] | None:
        """Return to the newest revision other than the current one: (revision, ReplicaSet); None when none."""
        record = read(self.cluster, record.namespace, record.name)  # fresh: the watch cache may lag
        current = replica_sets.current_identity(self.cluster, record)
        candidates = sorted(
            (rs for rs in mine if replica_sets.to_managed(rs, identities=self._identities).template_hash != current),
            key=lambda rs: replica_sets.to_managed(rs).revision,
            reverse=True,
        )
        if not candidates:
            return None
        previous = candidates[0]
        failed_revision = max((replica_sets.to_managed(rs).revision for rs in mine), default=0)
        manifest = dict(record.manifest)
        manifest["spec"] = {**manifest["spec"], "template": replica_sets.template_of(previous)}
        saved = save_spec(self.cluster, manifest, parse_workload(manifest, default_namespace=record.namespace), record)
        self._awaited_generation = saved.generation
        revision = replica_sets.to_managed(previous).revision
        self.emit(
            ev.RollingBack(
                workload=self.name,
                from_revision=failed_revision,
                to_revision=revision,
                replica_set=previous.metadata.name,
                generation=saved.generation,
            )
        )
        return revision, previous.metadata.name

    # --- reporting ------------------------------------------------------------------------

    def _report_conditions(self, status: RolloutStatus) -> None:
        """One ConditionChanged per condition whose status, reason or message differs from the last reported.

        The first pass reports every condition the record holds, so that a job's
        events alone tell a view where the conditions stand.
        """
        for change in condition_changes(self.name, self._reported, status):
            self.emit(change)
        self._reported = status

    def _report_failures(self, record: Record, before: RolloutStatus, after: RolloutStatus, new_rs: str) -> None:
        """What this pass's write turned into a failure: the progress deadline, or failing new pods."""
        for change in condition_changes(self.name, before, after):
            if change.removed:
                continue
            if change.condition is ev.ConditionType.PROGRESSING and change.reason == TIMED_OUT:
                self.emit(
                    ev.DeadlineExceeded(
                        workload=self.name,
                        progress_deadline_seconds=record.spec.progress_deadline_seconds or 0,
                        replica_set=new_rs,
                    )
                )
            failure = self._failure
            if change.condition is ev.ConditionType.REPLICA_FAILURE and change.reason == PODS_FAILING and failure:
                self.emit(
                    ev.NewPodsFailing(
                        workload=self.name,
                        pod=failure.pod,
                        container=failure.container,
                        reason=failure.reason,
                        restart_count=failure.restart_count,
                        image=failure.image,
                    )
                )

    def _report(
        self,
        message: str,
        phase: RolloutPhase,
        record: Record,
        status: RolloutStatus,
        mine: list[Any],
        new_rs: str,
        acted: bool,
    ) -> None:
        # kubectl's line does not say paused: a pause or resume is reported even when the line stays the same.
        if message == self._last_message and not acted and record.spec.paused == self._last_paused:
            return
        self._last_message = message
        self._last_paused = record.spec.paused
        rows = replica_sets.rows(mine, new_rs)
        for action in self._done:
            rows = rows_after(rows, action)
        self.emit(progress_event(record, status, phase, message, rows))


def _with_progress(status: RolloutStatus, reason: str, message: str) -> RolloutStatus:
    """A Progressing=True condition with ``reason``, as the controller sets when it creates or finds the new RS."""
    cond = condition("Progressing", True, reason, message, time.time())
    return dataclasses.replace(status, conditions=set_condition(status.conditions, cond))
