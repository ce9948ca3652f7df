"""The events of a blue-green rollout on a managed workload (the rollout job kind's; see ``base`` for the
envelope).

A rollout job whose workload is blue-green emits, beside the rollout's own
events: ``BlueGreenStarted`` when a new revision begins beside the stable one,
``ServiceSwitched`` each time the active or the preview Service is pointed at
a ReplicaSet, ``PreviewReady`` once every preview pod is available,
``OldScaledDown`` when the old ReplicaSet reached 0 after the delay, and
``BlueGreenPromoted``, ``BlueGreenAborted``, ``BlueGreenRetried`` for what a
person (or the workload's auto-promote) did. ``BlueGreenProgressed`` says
where the rollout stands, as ``status`` words it, when a driver takes the
workload over and each time a follower (``status -w``) sees it move.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event


class ServiceRole(enum.StrEnum):
    ACTIVE = "active"
    PREVIEW = "preview"


@dataclass(frozen=True, kw_only=True)
class BlueGreenStarted(Event):
    TYPE = "BlueGreenStarted"

    workload: str
    #: the stable ReplicaSet, which the active Service selects until promote
    stable: str
    active_service: str
    preview_service: str = ""


@dataclass(frozen=True, kw_only=True)
class ServiceSwitched(Event):
    """A Service's selector now holds ``pod_template_hash``: it selects the pods of ``replica_set`` only."""

    TYPE = "ServiceSwitched"

    workload: str
    service: str
    role: ServiceRole
    replica_set: str
    pod_template_hash: str
    #: the hash it selected before ("" when it selected every pod of the workload)
    previous_hash: str = ""
    #: the active Service switched at promote: the old ReplicaSet is scaled down this many seconds later
    scale_down_in: float | None = None


@dataclass(frozen=True, kw_only=True)
class PreviewReady(Event):
    """Every pod of the new ReplicaSet is available beside the stable ones."""

    TYPE = "PreviewReady"

    workload: str
    replica_set: str
    available: int
    replicas: int
    #: waits for ``promote`` (False: the workload promotes itself, ``auto_promote_in`` seconds later)
    waits: bool
    auto_promote_in: float | None = None


@dataclass(frozen=True, kw_only=True)
class OldScaledDown(Event):
    TYPE = "OldScaledDown"

    workload: str
    replica_set: str
    #: the recorded switch of the active Service and the delay counted from it (seconds)
    switched_at: float
    delay: float
    scaled_down_at: float


@dataclass(frozen=True, kw_only=True)
class BlueGreenPromoted(Event):
    TYPE = "BlueGreenPromoted"

    workload: str
    #: who promoted it ("auto-promote": the workload's own setting), and when (epoch seconds)
    by: str
    when: float


@dataclass(frozen=True, kw_only=True)
class BlueGreenAborted(Event):
    """The active Service back on the stable ReplicaSet, the new one at 0, until retry or a new change."""

    TYPE = "BlueGreenAborted"

    workload: str
    by: str
    when: float
    #: the active Service had been switched to the new ReplicaSet, and is switched back
    switched_back: bool = False


@dataclass(frozen=True, kw_only=True)
class BlueGreenRetried(Event):
    TYPE = "BlueGreenRetried"

    workload: str
    by: str
    when: float


@dataclass(frozen=True, kw_only=True)
class BlueGreenProgressed(Event):
    TYPE = "BlueGreenProgressed"

    workload: str
    #: "blue-green: preview ready 10/10, waiting for promote", "blue-green: active switched, old scaled down in 18s"
    line: str
