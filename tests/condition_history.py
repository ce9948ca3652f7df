"""A condition's history, watched: every change of one condition of a Deployment's status, or of a managed
workload's status in its record (the ConfigMap ``rollout-plus.NAME``), in the API server's order.

Two sides driven through the same change are compared by these histories, not by their end states alone.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from kubernetes import watch

from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.watched_collection import stop_watch
from kubectl_rollout.rollout.record import record_name


class ConditionHistory:
    """(status, reason, message) of condition ``kind`` each time a write changed it; ``None`` while absent."""

    def __init__(self, cluster: Cluster, namespace: str, name: str, kind: str, *, managed: bool) -> None:
        self.cluster, self.namespace, self.kind = cluster, namespace, kind
        #: the object followed: the record of managed workload NAME, or Deployment NAME
        self.object_name = record_name(name) if managed else name
        self._list = cluster.core.list_namespaced_config_map if managed else cluster.apps.list_namespaced_deployment
        self._managed = managed
        self.seen: list[tuple[str, str, str] | None] = []
        self._watch = watch.Watch()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _status(self, obj: Any) -> dict[str, Any]:
        if self._managed:
            return dict(json.loads((obj.data or {}).get("status") or "{}"))
        return dict(self.cluster.api_client.sanitize_for_serialization(obj.status) or {})

    def _record(self, obj: Any) -> None:
        found = next((c for c in self._status(obj).get("conditions") or [] if c["type"] == self.kind), None)
        entry = None if found is None else (found["status"], found.get("reason", ""), found.get("message", ""))
        if not self.seen or self.seen[-1] != entry:
            self.seen.append(entry)

    def start(self) -> ConditionHistory:
        listing = self._list(self.namespace, field_selector=f"metadata.name={self.object_name}")
        for obj in listing.items:
            self._record(obj)
        self._rv = listing.metadata.resource_version
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            for event in self._watch.stream(
                self._list,
                self.namespace,
                field_selector=f"metadata.name={self.object_name}",
                resource_version=self._rv,
                timeout_seconds=600,
            ):
                if event["type"] != "DELETED":
                    self._record(event["object"])
        except Exception as err:  # surfaced by stop(), unless stop() caused it
            if not self._stopping:
                self.error = err

    def stop(self) -> list[tuple[str, str, str] | None]:
        self._stopping = True
        stop_watch(self._watch)
        self._thread.join(10)
        if self.error is not None:
            raise self.error
        return list(self.seen)
