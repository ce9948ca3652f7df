"""A canary's events fold into the view the Rollout screen draws its steps from; one workload's jobs merge."""

from __future__ import annotations

import pytest

from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.events.job import JobStarted
from kubectl_rollout.jobs.views import job as job_views
from kubectl_rollout.jobs.views.canary import (
    CanaryView,
    GateStatus,
    Mark,
    StepStatus,
    fold_canary,
    merged,
    pause_left,
    step_line,
    step_rows,
)
from kubectl_rollout.jobs.views.rollout import RolloutView

STEPS = ("setWeight 20", "pause", "setWeight 60", "pause 30s", "command ./check.sh")


def _fold(events: list[Event], *, start: float = 100.0) -> CanaryView:
    view: CanaryView | None = None
    for i, event in enumerate(events):
        view = fold_canary(view, event, at=start + i)
    assert view is not None
    return view


def _started(step: int, text: str, canary: int, *, until: float | None = None) -> cev.StepStarted:
    return cev.StepStarted(
        workload="web", step=step, steps=5, text=text, canary=canary, stable=10 - canary, replicas=10, until=until
    )


AT_THE_PAUSE: list[Event] = [
    cev.CanaryStarted(workload="web", canary_hash="abc", stable="web-old", steps=STEPS),
    _started(1, "setWeight 20", 2),
    cev.StepReached(workload="web", step=1, steps=5, text="setWeight 20", canary=2, stable=8, replicas=10),
    _started(2, "pause", 2),
    cev.PausedAtStep(workload="web", step=2, steps=5, text="pause", by="step", when=500.0),
]


def test_at_a_pause_the_steps_are_done_current_to_come_and_the_pause_is_the_steps_own() -> None:
    view = _fold(AT_THE_PAUSE)
    assert [(r.number, r.text, r.status) for r in step_rows(view)] == [
        (1, "setWeight 20", StepStatus.DONE),
        (2, "pause", StepStatus.CURRENT),
        (3, "setWeight 60", StepStatus.TO_COME),
        (4, "pause 30s", StepStatus.TO_COME),
        (5, "command ./check.sh", StepStatus.TO_COME),
    ]
    assert view.paused == Mark(by="step", at=500.0)
    assert view.under_way
    assert step_line(view, canary_pods=2, replicas=10) == "step 2/5: pause, 2/10 pods"
    assert pause_left(view, now=1000.0) is None


def test_a_timed_pause_counts_down_to_its_end() -> None:
    view = _fold([*AT_THE_PAUSE, _started(3, "setWeight 60", 6), _started(4, "pause 30s", 6, until=1030.0)])
    assert pause_left(view, now=1000.0) == 30.0
    assert pause_left(view, now=2000.0) == 0.0
    assert view.paused is None


@pytest.mark.parametrize(
    ("ran", "status"),
    [
        pytest.param(None, GateStatus.RUNNING, id="running"),
        pytest.param(True, GateStatus.PASSED, id="passed"),
        pytest.param(False, GateStatus.FAILED, id="failed"),
        pytest.param("stopped", GateStatus.STOPPED, id="stopped"),
    ],
)
def test_the_gate_and_its_last_result(ran: bool | str | None, status: GateStatus) -> None:
    events: list[Event] = [
        *AT_THE_PAUSE,
        _started(5, "command ./check.sh", 10),
        cev.GateStarted(workload="web", step=5, steps=5, text="command ./check.sh"),
    ]
    if ran == "stopped":
        events.append(
            cev.GateStopped(
                workload="web", step=5, steps=5, text="command ./check.sh", why="aborted", what="its command killed"
            )
        )
    elif ran is not None:
        assert isinstance(ran, bool)
        events.append(
            cev.GateRan(
                workload="web",
                step=5,
                steps=5,
                text="command ./check.sh",
                ok=ran,
                exit_code=0 if ran else 3,
                output="p99 412ms > 300ms",
                seconds=2.5,
                on_failure="abort",
            )
        )
    gate = _fold(events).gate
    assert gate is not None
    assert (gate.step, gate.status) == (5, status)
    if ran is False:
        assert (gate.exit_code, gate.output, gate.on_failure) == (3, "p99 412ms > 300ms", "abort")
    if ran == "stopped":
        assert (gate.stopped, gate.exit_code, gate.output) == ("aborted: its command killed", None, "")


def test_promote_abort_retry_and_the_end() -> None:
    promoted = _fold([*AT_THE_PAUSE, cev.Promoted(workload="web", step=2, steps=5, by="alice@box", when=600.0)])
    assert (promoted.promoted, promoted.paused) == (Mark(by="alice@box", at=600.0), None)
    aborted = _fold(
        [
            *AT_THE_PAUSE,
            cev.Aborted(workload="web", step=2, steps=5, by="bob@box", when=700.0, reason="aborted by bob@box"),
        ]
    )
    assert (aborted.aborted, aborted.abort_reason, aborted.under_way) == (
        Mark(by="bob@box", at=700.0),
        "aborted by bob@box",
        False,
    )
    retried = fold_canary(aborted, cev.Retried(workload="web", steps=5, by="bob@box", when=800.0), at=900.0)
    assert (retried.aborted, retried.step, retried.under_way) == (None, 1, True)
    done = fold_canary(retried, cev.StepsDone(workload="web", steps=5, full=True), at=901.0)
    assert done.done
    assert not done.under_way
    assert {r.status for r in step_rows(done)} == {StepStatus.DONE}
    assert step_line(done, canary_pods=10, replicas=10) == "steps done: 10/10 pods on the new revision"


def test_a_promote_jobs_part_merges_with_the_job_that_began_the_canary() -> None:
    """The job that changed the template ended at the pause; the promote job knows only the steps it saw."""
    first = _fold(AT_THE_PAUSE, start=100.0)
    second = _fold(
        [
            cev.Promoted(workload="web", step=2, steps=5, by="alice@box", when=600.0, full=False),
            _started(3, "setWeight 60", 6),
            cev.StepReached(workload="web", step=3, steps=5, text="setWeight 60", canary=6, stable=4, replicas=10),
            _started(4, "pause 30s", 6, until=1030.0),
        ],
        start=600.0,
    )
    assert second.texts == ("", "", "setWeight 60", "pause 30s", "")
    view = merged([second, first])
    assert view is not None
    assert view.texts == STEPS
    assert (view.step, view.canary, view.promoted) == (4, 6, Mark(by="alice@box", at=600.0))
    assert merged([]) is None


def test_a_rollout_jobs_view_carries_its_canary() -> None:
    events: list[Event] = [JobStarted(kind="rollout", target="web"), *AT_THE_PAUSE]
    envelopes = [Envelope(job="j", seq=i, at=100.0 + i, event=e) for i, e in enumerate(events, start=1)]
    body = job_views.fold_all(envelopes).body
    assert isinstance(body, RolloutView)
    assert body.canary is not None
    assert body.canary.step == 2


def test_the_record_says_where_the_canary_stands_and_who_acted_on_it_from_any_machine() -> None:
    """A promote run elsewhere (another machine, a CI job in-process) reaches no job of this agent: the record
    says it."""
    from kubectl_rollout.jobs.cluster_rows import CanaryRecord, RecordedMark
    from kubectl_rollout.jobs.views.canary import with_record

    events = _fold(AT_THE_PAUSE)
    record = CanaryRecord(steps=STEPS, step=3, step_started_at=650.0, promoted=RecordedMark(by="ci@runner", at=640.0))
    view = with_record(events, record)
    assert view is not None
    assert (view.step, view.paused, view.promoted) == (4, None, Mark(by="ci@runner", at=640.0))
    assert not view.reached  # the events' counts were of step 2
    # The same step as the events: what they know (its counts) stays, the record's marks win.
    paused = CanaryRecord(steps=STEPS, step=1, paused=RecordedMark(by="step", at=500.0))
    same = with_record(events, paused)
    assert same is not None
    assert (same.step, same.canary, same.paused) == (2, 2, Mark(by="step", at=500.0))
    # No canary event in the jobs: the record alone, unless its steps are all done.
    alone = with_record(None, record)
    assert alone is not None
    assert alone.texts == STEPS
    assert [r.status for r in step_rows(alone)][2:4] == [StepStatus.DONE, StepStatus.CURRENT]
    assert with_record(None, CanaryRecord(steps=STEPS, step=5)) is None
    aborted = with_record(events, CanaryRecord(steps=STEPS, step=1, aborted=RecordedMark(by="bob@box", at=9.0)))
    assert aborted is not None
    assert not aborted.under_way
