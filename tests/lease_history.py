"""A Lease's history, watched: every version a holder wrote, in the API server's order.

What a takeover is checked by: who held the Lease, and when each holder wrote it (the times as it wrote them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from watching import Follower

from kubectl_rollout.kube.cluster_access import Cluster


class LeaseHistory(Follower):
    """Every version of the Lease ``name`` (a workload's driver Lease, a restart's), as the watch delivered them:
    (holder, acquireTime, renewTime, leaseDurationSeconds), the times as the holders wrote them."""

    def __init__(self, cluster: Cluster, namespace: str, name: str) -> None:
        super().__init__()
        self.cluster, self.namespace, self.name = cluster, namespace, name
        self.versions: list[tuple[str, datetime, datetime, int]] = []
        #: how many times the Lease was deleted (given back)
        self.deletions = 0

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.coordination.list_namespaced_lease, {
            "namespace": self.namespace,
            "field_selector": f"metadata.name={self.name}",
        }

    def _seed(self, items: list[Any]) -> None:
        for lease in items:
            self._apply("ADDED", lease)

    def _apply(self, kind: str, lease: Any) -> None:
        spec = lease.spec
        if kind == "DELETED":
            self.deletions += 1
        elif spec.holder_identity:
            self.versions.append(
                (spec.holder_identity, spec.acquire_time, spec.renew_time, spec.lease_duration_seconds)
            )

    def start(self) -> LeaseHistory:
        self._follow()
        return self

    def stop(self) -> LeaseHistory:
        self._end()
        return self

    def holders(self) -> list[str]:
        with self._progress:
            return list(dict.fromkeys(version[0] for version in self.versions))
