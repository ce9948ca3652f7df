"""The Rollout screen's steps panel says what the canary's gate is doing: running, its verdict, or stopped."""

from __future__ import annotations

import pytest

from kubectl_rollout.jobs.views.canary import CanaryView, GateStatus, GateView
from kubectl_rollout.tui.widgets.steps_panel import describe_steps

TEXTS = ("setWeight 20", "gate job: smoke", "setWeight 100")


@pytest.mark.parametrize(
    ("gate", "said"),
    [
        pytest.param(
            GateView(step=2, text="gate job: smoke", status=GateStatus.RUNNING),
            "gate job: smoke: running",
            id="running",
        ),
        pytest.param(
            GateView(step=2, text="gate job: smoke", status=GateStatus.FAILED, output="Job x: Failed", seconds=4.0),
            "gate job: smoke: failed, exit code none",
            id="failed",
        ),
        pytest.param(
            GateView(
                step=2,
                text="gate job: smoke",
                status=GateStatus.STOPPED,
                stopped="aborted: Job web-1-gate2-9f29 deleted",
            ),
            "gate job: smoke: stopped (aborted: Job web-1-gate2-9f29 deleted)",
            id="stopped",
        ),
    ],
)
def test_the_gate_line_says_what_the_gate_is_doing(gate: GateView, said: str) -> None:
    canary = CanaryView(workload="web", texts=TEXTS, step=2, canary=2, stable=8, replicas=10, gate=gate)
    plain = describe_steps(canary, canary_pods=2, replicas=10, now=0.0).plain
    assert f"gate step 2 {said}" in plain, plain
