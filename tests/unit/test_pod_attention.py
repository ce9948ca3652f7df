"""The Drain screen's pod order: what needs a person's eyes first, each group in the order given."""

from __future__ import annotations

import pytest

from kubectl_rollout.jobs.events.base import PodRef
from kubectl_rollout.jobs.views.pods import ATTENTION, PodState, PodView, by_attention


def _pod(name: str, state: PodState) -> PodView:
    return PodView(pod=PodRef(namespace="ns", name=name), state=state)


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        pytest.param(
            [("gone-1", PodState.GONE), ("gone-2", PodState.GONE), ("held", PodState.BLOCKED)],
            ["held", "gone-1", "gone-2"],
            id="a-held-pod-after-gone-ones-comes-first",
        ),
        pytest.param(
            [
                ("t", PodState.TERMINATING),
                ("p", PodState.PENDING),
                ("g", PodState.GONE),
                ("e", PodState.EVICTING),
                ("f", PodState.FAILED),
                ("b", PodState.BLOCKED),
                ("r", PodState.REPLACED),
            ],
            ["b", "f", "e", "p", "t", "g", "r"],
            id="every-state",
        ),
        pytest.param(
            [("p2", PodState.PENDING), ("b2", PodState.BLOCKED), ("p1", PodState.PENDING), ("b1", PodState.BLOCKED)],
            ["b2", "b1", "p2", "p1"],
            id="stable-within-a-group",
        ),
        pytest.param([], [], id="none"),
    ],
)
def test_by_attention(given: list[tuple[str, PodState]], shown: list[str]) -> None:
    assert [p.pod.name for p in by_attention(_pod(n, s) for n, s in given)] == shown


def test_every_state_has_a_place() -> None:
    assert set(ATTENTION) == set(PodState)
