"""Connections kept open from one job to the next in a long-lived process (the agent).

Every job opens its cluster from the kubeconfig anew, so that a changed file
is read at once. Each connection used to come with a pool of its own, so
every job's first requests paid a TLS handshake each (several at once, as
the job's lists start together): on the test cluster a fresh client's first
request takes 6.0 ms, one on a kept connection 1.5 ms (medians of 20).

``SharedPools`` hands a new client the pool of the previous client to the
same server as the same client identity. The key is everything the pool is
built from, and the *contents* of the CA, certificate and key files, not
only their names: a certificate rewritten in place gets a pool of its own,
and no request ever goes out on a connection made with the old one. Bearer
tokens are headers of each request, never part of a connection, so a
changed token needs nothing here. Each job still makes its own first
contact (``first_contact``): a warm connection answers it in a round trip.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

from kubernetes import client

#: pools kept at most; the least recently used goes first (a job still using it keeps it until it ends)
MAX_POOLS = 16


class SharedPools:
    def __init__(self, *, limit: int = MAX_POOLS) -> None:
        self._limit = limit
        self._pools: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()

    def adopt(self, api_client: client.ApiClient) -> bool:
        """Give ``api_client`` the pool kept for its server and identity (or keep its own for the next client);
        whether it got a kept one."""
        key = pool_key(api_client.configuration)
        with self._lock:
            kept = self._pools.get(key)
            if kept is None:
                self._pools[key] = api_client.rest_client.pool_manager
                if len(self._pools) > self._limit:
                    self._pools.popitem(last=False)
                return False
            self._pools.move_to_end(key)
        api_client.rest_client.pool_manager = kept
        return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._pools)


def pool_key(configuration: client.Configuration) -> tuple[Any, ...]:
    """What a client's pool is built from (``kubernetes.client.rest.RESTClientObject``), with the contents of the
    files it reads its TLS identity from."""
    return (
        configuration.host,
        configuration.verify_ssl,
        configuration.assert_hostname,
        configuration.tls_server_name,
        configuration.retries,
        repr(configuration.socket_options),
        configuration.connection_pool_maxsize,
        configuration.proxy,
        repr(sorted((configuration.proxy_headers or {}).items())),
        configuration.no_proxy,
        _file_identity(configuration.ssl_ca_cert),
        _file_identity(configuration.cert_file),
        _file_identity(configuration.key_file),
    )


def _file_identity(path: str | None) -> tuple[str | None, str]:
    """The file's name and a digest of its contents ("" when there is none or it cannot be read: such a client
    fails on its own, and shares nothing with a readable one)."""
    if not path:
        return (None, "")
    try:
        with open(path, "rb") as handle:
            return (path, hashlib.sha256(handle.read()).hexdigest())
    except OSError:
        return (path, "")
