"""A condition's history, watched: every change of one condition of a Deployment's status, or of a managed
workload's status in its record (the ConfigMap ``rollout-plus.NAME``), in the API server's order.

Two sides driven through the same change are compared by these histories, not by their end states alone.
"""

from __future__ import annotations

import json
from typing import Any

from watching import Follower

from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import record_name


class ConditionHistory(Follower):
    """(status, reason, message) of condition ``kind`` each time a write changed it; ``None`` while absent."""

    def __init__(self, cluster: Cluster, namespace: str, name: str, kind: str, *, managed: bool) -> None:
        super().__init__()
        self.cluster, self.namespace, self.kind = cluster, namespace, kind
        #: the object followed: the record of managed workload NAME, or Deployment NAME
        self.object_name = record_name(name) if managed else name
        self._list = cluster.core.list_namespaced_config_map if managed else cluster.apps.list_namespaced_deployment
        self._managed = managed
        self.seen: list[tuple[str, str, str] | None] = []

    def _status(self, obj: Any) -> dict[str, Any]:
        if self._managed:
            return dict(json.loads((obj.data or {}).get("status") or "{}"))
        return dict(self.cluster.api_client.sanitize_for_serialization(obj.status) or {})

    def _record(self, obj: Any) -> None:
        found = next((c for c in self._status(obj).get("conditions") or [] if c["type"] == self.kind), None)
        entry = None if found is None else (found["status"], found.get("reason", ""), found.get("message", ""))
        if not self.seen or self.seen[-1] != entry:
            self.seen.append(entry)

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self._list, {"namespace": self.namespace, "field_selector": f"metadata.name={self.object_name}"}

    def _seed(self, items: list[Any]) -> None:
        for obj in items:
            self._record(obj)

    def _apply(self, kind: str, obj: Any) -> None:
        if kind != "DELETED":
            self._record(obj)

    def start(self) -> ConditionHistory:
        self._follow()
        return self

    def stop(self) -> list[tuple[str, str, str] | None]:
        self._end()
        return list(self.seen)
