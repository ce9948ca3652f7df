"""The cluster queries (``nodes``, ``plan``, ``cordon``, ``uncordon``, ``workloads``, ``history``, ``pods``).

They serve the TUI, which may not talk to the cluster itself. Each query
names its cluster as a job spec does (a ``Connection``: kubeconfig paths,
context, namespace; never a credential) and is answered over that cluster's
cached connection (``connections``). ``ClusterQueries.answer`` blocks on the
cluster: the agent runs it in a worker thread, so that its loop stays free for
the job streams. Refusals come back worded for people, as ``QueryError``s
(``errors``): ``ClusterRefused`` for what the cluster refused or does not have
(nothing was changed), ``BadQuery`` for params that do not say what to read.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.job_loop.cluster_queries import reads
from kubectl_rollout.job_loop.cluster_queries.connections import ClusterConnections
from kubectl_rollout.job_loop.cluster_queries.errors import BadQuery, ClusterRefused, UnknownQuery
from kubectl_rollout.jobs.cluster_rows import NodeRow, WorkloadKind, WorkloadRow
from kubectl_rollout.jobs.events.base import decode_dataclass, encode_value
from kubectl_rollout.jobs.kinds.base import claim
from kubectl_rollout.jobs.kinds.drain import node_claim
from kubectl_rollout.jobs.spec import Connection, DrainOptions
from kubectl_rollout.kube.api_outage import is_connection_error
from kubectl_rollout.kube.cluster_access import Cluster, describe_api_error, describe_transport_failure
from kubectl_rollout.kube.errors import UserFacingError


class Query(enum.StrEnum):
    """The queries, named as the agent's protocol names its cluster methods."""

    NODES = "nodes"
    PLAN = "plan"
    CORDON = "cordon"
    UNCORDON = "uncordon"
    WORKLOADS = "workloads"
    HISTORY = "history"
    PODS = "pods"


#: every query's name
QUERIES = frozenset(query.value for query in Query)


def connection_of(params: Mapping[str, Any]) -> Connection:
    raw = params.get("connection")
    if not isinstance(raw, Mapping):
        raise BadQuery("connection (kubeconfig, context, namespace) is required: which cluster?")
    try:
        connection: Connection = decode_dataclass(Connection, raw)
    except (TypeError, ValueError) as err:
        raise BadQuery(f"connection does not decode: {err}") from err
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
        raise BadQuery(f"{key} is required: {what}")
    return value


def _options(params: Mapping[str, Any]) -> DrainOptions | None:
    raw = params.get("options")
    if raw is None:
        return None
    try:
        options: DrainOptions = decode_dataclass(DrainOptions, raw)
    except (TypeError, ValueError, AttributeError) as err:
        raise BadQuery(f"options are not drain options: {err}") from err
    return options


class ClusterQueries:
    """Answers the cluster queries; one cached connection per cluster. Thread-safe."""

    def __init__(self, *, call_timeout: float) -> None:
        self.connections = ClusterConnections(call_timeout=call_timeout)

    def close(self) -> None:
        self.connections.close()

    def answer(self, query: str, params: Mapping[str, Any], claims: Mapping[str, str]) -> Any:
        """Answer ``query``; ``claims``: what the running jobs drive (claim → job id), for ``drained_by`` and
        ``driven_by``. Raises a ``QueryError`` for what it refuses."""
        if query not in QUERIES:
            raise UnknownQuery(f"{query} is not a cluster method")
        connection = connection_of(params)
        cluster: Cluster | None = None
        try:
            cluster = self.connections.get(connection)
            return self._answer(cluster, connection, Query(query), params, claims)
        except UserFacingError as err:
            raise ClusterRefused(err.message) from err
        except ApiException as err:
            raise ClusterRefused(describe_api_error(err)) from err
        except Exception as err:
            if cluster is not None and is_connection_error(err):
                raise ClusterRefused(describe_transport_failure(err, cluster).message) from err
            raise

    def _answer(
        self,
        cluster: Cluster,
        connection: Connection,
        query: Query,
        params: Mapping[str, Any],
        claims: Mapping[str, str],
    ) -> Any:
        def drained_by(row: NodeRow) -> NodeRow:
            return dataclasses.replace(row, drained_by=claims.get(node_claim(connection.context, row.name), ""))

        if query is Query.NODES:
            rows = reads.read_nodes(
                cluster,
                selector=str(params.get("selector") or ""),
                plan=bool(params.get("plan", False)),
                options=_options(params),
            )
            return {"nodes": [drained_by(row).as_dict() for row in rows]}
        if query is Query.PLAN:
            names = params.get("nodes")
            if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
                raise BadQuery("nodes is required: the names of the nodes to plan")
            planned = reads.plan_drain(cluster, names, options=_options(params))
            return {"plan": encode_value(planned)}
        if query in (Query.CORDON, Query.UNCORDON):
            node = _string(params, "node", "the name of the node")
            row = reads.set_node_cordoned(cluster, node, cordoned=query is Query.CORDON)
            return {"node": drained_by(row).as_dict()}
        namespace = namespace_of(params, connection)
        if query is Query.WORKLOADS:

            def driven_by(row: WorkloadRow) -> WorkloadRow:
                kind = "workload" if row.kind is WorkloadKind.MANAGED else "deployment"
                return dataclasses.replace(
                    row, driven_by=claims.get(workload_claim(connection, row.namespace, kind, row.name), "")
                )

            return {"workloads": [driven_by(row).as_dict() for row in reads.read_workloads(cluster, namespace)]}
        if query is Query.HISTORY:
            name = _string(params, "workload", "the name of the managed workload")
            return {"revisions": [row.as_dict() for row in reads.read_history(cluster, namespace, name)]}
        if query is Query.PODS:
            name = _string(params, "workload", "the name of the managed workload")
            limit = params.get("limit", reads.PODS_PER_REPLICA_SET)
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
                raise BadQuery("limit must be a whole number of pods, 0 or more")
            # The ReplicaSets with their pods, and (a field added later, so an older client just ignores it) the
            # canary as the record keeps it: who promoted it, from any machine.
            return reads.read_workload_pods(cluster, namespace, name, limit=limit).as_dict()
        raise UnknownQuery(f"{query} is not a cluster method")
