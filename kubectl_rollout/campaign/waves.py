"""Cutting a campaign's nodes into waves: within the budget, the rate, and one zone at a time if asked.

A wave is cordoned as a whole before it drains (so an evicted pod never lands on a node next in line), so a
wave's size is what the budget lets out at once. ``--per-zone`` keeps every wave in one zone and finishes a
zone before the next one starts (karpenter#1902's "one zone at a time"); ``--zone-budget`` caps the nodes of
any one zone in a wave, the global budget still applying.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_rollout.campaign.budget import Budget
from kubectl_rollout.campaign.order import CandidateNode


@dataclass(frozen=True, kw_only=True)
class PlannedWave:
    #: 1, 2, ...
    index: int
    nodes: tuple[CandidateNode, ...]

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n.zone for n in self.nodes))


def wave_size(*, budget: Budget, total: int, rate_nodes: int | None) -> int:
    """Nodes per wave: the budget over ``total``, cut to the rate's N (a wave starts all its nodes at once)."""
    size = budget.allowed(total)
    return min(size, rate_nodes) if rate_nodes else size


def plan_waves(
    nodes: Sequence[CandidateNode],
    *,
    budget: Budget,
    per_zone: bool = False,
    zone_budget: Budget | None = None,
    rate_nodes: int | None = None,
) -> list[PlannedWave]:
    """The waves, in order, keeping ``nodes``' order within each zone (and across zones, without
    ``per_zone``). Percentages are of all ``nodes``; a zone budget's, of that zone's nodes."""
    if not nodes:
        return []
    size = wave_size(budget=budget, total=len(nodes), rate_nodes=rate_nodes)
    zone_totals: dict[str, int] = {}
    for node in nodes:
        zone_totals[node.zone] = zone_totals.get(node.zone, 0) + 1
    zone_caps = {zone: zone_budget.allowed(total) if zone_budget else total for zone, total in zone_totals.items()}
    groups: list[list[CandidateNode]]
    if per_zone:
        by_zone: dict[str, list[CandidateNode]] = {}
        for node in nodes:
            by_zone.setdefault(node.zone, []).append(node)
        groups = list(by_zone.values())
    else:
        groups = [list(nodes)]
    waves: list[list[CandidateNode]] = []
    for group in groups:
        left = list(group)
        while left:
            wave: list[CandidateNode] = []
            taken: dict[str, int] = {}
            rest: list[CandidateNode] = []
            for node in left:
                if len(wave) < size and taken.get(node.zone, 0) < zone_caps[node.zone]:
                    wave.append(node)
                    taken[node.zone] = taken.get(node.zone, 0) + 1
                else:
                    rest.append(node)
            waves.append(wave)
            left = rest
    return [PlannedWave(index=i, nodes=tuple(w)) for i, w in enumerate(waves, start=1)]
