"""A canary's steps as the Rollout screen shows them: the list (done, current, to come), the current step with
its counts, a timed pause's time left, the gate's state and last result, and who paused, promoted, aborted or
retried it and when."""

from __future__ import annotations

from rich.text import Text

from kubectl_rollout.jobs.views.canary import CanaryView, GateStatus, Mark, StepStatus, pause_left, step_line, step_rows
from kubectl_rollout.tui.formatting import clock_time, duration

#: lines of a gate's output shown (its last ones)
OUTPUT_LINES = 3

_MARKERS = {
    StepStatus.DONE: ("✓ ", "green"),
    StepStatus.CURRENT: ("▶ ", "bold cyan"),
    StepStatus.TO_COME: ("· ", "dim"),
}


def _mark(text: Text, what: str, mark: Mark | None, *, style: str = "") -> None:
    if mark is None:
        return
    by = "the step itself" if mark.by == "step" else mark.by
    text.append(f"  {what} by {by} at {clock_time(mark.at)}", style=style)


def describe_steps(canary: CanaryView, *, canary_pods: int, replicas: int, now: float) -> Text:
    text = Text()
    text.append("steps ", style="bold")
    for i, row in enumerate(step_rows(canary)):
        if i:
            text.append(" ")
        marker, style = _MARKERS[row.status]
        text.append(f"{marker}{row.number} {row.text}", style=style)
    text.append("\n")
    line = step_line(canary, canary_pods=canary_pods, replicas=replicas)
    if canary.aborted is not None:
        text.append("aborted ", style="bold red")
        text.append(f"at {line}")
        if canary.abort_reason:
            text.append(f": {canary.abort_reason}", style="red")
    else:
        text.append(line, style="bold")
        left = pause_left(canary, now=now)
        if left is not None:
            text.append(f"  pause: {duration(left)} left", style="yellow")
        elif canary.paused is not None:
            text.append("  paused until promoted (P)", style="bold yellow")
    _mark(text, "paused", canary.paused)
    _mark(text, "promoted" + (" --full" if canary.promoted_full else ""), canary.promoted)
    _mark(text, "aborted", canary.aborted, style="red")
    _mark(text, "retried", canary.retried)
    gate = canary.gate
    if gate is not None:
        text.append("\ngate ", style="bold")
        text.append(f"step {gate.step} {gate.text}: ")
        style = {
            GateStatus.RUNNING: "cyan",
            GateStatus.PASSED: "green",
            GateStatus.FAILED: "bold red",
            GateStatus.STOPPED: "yellow",
        }[gate.status]
        text.append(str(gate.status), style=style)
        if gate.status is GateStatus.STOPPED:
            text.append(f" ({gate.stopped})")
        elif gate.status is not GateStatus.RUNNING:
            code = "none (did not start, or timed out)" if gate.exit_code is None else str(gate.exit_code)
            text.append(f", exit code {code}, after {duration(gate.seconds)}")
            if gate.status is GateStatus.FAILED and gate.on_failure:
                text.append(f" → {gate.on_failure}", style="red")
        for out in gate.output.splitlines()[-OUTPUT_LINES:]:
            text.append(f"\n  │ {out}", style="dim")
    return text
