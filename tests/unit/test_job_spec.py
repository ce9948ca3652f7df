"""Job specs: what the agent journals. They round-trip through JSON and refuse what they cannot mean."""

from __future__ import annotations

import json

import pytest

from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.events.rollout import ContainerImage
from kubectl_rollout.jobs.kinds import target_of
from kubectl_rollout.jobs.spec import (
    ActionKind,
    Connection,
    DrainJob,
    DrainOptions,
    DriveOptions,
    JobKind,
    JobSpec,
    RestartJob,
    RolloutAction,
)

CONNECTION = Connection(kubeconfig=("/home/a/.kube/config", "/home/a/extra"), context="prod", namespace="shop")

SPECS = [
    JobSpec(kind=JobKind.DRAIN, connection=CONNECTION, drain=DrainJob(nodes=("node-1", "node-2"))),
    JobSpec(
        kind=JobKind.DRAIN,
        connection=CONNECTION,
        drain=DrainJob(
            selector="pool=blue",
            plan_only=True,
            options=DrainOptions(
                force=True,
                ignore_daemonsets=True,
                grace_period=5,
                timeout=90.0,
                dry_run=DryRun.SERVER,
                node_batch=2,
                max_concurrent_evictions=0,
            ),
        ),
    ),
    JobSpec(
        kind=JobKind.RESTART,
        connection=Connection(),
        restart=RestartJob(workload="statefulset/db", dry_run=DryRun.CLIENT, timeout=30.0, resume=True),
    ),
    JobSpec(
        kind=JobKind.ROLLOUT,
        connection=CONNECTION,
        rollout=RolloutAction(
            kind=ActionKind.APPLY,
            manifest={"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {}},
            drive=DriveOptions(timeout=60.0, auto_rollback=True),
        ),
    ),
    JobSpec(
        kind=JobKind.ROLLOUT,
        connection=CONNECTION,
        rollout=RolloutAction(
            kind=ActionKind.SET_IMAGE, name="web", images=(ContainerImage(container="app", image="app:v2"),)
        ),
    ),
]


@pytest.mark.parametrize("spec", SPECS, ids=["drain-nodes", "drain-selector-plan", "restart", "apply", "set-image"])
def test_round_trip(spec: JobSpec) -> None:
    assert JobSpec.from_json(spec.to_json()) == spec
    assert json.loads(spec.to_json())["kind"] == spec.kind.value


def test_a_spec_holds_exactly_its_own_section() -> None:
    with pytest.raises(ValueError, match="exactly its own section"):
        JobSpec(kind=JobKind.RESTART, connection=CONNECTION, drain=DrainJob(nodes=("n",)))


def test_a_newer_spec_version_is_refused() -> None:
    data = SPECS[0].as_dict()
    data["version"] = 2
    with pytest.raises(ValueError, match="version 2 is newer"):
        JobSpec.from_dict(data)


@pytest.mark.parametrize(
    ("spec", "target"),
    [
        (SPECS[0], "node/node-1, node/node-2"),
        (SPECS[1], "-l pool=blue"),
        (SPECS[2], "statefulset/db"),
        (SPECS[3], "workload/web"),
        (SPECS[4], "workload/web"),
    ],
)
def test_target_names_what_the_job_acts_on(spec: JobSpec, target: str) -> None:
    assert target_of(spec) == target
