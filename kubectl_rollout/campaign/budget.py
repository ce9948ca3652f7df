"""How many nodes a campaign may have out at once: a count, or a percentage of the nodes it selected.

A node is *out* from its cordon until it is done (drained, soaked, its after-hook run and uncordoned), skipped
or kept. The budget caps the size of a wave, since a whole wave is cordoned before it drains.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_BUDGET = re.compile(r"(\d{1,9})(%?)")


@dataclass(frozen=True, kw_only=True)
class Budget:
    """``--budget``: ``count`` nodes, or ``percent`` of the nodes in scope."""

    count: int = 0
    percent: int = 0

    def allowed(self, total: int) -> int:
        """Nodes out at once among ``total``. A percentage rounds *up*, as karpenter's NodePool budgets do
        since v1 (``Budget.GetAllowedDisruptions`` scales ``nodes: 10%`` with
        ``intstr.GetScaledValueFromIntOrPercent(..., roundUp=true)``): 5 % of 10 nodes is 1 node, not 0, so a
        small pool is never blocked by a budget meant for a large one. Never more than ``total``, and at least 1
        whenever there is a node at all."""
        if total <= 0:
            return 0
        if self.percent:
            return min(total, max(1, math.ceil(self.percent * total / 100)))
        return min(total, self.count)

    def __str__(self) -> str:
        return f"{self.percent}%" if self.percent else str(self.count)


def parse_budget(text: str, *, flag: str = "--budget") -> Budget:
    """``"3"`` or ``"20%"``; a ``ValueError`` that says what is accepted otherwise."""
    match = _BUDGET.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{flag} {text!r} is not a count or a percentage; e.g. {flag} 2 or {flag} 20%")
    value, percent = int(match.group(1)), bool(match.group(2))
    if value == 0:
        raise ValueError(f"{flag} {text!r} lets no node out at a time, so nothing would ever drain; give 1 or more")
    if percent and value > 100:
        raise ValueError(f"{flag} {text!r} is more than 100%; give a percentage from 1% to 100%")
    return Budget(percent=value) if percent else Budget(count=value)
