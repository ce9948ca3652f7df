"""A rollout action is plain data a job spec can carry as JSON, and a job cancelled before it starts changes
nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.rollout.actions import ActionKind, DriveOptions, RolloutAction, run_rollout_action

MANIFEST = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}}


@pytest.mark.parametrize(
    "action",
    [
        RolloutAction(kind=ActionKind.APPLY, manifest=MANIFEST, drive=DriveOptions(auto_rollback=True, timeout=90.0)),
        RolloutAction(
            kind=ActionKind.SET_IMAGE,
            name="web",
            namespace="shop",
            images=(ev.ContainerImage(container="*", image="registry.example/app:v2"),),
        ),
        RolloutAction(kind=ActionKind.SCALE, name="web", replicas=0, drive=DriveOptions(wait=False)),
        RolloutAction(kind=ActionKind.UNDO, name="web", to_revision=3, drive=DriveOptions(ignore_pdb=True)),
        RolloutAction(kind=ActionKind.WATCH, name="web", drive=DriveOptions(fail_after_restarts=5)),
    ],
    ids=lambda a: a.kind.value,
)
def test_round_trip_through_json(action: RolloutAction) -> None:
    assert RolloutAction.from_dict(json.loads(json.dumps(action.as_dict()))) == action


def test_apply_names_its_workload_from_the_manifest() -> None:
    assert RolloutAction(kind=ActionKind.APPLY, manifest=MANIFEST).workload == "web"


def test_a_job_cancelled_before_it_starts_touches_nothing() -> None:
    # The cluster is never called: a job cancelled before its first step must not reach it.
    untouchable = Cluster(api_client=None, context="none", server="https://0.0.0.0:1", namespace="shop")
    seen: list[Event] = []
    cancel = threading.Event()
    cancel.set()

    finished = run_rollout_action(
        untouchable, RolloutAction(kind=ActionKind.RESTART, name="web"), JobContext(emit=seen.append, cancel=cancel)
    )

    assert seen == [finished]
    assert (finished.outcome, finished.succeeded, finished.namespace) == (ev.RolloutOutcome.INTERRUPTED, False, "shop")


def test_the_rollout_engine_runs_without_click() -> None:
    """The agent and the TUI run rollout jobs; click is the CLI's alone (DESIGN.md, parts)."""
    probe = (
        "import sys, kubectl_rollout.rollout.actions, kubectl_rollout.jobs.views.rollout; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'textual')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
