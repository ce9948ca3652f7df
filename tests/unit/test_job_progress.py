"""Any job's view, its progress and ETA: folded from streams recorded from real jobs, and pure tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.job import JobState
from kubectl_rollout.jobs.views.drain import DrainView
from kubectl_rollout.jobs.views.job import fold_all, kind_of, new_view
from kubectl_rollout.jobs.views.progress import Progress, eta_seconds, progress_of
from kubectl_rollout.jobs.views.restart import RestartView
from kubectl_rollout.jobs.views.rollout import RolloutView

STREAMS = Path(__file__).parent / "streams"


def envelopes(name: str, *, until: int | None = None) -> list[Envelope]:
    found = [Envelope.from_dict(json.loads(line)) for line in (STREAMS / name).read_text().splitlines()]
    return [e for e in found if until is None or e.seq <= until]


@pytest.mark.parametrize(
    ("stream", "until", "kind", "body", "state", "progress"),
    [
        pytest.param(
            "drain_pdb_and_bare_pod.jsonl", 3, "drain", DrainView, JobState.RUNNING, Progress(0, 0), id="drain-cordoned"
        ),
        pytest.param(
            "drain_pdb_and_bare_pod.jsonl",
            11,
            "drain",
            DrainView,
            JobState.RUNNING,
            Progress(1, 3),
            id="drain-one-gone-two-blocked",
        ),
        pytest.param(
            "drain_pdb_and_bare_pod.jsonl",
            None,
            "drain",
            DrainView,
            JobState.FAILED,
            Progress(3, 3),
            id="drain-ended-failed",
        ),
        pytest.param(
            "restart_deployment.jsonl",
            None,
            "restart",
            RestartView,
            JobState.SUCCEEDED,
            Progress(3, 3),
            id="restart-done",
        ),
        # recorded from the rollout engine alone: no JobStarted, the kind comes from the events
        pytest.param(
            "rollout_set_image.jsonl",
            None,
            "rollout",
            RolloutView,
            JobState.RUNNING,
            Progress(3, 3),
            id="rollout-complete",
        ),
    ],
)
def test_any_job_folds_to_its_kinds_view(
    stream: str, until: int | None, kind: str, body: type, state: JobState, progress: Progress
) -> None:
    view = fold_all(envelopes(stream, until=until))
    assert view.kind == kind
    assert isinstance(view.body, body)
    assert view.state is state
    assert progress_of(view) == progress


def test_a_job_known_from_the_list_folds_into_its_kind_before_its_first_event() -> None:
    view = new_view(job="x", kind="restart")
    assert isinstance(view.body, RestartView)
    assert view.state is JobState.PENDING


def test_pause_and_resume_and_the_result_are_the_jobs_own_state() -> None:
    from kubectl_rollout.jobs.events.job import JobFinished, JobPaused, JobResumed, JobStarted

    stream = [JobStarted(kind="drain", target="node/a"), JobPaused(by="tui"), JobResumed(by="tui")]
    finished = JobFinished(state=JobState.CANCELLED, exit_code=1, summary="cancelled")
    views = []
    view = new_view()
    for seq, event in enumerate([*stream, finished], 1):
        view = fold_all([Envelope(job="j", seq=seq, at=100.0 + seq, event=event)], view)
        views.append((view.state, view.paused))
    assert views == [
        (JobState.RUNNING, False),
        (JobState.RUNNING, True),
        (JobState.RUNNING, False),
        (JobState.CANCELLED, False),
    ]


def test_the_rollout_view_keeps_desired_replicas() -> None:
    view = fold_all(envelopes("rollout_set_image.jsonl"))
    body = view.body
    assert isinstance(body, RolloutView)
    assert body.desired == 3
    assert body.deadline_at is None  # recorded before the field existed: no deadline shown, nothing invented


@pytest.mark.parametrize(
    ("module", "kind"),
    [("rollout", "rollout"), ("restart", "restart"), ("drain", "drain"), ("eviction", "drain"), ("job", "")],
)
def test_kind_of_an_event_by_its_family(module: str, kind: str) -> None:
    from kubectl_rollout.jobs.events.base import Event

    sample = next(cls for cls in Event.types().values() if cls.__module__.endswith("." + module))
    event = sample.__new__(sample)  # the family is the class's, not the fields'
    assert kind_of(event) == kind


@pytest.mark.parametrize(
    ("progress", "started_at", "now", "eta"),
    [
        pytest.param(Progress(0, 10), 100.0, 160.0, None, id="no-pace-before-the-first-step"),
        pytest.param(Progress(5, 10), 100.0, 160.0, 60.0, id="half-done-in-a-minute"),
        pytest.param(Progress(9, 10), 100.0, 190.0, 10.0, id="one-step-left"),
        pytest.param(Progress(10, 10), 100.0, 200.0, None, id="done"),
        pytest.param(Progress(3, 4), None, 200.0, None, id="not-started"),
    ],
)
def test_eta_at_the_pace_so_far(progress: Progress, started_at: float | None, now: float, eta: float | None) -> None:
    assert eta_seconds(progress, started_at=started_at, now=now) == eta


@pytest.mark.parametrize(
    ("progress", "fraction"),
    [(Progress(0, 0), 0.0), (Progress(1, 4), 0.25), (Progress(5, 4), 1.0)],
)
def test_fraction(progress: Progress, fraction: float) -> None:
    assert progress.fraction == fraction


@pytest.mark.parametrize("stream", sorted(p.name for p in STREAMS.glob("*.jsonl")))
@pytest.mark.parametrize("batch", [1, 3, 1000])
def test_folding_in_batches_gives_what_folding_one_by_one_gives(stream: str, batch: int) -> None:
    from kubectl_rollout.jobs.views.job import fold, fold_many

    recorded = envelopes(stream)
    one_by_one = new_view()
    for envelope in recorded:
        one_by_one = fold(one_by_one, envelope)
    batched = new_view()
    for start in range(0, len(recorded), batch):
        batched = fold_many(batched, recorded[start : start + batch])
    assert batched == one_by_one
    assert fold_many(batched, recorded) is batched  # replayed: nothing changes
