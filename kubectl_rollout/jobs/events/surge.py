"""The events of ``drain --surge``: extra replicas raised, Ready, restored; or why a workload was not surged.

See ``base`` for the envelope and the rules for changing it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.drain import WorkloadRef


@dataclass(frozen=True, kw_only=True)
class SurgePlan:
    """One workload's surge decision, in the plan (``--plan``, ``--dry-run``)."""

    workload: WorkloadRef
    #: extra replicas; 0: not surged, ``reason`` says why and the drain waits for its PDB
    surge: int
    reason: str
    warning: str = ""
    #: its pods on the drained nodes, "namespace/name"
    pods: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SurgesPlanned(Event):
    """The surge decisions of a plan, after its ``DrainPlanned``."""

    TYPE = "SurgesPlanned"

    surges: tuple[SurgePlan, ...]


@dataclass(frozen=True, kw_only=True)
class SurgeSkipped(Event):
    """A workload whose pods wait for their PDB as without --surge, and why (also after a surge was given up)."""

    TYPE = "SurgeSkipped"

    workload: WorkloadRef
    reason: str
    pods: tuple[PodRef, ...] = ()
    warning: str = ""


@dataclass(frozen=True, kw_only=True)
class SurgeWaitsForResume(Event):
    """The job is paused: the surge around draining these nodes raises nothing until it is resumed."""

    TYPE = "SurgeWaitsForResume"

    nodes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class SurgeStarted(Event):
    """The count is recorded on the workload and raised; the extra pods are on their way."""

    TYPE = "SurgeStarted"

    workload: WorkloadRef
    original: int
    replicas: int
    pods: tuple[PodRef, ...] = ()
    warning: str = ""


@dataclass(frozen=True, kw_only=True)
class SurgeReady(Event):
    """Every extra pod is Ready (elsewhere): the workload's drained pods may go."""

    TYPE = "SurgeReady"

    workload: WorkloadRef
    replicas: int
    seconds: float


@dataclass(frozen=True, kw_only=True)
class SurgeRestored(Event):
    """The original count is back and the record removed."""

    TYPE = "SurgeRestored"

    workload: WorkloadRef
    replicas: int
    #: a record a killed or failed drain left behind, restored by this command
    leftover: bool = False
    #: the drain job that had surged it
    drain: str = ""
    #: False: somebody else had changed the count meanwhile; it was left as they set it
    count_restored: bool = True
