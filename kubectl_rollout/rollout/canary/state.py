"""Where a canary stands, as kept on the workload's record (its ConfigMap's ``canary`` key), and the walk
through the steps: given the steps, that state and the clock, what the driver does now.

The state is the only memory of a canary: the step, when it began (a timed
pause counts from then, so a driver started after a crash waits only what is
left), who paused, promoted or aborted it and when, and the last gate's result
(recorded before the driver acts on it, so a gate that finished is never run
again). Any driver on any machine picks the canary up from it.

Pure: the state and the steps in, a decision out.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.rollout.canary.prometheus_analysis import Measurement
from kubectl_rollout.rollout.steps.format import (
    CommandGate,
    JobGate,
    ManualGate,
    OnFailure,
    Pause,
    PrometheusGate,
    SetWeight,
    Step,
    weight_at,
)
from kubectl_rollout.rollout.steps.weights import Counts, step_goal


class Strategy(enum.StrEnum):
    """How the new revision takes over; blue-green is the other one to come, on the same record."""

    CANARY = "canary"


@dataclass(frozen=True, kw_only=True)
class Mark:
    """Who did something to the canary, and when (epoch seconds)."""

    by: str
    at: float

    def as_dict(self) -> dict[str, Any]:
        return {"by": self.by, "at": self.at}

    @classmethod
    def from_dict(cls, raw: Any) -> Mark | None:
        if not isinstance(raw, dict):
            return None
        return cls(by=str(raw.get("by", "")), at=float(raw.get("at", 0.0)))


@dataclass(frozen=True, kw_only=True)
class GateResult:
    """A gate's verdict for one step, recorded before the driver acts on it."""

    #: the step it was run for (0-based)
    step: int
    ok: bool
    #: the command's exit code (None: it could not be started, or ran out of time)
    exit_code: int | None = None
    #: the last lines of its output, for people
    output: str = ""
    started_at: float = 0.0
    finished_at: float = 0.0
    #: neither passed nor failed (a Prometheus gate at its inconclusive limit): the canary pauses
    inconclusive: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: Any) -> GateResult | None:
        if not isinstance(raw, dict):
            return None
        code = raw.get("exit_code")
        return cls(
            step=int(raw.get("step", -1)),
            ok=bool(raw.get("ok", False)),
            exit_code=int(code) if isinstance(code, int) else None,
            output=str(raw.get("output", "")),
            started_at=float(raw.get("started_at", 0.0)),
            finished_at=float(raw.get("finished_at", 0.0)),
            inconclusive=bool(raw.get("inconclusive", False)),
        )


@dataclass(frozen=True, kw_only=True)
class CanaryState:
    strategy: Strategy = Strategy.CANARY
    #: the template the canary runs (our template hash); another one starts a new canary
    canary_hash: str
    #: the stable ReplicaSet (the one the canary replaces) and its template hash
    stable: str = ""
    stable_hash: str = ""
    #: the steps as they were when the canary began (a change of the steps alone does not restart it)
    steps: tuple[str, ...] = ()
    #: the current step, 0-based; len(steps): every step is done and the canary takes every replica
    step: int = 0
    #: when the current step began (epoch seconds)
    step_started_at: float = 0.0
    #: paused at the current step (a pause, a manual gate, a failed gate with on-failure=pause)
    paused: Mark | None = None
    promoted: Mark | None = None
    #: promote --full: no more steps
    full: bool = False
    aborted: Mark | None = None
    retried: Mark | None = None
    gate: GateResult | None = None
    #: the measurements of the last Prometheus gate (``step_measurements``: the current step's), each recorded
    #: before the driver acts on it
    measurements: tuple[Measurement, ...] = ()

    @property
    def done(self) -> bool:
        return self.full or self.step >= len(self.steps)

    def step_measurements(self) -> tuple[Measurement, ...]:
        """The measurements taken for the current step since it began (a retry begins it again)."""
        return tuple(m for m in self.measurements if m.step == self.step and m.at >= self.step_started_at)

    def as_dict(self) -> dict[str, Any]:
        raw: dict[str, Any] = {
            "strategy": self.strategy.value,
            "canary_hash": self.canary_hash,
            "stable": self.stable,
            "stable_hash": self.stable_hash,
            "steps": list(self.steps),
            "step": self.step,
            "step_started_at": self.step_started_at,
            "full": self.full,
        }
        for key in ("paused", "promoted", "aborted", "retried", "gate"):
            value = getattr(self, key)
            if value is not None:
                raw[key] = value.as_dict()
        if self.measurements:
            raw["measurements"] = [m.as_dict() for m in self.measurements]
        return raw

    @classmethod
    def from_dict(cls, raw: Any) -> CanaryState | None:
        if not isinstance(raw, dict) or not raw.get("canary_hash"):
            return None
        strategy = raw.get("strategy", Strategy.CANARY.value)
        return cls(
            strategy=Strategy(strategy) if strategy in Strategy._value2member_map_ else Strategy.CANARY,
            canary_hash=str(raw["canary_hash"]),
            stable=str(raw.get("stable", "")),
            stable_hash=str(raw.get("stable_hash", "")),
            steps=tuple(str(s) for s in raw.get("steps") or ()),
            step=int(raw.get("step", 0)),
            step_started_at=float(raw.get("step_started_at", 0.0)),
            paused=Mark.from_dict(raw.get("paused")),
            promoted=Mark.from_dict(raw.get("promoted")),
            full=bool(raw.get("full", False)),
            aborted=Mark.from_dict(raw.get("aborted")),
            retried=Mark.from_dict(raw.get("retried")),
            gate=GateResult.from_dict(raw.get("gate")),
            measurements=tuple(
                m for m in (Measurement.from_dict(r) for r in raw.get("measurements") or ()) if m is not None
            ),
        )


# --- the walk -----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Move:
    """Drive the ReplicaSets towards ``goal``; ``advance`` once they are there (a setWeight step)."""

    goal: Counts
    advance: bool


@dataclass(frozen=True, kw_only=True)
class Hold:
    """Stay at ``goal`` (still moving towards it) until ``until`` (a timed pause), or until promoted (None)."""

    goal: Counts
    until: float | None
    #: a pause until promoted that is not yet marked on the record
    mark_paused: bool = False


@dataclass(frozen=True, kw_only=True)
class RunGate:
    """Hold at ``goal`` while the command or Job gate of the current step runs (or is started)."""

    goal: Counts
    gate: CommandGate | JobGate


@dataclass(frozen=True, kw_only=True)
class Measure:
    """Hold at ``goal`` while the Prometheus gate of the current step measures: the next measurement is due at
    ``due`` (epoch seconds; the first at once, each next one an interval after the last recorded)."""

    goal: Counts
    gate: PrometheusGate
    due: float


@dataclass(frozen=True, kw_only=True)
class Advance:
    """The current step is over (a timed pause ran out, a gate passed): the next step begins."""


@dataclass(frozen=True, kw_only=True)
class GateFailed:
    """The current step's gate failed: abort, or pause until promoted (``on_failure``)."""

    on_failure: OnFailure


@dataclass(frozen=True, kw_only=True)
class Unwind:
    """Aborted: the stable ReplicaSet back at full size, the canary at 0."""

    goal: Counts


Decision = Move | Hold | RunGate | Measure | Advance | GateFailed | Unwind


def decide(*, steps: tuple[Step, ...], state: CanaryState, replicas: int, now: float) -> Decision | None:
    """What the driver does at the current step; None once the steps are done (a plain rolling update on)."""
    if state.aborted is not None:
        return Unwind(goal=Counts(canary=0, stable=replicas))
    if state.done:
        return None
    step = steps[state.step]
    goal = step_goal(replicas=replicas, weight=weight_at(steps, state.step))
    if isinstance(step, SetWeight):
        return Move(goal=goal, advance=True)
    if isinstance(step, Pause) and step.seconds is not None:
        until = state.step_started_at + step.seconds
        return Advance() if now >= until else Hold(goal=goal, until=until)
    if isinstance(step, Pause | ManualGate):
        return Hold(goal=goal, until=None, mark_paused=state.paused is None)
    assert isinstance(step, CommandGate | JobGate | PrometheusGate)
    result = state.gate if state.gate is not None and state.gate.step == state.step else None
    if result is None and isinstance(step, PrometheusGate):
        taken = state.step_measurements()
        due = taken[-1].at + step.options.interval if taken else state.step_started_at
        return Measure(goal=goal, gate=step, due=due)
    if result is None:
        assert isinstance(step, CommandGate | JobGate)
        return RunGate(goal=goal, gate=step)
    if result.ok:
        return Advance()
    if step.on_failure is OnFailure.PAUSE or result.inconclusive:
        return Hold(goal=goal, until=None, mark_paused=state.paused is None)
    return GateFailed(on_failure=step.on_failure)


def next_step(state: CanaryState, *, now: float) -> CanaryState:
    """The state once the current step is over."""
    return dataclasses.replace(state, step=state.step + 1, step_started_at=now, paused=None)


def is_reached(goal: Counts, *, canary: tuple[int, int, int], stable: tuple[int, int, int], others: int) -> bool:
    """Every ReplicaSet at the goal: (spec, pods, available) of canary and stable, and no pod of any other."""
    canary_spec, canary_pods, canary_available = canary
    stable_spec, stable_pods, stable_available = stable
    return (
        canary_spec == goal.canary
        and canary_pods == goal.canary
        and canary_available >= goal.canary
        and stable_spec == goal.stable
        and stable_pods == goal.stable
        and stable_available >= goal.stable
        and others == 0
    )


def step_line(*, steps: tuple[str, ...], index: int, canary: int, replicas: int) -> str:
    """``step 3/5: setWeight 40%, 4/10 pods``: where a canary stands, for people."""
    if index >= len(steps):
        return f"steps done: {canary}/{replicas} pods on the new revision"
    return f"step {index + 1}/{len(steps)}: {steps[index]}, {canary}/{replicas} pods"
