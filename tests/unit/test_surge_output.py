"""--surge in the drain's text output and in the drain view (pure: events in, lines and state out)."""

from __future__ import annotations

import io
import time

from kubectl_rollout.cli.drain_output import drain_printer
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events import surge as surge_events
from kubectl_rollout.jobs.events.base import Envelope, Event, PodRef
from kubectl_rollout.jobs.events.eviction import EvictionBlocked, PodFailed
from kubectl_rollout.jobs.events.stream import EventStream
from kubectl_rollout.jobs.views.drain import DrainView, fold

POD = PodRef(namespace="shop", name="db-0", node="node-a")
WEB = drain_events.WorkloadRef(kind="Deployment", namespace="shop", name="web")
DB = drain_events.WorkloadRef(kind="StatefulSet", namespace="shop", name="db")


def render(*events: Event) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    printer = drain_printer(out, err)
    stream = EventStream("job", printer)
    for event in events:
        stream.emit(event)
    printer.close()
    return out.getvalue(), err.getvalue()


def blocked() -> EvictionBlocked:
    return EvictionBlocked(
        pod=POD,
        reason="pdb-blocked",
        message="",
        pdb="shop/db",
        healthy=1,
        needed=1,
        since=time.time(),
        attempts=1,
        next_try_by=time.time() + 5,
    )


def test_a_surge_from_start_to_restore() -> None:
    out, err = render(
        surge_events.SurgeStarted(workload=WEB, original=1, replicas=2, pods=(POD,)),
        surge_events.SurgeReady(workload=WEB, replicas=2, seconds=1.04),
        surge_events.SurgeRestored(workload=WEB, replicas=1, drain="abc"),
    )
    assert out.splitlines() == [
        "Deployment shop/web surged from 1 to 2 replicas for 1 pod(s) on the drained node(s) "
        "(original count recorded on it)",
        "Deployment shop/web: extra pods Ready after 1.0s (2 replicas)",
        "Deployment shop/web restored to 1 replicas",
    ]
    assert err == ""


def test_a_leftover_is_reported_as_such() -> None:
    _, err = render(surge_events.SurgeRestored(workload=WEB, replicas=3, leftover=True, drain="abc"))
    assert err == "restored a surge left by drain abc: Deployment shop/web back to 3 replicas\n"
    _, err = render(
        surge_events.SurgeRestored(workload=WEB, replicas=5, leftover=True, drain="abc", count_restored=False)
    )
    assert "record removed; its count had been changed to 5 and was left so" in err


def test_the_blocker_line_says_why_the_workload_was_not_surged() -> None:
    _, err = render(
        surge_events.SurgeSkipped(workload=DB, reason="a StatefulSet's pods have identities", pods=(POD,)),
        blocked(),
    )
    lines = err.splitlines()
    assert lines[0] == "StatefulSet shop/db not surged: a StatefulSet's pods have identities"
    assert lines[1].startswith("pod shop/db-0 (node node-a): PodDisruptionBudget shop/db (healthy 1, needs 1)")
    assert lines[1].endswith("(not surged: a StatefulSet's pods have identities)")


def test_a_failed_drain_held_by_a_pdb_hints_at_surge_unless_it_surged() -> None:
    failed = (
        blocked(),
        PodFailed(pod=POD, reason="global timeout reached: 4s"),
        drain_events.NodeDrainFailed(
            node="node-a", reasons=("global timeout reached: 4s",), pending=(str(POD),), cordoned=True
        ),
        drain_events.DrainFinished(drained=(), failed=("node-a",), seconds=4.0),
    )
    _, err = render(*failed)
    assert "hint: PodDisruptionBudget shop/db had no room; with --surge" in err
    _, err = render(surge_events.SurgeSkipped(workload=DB, reason="identities", pods=(POD,)), *failed)
    assert "hint:" not in err


def test_the_view_follows_surges() -> None:
    view = DrainView()
    for seq, event in enumerate(
        [
            surge_events.SurgeStarted(workload=WEB, original=1, replicas=2),
            surge_events.SurgeSkipped(workload=DB, reason="identities", pods=(POD,)),
        ],
        start=1,
    ):
        view = fold(view, Envelope(job="j", seq=seq, at=0.0, event=event))
    assert dict(view.surging) == {"Deployment shop/web": 2}
    assert dict(view.not_surged) == {"shop/db-0": "identities"}
    view = fold(view, Envelope(job="j", seq=3, at=0.0, event=surge_events.SurgeRestored(workload=WEB, replicas=1)))
    assert dict(view.surging) == {}
    assert [r.replicas for r in view.restored] == [1]


def test_a_surge_held_by_a_pause_says_so_and_names_its_nodes() -> None:
    out, err = render(surge_events.SurgeWaitsForResume(nodes=("node-a", "node-b")))
    assert out == ""
    assert err == "the job is paused: the surge for node/node-a, node/node-b raises nothing until it is resumed\n"


def test_a_drain_stopped_for_a_surge_is_no_error() -> None:
    out, err = render(
        drain_events.NodeDrainStopped(
            node="node-a", why="stopped to drain the node again through a surge (jobs surge)", pending=("shop/db-0",)
        )
    )
    assert (
        out == "node/node-a: drain stopped to drain the node again through a surge (jobs surge), 1 pod(s) left to it\n"
    )
    assert err == ""
