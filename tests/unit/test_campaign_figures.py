"""The campaign benchmark's arithmetic (hack/campaign_figures.py): waves from the campaign's events, the
cluster's rounds from the audit log (an accepted eviction to the status write that allows the next), the
bound (the earliest schedule of the run's evictions, every round the quickest), and the cluster's own time in
each wave."""

from __future__ import annotations

import math
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "hack"))

from campaign_figures import (
    Round,
    Wave,
    allowed_at_once,
    app_of,
    cluster_rounds,
    cluster_time,
    earliest_ends,
    quickest,
    reactions,
    waves_of,
)

T0 = 1_800_000_000.0


def stamp(seconds: float) -> str:
    """Epoch seconds T0 + ``seconds`` as the audit log writes them."""
    return datetime.fromtimestamp(T0 + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def eviction(pod: str, *, done: float, code: int = 201) -> dict[str, Any]:
    return {
        "objectRef": {"resource": "pods", "subresource": "eviction", "name": pod},
        "responseStatus": {"code": code},
        "requestReceivedTimestamp": stamp(done - 0.01),
        "stageTimestamp": stamp(done),
    }


def status_write(pdb: str, *, received: float, allowed: int, refused: bool = False) -> dict[str, Any]:
    answer = (
        {"kind": "Status", "code": 409}
        if refused
        else {"kind": "PodDisruptionBudget", "status": {"disruptionsAllowed": allowed}}
    )
    return {
        "objectRef": {"resource": "poddisruptionbudgets", "subresource": "status", "name": pdb},
        "responseObject": answer,
        "requestReceivedTimestamp": stamp(received),
        "stageTimestamp": stamp(received + 0.005),
    }


@pytest.mark.parametrize(
    ("spec", "replicas", "expected"),
    [
        ({"maxUnavailable": 1}, 40, 1),
        ({"maxUnavailable": "20%"}, 200, 40),
        ({"maxUnavailable": "10%"}, 15, 2),  # rounded up
        ({"minAvailable": "90%"}, 40, 4),
        ({"minAvailable": "90%"}, 15, 1),  # 13.5 rounds up to 14 needed: 1 may go
        ({"minAvailable": 1}, 1, 0),
    ],
)
def test_allowed_at_once_rounds_as_the_disruption_controller(
    spec: dict[str, Any], replicas: int, expected: int
) -> None:
    assert allowed_at_once(spec, replicas) == expected


@pytest.mark.parametrize(("pod", "app"), [("web3-7d9f8b6c5-x2x9k", "web3"), ("api-gateway-5c7f9-abcde", "api-gateway")])
def test_a_pods_deployment_is_its_name_before_the_template_hash(pod: str, app: str) -> None:
    assert app_of(pod) == app


def test_waves_run_from_one_wave_start_to_the_next_and_the_last_to_the_campaigns_end() -> None:
    events: list[dict[str, Any]] = [
        {"type": "CampaignPlanned", "at": stamp(0)},
        {"type": "WaveStarted", "at": stamp(1)},
        {"type": "PodEvicted", "at": stamp(2), "pod": {"name": "web0-abc12-aaaaa"}},
        {"type": "PodEvicted", "at": stamp(3), "pod": {"name": "web0-abc12-bbbbb"}},
        {"type": "PodEvicted", "at": stamp(3), "pod": {"name": "api1-def34-ccccc"}},
        {"type": "WaveStarted", "at": stamp(10)},
        {"type": "PodEvicted", "at": stamp(11), "pod": {"name": "web0-abc12-ddddd"}},
        {"type": "CampaignFinished", "at": stamp(25)},
    ]

    waves = waves_of(events)

    assert [(w.start - T0, w.end - T0) for w in waves] == [(1, 10), (10, 25)]
    assert [w.evicted for w in waves] == [Counter({"web0": 2, "api1": 1}), Counter({"web0": 1})]
    assert [w.seconds for w in waves] == [9, 15]


def test_a_round_runs_from_the_evictions_completion_to_the_write_that_allows_one_again() -> None:
    entries = [
        eviction("web0-abc12-aaaaa", done=1.0),
        status_write("web0", received=1.2, allowed=0),  # the pod gone, its replacement not Ready: still shut
        status_write("web0", received=2.5, allowed=1, refused=True),  # a conflict changed nothing
        status_write("web0", received=2.9, allowed=1),
        eviction("web0-abc12-bbbbb", done=3.0),
        status_write("web0", received=4.6, allowed=1),
        status_write("web0", received=5.0, allowed=1),  # allowing still: no round of its own
        eviction("api1-def34-ccccc", done=3.0),  # a PDB that allows several at once is not measured
        status_write("api1", received=3.5, allowed=3),
        eviction("web1-ghi56-eeeee", done=6.0, code=429),  # refused: closes nothing
        status_write("web1", received=6.5, allowed=1),
    ]

    rounds = cluster_rounds(entries, {"web0", "web1"})

    assert [(r.app, round(r.closed - T0, 3), round(r.seconds, 3)) for r in rounds] == [
        ("web0", 1.0, 1.9),
        ("web0", 3.0, 1.6),
    ]
    assert quickest(rounds) == pytest.approx(1.6)


def test_a_write_received_before_the_eviction_completed_counts_as_no_wait() -> None:
    # A watch can deliver the status before the eviction's own answer is complete: never a negative round.
    entries = [eviction("web0-abc12-aaaaa", done=2.0), status_write("web0", received=1.99, allowed=1)]
    entries[1]["stageTimestamp"] = stamp(2.1)

    assert [r.seconds for r in cluster_rounds(entries, {"web0"})] == [0.0]


def test_no_round_has_no_quickest() -> None:
    assert math.isnan(quickest([]))


SPECS: dict[str, dict[str, Any]] = {"web0": {"maxUnavailable": 1}, "api0": {"minAvailable": "90%"}}


@pytest.mark.parametrize(
    ("evicted", "expected"),
    [
        pytest.param(Counter({"web0": 8}), 8 * 2.0, id="eight one at a time: eight readiness waits"),
        pytest.param(Counter({"web0": 1}), 2.0, id="one eviction: its replacement's readiness"),
        pytest.param(Counter({"api0": 9}), 3 * 2.0, id="nine four at a time: three rounds"),
        pytest.param(Counter({"api0": 4}), 2.0, id="four at a time: one round"),
        pytest.param(Counter({"web0": 3, "api0": 9}), 3 * 2.0, id="the slowest PDB decides"),
        pytest.param(Counter({"web0": 5, "api0": 9}), 5 * 2.0, id="the other slowest"),
        pytest.param(Counter(), 0.0, id="nothing evicted: over at once"),
    ],
)
def test_a_wave_takes_at_least_its_slowest_pdbs_readiness_chain(evicted: Counter[str], expected: float) -> None:
    wave = Wave(start=T0, end=T0 + 30, evicted=evicted)

    assert earliest_ends([wave], SPECS, 40, 2.0) == [pytest.approx(expected)]


def test_a_pdb_closed_at_a_waves_end_holds_the_next_wave_back() -> None:
    # web0's last pod of wave 1 goes at 4 s: wave 1 ends at 6 s, when its replacement can be Ready; web0's
    # first pod of wave 2 goes at once (its disruption is free since 6 s), the next two 2 s apart.
    waves = [
        Wave(start=T0, end=T0 + 10, evicted=Counter({"web0": 3})),
        Wave(start=T0 + 10, end=T0 + 20, evicted=Counter({"web0": 3, "api0": 4})),
    ]

    assert earliest_ends(waves, SPECS, 40, 2.0) == [pytest.approx(6.0), pytest.approx(12.0)]


def test_a_wave_waits_for_the_last_one_even_when_its_pdbs_are_others() -> None:
    waves = [
        Wave(start=T0, end=T0 + 10, evicted=Counter({"web0": 2})),
        Wave(start=T0 + 10, end=T0 + 20, evicted=Counter({"api0": 8})),
        Wave(start=T0 + 20, end=T0 + 30),
    ]

    assert earliest_ends(waves, SPECS, 40, 2.0) == [pytest.approx(4.0), pytest.approx(8.0), pytest.approx(8.0)]


def test_the_clusters_time_in_a_wave_is_its_longest_closed_pdb() -> None:
    wave = Wave(start=T0 + 10, end=T0 + 20)
    rounds = [
        Round(app="web0", closed=T0 + 9, opened=T0 + 11),  # begun in the wave before
        Round(app="web0", closed=T0 + 10, opened=T0 + 12),
        Round(app="web0", closed=T0 + 13, opened=T0 + 15.5),
        Round(app="web1", closed=T0 + 11, opened=T0 + 15),
        Round(app="web1", closed=T0 + 20, opened=T0 + 22),  # begun in the next wave
    ]

    assert cluster_time(wave, rounds) == pytest.approx(4.5)
    assert cluster_time(Wave(start=T0 + 30, end=T0 + 40), rounds) == 0.0


def test_a_reaction_is_from_an_allowance_to_the_next_eviction_in_the_same_wave() -> None:
    waves = [Wave(start=T0, end=T0 + 10), Wave(start=T0 + 10, end=T0 + 20)]
    rounds = [
        Round(app="web0", closed=T0 + 1, opened=T0 + 2.5),
        Round(app="web0", closed=T0 + 2.51, opened=T0 + 4),  # 10 ms after the allowance
        Round(app="web0", closed=T0 + 4.2, opened=T0 + 6),  # 200 ms
        Round(app="web0", closed=T0 + 12, opened=T0 + 13),  # the next wave: the soak lay between, no reaction
        Round(app="web1", closed=T0 + 3, opened=T0 + 3.9),
        Round(app="web1", closed=T0 + 3.85, opened=T0 + 5),  # before the write's answer: no delay at all
    ]

    assert [round(r, 3) for r in sorted(reactions(rounds, waves))] == [0.0, 0.01, 0.2]
