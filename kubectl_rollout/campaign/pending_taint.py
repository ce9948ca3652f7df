"""The soft taint on the nodes a campaign has still to drain, so that its evicted pods do not land there.

A wave is cordoned whole, but the later waves' nodes are not: without this, the pods evicted in wave 1 land on
the nodes of waves 2..n and are evicted again there (a 30-node pool counted 1.4 evictions per pod). Cordoning
the whole pool would leave pods Pending when the rest of the cluster is full; a ``PreferNoSchedule`` taint only
makes the scheduler rank those nodes last (TaintToleration scoring), so a pod still lands there when nothing
else fits.

Which node carries it when is pure (``still_to_come``); ``PendingTaints`` puts it on and takes it off, and
remembers which nodes it tainted so that the campaign's end takes off exactly those. The taint's value is the
job id: a resumed campaign (the same job) takes its taints over; only ours are lifted, never another key.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.node_taints import Taint, edit_taints, with_taint, without_taint
from kubectl_rollout.kube.record_names import CAMPAIGN_TAINT, CAMPAIGN_TAINT_EFFECT

#: the value when a job has no id (a spec run outside the job loop): a taint value must not be empty to name it
NO_JOB = "campaign"


def pending_taint(job_id: str | None) -> Taint:
    return Taint(key=CAMPAIGN_TAINT, value=job_id or NO_JOB, effect=CAMPAIGN_TAINT_EFFECT)


def still_to_come(waves: Sequence[Sequence[str]], *, finished: Collection[str]) -> tuple[str, ...]:
    """The nodes of ``waves`` (in order) the campaign has not finished with: those that carry the taint while
    it runs. A node cut off half-way (the window's end stopped its drain) is still to come."""
    return tuple(dict.fromkeys(n for wave in waves for n in wave if n not in finished))


class PendingTaints:
    """The nodes this campaign tainted; puts the taint on and takes it off, saying so through ``emit``."""

    def __init__(self, cluster: Cluster, *, job_id: str | None, emit: Callable[[Event], None]) -> None:
        self.cluster = cluster
        self.taint = pending_taint(job_id)
        self.emit = emit
        #: the nodes that may carry our taint: lifted at the end
        self.tainted: set[str] = set()
        #: those a ``PendingTainted`` named since the last lift (a window's opening says only what changed)
        self.announced: set[str] = set()

    def put_on(self, nodes: Iterable[str]) -> None:
        """Taint ``nodes``; a node gone meanwhile is passed over, one already tainted by this job (a resumed
        job) is taken over as it is."""
        carrying: list[str] = []
        for node in nodes:
            seen: list[bool] = []

            def edit(taints: list[dict[str, Any]], seen: list[bool] = seen) -> list[dict[str, Any]] | None:
                seen.append(True)  # the node exists: after the write (or without one) it carries the taint
                return with_taint(taints, self.taint)

            changed = edit_taints(self.cluster, node, edit)
            if seen and (changed or node not in self.announced):
                carrying.append(node)
            if seen:
                self.tainted.add(node)
                self.announced.add(node)
        if carrying:
            self.emit(ev.PendingTainted(nodes=tuple(carrying), taint=str(self.taint)))

    def lift(self, node: str) -> bool:
        """Take our taint off ``node`` (the campaign is finished with it); True when it was there."""
        self.tainted.discard(node)
        return edit_taints(
            self.cluster,
            node,
            lambda taints: without_taint(taints, key=self.taint.key, effect=self.taint.effect, value=self.taint.value),
        )

    def lift_all(self, *, reason: str) -> tuple[str, ...]:
        """Take our taint off every node still carrying it (the campaign's end, or a wait for a window)."""
        lifted = tuple(n for n in sorted(self.tainted) if self.lift(n))
        self.announced.clear()
        if lifted:
            self.emit(ev.PendingUntainted(nodes=lifted, reason=reason))
        return lifted
