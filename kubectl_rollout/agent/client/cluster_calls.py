"""The agent's cluster methods as data: which method, which params, and how to read the answer.

One ``Call`` per request, built here once: ``AsyncAgentClient.run(call)`` (and
so the synchronous ``AgentClient.run(call)`` over it) sends ``call.method``
with ``call.params`` and hands the result to ``call.parse``. Standard library
and ``jobs`` only (the TUI imports it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kubectl_rollout.agent.protocol import JobInfo, Method
from kubectl_rollout.jobs.cluster_rows import NodeRow, ReplicaSetPods, RevisionRow, WorkloadPods, WorkloadRow
from kubectl_rollout.jobs.events.base import decode_dataclass, encode_value
from kubectl_rollout.jobs.events.drain import DrainPlanned
from kubectl_rollout.jobs.spec import Connection, DrainOptions, JobSpec

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    method: Method
    params: dict[str, Any]
    parse: Callable[[Any], T]


def _connection(connection: Connection) -> dict[str, Any]:
    return dict(encode_value(connection))


def _job(result: Any) -> JobInfo:
    return JobInfo.from_dict(result)


def submit(spec: JobSpec) -> Call[JobInfo]:
    return Call(Method.SUBMIT, {"spec": spec.as_dict()}, _job)


def show(job_id: str) -> Call[JobInfo]:
    """The job, whole (its spec with every option: what starting it again needs)."""
    return Call(Method.SHOW, {"job": job_id}, _job)


def cancel(job_id: str) -> Call[JobInfo]:
    return Call(Method.CANCEL, {"job": job_id}, _job)


def surge(job_id: str, nodes: Sequence[str]) -> Call[JobInfo]:
    """Ask running campaign ``job_id`` to drain ``nodes`` through a surge (``jobs surge``, the screen's ``s``)."""
    return Call(Method.SURGE, {"job": job_id, "nodes": list(nodes)}, _job)


def nodes(
    connection: Connection, *, selector: str = "", plan: bool = False, options: DrainOptions | None = None
) -> Call[list[NodeRow]]:
    """The nodes (``selector``: those it selects), with pod counts; ``plan``: with each one's drain verdict."""
    params: dict[str, Any] = {"connection": _connection(connection), "selector": selector, "plan": plan}
    if options is not None:
        params["options"] = encode_value(options)
    return Call(Method.NODES, params, lambda result: [NodeRow.from_dict(row) for row in result["nodes"]])


def plan(
    connection: Connection, node_names: Sequence[str], *, options: DrainOptions | None = None
) -> Call[DrainPlanned]:
    """The pre-flight plan of a drain of ``node_names`` with ``options``: every pod with its verdict."""
    params: dict[str, Any] = {"connection": _connection(connection), "nodes": list(node_names)}
    if options is not None:
        params["options"] = encode_value(options)

    def parse(result: Any) -> DrainPlanned:
        planned: DrainPlanned = decode_dataclass(DrainPlanned, result["plan"])
        return planned

    return Call(Method.PLAN, params, parse)


def cordon(connection: Connection, node: str, *, cordoned: bool) -> Call[NodeRow]:
    """Cordon (or uncordon) ``node``; the answer is the node as it is afterwards."""
    method = Method.CORDON if cordoned else Method.UNCORDON
    return Call(method, {"connection": _connection(connection), "node": node}, lambda r: NodeRow.from_dict(r["node"]))


def workloads(connection: Connection, *, namespace: str | None = None) -> Call[list[WorkloadRow]]:
    """The managed workloads and the Deployments of ``namespace`` (None: the connection's) with their rollout state."""
    params = {"connection": _connection(connection), "namespace": namespace}
    return Call(Method.WORKLOADS, params, lambda result: [WorkloadRow.from_dict(row) for row in result["workloads"]])


def history(connection: Connection, workload: str, *, namespace: str | None = None) -> Call[list[RevisionRow]]:
    """The revisions of managed workload ``workload``, oldest first."""
    params = {"connection": _connection(connection), "workload": workload, "namespace": namespace}
    return Call(Method.HISTORY, params, lambda result: [RevisionRow.from_dict(row) for row in result["revisions"]])


def pods(
    connection: Connection, workload: str, *, namespace: str | None = None, limit: int = 20
) -> Call[list[ReplicaSetPods]]:
    """The pods of managed workload ``workload``'s ReplicaSets, newest revision first; at most ``limit`` per
    ReplicaSet (those not Ready first), with the counts of all."""
    params = {"connection": _connection(connection), "workload": workload, "namespace": namespace, "limit": limit}
    return Call(Method.PODS, params, lambda result: [ReplicaSetPods.from_dict(row) for row in result["replica_sets"]])


def workload_pods(
    connection: Connection, workload: str, *, namespace: str | None = None, limit: int = 20
) -> Call[WorkloadPods]:
    """``pods``, with the workload's canary as its record keeps it (None from an agent that does not say)."""
    params = {"connection": _connection(connection), "workload": workload, "namespace": namespace, "limit": limit}
    return Call(Method.PODS, params, WorkloadPods.from_dict)


def abort(connection: Connection, workload: str, *, namespace: str | None = None) -> Call[JobInfo]:
    """Cancel the agent job that drives managed workload ``workload``'s rollout; the answer is that job."""
    params = {"connection": _connection(connection), "workload": workload, "namespace": namespace}
    return Call(Method.ABORT, params, _job)
