"""A campaign's pure planning: budgets, rates, the order, the waves and the windows."""

from __future__ import annotations

import datetime as dt

import pytest

from kubectl_rollout.campaign.budget import Budget, parse_budget
from kubectl_rollout.campaign.order import CandidateNode, ordered
from kubectl_rollout.campaign.rate import parse_rate
from kubectl_rollout.campaign.waves import plan_waves
from kubectl_rollout.campaign.windows import parse_window, schedule_of
from kubectl_rollout.jobs.spec import NodeOrder

UTC = dt.UTC


@pytest.mark.parametrize(
    ("text", "total", "allowed"),
    [
        ("1", 10, 1),
        ("3", 2, 2),  # never more than there are
        ("20%", 10, 2),
        ("20%", 30, 6),
        ("10%", 10, 1),
        ("5%", 10, 1),  # karpenter rounds up: a small pool is not blocked
        ("25%", 10, 3),  # 2.5 rounds up
        ("1%", 1000, 10),
        ("100%", 7, 7),
        ("50%", 0, 0),
    ],
)
def test_a_budget_rounds_up_like_karpenters(text: str, total: int, allowed: int) -> None:
    assert parse_budget(text).allowed(total) == allowed


@pytest.mark.parametrize(
    ("text", "problem"),
    [("0", "lets no node out"), ("0%", "lets no node out"), ("101%", "more than 100%"), ("x", "not a count")],
)
def test_a_budget_that_means_nothing_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_budget(text)


@pytest.mark.parametrize(
    ("text", "starts", "count", "now", "earliest"),
    [
        ("2/10m", [], 2, 1000.0, 1000.0),
        ("2/10m", [900.0], 1, 1000.0, 1000.0),
        ("2/10m", [900.0], 2, 1000.0, 1500.0),  # one of the two must age out first
        ("2/10m", [100.0, 900.0], 1, 1000.0, 1000.0),  # 100 is older than 10 minutes
        ("3/60s", [10.0, 20.0, 30.0], 3, 40.0, 90.0),  # all three must age out
        ("3/60s", [10.0, 20.0, 30.0], 5, 40.0, 90.0),  # more than N is taken as N
    ],
)
def test_a_rate_says_when_the_next_nodes_may_start(
    text: str, starts: list[float], count: int, now: float, earliest: float
) -> None:
    assert parse_rate(text).earliest_start(starts=starts, count=count, now=now) == earliest


@pytest.mark.parametrize("text", ["3", "0/10m", "3/0s", "3/soon", "-1/1m"])
def test_a_rate_that_means_nothing_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="--rate"):
        parse_rate(text)


def _nodes(spec: str) -> list[CandidateNode]:
    """``"a:z1:3 b:z2:1"``: name, zone, load."""
    nodes = []
    for word in spec.split():
        name, zone, load = word.split(":")
        nodes.append(CandidateNode(name=name, zone=zone, load=int(load)))
    return nodes


def test_least_loaded_first_then_by_name_or_as_given() -> None:
    nodes = _nodes("c:z:5 a:z:2 b:z:2 d:z:0")
    assert [n.name for n in ordered(nodes, NodeOrder.LEAST_LOADED)] == ["d", "a", "b", "c"]
    assert [n.name for n in ordered(nodes, NodeOrder.GIVEN)] == ["c", "a", "b", "d"]


@pytest.mark.parametrize(
    ("nodes", "budget", "per_zone", "zone_budget", "rate", "waves"),
    [
        ("a:1:0 b:1:0 c:2:0 d:2:0 e:3:0", "2", False, None, None, ["a b", "c d", "e"]),
        ("a:1:0 b:1:0 c:2:0 d:2:0 e:3:0", "2", True, None, None, ["a b", "c d", "e"]),
        ("a:1:0 c:2:0 b:1:0 d:2:0 e:3:0", "2", True, None, None, ["a b", "c d", "e"]),  # zone by zone
        ("a:1:0 c:2:0 b:1:0 d:2:0 e:3:0", "2", False, None, None, ["a c", "b d", "e"]),  # mixed zones
        ("a:1:0 b:1:0 c:1:0 d:2:0 e:2:0 f:2:0", "50%", False, "1", None, ["a d", "b e", "c f"]),
        ("a:1:0 b:1:0 c:1:0 d:1:0", "100%", False, None, 3, ["a b c", "d"]),  # the rate cuts the wave
        (
            "a:1:0 b:1:0 c:1:0 d:1:0 e:1:0 f:1:0 g:1:0 h:1:0 i:1:0 j:1:0",
            "20%",
            False,
            None,
            None,
            ["a b", "c d", "e f", "g h", "i j"],
        ),
        ("", "1", False, None, None, []),
    ],
)
def test_waves_keep_the_budget_the_zones_and_the_rate(
    nodes: str, budget: str, per_zone: bool, zone_budget: str | None, rate: int | None, waves: list[str]
) -> None:
    planned = plan_waves(
        _nodes(nodes),
        budget=parse_budget(budget),
        per_zone=per_zone,
        zone_budget=parse_budget(zone_budget) if zone_budget else None,
        rate_nodes=rate,
    )
    assert [" ".join(n.name for n in w.nodes) for w in planned] == waves
    assert [w.index for w in planned] == list(range(1, len(waves) + 1))
    if per_zone:
        assert all(len(w.zones) == 1 for w in planned)


def test_thirty_nodes_in_three_zones_per_zone_at_twenty_percent() -> None:
    nodes = [CandidateNode(name=f"n{i:02}", zone=f"z{i % 3}") for i in range(30)]
    planned = plan_waves(nodes, budget=Budget(percent=20), per_zone=True)
    assert [len(w.nodes) for w in planned] == [6, 4] * 3
    assert [w.zones for w in planned] == [("z0",), ("z0",), ("z1",), ("z1",), ("z2",), ("z2",)]


def _t(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


# 2026-11-23 is a Monday; Europe/Berlin is UTC+1 in November, UTC+2 in summer.
@pytest.mark.parametrize(
    ("window", "at", "is_open", "next_opening", "closes_at"),
    [
        ("Mon-Fri 22:00-04:00 Europe/Berlin", "2026-11-23T20:59:59+00:00", False, "2026-11-23T21:00:00+00:00", None),
        (
            "Mon-Fri 22:00-04:00 Europe/Berlin",
            "2026-11-23T21:00:00+00:00",
            True,
            "2026-11-23T21:00:00+00:00",
            "2026-11-24T03:00:00+00:00",
        ),
        # Friday night's window runs into Saturday morning
        (
            "Mon-Fri 22:00-04:00 Europe/Berlin",
            "2026-11-28T02:30:00+00:00",
            True,
            "2026-11-28T02:30:00+00:00",
            "2026-11-28T03:00:00+00:00",
        ),
        # Saturday night: none opens before Monday
        ("Mon-Fri 22:00-04:00 Europe/Berlin", "2026-11-28T12:00:00+00:00", False, "2026-11-30T21:00:00+00:00", None),
        # a window ends at its END, not a second later
        ("daily 10:00-11:00", "2026-11-23T11:00:00+00:00", False, "2026-11-24T10:00:00+00:00", None),
        (
            "daily 10:15:30-10:15:50 UTC",
            "2026-11-23T10:15:40+00:00",
            True,
            "2026-11-23T10:15:40+00:00",
            "2026-11-23T10:15:50+00:00",
        ),
        (
            "Sat,Sun 00:00-24:00",
            "2026-11-29T23:59:59+00:00",
            True,
            "2026-11-29T23:59:59+00:00",
            "2026-11-30T00:00:00+00:00",
        ),
        ("Fri-Mon 01:00-02:00", "2026-11-25T12:00:00+00:00", False, "2026-11-27T01:00:00+00:00", None),
        # daylight saving: 22:00 Berlin is 20:00 UTC in summer
        (
            "daily 22:00-23:00 Europe/Berlin",
            "2026-07-01T20:30:00+00:00",
            True,
            "2026-07-01T20:30:00+00:00",
            "2026-07-01T21:00:00+00:00",
        ),
    ],
)
def test_windows_open_close_and_cross_midnight(
    window: str, at: str, is_open: bool, next_opening: str, closes_at: str | None
) -> None:
    schedule = schedule_of([window])
    assert schedule is not None
    t = _t(at)
    assert schedule.is_open_at(t) is is_open
    assert schedule.next_opening(t) == _t(next_opening)
    assert schedule.closes_at(t) == (_t(closes_at) if closes_at else None)


def test_windows_that_touch_close_as_one() -> None:
    schedule = schedule_of(["daily 10:00-11:00", "daily 11:00-12:00"])
    assert schedule is not None
    assert schedule.closes_at(_t("2026-11-23T10:30:00+00:00")) == _t("2026-11-23T12:00:00+00:00")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Mon-Fri 22:00-04:00 Mars/Olympus", "unknown time zone 'Mars/Olympus'"),
        ("Mon-Fry 22:00-04:00", "'Fry' is not a day"),
        ("Mon-Fri 22:00", "is not START-END"),
        ("Mon-Fri 25:00-04:00", "is not a time of day"),
        ("10:00-10:00", "START and END are equal"),
        ("", "expected \\[DAYS\\] START-END"),
        ("Mon", "missing START-END"),
    ],
)
def test_a_malformed_window_is_refused_with_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_window(text)
