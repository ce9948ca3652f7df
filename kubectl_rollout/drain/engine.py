"""The drain engine: cordon, decide, evict with PDB-aware retries, wait for pods to go.

Plain Python over the cluster-access layer; progress goes out as
``drain_events`` through the ``emit`` callback, so the CLI printer, ``-o
jsonl``, the agent and the TUI all see the same thing.

Behaviour follows ``kubectl drain`` (filters, wording, one node after another
unless batched, nodes left cordoned on failure) and goes past it where it
hurts: evictions retry when the PDB has room rather than every 5 s, each
Retry-After is honoured, several PDBs on a pod fail fast with their names,
deletion is awaited through one watch per node, not a poll per pod. The
per-pod part (eviction, retries, waiting for the pod to go) is
``pod_eviction.PodEvictor``, shared with the eviction-based restart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.drain.cordon import is_cordoned, lift_campaign_taint, set_cordoned
from kubectl_rollout.drain.node_events import record_node_event
from kubectl_rollout.drain.pod_filters import (
    DaemonSetLookup,
    FilterOptions,
    PodFilter,
    Verdict,
    judge,
    make_filters,
    summarize_errors,
    summarize_warnings,
)
from kubectl_rollout.drain.pod_owners import OwnerLookup
from kubectl_rollout.drain.surge.decision import parse_surge_max
from kubectl_rollout.drain.surge.leftovers import restore_leftovers
from kubectl_rollout.drain.surge.session import SurgeSession
from kubectl_rollout.drain.workload_availability import owning_workloads, wait_until_available
from kubectl_rollout.eviction.order import eviction_order, priority_of
from kubectl_rollout.eviction.pdb_watch import blocks, unhealthy_pod_may_go
from kubectl_rollout.eviction.pod_evictor import DryRun, EvictionSettings, PodEvictor
from kubectl_rollout.eviction.stop_switch import StopSwitch
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events import surge as surge_events
from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.eviction import EvictionBlocked, PodEvicted, PodFailed, PodGone
from kubectl_rollout.jobs.spec import DrainOptions as DrainOptions
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster, api_message
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.json_pages import json_pages
from kubectl_rollout.kube.permissions import Permission
from kubectl_rollout.kube.pods import controller_of, is_daemonset_pod, qualified
from kubectl_rollout.kube.slim_pods import SlimPod, slim_pod
from kubectl_rollout.kube.watched_collection import WatchedCollection

log = logging.getLogger(__name__)


def drain_permissions(options: DrainOptions, *, by_selector: bool = False, read_only: bool = False) -> list[Permission]:
    """What a drain needs, checked before the first change (cordon and uncordon: ``read_only`` plus patch)."""
    needed = [Permission("list", "nodes")] if by_selector else []
    needed += [
        Permission("get", "nodes"),
        Permission("list", "pods"),
        Permission("list", "poddisruptionbudgets", group="policy"),
    ]
    if not read_only:
        # pods are awaited, and budgets followed, on watches
        needed += [Permission("watch", "pods"), Permission("watch", "poddisruptionbudgets", group="policy")]
    if not read_only and options.dry_run is not DryRun.CLIENT:
        needed.append(Permission("patch", "nodes"))
        if options.disable_eviction:
            needed.append(Permission("delete", "pods"))
        else:
            needed.append(Permission("create", "pods", subresource="eviction"))
    if options.node_batch > 0 and not read_only and options.dry_run is DryRun.NONE:
        needed += node_batch_permissions()
    if options.surge:
        needed += surge_permissions(plan_only=read_only or options.dry_run is not DryRun.NONE)
    return list(dict.fromkeys(needed))  # --node-batch and --surge both read ReplicaSets: asked once


def node_batch_permissions() -> list[Permission]:
    """What ``--node-batch`` needs beside a drain's own (docs/rbac/drain-node-batch.yaml): between batches it
    waits until every workload that lost a pod is fully available again (``workload_availability``). Checked
    up front: refused after the first batch, it would stop a drain half-way, its first nodes drained."""
    return [
        # an evicted pod's ReplicaSet names its Deployment
        Permission("get", "replicasets", group="apps"),
        # each workload that lost a pod, followed on a watch until all its replicas are available
        *(
            Permission(verb, resource, group=group)
            for resource, group in (
                ("deployments", "apps"),
                ("replicasets", "apps"),
                ("statefulsets", "apps"),
                ("replicationcontrollers", ""),
            )
            for verb in ("list", "watch")
        ),
    ]


def surge_permissions(*, plan_only: bool) -> list[Permission]:
    """What ``--surge`` needs beside a drain's own (docs/rbac/drain-surge.yaml); ``plan_only``: what planning
    the surges reads (``--plan``, ``--dry-run``). Every verb a surge calls is here, so that a missing one
    stops the drain before its cordon instead of in the middle of a surge."""
    needed = [
        # a drained pod's ReplicaSet leads to its Deployment or managed workload
        Permission("get", "replicasets", group="apps"),
        Permission("get", "deployments", group="apps"),
        # a HorizontalPodAutoscaler on the workload means no surge
        Permission("list", "horizontalpodautoscalers", group="autoscaling"),
        # a managed workload's record (its spec and status), its ReplicaSets (listed by label) and its driver's Lease
        Permission("get", "configmaps"),
        Permission("list", "replicasets", group="apps"),
        Permission("get", "leases", group="coordination.k8s.io"),
    ]
    if plan_only:
        return needed
    needed += [
        # the leftovers of killed surge drains, listed across all namespaces by label (ReplicaSets: above)
        Permission("list", "deployments", group="apps"),
        # the count raised with its record, lowered per eviction and restored (a managed workload's: its
        # ReplicaSet's), and the raised object watched until the extra pods are Ready
        Permission("patch", "deployments", group="apps"),
        Permission("watch", "deployments", group="apps"),
        Permission("patch", "replicasets", group="apps"),
        Permission("watch", "replicasets", group="apps"),
        # the drained pods marked as the first a lowering removes, before the raise, and unmarked if kept
        Permission("patch", "pods"),
        # the surge's Lease (a managed workload's: its driver's), taken, renewed, and given back after the
        # restore: a Lease left to lapse would hold off a managed workload's apply and scale for its 15 s
        Permission("create", "leases", group="coordination.k8s.io"),
        Permission("update", "leases", group="coordination.k8s.io"),
        Permission("delete", "leases", group="coordination.k8s.io"),
        # each lowered count noted on the workload's PDBs, which gets them counted again at once (pdb_recount)
        Permission("patch", "poddisruptionbudgets", group="policy"),
    ]
    return needed


def eviction_settings(options: DrainOptions) -> EvictionSettings:
    return EvictionSettings(
        grace_period=options.grace_period,
        disable_eviction=options.disable_eviction,
        dry_run=options.dry_run,
        skip_wait_for_delete_timeout=options.skip_wait_for_delete_timeout,
        max_concurrent_evictions=options.max_concurrent_evictions,
        timeout=options.timeout,
    )


class DrainError(UserFacingError):
    pass


def _ref(pod: Any, node: str) -> PodRef:
    return PodRef(namespace=pod.metadata.namespace, name=pod.metadata.name, node=node)


@dataclass
class NodeOutcome:
    """How one node's drain ended: its evicted pods, or why not and which pods it left."""

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
        context: JobContext,
        *,
        extra_filters: Sequence[PodFilter] = (),
    ) -> None:
        self.cluster = cluster
        self.options = options
        #: judged after kubectl's own, as kubectl's ``AdditionalFilters`` are (a campaign's per-pod rules)
        self.extra_filters = tuple(extra_filters)
        self.emit = context.emit
        self.cancel = context.cancel
        # The evictor's events pass through here first (a surged workload's count follows its evictions).
        self.evictor = PodEvictor(
            cluster, eviction_settings(options), dataclasses.replace(context, emit=self._from_evictor)
        )
        #: --surge: this drain's identity, recorded on every workload it surges
        self.drain_id = uuid.uuid4().hex[:12]
        self.surge_max = parse_surge_max(options.surge_max) if options.surge else None
        #: the surges of the node (or node batch) being drained
        self._surges: SurgeSession | None = None
        #: the pods being removed, by "namespace/name", and those whose owner was looked up (``_name_owner``)
        self._removing: dict[str, Any] = {}
        self._owners = OwnerLookup(cluster)
        self._owners_named: set[str] = set()
        self._owners_lock = threading.Lock()

    def _from_evictor(self, event: Event) -> None:
        # A drained pod of a surged workload was evicted, or found gone before its eviction (its ReplicaSet
        # removed it on a lowering): its workload's count comes down by one, once per pod.
        surges = self._surges
        if surges is not None and (
            (isinstance(event, PodEvicted) and event.dry_run is DryRun.NONE) or isinstance(event, PodGone)
        ):
            surges.evicted(event.pod)
        if isinstance(event, EvictionBlocked) and event.pdb:
            self._name_owner(event.pod)
        self.emit(event)

    def _name_owner(self, ref: PodRef) -> None:
        """At a pod's first PDB refusal, say whose pod it is (``PodOwnerKnown``): one ReplicaSet read at most,
        on the pod's own eviction thread, which is waiting for the PDB anyway."""
        key = str(ref)
        with self._owners_lock:
            if key in self._owners_named or key not in self._removing:
                return
            self._owners_named.add(key)
        try:
            owner = self._owners.owner_of(self._removing[key])
        except ApiException as err:
            # The advice then names no workload; the drain itself needs no ReplicaSet (docs/rbac/drain.yaml).
            log.info("could not read the owner of pod %s: %s", key, api_message(err))
            return
        self.emit(drain_events.PodOwnerKnown(pod=ref, owner=owner))

    def _surge_session(self) -> SurgeSession:
        assert self.surge_max is not None
        return SurgeSession(
            self.cluster,
            drain=self.drain_id,
            surge_max=self.surge_max,
            ready_timeout=self.options.surge_wait,
            pdbs=self.evictor.pdbs(),
            emit=self.emit,
            cancel=self.cancel,
        )

    def restore_leftover_surges(self) -> None:
        """Restore the counts a killed or failed surge drain left raised (``drain``, ``uncordon``, resume)."""
        if self.options.dry_run is not DryRun.NONE:
            return
        try:
            restore_leftovers(self.cluster, self.emit, self.cancel)
        except ApiException as err:
            if err.status != 403 or self.surge_max is not None:
                raise
            # Not allowed to list Deployments or ReplicaSets: this user never surged, so nothing of theirs to restore.

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

    # --- planning -----------------------------------------------------------------------

    def _list_pods(self, node: str) -> list[SlimPod]:
        """The node's pods, a page (``--chunk-size``) at a time, each kept slim from its JSON (``slim_pods``)."""
        pages = json_pages(
            self.cluster.core.list_pod_for_all_namespaces,
            limit=self.options.chunk_size or None,
            field_selector=f"spec.nodeName={node}",
            label_selector=self.options.pod_selector or None,
        )
        return [slim_pod(item) for page in pages for item in page.get("items") or []]

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
                # The whole of the server's message, as kubectl shows it (a 403 names the user and the verb).
                lookups[key] = DaemonSetLookup(found=False, not_found=err.status == 404, error=api_message(err))
        return lookups

    def _judge_node(self, node: Any) -> tuple[list[SlimPod], list[tuple[SlimPod, Verdict]]]:
        pods = self._list_pods(node.metadata.name)
        filter_options = FilterOptions(
            force=self.options.force,
            ignore_daemonsets=self.options.ignore_daemonsets,
            delete_emptydir_data=self.options.delete_emptydir_data,
            skip_wait_for_delete_timeout=self.options.skip_wait_for_delete_timeout,
        )
        filters = [
            *make_filters(filter_options, self._daemonset_lookups(pods), datetime.now(UTC)),
            *self.extra_filters,
        ]
        judged = [(pod, judge(pod, filters)) for pod in pods]
        return pods, judged

    def plan(self, nodes: list[Any]) -> drain_events.DrainPlanned:
        pdbs = self.evictor.pdbs()
        node_plans = []
        for node in nodes:
            _, judged = self._judge_node(node)
            plans = []
            for pod, verdict in judged:
                selecting = pdbs.selecting(pod)
                names = tuple(qualified(p) for p in selecting)
                ref = _ref(pod, node.metadata.name)
                if not verdict.delete:
                    kind = drain_events.Verdict.ERROR if verdict.outcome.value == "Error" else drain_events.Verdict.SKIP
                    plans.append(
                        drain_events.PodPlan(
                            pod=ref,
                            verdict=kind,
                            reason=verdict.message or "mirror or deleted pod",
                            pdbs=names,
                            priority=priority_of(pod),
                        )
                    )
                    continue
                method = drain_events.Verdict.DELETE if self.options.disable_eviction else drain_events.Verdict.EVICT
                reason = "; ".join(verdict.warnings) or verdict.message
                if not self.options.disable_eviction and len(selecting) > 1:
                    method, reason = (
                        drain_events.Verdict.ERROR,
                        (
                            f"selected by {len(selecting)} PodDisruptionBudgets ({', '.join(names)}); "
                            "the eviction API refuses such pods"
                        ),
                    )
                elif not self.options.disable_eviction and selecting and unhealthy_pod_may_go(selecting[0], pod):
                    reason = unhealthy_pod_may_go(selecting[0], pod) or ""
                elif not self.options.disable_eviction and selecting and blocks(selecting[0], pod):
                    budget = selecting[0]
                    method = drain_events.Verdict.BLOCKED
                    reason = (
                        f"PodDisruptionBudget {names[0]} allows 0 disruptions now "
                        f"(healthy {budget.status.current_healthy if budget.status else '?'}, "
                        f"needs {budget.status.desired_healthy if budget.status else '?'}); the drain will wait"
                    )
                plans.append(
                    drain_events.PodPlan(pod=ref, verdict=method, reason=reason, pdbs=names, priority=priority_of(pod))
                )
            node_plans.append(
                drain_events.NodePlan(
                    node=node.metadata.name,
                    cordoned=is_cordoned(node),
                    pods=tuple(plans),
                    errors=tuple(summarize_errors(judged)),
                    warnings=summarize_warnings(judged),
                )
            )
        return drain_events.DrainPlanned(nodes=tuple(node_plans), dry_run=self.options.dry_run)

    def plan_surges(self, nodes: list[Any]) -> surge_events.SurgesPlanned | None:
        """--surge: for each workload with pods on these nodes, surge by N or why not (changes nothing)."""
        if self.surge_max is None:
            return None
        pods = [
            (pod, node.metadata.name) for node in nodes for pod, verdict in self._judge_node(node)[1] if verdict.delete
        ]
        session = self._surge_session()
        return surge_events.SurgesPlanned(surges=session.as_plans(session.plan(pods)))

    # --- running ------------------------------------------------------------------------

    def close(self) -> None:
        self.evictor.close()

    def cordon(self, node: Any) -> None:
        changed = set_cordoned(self.cluster, node, cordoned=True, dry_run=self.options.dry_run)
        if changed and self.options.dry_run is DryRun.NONE:
            record_node_event(self.cluster, node, reason="Cordoned", message="Node cordoned by kubectl rollout-plus")
        self.emit(drain_events.NodeCordoned(node=node.metadata.name, changed=changed, dry_run=self.options.dry_run))

    def uncordon(self, node: Any) -> None:
        fresh = call_with_retry(self.cluster.core.read_node, node.metadata.name)
        changed = set_cordoned(self.cluster, fresh, cordoned=False, dry_run=self.options.dry_run)
        if changed and self.options.dry_run is DryRun.NONE:
            record_node_event(
                self.cluster, node, reason="Uncordoned", message="Node uncordoned by kubectl rollout-plus"
            )
        campaign = lift_campaign_taint(self.cluster, node.metadata.name, dry_run=self.options.dry_run)
        self.emit(
            drain_events.NodeUncordoned(
                node=node.metadata.name, changed=changed, dry_run=self.options.dry_run, campaign_taint=campaign
            )
        )

    def run(self, nodes: list[Any]) -> drain_events.DrainFinished:
        started = time.monotonic()
        drained: list[str] = []
        failed: list[str] = []
        batch = self.options.node_batch
        try:
            self.restore_leftover_surges()
            if batch <= 0:
                for node in nodes:
                    self.cordon(node)
                for node in nodes:
                    with self.surging([node]):
                        outcome = self.drain_node(node)
                    (drained if outcome.ok else failed).append(node.metadata.name)
            else:
                for index in range(0, len(nodes), batch):
                    group = nodes[index : index + batch]
                    if self.cancel.is_set():
                        failed.extend(n.metadata.name for n in group)
                        continue
                    self.emit(
                        drain_events.BatchStarted(index=index // batch + 1, nodes=tuple(n.metadata.name for n in group))
                    )
                    for node in group:
                        self.cordon(node)
                    with (
                        self.surging(group),
                        ThreadPoolExecutor(max_workers=len(group), thread_name_prefix="node") as pool,
                    ):
                        outcomes = list(pool.map(self.drain_node, group))
                    for outcome in outcomes:
                        (drained if outcome.ok else failed).append(outcome.node)
                    more_to_come = index + batch < len(nodes)
                    if more_to_come and self.options.dry_run is DryRun.NONE:
                        self._wait_for_workloads([pod for o in outcomes for pod in o.evicted])
        finally:
            self.close()
        finished = drain_events.DrainFinished(
            drained=tuple(drained), failed=tuple(failed), seconds=time.monotonic() - started
        )
        self.emit(finished)
        return finished

    @contextlib.contextmanager
    def surging(self, nodes: list[Any]) -> Iterator[None]:
        """--surge around draining these (cordoned) nodes: raise before, restore after, whatever happens."""
        if self.surge_max is None or self.options.dry_run is not DryRun.NONE or self.options.disable_eviction:
            yield
            return
        if not self._resumed(nodes):
            yield  # cancelled while paused: nothing raised, and the drain that follows ends cancelled
            return
        session = self._surge_session()
        self._surges = session
        try:
            pods = [
                (pod, node.metadata.name)
                for node in nodes
                for pod, verdict in self._judge_node(node)[1]
                if verdict.delete and not is_daemonset_pod(pod)
            ]
            session.start(pods, nodes=tuple(n.metadata.name for n in nodes))
            surged = session.surged()
            if surged:
                for node in nodes:
                    record_node_event(
                        self.cluster,
                        node,
                        reason="Surged",
                        message=f"Extra replicas raised before draining: {', '.join(surged)}",
                    )
            yield
        finally:
            self._surges = None
            session.finish()

    def _resumed(self, nodes: list[Any]) -> bool:
        """Hold a surge while the job is paused: a raise changes the cluster, which a paused job does not (a
        campaign asked to surge a node while paused raises once resumed). False: cancelled meanwhile."""
        paused = self.evictor.paused
        if paused.is_set():
            self.emit(surge_events.SurgeWaitsForResume(nodes=tuple(n.metadata.name for n in nodes)))
            while paused.is_set() and not self.cancel.wait(0.2):
                pass
        return not self.cancel.is_set()

    def _wait_for_workloads(self, evicted: list[Any]) -> None:
        workloads = owning_workloads(self.cluster, evicted)
        if not workloads:
            return
        started = time.monotonic()
        timeout = self.options.timeout or None
        left = wait_until_available(
            self.cluster,
            workloads,
            timeout=timeout,
            cancel=self.cancel,
            on_waiting=lambda states: self.emit(drain_events.WaitingForWorkloads(workloads=tuple(states))),
        )
        if left:
            raise DrainError(
                f"workloads evicted in the last batch are still not available after {timeout:.0f}s: "
                f"{', '.join(map(str, left))}; the next batch was not started"
            )
        self.emit(
            drain_events.WorkloadsAvailable(workloads=tuple(sorted(workloads)), seconds=time.monotonic() - started)
        )

    def drain_node(self, node: Any, *, stop: threading.Event | None = None) -> NodeOutcome:
        """Drain one (cordoned) node. ``stop`` ends this node's drain instead of the engine's cancel: a switch
        the caller also sets whenever that one is (a campaign stops one node to drain it through a surge)."""
        name = node.metadata.name
        started = time.monotonic()
        deadline = started + self.options.timeout if self.options.timeout > 0 else None
        _, judged = self._judge_node(node)
        errors = summarize_errors(judged)
        if errors:
            return self._fail(node, errors, pending=[])
        warnings = summarize_warnings(judged)
        if warnings:
            self.emit(drain_events.DrainWarning(node=name, message=warnings))
        to_remove = eviction_order([pod for pod, verdict in judged if verdict.delete])
        removing = {qualified(pod): pod for pod in to_remove}
        self._removing.update(removing)
        try:
            return self._remove_pods(node, to_remove, started=started, deadline=deadline, stop=stop)
        finally:
            # Needed only while its eviction may be refused (``_name_owner``): a campaign's one engine drains
            # every node of the pool, and would otherwise keep every pod it ever removed until its end.
            for key in removing:
                self._removing.pop(key, None)

    def _remove_pods(
        self,
        node: Any,
        to_remove: list[SlimPod],
        *,
        started: float,
        deadline: float | None,
        stop: threading.Event | None,
    ) -> NodeOutcome:
        """Evict (or delete) the node's judged pods and wait until they are gone."""
        name = node.metadata.name
        dry_run = self.options.dry_run
        self.emit(
            drain_events.NodeDrainStarted(node=name, pods=tuple(_ref(p, name) for p in to_remove), dry_run=dry_run)
        )
        if self.options.dry_run is DryRun.NONE:
            record_node_event(
                self.cluster, node, reason="Draining", message=f"Draining node: removing {len(to_remove)} pods"
            )
        if self.options.dry_run is DryRun.CLIENT:
            for pod in to_remove:
                self.emit(PodEvicted(pod=_ref(pod, name), method=self.evictor.method, dry_run=dry_run))
            self.emit(drain_events.NodeDrained(node=name, evicted=len(to_remove), seconds=0.0, dry_run=dry_run))
            return NodeOutcome(node=name, ok=True)

        node_pods = WatchedCollection(
            self.cluster.core.list_pod_for_all_namespaces,
            field_selector=f"spec.nodeName={name}",
            description=f"pods on {name}",
            transform=slim_pod,
        ).start()
        failures: dict[str, PodFailed] = {}
        try:
            if to_remove:
                with ThreadPoolExecutor(
                    max_workers=min(len(to_remove), 256), thread_name_prefix=f"evict-{name}"
                ) as pool:
                    results = list(
                        pool.map(lambda p: self._remove(p, _ref(p, name), node_pods, deadline, stop), to_remove)
                    )
                failures = {qualified(p): r for p, r in zip(to_remove, results, strict=True) if r is not None}
        finally:
            node_pods.stop()
        if failures and isinstance(stop, StopSwitch) and stop.is_set() and stop.handed_over:
            # Stopped to be drained again (through a surge): the pods left are that drain's, nothing failed.
            self.emit(drain_events.NodeDrainStopped(node=name, why=stop.why, pending=tuple(sorted(failures))))
            return NodeOutcome(node=name, ok=False, reason=stop.why, pending=sorted(failures))
        if failures:
            # One error per pod, in kubectl's words, as kubectl's drain aggregates them.
            errors = [failures[pod].error for pod in sorted(failures)]
            return self._fail(node, errors, pending=sorted(failures))
        self.emit(
            drain_events.NodeDrained(
                node=name, evicted=len(to_remove), seconds=time.monotonic() - started, dry_run=dry_run
            )
        )
        if self.options.dry_run is DryRun.NONE:
            record_node_event(
                self.cluster, node, reason="Drained", message=f"Node drained: {len(to_remove)} pods removed"
            )
        return NodeOutcome(node=name, ok=True, evicted=to_remove)

    def _remove(
        self,
        pod: Any,
        ref: PodRef,
        node_pods: WatchedCollection,
        deadline: float | None,
        stop: threading.Event | None,
    ) -> PodFailed | None:
        # --surge: a surged workload's pods go once its extra pods are Ready (or its surge was given up).
        surges = self._surges
        if surges is not None:
            surges.wait_until_settled(ref, deadline)
        return self.evictor.remove(pod, ref, node_pods, deadline, cancel=stop)

    def _fail(self, node: Any, reasons: list[str], pending: list[str]) -> NodeOutcome:
        reason = drain_events.join_errors(reasons)
        name = node.metadata.name
        cordoned = self.options.dry_run is DryRun.NONE
        if self.options.uncordon_on_failure:
            self.uncordon(node)
            cordoned = False
        if self.options.dry_run is DryRun.NONE:
            record_node_event(self.cluster, node, reason="DrainFailed", message=f"Drain failed: {reason}", warning=True)
        self.emit(
            drain_events.NodeDrainFailed(node=name, reasons=tuple(reasons), pending=tuple(pending), cordoned=cordoned)
        )
        return NodeOutcome(node=name, ok=False, reason=reason, pending=pending)
