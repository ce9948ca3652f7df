"""The surge decision: which workloads get extra replicas before their pods are evicted, and how many.

Pure: numbers and facts in, a decision out; the cluster is read and changed
elsewhere (``session``, ``record``).

Why a surge helps, by the disruption controller's arithmetic: a PDB with an
integer ``minAvailable`` needs that many healthy pods, so extra Ready replicas
are extra room at once. A PDB with ``maxUnavailable`` (or a percentage) counts
against the owner's replica count, so extra replicas alone add no room; the
room comes from lowering the count by one as each drained pod is evicted: the
ReplicaSet then creates no replacement, the PDB's expectation shrinks with it,
and the next eviction is allowed at once instead of after a replacement's
readiness. Either way the workload never has fewer Ready pods than before the
drain, and the Eviction API stays the only way a pod leaves the node.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

#: the kinds whose owner can simply run more copies of a pod ("ManagedWorkload": one this plugin manages,
#: surged through its one ReplicaSet while the drain holds its rollout driver's Lease; see managed)
SURGEABLE_KINDS = frozenset({"Deployment", "ManagedWorkload"})

#: by default a surge is bounded only by the workload's pods on the drained nodes: the drain needs room
#: for that many replacements elsewhere anyway, the surge asks for the same room a little earlier
DEFAULT_SURGE_MAX = "100%"

_COUNT = re.compile(r"^[0-9]+$")
_PERCENT = re.compile(r"^([0-9]+)%$")


@dataclass(frozen=True, kw_only=True)
class SurgeMax:
    """``--surge-max``: a count of extra replicas per workload, or a percentage of its replicas (rounded up)."""

    count: int = 0
    percent: int = 0

    def bound(self, replicas: int) -> int:
        if self.percent:
            return max(1, math.ceil(replicas * self.percent / 100))
        return self.count

    def __str__(self) -> str:
        return f"{self.percent}%" if self.percent else str(self.count)


def parse_surge_max(text: str) -> SurgeMax:
    """``N`` or ``P%``, both above zero; ValueError says what was wrong and gives examples."""
    value = text.strip()
    if _COUNT.match(value):
        count = int(value)
        if count == 0:
            raise ValueError(f"{text!r} would surge nothing; give at least 1 (or leave out --surge)")
        return SurgeMax(count=count)
    match = _PERCENT.match(value)
    if match:
        percent = int(match.group(1))
        if percent == 0:
            raise ValueError(f"{text!r} would surge nothing; give at least 1% (or leave out --surge)")
        return SurgeMax(percent=percent)
    raise ValueError(f"{text!r} is neither a count nor a percentage of replicas; e.g. 3 or 25%")


#: labels and annotations by which GitOps controllers mark what they manage, with the controller's name
_GITOPS_LABELS: dict[str, str | None] = {
    "argocd.argoproj.io/instance": None,
    "kustomize.toolkit.fluxcd.io/name": None,
    "helm.toolkit.fluxcd.io/name": None,
}
_GITOPS_ANNOTATIONS: dict[str, str | None] = {
    "argocd.argoproj.io/tracking-id": None,
    "meta.helm.sh/release-name": None,
}
_MANAGED_BY = {"helm": "Helm", "flux": "Flux", "argocd": "Argo CD", "kustomize-controller": "Flux"}


def gitops_marker(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """The label or annotation by which a GitOps controller (Argo CD, Flux, Helm) claims an object, or None."""
    for key in _GITOPS_LABELS:
        if key in labels:
            return f"label {key}={labels[key]}"
    for key in _GITOPS_ANNOTATIONS:
        if key in annotations:
            return f"annotation {key}={annotations[key]}"
    managed_by = labels.get("app.kubernetes.io/managed-by", "")
    if managed_by.lower() in _MANAGED_BY:
        return f"label app.kubernetes.io/managed-by={managed_by}"
    return None


@dataclass(frozen=True, kw_only=True)
class WorkloadFacts:
    """What the decision needs to know about one owner of pods on the drained nodes."""

    #: "Deployment", "ManagedWorkload", "StatefulSet", "ReplicaSet", "Job", "Pod" (bare), ...
    kind: str
    namespace: str
    name: str
    #: its replica count now
    replicas: int = 0
    #: its pods on the nodes being drained (one batch)
    pods_on_nodes: int = 0
    #: the smallest disruptionsAllowed among the PDBs over those pods; None: no PDB selects them
    disruptions_allowed: int | None = None
    #: the most room those PDBs' specs can give at its replica count (``budget_room``); None: unknown
    room_by_spec: int | None = None
    #: a HorizontalPodAutoscaler that targets it, "namespace/name"
    autoscaler: str | None = None
    #: see gitops_marker
    gitops: str | None = None
    #: a surge record left by an earlier drain that has not been restored yet
    leftover_record: bool = False
    #: mid-rollout (more than one ReplicaSet with pods, or not all updated)
    rolling_out: bool = False
    #: what shows the rollout (e.g. "2 of its ReplicaSets have a count"), said with the reason
    rollout_detail: str = ""
    #: another holds the Lease the surge needs (a managed workload's driver, or another drain): who, in its words
    lease_held: str = ""


@dataclass(frozen=True, kw_only=True)
class SurgeDecision:
    kind: str
    namespace: str
    name: str
    #: extra replicas to add; 0 means no surge, and ``reason`` says why
    surge: int = 0
    reason: str = ""
    #: said even when it surges (a GitOps controller may revert the count)
    warning: str = ""

    @property
    def workload(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def decide(facts: WorkloadFacts, surge_max: SurgeMax) -> SurgeDecision:
    """Surge by how many, or why not; the drain then waits for the PDB as it would without --surge."""

    def no(reason: str, warning: str = "") -> SurgeDecision:
        return SurgeDecision(
            kind=facts.kind, namespace=facts.namespace, name=facts.name, reason=reason, warning=warning
        )

    warning = (
        f"managed by GitOps ({facts.gitops}): its controller may revert the replica count during the surge"
        if facts.gitops
        else ""
    )
    if facts.pods_on_nodes <= 0:
        return no("no pods on the drained nodes")
    if facts.disruptions_allowed is None:
        return no("no PodDisruptionBudget selects its pods: nothing to wait for", warning)
    if facts.kind == "StatefulSet":
        return no(
            "a StatefulSet's pods have identities (an extra replica is a new ordinal, not a stand-in); "
            "the drain waits for its PDB",
            warning,
        )
    if facts.kind == "Pod":
        return no("a bare pod has no owner to run a copy of it; the drain waits for its PDB", warning)
    if facts.kind not in SURGEABLE_KINDS:
        return no(
            f"a {facts.kind}'s replicas are not a count the drain may raise; the drain waits for its PDB", warning
        )
    if facts.leftover_record:
        return no("an earlier surge is still recorded on it and is restored first; the drain waits for its PDB")
    if facts.autoscaler:
        return no(
            f"HorizontalPodAutoscaler {facts.autoscaler} sets its replica count and would undo a surge; "
            "the drain waits for its PDB",
            warning,
        )
    if facts.rolling_out:
        detail = f" ({facts.rollout_detail})" if facts.rollout_detail else ""
        return no(f"it is in the middle of a rollout{detail}; the drain waits for its PDB", warning)
    if facts.lease_held:
        return no(facts.lease_held, warning)
    # The status may lag (a count just lowered, pods just gone): trust it only as far as the spec allows.
    room = facts.disruptions_allowed
    if facts.room_by_spec is not None:
        room = min(room, facts.room_by_spec)
    if room >= facts.pods_on_nodes:
        return no(f"its PDB allows {facts.disruptions_allowed} disruption(s) now: no surge needed", warning)
    surge = min(facts.pods_on_nodes, surge_max.bound(facts.replicas))
    return SurgeDecision(
        kind=facts.kind,
        namespace=facts.namespace,
        name=facts.name,
        surge=surge,
        reason=f"surge by {surge} (from {facts.replicas} to {facts.replicas + surge} replicas)",
        warning=warning,
    )


def _scaled(value: int | str, total: int) -> int:
    """An IntOrString of a PDB against ``total``, rounded up as the disruption controller does."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%") and text[:-1].isdigit():
        return math.ceil(total * int(text[:-1]) / 100)
    return int(text)


def budget_room(*, min_available: int | str | None, max_unavailable: int | str | None, replicas: int) -> int | None:
    """The most disruptions a PDB can allow while its pods are one workload's ``replicas`` pods, all healthy.

    By the disruption controller's arithmetic: maxUnavailable (int or percent of the count, rounded up)
    allows at most that many; minAvailable allows healthy - minimum, and healthy is at most the count.
    None when the spec says neither (the status alone decides). A PDB over several workloads counts their
    pods too, so this bound is then low: the drain surges when in doubt, which costs room, never safety.
    """
    try:
        if max_unavailable is not None:
            return max(0, _scaled(max_unavailable, replicas))
        if min_available is not None:
            return max(0, replicas - _scaled(min_available, replicas))
    except ValueError:
        return None
    return None


def lowered_replicas(*, original: int, surge: int, evicted: int) -> int:
    """The count while the drained pods leave: one less per eviction, never below the original."""
    return original + max(0, surge - evicted)
