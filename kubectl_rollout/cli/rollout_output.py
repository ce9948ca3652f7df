"""Printing a rollout job's events for people.

stdout carries the rollout's state in ``kubectl rollout status``' words (one
line each time it changes, or each time the driver acted) and the command's
own result lines (``workload/web configured``); stderr carries what the driver
did, indented (``  scale web-5d8f6c7b9 to 3``), what held it back, and how the
job ended when it did not succeed. The driver's actions of one pass share a
line, printed with the state they led to.

The formatters read what they need across events (the pass of actions, whether
the job follows another driver, the last state line) from the rollout view.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TextIO

from kubectl_rollout.cli.bluegreen_output import BLUE_GREEN_FORMATTERS
from kubectl_rollout.cli.text_output import API_FORMATTERS, Formatter, Line, TextPrinter
from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.views.rollout import RolloutView, fold
from kubectl_rollout.kube.holder_identity import display


def describe_action(event: ev.ReplicaSetAction) -> str:
    """What the driver did to one ReplicaSet, as one phrase."""
    if isinstance(event, ev.ReplicaSetCreated):
        return f"create the new ReplicaSet at {event.replicas} (revision {event.revision})"
    if isinstance(event, ev.ReplicaSetScaled):
        return f"scale {event.name} to {event.to_replicas}"
    if isinstance(event, ev.RevisionAssigned):
        return f"{event.name} becomes revision {event.revision}"
    return f"delete {event.name} (beyond revisionHistoryLimit)"


def following_line(event: ev.FollowingDriver) -> str:
    if not event.holder:
        return f"lease {event.lease} was just taken by another process; following its progress"
    return (
        f'managed workload "{event.workload}" is being driven by {display(event.holder)} '
        f"(lease {event.lease} valid for {event.seconds_left:.0f}s more); following its progress"
    )


def took_over_line(event: ev.TookOver) -> str:
    """Said only of a Lease taken before it lapsed: one that lapsed or was released is no news."""
    return f"lease {event.lease} taken over from {display(event.previous_holder)}: {event.holder_ended}"


def _closed_pass(view: RolloutView) -> Iterator[Line]:
    """The driver's actions of the pass just closed, on one line."""
    if view.closed_pass:
        yield "err", "  " + "; ".join(describe_action(action) for action in view.closed_pass)


def _aside(text: str, view: RolloutView) -> Iterator[Line]:
    """A line about what holds the driver, then where it stands (unchanged)."""
    yield "err", f"  {text}"
    if view.own_message:
        yield "out", view.own_message


def _progressed(event: ev.RolloutProgressed, view: RolloutView) -> Iterator[Line]:
    yield from _closed_pass(view)
    if event.message:
        yield "out", event.message


def _held_by_pdb(event: ev.ScaleDownHeldByPdb, view: RolloutView) -> Iterator[Line]:
    yield from _aside(f"scale-down held back by PodDisruptionBudget {', '.join(str(p) for p in event.pdbs)}", view)


def _rolling_back(event: ev.RollingBack, view: RolloutView) -> Iterator[Line]:
    yield from _aside(f"rolling back to revision {event.to_revision} ({event.replica_set})", view)


def _following(event: ev.FollowingDriver, view: RolloutView) -> Iterator[Line]:
    if not view.followed_message:  # said once, before the first state line of the driver followed
        yield "err", following_line(event)


def _took_over(event: ev.TookOver, _view: RolloutView) -> Iterator[Line]:
    if event.holder_ended:
        yield "err", took_over_line(event)


def _spec_changed(event: ev.SpecChanged, _view: RolloutView) -> Iterator[Line]:
    if event.change is ev.SpecChange.APPLY:
        yield "out", f"workload/{event.workload} {'created' if event.created else 'configured'}"
    elif event.change is ev.SpecChange.UNDO and event.skipped:
        # kubectl rollout undo's wording when the revision's template is already the current one
        yield (
            "out",
            (
                f"workload/{event.workload} skipped rollback (current template already matches revision "
                f"{event.to_revision})"
            ),
        )
    elif event.change is ev.SpecChange.UNDO:
        yield "err", f"workload/{event.workload} rolling back to revision {event.to_revision}"
    elif event.change is ev.SpecChange.PAUSE:
        yield "out", f"workload/{event.workload} paused"
    elif event.change is ev.SpecChange.RESUME:
        yield "out", f"workload/{event.workload} resumed"


def _finished(event: ev.RolloutFinished, view: RolloutView) -> Iterator[Line]:
    yield from _closed_pass(view)
    if event.outcome is ev.RolloutOutcome.RECORDED and event.driven_by:
        yield "err", event.message  # not carried out yet: who will, and how to follow it
        return
    if event.outcome in (ev.RolloutOutcome.ERROR, ev.RolloutOutcome.RECORDED):
        return  # an error is the command's to print (once, kubectl-style); a recorded change said so already
    if event.outcome is ev.RolloutOutcome.PAUSED or (event.succeeded and event.outcome is ev.RolloutOutcome.ABORTED):
        yield "err", event.message
    elif not event.succeeded:
        yield "err", f"error: {event.message}"


# --- canary steps -------------------------------------------------------------------------


def _step_started(event: cev.StepStarted, _view: RolloutView) -> Iterator[Line]:
    yield "out", f"step {event.step}/{event.steps}: {event.text}, {event.canary}/{event.replicas} pods"


def _step_reached(event: cev.StepReached, _view: RolloutView) -> Iterator[Line]:
    yield (
        "err",
        f"  step {event.step}/{event.steps} reached: {event.canary} canary, {event.stable} stable pods available",
    )


def _paused_at_step(event: cev.PausedAtStep, _view: RolloutView) -> Iterator[Line]:
    yield "out", f"step {event.step}/{event.steps}: paused ({event.text}) until promoted"


def _gate_started(event: cev.GateStarted, _view: RolloutView) -> Iterator[Line]:
    yield "err", f"  step {event.step}/{event.steps}: running {event.text}"


def _gate_measured(event: cev.GateMeasured, _view: RolloutView) -> Iterator[Line]:
    said = "".join(c if c.isprintable() else "?" for c in (event.value or event.detail)[:200])
    yield (
        "err",
        f"  step {event.step}/{event.steps}: measurement {event.measurement}/{event.count} {event.phase}: {said}",
    )


def _gate_ran(event: cev.GateRan, _view: RolloutView) -> Iterator[Line]:
    if event.ok:
        verdict = "passed"
    elif event.inconclusive:
        verdict = "inconclusive; paused until promoted"
    elif event.exit_code is None:
        # A command that has no exit code did not finish; a Prometheus gate has none to give.
        finished = " (did not finish)" if event.text.startswith("gate command") else ""
        verdict = f"failed{finished}; on failure: {event.on_failure}"
    else:
        verdict = f"failed with exit code {event.exit_code}; on failure: {event.on_failure}"
    last = event.output.strip().splitlines()[-1:] if event.output.strip() else []
    # The command's own words, but never its terminal escapes: a gate's output is not ours to trust.
    said = "".join(c if c.isprintable() else "?" for c in last[0][:200]) if last else ""
    yield "out", f"step {event.step}/{event.steps}: gate {verdict}" + (f" ({said})" if said else "")


def _gate_stopped(event: cev.GateStopped, _view: RolloutView) -> Iterator[Line]:
    yield (
        "out",
        f"step {event.step}/{event.steps}: gate stopped ({event.why})" + (f": {event.what}" if event.what else ""),
    )


def _promoted(event: cev.Promoted, _view: RolloutView) -> Iterator[Line]:
    past = "every remaining step" if event.full else f"step {event.step}/{event.steps}"
    yield "out", f"workload/{event.workload} promoted past {past}"


def _aborted(event: cev.Aborted, _view: RolloutView) -> Iterator[Line]:
    yield "out", f"workload/{event.workload} canary aborted at step {event.step}/{event.steps}: {event.reason}"


def _retried(event: cev.Retried, _view: RolloutView) -> Iterator[Line]:
    yield "out", f"workload/{event.workload} canary retried from step 1/{event.steps}"


def _steps_done(event: cev.StepsDone, _view: RolloutView) -> Iterator[Line]:
    yield "out", f"steps done ({event.steps}): the new revision takes every replica"


ROLLOUT_FORMATTERS: dict[type[Event], Formatter] = {
    cev.StepStarted: _step_started,
    cev.StepReached: _step_reached,
    cev.PausedAtStep: _paused_at_step,
    cev.GateStarted: _gate_started,
    cev.GateMeasured: _gate_measured,
    cev.GateRan: _gate_ran,
    cev.GateStopped: _gate_stopped,
    cev.Promoted: _promoted,
    cev.Aborted: _aborted,
    cev.Retried: _retried,
    cev.StepsDone: _steps_done,
    **BLUE_GREEN_FORMATTERS,
    **API_FORMATTERS,
    ev.RolloutProgressed: _progressed,
    ev.ScaleDownHeldByPdb: _held_by_pdb,
    ev.RollingBack: _rolling_back,
    ev.FollowingDriver: _following,
    ev.TookOver: _took_over,
    ev.SpecChanged: _spec_changed,
    ev.RolloutFinished: _finished,
}


def rollout_printer(out: TextIO, err: TextIO, *, live: bool = False) -> TextPrinter:
    """The text printer of a rollout job (apply, set image, undo, pause, resume, status): its commands show no
    live footer (``live``), the state lines are the log."""
    return TextPrinter(
        out, err, view=RolloutView(), fold=fold, formatters=ROLLOUT_FORMATTERS, final=(ev.RolloutFinished,), live=live
    )
