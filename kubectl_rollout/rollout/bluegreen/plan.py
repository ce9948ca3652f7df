"""What a blue-green rollout of a workload holds at each point, before it runs (``apply --plan``).

Blue-green does not roll: the new ReplicaSet comes up at its preview size
beside the old one at full size, so the workload holds replicas + the preview
from the start until the old one is scaled down the delay after the switch.
That peak, not maxSurge's, is what the cluster must have room for.

Pure: the settings and the replica count in, rows out.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_rollout.kube.durations import go_duration
from kubectl_rollout.rollout.bluegreen.format import BlueGreen


@dataclass(frozen=True, kw_only=True)
class PlanRow:
    when: str
    new: int
    old: int

    @property
    def pods(self) -> int:
        return self.new + self.old


def plan_rows(settings: BlueGreen, *, replicas: int) -> tuple[PlanRow, ...]:
    preview = settings.preview_size(replicas)
    if settings.auto_promote_after is None:
        promote = "promote: the active Service switches"
    elif settings.auto_promote_after == 0:
        promote = "auto-promote: the active Service switches"
    else:
        promote = f"auto-promote after {go_duration(settings.auto_promote_after)}: the switch"
    return (
        PlanRow(
            when="preview, waiting" if settings.auto_promote_after is None else "preview", new=preview, old=replicas
        ),
        PlanRow(when=promote, new=replicas, old=replicas),
        PlanRow(when=f"{go_duration(settings.scale_down_delay)} after the switch", new=replicas, old=0),
    )
