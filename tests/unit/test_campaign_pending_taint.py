"""The soft taint on a campaign's nodes still to come: which nodes carry it at each step, and the edit of a
node's taint list that keeps every other taint."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_rollout.campaign.pending_taint import NO_JOB, pending_taint, still_to_come
from kubectl_rollout.kube.node_taints import Taint, with_taint, without_taint
from kubectl_rollout.kube.record_names import CAMPAIGN_TAINT, CAMPAIGN_TAINT_EFFECT

WAVES = (("a1", "a2"), ("b1", "b2"), ("c1",))


@pytest.mark.parametrize(
    ("finished", "carrying"),
    [
        # the campaign starts: every node of every wave
        ((), ("a1", "a2", "b1", "b2", "c1")),
        # wave 1 finished (done, skipped, kept alike): its nodes lose it, the later waves keep it
        (("a1", "a2"), ("b1", "b2", "c1")),
        # one node of wave 2 finished, the other cut off by the window's end: the cut-off one keeps it
        (("a1", "a2", "b1"), ("b2", "c1")),
        # a resumed campaign whose first run finished a node of wave 2 only
        (("b2",), ("a1", "a2", "b1", "c1")),
        # the end: nothing left
        (("a1", "a2", "b1", "b2", "c1"), ()),
    ],
)
def test_the_nodes_still_to_come_carry_the_taint(finished: tuple[str, ...], carrying: tuple[str, ...]) -> None:
    assert still_to_come(WAVES, finished=set(finished)) == carrying


def test_a_node_in_two_waves_a_wave_run_again_is_named_once() -> None:
    assert still_to_come((("a",), ("b", "a")), finished=()) == ("a", "b")


def test_the_taint_names_the_job_soft_with_our_key() -> None:
    assert str(pending_taint("0123abcd")) == f"{CAMPAIGN_TAINT}=0123abcd:PreferNoSchedule"
    assert pending_taint(None).value == NO_JOB
    assert CAMPAIGN_TAINT_EFFECT == "PreferNoSchedule"


OURS = Taint(key=CAMPAIGN_TAINT, value="job1", effect=CAMPAIGN_TAINT_EFFECT)
POOL: dict[str, Any] = {"key": "pool", "value": "blue", "effect": "NoSchedule"}
NOT_READY: dict[str, Any] = {
    "key": "node.kubernetes.io/not-ready",
    "effect": "NoExecute",
    "timeAdded": "2026-11-26T10:00:00Z",
}
SAME_KEY_HARD: dict[str, Any] = {"key": CAMPAIGN_TAINT, "value": "job1", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ([], [OURS.as_plain()]),
        # every other taint kept as it was, in its place (timeAdded included)
        ([POOL, NOT_READY], [POOL, NOT_READY, OURS.as_plain()]),
        # there already: no write
        ([POOL, OURS.as_plain()], None),
        # another campaign's value (a killed one): taken over in its place
        ([{**OURS.as_plain(), "value": "old"}, POOL], [OURS.as_plain(), POOL]),
        # the same key with another effect is someone else's: kept
        ([SAME_KEY_HARD], [SAME_KEY_HARD, OURS.as_plain()]),
        # a duplicate of ours (a hand edit): one is kept
        ([OURS.as_plain(), POOL, OURS.as_plain()], [OURS.as_plain(), POOL]),
    ],
)
def test_putting_the_taint_on_keeps_every_other_taint(
    before: list[dict[str, Any]], after: list[dict[str, Any]] | None
) -> None:
    assert with_taint(before, OURS) == after


@pytest.mark.parametrize(
    ("before", "value", "after"),
    [
        ([POOL, OURS.as_plain(), NOT_READY], "job1", [POOL, NOT_READY]),
        ([POOL], "job1", None),
        ([], None, None),
        # another job's taint is not ours to lift...
        ([{**OURS.as_plain(), "value": "other"}], "job1", None),
        # ...unless any value is asked for (uncordon: the node back in service)
        ([{**OURS.as_plain(), "value": "other"}, POOL], None, [POOL]),
        # our key with another effect (someone's hard taint) stays
        ([SAME_KEY_HARD, OURS.as_plain()], None, [SAME_KEY_HARD]),
    ],
)
def test_taking_the_taint_off_keeps_every_other_taint(
    before: list[dict[str, Any]], value: str | None, after: list[dict[str, Any]] | None
) -> None:
    assert without_taint(before, key=CAMPAIGN_TAINT, effect=CAMPAIGN_TAINT_EFFECT, value=value) == after
