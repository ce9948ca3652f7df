"""Blue-green's part of a driver pass: which counts the ReplicaSets aim at, which Service selects what, what to
record.

The rollout driver asks once per pass (``BlueGreenWalker.pass_``) of a
workload whose manifest asks for blue-green, as it asks the canary walker of
one with steps, and gets the same answer (``CanaryPass``): the counts to aim
at, reached at once rather than inside maxSurge (the new ReplicaSet grows to
full size beside the old one, which keeps serving), whether the rollout holds,
whether this pass wrote the record (then the pass ends there), and whether
the job ends (waiting for promote, aborted).

The one invariant: the active Service selects only a ReplicaSet whose pods
are all available. It is pinned to the stable ReplicaSet before the new one is
created, switched to the new one only once that one is at full size with every
pod available, and switched back on abort before the new one shrinks. The old
ReplicaSet is scaled down ``scale-down-delay`` after the switch as recorded
(written once the switch is made), whichever driver is running then.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence

from kubectl_rollout.jobs import next_steps
from kubectl_rollout.jobs.events import bluegreen as bev
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.jobs.events.rollout import RolloutOutcome
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.durations import go_duration
from kubectl_rollout.rollout.bluegreen import services
from kubectl_rollout.rollout.bluegreen.format import BlueGreen
from kubectl_rollout.rollout.bluegreen.record_state import blue_green_status, save_state, state_of, tell
from kubectl_rollout.rollout.bluegreen.state import (
    AutoPromote,
    BlueGreenState,
    Grow,
    KeepOld,
    MarkReady,
    ScaleDownOld,
    Sizes,
    SwitchActive,
    Unwind,
    WaitForPromote,
    decide,
    promoted,
)
from kubectl_rollout.rollout.canary.driving import CanaryEnd, CanaryPass
from kubectl_rollout.rollout.canary.state import Mark
from kubectl_rollout.rollout.plan import ManagedReplicaSet, pods_held
from kubectl_rollout.rollout.record import Record
from kubectl_rollout.rollout.steps.weights import Counts

#: who promoted a workload whose auto-promote did it
BY_AUTO_PROMOTE = "auto-promote"


def _sizes(rs: ManagedReplicaSet | None) -> Sizes:
    if rs is None:
        return Sizes()
    return Sizes(replicas=rs.replicas, pods=pods_held(rs), available=rs.available)


class BlueGreenWalker:
    """One driver's view of a workload's blue-green rollout: what its Services select, as this driver set them."""

    def __init__(self, cluster: Cluster, name: str, emit: Emit) -> None:
        self.cluster = cluster
        self.name = name
        self.emit = emit
        #: Service -> the pod-template-hash this driver knows it selects (read once, then as this driver set it)
        self._selects: dict[str, str] = {}
        #: where the rollout stood was said once (a driver that takes over says it first)
        self._announced = False

    @staticmethod
    def under_way(record: Record, *, template_hash: str) -> str | None:
        """The stable ReplicaSet of the current template's rollout while it is not over: a paused workload holds
        both ReplicaSets as they are."""
        state = state_of(record)
        if state is None or state.new_hash != template_hash or state.done or state.first:
            return None
        return state.stable

    def pass_(
        self,
        record: Record,
        settings: BlueGreen,
        *,
        template_hash: str,
        new: ManagedReplicaSet | None,
        old: Sequence[ManagedReplicaSet],
        pod_hashes: Mapping[str, str],
        now: float,
    ) -> CanaryPass:
        state = state_of(record)
        if state is None or state.new_hash != template_hash:
            return self._begin(record, settings, template_hash=template_hash, new=new, old=old, pod_hashes=pod_hashes)
        if not self._announced:
            self._announced = True
            line = blue_green_status(record, now=now)
            if line:
                self.emit(bev.BlueGreenProgressed(workload=self.name, line=line))
        stable = next((rs for rs in old if rs.name == state.stable), None)
        replicas = record.spec.replicas
        decision = decide(
            settings=settings, state=state, replicas=replicas, new=_sizes(new), stable=_sizes(stable), now=now
        )
        if decision is None:
            return CanaryPass()  # a first rollout still rolling, or one that is over: a plain rolling update
        if any(rs.unobserved for rs in (new, stable) if rs is not None):
            # A ReplicaSet's status lags its spec: no count read from it is trusted; the watch brings the next.
            as_they_are = Counts(canary=_sizes(new).replicas, stable=_sizes(stable).replicas)
            return CanaryPass(goal=as_they_are, stable=state.stable, holding=True)
        new_hash = pod_hashes.get(new.name, "") if new is not None else ""
        if isinstance(decision, Unwind):
            return self._unwind(record, settings, state, decision)
        if state.promoted is None and not state.first:
            # Before promote the active Service stays on the stable ReplicaSet, whatever was done to it by hand.
            self._select(record, settings.active_service, bev.ServiceRole.ACTIVE, state.stable_pod_hash, state.stable)
        if new is not None and settings.preview_service:
            self._select(record, settings.preview_service, bev.ServiceRole.PREVIEW, new_hash, new.name)
        if isinstance(decision, Grow):
            return CanaryPass(goal=decision.goal, stable=state.stable)
        if isinstance(decision, MarkReady):
            return self._mark_ready(record, settings, state, decision, new=new, now=now)
        if isinstance(decision, WaitForPromote):
            if decision.until is not None:
                return CanaryPass(goal=decision.goal, stable=state.stable, holding=True, until=decision.until)
            size = decision.goal.canary
            return CanaryPass(
                goal=decision.goal,
                stable=state.stable,
                holding=True,
                end=CanaryEnd(
                    outcome=RolloutOutcome.PAUSED,
                    message=f"blue-green: preview ready {size}/{size}, waiting for promote: switch the active "
                    f"Service {settings.active_service} with {next_steps.command('promote', self.name)}, or "
                    f"{next_steps.command('abort', self.name)}",
                ),
            )
        if isinstance(decision, AutoPromote):
            save_state(self.cluster, record, promoted(state, by=BY_AUTO_PROMOTE, now=now))
            self.emit(bev.BlueGreenPromoted(workload=self.name, by=BY_AUTO_PROMOTE, when=now))
            tell(self.cluster, record, reason="Promoted", message="promoted by its auto-promote setting")
            return CanaryPass(wrote=True)
        if isinstance(decision, SwitchActive):
            assert new is not None  # at full size
            return self._switch(record, settings, state, new=new, new_hash=new_hash)
        if isinstance(decision, KeepOld):
            return CanaryPass(goal=decision.goal, stable=state.stable, holding=True, until=decision.until)
        assert isinstance(decision, ScaleDownOld)
        if not decision.reached:
            return CanaryPass(goal=decision.goal, stable=state.stable)
        done = time.time()
        save_state(self.cluster, record, dataclasses.replace(state, scaled_down_at=done))
        switched = state.switched_at or done
        self.emit(
            bev.OldScaledDown(
                workload=self.name,
                replica_set=state.stable,
                switched_at=switched,
                delay=settings.scale_down_delay,
                scaled_down_at=done,
            )
        )
        tell(
            self.cluster,
            record,
            reason="ScaledDown",
            message=f"old ReplicaSet {state.stable} scaled down to 0, {done - switched:.1f}s after the switch",
        )
        return CanaryPass(wrote=True)

    # --- the phases -----------------------------------------------------------------------

    def _begin(
        self,
        record: Record,
        settings: BlueGreen,
        *,
        template_hash: str,
        new: ManagedReplicaSet | None,
        old: Sequence[ManagedReplicaSet],
        pod_hashes: Mapping[str, str],
    ) -> CanaryPass:
        """A new template: the stable ReplicaSet is the one the active Service selects (else the newest with
        pods), and the active Service is pinned to it before the new ReplicaSet is created or grown."""
        active_hash = self._selected(record, settings.active_service)
        active = [rs for rs in old if rs.replicas > 0]
        if new is not None and new.replicas > 0 and active_hash and pod_hashes.get(new.name) == active_hash:
            # Back to the template the active Service still selects (an undo after an abort): nothing to switch.
            save_state(self.cluster, record, BlueGreenState(new_hash=template_hash, switched_at=time.time()))
            return CanaryPass(wrote=True)
        serving = next((rs for rs in active if active_hash and pod_hashes.get(rs.name) == active_hash), None)
        stable = serving or max(active, key=lambda rs: (rs.revision, rs.created), default=None)
        if stable is None:
            # A first rollout: the active Service is pointed at the new ReplicaSet once it is all available.
            save_state(self.cluster, record, BlueGreenState(new_hash=template_hash))
            return CanaryPass(wrote=True)
        stable_hash = pod_hashes.get(stable.name, "")
        self._select(record, settings.active_service, bev.ServiceRole.ACTIVE, stable_hash, stable.name)
        save_state(
            self.cluster,
            record,
            BlueGreenState(new_hash=template_hash, stable=stable.name, stable_pod_hash=stable_hash),
        )
        self.emit(
            bev.BlueGreenStarted(
                workload=self.name,
                stable=stable.name,
                active_service=settings.active_service,
                preview_service=settings.preview_service or "",
            )
        )
        tell(
            self.cluster,
            record,
            reason="BlueGreenStarted",
            message=f"new revision started beside ReplicaSet {stable.name}, which the active Service "
            f"{settings.active_service} keeps selecting until promote",
        )
        return CanaryPass(wrote=True)

    def _mark_ready(
        self,
        record: Record,
        settings: BlueGreen,
        state: BlueGreenState,
        decision: MarkReady,
        *,
        new: ManagedReplicaSet | None,
        now: float,
    ) -> CanaryPass:
        waits = settings.auto_promote_after is None
        after = dataclasses.replace(state, ready_at=now, paused=Mark(by="blue-green", at=now) if waits else None)
        save_state(self.cluster, record, after)
        size = decision.goal.canary
        self.emit(
            bev.PreviewReady(
                workload=self.name,
                replica_set=new.name if new is not None else "",
                available=size,
                replicas=size,
                waits=waits,
                auto_promote_in=settings.auto_promote_after,
            )
        )
        then = (
            "waiting for promote" if waits else f"promoting itself in {go_duration(settings.auto_promote_after or 0.0)}"
        )
        tell(self.cluster, record, reason="PreviewReady", message=f"preview ready {size}/{size}, {then}")
        return CanaryPass(wrote=True)

    def _switch(
        self, record: Record, settings: BlueGreen, state: BlueGreenState, *, new: ManagedReplicaSet, new_hash: str
    ) -> CanaryPass:
        """The active Service to the new ReplicaSet, then the switch's time on the record (never before the
        switch: a driver killed in between switches again, which changes nothing, and records a later time)."""
        self._select(
            record,
            settings.active_service,
            bev.ServiceRole.ACTIVE,
            new_hash,
            new.name,
            scale_down_in=None if state.first else settings.scale_down_delay,
        )
        save_state(self.cluster, record, dataclasses.replace(state, switched_at=time.time()))
        return CanaryPass(wrote=True)

    def _unwind(self, record: Record, settings: BlueGreen, state: BlueGreenState, decision: Unwind) -> CanaryPass:
        """Aborted: the active Service back on the stable ReplicaSet first, then the new one to 0."""
        self._select(record, settings.active_service, bev.ServiceRole.ACTIVE, state.stable_pod_hash, state.stable)
        if decision.reached:
            return CanaryPass(
                goal=decision.goal,
                stable=state.stable,
                holding=True,
                end=CanaryEnd(
                    outcome=RolloutOutcome.ABORTED,
                    message=f"blue-green aborted: the active Service {settings.active_service} selects ReplicaSet "
                    f"{state.stable} again, at {record.spec.replicas} replicas; start again with "
                    f"{next_steps.command('retry', self.name)}, or change the workload",
                ),
            )
        return CanaryPass(goal=decision.goal, stable=state.stable, holding=True)

    # --- the Services ---------------------------------------------------------------------

    def _selected(self, record: Record, service: str) -> str:
        if service not in self._selects:
            self._selects[service] = services.selected_hash(
                self.cluster, namespace=record.namespace, service=service, workload=self.name
            )
        return self._selects[service]

    def _select(
        self,
        record: Record,
        service: str,
        role: bev.ServiceRole,
        pod_hash: str,
        replica_set: str,
        *,
        scale_down_in: float | None = None,
    ) -> None:
        """Point ``service`` at ``replica_set``'s pods unless it already selects them; reported when it changed."""
        before = self._selected(record, service)
        if before == pod_hash or not pod_hash:
            return
        services.select(
            self.cluster, namespace=record.namespace, service=service, workload=self.name, pod_template_hash=pod_hash
        )
        self._selects[service] = pod_hash
        self.emit(
            bev.ServiceSwitched(
                workload=self.name,
                service=service,
                role=role,
                replica_set=replica_set,
                pod_template_hash=pod_hash,
                previous_hash=before,
                scale_down_in=scale_down_in,
            )
        )
        tell(
            self.cluster,
            record,
            reason="ServiceSwitched",
            message=f"{role.value} Service {service} selects ReplicaSet {replica_set} (pod-template-hash {pod_hash})"
            + (f", was {before}" if before else ""),
        )
