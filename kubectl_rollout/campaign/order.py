"""In which order a campaign takes its nodes: as given, or the least loaded first.

Least loaded first (fewest pods to evict, then name) makes the first waves quick and frees room early for the
pods of the busier nodes that follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_rollout.jobs.spec import NodeOrder

#: the well-known label of a node's zone
ZONE_LABEL = "topology.kubernetes.io/zone"


@dataclass(frozen=True, kw_only=True)
class CandidateNode:
    """What planning needs of one node."""

    name: str
    #: its topology.kubernetes.io/zone; "" when it has none
    zone: str = ""
    #: pods the drain would remove from it
    load: int = 0


def ordered(nodes: Sequence[CandidateNode], order: NodeOrder) -> list[CandidateNode]:
    if order is NodeOrder.GIVEN:
        return list(nodes)
    return sorted(nodes, key=lambda n: (n.load, n.name))
