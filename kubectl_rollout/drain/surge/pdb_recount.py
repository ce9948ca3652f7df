"""Getting a PDB counted again after a surge moved its workload's count.

The disruption controller recounts a PodDisruptionBudget on pod and PDB events only, never on a scale
change. A surge lowers its workload's count by one right after each eviction; when the evicted pod is gone
before the lowering lands (a pod that exits at once, a client far from the API server), no pod event follows
it, and the PDB keeps the count from before: ``disruptionsAllowed`` stays 0 although the lowered count leaves
room, and the next eviction waits out the safety-net backoff (16 s and more) instead of going at once.

An annotation on the PDB that says what the surge set is such an event, and tells whoever reads the PDB why
its expected count moves. The restore removes it; a killed drain's is removed with its leftover record.
Failing to write it never stops a drain: the eviction's own retry still follows the PDB, only slower.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.cluster_access import Cluster

log = logging.getLogger(__name__)

#: on a PDB whose workload a drain surges: "KIND/NAME COUNT (drain ID)", the count the drain set last
SURGE_COUNT = "rollout-plus.kubectl.io/surge-count"

BudgetKey = tuple[str, str]


def count_note(workload: str, replicas: int, drain: str) -> str:
    return f"{workload} {replicas} (drain {drain})"


def note_count(cluster: Cluster, budgets: Iterable[BudgetKey], *, workload: str, replicas: int, drain: str) -> None:
    """Write the surge's new count on each PDB of the workload: the disruption controller counts it again."""
    _annotate(cluster, budgets, count_note(workload, replicas, drain))


def clear_count(cluster: Cluster, budgets: Iterable[BudgetKey]) -> None:
    """Remove the note once the count is restored (which gets the PDB counted again one last time)."""
    _annotate(cluster, budgets, None)


def clear_left_by(cluster: Cluster, namespace: str, drain: str) -> None:
    """Remove the notes a killed drain left on the PDBs of a namespace (with its leftover surge record)."""
    try:
        budgets = cluster.policy.list_namespaced_pod_disruption_budget(namespace).items
    except ApiException as err:
        log.info("could not list the PDBs of %s to remove drain %s's notes: %s", namespace, drain, err.reason)
        return
    left = [(namespace, pdb.metadata.name) for pdb in budgets if _noted_by(pdb, drain)]
    clear_count(cluster, left)


def _noted_by(pdb: Any, drain: str) -> bool:
    note = str((pdb.metadata.annotations or {}).get(SURGE_COUNT, ""))
    return note.endswith(f"(drain {drain})")


def _annotate(cluster: Cluster, budgets: Iterable[BudgetKey], value: str | None) -> None:
    patch = {"metadata": {"annotations": {SURGE_COUNT: value}}}
    for namespace, name in budgets:
        try:
            cluster.policy.patch_namespaced_pod_disruption_budget(name, namespace, patch)
        except ApiException as err:
            # A PDB deleted meanwhile has nothing left to count; a user who may not patch PDBs (`uncordon`
            # removing a killed drain's note) leaves a note that only tells the past.
            level = logging.INFO if err.status in (403, 404) else logging.WARNING
            log.log(level, "could not write the surge count on PDB %s/%s: %s", namespace, name, err.reason)
        except Exception as err:  # a lost connection: the eviction this follows must not fail for a note
            log.warning("could not write the surge count on PDB %s/%s: %s", namespace, name, err)
