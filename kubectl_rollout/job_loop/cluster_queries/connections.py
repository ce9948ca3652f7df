"""One connection per cluster for the cluster queries, built again when its kubeconfig files change.

A screen that refreshes every few seconds should cost no new TLS handshake, so
a query reuses the connection the last one to the same cluster built. Rotated
credentials (a new token, a new client certificate) rewrite a kubeconfig file:
the connection is built again from the next query on, without restarting the
agent. Every connection has a request timeout, so a server that stopped
answering holds a worker thread for a bounded time only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading

from kubectl_rollout.job_loop.loop import connect_to
from kubectl_rollout.jobs.events.base import encode_value
from kubectl_rollout.jobs.spec import Connection
from kubectl_rollout.kube.cluster_access import Cluster

Fingerprint = tuple[tuple[str, int, int, int], ...]


def bounded(connection: Connection, call_timeout: float) -> Connection:
    """``connection`` with a request timeout: its own, or ``call_timeout`` where it has none."""
    if connection.request_timeout > 0:
        return connection
    return dataclasses.replace(connection, request_timeout=call_timeout)


def kubeconfig_fingerprint(connection: Connection) -> Fingerprint:
    """What changes when a kubeconfig file is rewritten (rotated credentials): inode, size, mtime per file."""
    prints = []
    for path in connection.kubeconfig:
        try:
            st = os.stat(path)
        except OSError:
            prints.append((path, -1, -1, -1))
        else:
            prints.append((path, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(prints)


class ClusterConnections:
    """The cached connections, one per cluster (``Connection`` as a job spec names it). Thread-safe."""

    def __init__(self, *, call_timeout: float) -> None:
        #: the request timeout of a connection that sets none (``--request-timeout``)
        self.call_timeout = call_timeout
        self._clusters: dict[str, tuple[Fingerprint, Cluster]] = {}
        self._lock = threading.Lock()

    def get(self, connection: Connection) -> Cluster:
        key = json.dumps(encode_value(connection), sort_keys=True)
        fingerprint = kubeconfig_fingerprint(connection)
        with self._lock:
            cached = self._clusters.get(key)
            if cached is not None and cached[0] == fingerprint:
                return cached[1]
            # The connection it replaces is left to the garbage collector, not closed: a call
            # may still be using it in another thread.
            cluster = connect_to(bounded(connection, self.call_timeout))
            self._clusters[key] = (fingerprint, cluster)
        return cluster

    def close(self) -> None:
        with self._lock:
            for _, cluster in self._clusters.values():
                cluster.close()
            self._clusters.clear()
