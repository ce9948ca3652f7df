"""``--rate N/PERIOD``: at most N nodes started within any PERIOD (karpenter#2909's "<= 30 % in 10 min").

Pure: the past starts and the clock in, the earliest time the next nodes may start out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_rollout.kube.durations import parse_duration

_RATE = re.compile(r"(\d{1,9})/(.+)")


@dataclass(frozen=True, kw_only=True)
class Rate:
    nodes: int
    period: float

    def __str__(self) -> str:
        return f"{self.nodes}/{self.period:g}s"

    def earliest_start(self, *, starts: Sequence[float], count: int, now: float) -> float:
        """When ``count`` more nodes may start, given the times (epoch seconds) earlier nodes started.

        The window slides: a start at ``t`` stops counting at ``t + period``. ``count`` larger than
        ``nodes`` is taken as ``nodes`` (the waves are cut to fit, ``waves.plan_waves``).
        """
        count = min(count, self.nodes)
        recent = sorted(t for t in starts if t > now - self.period)
        excess = len(recent) + count - self.nodes
        if excess <= 0:
            return now
        # the oldest ``excess`` starts must age out of the window first
        return max(now, recent[excess - 1] + self.period)


def parse_rate(text: str) -> Rate:
    """``"3/10m"``: 3 nodes per 10 minutes; a ``ValueError`` saying what is accepted otherwise."""
    match = _RATE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"--rate {text!r} is not N/PERIOD; e.g. --rate 3/10m (at most 3 nodes start per 10 minutes)")
    nodes = int(match.group(1))
    try:
        period = parse_duration(match.group(2))
    except ValueError as err:
        raise ValueError(f"--rate {text!r}: {err}") from err
    if nodes == 0 or period <= 0:
        raise ValueError(f"--rate {text!r} would never start a node; give N >= 1 and a PERIOD above 0")
    return Rate(nodes=nodes, period=period)
