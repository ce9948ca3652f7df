"""The reducers, folded over event streams recorded from real jobs (hack/record_streams.py).

Each case folds a stream up to a sequence number and checks what a front end
would show at that moment: pod states, blockers, node states, the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.views import drain as drain_view
from kubectl_rollout.jobs.views import restart as restart_view
from kubectl_rollout.jobs.views.drain import DrainView, NodeState
from kubectl_rollout.jobs.views.pods import PodState
from kubectl_rollout.jobs.views.restart import RestartView

STREAMS = Path(__file__).parent / "streams"
NS = "streams-90e9ef"
NODE_A, NODE_C = "streams-90e9ef-a", "streams-90e9ef-c"
WEB = (f"{NS}/web-57cb769559-5gnth", f"{NS}/web-57cb769559-j85p7", f"{NS}/web-57cb769559-c59r8")


def envelopes(name: str) -> list[Envelope]:
    return [Envelope.from_dict(json.loads(line)) for line in (STREAMS / name).read_text().splitlines()]


def fold_until(name: str, seq: int, fold: Callable[[Any, Envelope], Any], view: Any) -> Any:
    for envelope in envelopes(name):
        if envelope.seq > seq:
            break
        view = fold(view, envelope)
    return view


def states(view: Any) -> dict[str, PodState]:
    return {key: pod.state for key, pod in view.pods.items()}


DRAIN = "drain_pdb_and_bare_pod.jsonl"


@pytest.mark.parametrize(
    ("seq", "pods", "nodes", "blocking"),
    [
        pytest.param(3, {}, {NODE_A: NodeState.CORDONED, NODE_C: NodeState.CORDONED}, {}, id="both-cordoned-first"),
        pytest.param(
            4, dict.fromkeys(WEB, PodState.PENDING), {NODE_A: NodeState.DRAINING}, {}, id="node-a-pods-known-up-front"
        ),
        pytest.param(
            7, dict.fromkeys(WEB, PodState.EVICTING), {NODE_A: NodeState.DRAINING}, {}, id="three-evictions-in-flight"
        ),
        pytest.param(
            11,
            {WEB[0]: PodState.GONE, WEB[1]: PodState.BLOCKED, WEB[2]: PodState.BLOCKED},
            {NODE_A: NodeState.DRAINING},
            {f"{NS}/web": {WEB[1], WEB[2]}},
            id="two-held-by-the-pdb",
        ),
        pytest.param(
            14,
            {WEB[0]: PodState.GONE, WEB[1]: PodState.GONE, WEB[2]: PodState.BLOCKED},
            {NODE_A: NodeState.DRAINING},
            {f"{NS}/web": {WEB[2]}},
            id="one-released-when-the-pdb-had-room",
        ),
        pytest.param(
            22,
            dict.fromkeys(WEB, PodState.GONE),
            {NODE_A: NodeState.DRAINED, NODE_C: NodeState.FAILED},
            {},
            id="finished",
        ),
    ],
)
def test_drain_view(
    seq: int, pods: dict[str, PodState], nodes: dict[str, NodeState], blocking: dict[str, set[str]]
) -> None:
    view = fold_until(DRAIN, seq, drain_view.fold, DrainView())
    assert view.last_seq == seq
    assert states(view) == pods
    assert {name: view.nodes[name].state for name in nodes} == nodes
    assert {pdb: {str(p.pod) for p in held} for pdb, held in view.blocking_pdbs.items()} == blocking


def test_a_blocked_pod_keeps_its_blocker_with_counts_and_attempts() -> None:
    view = fold_until(DRAIN, 15, drain_view.fold, DrainView())
    pod = view.pods[WEB[2]]
    assert pod.state is PodState.BLOCKED
    assert pod.blocker is not None
    assert (pod.blocker.pdb, pod.blocker.healthy, pod.blocker.needed) == (f"{NS}/web", 2, 2)
    assert pod.blocker.next_try_by > pod.blocker.since > 0


def test_the_finished_drain_keeps_each_nodes_outcome() -> None:
    view = fold_until(DRAIN, 10**9, drain_view.fold, DrainView())
    assert view.nodes[NODE_A].evicted == 3
    failed = view.nodes[NODE_C]
    assert failed.cordoned
    assert failed.reasons == (f"cannot delete Pods that declare no controller (use --force to override): {NS}/bare",)
    assert view.finished is not None
    assert view.finished.failed == (NODE_C,)


def test_folding_is_idempotent_for_replayed_envelopes() -> None:
    once = fold_until(DRAIN, 10**9, drain_view.fold, DrainView())
    again = once
    for envelope in envelopes(DRAIN):
        again = drain_view.fold(again, envelope)
    assert again == once


RESTART = "restart_deployment.jsonl"


@pytest.mark.parametrize(
    ("seq", "replaced", "left", "waiting_for"),
    [
        pytest.param(2, 0, 3, None, id="planned"),
        pytest.param(6, 0, 3, "web-57cb769559-dbjdb", id="first-pod-gone-waiting-for-its-replacement"),
        pytest.param(10**9, 3, 0, None, id="finished"),
    ],
)
def test_restart_view(seq: int, replaced: int, left: int, waiting_for: str | None) -> None:
    view = fold_until(RESTART, seq, restart_view.fold, RestartView())
    assert view.workload == "deployment/web"
    assert len(view.order) == 3
    assert (view.replaced, view.left) == (replaced, left)
    assert (view.waiting_for.pod.name if view.waiting_for else None) == waiting_for


def test_the_finished_restart_has_its_result() -> None:
    view = fold_until(RESTART, 10**9, restart_view.fold, RestartView())
    assert view.finished is not None
    assert (view.finished.replaced, view.finished.failure) == (3, "")
    assert all(p.state is PodState.REPLACED for p in view.pods.values())
