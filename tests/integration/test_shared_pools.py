"""Connections one agent job leaves open for the next, against the real API server: reused only by the same TLS
identity, so that a client certificate rewritten in place is the one the next job authenticates with; and open
when the next job starts, so that its first requests pay no handshake."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect
from kubectl_rollout.kube.shared_pools import SharedPools
from kubectl_rollout.kube.watched_collection import WatchedCollection

pytestmark = pytest.mark.timeout(60)


def mint_client_certificate(pki: Path, user: str, cert: Path, key: Path) -> None:
    """A client certificate for ``user`` signed by the test cluster's CA, written over ``cert`` and ``key``."""
    request = cert.with_suffix(".csr")
    new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key)]
    subject = ["-subj", f"/CN={user}/O=system:masters"]
    subprocess.run(
        ["openssl", "req", "-new", *new_key, *subject, "-out", str(request)], check=True, capture_output=True
    )
    authority = ["-CA", str(pki / "ca.crt"), "-CAkey", str(pki / "ca.key"), "-set_serial", str(time.time_ns())]
    subprocess.run(
        ["openssl", "x509", "-req", "-in", str(request), *authority, "-days", "1", "-out", str(cert)],
        check=True,
        capture_output=True,
    )


def whoami(cluster: Cluster) -> str:
    review = client.AuthenticationV1Api(cluster.api_client).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    )
    return str(review.status.user_info.username)


@pytest.fixture
def certificate_kubeconfig(kubeconfig: Path, tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """A kubeconfig whose user is a client certificate named by path (so that it can be rewritten in place):
    (kubeconfig, certificate, key, the cluster's PKI directory)."""
    admin: dict[str, Any] = json.loads(kubeconfig.read_text())
    server = admin["clusters"][0]["cluster"]
    pki = Path(server["certificate-authority"]).parent
    cert, key = tmp_path / "user.crt", tmp_path / "user.key"
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": server}],
        "users": [{"name": "by-certificate", "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "by-certificate", "context": {"cluster": "local", "user": "by-certificate"}}],
        "current-context": "by-certificate",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(document))
    return path, cert, key, pki


def test_a_client_certificate_rewritten_in_place_is_used_by_the_next_connection_at_once(
    certificate_kubeconfig: tuple[Path, Path, Path, Path],
) -> None:
    path, cert, key, pki = certificate_kubeconfig
    pools = SharedPools()
    settings = ConnectionSettings(kubeconfig=str(path))
    mint_client_certificate(pki, "alice", cert, key)

    first = connect(settings, pools=pools)
    assert whoami(first) == "alice"
    first.close()
    # The next job's client, the files unchanged: the same pool, its connection already open.
    second = connect(settings, pools=pools)
    assert second.api_client.rest_client.pool_manager is first.api_client.rest_client.pool_manager
    assert whoami(second) == "alice"
    second.close()

    # The certificate rotated under the same file names: a pool of its own, and the new identity at once.
    mint_client_certificate(pki, "bob", cert, key)
    third = connect(settings, pools=pools)
    assert whoami(third) == "bob"
    assert third.api_client.rest_client.pool_manager is not first.api_client.rest_client.pool_manager
    third.close()
    assert len(pools) == 2


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When each TCP+TLS connection to the API server was opened (by any client of this process)."""
    opened: list[float] = []
    original = urllib3.connection.HTTPSConnection.connect

    def counted(self: urllib3.connection.HTTPSConnection) -> None:
        opened.append(time.monotonic())
        original(self)

    monkeypatch.setattr(urllib3.connection.HTTPSConnection, "connect", counted)
    return opened


def run_watches(cluster: Cluster, count: int) -> list[WatchedCollection]:
    """``count`` watches at once, each holding a connection of its own while it streams."""
    return [
        WatchedCollection(
            cluster.core.list_namespaced_config_map, description=f"pool-test {n}", namespace="default"
        ).start()
        for n in range(count)
    ]


def stop_watches(watches: list[WatchedCollection]) -> None:
    """Stop them and wait for their threads, which put their (closed) connections back into the pool."""
    threads = [t for t in threading.enumerate() if t.name.startswith("watch pool-test")]
    for collection in watches:
        collection.stop()
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive(), f"{thread.name} did not end"


def run_a_job(pools: SharedPools, settings: ConnectionSettings) -> Cluster:
    """What a rollout job does to its pool: three watches, and a request on a connection of its own beside them
    (put back open); the watches' streams close their connections as they end and put them back after it."""
    cluster = connect(settings, pools=pools)
    watches = run_watches(cluster, 3)
    cluster.core.list_namespace(limit=1)
    stop_watches(watches)
    return cluster


def test_the_next_job_takes_an_open_connection_before_a_closed_watch_one(
    kubeconfig: Path, connects: list[float]
) -> None:
    pools = SharedPools()
    settings = ConnectionSettings(kubeconfig=str(kubeconfig))
    first = run_a_job(pools, settings)
    first.close()

    opened = len(connects)
    second = connect(settings, pools=pools)
    second.core.list_namespace(limit=1)  # and its first contact before it
    assert len(connects) == opened, "the next job's first request opened a connection while an open one waited"
    second.close()


def test_a_pool_kept_warm_after_a_job_serves_the_next_jobs_watches_without_a_handshake(
    kubeconfig: Path, connects: list[float]
) -> None:
    pools = SharedPools()
    settings = ConnectionSettings(kubeconfig=str(kubeconfig))
    first = run_a_job(pools, settings)
    warming = pools.keep_warm(first.api_client, connections=4)
    assert warming is not None
    warming.join(timeout=10)
    first.close()

    opened = len(connects)
    second = connect(settings, pools=pools)
    watches = run_watches(second, 3)  # three connections held at once
    second.core.list_namespace(limit=1)  # a fourth beside them
    stop_watches(watches)
    assert len(connects) == opened, f"{len(connects) - opened} connection(s) opened after the pool was kept warm"
    second.close()


def test_a_pool_no_client_shares_is_not_kept_warm(kubeconfig: Path) -> None:
    own = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))  # the CLI's client: a pool of its own
    assert SharedPools().keep_warm(own.api_client) is None
    own.close()
