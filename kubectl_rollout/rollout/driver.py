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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.jobs import next_steps
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.label_selectors import selector_matches, selector_to_string
from kubectl_rollout.kube.watched_collection import WatchedCollection
from kubectl_rollout.kube.workload_lease import WorkloadLease
from kubectl_rollout.rollout import replica_sets
from kubectl_rollout.rollout.plan import (
    Action,
    CreateReplicaSet,
    DeleteReplicaSet,
    ScaleReplicaSet,
    SetRevision,
    plan,
    split,
)
from kubectl_rollout.rollout.record import (
    WORKLOAD_LABEL,
    Record,
    StaleRecord,
    from_config_map,
    read,
    record_name,
    save_spec,
    save_status,
)
from kubectl_rollout.rollout.spec import parse_workload
from kubectl_rollout.rollout.state import (
    PODS_FAILING,
    REPLICA_FAILURE,
    RolloutStatus,
    condition,
    is_complete,
    rollout_status_message,
    set_condition,
    sync_rollout_status,
)
from kubectl_rollout.rollout.template_hash import HASH_LABEL

#: waiting reasons that mean a new pod will not start without a change to the workload
IMAGE_FAILURES = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName"})


@dataclass(frozen=True, kw_only=True)
class RolloutEvent:
    """Progress of a rollout, for the printer, -o jsonl, the agent and the TUI."""

    workload: str
    message: str
    #: (name, revision, spec replicas, current, available) per ReplicaSet, newest revision first
    replica_sets: tuple[tuple[str, int, int, int, int], ...] = ()
    #: e.g. "create web-5d8f6c7b9 at 3", "scale web-4b7d9 to 2", "waiting for PDB shop/web"
    action: str = ""
    at: float = dataclasses.field(default_factory=time.time)


@dataclass(frozen=True, kw_only=True)
class RolloutResult:
    succeeded: bool
    message: str
    rolled_back_to: int | None = None
    paused: bool = False


class RolloutDriver:
    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        name: str,
        emit: Callable[[RolloutEvent], None],
        *,
        cancel: threading.Event | None = None,
        timeout: float | None = None,
        respect_pdbs: bool = True,
        auto_rollback: bool = False,
        fail_after_restarts: int = 3,
    ) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.emit = emit
        self.cancel = cancel or threading.Event()
        self.timeout = timeout
        self.respect_pdbs = respect_pdbs
        self.auto_rollback = auto_rollback
        self.fail_after_restarts = fail_after_restarts
        self._wake = threading.Event()
        self._last_message = ""
        self._rolled_back_to: int | None = None
        #: after a rollback, act only on a record at least this new
        self._awaited_generation = 0
        #: PDB uid -> (status resourceVersion, disruptions already spent against it)
        self._spent: dict[str, tuple[str, int]] = {}

    def _watch(self, list_func: Callable[..., Any], description: str, **kwargs: Any) -> WatchedCollection:
        return WatchedCollection(
            list_func, description=description, on_change=self._wake.set, namespace=self.namespace, **kwargs
        ).start()

    def run(self) -> RolloutResult:
        lease = WorkloadLease(
            self.cluster,
            self.namespace,
            self.name,
            lease_name=record_name(self.name),
            subject=f'managed workload "{self.name}" is being driven',
            advice=f"wait for it to finish, or follow it with {next_steps.follow_rollout(self.name)}",
        )
        lease.acquire()
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        watches = [
            self._watch(
                self.cluster.core.list_namespaced_config_map,
                "the record",
                field_selector=f"metadata.name={record_name(self.name)}",
            ),
            self._watch(
                self.cluster.apps.list_namespaced_replica_set,
                "ReplicaSets",
                label_selector=f"{WORKLOAD_LABEL}={self.name}",
            ),
        ]
        records, rs_watch = watches
        pods: WatchedCollection | None = None
        pdbs: WatchedCollection | None = None
        try:
            while True:
                self._wake.clear()
                lease.renew()
                raw = records.get((self.namespace, record_name(self.name)))
                if raw is None:
                    return RolloutResult(succeeded=False, message=f'managed workload "{self.name}" was deleted')
                record = from_config_map(raw)
                if pods is None:
                    pods = self._watch(
                        self.cluster.core.list_namespaced_pod,
                        "pods",
                        label_selector=selector_to_string(record.spec.selector),
                    )
                    watches.append(pods)
                    if self.respect_pdbs:
                        pdbs = self._watch(self.cluster.policy.list_namespaced_pod_disruption_budget, "PDBs")
                        watches.append(pdbs)
                outcome = self._sync(record, rs_watch.snapshot(), pods.snapshot(), pdbs)
                if outcome is not None:
                    return outcome
                if self.cancel.is_set():
                    return RolloutResult(
                        succeeded=False,
                        message="interrupted; the rollout continues with the next "
                        f"driver ({next_steps.follow_rollout(self.name)})",
                    )
                if deadline is not None and time.monotonic() > deadline:
                    return RolloutResult(
                        succeeded=False, message=f"timed out after {self.timeout:g}s: {self._last_message}"
                    )
                self._wake.wait(1.0)
        finally:
            for collection in watches:
                collection.stop()
            lease.release()

    # --- one pass ---------------------------------------------------------------------

    def _sync(
        self, record: Record, all_rs: list[Any], pods: list[Any], pdbs: WatchedCollection | None
    ) -> RolloutResult | None:
        if record.generation < self._awaited_generation:
            return None  # our own spec change (a rollback) has not come back through the watch yet
        spec = record.spec
        mine = replica_sets.owned(all_rs, record)
        managed = [replica_sets.to_managed(rs) for rs in mine]
        template_hash = replica_sets.template_hash(spec)
        new, _old = split(template_hash, managed)
        new_rs = next((rs for rs in mine if new is not None and rs.metadata.name == new.name), None)
        target = record.target()
        views = [replica_sets.to_view(rs) for rs in mine]
        new_view = next((v for v in views if new is not None and v.name == new.name), None)
        now = time.time()
        status = sync_rollout_status(target, views, new_view, record.status, now)
        status = self._pod_failures(status, new_rs, pods, now)

        new_hash = replica_sets.pod_template_hash_of(new_rs) if new_rs is not None else None
        old_pods_running = any(
            (p.metadata.labels or {}).get(HASH_LABEL) != new_hash and (p.status.phase not in ("Succeeded", "Failed"))
            for p in pods
        )
        actions = plan(
            spec,
            template_hash,
            managed,
            status_replicas=status.replicas,
            old_pods_running=old_pods_running,
            complete=is_complete(target, status),
        )
        actions = self._respect_pdbs(actions, managed, new, pdbs, spec.template)
        for action in actions:
            status = self._apply(action, record, mine, status)
        if status != record.status:
            try:
                record = save_status(self.cluster, record, status)
            except StaleRecord:
                return None  # the watch has not caught up with our last write; the next pass will

        message, done, failed = rollout_status_message(spec.name, target, status)
        self._report(message, mine, actions)
        if failed and self.auto_rollback and self._rolled_back_to is None:
            revision = self._rollback(record, mine)
            if revision is not None:
                self._rolled_back_to = revision
                return None
        if spec.paused and not actions:
            # No progress while paused (scaling only, done above): leave the lease for whoever resumes it.
            return RolloutResult(
                succeeded=True,
                message=f'workload "{spec.name}" is paused ({message}); resume it '
                f"with {next_steps.resume_workload(spec.name)}",
                paused=True,
            )
        if done and not actions:
            if self._rolled_back_to is not None:
                return RolloutResult(
                    succeeded=False,
                    message=f"rolled back to revision {self._rolled_back_to}: {message}",
                    rolled_back_to=self._rolled_back_to,
                )
            return RolloutResult(succeeded=not failed, message=message)
        return None

    def _apply(self, action: Action, record: Record, mine: list[Any], status: RolloutStatus) -> RolloutStatus:
        """Carry one action out; returns the status with what the action itself records."""
        if isinstance(action, CreateReplicaSet):
            created, collisions = replica_sets.create(
                self.cluster,
                record,
                replicas=action.replicas,
                revision=action.revision,
                collision_count=status.collision_count,
            )
            status = dataclasses.replace(status, collision_count=collisions)
            return _with_progress(status, "NewReplicaSetCreated", f'Created new replica set "{created.metadata.name}"')
        if isinstance(action, ScaleReplicaSet):
            replica_sets.scale(self.cluster, record, action.name, action.replicas)
        elif isinstance(action, SetRevision):
            rs = next(r for r in mine if r.metadata.name == action.name)
            replica_sets.set_revision(self.cluster, record, rs, action.revision)
            return _with_progress(status, "FoundNewReplicaSet", f'Found new replica set "{action.name}"')
        elif isinstance(action, DeleteReplicaSet):
            replica_sets.delete(self.cluster, record, action.name)
        return status

    # --- beyond the controller ------------------------------------------------------------

    def _respect_pdbs(
        self, actions: list[Action], managed: list[Any], new: Any, pdbs: WatchedCollection | None, template: Any
    ) -> list[Action]:
        """Never shrink old ReplicaSets by more than the PDBs over the workload's pods allow right now."""
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
            return actions
        labels = (template.get("metadata") or {}).get("labels") or {}
        budgets = [p for p in pdbs.snapshot() if selector_matches(p.spec.selector, labels)]
        if not budgets:
            return actions
        # A PDB's status lags our scale-downs: each status version's room is spent once.
        room = min(self._room(b) for b in budgets)
        kept: list[Action] = [a for a in actions if a not in shrinking]
        for action in shrinking:
            assert isinstance(action, ScaleReplicaSet)
            cut = min(sizes[action.name] - action.replicas, room)
            room -= cut
            for budget in budgets:
                self._spend(budget, cut)
            if cut > 0:
                kept.append(ScaleReplicaSet(action.name, sizes[action.name] - cut))
        if len(kept) < len(actions) or any(k not in actions for k in kept):
            names = ", ".join(f"{b.metadata.namespace}/{b.metadata.name}" for b in budgets)
            self._report_action(f"scale-down held back by PodDisruptionBudget {names}")
        return kept

    def _room(self, budget: Any) -> int:
        allowed = (budget.status.disruptions_allowed or 0) if budget.status else 0
        version, spent = self._spent.get(budget.metadata.uid, ("", 0))
        return max(0, allowed - spent) if version == budget.metadata.resource_version else allowed

    def _spend(self, budget: Any, count: int) -> None:
        version, spent = self._spent.get(budget.metadata.uid, ("", 0))
        if version != budget.metadata.resource_version:
            spent = 0
        self._spent[budget.metadata.uid] = (budget.metadata.resource_version, spent + count)

    def _pod_failures(self, status: RolloutStatus, new_rs: Any, pods: list[Any], now: float) -> RolloutStatus:
        """New pods that crash-loop past the threshold, or cannot pull their image, fail the rollout."""
        if new_rs is None:
            return status
        new_hash = replica_sets.pod_template_hash_of(new_rs)
        for pod in pods:
            if (pod.metadata.labels or {}).get(HASH_LABEL) != new_hash:
                continue
            for container in (pod.status.container_statuses or []) if pod.status else []:
                waiting = container.state.waiting if container.state else None
                if waiting is None:
                    continue
                if waiting.reason in IMAGE_FAILURES:
                    message = (
                        f"pod {pod.metadata.name}: container {container.name} cannot pull its image "
                        f"({waiting.reason}): {waiting.message or container.image}"
                    )
                elif waiting.reason == "CrashLoopBackOff" and container.restart_count >= self.fail_after_restarts:
                    message = (
                        f"pod {pod.metadata.name}: container {container.name} is in CrashLoopBackOff "
                        f"(restarted {container.restart_count} times)"
                    )
                else:
                    continue
                cond = condition(REPLICA_FAILURE, True, PODS_FAILING, message, now)
                return dataclasses.replace(status, conditions=set_condition(status.conditions, cond))
        return status

    def _rollback(self, record: Record, mine: list[Any]) -> int | None:
        """Return to the newest revision other than the current one; None when there is none."""
        record = read(self.cluster, record.namespace, record.name)  # fresh: the watch cache may lag
        current = replica_sets.template_hash(record.spec)
        candidates = sorted(
            (rs for rs in mine if (rs.metadata.annotations or {}).get(replica_sets.TEMPLATE_HASH) != current),
            key=lambda rs: replica_sets.to_managed(rs).revision,
            reverse=True,
        )
        if not candidates:
            return None
        previous = candidates[0]
        manifest = dict(record.manifest)
        manifest["spec"] = {**manifest["spec"], "template": replica_sets.template_of(previous)}
        saved = save_spec(self.cluster, manifest, parse_workload(manifest, default_namespace=record.namespace), record)
        self._awaited_generation = saved.generation
        revision = replica_sets.to_managed(previous).revision
        self._report_action(f"rolling back to revision {revision} ({previous.metadata.name})")
        return revision

    # --- reporting ------------------------------------------------------------------------

    def _report(self, message: str, mine: list[Any], actions: list[Action]) -> None:
        described = "; ".join(_describe(a) for a in actions)
        if message == self._last_message and not described:
            return
        self._last_message = message
        table = tuple(
            sorted(
                (
                    (m.name, m.revision, m.replicas, m.current, m.available)
                    for m in (replica_sets.to_managed(rs) for rs in mine)
                ),
                key=lambda row: -row[1],
            )
        )
        self.emit(RolloutEvent(workload=self.name, message=message, replica_sets=table, action=described))

    def _report_action(self, text: str) -> None:
        self.emit(RolloutEvent(workload=self.name, message=self._last_message, action=text))


def _with_progress(status: RolloutStatus, reason: str, message: str) -> RolloutStatus:
    """A Progressing=True condition with ``reason``, as the controller sets when it creates or finds the new RS."""
    cond = condition("Progressing", True, reason, message, time.time())
    return dataclasses.replace(status, conditions=set_condition(status.conditions, cond))


def _describe(action: Action) -> str:
    if isinstance(action, CreateReplicaSet):
        return f"create the new ReplicaSet at {action.replicas} (revision {action.revision})"
    if isinstance(action, ScaleReplicaSet):
        return f"scale {action.name} to {action.replicas}"
    if isinstance(action, SetRevision):
        return f"{action.name} becomes revision {action.revision}"
    return f"delete {action.name} (beyond revisionHistoryLimit)"
