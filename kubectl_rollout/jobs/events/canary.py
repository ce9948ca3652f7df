"""The events of a canary on a managed workload (the rollout job kind's; see ``base`` for the envelope).

A rollout job whose workload has steps emits, beside the rollout's own events:
``CanaryStarted`` when a new revision begins its steps, ``StepStarted`` and
``StepReached`` for each step, ``PausedAtStep`` where it waits for a person,
``GateStarted`` / ``GateRan`` for a gate (``GateMeasured`` for each
measurement of a Prometheus gate), ``Promoted``, ``Aborted``,
``Retried`` for what a person did, and ``StepsDone`` when the last step is over.
Steps are numbered from 1, as people count them (``step 3/5``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_rollout.jobs.events.base import Event


@dataclass(frozen=True, kw_only=True)
class CanaryStarted(Event):
    TYPE = "CanaryStarted"

    workload: str
    #: the new ReplicaSet's template hash, and the stable ReplicaSet it replaces
    canary_hash: str
    stable: str
    steps: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class StepStarted(Event):
    TYPE = "StepStarted"

    workload: str
    step: int
    steps: int
    text: str
    #: the counts this step settles at
    canary: int
    stable: int
    replicas: int
    #: a timed pause: when it ends (epoch seconds; counted from when the step began, as recorded)
    until: float | None = None


@dataclass(frozen=True, kw_only=True)
class StepReached(Event):
    """A setWeight step's counts are there: every pod of both ReplicaSets available, no other pod left."""

    TYPE = "StepReached"

    workload: str
    step: int
    steps: int
    text: str
    canary: int
    stable: int
    replicas: int


@dataclass(frozen=True, kw_only=True)
class PausedAtStep(Event):
    """The canary waits for ``promote`` (a pause, a manual gate, a gate that failed with on-failure=pause)."""

    TYPE = "PausedAtStep"

    workload: str
    step: int
    steps: int
    text: str
    #: who paused it (the step itself: "step"), and when (epoch seconds)
    by: str
    when: float


@dataclass(frozen=True, kw_only=True)
class GateStarted(Event):
    TYPE = "GateStarted"

    workload: str
    step: int
    steps: int
    text: str


@dataclass(frozen=True, kw_only=True)
class GateMeasured(Event):
    """One measurement of a Prometheus gate, as recorded on the workload before the driver acted on it."""

    TYPE = "GateMeasured"

    workload: str
    step: int
    steps: int
    #: this measurement's number (from 1) and how many the gate takes at most
    measurement: int
    count: int
    #: "successful", "failed" or "inconclusive"
    phase: str
    #: the number the query gave ("" when none), and why it is inconclusive
    value: str = ""
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class GateRan(Event):
    """A gate's verdict, as recorded on the workload before the driver acted on it."""

    TYPE = "GateRan"

    workload: str
    step: int
    steps: int
    text: str
    ok: bool
    #: the command's exit code (None: it could not start, or ran out of time)
    exit_code: int | None = None
    #: the last lines of its output
    output: str = ""
    seconds: float = 0.0
    #: what a failure does: "abort" or "pause"
    on_failure: str = "abort"
    #: neither passed nor failed (a Prometheus gate at its inconclusive limit): the canary pauses
    inconclusive: bool = False


@dataclass(frozen=True, kw_only=True)
class GateStopped(Event):
    """A gate still running when its verdict stopped being wanted (the canary was aborted, or promoted past its
    step): its command killed, or its Job deleted. Nothing is recorded for it: a retry runs it again."""

    TYPE = "GateStopped"

    workload: str
    step: int
    steps: int
    text: str
    #: why: "aborted", "promoted" (past its step), "retried" (aborted and retried meanwhile), "replaced" (a new
    #: template, or the steps removed)
    why: str
    #: what was stopped: "its command killed", "Job web-5d8f7c9b4-gate2-9f29 deleted"
    what: str = ""


@dataclass(frozen=True, kw_only=True)
class Promoted(Event):
    TYPE = "Promoted"

    workload: str
    #: the step promoted past (1-based), and how many there are
    step: int
    steps: int
    by: str
    when: float
    #: promote --full: every remaining step skipped
    full: bool = False


@dataclass(frozen=True, kw_only=True)
class Aborted(Event):
    """The canary is aborted: the stable ReplicaSet back at full size, the canary at 0, until retry or a change."""

    TYPE = "Aborted"

    workload: str
    step: int
    steps: int
    by: str
    when: float
    #: why, for people ("aborted by alice@host", "gate command failed with exit code 3")
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Retried(Event):
    TYPE = "Retried"

    workload: str
    steps: int
    by: str
    when: float


@dataclass(frozen=True, kw_only=True)
class StepsDone(Event):
    """The last step is over (or ``promote --full``): the new revision takes every replica."""

    TYPE = "StepsDone"

    workload: str
    steps: int
    full: bool = False


#: what a person did to a canary: a job that recorded one of these is followed, not redone, on resume
CanaryCommand = Promoted | Aborted | Retried
