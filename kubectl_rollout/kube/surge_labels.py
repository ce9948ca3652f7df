"""The three labels of a ``drain --surge`` record, named here because two layers read them.

The drain writes them on the object whose count it raises (a Deployment, or a
managed workload's ReplicaSet; ``kubectl_rollout.drain.surge_record``). A
managed workload's rollout driver drops them when it sets that ReplicaSet's
count itself: it can only be driving once the drain's Lease is gone, so the
record is a killed drain's leftover, and the count is the driver's again.
"""

from __future__ import annotations

ORIGINAL = "rollout-plus.kubectl.io/surge-original-replicas"
ADDED = "rollout-plus.kubectl.io/surge-added"
SURGED_BY = "rollout-plus.kubectl.io/surge-by"
SURGE_LABELS = (ORIGINAL, ADDED, SURGED_BY)
