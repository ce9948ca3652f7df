"""The order in which a node's pods are evicted.

With bounded concurrency, order decides who leaves first. Ordinary pods go
before critical ones (priority ascending, system-critical classes last), so
the node keeps its logging, networking and monitoring agents while the
workloads move away; DaemonSet pods, when evicted at all, go last of all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubectl_rollout.kube.pods import is_daemonset_pod

#: scheduling.SystemCriticalPriority: the threshold of the system-*-critical classes
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def priority_of(pod: Any) -> int:
    return int(pod.spec.priority or 0)


def is_critical(pod: Any) -> bool:
    return pod.spec.priority_class_name in CRITICAL_CLASSES or priority_of(pod) >= SYSTEM_CRITICAL_PRIORITY


def eviction_order(pods: Iterable[Any]) -> list[Any]:
    return sorted(
        pods,
        key=lambda p: (is_daemonset_pod(p), is_critical(p), priority_of(p), p.metadata.namespace, p.metadata.name),
    )
