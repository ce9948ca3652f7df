"""The walk through a canary's steps: what the driver does at each step, from the recorded state and the clock."""

from __future__ import annotations

import dataclasses

import pytest

from kubectl_rollout.rollout.canary.state import (
    Advance,
    CanaryState,
    GateFailed,
    GateResult,
    Hold,
    Mark,
    Move,
    RunGate,
    Unwind,
    decide,
    is_reached,
    next_step,
    step_line,
)
from kubectl_rollout.rollout.steps.format import CommandGate, OnFailure, parse_steps
from kubectl_rollout.rollout.steps.weights import Counts

STEPS = parse_steps(
    "setWeight 10; pause; setWeight 50; pause 5s; gate command: ./check.sh\n"
    "gate command on-failure=pause: ./other.sh\ngate manual",
    workload="web",
)
TEXTS = tuple(str(s) for s in STEPS)
T0 = 1_000_000.0


def at(step: int, **changes: object) -> CanaryState:
    state = CanaryState(canary_hash="h2", stable="web-1", stable_hash="h1", steps=TEXTS, step=step, step_started_at=T0)
    return dataclasses.replace(state, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "now", "expected"),
    [
        (at(0), T0, Move(goal=Counts(canary=1, stable=9), advance=True)),
        (at(1), T0, Hold(goal=Counts(canary=1, stable=9), until=None, mark_paused=True)),
        (at(1, paused=Mark(by="step", at=T0)), T0 + 999, Hold(goal=Counts(canary=1, stable=9), until=None)),
        (at(2), T0, Move(goal=Counts(canary=5, stable=5), advance=True)),
        # a timed pause counts from when the step began, as recorded: a driver started later waits what is left
        (at(3), T0 + 4.9, Hold(goal=Counts(canary=5, stable=5), until=T0 + 5)),
        (at(3), T0 + 5, Advance()),
        (at(4), T0, RunGate(goal=Counts(canary=5, stable=5), gate=CommandGate(command="./check.sh"))),
        # a gate's result, once recorded for this step, is acted on and the gate is never run again
        (at(4, gate=GateResult(step=4, ok=True)), T0, Advance()),
        (at(4, gate=GateResult(step=4, ok=False, exit_code=3)), T0, GateFailed(on_failure=OnFailure.ABORT)),
        # the result of another step's gate is not this step's
        (
            at(5, gate=GateResult(step=4, ok=True)),
            T0,
            RunGate(
                goal=Counts(canary=5, stable=5), gate=CommandGate(command="./other.sh", on_failure=OnFailure.PAUSE)
            ),
        ),
        (
            at(5, gate=GateResult(step=5, ok=False, exit_code=1)),
            T0,
            Hold(goal=Counts(canary=5, stable=5), until=None, mark_paused=True),
        ),
        (at(6), T0, Hold(goal=Counts(canary=5, stable=5), until=None, mark_paused=True)),
        (at(7), T0, None),
        (at(2, full=True), T0, None),
        (at(2, aborted=Mark(by="alice@host", at=T0)), T0, Unwind(goal=Counts(canary=0, stable=10))),
    ],
)
def test_decide(state: CanaryState, now: float, expected: object) -> None:
    assert decide(steps=STEPS, state=state, replicas=10, now=now) == expected


def test_the_next_step_begins_now_and_unpaused() -> None:
    after = next_step(at(1, paused=Mark(by="step", at=T0)), now=T0 + 60)
    assert (after.step, after.step_started_at, after.paused) == (2, T0 + 60, None)


def test_the_state_survives_its_json_form() -> None:
    state = at(
        4,
        paused=Mark(by="step", at=T0),
        promoted=Mark(by="alice@host", at=T0 + 1),
        gate=GateResult(step=4, ok=False, exit_code=2, output="boom", started_at=T0, finished_at=T0 + 2),
    )
    assert CanaryState.from_dict(state.as_dict()) == state
    assert CanaryState.from_dict({"step": 2}) is None  # no template: not a canary's state


@pytest.mark.parametrize(
    ("canary", "stable", "others", "reached"),
    [
        ((5, 5, 5), (5, 5, 5), 0, True),
        ((5, 5, 4), (5, 5, 5), 0, False),  # a canary pod not yet available
        ((5, 5, 5), (5, 6, 5), 0, False),  # a stable pod not yet gone
        ((5, 5, 5), (5, 5, 5), 1, False),  # an older ReplicaSet's pod left
    ],
)
def test_is_reached(canary: tuple[int, int, int], stable: tuple[int, int, int], others: int, reached: bool) -> None:
    assert is_reached(Counts(canary=5, stable=5), canary=canary, stable=stable, others=others) is reached


def test_step_line() -> None:
    assert step_line(steps=TEXTS, index=2, canary=4, replicas=10) == "step 3/7: setWeight 50%, 4/10 pods"
    assert step_line(steps=TEXTS, index=7, canary=10, replicas=10) == "steps done: 10/10 pods on the new revision"
