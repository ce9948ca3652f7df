"""Connections one agent job leaves open for the next, against the real API server: reused only by the same TLS
identity, so that a client certificate rewritten in place is the one the next job authenticates with."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect
from kubectl_rollout.kube.shared_pools import SharedPools

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
