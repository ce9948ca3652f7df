"""Where a canary stands, folded from the canary events of a rollout job: its steps (done, current, to come),
the current one's counts, a timed pause's end, the gate's state and last result, and who paused, promoted,
aborted or retried it and when.

A canary outlives the jobs that move it: the job that changed the template
reaches the first pause and ends, a ``promote`` job takes it to the next one,
an ``abort`` job unwinds it. Each job's stream holds its part; ``merged``
puts the parts of one workload's jobs together (the freshest says where the
canary stands, the others add the steps' texts and the latest promote and
retry), as the workload's record keeps them. Pure.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from dataclasses import dataclass

from kubectl_rollout.jobs.cluster_rows import CanaryRecord, RecordedMark
from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events.base import Event

#: the events this view folds
CANARY_EVENTS: tuple[type[Event], ...] = (
    cev.CanaryStarted,
    cev.StepStarted,
    cev.StepReached,
    cev.PausedAtStep,
    cev.GateStarted,
    cev.GateRan,
    cev.GateStopped,
    cev.Promoted,
    cev.Aborted,
    cev.Retried,
    cev.StepsDone,
)


#: who did something to the canary ("step": the step itself, a pause), and when (epoch seconds): the same as
#: the record's, as the agent hands it over
Mark = RecordedMark


class GateStatus(enum.StrEnum):
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    #: its verdict stopped being wanted while it ran (aborted, promoted past): killed, its Job deleted
    STOPPED = "stopped"


@dataclass(frozen=True, kw_only=True)
class GateView:
    #: the step it runs for (1-based), and the step's text ("command ./check.sh")
    step: int
    text: str
    status: GateStatus
    exit_code: int | None = None
    #: the last lines of its output
    output: str = ""
    seconds: float = 0.0
    #: what a failure does: "abort" or "pause"
    on_failure: str = ""
    #: a stopped gate: why, and what was stopped ("aborted: Job web-5d8f7c9b4-gate2-9f29 deleted")
    stopped: str = ""


@dataclass(frozen=True, kw_only=True)
class CanaryView:
    workload: str = ""
    #: each step's text, as far as seen ("" for one no event named yet)
    texts: tuple[str, ...] = ()
    #: the current step (1-based); len(texts) + 1 once every step is done
    step: int = 0
    #: the counts the current step settles at, and whether they are there
    canary: int = 0
    stable: int = 0
    replicas: int = 0
    reached: bool = False
    #: a timed pause: when it ends (epoch seconds)
    until: float | None = None
    paused: Mark | None = None
    promoted: Mark | None = None
    #: the latest promote was promote --full
    promoted_full: bool = False
    aborted: Mark | None = None
    abort_reason: str = ""
    retried: Mark | None = None
    #: the latest gate of this canary: running, or its last result (kept after its step, until a retry)
    gate: GateView | None = None
    done: bool = False
    #: when the latest canary event came (epoch seconds): the freshest view says where the canary stands
    updated_at: float = 0.0

    @property
    def count(self) -> int:
        return len(self.texts)

    @property
    def under_way(self) -> bool:
        """Steps left, and not aborted: what promote acts on."""
        return self.count > 0 and not self.done and self.aborted is None

    @property
    def current_text(self) -> str:
        return self.texts[self.step - 1] if 1 <= self.step <= self.count else ""


def _with_text(texts: tuple[str, ...], *, step: int, steps: int, text: str) -> tuple[str, ...]:
    """``texts`` as long as ``steps``, with step ``step``'s text (1-based) filled in."""
    grown = list(texts[:steps]) + [""] * max(0, steps - len(texts))
    if 1 <= step <= steps and text:
        grown[step - 1] = text
    return tuple(grown)


def fold_canary(view: CanaryView | None, event: Event, *, at: float) -> CanaryView:
    """``view`` (None: no canary event yet) after ``event``, one of ``CANARY_EVENTS``, that came at ``at``."""
    view = dataclasses.replace(view or CanaryView(), updated_at=at)
    replace = dataclasses.replace
    if isinstance(event, cev.CanaryStarted):
        return CanaryView(workload=event.workload, texts=event.steps, step=1, updated_at=at)
    if isinstance(event, cev.StepStarted):
        texts = _with_text(view.texts, step=event.step, steps=event.steps, text=event.text)
        return replace(
            view,
            workload=event.workload,
            texts=texts,
            step=event.step,
            canary=event.canary,
            stable=event.stable,
            replicas=event.replicas,
            reached=False,
            until=event.until,
            paused=view.paused if view.step == event.step else None,
            aborted=None,
            done=False,
        )
    if isinstance(event, cev.StepReached):
        texts = _with_text(view.texts, step=event.step, steps=event.steps, text=event.text)
        return replace(view, workload=event.workload, texts=texts, step=event.step, reached=True)
    if isinstance(event, cev.PausedAtStep):
        texts = _with_text(view.texts, step=event.step, steps=event.steps, text=event.text)
        return replace(view, texts=texts, step=event.step, paused=Mark(by=event.by, at=event.when))
    if isinstance(event, cev.GateStarted):
        texts = _with_text(view.texts, step=event.step, steps=event.steps, text=event.text)
        gate = GateView(step=event.step, text=event.text, status=GateStatus.RUNNING)
        return replace(view, texts=texts, step=event.step, gate=gate)
    if isinstance(event, cev.GateRan):
        texts = _with_text(view.texts, step=event.step, steps=event.steps, text=event.text)
        gate = GateView(
            step=event.step,
            text=event.text,
            status=GateStatus.PASSED if event.ok else GateStatus.FAILED,
            exit_code=event.exit_code,
            output=event.output,
            seconds=event.seconds,
            on_failure=event.on_failure,
        )
        return replace(view, texts=texts, step=event.step, gate=gate)
    if isinstance(event, cev.GateStopped):
        texts = _with_text(view.texts, step=event.step, steps=event.steps, text=event.text)
        gate = GateView(
            step=event.step,
            text=event.text,
            status=GateStatus.STOPPED,
            stopped=f"{event.why}: {event.what}" if event.what else event.why,
        )
        return replace(view, texts=texts, gate=gate)
    if isinstance(event, cev.Promoted):
        texts = _with_text(view.texts, step=event.step, steps=event.steps, text="")
        promoted = Mark(by=event.by, at=event.when)
        return replace(
            view, workload=event.workload, texts=texts, promoted=promoted, promoted_full=event.full, paused=None
        )
    if isinstance(event, cev.Aborted):
        texts = _with_text(view.texts, step=event.step, steps=event.steps, text="")
        aborted = Mark(by=event.by, at=event.when)
        return replace(
            view,
            workload=event.workload,
            texts=texts,
            step=event.step,
            aborted=aborted,
            abort_reason=event.reason,
            paused=None,
            until=None,
        )
    if isinstance(event, cev.Retried):
        texts = _with_text(view.texts, step=1, steps=event.steps, text="")
        retried = Mark(by=event.by, at=event.when)
        return replace(
            view,
            workload=event.workload,
            texts=texts,
            step=1,
            retried=retried,
            aborted=None,
            abort_reason="",
            paused=None,
            gate=None,
            done=False,
        )
    if isinstance(event, cev.StepsDone):
        texts = _with_text(view.texts, step=0, steps=event.steps, text="")
        return replace(view, texts=texts, step=event.steps + 1, done=True, paused=None, until=None)
    return view


def _latest(marks: Iterable[Mark | None]) -> Mark | None:
    found = [m for m in marks if m is not None]
    return max(found, key=lambda m: m.at) if found else None


def merged(views: Iterable[CanaryView]) -> CanaryView | None:
    """One workload's canary from the views of the jobs that moved it: the freshest one's state, the steps'
    texts from any of them, the latest promote and retry of all."""
    every = sorted(views, key=lambda v: v.updated_at)
    if not every:
        return None
    fresh = every[-1]
    texts = list(fresh.texts)
    for older in reversed(every[:-1]):
        if len(older.texts) != len(texts):
            continue  # another canary of the workload (its steps changed since)
        texts = [mine or theirs for mine, theirs in zip(texts, older.texts, strict=True)]
    promoted = _latest(v.promoted for v in every)
    full = next((v.promoted_full for v in reversed(every) if v.promoted is promoted), False)
    return dataclasses.replace(
        fresh, texts=tuple(texts), promoted=promoted, promoted_full=full, retried=_latest(v.retried for v in every)
    )


def with_record(view: CanaryView | None, record: CanaryRecord) -> CanaryView | None:
    """``view`` (from the jobs' events; None: none of them had a canary event) as the workload's record says it
    stands now: its steps, its step, who paused, promoted, aborted or retried it and when. The record is what
    every driver and every command on any machine wrote; the events add what it does not keep (each step's
    counts, a timed pause's end, the gate's output). A record whose steps are all done adds nothing to a job
    that had no canary."""
    done = record.full or record.step >= len(record.steps)
    if view is None and (done or not record.steps):
        return None
    base = view or CanaryView()
    step = record.step + 1
    moved = base.step != step
    return dataclasses.replace(
        base,
        texts=record.steps or base.texts,
        step=step,
        done=done,
        paused=record.paused,
        promoted=record.promoted,
        promoted_full=record.full,
        aborted=record.aborted,
        abort_reason=base.abort_reason if record.aborted is not None else "",
        retried=record.retried,
        # Another step than the events last said: its counts and a pause's end are not known here.
        reached=base.reached and not moved,
        until=None if moved else base.until,
    )


class StepStatus(enum.StrEnum):
    DONE = "done"
    CURRENT = "current"
    TO_COME = "to come"


@dataclass(frozen=True, kw_only=True)
class StepRow:
    number: int
    text: str
    status: StepStatus


def step_rows(view: CanaryView) -> list[StepRow]:
    """Every step, in order, done / current / to come (an aborted canary's current step is where it stopped)."""
    rows = []
    for number, text in enumerate(view.texts, start=1):
        if view.done or number < view.step:
            status = StepStatus.DONE
        elif number == view.step:
            status = StepStatus.CURRENT
        else:
            status = StepStatus.TO_COME
        rows.append(StepRow(number=number, text=text or "?", status=status))
    return rows


def step_line(view: CanaryView, *, canary_pods: int, replicas: int) -> str:
    """``step 3/5: setWeight 40%, 4/10 pods`` (``canary_pods``: the new revision's available pods now)."""
    replicas = replicas or view.replicas
    if view.done:
        return f"steps done: {canary_pods}/{replicas} pods on the new revision"
    return f"step {view.step}/{view.count}: {view.current_text or '?'}, {canary_pods}/{replicas} pods"


def pause_left(view: CanaryView, *, now: float) -> float | None:
    """Seconds left of the current timed pause; None when the step is no timed pause (or is over)."""
    if view.until is None or view.done or view.aborted is not None:
        return None
    return max(0.0, view.until - now)
