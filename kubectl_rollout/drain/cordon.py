"""Marking nodes unschedulable and back, as ``kubectl cordon`` / ``uncordon`` do; and, with the uncordon, the
soft taint a campaign puts on the nodes it has still to drain (``kube.record_names.CAMPAIGN_TAINT``)."""

from __future__ import annotations

from typing import Any

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.node_taints import edit_taints, without_taint
from kubectl_rollout.kube.record_names import CAMPAIGN_TAINT, CAMPAIGN_TAINT_EFFECT


def is_cordoned(node: Any) -> bool:
    return bool(node.spec and node.spec.unschedulable)


def set_cordoned(cluster: Cluster, node: Any, *, cordoned: bool, dry_run: str = "none") -> bool:
    """Cordon or uncordon ``node``; returns False when it already was. No write in client dry-run."""
    if is_cordoned(node) == cordoned:
        return False
    if dry_run == "client":
        return True
    # A strategic merge patch of the one field, as kubectl sends; null removes
    # it, which is what "schedulable" looks like on a node nobody cordoned.
    body = {"spec": {"unschedulable": True if cordoned else None}}
    call_with_retry(cluster.core.patch_node, node.metadata.name, body, dry_run="All" if dry_run == "server" else None)
    return True


def lift_campaign_taint(cluster: Cluster, node: str, *, dry_run: str = "none") -> str:
    """Take a campaign's soft taint off ``node``, whichever campaign set it: an uncordon puts the node back
    in service, and a campaign killed before its end leaves its taint behind. Returns the campaign (job id)
    whose taint was there, "" when none was. Other taints are kept; no write in a dry run."""
    found: list[str] = []

    def edit(taints: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        found[:] = [str(t.get("value", "")) for t in taints if t.get("key") == CAMPAIGN_TAINT]
        if dry_run != "none":
            return None
        return without_taint(taints, key=CAMPAIGN_TAINT, effect=CAMPAIGN_TAINT_EFFECT)

    edit_taints(cluster, node, edit)
    return found[0] if found else ""
