"""Restarting a workload the plugin does not own by evicting its pods, one at a time.

``kubectl rollout restart`` changes the pod template, so the workload's
controller rolls out a new revision and PodDisruptionBudgets play no part.
Here each pod goes through the Eviction API (the PDB decides, as in a drain)
and the next one goes only once the workload has as many available pods as it
wants again: the replacement counts once it is Ready for the workload's
minReadySeconds, which is how its controller counts availability. No new
revision, no template change: the right tool to pick up a rotated Secret or to
move pods off a bad node generation without a rollout.

A workload mid-rollout or not fully available is waited for before the first
eviction (its status, then its pods, must say it is whole).

Order: StatefulSet pods from the highest ordinal down, as its controller
updates them; Deployment pods oldest first; DaemonSet pods by node name.

A restart that stops early (timeout, PDB, Ctrl-C, a killed process) leaves a
cutoff on the workload (``restart_record``); ``resume`` replaces only the pods
that predate it. A Lease ``rollout-plus.restart.KIND.NAME`` keeps two restarts
of one workload from running side by side; a restart that finds it held waits
until it could have lapsed (its holder killed), then gives up if it was renewed.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.eviction.pod_evictor import DryRun, EvictionSettings, PodEvictor
from kubectl_rollout.jobs import next_steps
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events import restart as restart_events
from kubectl_rollout.jobs.events.base import PodRef
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.label_selectors import selector_to_string
from kubectl_rollout.kube.permissions import Permission
from kubectl_rollout.kube.pods import controller_of, is_available
from kubectl_rollout.kube.watched_collection import WatchedCollection
from kubectl_rollout.kube.workload_kinds import workload_kind
from kubectl_rollout.kube.workload_lease import LeaseHeld, LeaseKeeper, WorkloadLease
from kubectl_rollout.restart.record import cutoff_for, label_patch, predates, recorded_cutoff


class RestartError(UserFacingError):
    pass


@dataclass(frozen=True, kw_only=True)
class RestartTarget:
    kind: str
    name: str
    namespace: str

    def __str__(self) -> str:
        return f"{self.kind.lower()}/{self.name}"


def restart_permissions(target: RestartTarget, dry_run: DryRun) -> list[Permission]:
    """What a restart by eviction needs, checked before the first eviction."""
    resource = f"{target.kind.lower()}s"
    needed = [
        Permission("get", resource, group="apps", namespace=target.namespace),
        Permission("list", "pods", namespace=target.namespace),
        Permission("watch", "pods", namespace=target.namespace),
        Permission("list", "poddisruptionbudgets", group="policy", namespace=target.namespace),
    ]
    if target.kind == "Deployment":
        needed.append(Permission("list", "replicasets", group="apps", namespace=target.namespace))
    if dry_run is not DryRun.CLIENT:
        needed.append(Permission("create", "pods", subresource="eviction", namespace=target.namespace))
    if dry_run is DryRun.NONE:
        # the cutoff that makes a stopped restart resumable is a label on the workload
        needed.append(Permission("patch", resource, group="apps", namespace=target.namespace))
        # the lease that keeps a second restart of the workload from running beside this one
        needed += [
            Permission(verb, "leases", group="coordination.k8s.io", namespace=target.namespace)
            for verb in ("get", "create", "update", "delete")
        ]
    return needed


def parse_target(text: str, namespace: str) -> RestartTarget:
    """``deployment/web`` (or sts/…, ds/…) in ``namespace``; a ValueError says what is accepted."""
    kind_name, slash, name = text.partition("/")
    kind = workload_kind(kind_name)
    if not slash or not name or kind is None:
        raise ValueError(
            f'"{text}" is not a workload to restart by eviction: use deployment/NAME, statefulset/NAME or '
            "daemonset/NAME (a managed workload is restarted by its NAME alone)"
        )
    return RestartTarget(kind=kind, name=name, namespace=namespace)


_ORDINAL = re.compile(r"-(\d+)$")


def replacement_order(kind: str, pods: list[Any]) -> list[Any]:
    """The order in which pods are replaced (see the module's docstring)."""
    if kind == "StatefulSet":

        def ordinal(pod: Any) -> int:
            found = _ORDINAL.search(pod.metadata.name)
            return int(found.group(1)) if found else -1

        return sorted(pods, key=ordinal, reverse=True)
    if kind == "DaemonSet":
        return sorted(pods, key=lambda p: (p.spec.node_name or "", p.metadata.name))
    return sorted(
        pods, key=lambda p: (p.metadata.creation_timestamp or datetime.min.replace(tzinfo=UTC), p.metadata.name)
    )


@dataclass(frozen=True, kw_only=True)
class _Run:
    """What the steps of one restart share: the workload's pods, watched, and how to count them."""

    pods: WatchedCollection
    #: UIDs of the controllers whose pods belong to the workload
    owners: set[str]
    desired: int
    min_ready: int
    deadline: float | None
    evictor: PodEvictor

    def owned(self, pod: Any) -> bool:
        owner = controller_of(pod)
        return owner is not None and owner.uid in self.owners


class EvictionRestart:
    def __init__(
        self,
        cluster: Cluster,
        target: RestartTarget,
        context: JobContext,
        *,
        settings: EvictionSettings,
        resume: bool = False,
    ) -> None:
        self.cluster = cluster
        self.target = target
        self.context = context
        self.emit = context.emit
        self.settings = settings
        self.resume = resume
        self.cancel = context.cancel
        #: who holds the restart's Lease: stable for a runner that resumes its own jobs (the agent), else unique
        self.lease_holder = context.lease_holder
        self._keeper: LeaseKeeper | None = None

    # --- reading the workload ---------------------------------------------------------

    def _api(self, verb: str) -> Callable[..., Any]:
        """The apps/v1 call ``verb`` ("read", "list", "patch") for the target's kind."""
        resource = {"Deployment": "deployment", "StatefulSet": "stateful_set", "DaemonSet": "daemon_set"}
        return getattr(self.cluster.apps, f"{verb}_namespaced_{resource[self.target.kind]}")  # type: ignore[no-any-return]

    def _read(self) -> Any:
        read = self._api("read")
        try:
            return call_with_retry(read, self.target.name, self.target.namespace)
        except ApiException as err:
            if err.status == 404:
                raise RestartError(
                    f'{self.target} not found in namespace "{self.target.namespace}"; nothing was changed. '
                    f"List them with kubectl get {self.target.kind.lower()}s -n {self.target.namespace}"
                ) from err
            raise

    def _desired(self, workload: Any) -> int:
        if self.target.kind == "DaemonSet":
            return int(workload.status.desired_number_scheduled or 0) if workload.status else 0
        return int(workload.spec.replicas if workload.spec.replicas is not None else 1)

    def _wait_until_settled(self, workload: Any, deadline: float | None) -> Any:
        """Start only from a workload that is neither mid-rollout nor degraded: evicting then would
        only add to the disruption. Waits (announced, bounded by the timeout) for it to settle."""
        problem = self._unsettled(workload)
        if problem is None:
            return workload
        self.emit(
            restart_events.WaitingToStart(workload=str(self.target), namespace=self.target.namespace, reason=problem)
        )
        watched = WatchedCollection(
            self._api("list"),
            namespace=self.target.namespace,
            field_selector=f"metadata.name={self.target.name}",
            description=str(self.target),
        ).start()
        key = (self.target.namespace, self.target.name)
        try:

            def settled(collection: WatchedCollection) -> bool:
                current = collection.objects_locked().get(key)
                return current is not None and self._unsettled(current) is None

            left = None if deadline is None else deadline - time.monotonic()
            if watched.wait_until(settled, left, self.cancel):
                return watched.get(key)
            current = watched.get(key)
        finally:
            watched.stop()
        if self.cancel.is_set():
            raise RestartError(f"{self.target}: cancelled before the first eviction; nothing was changed")
        if current is None:
            raise RestartError(f"{self.target} was deleted before its restart began; nothing was changed")
        raise RestartError(
            f"{self.target} cannot be restarted now: {self._unsettled(current) or problem}; nothing was changed. "
            f"Wait until kubectl rollout status {self.target} -n {self.target.namespace} succeeds, then retry"
        )

    def _unsettled(self, workload: Any) -> str | None:
        """Why the workload is not ready for a restart, or None."""
        status = workload.status
        desired = self._desired(workload)
        if status is None or (status.observed_generation or 0) < (workload.metadata.generation or 0):
            problem = "its controller has not yet seen its latest change"
        elif self.target.kind == "Deployment" and (status.updated_replicas or 0) < desired:
            problem = f"it is rolling out ({status.updated_replicas or 0} of {desired} pods updated)"
        elif self.target.kind == "StatefulSet" and status.current_revision != status.update_revision:
            problem = f"it is rolling out (revision {status.current_revision} to {status.update_revision})"
        elif self.target.kind == "DaemonSet" and (status.updated_number_scheduled or 0) < desired:
            problem = f"it is rolling out ({status.updated_number_scheduled or 0} of {desired} pods updated)"
        else:
            available = status.number_available if self.target.kind == "DaemonSet" else status.available_replicas
            if (available or 0) >= desired:
                return None
            problem = f"only {available or 0} of {desired} pods are available"
        return problem

    def _owner_uids(self, workload: Any) -> set[str]:
        """UIDs of the controllers whose pods belong to the workload (its ReplicaSets for a Deployment)."""
        if self.target.kind != "Deployment":
            return {workload.metadata.uid}
        listing = call_with_retry(self.cluster.apps.list_namespaced_replica_set, self.target.namespace)
        return {
            rs.metadata.uid
            for rs in listing.items
            if (owner := controller_of(rs)) is not None and owner.uid == workload.metadata.uid
        }

    # --- one restart at a time -----------------------------------------------------------

    def _hold_lease(self, deadline: float | None) -> LeaseKeeper:
        """Take the workload's restart lease, waiting once for a holder that may have been killed."""
        lease = WorkloadLease(
            self.cluster,
            self.target.namespace,
            self.target.name,
            self.lease_holder,
            lease_name=f"rollout-plus.restart.{self.target.kind.lower()}.{self.target.name}",
            subject=f"{self.target} is being restarted",
            advice=(
                "two restarts of one workload must not run at once: wait for it to finish (if it was stopped, "
                f"{next_steps.restart_workload(str(self.target), self.target.namespace, resume=True)} continues it)"
            ),
        )
        keeper = LeaseKeeper(lease, self.cancel)
        try:
            return keeper.start()
        except LeaseHeld as held:
            wait = lease.seconds_left() + 1.0
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 0.0))
            self.emit(
                restart_events.WaitingToStart(
                    workload=str(self.target),
                    namespace=self.target.namespace,
                    reason=f"another restart holds lease {lease.namespace}/{lease.name}; "
                    f"waiting {wait:.0f}s to see whether it lapses ({held})",
                )
            )
            if self.cancel.wait(wait):
                raise RestartError(f"{self.target}: cancelled before the first eviction; nothing was changed") from held
        return keeper.start()

    def _why_cancelled(self) -> str:
        if self._keeper is not None and self._keeper.lost:
            return f"lost the restart's lease, so another restart may be running: {self._keeper.lost}"
        return "cancelled"

    # --- running ----------------------------------------------------------------------

    def run(self) -> restart_events.RestartFinished:
        started = time.monotonic()
        deadline = started + self.settings.timeout if self.settings.timeout > 0 else None
        workload = self._read()
        if self.settings.dry_run is not DryRun.NONE:
            return self._run(workload, started, deadline)
        self._keeper = self._hold_lease(deadline)
        try:
            return self._run(workload, started, deadline)
        finally:
            self._keeper.stop()

    def _run(self, workload: Any, started: float, deadline: float | None) -> restart_events.RestartFinished:
        workload = self._wait_until_settled(workload, deadline)
        desired = self._desired(workload)
        min_ready = int(getattr(workload.spec, "min_ready_seconds", None) or 0)
        owners = self._owner_uids(workload)
        selector = selector_to_string(self.cluster.api_client.sanitize_for_serialization(workload.spec.selector))
        pods = WatchedCollection(
            self.cluster.core.list_namespaced_pod,
            namespace=self.target.namespace,
            label_selector=selector,
            description=f"pods of {self.target}",
        ).start()
        run = _Run(
            pods=pods,
            owners=owners,
            desired=desired,
            min_ready=min_ready,
            deadline=deadline,
            evictor=PodEvictor(self.cluster, self.settings, self.context),
        )
        replaced = 0
        wrote = False
        try:
            plan, cutoff, earlier = self._plan(run, workload)
            failure = "" if self.settings.dry_run is DryRun.CLIENT else self._wait_until_whole(run)
            if failure:
                plan = []
            if plan and cutoff is not None and self.settings.dry_run is DryRun.NONE and not self.resume:
                if cutoff != earlier:
                    self._record(cutoff)
                wrote = True
            if not failure:
                replaced, failure = self._replace_in_order(run, plan)
        finally:
            run.evictor.close()
            pods.stop()
        return self._finish(started, replaced=replaced, failure=failure, wrote=wrote, earlier=earlier)

    def _plan(self, run: _Run, workload: Any) -> tuple[list[Any], datetime | None, datetime | None]:
        """The pods to replace, in order, announced; with this restart's cutoff and the one it found."""
        current = [p for p in run.pods.snapshot() if run.owned(p) and p.metadata.deletion_timestamp is None]
        earlier = self._earlier_cutoff(workload)
        cutoff = earlier if self.resume else cutoff_for(current)
        plan = replacement_order(self.target.kind, [p for p in current if cutoff is not None and predates(p, cutoff)])
        self.emit(
            restart_events.RestartPlanned(
                workload=str(self.target),
                namespace=self.target.namespace,
                pods=tuple(p.metadata.name for p in plan),
                dry_run=self.settings.dry_run,
                resumed=self.resume,
                already_replaced=len(current) - len(plan),
                supersedes_unfinished=earlier is not None and not self.resume,
            )
        )
        return plan, cutoff, earlier

    def _wait_until_whole(self, run: _Run) -> str:
        """The status said settled; the pods must agree before the first eviction. "" or why not."""
        desired = run.desired
        short = self._wait_for_all_available(
            run.pods,
            run.owned,
            desired,
            run.min_ready,
            run.deadline,
            lambda n: self.emit(
                restart_events.WaitingToStart(
                    workload=str(self.target),
                    namespace=self.target.namespace,
                    reason=f"{n} of {desired} pods available",
                )
            ),
        )
        if short is None:
            return ""
        return (
            self._why_cancelled()
            if self.cancel.is_set()
            else (f"only {short} of {desired} pods were available within the timeout; no pod was evicted")
        )

    def _replace_in_order(self, run: _Run, plan: list[Any]) -> tuple[int, str]:
        """Evict the pods one at a time, each once the previous one's replacement is available.

        Returns how many were replaced and, when it stopped early, why.
        """
        replaced = 0
        for index, pod in enumerate(plan, start=1):
            if self.settings.dry_run is DryRun.CLIENT:
                replaced += 1
                continue
            if self.cancel.is_set():
                return replaced, self._why_cancelled()
            ref = PodRef(namespace=pod.metadata.namespace, name=pod.metadata.name, node=pod.spec.node_name or "")
            began = time.monotonic()
            failure = run.evictor.remove(pod, ref, run.pods, run.deadline)
            if failure is not None:
                return replaced, failure.reason
            if self.settings.dry_run is DryRun.SERVER:
                replaced += 1
                continue
            short = self._wait_for_all_available(
                run.pods,
                run.owned,
                run.desired,
                run.min_ready,
                run.deadline,
                functools.partial(self._announce_replacement, ref, run.desired),
            )
            if short is not None:
                return replaced, (
                    self._why_cancelled()
                    if self.cancel.is_set()
                    else (
                        f"the replacement of pod {ref} was not available within the timeout "
                        f"({short} of {run.desired} pods available); the remaining pods were left alone"
                    )
                )
            replaced += 1
            self.emit(
                restart_events.PodReplaced(pod=ref, index=index, total=len(plan), seconds=time.monotonic() - began)
            )
        return replaced, ""

    def _finish(
        self, started: float, *, replaced: int, failure: str, wrote: bool, earlier: datetime | None
    ) -> restart_events.RestartFinished:
        # The cutoff stays only while it saves work: after a failure, once some pod was replaced
        # (by this run or by the one it resumes).
        recorded = wrote or earlier is not None
        if recorded and self.settings.dry_run is DryRun.NONE and (not failure or (wrote and replaced == 0)):
            self._record(None)
            recorded = False
        finished = restart_events.RestartFinished(
            workload=str(self.target),
            namespace=self.target.namespace,
            replaced=replaced,
            failure=failure,
            seconds=time.monotonic() - started,
            dry_run=self.settings.dry_run,
            resumable=recorded,
        )
        self.emit(finished)
        return finished

    def _earlier_cutoff(self, workload: Any) -> datetime | None:
        """The cutoff an unfinished restart left on the workload; required when resuming."""
        try:
            cutoff = recorded_cutoff(workload)
        except ValueError as err:
            if not self.resume:
                return None  # a fresh restart overwrites it
            raise RestartError(f"{self.target}: {err}; nothing was changed") from err
        if cutoff is None and self.resume:
            raise RestartError(
                f"{self.target} has no unfinished restart to resume; nothing was changed. "
                f"Start one with {next_steps.restart_workload(str(self.target), self.target.namespace)}"
            )
        return cutoff

    def _record(self, cutoff: datetime | None) -> None:
        """Write (or, with None, remove) the restart's cutoff on the workload."""
        try:
            call_with_retry(self._api("patch"), self.target.name, self.target.namespace, label_patch(cutoff))
        except ApiException as err:
            if err.status != 404 or cutoff is not None:
                raise

    def _wait_for_all_available(
        self,
        pods: WatchedCollection,
        owned: Callable[[Any], bool],
        desired: int,
        min_ready: int,
        deadline: float | None,
        announce: Callable[[int], None],
    ) -> int | None:
        """Wait until the workload has ``desired`` available pods; None then, else how many it had.

        Counted from the pods themselves: the workload's status lags the
        eviction it has just suffered. ``announce`` is told the count once, if
        there is a wait at all.
        """
        counted = [0]

        def whole(collection: WatchedCollection) -> bool:
            now = datetime.now(UTC)
            live = [p for p in collection.objects_locked().values() if owned(p)]
            counted[0] = sum(1 for p in live if is_available(p, min_ready, now))
            return counted[0] >= desired

        if pods.wait_until(whole, 0, self.cancel):
            return None
        announce(counted[0])
        left = None if deadline is None else deadline - time.monotonic()
        if pods.wait_until(whole, left, self.cancel):
            return None
        return counted[0]

    def _announce_replacement(self, ref: PodRef, desired: int, available: int) -> None:
        self.emit(restart_events.WaitingForReplacement(pod=ref, ready=available, desired=desired))
