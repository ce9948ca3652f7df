"""Removing one pod: evict it with PDB-aware retries (or delete it), then wait until it is gone.

Shared by the drain engine and the eviction-based restart. On a PDB 429 the
pod queues on the PDB's watch and goes as soon as the budget has room (a
capped backoff is only the safety net); each Retry-After is waited in full;
several PDBs on one pod fail at once with their names; 404 or a new UID means
done; a terminating namespace is handled as kubectl does. Deletion is awaited
on a watch of the pods the caller already follows, not by polling.

Progress goes out as ``drain_events`` through ``emit``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import tenacity
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.eviction.budget_lanes import Budget, BudgetLanes
from kubectl_rollout.eviction.pdb_pods import PdbPodsReporter
from kubectl_rollout.eviction.pdb_watch import Admission, PdbWatch, unhealthy_pod_may_go
from kubectl_rollout.eviction.refusal import EvictionRefusal, Refusal, classify_refusal
from kubectl_rollout.eviction.retry_policy import RetryPolicy
from kubectl_rollout.eviction.stop_switch import StopSwitch
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events import eviction as eviction_events
from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.eviction import DryRun as DryRun
from kubectl_rollout.jobs.events.eviction import EvictionMethod
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.durations import go_duration
from kubectl_rollout.kube.pods import Deletion, deletion_progress, qualified
from kubectl_rollout.kube.watched_collection import WatchedCollection

Emit = Callable[[Event], None]


@dataclass(frozen=True, kw_only=True)
class EvictionSettings:
    #: seconds; -1 uses each pod's own terminationGracePeriodSeconds
    grace_period: int = -1
    #: delete pods instead of evicting them (ignores PDBs), kubectl's --disable-eviction
    disable_eviction: bool = False
    dry_run: DryRun = DryRun.NONE
    #: stop waiting for a pod deleted longer ago than this (seconds; 0: always wait)
    skip_wait_for_delete_timeout: int = 0
    #: evictions in flight at once (requested, pod not gone yet); 0 means no limit
    max_concurrent_evictions: int = 50
    #: the caller's overall timeout in seconds, only to word the failure (0: none)
    timeout: float = 0.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: watch the PodDisruptionBudgets of this namespace only ("": every namespace, as a drain must)
    pdb_namespace: str = ""


class _Timeout(Exception):
    pass


class _Cancelled(Exception):
    pass


class _Refused(Exception):
    def __init__(self, refusal: EvictionRefusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def _refusal_of(retry: tenacity.RetryCallState) -> EvictionRefusal:
    assert retry.outcome is not None
    refused = retry.outcome.exception()
    assert isinstance(refused, _Refused)
    return refused.refusal


@dataclass(kw_only=True)
class _Attempts:
    """What one pod's eviction attempts and the waits between them share."""

    #: the pod as judged: its UID is the one evicted and waited for
    pod: Any
    ref: PodRef
    #: the watched pods that hold it
    pods: WatchedCollection
    deadline: float | None
    #: None when deleting (--disable-eviction): no PDB is consulted
    pdbs: PdbWatch | None
    #: the freshest copy of the pod, taken between attempts as kubectl does
    current: Any
    #: requests sent so far
    count: int = 0
    first_blocked: float | None = None
    last_refusal: EvictionRefusal | None = None
    #: a place in the PDB's line won while sleeping, used by the next attempt
    admission: Admission | None = None
    #: 5xx answers in a row (an API server going down or coming up)
    server_errors: int = 0
    #: stops this pod's attempts and waits: the evictor's cancel, or the caller's switch for this pod's node
    cancel: threading.Event = field(default_factory=threading.Event)

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def blocked_since(self) -> float:
        """When the pod was first refused or queued (wall clock), set on first use."""
        if self.first_blocked is None:
            self.first_blocked = time.time()
        return self.first_blocked


class PodEvictor:
    def __init__(
        self,
        cluster: Cluster,
        options: EvictionSettings,
        context: JobContext,
    ) -> None:
        self.cluster = cluster
        self.options = options
        emit = self.emit = context.emit
        self.cancel = context.cancel
        #: set while the job is paused: no new eviction starts until it is cleared; those in flight go on
        self.paused = context.paused or threading.Event()
        self._pdbs: PdbWatch | None = None
        self._pdbs_lock = threading.Lock()
        #: names the pods of a PDB that holds an eviction which it does not count as healthy
        self.pdb_pods = PdbPodsReporter(cluster, emit)
        limit = options.max_concurrent_evictions
        self._in_flight = threading.BoundedSemaphore(limit) if limit > 0 else None
        #: evictions of one budget go one after another (the server would serialise them, slower)
        self._lanes = BudgetLanes()

    def pdbs(self) -> PdbWatch:
        """One watch on every PodDisruptionBudget, started on first use."""
        # Eviction threads ask for it concurrently; exactly one watch must exist.
        with self._pdbs_lock:
            if self._pdbs is None:
                namespace = self.options.pdb_namespace
                collection = (
                    WatchedCollection(
                        self.cluster.policy.list_namespaced_pod_disruption_budget,
                        namespace=namespace,
                        description=f"PodDisruptionBudgets in {namespace}",
                    )
                    if namespace
                    else WatchedCollection(
                        self.cluster.policy.list_pod_disruption_budget_for_all_namespaces,
                        description="PodDisruptionBudgets",
                    )
                ).start()
                self._pdbs = PdbWatch(collection)
            return self._pdbs

    def close(self) -> None:
        with self._pdbs_lock:
            if self._pdbs is not None:
                self._pdbs.collection.stop()
                self._pdbs = None

    @property
    def method(self) -> EvictionMethod:
        return EvictionMethod.DELETE if self.options.disable_eviction else EvictionMethod.EVICT

    def _take_slot(self) -> None:
        """--max-concurrent-evictions: a slot is held from the request until the pod is gone."""
        if self._in_flight is not None:
            self._in_flight.acquire()

    def _release_slot(self) -> None:
        if self._in_flight is not None:
            self._in_flight.release()

    def _delete_options(self, pod: Any) -> client.V1DeleteOptions:
        options = client.V1DeleteOptions(
            # The pod we judged, not a namesake created since (StatefulSets reuse names).
            preconditions=client.V1Preconditions(uid=pod.metadata.uid),
        )
        if self.options.grace_period >= 0:
            options.grace_period_seconds = self.options.grace_period
        if self.options.dry_run is DryRun.SERVER:
            options.dry_run = ["All"]
        return options

    def _request_removal(self, pod: Any) -> None:
        namespace, name = pod.metadata.namespace, pod.metadata.name
        try:
            if self.options.disable_eviction:
                self.cluster.core.delete_namespaced_pod(name, namespace, body=self._delete_options(pod))
            else:
                body = client.V1Eviction(
                    metadata=client.V1ObjectMeta(name=name, namespace=namespace),
                    delete_options=self._delete_options(pod),
                )
                self.cluster.core.create_namespaced_pod_eviction(name, namespace, body)
        except ApiException as err:
            raise _Refused(classify_refusal(err.status, err.body, err.headers)) from err

    def remove(
        self,
        pod: Any,
        ref: PodRef,
        pods: WatchedCollection,
        deadline: float | None,
        *,
        cancel: threading.Event | None = None,
    ) -> eviction_events.PodFailed | None:
        """Evict (or delete) one pod and wait until it is gone; returns None, or the failure it emitted.

        ``pods`` is a watched collection holding the pod (its node's pods, its workload's). ``cancel`` stops this
        pod instead of the evictor's own switch: one the caller also sets whenever that one is set (a campaign
        stops one node's drain so that it drains through a surge, the others going on).
        """
        started = time.monotonic()
        terminating = False
        stop = self.cancel if cancel is None else cancel
        try:
            gone = self._evict_with_retries(pod, ref, pods, deadline, stop)
            if gone:
                self.emit(eviction_events.PodGone(pod=ref, after=time.monotonic() - started, method=self.method))
                return None
            if self.options.dry_run is DryRun.SERVER:
                self._release_slot()
                return None
            terminating = True
            self._wait_until_gone(pod, ref, pods, deadline, started, stop)
            return None
        except _Timeout:
            # kubectl's words and its Go duration form ("1m0s"), which scripts match on.
            reason = f"global timeout reached: {go_duration(self.options.timeout)}"
        except _Cancelled:
            if isinstance(stop, StopSwitch) and stop.is_set():
                failed = eviction_events.PodFailed(pod=ref, reason=stop.why, terminating=terminating)
                if not stop.handed_over:  # handed over: another drain of the node takes the pod up, no failure
                    self.emit(failed)
                return failed
            reason = "cancelled"
        except _Refused as refused:
            reason = self._explain_failure(pod, refused.refusal)
        except ApiException as err:
            reason = f"{err.status} {err.reason}"
        failed = eviction_events.PodFailed(pod=ref, reason=reason, terminating=terminating)
        self.emit(failed)
        return failed

    def _explain_failure(self, pod: Any, refusal: EvictionRefusal) -> str:
        if refusal.reason is Refusal.MULTIPLE_PDBS:
            names = ", ".join(qualified(p) for p in self.pdbs().selecting(pod))
            return (
                f"pod {qualified(pod)} is selected by several PodDisruptionBudgets ({names}) and the eviction API "
                "refuses such pods; make exactly one PDB select it (or use --disable-eviction, which ignores PDBs)"
            )
        return refusal.message

    def _evict_with_retries(
        self, pod: Any, ref: PodRef, pods: WatchedCollection, deadline: float | None, cancel: threading.Event
    ) -> bool:
        """True when the pod turned out to be gone already (no slot held); otherwise
        the pod is terminating and an in-flight slot is held until it is gone."""
        state = _Attempts(
            pod=pod,
            ref=ref,
            pods=pods,
            deadline=deadline,
            pdbs=None if self.options.disable_eviction else self.pdbs(),
            current=pod,
            cancel=cancel,
        )
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(functools.partial(self._retryable, state)),
            wait=self._backoff,
            sleep=functools.partial(self._sleep, state),
            before_sleep=functools.partial(self._announce_refusal, state),
            stop=tenacity.stop_never,
            reraise=True,
        )
        try:
            retrying(self._attempt, state)
        except _Refused as refused:
            refusal = refused.refusal
            if refusal.reason is Refusal.POD_GONE:
                return True
            if refusal.reason is Refusal.NAMESPACE_TERMINATING and state.current.metadata.deletion_timestamp:
                # Terminating already: wait for it to go, holding a slot like any eviction in flight.
                self._take_slot()
                return False
            raise
        self.emit(eviction_events.PodEvicted(pod=ref, method=self.method, dry_run=self.options.dry_run))
        return False

    def _stop_if_cancelled_or_late(self, state: _Attempts) -> None:
        if state.cancel.is_set():
            raise _Cancelled
        left = state.remaining()
        if left is not None and left <= 0:
            raise _Timeout

    def _hold_while_paused(self, state: _Attempts) -> None:
        while self.paused.is_set() and not state.cancel.wait(0.2):
            pass
        self._stop_if_cancelled_or_late(state)

    def _attempt(self, state: _Attempts) -> None:
        """One eviction (or deletion) request; raises _Refused with the server's answer."""
        self._hold_while_paused(state)
        # A pod its PDB counts takes its place in the PDB's line, room or not: of the pods that find room in one
        # status, only as many as it allows go, and the rest wait for the next status instead of each spending
        # a request on a refusal we can already see coming (a wave starts a node's pods all at once).
        admitted, state.admission = state.admission, None
        budget: Budget | None = None
        if state.pdbs is not None:
            selecting = state.pdbs.selecting(state.current)
            if len(selecting) == 1:
                pdb = selecting[0]
                budget = (pdb.metadata.namespace, pdb.metadata.name)
                if admitted is None and unhealthy_pod_may_go(pdb, state.current) is None:
                    admitted = state.pdbs.wait_for_room(*budget, timeout=0, cancel=state.cancel)
                    if admitted is None:
                        admitted = self._wait_in_line(state, state.pdbs, pdb)
        # Paused while it queued for its PDB: it waits (holding its place) like every other pod.
        self._hold_while_paused(state)
        self._take_slot()
        try:
            # Paused while it waited for a slot: it holds here, slot and all, like every other pod.
            self._hold_while_paused(state)
        except BaseException:
            self._release_slot()
            if admitted is not None:
                admitted(accepted=False)
            raise
        # Said once the pod holds a slot (--max-concurrent-evictions): until then it is queued, not evicting.
        state.count += 1
        self.emit(
            eviction_events.EvictionStarted(
                pod=state.ref, attempt=state.count, method=self.method, dry_run=self.options.dry_run
            )
        )
        try:
            with self._lanes.lane(budget):
                self._request_removal(state.current)
        except _Refused:
            self._release_slot()
            if admitted is not None:
                admitted(accepted=False)
            raise
        if admitted is not None:
            admitted(accepted=True)

    def _wait_in_line(self, state: _Attempts, pdbs: PdbWatch, budget: Any) -> Admission | None:
        """Say who blocks the pod, then wait for the budget's room; the safety net's cap
        bounds the wait, after which the server decides (a missed watch event costs no more)."""
        since = state.blocked_since()
        left = state.remaining()
        net = self.options.retry.max_backoff if left is None else min(left, self.options.retry.max_backoff)
        status = budget.status
        message = f"The disruption budget {budget.metadata.name} allows no disruption now"
        if status is not None and (status.observed_generation or 0) < (budget.metadata.generation or 0):
            # Its counts are those of an older spec (the API server refuses with Retry-After until the
            # disruption controller catches up): shown as unknown rather than as a budget that needs what it has.
            message = (
                f"The disruption budget {budget.metadata.name} is still being processed by the server "
                "(its status is older than its spec)"
            )
            status = None
        self.emit(
            eviction_events.EvictionBlocked(
                pod=state.ref,
                reason=eviction_events.BlockReason.PDB_BLOCKED,
                message=message,
                pdb=qualified(budget),
                healthy=status.current_healthy if status else None,
                needed=status.desired_healthy if status else None,
                expected=status.expected_pods if status else None,
                since=since,
                attempts=state.count,
                next_try_by=time.time() + net,
            )
        )
        self.pdb_pods.report(budget)
        admitted = pdbs.wait_for_room(budget.metadata.namespace, budget.metadata.name, timeout=net, cancel=state.cancel)
        if admitted is None:
            self._stop_if_cancelled_or_late(state)
        return admitted

    def _retryable(self, state: _Attempts, err: BaseException) -> bool:
        if not isinstance(err, _Refused):
            return False
        refusal = err.refusal
        if refusal.reason is Refusal.NAMESPACE_TERMINATING and state.current.metadata.deletion_timestamp:
            return False  # already terminating: just wait for it to go, as kubectl does
        if refusal.reason is Refusal.SERVER_UNAVAILABLE:
            # A server shutting down answers 500 "connection refused" for a while; one that keeps
            # answering 5xx has another problem, and the pod fails with its message.
            state.server_errors += 1
            return state.server_errors <= self.options.retry.max_server_errors
        state.server_errors = 0
        return refusal.retryable

    def _backoff(self, retry: tenacity.RetryCallState) -> float:
        return self.options.retry.delay(_refusal_of(retry), retry.attempt_number)

    def _watched_counts(self, namespace: str, name: str) -> tuple[int | None, int | None]:
        """A budget's (currentHealthy, desiredHealthy) as watched, when its status is of its current spec."""
        budget = self._pdbs.get(namespace, name) if self._pdbs is not None else None
        if budget is None or budget.status is None:
            return None, None
        if (budget.status.observed_generation or 0) < (budget.metadata.generation or 0):
            return None, None
        return budget.status.current_healthy, budget.status.desired_healthy

    def _announce_refusal(self, state: _Attempts, retry: tenacity.RetryCallState) -> None:
        assert retry.next_action is not None
        refusal = _refusal_of(retry)
        state.last_refusal = refusal
        since = state.blocked_since()
        pdb_name = f"{state.pod.metadata.namespace}/{refusal.pdb_name}" if refusal.pdb_name else None
        healthy, needed = refusal.healthy, refusal.needed
        if refusal.reason is Refusal.PDB_BLOCKED and healthy is None and refusal.pdb_name:
            # The server names no counts when the budget has them but its one disruption was just spent on
            # another pod ("does not allow evicting pods currently"): the watched status has them.
            healthy, needed = self._watched_counts(state.pod.metadata.namespace, refusal.pdb_name)
        self.emit(
            eviction_events.EvictionBlocked(
                pod=state.ref,
                reason=eviction_events.BlockReason(refusal.reason.value),
                message=refusal.cause_message or refusal.message,
                pdb=pdb_name,
                healthy=healthy,
                needed=needed,
                since=since,
                attempts=state.count,
                next_try_by=time.time() + retry.next_action.sleep,
                retry_after=refusal.retry_after,
            )
        )
        if refusal.reason is Refusal.PDB_BLOCKED and refusal.pdb_name and state.pdbs is not None:
            budget = state.pdbs.get(state.pod.metadata.namespace, refusal.pdb_name)
            if budget is not None:
                self.pdb_pods.report(budget)

    def _sleep(self, state: _Attempts, seconds: float) -> None:
        refusal = state.last_refusal
        assert refusal is not None
        left = state.remaining()
        if left is not None:
            seconds = min(seconds, max(left, 0.0))
        if refusal.reason is Refusal.PDB_BLOCKED and refusal.pdb_name and state.pdbs is not None:
            # Woken in line by the PDB's watch as soon as it has room;
            # `seconds` is only the safety net's backoff.
            state.admission = state.pdbs.wait_for_room(
                state.pod.metadata.namespace, refusal.pdb_name, timeout=seconds, cancel=state.cancel
            )
        else:
            state.cancel.wait(seconds)
        # Take the freshest pod, as kubectl does between attempts.
        fresh = state.pods.get((state.pod.metadata.namespace, state.pod.metadata.name))
        if fresh is not None and fresh.metadata.uid == state.pod.metadata.uid:
            state.current = fresh

    def _wait_until_gone(
        self,
        pod: Any,
        ref: PodRef,
        pods: WatchedCollection,
        deadline: float | None,
        started: float,
        cancel: threading.Event,
    ) -> None:
        key = (pod.metadata.namespace, pod.metadata.name)
        skip_after = self.options.skip_wait_for_delete_timeout
        skipped = [False]

        def gone(collection: WatchedCollection) -> bool:
            progress = deletion_progress(
                pod.metadata.uid, collection.objects_locked().get(key), skip_after, datetime.now(UTC)
            )
            skipped[0] = progress is Deletion.SKIPPED
            return progress is not Deletion.PENDING

        try:
            left = None if deadline is None else deadline - time.monotonic()
            done = pods.wait_until(gone, left, cancel)
        finally:
            self._release_slot()
        if not done:
            if cancel.is_set():
                raise _Cancelled
            raise _Timeout
        if skipped[0]:
            self.emit(eviction_events.PodSkippedWaiting(pod=ref, seconds=skip_after))
        else:
            self.emit(eviction_events.PodGone(pod=ref, after=time.monotonic() - started, method=self.method))
