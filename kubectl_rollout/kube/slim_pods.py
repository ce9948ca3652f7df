"""What a drain keeps of each pod: the few fields it reads, made from the pod's JSON, not the client's model.

A drain judges every pod of its nodes and follows them on a watch until they
are gone; with its nodes drained at once, every node's pods are held together.
A pod's model takes about 17 KiB in Python (and about as much again while its
JSON is decoded into it), so 3000 pods held 60 MiB of models at the drain's
peak, most of it never read. A ``SlimPod`` keeps what the drain's readers
use: kubectl's filters (``drain.pod_filters``), the eviction order, the PDB
matching and readiness (``eviction.pdb_watch``), the evictor (uid, deletion),
the owner lookups and the surge (owner references), a campaign's pod rules
(``campaign.pod_rules``) and plan (creation to Ready), the naming of a PDB's
unhealthy pods (``eviction.pdb_pods``: the containers' waiting reasons).

It has the client model's shape (``pod.metadata.owner_references[0].kind``,
``pod.spec.volumes[0].empty_dir``, ...) and its conventions (None for what
the API omits), so that those readers, which restarts and rollouts call with
models, read either the same way. Only the annotations in ``KEPT_ANNOTATIONS``
are kept: others can be large (``last-applied-configuration``) and no drain
reads them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

#: the annotations the drain reads: a mirror (static) pod's, karpenter's do-not-disrupt, Cluster API's and our
#: drain rule (``drain.pod_filters``, ``campaign.pod_rules``), and the deletion cost a surge gives back
#: (``drain.surge.first_to_go``); a unit test holds them to these
KEPT_ANNOTATIONS = frozenset(
    {
        "kubernetes.io/config.mirror",
        "karpenter.sh/do-not-disrupt",
        "cluster.x-k8s.io/drain",
        "rollout-plus.io/drain",
        "controller.kubernetes.io/pod-deletion-cost",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    #: None when the reference does not say (as the model has it)
    controller: bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EmptyDir:
    medium: str | None
    size_limit: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Volume:
    name: str
    #: None for any other kind of volume
    empty_dir: EmptyDir | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PodCondition:
    type: str
    status: str
    last_transition_time: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerStateWaiting:
    reason: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerState:
    #: None unless the container is waiting (its only state a reader asks about)
    waiting: ContainerStateWaiting | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerStatus:
    state: ContainerState | None


#: the status of every container that is not waiting: one shared copy
_NOT_WAITING = ContainerStatus(state=ContainerState(waiting=None))


@dataclass(frozen=True, slots=True, kw_only=True)
class PodMetadata:
    name: str
    namespace: str
    uid: str
    labels: Mapping[str, str] | None
    #: only those in ``KEPT_ANNOTATIONS``; None when the pod has none of them
    annotations: Mapping[str, str] | None
    owner_references: tuple[OwnerReference, ...] | None
    creation_timestamp: datetime | None
    deletion_timestamp: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PodSpec:
    node_name: str | None
    priority: int | None
    priority_class_name: str | None
    volumes: tuple[Volume, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PodStatus:
    phase: str | None
    conditions: tuple[PodCondition, ...] | None
    #: each container's state as far as it is waiting (and why), in the API's order
    init_container_statuses: tuple[ContainerStatus, ...] | None
    container_statuses: tuple[ContainerStatus, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SlimPod:
    metadata: PodMetadata
    spec: PodSpec | None
    #: None when the API sent none, as the model has it
    status: PodStatus | None


def _shared(value: str | None) -> str | None:
    """The one copy of a string that thousands of pods repeat (namespaces, kinds, label keys and values)."""
    return None if value is None else sys.intern(value)


def _timestamp(value: str | None) -> datetime | None:
    """An RFC 3339 time as the API writes it (``2026-11-26T18:55:35Z``), timezone-aware like the model's."""
    return None if not value else datetime.fromisoformat(value)


def _mapping(values: Mapping[str, Any] | None, *, keep: frozenset[str] | None = None) -> Mapping[str, str] | None:
    if values is None:
        return None
    kept = {sys.intern(key): sys.intern(str(value)) for key, value in values.items() if keep is None or key in keep}
    return MappingProxyType(kept) if kept or keep is None else None


def _owner(ref: Mapping[str, Any]) -> OwnerReference:
    return OwnerReference(
        api_version=sys.intern(ref.get("apiVersion") or ""),
        kind=sys.intern(ref.get("kind") or ""),
        name=ref.get("name") or "",
        uid=ref.get("uid") or "",
        controller=ref.get("controller"),
    )


def _volume(volume: Mapping[str, Any]) -> Volume:
    empty_dir = volume.get("emptyDir")
    return Volume(
        name=volume.get("name") or "",
        empty_dir=None
        if empty_dir is None
        else EmptyDir(medium=empty_dir.get("medium"), size_limit=_shared(empty_dir.get("sizeLimit"))),
    )


def _condition(condition: Mapping[str, Any]) -> PodCondition:
    return PodCondition(
        type=sys.intern(condition.get("type") or ""),
        status=sys.intern(condition.get("status") or ""),
        last_transition_time=_timestamp(condition.get("lastTransitionTime")),
    )


def _container_statuses(statuses: list[Mapping[str, Any]] | None) -> tuple[ContainerStatus, ...] | None:
    if statuses is None:
        return None
    return tuple(_container_status(status) for status in statuses)


def _container_status(status: Mapping[str, Any]) -> ContainerStatus:
    waiting = (status.get("state") or {}).get("waiting")
    if waiting is None:
        return _NOT_WAITING
    return ContainerStatus(state=ContainerState(waiting=ContainerStateWaiting(reason=_shared(waiting.get("reason")))))


def _spec(spec: Mapping[str, Any] | None) -> PodSpec | None:
    if spec is None:
        return None
    volumes = spec.get("volumes")
    return PodSpec(
        node_name=_shared(spec.get("nodeName")),
        priority=spec.get("priority"),
        priority_class_name=_shared(spec.get("priorityClassName")),
        volumes=None if volumes is None else tuple(_volume(v) for v in volumes),
    )


def _status(status: Mapping[str, Any] | None) -> PodStatus | None:
    if status is None:
        return None
    conditions = status.get("conditions")
    return PodStatus(
        phase=_shared(status.get("phase")),
        conditions=None if conditions is None else tuple(_condition(c) for c in conditions),
        init_container_statuses=_container_statuses(status.get("initContainerStatuses")),
        container_statuses=_container_statuses(status.get("containerStatuses")),
    )


def slim_pod(pod: Mapping[str, Any]) -> SlimPod:
    """The pod's JSON (camelCase keys, as the API sends it) made slim; a ``WatchedCollection`` transform."""
    metadata = pod.get("metadata") or {}
    owners = metadata.get("ownerReferences")
    return SlimPod(
        metadata=PodMetadata(
            name=metadata.get("name") or "",
            namespace=sys.intern(metadata.get("namespace") or ""),
            uid=metadata.get("uid") or "",
            labels=_mapping(metadata.get("labels")),
            annotations=_mapping(metadata.get("annotations"), keep=KEPT_ANNOTATIONS),
            owner_references=None if owners is None else tuple(_owner(ref) for ref in owners),
            creation_timestamp=_timestamp(metadata.get("creationTimestamp")),
            deletion_timestamp=_timestamp(metadata.get("deletionTimestamp")),
        ),
        spec=_spec(pod.get("spec")),
        status=_status(pod.get("status")),
    )
