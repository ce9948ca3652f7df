"""The blocker panel's facts: one entry per blocking PDB, its counts, and advice that fits them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_rollout.jobs.events.base import Envelope, PodRef
from kubectl_rollout.jobs.events.eviction import BlockReason
from kubectl_rollout.jobs.views import drain
from kubectl_rollout.jobs.views.blockers import pdb_blocks
from kubectl_rollout.jobs.views.pods import Blocker, PodState, PodView

STREAMS = Path(__file__).parent / "streams"


def _blocked(
    name: str,
    *,
    pdb: str | None,
    healthy: int | None,
    needed: int | None,
    expected: int | None,
    since: float = 100.0,
    next_try: float = 130.0,
) -> PodView:
    blocker = Blocker(
        reason=BlockReason.PDB_BLOCKED if pdb else BlockReason.THROTTLED,
        message="m",
        pdb=pdb,
        healthy=healthy,
        needed=needed,
        expected=expected,
        since=since,
        next_try_by=next_try,
    )
    return PodView(pod=PodRef(namespace="shop", name=name), state=PodState.BLOCKED, attempts=1, blocker=blocker)


@pytest.mark.parametrize(
    ("healthy", "needed", "expected", "never", "hint", "command"),
    [
        pytest.param(
            1,
            1,
            1,
            True,
            "it selects 1 pod and needs 1 healthy: it can never allow a disruption",
            "kubectl -n shop scale deployment/WORKLOAD --replicas=2",
            id="replicas-1-minAvailable-1",
        ),
        pytest.param(
            3,
            3,
            3,
            True,
            "it selects 3 pods and needs 3 healthy",
            "kubectl -n shop patch pdb web",
            id="maxUnavailable-0",
        ),
        pytest.param(
            2,
            2,
            3,
            False,
            "1 of its 3 pods is not healthy (not Ready); it allows a disruption once 1 more is Ready",
            "kubectl -n shop describe pdb web",
            id="one-unready",
        ),
        pytest.param(
            1,
            2,
            4,
            False,
            "3 of its 4 pods are not healthy (not Ready); it allows a disruption once 2 more are Ready",
            "kubectl -n shop describe pdb web",
            id="three-unready",
        ),
        pytest.param(
            2,
            2,
            None,
            False,
            "a pod evicted earlier is replaced and Ready",
            "kubectl -n shop describe pdb web",
            id="counts-from-the-429-only",
        ),
        pytest.param(
            None,
            None,
            None,
            False,
            "its counts are not known yet",
            "kubectl -n shop describe pdb web",
            id="nothing-known",
        ),
    ],
)
def test_advice_fits_the_counts(
    healthy: int | None, needed: int | None, expected: int | None, never: bool, hint: str, command: str
) -> None:
    pods = {"shop/a": _blocked("a", pdb="shop/web", healthy=healthy, needed=needed, expected=expected)}
    (block,) = pdb_blocks(pods)
    assert block.never is never
    assert hint in block.hint
    assert any(c.startswith(command) for c in block.unblock), block.unblock


def test_one_entry_per_pdb_longest_blocking_first_and_only_blocked_pods() -> None:
    pods = {
        "shop/a": _blocked("a", pdb="shop/web", healthy=2, needed=2, expected=3, since=120.0, next_try=150.0),
        "shop/b": _blocked("b", pdb="shop/db", healthy=1, needed=1, expected=1, since=110.0, next_try=140.0),
        "shop/c": _blocked("c", pdb="shop/web", healthy=2, needed=2, expected=3, since=105.0, next_try=135.0),
        "shop/d": _blocked("d", pdb=None, healthy=None, needed=None, expected=None),
        "shop/e": PodView(pod=PodRef(namespace="shop", name="e"), state=PodState.GONE),
    }
    blocks = pdb_blocks(pods)
    assert [b.pdb for b in blocks] == ["shop/web", "shop/db"]
    web = blocks[0]
    assert [p.pod.name for p in web.pods] == ["c", "a"]
    assert (web.since, web.next_try_by, web.counts) == (105.0, 135.0, "2/2")


def test_the_recorded_drain_blocks_on_its_pdb_then_not() -> None:
    view = drain.DrainView()
    blocks_at = {}
    for line in (STREAMS / "drain_pdb_and_bare_pod.jsonl").read_text().splitlines():
        envelope = Envelope.from_dict(json.loads(line))
        view = drain.fold(view, envelope)
        blocks_at[envelope.seq] = [(b.pdb, b.counts, len(b.pods)) for b in pdb_blocks(view.pods)]
    assert blocks_at[11] == [("streams-90e9ef/web", "2/2", 2)]
    assert blocks_at[max(blocks_at)] == []
