"""Marking nodes unschedulable and back, as ``kubectl cordon`` / ``uncordon`` do."""

from __future__ import annotations

from typing import Any

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster


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
