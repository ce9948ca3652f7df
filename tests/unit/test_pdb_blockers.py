"""The blocker panel's facts: one entry per blocking PDB, its counts, and advice that fits them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_rollout.jobs.events import drain as drain_events
from kubectl_rollout.jobs.events import restart as restart_events
from kubectl_rollout.jobs.events.base import Envelope, PodRef
from kubectl_rollout.jobs.events.drain import WorkloadRef
from kubectl_rollout.jobs.events.eviction import BlockReason
from kubectl_rollout.jobs.views import drain, restart
from kubectl_rollout.jobs.views.blockers import OwnerFacts, pdb_blocks
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
            "kubectl -n shop patch pdb web",
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


def test_no_placeholder_when_the_owner_is_not_known() -> None:
    """A restart, or a drain whose Role may not read ReplicaSets: no command with a name to fill in."""
    (block,) = pdb_blocks({"shop/a": _blocked("a", pdb="shop/solo", healthy=1, needed=1, expected=1)})
    assert not any("WORKLOAD" in c or " scale " in c for c in block.unblock), block.unblock
    assert "Give its workload more replicas" in block.hint
    assert (block.owners, block.surge, block.surgeable) == ((), "", ())


def _owned(kind: str, name: str = "solo") -> WorkloadRef:
    return WorkloadRef(kind=kind, namespace="shop", name=name)


@pytest.mark.parametrize(
    ("owner", "scale", "hint", "surge", "surgeable"),
    [
        pytest.param(
            _owned("Deployment"),
            "kubectl -n shop scale deployment/solo --replicas=2",
            "Give Deployment shop/solo more replicas",
            "drain --surge would start 1 extra replica of Deployment shop/solo on other nodes first, evict "
            "this pod, then restore the count; the PDB never drops below its minimum",
            True,
            id="deployment",
        ),
        pytest.param(
            _owned("ManagedWorkload"),
            "kubectl rollout-plus scale solo --replicas=2 -n shop",
            "Give managed workload shop/solo more replicas",
            "drain --surge would start 1 extra replica of managed workload shop/solo",
            True,
            id="managed-workload",
        ),
        pytest.param(
            _owned("StatefulSet"),
            "kubectl -n shop scale statefulset/solo --replicas=2",
            "Give StatefulSet shop/solo more replicas",
            "--surge cannot help StatefulSet shop/solo: a StatefulSet's pods have identities",
            False,
            id="statefulset",
        ),
        pytest.param(
            _owned("Pod", "a"),
            None,
            "It is a bare pod: no workload runs a copy of it",
            "--surge cannot help: pod shop/a is bare, nothing runs a copy",
            False,
            id="bare-pod",
        ),
        pytest.param(
            _owned("ReplicaSet", "solo-5d8f"),
            "kubectl -n shop scale replicaset/solo-5d8f --replicas=2",
            "Give ReplicaSet shop/solo-5d8f more replicas",
            "--surge cannot help ReplicaSet shop/solo-5d8f: its replicas are not a count a drain raises",
            False,
            id="replicaset-without-deployment",
        ),
        pytest.param(
            _owned("Job", "batch"),
            None,
            "Job shop/batch has no replica count to raise: let the PDB allow a disruption",
            "--surge cannot help Job shop/batch",
            False,
            id="job",
        ),
    ],
)
def test_the_advice_names_the_owner_and_what_surge_does_for_its_kind(
    owner: WorkloadRef, scale: str | None, hint: str, surge: str, surgeable: bool
) -> None:
    pods = {"shop/a": _blocked("a", pdb="shop/solo", healthy=1, needed=1, expected=1)}
    (block,) = pdb_blocks(pods, surge=OwnerFacts(owners={"shop/a": owner}))
    assert block.owners == (owner,)
    assert hint in block.hint
    scales = [c for c in block.unblock if " scale " in c]
    assert scales == ([scale] if scale else []), block.unblock
    assert block.surge.startswith(surge), block.surge
    assert block.surgeable == ((owner,) if surgeable else ())


def test_a_surging_drain_says_what_it_did_instead_of_offering_it() -> None:
    pods = {
        "shop/a": _blocked("a", pdb="shop/solo", healthy=1, needed=1, expected=1),
        "shop/b": _blocked("b", pdb="shop/web", healthy=2, needed=2, expected=2),
    }
    state = OwnerFacts(
        owners={"shop/a": _owned("Deployment"), "shop/b": _owned("Deployment", "web")},
        not_surged={"shop/a": "HorizontalPodAutoscaler shop/solo sets its replica count"},
        surging={"Deployment shop/web": 3},
    )
    solo, web = sorted(pdb_blocks(pods, surge=state), key=lambda b: b.pdb)
    assert (
        solo.surge
        == "--surge left Deployment shop/solo alone: HorizontalPodAutoscaler shop/solo sets its replica count"
    )
    assert web.surge.startswith("--surge raised Deployment shop/web to 3 replicas")
    assert solo.surgeable == web.surgeable == ()


def test_the_owner_event_folds_into_the_drain_view() -> None:
    pod = PodRef(namespace="shop", name="a", node="n1")
    event = drain_events.PodOwnerKnown(pod=pod, owner=_owned("Deployment"))
    envelope = Envelope.from_dict(Envelope(job="j", seq=1, at=1.0, event=event).as_dict())
    view = drain.fold(drain.DrainView(), envelope)
    assert view.owners == {"shop/a": _owned("Deployment")}
    assert view.owner_facts.owners == {"shop/a": _owned("Deployment")}


@pytest.mark.parametrize(
    ("workload", "owner", "scale"),
    [
        pytest.param("deployment/web", "Deployment shop/web", "scale deployment/web --replicas=2", id="deployment"),
        pytest.param("statefulset/db", "StatefulSet shop/db", "scale statefulset/db --replicas=2", id="statefulset"),
        pytest.param("daemonset/agent", "DaemonSet shop/agent", None, id="daemonset"),
    ],
)
def test_a_restart_names_its_workload_and_offers_no_surge(workload: str, owner: str, scale: str | None) -> None:
    planned = restart_events.RestartPlanned(workload=workload, namespace="shop", pods=("a",))
    view = restart.fold(restart.RestartView(), Envelope(job="j", seq=1, at=1.0, event=planned))
    pods = {"shop/a": _blocked("a", pdb="shop/web", healthy=1, needed=1, expected=1)}
    (block,) = pdb_blocks(pods, surge=view.owner_facts)
    assert [str(o) for o in block.owners] == [owner]
    assert [c for c in block.unblock if " scale " in c] == ([f"kubectl -n shop {scale}"] if scale else [])
    assert (block.surge, block.surgeable) == ("", ())
