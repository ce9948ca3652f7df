"""The drained pods of a surged workload, marked as the first its ReplicaSet removes on a scale-down.

Right after each eviction the surge lowers its workload's count by one (``session``). The ReplicaSet
controller then picks a pod to delete from *its* cache of pods, and nothing orders that cache after the
eviction: the controller watches pods and ReplicaSets on two streams. When the pod-stream lags (a loaded
control plane), it still sees the evicted pod as running and Ready, and among Ready pods it deletes the
one Ready for the shortest time: the surge's extra pod. The evicted pod and the extra one then go at
once, and the workload has no Ready pod for a moment (seen: both deleted 29 ms apart, one replica behind
``minAvailable: 1``).

The controller ranks pods by their ``controller.kubernetes.io/pod-deletion-cost`` before their age. So
before the raise, each drained pod gets the lowest cost: whichever pods the controller believes still
run, the one it removes on a lowering is a drained pod, the one just evicted or another one about to be
(the drain then finds that one gone and lowers the count for it as for an eviction); the extra pods stay.
Marked before the raise is early enough: the controller acts on a ReplicaSet only once its cache holds
the pods it created for it (its expectations), those pods come after the marks on the same stream, so
every lowering meets a cache that has the marks.

The pods the drain did not evict get their own cost back before the restore, so that a restore removes
extra pods, not them. The cost a pod had is kept in ``COST_BEFORE`` meanwhile (empty: none), on every
marked pod: a killed drain's marks are found by it, and the leftover restore of a later drain, ``uncordon``
or the agent's resume gives each pod of the surged object its cost back before it puts the count back
(``unmark_left``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.jobs.events.base import PodRef
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster

log = logging.getLogger(__name__)

#: the ReplicaSet controller removes pods of a lower cost first (Kubernetes 1.22 and later, on by default)
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
#: the lowest cost the API server accepts (an int32)
FIRST_TO_GO = str(-(2**31))
#: on every marked pod: the cost it had ("" for none), given back if the pod is not evicted
COST_BEFORE = "rollout-plus.kubectl.io/deletion-cost-before"
#: pods patched at once (the client's connection pool holds more)
PARALLEL = 8


def mark(cluster: Cluster, pods: Iterable[PodRef], costs_before: Mapping[tuple[str, str], str | None]) -> list[PodRef]:
    """Give each pod the lowest deletion cost; the pods marked. A pod gone meanwhile is skipped; a refusal is
    logged and that pod left unmarked (its lowering is then as safe as it was without the mark)."""

    def one(pod: PodRef) -> bool:
        before = costs_before.get((pod.namespace, pod.name))
        return _patch(cluster, pod, {DELETION_COST: FIRST_TO_GO, COST_BEFORE: before or ""}, "mark")

    pods = list(pods)
    return [pod for pod, done in zip(pods, _each(one, pods), strict=True) if done]


def unmark(cluster: Cluster, pods: Iterable[PodRef], costs_before: Mapping[tuple[str, str], str | None]) -> None:
    """Give each pod the cost it had (none, or its own) back."""

    def one(pod: PodRef) -> bool:
        before = costs_before.get((pod.namespace, pod.name))
        return _patch(cluster, pod, {DELETION_COST: before, COST_BEFORE: None}, "unmark")

    _each(one, list(pods))


def unmark_left(cluster: Cluster, namespace: str, selector: str) -> int:
    """A killed drain's marks on the pods ``selector`` picks (the surged object's): each pod that carries
    ``COST_BEFORE`` gets that cost back (none when empty); how many pods did."""
    if not selector:
        return 0  # an empty selector picks every pod of the namespace: never ours to touch
    pods = call_with_retry(cluster.core.list_namespaced_pod, namespace, label_selector=selector).items
    left = {
        PodRef(namespace=namespace, name=pod.metadata.name): (pod.metadata.annotations or {})[COST_BEFORE] or None
        for pod in pods
        if COST_BEFORE in (pod.metadata.annotations or {})
    }

    def one(pod: PodRef) -> bool:
        return _patch(cluster, pod, {DELETION_COST: left[pod], COST_BEFORE: None}, "unmark")

    return sum(_each(one, list(left)))


def _each(patch: Callable[[PodRef], bool], pods: list[PodRef]) -> list[bool]:
    """``patch`` each pod, ``PARALLEL`` at a time: the raise waits for the marks, and one after another they
    cost a round trip per pod (0.6 s for the 30 pods of three Deployments here)."""
    if len(pods) <= 1:
        return [patch(pod) for pod in pods]
    with ThreadPoolExecutor(max_workers=min(PARALLEL, len(pods)), thread_name_prefix="surge-mark") as pool:
        return list(pool.map(patch, pods))


def _patch(cluster: Cluster, pod: PodRef, annotations: dict[str, str | None], what: str) -> bool:
    body = {"metadata": {"annotations": annotations}}
    try:
        call_with_retry(cluster.core.patch_namespaced_pod, pod.name, pod.namespace, body)
    except ApiException as err:
        if err.status != 404:
            log.warning("could not %s pod %s for the surge's scale-downs: %s", what, pod, err.reason)
        return False
    except Exception as err:  # a lost connection: the drain goes on, only without this safeguard
        log.warning("could not %s pod %s for the surge's scale-downs: %s", what, pod, err)
        return False
    return True
