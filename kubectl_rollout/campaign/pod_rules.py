"""Per-pod rules a campaign honours: karpenter's ``do-not-disrupt``, Cluster API's drain label, and ours.

- ``karpenter.sh/do-not-disrupt: "true"`` (a pod annotation): karpenter never voluntarily disrupts a node
  running such a pod. The pod is not evicted, and its node waits until the pod is gone or finished or the
  annotation is lifted (then the pod is evicted like any other).
- ``cluster.x-k8s.io/drain`` (Cluster API's ``PodDrainLabel``; a label, or an annotation here too) ``skip``:
  the pod is left on the node, which counts as drained with it; ``wait-completed``: the pod is not evicted,
  the node waits until it has completed.
- ``rollout-plus.io/drain``: the same three values, for pods that neither tool describes.

A finished pod (Succeeded, Failed) has no rule: it disrupts nothing, and ``wait-completed`` is satisfied.
The node's wait for a held pod is bounded like its drain (``--timeout``, then ``--on-blocked``).
"""

from __future__ import annotations

from typing import Any

from kubectl_rollout.drain.pod_filters import Outcome, Verdict
from kubectl_rollout.jobs.events.base import PodRef
from kubectl_rollout.jobs.events.campaign import PodRule, RuledPod
from kubectl_rollout.kube.pods import is_finished

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
CLUSTER_API_DRAIN = "cluster.x-k8s.io/drain"
OWN_DRAIN = "rollout-plus.io/drain"

EFFECTS: dict[PodRule, str] = {
    PodRule.DO_NOT_DISRUPT: "not evicted; its node waits until it is gone or the annotation is lifted",
    PodRule.SKIP: "not evicted; its node is drained around it",
    PodRule.WAIT_COMPLETED: "not evicted; its node waits until it completes",
}
_VALUES = {"skip": PodRule.SKIP, "wait-completed": PodRule.WAIT_COMPLETED, "do-not-disrupt": PodRule.DO_NOT_DISRUPT}


def rule_of(pod: Any) -> tuple[PodRule, str] | None:
    """The rule on ``pod`` and the ``key=value`` that set it; None when it has none (or has finished)."""
    if is_finished(pod):
        return None
    annotations = pod.metadata.annotations or {}
    labels = pod.metadata.labels or {}
    if str(annotations.get(DO_NOT_DISRUPT, "")).lower() == "true":
        return PodRule.DO_NOT_DISRUPT, f"{DO_NOT_DISRUPT}=true"
    for key in (CLUSTER_API_DRAIN, OWN_DRAIN):
        for marks in (labels, annotations):
            value = str(marks.get(key, "")).lower()
            rule = _VALUES.get(value)
            if rule is not None and (key == OWN_DRAIN or rule is not PodRule.DO_NOT_DISRUPT):
                return rule, f"{key}={value}"
    return None


def ruled(pod: Any) -> RuledPod | None:
    found = rule_of(pod)
    if found is None:
        return None
    rule, source = found
    ref = PodRef(namespace=pod.metadata.namespace, name=pod.metadata.name, node=pod.spec.node_name or "")
    return RuledPod(pod=ref, rule=rule, source=source, effect=EFFECTS[rule])


def holds_node(rule: PodRule) -> bool:
    """Whether a pod under ``rule`` keeps its node from counting as drained while it is there."""
    return rule is not PodRule.SKIP


def rule_filter(pod: Any) -> Verdict:
    """The drain's filter for these rules (``DrainEngine(extra_filters=...)``): a ruled pod is not removed."""
    found = rule_of(pod)
    if found is None:
        return Verdict(delete=True, outcome=Outcome.OKAY)
    rule, source = found
    return Verdict(delete=False, outcome=Outcome.SKIP, message=f"{source}: {EFFECTS[rule]}")
