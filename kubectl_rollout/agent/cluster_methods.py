"""The agent's cluster methods (``nodes``, ``plan``, ``cordon``, ``uncordon``, ``workloads``, ``history``, ``pods``).

They serve the TUI, which may not talk to the cluster itself. Each request
names its cluster as a job spec does (a ``Connection``: kubeconfig paths,
context, namespace; never a credential); the agent keeps one connection per
cluster so that a screen refreshing every few seconds costs no new TLS
handshake. ``handle`` runs in a worker thread: the loop stays free for the
job streams. Errors come back worded for people, as ``ProtocolError``:
``CLUSTER_ERROR`` for what the cluster refused or does not have (nothing was
changed), ``INVALID_PARAMS`` for a request that does not decode.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.agent import cluster_reads
from kubectl_rollout.agent.cluster_rows import NodeRow, WorkloadKind, WorkloadRow
from kubectl_rollout.agent.protocol import ErrorCode, Method, ProtocolError
from kubectl_rollout.agent.settings import seconds_from
from kubectl_rollout.job_loop.loop import connect_to
from kubectl_rollout.jobs.events.base import decode_dataclass, encode_value
from kubectl_rollout.jobs.kinds.base import claim
from kubectl_rollout.jobs.kinds.drain import node_claim
from kubectl_rollout.jobs.spec import Connection, DrainOptions
from kubectl_rollout.kube.api_outage import is_connection_error
from kubectl_rollout.kube.cluster_access import Cluster, describe_api_error, describe_transport_failure
from kubectl_rollout.kube.errors import UserFacingError

CLUSTER_METHODS = frozenset(
    {Method.NODES, Method.PLAN, Method.CORDON, Method.UNCORDON, Method.WORKLOADS, Method.HISTORY, Method.PODS}
)


def connection_of(params: Mapping[str, Any]) -> Connection:
    raw = params.get("connection")
    if not isinstance(raw, Mapping):
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS, "connection (kubeconfig, context, namespace) is required: which cluster?"
        )
    try:
        connection: Connection = decode_dataclass(Connection, raw)
    except (TypeError, ValueError) as err:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, f"connection does not decode: {err}") from err
    return connection


def namespace_of(params: Mapping[str, Any], connection: Connection) -> str:
    """The namespace a request means, as a job's claims name it (the connection's, else "default")."""
    return str(params.get("namespace") or connection.namespace or "default")


def workload_claim(connection: Connection, namespace: str, kind: str, name: str) -> str:
    """The claim (``JobKindFacts.claims``) a job driving this workload holds."""
    return claim(connection.context, f"{namespace}/{kind}/{name}")


def _string(params: Mapping[str, Any], key: str, what: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, f"{key} is required: {what}")
    return value


def _options(params: Mapping[str, Any]) -> DrainOptions | None:
    raw = params.get("options")
    if raw is None:
        return None
    try:
        options: DrainOptions = decode_dataclass(DrainOptions, raw)
    except (TypeError, ValueError, AttributeError) as err:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, f"options are not drain options: {err}") from err
    return options


#: the longest one request of a cluster method may take when its connection sets no --request-timeout. The
#: TUI asks again within seconds; a worker thread held by a server that stopped answering would hold up
#: every later call instead.
CALL_TIMEOUT = 20.0
#: seconds, overriding CALL_TIMEOUT (the tests shorten it)
ENV_CALL_TIMEOUT = "ROLLOUT_PLUS_AGENT_CALL_TIMEOUT"


def call_timeout(environ: Mapping[str, str] = os.environ) -> float:
    """CALL_TIMEOUT, or the positive number of seconds ENV_CALL_TIMEOUT gives."""
    return seconds_from(environ, ENV_CALL_TIMEOUT, CALL_TIMEOUT)


def bounded(connection: Connection) -> Connection:
    """``connection`` with a request timeout: its own, or ``call_timeout()`` where it has none."""
    if connection.request_timeout > 0:
        return connection
    return dataclasses.replace(connection, request_timeout=call_timeout())


def kubeconfig_fingerprint(connection: Connection) -> tuple[tuple[str, int, int, int], ...]:
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


class ClusterMethods:
    """Answers the cluster methods; one cached connection per cluster. Thread-safe.

    A connection is built again when one of its kubeconfig files changes, so
    that rotated credentials (a new token, a new client certificate) are used
    from the next call on, without restarting the agent.
    """

    def __init__(self) -> None:
        self._clusters: dict[str, tuple[tuple[tuple[str, int, int, int], ...], Cluster]] = {}
        self._lock = threading.Lock()

    def _cluster(self, connection: Connection) -> Cluster:
        key = json.dumps(encode_value(connection), sort_keys=True)
        fingerprint = kubeconfig_fingerprint(connection)
        with self._lock:
            cached = self._clusters.get(key)
            if cached is not None and cached[0] == fingerprint:
                return cached[1]
            # The connection it replaces is left to the garbage collector, not closed: a call
            # may still be using it in another thread.
            cluster = connect_to(bounded(connection))
            self._clusters[key] = (fingerprint, cluster)
        return cluster

    def close(self) -> None:
        with self._lock:
            for _, cluster in self._clusters.values():
                cluster.close()
            self._clusters.clear()

    def handle(self, method: str, params: Mapping[str, Any], claims: Mapping[str, str]) -> Any:
        """Answer ``method``; ``claims``: what the agent's running jobs drive (claim → job id)."""
        connection = connection_of(params)
        cluster: Cluster | None = None
        try:
            cluster = self._cluster(connection)
            return self._answer(cluster, connection, Method(method), params, claims)
        except UserFacingError as err:
            raise ProtocolError(ErrorCode.CLUSTER_ERROR, err.message) from err
        except ApiException as err:
            raise ProtocolError(ErrorCode.CLUSTER_ERROR, describe_api_error(err)) from err
        except Exception as err:
            if cluster is not None and is_connection_error(err):
                message = describe_transport_failure(err, cluster).message
                raise ProtocolError(ErrorCode.CLUSTER_ERROR, message) from err
            raise

    def _answer(
        self,
        cluster: Cluster,
        connection: Connection,
        method: Method,
        params: Mapping[str, Any],
        claims: Mapping[str, str],
    ) -> Any:
        def drained_by(row: NodeRow) -> NodeRow:
            return dataclasses.replace(row, drained_by=claims.get(node_claim(connection.context, row.name), ""))

        if method is Method.NODES:
            rows = cluster_reads.read_nodes(
                cluster,
                selector=str(params.get("selector") or ""),
                plan=bool(params.get("plan", False)),
                options=_options(params),
            )
            return {"nodes": [drained_by(row).as_dict() for row in rows]}
        if method is Method.PLAN:
            names = params.get("nodes")
            if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
                raise ProtocolError(ErrorCode.INVALID_PARAMS, "nodes is required: the names of the nodes to plan")
            planned = cluster_reads.plan_drain(cluster, names, options=_options(params))
            return {"plan": encode_value(planned)}
        if method in (Method.CORDON, Method.UNCORDON):
            node = _string(params, "node", "the name of the node")
            row = cluster_reads.set_node_cordoned(cluster, node, cordoned=method is Method.CORDON)
            return {"node": drained_by(row).as_dict()}
        namespace = namespace_of(params, connection)
        if method is Method.WORKLOADS:

            def driven_by(row: WorkloadRow) -> WorkloadRow:
                kind = "workload" if row.kind is WorkloadKind.MANAGED else "deployment"
                return dataclasses.replace(
                    row, driven_by=claims.get(workload_claim(connection, row.namespace, kind, row.name), "")
                )

            return {"workloads": [driven_by(row).as_dict() for row in cluster_reads.read_workloads(cluster, namespace)]}
        if method is Method.HISTORY:
            name = _string(params, "workload", "the name of the managed workload")
            return {"revisions": [row.as_dict() for row in cluster_reads.read_history(cluster, namespace, name)]}
        if method is Method.PODS:
            name = _string(params, "workload", "the name of the managed workload")
            limit = params.get("limit", cluster_reads.PODS_PER_REPLICA_SET)
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
                raise ProtocolError(ErrorCode.INVALID_PARAMS, "limit must be a whole number of pods, 0 or more")
            sets = cluster_reads.read_pods(cluster, namespace, name, limit=limit)
            return {"replica_sets": [row.as_dict() for row in sets]}
        raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"{method} is not a cluster method")
