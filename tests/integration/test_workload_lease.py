"""Taking a workload's Lease while its holder lets go of it, against the real API server.

A driver that finishes deletes its Lease; one that arrives at that moment (an ``abort`` following the
``promote`` that carries it out, say) finds it existing on its create and gone on its read or its write. The
holder's delete is made at exactly that point, by a real request: the 404 is the API server's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect
from kubectl_rollout.kube.workload_lease import WorkloadLease

pytestmark = pytest.mark.timeout(60)


class _ReleasedBefore:
    """The Lease API, with the other holder's release of the Lease made once, just before ``step``."""

    def __init__(self, api: client.CoordinationV1Api, step: str, release: WorkloadLease) -> None:
        self._api = api
        self._step = step
        self._release = release
        self.released = False

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._api, name)
        if name != self._step or self.released:
            return method

        def released_first(*args: Any, **kwargs: Any) -> Any:
            self.released = True
            self._release.release()
            return method(*args, **kwargs)

        return released_first


@pytest.fixture
def own_cluster(kubeconfig: Path, namespace: str) -> Iterator[Cluster]:
    """A connection of this test's own, whose Lease API the test may wrap."""
    connection = connect(ConnectionSettings(kubeconfig=str(kubeconfig), namespace=namespace))
    yield connection
    connection.close()


def _lease(cluster: Cluster, namespace: str, holder: str) -> WorkloadLease:
    return WorkloadLease(cluster, namespace, "web", holder, lease_name="rollout-plus.web", subject="s", advice="a")


@pytest.mark.parametrize("step", ["read_namespaced_lease", "replace_namespaced_lease"])
def test_a_lease_released_while_it_is_being_taken_is_created_again(
    own_cluster: Cluster, cluster: Cluster, namespace: str, step: str
) -> None:
    # The driver finishing: it holds the Lease (expired, so that a taker goes on to overwrite it) and deletes it
    # just before the taker's read, or just before its write.
    finishing = _lease(cluster, namespace, "finishing-driver")
    finishing.acquire()
    written = cluster.coordination.read_namespaced_lease("rollout-plus.web", namespace)
    written.spec.renew_time = written.spec.acquire_time = written.spec.acquire_time.replace(year=2000)
    finishing._version = cluster.coordination.replace_namespaced_lease(
        "rollout-plus.web", namespace, written
    ).metadata.resource_version

    racing = _ReleasedBefore(own_cluster.coordination, step, finishing)
    own_cluster.__dict__["coordination"] = racing
    arriving = _lease(own_cluster, namespace, "arriving-driver")
    arriving.acquire()

    assert racing.released, f"the release was to come before the taker's {step}"
    held = cluster.coordination.read_namespaced_lease("rollout-plus.web", namespace)
    assert held.spec.holder_identity == "arriving-driver"
    assert held.metadata.resource_version == arriving._version
    arriving.release()
    with pytest.raises(client.ApiException) as gone:
        cluster.coordination.read_namespaced_lease("rollout-plus.web", namespace)
    assert gone.value.status == 404


def test_take_if_free_takes_only_a_lease_nobody_holds(cluster: Cluster, namespace: str) -> None:
    first = _lease(cluster, namespace, "first-driver")
    assert first.take_if_free()
    taken = cluster.coordination.read_namespaced_lease("rollout-plus.web", namespace)
    assert taken.spec.holder_identity == "first-driver"

    # One already there is left for acquire to judge: take_if_free writes nothing then.
    second = _lease(cluster, namespace, "second-driver")
    assert not second.take_if_free()
    kept = cluster.coordination.read_namespaced_lease("rollout-plus.web", namespace)
    assert (kept.spec.holder_identity, kept.metadata.resource_version) == (
        "first-driver",
        taken.metadata.resource_version,
    )
    first.release()
    assert second.take_if_free()
    second.release()
