"""How far a job has come, and when it may end: ``done`` of ``total`` steps, and an estimate from its pace.

A drain's steps are its pods (gone or failed), a campaign's its nodes (done,
skipped or kept), a restart's the pods it replaces, a rollout's the desired
replicas that are updated and available.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_rollout.jobs.events.job import JobState
from kubectl_rollout.jobs.views import campaign, drain, restart, rollout
from kubectl_rollout.jobs.views.job import JobView
from kubectl_rollout.jobs.views.pods import FINAL_STATES


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    @property
    def fraction(self) -> float:
        """0.0 to 1.0; a job with nothing to do (total 0) counts as not started."""
        if self.total <= 0:
            return 0.0
        return min(1.0, self.done / self.total)


def progress_of(view: JobView) -> Progress:
    body = view.body
    if isinstance(body, campaign.CampaignView):  # a drain's view too: its steps are its nodes, not its pods
        finished = sum(1 for state in body.states.values() if state in campaign.FINISHED)
        return Progress(finished, len(body.states))
    if isinstance(body, drain.DrainView):
        total = len(body.pods)
        done = sum(1 for p in body.pods.values() if p.state in FINAL_STATES)
        if view.state is JobState.SUCCEEDED and total == 0:
            return Progress(1, 1)  # nodes with nothing to evict: drained
        return Progress(done, total)
    if isinstance(body, restart.RestartView):
        return Progress(body.replaced, len(body.order))
    if isinstance(body, rollout.RolloutView):
        new = next((r for r in body.rows if r.updated), None)
        desired = body.desired or (new.desired if new is not None else 0)
        if new is None or desired == 0:
            done = 1 if view.state is JobState.SUCCEEDED else 0
            return Progress(done, 1)
        return Progress(min(new.available, desired), desired)
    return Progress(1 if view.state is JobState.SUCCEEDED else 0, 1)


def eta_seconds(progress: Progress, *, started_at: float | None, now: float) -> float | None:
    """Seconds left at the pace so far; None before the first step (no pace yet) or once done."""
    if started_at is None or progress.done <= 0 or progress.done >= progress.total:
        return None
    elapsed = max(0.0, now - started_at)
    return elapsed * (progress.total - progress.done) / progress.done
