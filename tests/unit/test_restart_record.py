"""The cutoff an unfinished eviction-based restart leaves on its workload."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from kubectl_rollout.restart.record import (
    RESTART_CUTOFF,
    cutoff_for,
    format_cutoff,
    label_patch,
    predates,
    recorded_cutoff,
)

T0 = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def pod(created: datetime | None) -> Any:
    return SimpleNamespace(metadata=SimpleNamespace(creation_timestamp=created))


def workload(labels: dict[str, str] | None) -> Any:
    return SimpleNamespace(metadata=SimpleNamespace(labels=labels))


@pytest.mark.parametrize(
    ("created", "cutoff"),
    [
        ([], None),
        ([T0], T0),
        ([T0, T0 + timedelta(seconds=30), T0 - timedelta(days=3)], T0 + timedelta(seconds=30)),
        ([None, T0], T0),
    ],
)
def test_the_cutoff_is_the_newest_pod_the_restart_set_out_to_replace(
    created: list[datetime | None], cutoff: datetime | None
) -> None:
    assert cutoff_for([pod(c) for c in created]) == cutoff


@pytest.mark.parametrize(
    ("created", "still_to_replace"),
    [
        (T0 - timedelta(hours=1), True),
        # second resolution: a pod stamped in the cutoff's own second is replaced (again, at worst)
        (T0, True),
        (T0 + timedelta(seconds=1), False),
        # no timestamp at all: replace it rather than skip it
        (None, True),
    ],
)
def test_pods_at_or_before_the_cutoff_are_still_to_replace(created: datetime | None, still_to_replace: bool) -> None:
    assert predates(pod(created), T0) is still_to_replace


def test_the_cutoff_round_trips_through_the_label() -> None:
    patch = label_patch(T0 + timedelta(seconds=5))
    text = patch["metadata"]["labels"][RESTART_CUTOFF]
    assert text == str(int(T0.timestamp()) + 5)
    assert recorded_cutoff(workload({RESTART_CUTOFF: text})) == T0 + timedelta(seconds=5)


def test_the_label_does_not_depend_on_the_time_zone() -> None:
    berlin = T0.astimezone(ZoneInfo("Europe/Berlin"))
    assert format_cutoff(berlin) == format_cutoff(T0)


def test_removing_the_record_is_a_null_in_a_merge_patch() -> None:
    assert label_patch(None) == {"metadata": {"labels": {RESTART_CUTOFF: None}}}


@pytest.mark.parametrize("labels", [None, {}, {"other": "x"}])
def test_a_workload_without_the_label_has_no_unfinished_restart(labels: dict[str, str] | None) -> None:
    assert recorded_cutoff(workload(labels)) is None


@pytest.mark.parametrize("text", ["yesterday", "-5", "2026-11-22T12:00:00Z", ""])
def test_an_unreadable_label_says_how_to_recover(text: str) -> None:
    with pytest.raises(ValueError, match="remove it and start the restart afresh"):
        recorded_cutoff(workload({RESTART_CUTOFF: text}))
