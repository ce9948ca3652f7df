"""The cluster rows the agent answers with: a node's plan folded into one verdict, and the rows' JSON form."""

from __future__ import annotations

import json

import pytest

from kubectl_rollout.agent.client import cluster_calls
from kubectl_rollout.agent.protocol import Method
from kubectl_rollout.jobs.cluster_rows import (
    ConditionRow,
    NodeRow,
    NodeVerdict,
    RevisionRow,
    WorkloadKind,
    WorkloadRow,
    node_verdict,
)
from kubectl_rollout.jobs.events.base import PodRef
from kubectl_rollout.jobs.events.drain import NodePlan, PodPlan, Verdict
from kubectl_rollout.jobs.spec import Connection, DrainOptions


def _pod(name: str, verdict: Verdict, reason: str = "", pdbs: tuple[str, ...] = ()) -> PodPlan:
    return PodPlan(pod=PodRef(namespace="shop", name=name, node="n1"), verdict=verdict, reason=reason, pdbs=pdbs)


BLOCK = "PodDisruptionBudget shop/web allows 0 disruptions now (healthy 2, needs 2); the drain will wait"


@pytest.mark.parametrize(
    ("pods", "errors", "expected"),
    [
        pytest.param((), (), (NodeVerdict.EVICT, "nothing to evict", ()), id="empty node"),
        pytest.param(
            (_pod("ds", Verdict.SKIP, "DaemonSet-managed"),),
            (),
            (NodeVerdict.EVICT, "nothing to evict", ()),
            id="only skipped pods",
        ),
        pytest.param((_pod("a", Verdict.EVICT),), (), (NodeVerdict.EVICT, "evict 1 pod", ()), id="one pod"),
        pytest.param(
            (_pod("a", Verdict.DELETE), _pod("b", Verdict.DELETE)),
            (),
            (NodeVerdict.EVICT, "delete 2 pods", ()),
            id="--disable-eviction deletes",
        ),
        pytest.param(
            (_pod("a", Verdict.BLOCKED, BLOCK, ("shop/web",)), _pod("b", Verdict.EVICT)),
            (),
            (NodeVerdict.BLOCKED, "blocked by PDB shop/web (healthy 2, needs 2): 1 of 2 pods wait", ("shop/web",)),
            id="one PDB blocks",
        ),
        pytest.param(
            (_pod("a", Verdict.BLOCKED, BLOCK, ("shop/web",)), _pod("b", Verdict.BLOCKED, "x", ("shop/db",))),
            (),
            (
                NodeVerdict.BLOCKED,
                "blocked by PDB shop/web (healthy 2, needs 2) and 1 more: 2 of 2 pods wait",
                ("shop/web", "shop/db"),
            ),
            id="two PDBs block",
        ),
        pytest.param(
            (_pod("a", Verdict.BLOCKED, BLOCK, ("shop/web",)),),
            ("cannot delete Pods declare no controller (use --force to override): shop/lonely",),
            (
                NodeVerdict.ERROR,
                "cannot delete Pods declare no controller (use --force to override): shop/lonely",
                (),
            ),
            id="an error beats a block",
        ),
        pytest.param(
            (_pod("a", Verdict.ERROR, "selected by 2 PodDisruptionBudgets"),),
            (),
            (NodeVerdict.ERROR, "selected by 2 PodDisruptionBudgets", ()),
            id="a pod the eviction API refuses",
        ),
    ],
)
def test_node_verdict(
    pods: tuple[PodPlan, ...], errors: tuple[str, ...], expected: tuple[NodeVerdict, str, tuple[str, ...]]
) -> None:
    assert node_verdict(NodePlan(node="n1", cordoned=False, pods=pods, errors=errors)) == expected


def test_rows_survive_their_json_form_and_ignore_unknown_fields() -> None:
    node = NodeRow(name="n1", cordoned=True, ready=True, pods=3, verdict=NodeVerdict.BLOCKED, blocking=("a/b",))
    workload = WorkloadRow(
        kind=WorkloadKind.MANAGED,
        namespace="shop",
        name="web",
        revision=2,
        conditions=(ConditionRow(type="Available", status="True"),),
        images=("app=img:v2",),
    )
    revision = RevisionRow(number=1, replica_set="web-abc", images=("app=img:v1",))
    for row in (node, workload, revision):
        wire = json.loads(json.dumps({**row.as_dict(), "added_by_a_newer_agent": 1}))
        assert type(row).from_dict(wire) == row
    assert workload.target == "workload/web"
    assert workload.containers == ("app",)


def test_a_call_carries_its_params_as_json_and_reads_its_answer() -> None:
    connection = Connection(kubeconfig=("/k",), context="c", namespace="shop")
    call = cluster_calls.nodes(connection, selector="pool=a", plan=True, options=DrainOptions(ignore_daemonsets=True))
    assert call.method is Method.NODES
    params = json.loads(json.dumps(call.params))
    assert params["connection"] == {"kubeconfig": ["/k"], "context": "c", "namespace": "shop", "request_timeout": 0.0}
    assert (params["selector"], params["plan"], params["options"]["ignore_daemonsets"]) == ("pool=a", True, True)
    assert call.parse({"nodes": [NodeRow(name="n", cordoned=False, ready=True, pods=0).as_dict()]})[0].name == "n"
    assert cluster_calls.cordon(connection, "n", cordoned=False).method is Method.UNCORDON
