"""The drain's human output: kubectl's lines where kubectl has them, more where it says too little."""

from __future__ import annotations

import io
import json
import time

import pytest

from kubectl_rollout.cli.drain_output import drain_printer
from kubectl_rollout.cli.jsonl_output import JsonLinesPrinter
from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.eviction import (
    EvictionBlocked,
    EvictionMethod,
    EvictionStarted,
    PdbPodsUnhealthy,
    PodEvicted,
    PodFailed,
    PodGone,
    UnhealthyPod,
)
from kubectl_rollout.jobs.events.stream import EventStream

POD = PodRef(namespace="shop", name="web-1", node="node-a")


def render(*events: Event, live: bool = False) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    printer = drain_printer(out, err, live=live)
    stream = EventStream("job", printer)
    for event in events:
        stream.emit(event)
    printer.close()
    return out.getvalue(), err.getvalue()


def test_kubectl_wording_for_a_plain_drain() -> None:
    out, err = render(
        drain_events.NodeCordoned(node="node-a", changed=True),
        EvictionStarted(pod=POD, attempt=1),
        PodEvicted(pod=POD),
        PodGone(pod=POD, after=1.2),
        drain_events.NodeDrained(node="node-a", evicted=1, seconds=1.5),
        drain_events.DrainFinished(drained=("node-a",), failed=(), seconds=1.5),
    )
    assert out.splitlines() == [
        "node/node-a cordoned",
        "evicting pod shop/web-1",
        "pod/web-1 evicted",
        "node/node-a drained",
    ]
    assert err == ""


def test_dry_runs_say_so() -> None:
    out, _ = render(
        drain_events.NodeCordoned(node="node-a", changed=True, dry_run="client"),
        PodEvicted(pod=POD, dry_run="client"),
        drain_events.NodeCordoned(node="node-b", changed=False, dry_run="server"),
    )
    assert out.splitlines() == [
        "node/node-a cordoned (dry run)",
        "evicting pod shop/web-1 (dry run)",
        "node/node-b already cordoned (server dry run)",
    ]


def test_a_blocked_pod_names_its_pdb_counts_and_timing() -> None:
    now = time.time()
    _, err = render(
        EvictionBlocked(
            pod=POD,
            reason="pdb-blocked",
            message="",
            pdb="shop/web",
            healthy=3,
            needed=3,
            since=now - 5,
            attempts=2,
            next_try_by=now + 4,
        )
    )
    line = err.strip()
    assert line.startswith(
        "pod shop/web-1 (node node-a): PodDisruptionBudget shop/web (healthy 3, needs 3) "
        "allows no disruption now; blocked since "
    )
    assert "attempt 2" in line
    assert "retrying as soon as it has room, " in line


def test_a_pod_queued_before_its_first_request_shows_no_attempt() -> None:
    # The PDB visibly has no room, so the pod waits in line without spending a request.
    now = time.time()
    _, err = render(
        EvictionBlocked(
            pod=POD,
            reason="pdb-blocked",
            message="",
            pdb="shop/web",
            healthy=2,
            needed=2,
            since=now,
            attempts=0,
            next_try_by=now + 30,
        )
    )
    assert "allows no disruption now; blocked since " in err
    assert "attempt" not in err


def test_throttling_shows_retry_after() -> None:
    now = time.time()
    _, err = render(
        EvictionBlocked(
            pod=POD, reason="throttled", message="", since=now, attempts=1, next_try_by=now + 1.1, retry_after=1.0
        )
    )
    assert "the API server is throttling requests (Retry-After 1s)" in err


def test_failure_summary_lists_pods_with_reasons_and_node_state() -> None:
    other = PodRef(namespace="shop", name="web-2", node="node-a")
    blocked = PodFailed(pod=POD, reason="global timeout reached: 3s")
    terminating = PodFailed(pod=other, reason="global timeout reached: 3s", terminating=True)
    _, err = render(
        blocked,
        terminating,
        drain_events.NodeDrainFailed(
            node="node-a",
            reasons=(blocked.error, terminating.error),
            pending=("shop/web-1", "shop/web-2"),
            cordoned=True,
        ),
        drain_events.DrainFinished(drained=(), failed=("node-a",), seconds=3.0),
    )
    # kubectl's two wordings: refused until the timeout, and accepted but still terminating.
    never = 'error when evicting pods/"web-1" -n "shop": global timeout reached: 3s'
    still = 'error when waiting for pod "web-2" in namespace "shop" to terminate: global timeout reached: 3s'
    assert err.splitlines()[:2] == [never, still]
    # Joined as kubectl's utilerrors aggregate joins several errors.
    assert f'error: unable to drain node "node-a" due to error: [{never}, {still}], continuing command...' in err
    assert "There are pending nodes to be drained:\n node-a\n" in err
    assert (
        "node node-a (left cordoned): 2 pods not removed\n"
        "  pod shop/web-1: global timeout reached: 3s\n"
        "  pod shop/web-2: global timeout reached: 3s\n"
    ) in err


def test_a_node_failure_without_pods_gives_its_errors() -> None:
    _, err = render(
        drain_events.NodeDrainFailed(node="node-a", reasons=("cannot delete X: ns/a",), pending=(), cordoned=False),
        drain_events.DrainFinished(drained=(), failed=("node-a",), seconds=0.1),
    )
    assert 'error: unable to drain node "node-a" due to error: cannot delete X: ns/a, continuing command...' in err
    assert "node node-a (uncordoned): cannot delete X: ns/a" in err


@pytest.mark.parametrize(
    ("errors", "joined"),
    [
        # apimachinery's aggregate (util/errors): one error as is, repeats dropped, several in brackets.
        (("a",), "a"),
        (("a", "a"), "a"),
        (("a", "b"), "[a, b]"),
        (("a", "b", "a", "c"), "[a, b, c]"),
        ((), ""),
    ],
)
def test_errors_are_joined_as_kubectl_joins_them(errors: tuple[str, ...], joined: str) -> None:
    assert drain_events.join_errors(errors) == joined


@pytest.mark.parametrize(
    ("method", "line"),
    [(EvictionMethod.EVICT, "pod/web-1 evicted"), (EvictionMethod.DELETE, "pod/web-1 deleted")],
)
def test_a_removed_pod_is_evicted_or_deleted_as_kubectl_says(method: EvictionMethod, line: str) -> None:
    out, _ = render(PodGone(pod=POD, after=0.5, method=method))
    assert out.splitlines() == [line]


def test_live_footer_is_erased_before_each_line_and_at_the_end() -> None:
    out, _ = render(
        drain_events.NodeCordoned(node="node-a", changed=True), EvictionStarted(pod=POD, attempt=1), live=True
    )
    assert "\r\x1b[K" in out
    assert "1 evicting" in out
    assert out.endswith("\r\x1b[K")


def test_jsonl_is_one_object_per_event_with_type_and_time() -> None:
    out = io.StringIO()
    stream = EventStream("job1", JsonLinesPrinter(out), clock=lambda: 0.0)
    stream.emit(PodGone(pod=POD, after=1.5))
    (line,) = out.getvalue().splitlines()
    assert json.loads(line) == {
        "schema": 1,
        "job": "job1",
        "seq": 1,
        "at": "1970-01-01T00:00:00.000000Z",
        "type": "PodGone",
        "pod": {"namespace": "shop", "name": "web-1", "node": "node-a"},
        "after": 1.5,
        "method": "evict",
    }


@pytest.mark.parametrize(
    ("report", "line"),
    [
        pytest.param(
            PdbPodsUnhealthy(
                pdb="shop/web",
                pods=(UnhealthyPod(pod=PodRef(namespace="shop", name="web-2", node="node-b"), reason="not Ready"),),
                unhealthy=1,
                selected=3,
            ),
            "PodDisruptionBudget shop/web: 1 of its 3 pods not healthy: pod shop/web-2 (node node-b): not Ready",
            id="one",
        ),
        pytest.param(
            PdbPodsUnhealthy(
                pdb="shop/web",
                pods=(UnhealthyPod(pod=PodRef(namespace="shop", name="web-2"), reason="Pending (not scheduled)"),),
                unhealthy=12,
                selected=20,
            ),
            "PodDisruptionBudget shop/web: 12 of its 20 pods not healthy: pod shop/web-2 (node none): "
            "Pending (not scheduled); and 11 more",
            id="bounded",
        ),
        pytest.param(
            PdbPodsUnhealthy(pdb="shop/web", selected=3),
            "",
            id="all-healthy-says-nothing",
        ),
    ],
)
def test_a_pdbs_unhealthy_pods_are_named_on_stderr(report: PdbPodsUnhealthy, line: str) -> None:
    out, err = render(report)
    assert out == ""
    assert err.strip() == line
