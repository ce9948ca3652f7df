"""Naming a PDB's unhealthy pods: why each one does not count, since when, bounded, said once per change."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client
from podmodels import pod

from kubectl_rollout.eviction.pdb_pods import PdbPodsReporter, unhealthy_pods, unhealthy_since, why_unhealthy
from kubectl_rollout.jobs.events.base import Envelope, Event, PodRef
from kubectl_rollout.jobs.events.eviction import BlockReason, EvictionBlocked, PdbPodsUnhealthy, UnhealthyPod
from kubectl_rollout.jobs.views import drain, restart
from kubectl_rollout.jobs.views.blockers import pdb_blocks

T0 = datetime(2026, 11, 23, 10, 0, 0, tzinfo=UTC)


def _pod(name: str = "p", *, node: str = "node-a", ready: bool = True, since: datetime = T0, **kw: Any) -> Any:
    made = pod(name, ready=ready, **kw)
    made.spec.node_name = node or None
    made.status.conditions[0].last_transition_time = since
    return made


def _waiting(reason: str, *, init: bool = False, **kw: Any) -> Any:
    made = _pod(ready=False, **kw)
    status = client.V1ContainerStatus(
        name="c",
        image="i",
        image_id="",
        ready=False,
        restart_count=3,
        state=client.V1ContainerState(waiting=client.V1ContainerStateWaiting(reason=reason)),
    )
    if init:
        made.status.init_container_statuses = [status]
    else:
        made.status.container_statuses = [status]
    return made


@pytest.mark.parametrize(
    ("the_pod", "reason"),
    [
        pytest.param(_pod(), None, id="ready"),
        pytest.param(_pod(ready=False), "not Ready", id="running-not-ready"),
        pytest.param(_waiting("CrashLoopBackOff"), "CrashLoopBackOff", id="crash-loop"),
        pytest.param(_waiting("ImagePullBackOff", phase="Pending"), "ImagePullBackOff", id="image-pull"),
        pytest.param(_waiting("PodInitializing", init=True, phase="Pending"), "PodInitializing", id="init-container"),
        pytest.param(_pod(ready=False, phase="Pending"), "Pending", id="pending-on-a-node"),
        pytest.param(_pod(ready=False, phase="Pending", node=""), "Pending (not scheduled)", id="not-scheduled"),
        pytest.param(_pod(deleted_at=T0), "terminating", id="ready-but-terminating"),
        pytest.param(_pod(ready=False, phase="Succeeded"), "Succeeded", id="finished"),
    ],
)
def test_why_a_pod_does_not_count_as_healthy(the_pod: Any, reason: str | None) -> None:
    assert why_unhealthy(the_pod) == reason


def test_since_is_the_ready_transition_else_the_creation() -> None:
    assert unhealthy_since(_pod(ready=False, since=T0)) == T0.timestamp()
    created = _pod(ready=False)
    created.status.conditions = None
    created.metadata.creation_timestamp = T0
    assert unhealthy_since(created) == T0.timestamp()


def test_unhealthy_pods_longest_first_and_bounded() -> None:
    pods = [_pod(f"p{i}", ready=False, since=T0.replace(minute=59 - i)) for i in range(12)]
    pods.append(_pod("well"))
    event = unhealthy_pods("ns/web", pods, named=10)
    assert (event.pdb, event.unhealthy, event.selected) == ("ns/web", 12, 13)
    assert [p.pod.name for p in event.pods] == [f"p{i}" for i in range(11, 1, -1)]
    assert event.pods[0] == UnhealthyPod(
        pod=PodRef(namespace="ns", name="p11", node="node-a"),
        reason="not Ready",
        since=T0.replace(minute=48).timestamp(),
    )


class _Pods:
    """Stands in for the API server's pod list: returns the pods the test put there."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.lists = 0

    def list_namespaced_pod(self, namespace: str, **kwargs: Any) -> Any:
        # The reporter reads the list as JSON (``_preload_content=False``), as the API server sends it.
        assert kwargs.get("_preload_content") is False
        self.lists += 1
        body = {"items": client.ApiClient().sanitize_for_serialization(list(self.items))}
        return SimpleNamespace(data=json.dumps(body).encode(), release_conn=lambda: None)


def test_the_reporter_lists_at_most_once_per_interval_and_sends_only_changes() -> None:
    pods = _Pods()
    cluster = SimpleNamespace(core=pods, api_client=client.ApiClient())
    sent: list[Event] = []
    now = [0.0]
    reporter = PdbPodsReporter(cluster, sent.append, interval=2.0, clock=lambda: now[0])  # type: ignore[arg-type]
    budget = client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(namespace="ns", name="web"),
        spec=client.V1PodDisruptionBudgetSpec(selector=client.V1LabelSelector(match_labels={"app": "web"})),
    )
    pods.items = [_pod("a", ready=False), _pod("b")]
    reporter.report(budget)
    reporter.report(budget)  # within the interval: not even listed
    now[0] = 3.0
    reporter.report(budget)  # listed, nothing changed: not sent
    pods.items = [_pod("a"), _pod("b")]
    now[0] = 6.0
    reporter.report(budget)
    assert pods.lists == 3
    assert [(e.unhealthy, [p.pod.name for p in e.pods]) for e in sent if isinstance(e, PdbPodsUnhealthy)] == [
        (1, ["a"]),
        (0, []),
    ]


def _blocked_envelope(seq: int) -> Envelope:
    event = EvictionBlocked(
        pod=PodRef(namespace="ns", name="front", node="node-a"),
        reason=BlockReason.PDB_BLOCKED,
        message="m",
        pdb="ns/web",
        healthy=1,
        needed=1,
        expected=2,
        since=100.0,
        next_try_by=130.0,
    )
    return Envelope(job="j", seq=seq, at=100.0, event=event)


def test_drain_and_restart_views_carry_the_newest_report_to_the_blocker() -> None:
    sick = UnhealthyPod(pod=PodRef(namespace="ns", name="sick", node="node-b"), reason="not Ready", since=90.0)
    first = PdbPodsUnhealthy(pdb="ns/web", pods=(sick,), unhealthy=1, selected=2)
    for fold, view in ((drain.fold, drain.DrainView()), (restart.fold, restart.RestartView())):
        view = fold(view, _blocked_envelope(1))  # type: ignore[operator]
        (block,) = pdb_blocks(view.pods, view.pdb_pods)
        assert (block.unhealthy, block.unhealthy_count) == ((), None)  # not looked at yet
        view = fold(view, Envelope(job="j", seq=2, at=101.0, event=first))  # type: ignore[operator]
        (block,) = pdb_blocks(view.pods, view.pdb_pods)
        assert (block.unhealthy, block.unhealthy_count) == ((sick,), 1)
        assert block.unblock[-1] == "kubectl -n ns describe pod sick"  # where to look first
        healed = PdbPodsUnhealthy(pdb="ns/web", selected=2)
        view = fold(view, Envelope(job="j", seq=3, at=102.0, event=healed))  # type: ignore[operator]
        (block,) = pdb_blocks(view.pods, view.pdb_pods)
        assert (block.unhealthy, block.unhealthy_count) == ((), 0)


def test_drain_fold_many_folds_reports_as_fold_does() -> None:
    sick = UnhealthyPod(pod=PodRef(namespace="ns", name="sick", node="node-b"), reason="CrashLoopBackOff")
    envelopes = [
        _blocked_envelope(1),
        Envelope(job="j", seq=2, at=101.0, event=PdbPodsUnhealthy(pdb="ns/web", pods=(sick,), unhealthy=1)),
    ]
    one_by_one = drain.DrainView()
    for envelope in envelopes:
        one_by_one = drain.fold(one_by_one, envelope)
    assert drain.fold_many(drain.DrainView(), envelopes) == one_by_one
    assert one_by_one.pdb_pods["ns/web"].pods == (sick,)
