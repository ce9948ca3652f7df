"""A canary's events written by hand, for the Rollout screen's snapshots: ``web`` (10 replicas) with the steps
``setWeight 20; command ./smoke.sh; pause; setWeight 60; pause 30s``, at the pause after its gate passed."""

from __future__ import annotations

from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.events.job import JobStarted

#: 2026-11-26 11:00:00 UTC
START = 1795690800.0
JOB = "ca7a11000001"
STEPS = ("setWeight 20", "command ./smoke.sh", "pause", "setWeight 60", "pause 30s")
NEW, OLD = "web-7f8466b88b", "web-6ccdb8d8f9"


def _progress(*, canary: int) -> ev.RolloutProgressed:
    rows = (
        ev.ReplicaSetRow(
            name=NEW, revision=2, desired=canary, current=canary, ready=canary, available=canary, updated=True
        ),
        ev.ReplicaSetRow(
            name=OLD, revision=1, desired=10 - canary, current=10 - canary, ready=10 - canary, available=10 - canary
        ),
    )
    return ev.RolloutProgressed(
        workload="web",
        namespace="shop",
        message=f'Waiting for deployment "web" rollout to finish: {canary} out of 10 new replicas have been updated...',
        phase=ev.RolloutPhase.UPDATING,
        generation=2,
        desired=10,
        updated=canary,
        total=10,
        available=10,
        rows=rows,
    )


def _step(step: int, canary: int) -> cev.StepStarted:
    return cev.StepStarted(
        workload="web",
        step=step,
        steps=len(STEPS),
        text=STEPS[step - 1],
        canary=canary,
        stable=10 - canary,
        replicas=10,
    )


def canary_events() -> list[Event]:
    """Up to the pause at step 3, which the step itself paused."""
    n = len(STEPS)
    return [
        JobStarted(kind="rollout", target="web"),
        cev.CanaryStarted(workload="web", canary_hash="7f8466b88b", stable=OLD, steps=STEPS),
        _step(1, 2),
        _progress(canary=2),
        cev.StepReached(workload="web", step=1, steps=n, text=STEPS[0], canary=2, stable=8, replicas=10),
        _step(2, 2),
        cev.GateStarted(workload="web", step=2, steps=n, text=STEPS[1]),
        cev.GateRan(
            workload="web",
            step=2,
            steps=n,
            text=STEPS[1],
            ok=True,
            exit_code=0,
            output="checking /healthz on 2 pods\nall 2 answered 200\nerror rate 0.0% (< 1%)",
            seconds=4.2,
            on_failure="abort",
        ),
        _step(3, 2),
        cev.PausedAtStep(workload="web", step=3, steps=n, text="pause", by="step", when=START + 60),
    ]


def envelopes(events: list[Event], *, job: str = JOB) -> list[Envelope]:
    """A second apart, from START + 50."""
    return [Envelope(job=job, seq=i, at=START + 50 + i, event=e) for i, e in enumerate(events, start=1)]
