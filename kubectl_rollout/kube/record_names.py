"""The names of the plugin's records in the cluster, which both ``drain`` and ``rollout`` read.

Named once, here below both, because drain and rollout may not import each other:

- a managed workload's record is the ConfigMap ``rollout-plus.NAME``
  (``rollout.record`` writes it); its rollout driver's Lease has the same name,
  and each of its ReplicaSets carries the label ``rollout-plus.kubectl.io/workload=NAME``.
  A drain that surges a managed workload reads that record, lists those
  ReplicaSets and holds that Lease (``drain.surge.managed``, ``drain.surge.leases``);
- a ``drain --surge`` record is three labels on the object whose count the drain
  raised (a Deployment, or a managed workload's ReplicaSet; ``drain.surge.record``).
  A managed workload's driver drops them when it sets that ReplicaSet's count
  itself (``rollout.replica_sets.scale``): it can only be driving once the
  drain's Lease is gone, so the record is a killed drain's leftover, and the
  count is the driver's again;
- a campaign's soft taint on the nodes it has still to drain (``campaign.pending_taint`` sets and lifts it);
  ``uncordon`` (the drain engine's) takes it off too, so a killed campaign's leftover goes with the node's
  return to service.
"""

from __future__ import annotations

#: the record ConfigMap's name is this prefix and the workload's; so is its driver's Lease
RECORD_PREFIX = "rollout-plus."
#: the label on every ReplicaSet of a managed workload, naming it
WORKLOAD_LABEL = "rollout-plus.kubectl.io/workload"

#: a surge record: the count before the surge
SURGE_ORIGINAL = "rollout-plus.kubectl.io/surge-original-replicas"
#: a surge record: how many replicas the surge added
SURGE_ADDED = "rollout-plus.kubectl.io/surge-added"
#: a surge record: the id of the drain job that surged
SURGED_BY = "rollout-plus.kubectl.io/surge-by"
SURGE_LABELS = (SURGE_ORIGINAL, SURGE_ADDED, SURGED_BY)

#: the taint a campaign puts on the nodes it has still to drain, its value the campaign's job id
CAMPAIGN_TAINT = "rollout-plus.io/campaign"
#: soft: the scheduler places a pod there only when no other node fits, so no pod is ever left Pending by it
CAMPAIGN_TAINT_EFFECT = "PreferNoSchedule"


def record_name(name: str) -> str:
    """The record ConfigMap of managed workload ``name``."""
    return RECORD_PREFIX + name


def driver_lease_name(name: str) -> str:
    """The Lease held by whoever drives managed workload ``name`` (its driver, or a drain surging it)."""
    return record_name(name)


def workload_of(owner_kind: str, owner_name: str) -> str | None:
    """The managed workload whose record is this controller owner (kind, name), or None."""
    if owner_kind != "ConfigMap" or not owner_name.startswith(RECORD_PREFIX):
        return None
    return owner_name[len(RECORD_PREFIX) :]
