"""A PDB told a surge's lowered count, followed until it counts it, against the real disruption controller.

The miss itself (the controller's recount reading a count its cache does not have yet) cannot be called up on
demand; these tests tell the follower a count the PDB does not hold yet, which is how a missed recount looks
from outside, and check what it then asks of the cluster, and when it stops.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cluster_setup import deploy
from integration.test_drain import add_pdb
from watching import Follower

from kubectl_rollout.drain.surge.pdb_recount import ASKED_AGAIN, RecountFollower, clear_count
from kubectl_rollout.eviction.pdb_watch import PdbWatch
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.watched_collection import WatchedCollection

pytestmark = pytest.mark.timeout(120)


class AskedAgain(Follower):
    """Every distinct request for a recount written on a namespace's PDBs, by PDB, and the counts they held."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        super().__init__()
        self.cluster, self.namespace = cluster, namespace
        self.stamps: dict[str, list[str]] = {}
        self.expected: dict[str, int] = {}

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.policy.list_namespaced_pod_disruption_budget, {"namespace": self.namespace}

    def _seed(self, items: list[Any]) -> None:
        for pdb in items:
            self._apply("ADDED", pdb)

    def _apply(self, kind: str, obj: Any) -> None:
        stamps = self.stamps.setdefault(obj.metadata.name, [])
        stamp = (obj.metadata.annotations or {}).get(ASKED_AGAIN)
        if stamp and stamp not in stamps:
            stamps.append(stamp)
        if obj.status is not None and obj.status.expected_pods is not None:
            self.expected[obj.metadata.name] = obj.status.expected_pods

    def start(self) -> AskedAgain:
        self._follow()
        return self

    def stop(self) -> AskedAgain:
        self._end()
        return self


@pytest.fixture
def pdbs(cluster: Cluster, namespace: str) -> Iterator[PdbWatch]:
    collection = WatchedCollection(
        cluster.policy.list_namespaced_pod_disruption_budget, namespace=namespace, description="PDBs"
    ).start()
    yield PdbWatch(collection)
    collection.stop()


def test_a_pdb_still_expecting_the_old_count_is_asked_again_until_it_counts_the_lowering(
    cluster: Cluster, namespace: str, pdbs: PdbWatch
) -> None:
    for app, replicas in (("web", 3), ("api", 2)):
        deploy(cluster, namespace, app, replicas)
        add_pdb(cluster, namespace, app, app=app, expected=replicas, max_unavailable=1)
    asked = AskedAgain(cluster, namespace).start()
    follower = RecountFollower(cluster, pdbs, first_wait=0.2)
    try:
        # api already counts 2: nothing to ask. web still counts 3 where the lowering to 2 was told.
        follower.expect((namespace, "api"), at_most=2, workload="Deployment/api")
        follower.expect((namespace, "web"), at_most=2, workload="Deployment/web")
        assert asked.wait(lambda: len(asked.stamps["web"]) >= 1, timeout=30), asked.stamps

        # The lowering lands (the ReplicaSet controller removes a pod: the PDB is counted again); the follower
        # lets go of web as soon as the watch shows it.
        cluster.apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 2}})
        assert pdbs.collection.wait_until(lambda _: not follower.following(), timeout=30, cancel=None)
        times = follower.asked_again
    finally:
        follower.stop()
    asked.stop()
    assert asked.expected == {"web": 2, "api": 2}
    assert asked.stamps["api"] == []
    assert len(asked.stamps["web"]) == times >= 1, (asked.stamps, times)


def test_a_pdb_that_never_counts_the_lowering_is_asked_three_times_further_apart_then_left_alone(
    cluster: Cluster, namespace: str, pdbs: PdbWatch
) -> None:
    deploy(cluster, namespace, "web", 3)
    add_pdb(cluster, namespace, "web", app="web", expected=3, max_unavailable=1)
    asked = AskedAgain(cluster, namespace).start()
    follower = RecountFollower(cluster, pdbs, first_wait=0.1)
    try:
        follower.expect((namespace, "web"), at_most=1, workload="Deployment/web")
        assert pdbs.collection.wait_until(lambda _: follower.asked_again == 3, timeout=30, cancel=None)
        assert not follower.following()
    finally:
        follower.stop()
    asked.stop()
    assert len(asked.stamps["web"]) == 3, asked.stamps
    # the restore's clear takes the request off with the note
    clear_count(cluster, [(namespace, "web")])
    pdb = cluster.policy.read_namespaced_pod_disruption_budget("web", namespace)
    assert ASKED_AGAIN not in (pdb.metadata.annotations or {})
