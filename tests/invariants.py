"""Invariants proved by watching, from before the action until after it.

``HealthyPods`` follows every pod event of a namespace (in the API server's
order) and records, per value of a label, the fewest healthy pods ever seen:
healthy as the disruption controller counts it (Ready, not being deleted).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from watching import Follower

from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.pods import is_ready
from kubectl_rollout.rollout.replica_math import max_surge, max_unavailable


def is_healthy(pod: Any) -> bool:
    if pod.metadata.deletion_timestamp is not None:
        return False
    return is_ready(pod)


def pod_health(pod: dict[str, Any]) -> dict[str, Any]:
    """What ``is_healthy`` and a count by label read of a pod's JSON: its names, labels, deletion and conditions."""
    metadata = pod.get("metadata") or {}
    kept = ("name", "namespace", "uid", "resourceVersion", "labels", "deletionTimestamp")
    status = pod.get("status") or {}
    return {
        "metadata": {key: metadata[key] for key in kept if key in metadata},
        "status": {
            "phase": status.get("phase"),
            "conditions": [{"type": c.get("type"), "status": c.get("status")} for c in status.get("conditions") or []],
        },
    }


class HealthyPods(Follower):
    # a follower of every pod of a namespace (600 in the campaign's test) keeps up only if each event is cheap
    _trim = staticmethod(pod_health)

    def __init__(self, cluster: Cluster, namespace: str, *, label: str = "app") -> None:
        super().__init__()
        self.cluster = cluster
        self.namespace = namespace
        self.label = label
        self._pods: dict[str, Any] = {}
        self.minimum: dict[str, int] = {}
        self.events = 0

    def _count(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for pod in self._pods.values():
            group = (pod.metadata.labels or {}).get(self.label)
            if group is not None:
                counts[group] = counts.get(group, 0) + (1 if is_healthy(pod) else 0)
        return counts

    def _record(self) -> None:
        for group, count in self._count().items():
            self.minimum[group] = min(self.minimum.get(group, count), count)

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.core.list_namespaced_pod, {"namespace": self.namespace}

    def _seed(self, items: list[Any]) -> None:
        self._pods = {p.metadata.name: p for p in items}
        self._record()

    def _apply(self, kind: str, pod: Any) -> None:
        self.events += 1
        if kind == "DELETED":
            self._pods.pop(pod.metadata.name, None)
        else:
            self._pods[pod.metadata.name] = pod
        self._record()

    def start(self) -> HealthyPods:
        self._follow()
        return self

    def settle(self, expected: dict[str, int], timeout: float = 30) -> None:
        """Wait until the watch has caught up with a known final state."""
        if not self.wait(lambda: self._count() == expected, timeout=timeout):
            raise AssertionError(f"healthy pods never reached {expected}; last seen {self._count()}")

    def stop(self) -> dict[str, int]:
        self._end()
        return dict(self.minimum)


class PodCensus(Follower):
    """Follows a workload's pods (label app=NAME) and records, over the whole watch:
    the most pods at once, the fewest Ready ones, and whether two templates ran together.

    Pods being deleted count neither way for the most and the Ready: they no longer serve, and the
    controller's maxSurge bounds the pods it keeps, not those on their way out. They do count for
    ``templates_together``: Recreate waits until no old pod runs, terminating ones included (recreate.go's
    ``oldPodsRunning`` skips only Succeeded and Failed pods), before it starts a new one.
    """

    def __init__(self, cluster: Cluster, namespace: str, app: str) -> None:
        super().__init__()
        self.cluster, self.namespace, self.app = cluster, namespace, app
        self._pods: dict[str, Any] = {}
        self.most = 0
        self.fewest_ready: int | None = None
        self.templates_together = False
        #: every pod ever seen, by name: the image of its first container (churn shows as extra pods)
        self.seen: dict[str, str] = {}

    def pods_per_image(self) -> dict[str, int]:
        """How many distinct pods of each image ran (or were created) while watched."""
        counts: dict[str, int] = {}
        for image in self.seen.values():
            counts[image] = counts.get(image, 0) + 1
        return counts

    def _record(self) -> None:
        for pod in self._pods.values():
            self.seen.setdefault(pod.metadata.name, pod.spec.containers[0].image)
        running = [p for p in self._pods.values() if p.status.phase not in ("Succeeded", "Failed")]
        live = [p for p in running if p.metadata.deletion_timestamp is None]
        ready = sum(1 for p in live if is_healthy(p))
        self.most = max(self.most, len(live))
        self.fewest_ready = ready if self.fewest_ready is None else min(self.fewest_ready, ready)
        hashes = {(p.metadata.labels or {}).get("pod-template-hash") for p in running}
        self.templates_together |= len(hashes) > 1

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.core.list_namespaced_pod, {"namespace": self.namespace, "label_selector": f"app={self.app}"}

    def _seed(self, items: list[Any]) -> None:
        self._pods = {p.metadata.name: p for p in items}
        self._record()

    def _apply(self, kind: str, pod: Any) -> None:
        if kind == "DELETED":
            self._pods.pop(pod.metadata.name, None)
        else:
            self._pods[pod.metadata.name] = pod
        self._record()

    def start(self) -> PodCensus:
        self._follow()
        return self

    def stop(self) -> PodCensus:
        self._end()
        return self


class ReplicaSetScaling(Follower):
    """Follows a namespace's ReplicaSets (list, then watch from that list's resourceVersion) and records every
    change of a ReplicaSet's ``spec.replicas`` after the list, with when the watch delivered it.

    Started after a moment the test knows (a pause made), it shows what was scaled after that moment: the
    list is a consistent read, so a scale made before it is in the list, never among the changes.
    """

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        super().__init__()
        self.cluster, self.namespace = cluster, namespace
        self._replicas: dict[str, int] = {}
        #: (monotonic time the watch delivered it, ReplicaSet, from, to)
        self.changes: list[tuple[float, str, int, int]] = []
        self._lock = threading.Lock()

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.apps.list_namespaced_replica_set, {"namespace": self.namespace}

    def _seed(self, items: list[Any]) -> None:
        self._replicas = {rs.metadata.name: rs.spec.replicas for rs in items}

    def _apply(self, kind: str, rs: Any) -> None:
        before = self._replicas.get(rs.metadata.name, 0)
        after = 0 if kind == "DELETED" else rs.spec.replicas
        self._replicas[rs.metadata.name] = after
        if after != before:
            with self._lock:
                self.changes.append((time.monotonic(), rs.metadata.name, before, after))

    def start(self) -> ReplicaSetScaling:
        self._follow()
        return self

    def seen(self) -> list[tuple[float, str, int, int]]:
        with self._lock:
            return list(self.changes)

    def stop(self) -> ReplicaSetScaling:
        self._end()
        return self


class ReplicaSetTotals(Follower):
    """Follows the ReplicaSets of one workload (label app=NAME) and records, over the whole watch, the most
    replicas asked of them all together (the sum of ``spec.replicas``, which maxSurge bounds) and the fewest
    available (the sum of ``status.availableReplicas``: minReadySeconds counted, as the ReplicaSet controller
    counts it and as the Deployment controller reads it), each with the ReplicaSets at that moment."""

    def __init__(self, cluster: Cluster, namespace: str, app: str) -> None:
        super().__init__()
        self.cluster, self.namespace, self.app = cluster, namespace, app
        #: name -> (spec.replicas, status.availableReplicas)
        self._sizes: dict[str, tuple[int, int]] = {}
        self.most_replicas = 0
        self.fewest_available: int | None = None
        #: the ReplicaSets (name: replicas/available) when each extreme was first reached
        self.at_most: dict[str, tuple[int, int]] = {}
        self.at_fewest: dict[str, tuple[int, int]] = {}

    def _record(self) -> None:
        replicas = sum(size for size, _ in self._sizes.values())
        available = sum(ready for _, ready in self._sizes.values())
        if replicas > self.most_replicas:
            self.most_replicas, self.at_most = replicas, dict(self._sizes)
        if self.fewest_available is None or available < self.fewest_available:
            self.fewest_available, self.at_fewest = available, dict(self._sizes)

    def _track(self, rs: Any) -> None:
        self._sizes[rs.metadata.name] = (rs.spec.replicas or 0, (rs.status and rs.status.available_replicas) or 0)

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.apps.list_namespaced_replica_set, {
            "namespace": self.namespace,
            "label_selector": f"app={self.app}",
        }

    def _seed(self, items: list[Any]) -> None:
        for rs in items:
            self._track(rs)
        self._record()

    def _apply(self, kind: str, rs: Any) -> None:
        if kind == "DELETED":
            self._sizes.pop(rs.metadata.name, None)
        else:
            self._track(rs)
        self._record()

    def start(self) -> ReplicaSetTotals:
        self._follow()
        return self

    def stop(self) -> ReplicaSetTotals:
        self._end()
        return self


class RolloutInvariants:
    """The fenceposts of a rollout, watched from before it starts until after it ends, from the watch streams
    of the workload's pods (PodCensus) and ReplicaSets (ReplicaSetTotals):

    - never more than replicas + maxSurge replicas asked of the ReplicaSets together;
    - never more than replicas + maxSurge live pods (``count_pods``: our side; the controller bounds only
      ReplicaSet sizes and lets pods being deleted overlap new ones, a difference the README's table names);
    - never fewer than replicas - maxUnavailable Ready pods, nor available ones by the ReplicaSets' status.

    ``breaches`` lists every fencepost crossed, with what the watch saw then; a test asserts it is empty.
    """

    def __init__(self, cluster: Cluster, namespace: str, app: str = "web") -> None:
        self.namespace = namespace
        self.pods = PodCensus(cluster, namespace, app)
        self.replica_sets = ReplicaSetTotals(cluster, namespace, app)

    def start(self) -> RolloutInvariants:
        self.pods.start()
        self.replica_sets.start()
        return self

    def stop(self) -> RolloutInvariants:
        self.pods.stop()
        self.replica_sets.stop()
        return self

    def breaches_of(
        self, replicas: int, surge: int | str, unavailable: int | str, *, count_pods: bool = True
    ) -> list[str]:
        """``breaches`` for a RollingUpdate of ``replicas`` (Recreate: maxSurge 0, maxUnavailable all)."""
        return self.breaches(
            most=replicas + max_surge(replicas, surge, unavailable),
            fewest=replicas - max_unavailable(replicas, surge, unavailable),
            count_pods=count_pods,
        )

    def breaches(self, *, most: int, fewest: int, count_pods: bool = True) -> list[str]:
        """Every bound crossed (after ``stop``): at most ``most`` replicas (and pods), at least ``fewest``."""
        found = []
        rs = self.replica_sets
        if rs.most_replicas > most:
            found.append(f"{self.namespace}: {rs.most_replicas} replicas asked > {most} ({rs.at_most})")
        if count_pods and self.pods.most > most:
            found.append(f"{self.namespace}: {self.pods.most} live pods > {most}")
        if self.pods.fewest_ready is None or self.pods.fewest_ready < fewest:
            found.append(f"{self.namespace}: {self.pods.fewest_ready} Ready pods < {fewest}")
        if rs.fewest_available is None or rs.fewest_available < fewest:
            found.append(f"{self.namespace}: {rs.fewest_available} available < {fewest} ({rs.at_fewest})")
        return found
