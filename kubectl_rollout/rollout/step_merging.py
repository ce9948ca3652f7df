"""A small scale-down of the old ReplicaSets waits, briefly, while the ReplicaSet controller is busy with the workload.

The Deployment controller shrinks the old ReplicaSets by whatever the new
one's availability allows at each sync, and the driver does the same. Each
such step is one ReplicaSet write, and each write costs the ReplicaSet
controller a sync and a status write on top of its pod deletions; that
controller sends under kube-controller-manager's client limit (20 requests
a second by default), so a step of 2 pods costs it about as many extra
requests as a step of 20. When the new ReplicaSet's status reports its
availability a few pods at a time, the driver's steps follow it a few pods
at a time, and the whole rollout ends later by 50 ms for each request more.

So a scale-down smaller than a quarter of maxUnavailable waits while the
ReplicaSet controller still has pods of this workload to create or delete:
its deletions would queue behind that work anyway, and more availability
usually comes meanwhile, so the two steps go as one. It waits at most
``SMALL_STEP_WAIT`` seconds; a step as large as that quarter, or one taken
while nothing is pending, goes at once. Waiting only ever does less at a
time: maxSurge and maxUnavailable hold as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kubectl_rollout.rollout.plan import Action, ManagedReplicaSet, ScaleReplicaSet

#: the longest a small scale-down waits for more to come (seconds)
SMALL_STEP_WAIT = 1.0


def small_scale_down(
    actions: Sequence[Action], replica_sets: Sequence[ManagedReplicaSet], *, new: str | None, max_unavailable: int
) -> bool:
    """Whether ``actions`` only shrink old ReplicaSets, by fewer pods in all than a quarter of ``max_unavailable``
    (rounded up), while the ReplicaSet controller still has pods of the workload to create or delete (a
    ReplicaSet whose active pods differ from its size, or whose last resize it has not seen)."""
    if not actions:
        return False
    sizes = {rs.name: rs.replicas for rs in replica_sets}
    removed = 0
    for action in actions:
        if not isinstance(action, ScaleReplicaSet) or action.name == new or action.name not in sizes:
            return False
        if action.replicas >= sizes[action.name]:
            return False
        removed += sizes[action.name] - action.replicas
    if removed >= math.ceil(max_unavailable / 4):
        return False
    return any(rs.live != rs.replicas or rs.unobserved for rs in replica_sets)


class SmallStepWait:
    """The driver's wait for a small scale-down, from pass to pass."""

    def __init__(self) -> None:
        #: when the passes began to find a small scale-down (monotonic seconds), None since one found none
        self._since: float | None = None
        #: whether the last pass held its scale-down
        self._holding = False

    def holds(self, small: bool, now: float) -> bool:
        """Whether this pass holds its scale-down (``small``: ``small_scale_down`` says so); ``now`` monotonic.

        Once a small scale-down has waited its while, the small ones after it go at once until a pass finds none
        (the ReplicaSet controller stays busy with a workload whose steps all come small)."""
        if not small:
            self._since = None
            self._holding = False
            return False
        if self._since is None:
            self._since = now
        self._holding = now - self._since < SMALL_STEP_WAIT
        return self._holding

    def ends_at(self) -> float | None:
        """When the scale-down held now goes, whatever comes (monotonic seconds); None when none is held (the
        driver's loop then waits for the next change as usual)."""
        return self._since + SMALL_STEP_WAIT if self._holding and self._since is not None else None
