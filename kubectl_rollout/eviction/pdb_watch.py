"""Waiting for a PodDisruptionBudget to have room, instead of sleeping blindly.

One watch over all PDBs serves every blocked pod. Waiters queue per PDB in
arrival order, and each version of a PDB's status admits at most
``disruptionsAllowed`` of them: the API server decrements the budget in the
same write that accepts an eviction, so a new status version arrives before
the next disruption is possible. This spares the thundering herd of every
blocked pod retrying at once. The API server still decides; a waiter let
through and refused again simply queues again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubectl_rollout.kube.label_selectors import selector_matches
from kubectl_rollout.kube.pods import is_ready
from kubectl_rollout.kube.watched_collection import Key, WatchedCollection


def has_room(pdb: Any) -> bool:
    status = pdb.status
    if status is None:
        return False
    current = (status.observed_generation or 0) >= (pdb.metadata.generation or 0)
    return current and (status.disruptions_allowed or 0) > 0


def unhealthy_pod_may_go(pdb: Any, pod: Any) -> str | None:
    """Why the API server would evict this unready pod whatever the budget says, or None.

    Mirrors the eviction subresource: an unready pod does not count as healthy,
    so it may go when the PDB says AlwaysAllow, or (the default, IfHealthyBudget)
    when the application is not disrupted right now.
    """
    if is_ready(pod):
        return None
    if pdb.spec.unhealthy_pod_eviction_policy == "AlwaysAllow":
        return "pod is not Ready and the PDB's unhealthyPodEvictionPolicy is AlwaysAllow"
    status = pdb.status
    if (
        status is not None
        and (status.desired_healthy or 0) > 0
        and (status.current_healthy or 0) >= (status.desired_healthy or 0)
    ):
        return "pod is not Ready and the PDB has all the healthy pods it needs (IfHealthyBudget)"
    return None


def blocks(pdb: Any, pod: Any) -> bool:
    """Whether the PDB, as last seen, would refuse evicting this pod now."""
    return unhealthy_pod_may_go(pdb, pod) is None and not has_room(pdb)


class Admission(Protocol):
    """A waiter let through a PDB's line, to be told whether the eviction it made was accepted."""

    def __call__(self, *, accepted: bool) -> None: ...


@dataclass
class _Queue:
    waiters: list[object] = field(default_factory=list)
    #: the PDB resourceVersion the admissions below were counted against
    version: str | None = None
    admitted: int = 0


class PdbWatch:
    def __init__(self, collection: WatchedCollection) -> None:
        self.collection = collection
        self._queues: dict[Key, _Queue] = {}

    def get(self, namespace: str, name: str) -> Any | None:
        return self.collection.get((namespace, name))

    def selecting(self, pod: Any) -> list[Any]:
        """The PDBs whose selector matches the pod, as the eviction subresource finds them."""
        return [
            pdb
            for pdb in self.collection.snapshot()
            if pdb.metadata.namespace == pod.metadata.namespace
            and selector_matches(pdb.spec.selector, pod.metadata.labels)
        ]

    def wait_for_room(
        self,
        namespace: str,
        name: str,
        *,
        timeout: float | None,
        cancel: threading.Event | None,
    ) -> Admission | None:
        """Wait in line until the PDB may allow one more disruption.

        Returns a function to call with the eviction's outcome (``accepted=``),
        or None on timeout/cancel. A deleted PDB no longer blocks anything.
        """
        key = (namespace, name)
        me = object()
        with self.collection.condition:
            queue = self._queues.setdefault(key, _Queue())
            queue.waiters.append(me)

        def my_turn(collection: WatchedCollection) -> bool:
            pdb = collection.objects_locked().get(key)
            if pdb is None:
                return True
            if queue.version != pdb.metadata.resource_version:
                queue.version, queue.admitted = pdb.metadata.resource_version, 0
            if not has_room(pdb):
                return False
            room = (pdb.status.disruptions_allowed or 0) - queue.admitted
            return queue.waiters.index(me) < room

        admitted = self.collection.wait_until(my_turn, timeout, cancel)
        with self.collection.condition:
            queue.waiters.remove(me)
            if not admitted:
                return None
            queue.admitted += 1
            version = queue.version

        def done(*, accepted: bool) -> None:
            # Refused after all: give the admission back if the status it was
            # counted against is still the current one.
            if accepted:
                return
            with self.collection.condition:
                if queue.version == version and queue.admitted > 0:
                    queue.admitted -= 1
                self.collection.condition.notify_all()

        return done
