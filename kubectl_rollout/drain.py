"""The drain engine: cordon, decide, evict with PDB-aware retries, wait for pods to go.

Plain Python over the cluster-access layer; progress goes out as
``drain_events`` through the ``emit`` callback, so the CLI printer, ``-o
jsonl``, the agent and the TUI all see the same thing.

Behaviour follows ``kubectl drain`` (filters, wording, one node after another
unless batched, nodes left cordoned on failure) and goes past it where it
hurts: evictions retry when the PDB has room rather than every 5 s, each
Retry-After is honoured, several PDBs on a pod fail fast with their names,
deletion is awaited through one watch per node, not a poll per pod.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import tenacity
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout import drain_events as ev
from kubectl_rollout.api_retry import call_with_retry
from kubectl_rollout.cluster_access import Cluster
from kubectl_rollout.cordon import is_cordoned, set_cordoned
from kubectl_rollout.errors import UserFacingError
from kubectl_rollout.eviction_order import eviction_order, priority_of
from kubectl_rollout.eviction_response import EvictionRefusal, Refusal, classify_refusal
from kubectl_rollout.node_events import record_node_event
from kubectl_rollout.pdb_watch import PdbWatch, blocks, unhealthy_pod_may_go
from kubectl_rollout.permissions import Permission, require
from kubectl_rollout.pod_filters import (
    DaemonSetLookup,
    FilterOptions,
    controller_of,
    deleted_long_ago,
    is_daemonset_pod,
    judge,
    make_filters,
    summarize_errors,
    summarize_warnings,
)
from kubectl_rollout.retry_policy import RetryPolicy
from kubectl_rollout.watched_collection import WatchedCollection
from kubectl_rollout.workload_availability import WorkloadRef, owning_workload, wait_until_available

Emit = Callable[[ev.Event], None]


class DryRun(enum.Enum):
    NONE = "none"
    CLIENT = "client"
    SERVER = "server"


@dataclass(frozen=True, kw_only=True)
class DrainOptions:
    force: bool = False
    ignore_daemonsets: bool = False
    delete_emptydir_data: bool = False
    #: seconds; -1 uses each pod's own terminationGracePeriodSeconds
    grace_period: int = -1
    #: seconds per node; 0 waits forever (kubectl's --timeout)
    timeout: float = 0.0
    pod_selector: str = ""
    disable_eviction: bool = False
    skip_wait_for_delete_timeout: int = 0
    chunk_size: int = 500
    dry_run: DryRun = DryRun.NONE
    #: evictions in flight at once (requested, pod not gone yet); 0 means no limit
    max_concurrent_evictions: int = 50
    #: 0: cordon every node first, then drain them one by one (kubectl);
    #: N: cordon and drain N nodes at a time, then wait for evicted workloads
    node_batch: int = 0
    uncordon_on_failure: bool = False
    retry: RetryPolicy = field(default_factory=RetryPolicy)


class DrainError(UserFacingError):
    pass


class _Timeout(Exception):
    pass


class _Cancelled(Exception):
    pass


class _Refused(Exception):
    def __init__(self, refusal: EvictionRefusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def _ref(pod: Any, node: str) -> ev.PodRef:
    return ev.PodRef(namespace=pod.metadata.namespace, name=pod.metadata.name, node=node)


def _qualified(obj: Any) -> str:
    return f"{obj.metadata.namespace}/{obj.metadata.name}"


@dataclass
class _NodeOutcome:
    node: str
    ok: bool
    evicted: list[Any] = field(default_factory=list)
    reason: str = ""
    pending: list[str] = field(default_factory=list)


class DrainEngine:
    def __init__(
        self,
        cluster: Cluster,
        options: DrainOptions,
        emit: Emit,
        *,
        cancel: threading.Event | None = None,
    ) -> None:
        self.cluster = cluster
        self.options = options
        self.emit = emit
        self.cancel = cancel or threading.Event()
        self._pdbs: PdbWatch | None = None
        self._pdbs_lock = threading.Lock()
        limit = options.max_concurrent_evictions
        self._in_flight = threading.BoundedSemaphore(limit) if limit > 0 else None

    # --- nodes --------------------------------------------------------------------------

    def resolve_nodes(self, names: list[str], selector: str) -> list[Any]:
        """The nodes to drain, all checked to exist before anything changes."""
        if selector:
            listing = call_with_retry(self.cluster.core.list_node, label_selector=selector)
            if not listing.items:
                raise DrainError(f'no node matches the selector "{selector}"; check it with kubectl get nodes -l')
            return sorted(listing.items, key=lambda n: n.metadata.name)
        nodes = []
        for name in dict.fromkeys(names):
            try:
                nodes.append(call_with_retry(self.cluster.core.read_node, name))
            except ApiException as err:
                if err.status == 404:
                    raise DrainError(
                        f'node "{name}" not found; nothing was changed. List the nodes with kubectl get nodes'
                    ) from err
                raise
        return nodes

    def check_permissions(self, *, action: str = "drain", by_selector: bool = False, read_only: bool = False) -> None:
        needed = [Permission("list", "nodes")] if by_selector else []
        needed += [
            Permission("get", "nodes"),
            Permission("list", "pods"),
            Permission("list", "poddisruptionbudgets", group="policy"),
        ]
        if not read_only and self.options.dry_run is not DryRun.CLIENT:
            needed.append(Permission("patch", "nodes"))
            if self.options.disable_eviction:
                needed.append(Permission("delete", "pods"))
            else:
                needed.append(Permission("create", "pods", subresource="eviction"))
        require(self.cluster, needed, action=f"kubectl rollout-plus {action}")

    # --- planning -----------------------------------------------------------------------

    def _list_pods(self, node: str) -> list[Any]:
        pods: list[Any] = []
        token = None
        while True:
            page = call_with_retry(
                self.cluster.core.list_pod_for_all_namespaces,
                field_selector=f"spec.nodeName={node}",
                label_selector=self.options.pod_selector or None,
                limit=self.options.chunk_size or None,
                _continue=token,
            )
            pods.extend(page.items)
            token = page.metadata._continue if page.metadata else None
            if not token:
                return pods

    def _daemonset_lookups(self, pods: Iterable[Any]) -> dict[tuple[str, str], DaemonSetLookup]:
        lookups: dict[tuple[str, str], DaemonSetLookup] = {}
        for pod in pods:
            if not is_daemonset_pod(pod):
                continue
            owner = controller_of(pod)
            assert owner is not None
            key = (pod.metadata.namespace, owner.name)
            if key in lookups:
                continue
            try:
                call_with_retry(self.cluster.apps.read_namespaced_daemon_set, key[1], key[0])
                lookups[key] = DaemonSetLookup(found=True)
            except ApiException as err:
                text = f'daemonsets.apps "{key[1]}" not found' if err.status == 404 else str(err.reason)
                lookups[key] = DaemonSetLookup(found=False, not_found=err.status == 404, error=text)
        return lookups

    def _judge_node(self, node: Any) -> tuple[list[Any], list[tuple[Any, Any]]]:
        pods = self._list_pods(node.metadata.name)
        filter_options = FilterOptions(
            force=self.options.force,
            ignore_daemonsets=self.options.ignore_daemonsets,
            delete_emptydir_data=self.options.delete_emptydir_data,
            skip_wait_for_delete_timeout=self.options.skip_wait_for_delete_timeout,
        )
        filters = make_filters(filter_options, self._daemonset_lookups(pods), datetime.now(UTC))
        judged = [(pod, judge(pod, filters)) for pod in pods]
        return pods, judged

    def plan(self, nodes: list[Any]) -> ev.DrainPlanned:
        pdbs = self._pdb_watch()
        node_plans = []
        for node in nodes:
            _, judged = self._judge_node(node)
            plans = []
            for pod, verdict in judged:
                selecting = pdbs.selecting(pod)
                names = tuple(_qualified(p) for p in selecting)
                ref = _ref(pod, node.metadata.name)
                if not verdict.delete:
                    kind = "error" if verdict.outcome.value == "Error" else "skip"
                    plans.append(
                        ev.PodPlan(
                            pod=ref,
                            verdict=kind,
                            reason=verdict.message or "mirror or deleted pod",
                            pdbs=names,
                            priority=priority_of(pod),
                        )
                    )
                    continue
                method = "delete" if self.options.disable_eviction else "evict"
                reason = verdict.message
                if not self.options.disable_eviction and len(selecting) > 1:
                    method, reason = (
                        "error",
                        (
                            f"selected by {len(selecting)} PodDisruptionBudgets ({', '.join(names)}); "
                            "the eviction API refuses such pods"
                        ),
                    )
                elif not self.options.disable_eviction and selecting and unhealthy_pod_may_go(selecting[0], pod):
                    reason = unhealthy_pod_may_go(selecting[0], pod) or ""
                elif not self.options.disable_eviction and selecting and blocks(selecting[0], pod):
                    budget = selecting[0]
                    method = "blocked"
                    reason = (
                        f"PodDisruptionBudget {names[0]} allows 0 disruptions now "
                        f"(healthy {budget.status.current_healthy if budget.status else '?'}, "
                        f"needs {budget.status.desired_healthy if budget.status else '?'}); the drain will wait"
                    )
                plans.append(ev.PodPlan(pod=ref, verdict=method, reason=reason, pdbs=names, priority=priority_of(pod)))
            node_plans.append(
                ev.NodePlan(
                    node=node.metadata.name,
                    cordoned=is_cordoned(node),
                    pods=tuple(plans),
                    errors=tuple(summarize_errors(judged)),
                    warnings=summarize_warnings(judged),
                )
            )
        return ev.DrainPlanned(nodes=tuple(node_plans), dry_run=self.options.dry_run.value)

    # --- running ------------------------------------------------------------------------

    def _pdb_watch(self) -> PdbWatch:
        # Eviction threads ask for it concurrently; exactly one watch must exist.
        with self._pdbs_lock:
            if self._pdbs is None:
                collection = WatchedCollection(
                    self.cluster.policy.list_pod_disruption_budget_for_all_namespaces,
                    description="PodDisruptionBudgets",
                ).start()
                self._pdbs = PdbWatch(collection)
            return self._pdbs

    def close(self) -> None:
        with self._pdbs_lock:
            if self._pdbs is not None:
                self._pdbs.collection.stop()
                self._pdbs = None

    def cordon(self, node: Any) -> None:
        changed = set_cordoned(self.cluster, node, True, dry_run=self.options.dry_run.value)
        if changed and self.options.dry_run is DryRun.NONE:
            record_node_event(self.cluster, node, reason="Cordoned", message="Node cordoned by kubectl rollout-plus")
        self.emit(ev.NodeCordoned(node=node.metadata.name, changed=changed, dry_run=self.options.dry_run.value))

    def uncordon(self, node: Any) -> None:
        fresh = call_with_retry(self.cluster.core.read_node, node.metadata.name)
        changed = set_cordoned(self.cluster, fresh, False, dry_run=self.options.dry_run.value)
        if changed and self.options.dry_run is DryRun.NONE:
            record_node_event(
                self.cluster, node, reason="Uncordoned", message="Node uncordoned by kubectl rollout-plus"
            )
        self.emit(ev.NodeUncordoned(node=node.metadata.name, changed=changed, dry_run=self.options.dry_run.value))

    def run(self, nodes: list[Any]) -> ev.DrainFinished:
        started = time.monotonic()
        drained: list[str] = []
        failed: list[str] = []
        batch = self.options.node_batch
        try:
            if batch <= 0:
                for node in nodes:
                    self.cordon(node)
                for node in nodes:
                    outcome = self._drain_node(node)
                    (drained if outcome.ok else failed).append(node.metadata.name)
            else:
                for index in range(0, len(nodes), batch):
                    group = nodes[index : index + batch]
                    if self.cancel.is_set():
                        failed.extend(n.metadata.name for n in group)
                        continue
                    self.emit(ev.BatchStarted(index=index // batch + 1, nodes=tuple(n.metadata.name for n in group)))
                    for node in group:
                        self.cordon(node)
                    with ThreadPoolExecutor(max_workers=len(group), thread_name_prefix="node") as pool:
                        outcomes = list(pool.map(self._drain_node, group))
                    for outcome in outcomes:
                        (drained if outcome.ok else failed).append(outcome.node)
                    more_to_come = index + batch < len(nodes)
                    if more_to_come and self.options.dry_run is DryRun.NONE:
                        self._wait_for_workloads([pod for o in outcomes for pod in o.evicted])
        finally:
            self.close()
        finished = ev.DrainFinished(drained=tuple(drained), failed=tuple(failed), seconds=time.monotonic() - started)
        self.emit(finished)
        return finished

    def _wait_for_workloads(self, evicted: list[Any]) -> None:
        workloads: set[WorkloadRef] = set()
        for pod in evicted:
            workload = owning_workload(self.cluster, pod)
            if workload is not None:
                workloads.add(workload)
        if not workloads:
            return
        started = time.monotonic()
        timeout = self.options.timeout or None
        left = wait_until_available(
            self.cluster,
            workloads,
            timeout=timeout,
            cancel=self.cancel,
            on_waiting=lambda lines: self.emit(ev.WaitingForWorkloads(workloads=tuple(lines))),
        )
        if left:
            raise DrainError(
                f"workloads evicted in the last batch are still not available after {timeout:.0f}s: "
                f"{', '.join(left)}; the next batch was not started"
            )
        self.emit(
            ev.WorkloadsAvailable(
                workloads=tuple(sorted(str(w) for w in workloads)), seconds=time.monotonic() - started
            )
        )

    def _drain_node(self, node: Any) -> _NodeOutcome:
        name = node.metadata.name
        started = time.monotonic()
        deadline = started + self.options.timeout if self.options.timeout > 0 else None
        _, judged = self._judge_node(node)
        errors = summarize_errors(judged)
        if errors:
            return self._fail(node, "; ".join(errors), pending=[])
        warnings = summarize_warnings(judged)
        if warnings:
            self.emit(ev.DrainWarning(node=name, message=warnings))
        to_remove = eviction_order([pod for pod, verdict in judged if verdict.delete])
        dry_run = self.options.dry_run.value
        if self.options.dry_run is DryRun.NONE:
            record_node_event(
                self.cluster, node, reason="Draining", message=f"Draining node: removing {len(to_remove)} pods"
            )
        if self.options.dry_run is DryRun.CLIENT:
            for pod in to_remove:
                self.emit(ev.PodEvicted(pod=_ref(pod, name), method=self._method(), dry_run=dry_run))
            self.emit(ev.NodeDrained(node=name, evicted=len(to_remove), seconds=0.0, dry_run=dry_run))
            return _NodeOutcome(node=name, ok=True)

        node_pods = WatchedCollection(
            self.cluster.core.list_pod_for_all_namespaces,
            field_selector=f"spec.nodeName={name}",
            description=f"pods on {name}",
        ).start()
        failures: dict[str, str] = {}
        try:
            if to_remove:
                with ThreadPoolExecutor(
                    max_workers=min(len(to_remove), 256), thread_name_prefix=f"evict-{name}"
                ) as pool:
                    results = list(pool.map(lambda p: self._remove_pod(p, name, node_pods, deadline), to_remove))
                failures = {_qualified(p): r for p, r in zip(to_remove, results, strict=True) if r}
        finally:
            node_pods.stop()
        if failures:
            reasons = sorted(set(failures.values()))
            return self._fail(node, "; ".join(reasons), pending=sorted(failures))
        self.emit(
            ev.NodeDrained(node=name, evicted=len(to_remove), seconds=time.monotonic() - started, dry_run=dry_run)
        )
        if self.options.dry_run is DryRun.NONE:
            record_node_event(
                self.cluster, node, reason="Drained", message=f"Node drained: {len(to_remove)} pods removed"
            )
        return _NodeOutcome(node=name, ok=True, evicted=to_remove)

    def _fail(self, node: Any, reason: str, pending: list[str]) -> _NodeOutcome:
        name = node.metadata.name
        cordoned = self.options.dry_run is DryRun.NONE
        if self.options.uncordon_on_failure:
            self.uncordon(node)
            cordoned = False
        if self.options.dry_run is DryRun.NONE:
            record_node_event(self.cluster, node, reason="DrainFailed", message=f"Drain failed: {reason}", warning=True)
        self.emit(ev.NodeDrainFailed(node=name, reason=reason, pending=tuple(pending), cordoned=cordoned))
        return _NodeOutcome(node=name, ok=False, reason=reason, pending=pending)

    def _method(self) -> str:
        return "delete" if self.options.disable_eviction else "evict"

    # --- one pod ------------------------------------------------------------------------

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

    def _remove_pod(self, pod: Any, node: str, node_pods: WatchedCollection, deadline: float | None) -> str:
        """Evict (or delete) one pod and wait until it is gone; returns "" or why it failed."""
        ref = _ref(pod, node)
        started = time.monotonic()
        try:
            gone = self._evict_with_retries(pod, ref, node_pods, deadline)
            if gone:
                self.emit(ev.PodGone(pod=ref, after=time.monotonic() - started))
                return ""
            if self.options.dry_run is DryRun.SERVER:
                self._release_slot()
                return ""
            return self._wait_until_gone(pod, ref, node_pods, deadline, started)
        except _Timeout:
            reason = f"global timeout reached: {self.options.timeout:g}s"
        except _Cancelled:
            reason = "cancelled"
        except _Refused as refused:
            reason = self._explain_failure(pod, refused.refusal)
        except ApiException as err:
            reason = f"{err.status} {err.reason}"
        self.emit(ev.PodFailed(pod=ref, reason=reason))
        return reason

    def _explain_failure(self, pod: Any, refusal: EvictionRefusal) -> str:
        if refusal.reason is Refusal.MULTIPLE_PDBS:
            names = ", ".join(_qualified(p) for p in self._pdb_watch().selecting(pod))
            return (
                f"pod {_qualified(pod)} is selected by several PodDisruptionBudgets ({names}) and the eviction API "
                "refuses such pods; make exactly one PDB select it (or use --disable-eviction, which ignores PDBs)"
            )
        return refusal.message

    def _evict_with_retries(
        self, pod: Any, ref: ev.PodRef, node_pods: WatchedCollection, deadline: float | None
    ) -> bool:
        """True when the pod turned out to be gone already (no slot held); otherwise
        the pod is terminating and an in-flight slot is held until it is gone."""
        first_blocked: list[float] = []
        last_refusal: list[EvictionRefusal] = []
        #: a place in the PDB's line won while sleeping, used by the next attempt
        admission: list[Callable[[bool], None]] = []
        attempts = [0]
        current = [pod]
        pdbs = None if self.options.disable_eviction else self._pdb_watch()

        def remaining() -> float | None:
            return None if deadline is None else deadline - time.monotonic()

        def attempt() -> None:
            if self.cancel.is_set():
                raise _Cancelled
            left = remaining()
            if left is not None and left <= 0:
                raise _Timeout
            # Queue for the PDB first when it visibly has no room, instead of
            # spending a request on a refusal we can already see coming.
            admitted = admission.pop() if admission else None
            if admitted is None and pdbs is not None:
                selecting = pdbs.selecting(current[0])
                if len(selecting) == 1 and blocks(selecting[0], current[0]):
                    if not first_blocked:
                        first_blocked.append(time.time())
                    budget = selecting[0].metadata
                    admitted = pdbs.wait_for_room(
                        budget.namespace, budget.name, timeout=remaining(), cancel=self.cancel
                    )
                    if admitted is None:
                        raise _Cancelled if self.cancel.is_set() else _Timeout
            attempts[0] += 1
            self.emit(
                ev.EvictionStarted(
                    pod=ref, attempt=attempts[0], method=self._method(), dry_run=self.options.dry_run.value
                )
            )
            self._take_slot()
            try:
                self._request_removal(current[0])
            except _Refused:
                self._release_slot()
                if admitted is not None:
                    admitted(False)
                raise
            if admitted is not None:
                admitted(True)

        def retryable(err: BaseException) -> bool:
            if not isinstance(err, _Refused):
                return False
            refusal = err.refusal
            if refusal.reason is Refusal.NAMESPACE_TERMINATING and current[0].metadata.deletion_timestamp:
                return False  # already terminating: just wait for it to go, as kubectl does
            return refusal.retryable

        def wait(state: tenacity.RetryCallState) -> float:
            assert state.outcome is not None
            refused = state.outcome.exception()
            assert isinstance(refused, _Refused)
            return self.options.retry.delay(refused.refusal, state.attempt_number)

        def before_sleep(state: tenacity.RetryCallState) -> None:
            assert state.outcome is not None
            assert state.next_action is not None
            refused = state.outcome.exception()
            assert isinstance(refused, _Refused)
            refusal = refused.refusal
            last_refusal[:] = [refusal]
            if not first_blocked:
                first_blocked.append(time.time())
            pdb_name = f"{pod.metadata.namespace}/{refusal.pdb_name}" if refusal.pdb_name else None
            self.emit(
                ev.EvictionBlocked(
                    pod=ref,
                    reason=refusal.reason.value,
                    message=refusal.cause_message or refusal.message,
                    pdb=pdb_name,
                    healthy=refusal.healthy,
                    needed=refusal.needed,
                    since=first_blocked[0],
                    attempts=attempts[0],
                    next_try_by=time.time() + state.next_action.sleep,
                    retry_after=refusal.retry_after,
                )
            )

        def sleep(seconds: float) -> None:
            refusal = last_refusal[0]
            left = remaining()
            if left is not None:
                seconds = min(seconds, max(left, 0.0))
            if refusal.reason is Refusal.PDB_BLOCKED and refusal.pdb_name and pdbs is not None:
                # Woken in line by the PDB's watch as soon as it has room;
                # `seconds` is only the safety net's backoff.
                admitted = pdbs.wait_for_room(
                    pod.metadata.namespace, refusal.pdb_name, timeout=seconds, cancel=self.cancel
                )
                if admitted is not None:
                    admission.append(admitted)
            else:
                self.cancel.wait(seconds)
            # Take the freshest pod, as kubectl does between attempts.
            fresh = node_pods.get((pod.metadata.namespace, pod.metadata.name))
            if fresh is not None and fresh.metadata.uid == pod.metadata.uid:
                current[0] = fresh

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(retryable),
            wait=wait,
            sleep=sleep,
            before_sleep=before_sleep,
            stop=tenacity.stop_never,
            reraise=True,
        )
        try:
            retrying(attempt)
        except _Refused as refused:
            refusal = refused.refusal
            if refusal.reason is Refusal.POD_GONE:
                return True
            if refusal.reason is Refusal.NAMESPACE_TERMINATING and current[0].metadata.deletion_timestamp:
                # Terminating already: wait for it to go, holding a slot like any eviction in flight.
                self._take_slot()
                return False
            raise
        self.emit(ev.PodEvicted(pod=ref, method=self._method(), dry_run=self.options.dry_run.value))
        return False

    def _wait_until_gone(
        self, pod: Any, ref: ev.PodRef, node_pods: WatchedCollection, deadline: float | None, started: float
    ) -> str:
        key = (pod.metadata.namespace, pod.metadata.name)
        skip_after = self.options.skip_wait_for_delete_timeout
        skipped = [False]

        def gone(collection: WatchedCollection) -> bool:
            current = collection.objects_locked().get(key)
            if current is None or current.metadata.uid != pod.metadata.uid:
                return True
            if deleted_long_ago(current, skip_after, datetime.now(UTC)):
                skipped[0] = True
                return True
            return False

        try:
            left = None if deadline is None else deadline - time.monotonic()
            done = node_pods.wait_until(gone, left, self.cancel)
        finally:
            self._release_slot()
        if not done:
            if self.cancel.is_set():
                raise _Cancelled
            raise _Timeout
        if skipped[0]:
            self.emit(ev.PodSkippedWaiting(pod=ref, seconds=skip_after))
        else:
            self.emit(ev.PodGone(pod=ref, after=time.monotonic() - started))
        return ""
