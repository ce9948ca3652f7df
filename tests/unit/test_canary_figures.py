"""The canary benchmark's arithmetic (hack/canary_figures.py): segments cut at the record's step starts, the
readiness wait on each step's critical path, our overhead, requests attributed to steps by when the API server
received them, medians over runs."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))

from canary_figures import (
    PodLife,
    Request,
    Segment,
    SegmentFigures,
    attribute,
    audit_requests,
    figures,
    medians,
    readiness_wait,
    segments,
    total,
)

STEPS = "setWeight 50; pause 2s; setWeight 100"


@pytest.mark.parametrize(
    ("steps", "starts", "began", "ended", "expected"),
    [
        (
            STEPS,
            {0: 1.0, 1: 4.0, 2: 6.5, 3: 9.0},
            0.0,
            9.5,
            [
                ("start", 0.0, 1.0, 0.0),
                ("1 setWeight 50%", 1.0, 4.0, 0.0),
                ("2 pause 2s", 4.0, 6.5, 2.0),
                ("3 setWeight 100%", 6.5, 9.0, 0.0),
                ("end", 9.0, 9.5, 0.0),
            ],
        ),
        # a pause until promoted asks for no timed pause: its wait is a person's, counted as overhead
        (
            "setWeight 10; pause",
            {0: 1.0, 1: 2.0, 2: 3.0},
            0.5,
            3.0,
            [
                ("start", 0.5, 1.0, 0.0),
                ("1 setWeight 10%", 1.0, 2.0, 0.0),
                ("2 pause", 2.0, 3.0, 0.0),
                ("end", 3.0, 3.0, 0.0),
            ],
        ),
    ],
)
def test_segments_cut_at_the_step_starts(
    steps: str, starts: dict[int, float], began: float, ended: float, expected: list[tuple[str, float, float, float]]
) -> None:
    found = segments(steps=steps, step_starts=starts, began=began, ended=ended)
    assert [(s.label, s.start, s.end, s.pause) for s in found] == expected


@pytest.mark.parametrize(
    ("starts", "began", "ended", "message"),
    [
        ({0: 1.0, 1: 4.0, 3: 9.0}, 0.0, 10.0, r"step\(s\) \[3\]"),  # a start the watch never delivered
        ({0: 1.0, 1: 4.0, 2: 6.5}, 0.0, 10.0, r"step\(s\) \[4\]"),  # "every step done" never seen
        ({0: 1.0, 1: 4.0, 2: 3.0, 3: 9.0}, 0.0, 10.0, "back in time"),
        ({0: 1.0, 1: 4.0, 2: 6.5, 3: 9.0}, 2.0, 10.0, "back in time"),  # the first step before the command
        ({0: 1.0, 1: 4.0, 2: 6.5, 3: 9.0}, 0.0, 8.0, "back in time"),  # the command ended before the steps
    ],
)
def test_segments_refuse_an_incomplete_history(
    starts: dict[int, float], began: float, ended: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        segments(steps=STEPS, step_starts=starts, began=began, ended=ended)


STEP = Segment(label="1 setWeight 50%", start=10.0, end=20.0)


@pytest.mark.parametrize(
    ("scale_ups", "pods", "expected"),
    [
        # nothing created in the step (a pause, a step that only scales down): no readiness wait
        ([], [], 0.0),
        ([10.1], [PodLife(created=5.0, ready=6.0)], 0.0),
        # from the first pod's creation to the last one Ready
        ([], [PodLife(created=10.5, ready=11.5), PodLife(created=10.6, ready=12.0)], 1.5),
        # the ReplicaSet seen growing before its pods appear: counted from the scale-up
        ([10.2], [PodLife(created=10.5, ready=11.5), PodLife(created=10.6, ready=12.0)], 1.8),
        # a scale-up outside the step does not move its start
        ([9.0, 21.0], [PodLife(created=10.5, ready=11.5)], 1.0),
        # a pod Ready after the step ended was not on its path: bounded by the end
        ([10.0], [PodLife(created=10.0, ready=25.0)], 10.0),
        # a pod never Ready (deleted before): the wait ends at the last one that was
        ([10.0], [PodLife(created=10.0, ready=None), PodLife(created=10.1, ready=11.0)], 1.0),
        ([10.0], [PodLife(created=10.5, ready=None)], 0.0),
        # a pod created in the next step belongs to it
        ([], [PodLife(created=20.0, ready=21.0), PodLife(created=12.0, ready=13.0)], 1.0),
    ],
)
def test_readiness_wait_is_the_critical_path(scale_ups: list[float], pods: list[PodLife], expected: float) -> None:
    assert readiness_wait(STEP, scale_ups=scale_ups, pods=pods) == pytest.approx(expected)


RUN = [
    Segment(label="start", start=0.0, end=1.0),
    Segment(label="1 setWeight 50%", start=1.0, end=4.0),
    Segment(label="end", start=4.0, end=5.0),
]


@pytest.mark.parametrize(
    ("ats", "expected", "outside"),
    [
        ([], [{}, {}, {}], {}),
        ([0.0, 0.5], [{"get configmaps": 2}, {}, {}], {}),
        # at a boundary: the segment that begins there
        ([1.0, 3.99, 4.0], [{}, {"get configmaps": 2}, {"get configmaps": 1}], {}),
        # the command's exit is the last segment's (its own last request is answered before it exits)
        ([5.0], [{}, {}, {"get configmaps": 1}], {}),
        # before the command began, after it exited: no step's
        ([-0.1, 5.1], [{}, {}, {}], {"get configmaps": 2}),
    ],
)
def test_requests_go_to_the_step_they_were_received_in(
    ats: list[float], expected: list[dict[str, int]], outside: dict[str, int]
) -> None:
    counted, left = attribute([Request(at=at, verb="get", resource="configmaps") for at in ats], RUN)
    assert [dict(c) for c in counted] == expected
    assert dict(left) == outside


def test_figures_and_overhead_per_segment_and_in_total() -> None:
    found = segments(steps=STEPS, step_starts={0: 1.0, 1: 4.0, 2: 6.5, 3: 9.0}, began=0.0, ended=9.5)
    pods = [PodLife(created=1.2, ready=2.2), PodLife(created=6.7, ready=7.9)]
    requests = [
        Request(at=0.2, verb="get", resource="configmaps"),
        Request(at=1.1, verb="patch", resource="replicasets"),
        Request(at=3.9, verb="patch", resource="configmaps"),
        Request(at=6.6, verb="patch", resource="replicasets/scale"),
    ]
    run, outside = figures(found, scale_ups=[1.1, 6.6], pods=pods, requests=requests)
    assert outside == Counter()
    rows = [(f.label, f.seconds, f.pause, f.readiness, f.overhead, dict(f.requests)) for f in run]
    expected = [
        ("start", 1.0, 0.0, 0.0, 1.0, {"get configmaps": 1}),
        ("1 setWeight 50%", 3.0, 0.0, 1.1, 1.9, {"patch replicasets": 1, "patch configmaps": 1}),
        ("2 pause 2s", 2.5, 2.0, 0.0, 0.5, {}),
        ("3 setWeight 100%", 2.5, 0.0, 1.3, 1.2, {"patch replicasets/scale": 1}),
        ("end", 0.5, 0.0, 0.0, 0.5, {}),
    ]
    assert [(r[0], *(pytest.approx(x) for x in r[1:5]), r[5]) for r in rows] == expected
    summed = total(run)
    assert (summed.seconds, summed.pause) == (pytest.approx(9.5), 2.0)
    assert summed.readiness == pytest.approx(2.4)
    assert summed.overhead == pytest.approx(5.1)
    assert summed.requests == {
        "get configmaps": 1,
        "patch replicasets": 1,
        "patch configmaps": 1,
        "patch replicasets/scale": 1,
    }


def figure(label: str, seconds: float, requests: dict[str, float], overhead: float = 0.0) -> SegmentFigures:
    return SegmentFigures(
        label=label, seconds=seconds, pause=0.0, readiness=seconds / 2, overhead=overhead, requests=requests
    )


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ([[figure("a", 1.0, {"get pods": 3})]], [("a", 1.0, 0.5, {"get pods": 3})]),
        (
            [
                [figure("a", 1.0, {"get pods": 3}), figure("b", 5.0, {})],
                [figure("a", 3.0, {"get pods": 1, "list pods": 2}), figure("b", 4.0, {})],
                [figure("a", 2.0, {"get pods": 2}), figure("b", 9.0, {"watch pods": 1})],
            ],
            # a kind one run did not make counts 0 there
            [("a", 2.0, 1.0, {"get pods": 2, "list pods": 0}), ("b", 5.0, 2.5, {"watch pods": 0})],
        ),
        # an even number of runs: the middle two's mean
        (
            [[figure("a", 1.0, {"get pods": 1})], [figure("a", 2.0, {"get pods": 2})]],
            [("a", 1.5, 0.75, {"get pods": 1.5})],
        ),
    ],
)
def test_medians_segment_by_segment(
    runs: list[list[SegmentFigures]], expected: list[tuple[str, float, float, dict[str, float]]]
) -> None:
    assert [(f.label, f.seconds, f.readiness, dict(f.requests)) for f in medians(runs)] == expected


def test_the_median_overhead_is_the_runs_own_not_a_difference_of_medians() -> None:
    # seconds 10 / 12 / 30 (median 12), readiness 2 / 9 / 5 (median 5): 12 - 5 = 7; the runs' overheads
    # 8 / 3 / 25 have the median 8
    runs = [
        [SegmentFigures(label="a", seconds=seconds, pause=0.0, readiness=ready, overhead=seconds - ready)]
        for seconds, ready in ((10.0, 2.0), (12.0, 9.0), (30.0, 5.0))
    ]
    assert medians(runs)[0].overhead == 8.0


@pytest.mark.parametrize("runs", [[], [[figure("a", 1.0, {})], [figure("b", 1.0, {})]]])
def test_medians_refuse_runs_that_do_not_line_up(runs: list[list[SegmentFigures]]) -> None:
    with pytest.raises(ValueError, match="different segments"):
        medians(runs)


def audit_line(audit_id: str, stamp: str, *, agent: str = "kubectl-rollout-plus/0.1.0", **ref: str) -> str:
    return json.dumps(
        {
            "auditID": audit_id,
            "stage": "ResponseComplete",
            "verb": ref.pop("verb", "get"),
            "userAgent": agent,
            "requestURI": ref.pop("uri", "/api/v1/namespaces/ns/configmaps/x"),
            "requestReceivedTimestamp": stamp,
            "objectRef": ref or None,
        }
    )


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        # a request at two stages counts once
        (
            [
                audit_line("a", "2026-11-26T10:00:01.500000Z", resource="configmaps"),
                audit_line("a", "2026-11-26T10:00:01.500000Z", resource="configmaps"),
            ],
            [(1.5, "get configmaps")],
        ),
        # a subresource is named with its resource; a request without objectRef by its path
        (
            [
                audit_line(
                    "b", "2026-11-26T10:00:02.000000Z", verb="patch", resource="replicasets", subresource="scale"
                ),
                audit_line("c", "2026-11-26T10:00:02.250000Z", uri="/apis/apps/v1?timeout=32s"),
            ],
            [(2.0, "patch replicasets/scale"), (2.25, "get /apis/apps/v1")],
        ),
        # another user agent, or outside the window: not ours
        (
            [
                audit_line("d", "2026-11-26T10:00:02.000000Z", agent="kube-controller-manager/v1.34", resource="pods"),
                audit_line("e", "2026-11-26T09:59:59.000000Z", resource="pods"),
                audit_line("f", "2026-11-26T10:00:10.000001Z", resource="pods"),
            ],
            [],
        ),
    ],
)
def test_audit_requests_of_our_user_agent(lines: list[str], expected: list[tuple[float, str]]) -> None:
    origin = 1795687200.0  # 2026-11-26T10:00:00Z
    found = audit_requests(lines, agent="kubectl-rollout-plus/", since=origin, until=origin + 10)
    assert [(round(r.at - origin, 6), r.kind) for r in found] == expected
