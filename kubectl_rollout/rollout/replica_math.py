"""How many replicas each ReplicaSet gets next: the Deployment controller's arithmetic, as pure functions.

Ported from the behaviour of kubernetes/kubernetes pkg/controller/deployment
(rolling.go, sync.go, util/deployment_util.go) and apimachinery's intstr:

* maxSurge given as a percentage rounds up, maxUnavailable rounds down; when
  both resolve to 0, maxUnavailable becomes 1 (``resolve_fenceposts``);
* the new ReplicaSet grows up to replicas + maxSurge pods in all
  (``new_replica_set_size``);
* old ReplicaSets shrink, unhealthy replicas first, oldest ReplicaSet first,
  never below replicas - maxUnavailable available (``old_replica_set_sizes``);
* a change of replicas mid-rollout is spread over the active ReplicaSets in
  proportion to their size, rounding half away from zero (``proportional_sizes``).

Numbers in, numbers out: no API objects, no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

IntOrPercent = int | str

_PERCENT = re.compile(r"^(-?\d+)%$")


@dataclass(frozen=True, kw_only=True)
class ReplicaSetState:
    """What the arithmetic needs to know about one ReplicaSet."""

    name: str
    #: spec.replicas
    replicas: int
    #: status.availableReplicas, as the ReplicaSet controller reports it
    available: int = 0
    #: creation time (any monotonic number); ties are broken by name, as upstream
    created: float = 0.0
    #: the deployment.kubernetes.io/max-replicas annotation: replicas + maxSurge when it was last scaled
    max_replicas: int | None = None


def round_half_away_from_zero(value: float) -> int:
    """Go's math.Round. Python's round() goes to the even neighbour (round(2.5) == 2); the controller gets 3."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def scaled_value(value: IntOrPercent, total: int, *, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, "N%" of ``total`` rounded up or down."""
    if isinstance(value, bool):
        raise ValueError(f"invalid value {value!r}: neither an integer nor a percentage")
    if isinstance(value, int):
        return value
    found = _PERCENT.match(value)
    if found is None:
        raise ValueError(f"invalid value {value!r}: a string must be a percentage like 25%")
    exact = int(found.group(1)) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def resolve_fenceposts(
    max_surge: IntOrPercent | None, max_unavailable: IntOrPercent | None, desired: int
) -> tuple[int, int]:
    """(surge, unavailable) for ``desired`` replicas; both zero means unavailable 1."""
    surge = scaled_value(0 if max_surge is None else max_surge, desired, round_up=True)
    unavailable = scaled_value(0 if max_unavailable is None else max_unavailable, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        # Rounding down may turn a non-zero percentage into 0; some progress must stay possible.
        unavailable = 1
    return surge, unavailable


def max_surge(replicas: int, surge: IntOrPercent | None, unavailable: IntOrPercent | None) -> int:
    return resolve_fenceposts(surge, unavailable, replicas)[0]


def max_unavailable(
    replicas: int, surge: IntOrPercent | None, unavailable: IntOrPercent | None, *, rolling: bool = True
) -> int:
    """MaxUnavailable: 0 for Recreate (no replica may be missing for the Available condition) or 0 replicas."""
    if replicas == 0 or not rolling:
        return 0
    return min(resolve_fenceposts(surge, unavailable, replicas)[1], replicas)


def new_replica_set_size(
    *, replicas: int, surge: IntOrPercent, total_replicas: int, new_replicas: int, recreate: bool = False
) -> int:
    """reconcileNewReplicaSet with NewRSNewReplicas: the new ReplicaSet's next size.

    ``total_replicas`` counts spec.replicas over every ReplicaSet, new included.
    A new ReplicaSet larger than the Deployment shrinks to it at once.
    """
    if new_replicas >= replicas:
        return replicas
    if recreate:
        return replicas
    most = replicas + scaled_value(surge, replicas, round_up=True)
    if total_replicas >= most:
        return new_replicas
    return new_replicas + min(most - total_replicas, replicas - new_replicas)


def _oldest_first(replica_sets: Iterable[ReplicaSetState]) -> list[ReplicaSetState]:
    return sorted(replica_sets, key=lambda rs: (rs.created, rs.name))


def old_replica_set_sizes(
    *,
    replicas: int,
    surge: IntOrPercent | None,
    unavailable: IntOrPercent | None,
    new: ReplicaSetState,
    old: Sequence[ReplicaSetState],
) -> dict[str, int]:
    """reconcileOldReplicaSets: the next size of each old ReplicaSet during a rolling update.

    First replicas that are not available are removed (cleanupUnhealthyReplicas),
    then available ones while more than replicas - maxUnavailable stay available
    (scaleDownOldReplicaSetsForRollingUpdate); oldest ReplicaSet first, both times.
    Returns only the ReplicaSets whose size changes.
    """
    original = {rs.name: rs.replicas for rs in old}
    old_total = sum(original.values())
    if old_total == 0:
        return {}
    least_available = replicas - max_unavailable(replicas, surge, unavailable)
    all_total = old_total + new.replicas
    new_unavailable = new.replicas - new.available
    budget = all_total - least_available - new_unavailable
    if budget <= 0:
        return {}
    try:
        cleaned_sizes, _cleaned = cleanup_unhealthy_replicas(old, max_cleanup=budget)
    except StaleReplicaSetStatus:
        # Upstream's sync fails here and is retried later: no old ReplicaSet changes on a stale status.
        return {}
    after_cleanup = [
        ReplicaSetState(
            name=rs.name, replicas=cleaned_sizes.get(rs.name, rs.replicas), available=rs.available, created=rs.created
        )
        for rs in old
    ]
    scaled = scale_down_old_for_rolling_update(
        replicas=replicas, surge=surge, unavailable=unavailable, new=new, old=after_cleanup
    )
    sizes = {**original, **cleaned_sizes, **scaled}
    return {name: size for name, size in sizes.items() if size != original[name]}


class StaleReplicaSetStatus(Exception):
    """An old ReplicaSet reports more available replicas than it has: its status lags its spec."""


def cleanup_unhealthy_replicas(old: Sequence[ReplicaSetState], *, max_cleanup: int) -> tuple[dict[str, int], int]:
    """cleanupUnhealthyReplicas: remove up to ``max_cleanup`` replicas that are not available, oldest ReplicaSet
    first. Returns (the sizes that change, how many were removed).

    Raises StaleReplicaSetStatus where upstream returns its "invalid request to scale down" error: an old
    ReplicaSet whose available count is above its size would otherwise be scaled *up*.
    """
    sizes: dict[str, int] = {}
    cleaned = 0
    for rs in _oldest_first(old):
        if cleaned >= max_cleanup:
            break
        if rs.replicas == 0 or rs.replicas == rs.available:
            continue
        step = min(max_cleanup - cleaned, rs.replicas - rs.available)
        if step < 0:
            raise StaleReplicaSetStatus(
                f"when cleaning up unhealthy replicas, got invalid request to scale down {rs.name} "
                f"{rs.replicas} -> {rs.replicas - step}"
            )
        sizes[rs.name] = rs.replicas - step
        cleaned += step
    return sizes, cleaned


def scale_down_old_for_rolling_update(
    *,
    replicas: int,
    surge: IntOrPercent | None,
    unavailable: IntOrPercent | None,
    new: ReplicaSetState,
    old: Sequence[ReplicaSetState],
) -> dict[str, int]:
    """scaleDownOldReplicaSetsForRollingUpdate: shrink old ReplicaSets, oldest first, while more than
    replicas - maxUnavailable replicas are available (new and old). Returns the sizes that change."""
    least_available = replicas - max_unavailable(replicas, surge, unavailable)
    available = new.available + sum(rs.available for rs in old)
    if available <= least_available:
        return {}
    to_remove = available - least_available
    removed = 0
    sizes: dict[str, int] = {}
    for rs in _oldest_first(old):
        if removed >= to_remove:
            break
        if rs.replicas == 0:
            continue
        step = min(rs.replicas, to_remove - removed)
        sizes[rs.name] = rs.replicas - step
        removed += step
    return sizes


def replicas_annotations_need_update(
    *, desired: int | None, most: int | None, replicas: int, max_replicas: int
) -> bool:
    """ReplicasAnnotationsNeedUpdate: a ReplicaSet's desired-/max-replicas annotations (``desired``, ``most``;
    None when missing) differ from what the workload's size and maxSurge give now."""
    return desired != replicas or most != max_replicas


def replica_set_fraction(rs: ReplicaSetState, *, replicas: int, surge: int, status_replicas: int) -> int:
    """getReplicaSetFraction: how many replicas ``rs`` gains (or loses) when the Deployment is resized."""
    if replicas == 0:
        return -rs.replicas
    most = replicas + surge
    before = rs.max_replicas
    if not before:
        # Annotation missing or tampered with: fall back to the Deployment's current size.
        before = status_replicas
        if before == 0:
            return 0
    return round_half_away_from_zero(rs.replicas * most / before) - rs.replicas


def proportional_sizes(
    *,
    replicas: int,
    surge: IntOrPercent | None,
    unavailable: IntOrPercent | None,
    replica_sets: Sequence[ReplicaSetState],
    status_replicas: int,
) -> dict[str, int]:
    """The rolling-update branch of the controller's ``scale``: spread a resize over the active ReplicaSets.

    ``replica_sets`` are the active ones (replicas > 0), new and old;
    ``status_replicas`` is the Deployment's status.replicas. Returns every
    active ReplicaSet's new size.
    """
    active = [rs for rs in replica_sets if rs.replicas > 0]
    surge_value = max_surge(replicas, surge, unavailable)
    allowed = replicas + surge_value if replicas > 0 else 0
    to_add = allowed - sum(rs.replicas for rs in active)
    if to_add > 0:
        # Largest first; among equals the newest gets the rounding leftovers.
        ordered = sorted(active, key=lambda rs: (-rs.replicas, -rs.created, _reverse(rs.name)))
    elif to_add < 0:
        # Largest first; among equals the oldest gives up replicas first.
        ordered = sorted(active, key=lambda rs: (-rs.replicas, rs.created, rs.name))
    else:
        ordered = list(active)

    sizes: dict[str, int] = {}
    added = 0
    for rs in ordered:
        if to_add == 0 or to_add == added:
            sizes[rs.name] = rs.replicas
            continue
        fraction = replica_set_fraction(rs, replicas=replicas, surge=surge_value, status_replicas=status_replicas)
        allowed_now = to_add - added
        proportion = min(fraction, allowed_now) if to_add > 0 else max(fraction, allowed_now)
        sizes[rs.name] = rs.replicas + proportion
        added += proportion
    if ordered and to_add != 0:
        first = ordered[0].name
        sizes[first] = max(0, sizes[first] + to_add - added)
    return sizes


def scale_sizes(
    *,
    replicas: int,
    surge: IntOrPercent | None,
    unavailable: IntOrPercent | None,
    new: ReplicaSetState | None,
    new_desired: int | None,
    old: Sequence[ReplicaSetState],
    status_replicas: int,
    rolling: bool = True,
) -> dict[str, int]:
    """The controller's ``scale``: sizes after spec.replicas changed (only the ReplicaSets that change).

    One active ReplicaSet (or none: the newest) simply takes the new size; a
    saturated new ReplicaSet (``new_desired`` is its desired-replicas
    annotation) lets the old ones go to 0; otherwise a rolling update spreads
    the difference proportionally. Recreate never scales proportionally.
    """
    before = {rs.name: rs.replicas for rs in ([new] if new is not None else []) + list(old)}
    written = scale_writes(
        replicas=replicas,
        surge=surge,
        unavailable=unavailable,
        new=new,
        new_desired=new_desired,
        old=old,
        status_replicas=status_replicas,
        rolling=rolling,
    )
    return {name: size for name, size in written.items() if size != before[name]}


def scale_writes(
    *,
    replicas: int,
    surge: IntOrPercent | None,
    unavailable: IntOrPercent | None,
    new: ReplicaSetState | None,
    new_desired: int | None,
    old: Sequence[ReplicaSetState],
    status_replicas: int,
    rolling: bool = True,
) -> dict[str, int]:
    """Every ReplicaSet the controller's ``scale`` hands to scaleReplicaSet, with the size it gets.

    In the proportional branch that is every active ReplicaSet, resized or not:
    scaleReplicaSet rewrites the desired-/max-replicas annotations of each, so
    that the next sync no longer sees a scaling event. Elsewhere only the
    ReplicaSets whose size changes are written.
    """
    everyone = ([new] if new is not None else []) + list(old)
    active = [rs for rs in everyone if rs.replicas > 0]
    if len(active) <= 1:
        if active:
            target = active[0]
        elif new is not None:
            target = new
        elif old:
            target = max(old, key=lambda rs: (rs.created, rs.name))
        else:
            return {}
        return {} if target.replicas == replicas else {target.name: replicas}
    if is_saturated(new, desired=new_desired, replicas=replicas):
        return {rs.name: 0 for rs in old if rs.replicas > 0}
    if not rolling:
        return {}
    return proportional_sizes(
        replicas=replicas, surge=surge, unavailable=unavailable, replica_sets=active, status_replicas=status_replicas
    )


def is_saturated(rs: ReplicaSetState | None, *, desired: int | None, replicas: int) -> bool:
    """IsSaturated: the new ReplicaSet has, wants (desired-replicas annotation ``desired``) and makes available
    exactly the workload's replicas."""
    return rs is not None and rs.replicas == replicas and desired == replicas and rs.available == replicas


def _reverse(name: str) -> tuple[int, ...]:
    """A key that sorts names in descending order."""
    return (*(-ord(ch) for ch in name), 1)
