"""Which clients share a kept connection pool: the same server and TLS identity, file contents included."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from kubectl_rollout.kube.shared_pools import SharedPools, pool_key


def api_client(host: str = "https://127.0.0.1:6443", *, cert: Path | None = None) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = host
    if cert is not None:
        configuration.cert_file = str(cert)
    return client.ApiClient(configuration)


def test_the_next_client_of_the_same_server_and_identity_gets_the_kept_pool() -> None:
    pools = SharedPools()
    first, second = api_client(), api_client()
    assert not pools.adopt(first)
    assert pools.adopt(second)
    assert second.rest_client.pool_manager is first.rest_client.pool_manager


def test_another_server_or_certificate_contents_make_another_key(tmp_path: Path) -> None:
    cert = tmp_path / "user.crt"
    cert.write_text("alice")
    alice = pool_key(api_client(cert=cert).configuration)
    assert pool_key(api_client(cert=cert).configuration) == alice
    assert pool_key(api_client("https://10.0.0.1:6443", cert=cert).configuration) != alice
    cert.write_text("bob")  # rotated in place: same name, another identity
    assert pool_key(api_client(cert=cert).configuration) != alice


def test_the_least_recently_used_pool_goes_past_the_limit() -> None:
    pools = SharedPools(limit=2)
    a, b, c = (api_client(f"https://10.0.0.{n}:6443") for n in (1, 2, 3))
    for kept in (a, b):
        pools.adopt(kept)
    assert pools.adopt(api_client("https://10.0.0.1:6443"))  # a used again: b is now the oldest
    pools.adopt(c)
    assert len(pools) == 2
    assert pools.adopt(api_client("https://10.0.0.1:6443"))  # a kept
    assert not pools.adopt(api_client("https://10.0.0.2:6443"))  # b was dropped
