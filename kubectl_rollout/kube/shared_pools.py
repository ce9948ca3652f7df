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

Two things keep the kept connections warm for the next job. A watch's
stream closes its connection when it ends, and urllib3's pool hands out the
connection put back last: every job's first requests got its predecessor's
closed watch connections and paid a TLS handshake each (four per rollout
job, three of them at once, all before its spec change is written). A
shared pool puts closed connections under the open ones
(``_OpenFirstQueue``). And a job's watches take connections of their own,
which die with them, so when a job ends its pool is topped up in the
background to ``WARM_CONNECTIONS`` open ones (``keep_warm``): the handshakes
then happen after the job, not on the next one's critical path. On a cluster
across a network each handshake is a few round trips.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import queue
import ssl
import threading
from collections import OrderedDict
from typing import Any

import urllib3
from kubernetes import client
from urllib3.util.wait import wait_for_read

log = logging.getLogger(__name__)

#: pools kept at most; the least recently used goes first (a job still using it keeps it until it ends)
MAX_POOLS = 16
#: open connections a pool is topped up to when a job ends: a rollout job's four watches and its own requests
WARM_CONNECTIONS = 6
#: how long a new connection waits for what a TLS 1.3 server sends after the handshake (its session tickets;
#: kube-apiserver's come at once), and then for more of it
_SETTLE_SECONDS = 0.2
_SETTLE_MORE_SECONDS = 0.01
#: a connection kept warm gives up on a server that does not answer its handshake after this long
_CONNECT_SECONDS = 5.0


def _open(connection: Any) -> bool:
    return connection is not None and not connection.is_closed


class _OpenFirstQueue(queue.LifoQueue):  # type: ignore[type-arg]
    """urllib3's pool queue (last in, first out), with closed connections and empty slots put under the open ones,
    so that a request takes an open connection whenever there is one."""

    def _put(self, item: Any) -> None:
        if _open(item):
            self.queue.append(item)
        else:
            self.queue.insert(0, item)

    def open_count(self) -> int:
        with self.mutex:
            return sum(1 for item in self.queue if _open(item))

    def take_unopened(self) -> tuple[bool, Any]:
        """Take out a closed connection or an empty slot, to open it: (whether there was one, it)."""
        with self.mutex:
            for index, item in enumerate(self.queue):
                if not _open(item):
                    del self.queue[index]
                    self.not_full.notify()
                    return True, item
        return False, None


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    QueueCls = _OpenFirstQueue


class _HTTPPool(urllib3.HTTPConnectionPool):
    QueueCls = _OpenFirstQueue


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
                own = api_client.rest_client.pool_manager
                own.pool_classes_by_scheme = {**own.pool_classes_by_scheme, "https": _HTTPSPool, "http": _HTTPPool}
                self._pools[key] = own
                if len(self._pools) > self._limit:
                    self._pools.popitem(last=False)
                return False
            self._pools.move_to_end(key)
        api_client.rest_client.pool_manager = kept
        return True

    def keep_warm(self, api_client: client.ApiClient, connections: int = WARM_CONNECTIONS) -> threading.Thread | None:
        """In the background, open connections in ``api_client``'s pool until it holds ``connections`` open ones
        (a job ended: its watches' connections are gone). Nothing for a pool this does not keep; the thread, if
        one started."""
        manager = api_client.rest_client.pool_manager
        with self._lock:
            if not any(kept is manager for kept in self._pools.values()):
                return None
        try:
            pool = manager.connection_from_url(api_client.configuration.host)
        except (urllib3.exceptions.HTTPError, ValueError):
            return None
        if not isinstance(pool.pool, _OpenFirstQueue):
            return None
        thread = threading.Thread(target=_top_up, args=(pool, connections), name="warm connections", daemon=True)
        thread.start()
        return thread

    def __len__(self) -> int:
        with self._lock:
            return len(self._pools)


def _top_up(pool: Any, connections: int) -> None:
    slots: _OpenFirstQueue = pool.pool
    while slots.open_count() < connections:
        found, connection = slots.take_unopened()
        if not found:
            return  # every slot holds an open connection or is in use
        connection = connection or pool._new_conn()
        connection.timeout = _CONNECT_SECONDS  # (each request sets its own)
        try:
            connection.connect()
        except Exception:  # a server gone or refusing: the next request finds out and says so; nothing to warm
            log.debug("could not open a connection to keep warm to %s", pool.host, exc_info=True)
            with contextlib.suppress(Exception):
                connection.close()
            pool._put_conn(connection)
            return
        if not _settled(connection):
            connection.close()
        pool._put_conn(connection)


def _settled(connection: Any) -> bool:
    """Read what a TLS 1.3 server sends after the handshake (session tickets), which a request would read first:
    urllib3 takes a connection with unread bytes for one the server closed, and opens another in its place.
    Whether the connection is still open and idle."""
    sock = connection.sock
    if sock is None:
        return False
    timeout = sock.gettimeout()
    wait = _SETTLE_SECONDS
    try:
        while wait_for_read(sock, timeout=wait):
            wait = _SETTLE_MORE_SECONDS
            sock.setblocking(False)
            try:
                sock.recv(1)
            except ssl.SSLWantReadError:
                continue  # a record that was not application data (a ticket): read on
            finally:
                sock.settimeout(timeout)
            return False  # closed by the server (b""), or bytes nobody asked for: not a connection to reuse
        return True
    except OSError:
        return False


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
