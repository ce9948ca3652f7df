"""Naming the pods that keep a PodDisruptionBudget from allowing a disruption: which, where, why, since when.

A refusal says only "needs 2 healthy pods and has 1"; the person draining
wants to know *which* pod is the missing one. When a PDB holds an eviction,
the reporter lists the PDB's pods by its selector and sends a
``PdbPodsUnhealthy`` naming those the disruption controller does not count
as healthy (not Ready, or being deleted), bounded so that a big PDB does not
flood the stream. It lists at most once per ``interval`` per PDB however many
pods wait on it, and sends only when the answer changed. It explains, it
never decides: an error while listing is left unsaid, the eviction goes on.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.eviction import PdbPodsUnhealthy, UnhealthyPod
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.label_selectors import selector_to_string
from kubectl_rollout.kube.pods import is_finished, is_ready, qualified
from kubectl_rollout.kube.slim_pods import slim_pod

#: unhealthy pods named per event; the rest are only counted
NAMED = 10
#: seconds between two listings of one PDB's pods
INTERVAL = 2.0


def why_unhealthy(pod: Any) -> str | None:
    """Why the disruption controller does not count ``pod`` as healthy, in a few words; None when it does."""
    if pod.metadata.deletion_timestamp is not None:
        return "terminating"
    status = pod.status
    if is_finished(pod):
        return str(status.phase)
    if is_ready(pod):
        return None
    if not (pod.spec and pod.spec.node_name):
        return "Pending (not scheduled)"
    for container in [*(status.init_container_statuses or []), *(status.container_statuses or [])] if status else []:
        waiting = container.state.waiting if container.state else None
        if waiting is not None and waiting.reason:
            return str(waiting.reason)
    if status is not None and status.phase == "Pending":
        return "Pending"
    return "not Ready"


def unhealthy_since(pod: Any) -> float:
    """When it stopped being (or never became) Ready: its Ready condition's last transition, else its creation."""
    for condition in (pod.status.conditions if pod.status else None) or []:
        if condition.type == "Ready" and condition.last_transition_time is not None:
            return float(condition.last_transition_time.timestamp())
    created = pod.metadata.creation_timestamp
    return float(created.timestamp()) if created is not None else 0.0


def unhealthy_pods(pdb: str, pods: Iterable[Any], *, named: int = NAMED) -> PdbPodsUnhealthy:
    """The event for PDB ``pdb`` ("namespace/name") whose selector selects ``pods``: the longest unhealthy first."""
    selected = list(pods)
    found = []
    for pod in selected:
        reason = why_unhealthy(pod)
        if reason is not None:
            ref = PodRef(namespace=pod.metadata.namespace, name=pod.metadata.name, node=pod.spec.node_name or "")
            found.append(UnhealthyPod(pod=ref, reason=reason, since=unhealthy_since(pod)))
    found.sort(key=lambda p: (p.since, p.pod.name))
    return PdbPodsUnhealthy(pdb=pdb, pods=tuple(found[:named]), unhealthy=len(found), selected=len(selected))


class PdbPodsReporter:
    """Sends ``PdbPodsUnhealthy`` for the PDBs that hold evictions, on change. Thread-safe."""

    def __init__(
        self,
        cluster: Cluster,
        emit: Callable[[Event], None],
        *,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self.emit = emit
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._listed_at: dict[str, float] = {}
        self._sent: dict[str, PdbPodsUnhealthy] = {}

    def report(self, pdb: Any) -> None:
        """Name the unhealthy pods of ``pdb`` (a PodDisruptionBudget object) if they changed since last said."""
        key = qualified(pdb)
        now = self.clock()
        with self._lock:
            listed = self._listed_at.get(key)
            if listed is not None and now - listed < self.interval:
                return
            self._listed_at[key] = now
        selector = self.cluster.api_client.sanitize_for_serialization(pdb.spec.selector) if pdb.spec else None
        if not selector:
            return  # an empty selector selects nothing in policy/v1 (and everything in v1beta1): not ours to guess
        try:
            # resourceVersion "0": the API server's watch cache; an explanation needs no quorum read. Read as
            # JSON, kept slim: in a campaign's wave every PDB may hold evictions at once, each listing all its
            # pods, and the client's models of them all at once were the wave's largest allocation.
            response = self.cluster.core.list_namespaced_pod(
                pdb.metadata.namespace,
                label_selector=selector_to_string(selector),
                resource_version="0",
                _preload_content=False,
            )
            try:
                items = json.loads(response.data).get("items") or []
            finally:
                response.release_conn()
            pods = [slim_pod(item) for item in items]
        except Exception:
            # An explanation, not a decision: whatever went wrong (403, throttled, the server away), the
            # eviction goes on and its own events still say which PDB holds it.
            return
        event = unhealthy_pods(key, pods)
        with self._lock:
            if self._sent.get(key) == event:
                return
            self._sent[key] = event
        self.emit(event)
