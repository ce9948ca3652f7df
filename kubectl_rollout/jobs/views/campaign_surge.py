"""Which nodes of a running campaign a surge request is for when none is named (the screen's ``s``,
``jobs surge ID``): those of the current wave draining now, a PodDisruptionBudget holding a pod whose workload
a surge can raise (the Drain screen's test: ``blockers.pdb_blocks``' ``surgeable``), not asked for already.

Pure: a ``CampaignView`` in, nodes and their workloads out.
"""

from __future__ import annotations

from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.jobs.views.blockers import pdb_blocks
from kubectl_rollout.jobs.views.campaign import CampaignNodeState, CampaignView


def surge_targets(view: CampaignView) -> dict[str, tuple[WorkloadRef, ...]]:
    """Each node a surge request is for now, in the wave's order, with the workloads a surge would raise there."""
    if view.campaign_finished is not None:
        return {}
    owners = view.owner_facts.owners
    wanted: dict[str, dict[WorkloadRef, None]] = {}
    for block in pdb_blocks(view.pods, view.pdb_pods, surge=view.owner_facts):
        for pod in block.pods:
            owner = owners.get(str(pod.pod))
            node = pod.pod.node
            if owner is None or owner not in block.surgeable or node in view.surge_requested:
                continue
            if node in view.wave_nodes and view.states.get(node) is CampaignNodeState.DRAINING:
                wanted.setdefault(node, {})[owner] = None
    return {node: tuple(sorted(wanted[node])) for node in view.wave_nodes if node in wanted}
