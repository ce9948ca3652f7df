"""Canary steps on managed workloads against the real control plane (issue 23).

Each test runs in its own namespace, with RolloutInvariants watching the
workload's pods and ReplicaSets from before the change until after it: never
more than replicas + maxSurge pods (or replicas asked of the ReplicaSets),
never fewer than replicas - maxUnavailable Ready or available. Where the
canary stands is read from the record (the ConfigMap's ``canary`` key) by a
watch; the counts are read from the ReplicaSets themselves.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
import yaml
from integration.test_agent import _wait_gone, agent_dir
from integration.test_agent_rollouts import _follow
from invariants import RolloutInvariants
from plugin import RunningPlugin, run_plugin

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events.job import JobFinished
from kubectl_rollout.jobs.events.rollout import ContainerImage
from kubectl_rollout.jobs.spec import ActionKind, Connection, JobKind, JobSpec, RolloutAction
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import record_name

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py

V2 = "registry.example/app:v2"
V3 = "registry.example/app:v3"
ISSUE_STEPS = "setWeight 10; pause; setWeight 50; pause 5s; setWeight 100"


def workload(
    steps: str | None,
    *,
    replicas: int = 10,
    surge: int | str = "25%",
    unavailable: int | str = "25%",
    ready_after: str = "1s",
) -> dict[str, Any]:
    document = manifests.deployment(
        "web",
        replicas=replicas,
        annotations={manifests.READY_AFTER: ready_after},
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
    )
    if steps is not None:
        document["metadata"]["annotations"] = {"rollout-plus.io/steps": steps}
    return document


def write(tmp_path: Path, document: dict[str, Any], name: str = "web.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return path


def plugin(kubeconfig: Path, namespace: str, *args: str) -> Any:
    return run_plugin(*args, "-n", namespace, kubeconfig=kubeconfig)


def canary_state(cluster: Cluster, namespace: str) -> dict[str, Any]:
    config_map = cluster.core.read_namespaced_config_map(record_name("web"), namespace)
    return dict(json.loads((config_map.data or {}).get("canary") or "{}"))


def until_canary(cluster: Cluster, namespace: str, what: str, predicate: Any, timeout: float = 90) -> dict[str, Any]:
    """The canary's state once ``predicate`` holds of it, by watching the record."""
    found = watching.until(
        cluster.core.list_namespaced_config_map,
        lambda cm: predicate(json.loads((cm.data or {}).get("canary") or "{}")),
        namespace=namespace,
        field_selector=f"metadata.name={record_name('web')}",
        timeout=timeout,
        what=what,
    )
    return dict(json.loads(found.data["canary"]))


def counts(cluster: Cluster, namespace: str) -> dict[str, tuple[int, int]]:
    """Image -> (spec.replicas, availableReplicas) of the workload's ReplicaSets."""
    found = {}
    for rs in cluster.apps.list_namespaced_replica_set(namespace, label_selector="app=web").items:
        image = rs.spec.template.spec.containers[0].image
        found[image] = (rs.spec.replicas or 0, (rs.status.available_replicas or 0) if rs.status else 0)
    return found


def created(cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, document: dict[str, Any]) -> None:
    result = plugin(kubeconfig, namespace, "apply", "-f", str(write(tmp_path, document)))
    assert result.returncode == 0, result.stderr
    assert counts(cluster, namespace) == {manifests.IMAGE: (document["spec"]["replicas"],) * 2}


def plan_rows(output: str) -> list[tuple[str, str, int, int, int]]:
    """The rows of ``apply --plan``: (step, text, canary, stable, peak pods)."""
    rows = []
    for line in output.splitlines():
        parts = line.split()
        if parts and (parts[0].isdigit() or parts[0] == "end"):
            rows.append((parts[0], " ".join(parts[1:-3]), int(parts[-3]), int(parts[-2]), int(parts[-1])))
    return rows


def set_image_watched(cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, steps: str) -> Any:
    """The workload created with ``steps``, then ``set image`` to V2 with RolloutInvariants watching: none breached."""
    created(cluster, namespace, kubeconfig, tmp_path, workload(steps))
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        result = plugin(kubeconfig, namespace, "set", "image", "web", f"app={V2}")
    finally:
        fenceposts.stop()
    assert fenceposts.breaches_of(10, "25%", "25%") == []
    return result


def set_image_job(kubeconfig: Path, namespace: str) -> JobSpec:
    """``set image web app=V2`` as a job for the agent."""
    return JobSpec(
        kind=JobKind.ROLLOUT,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        rollout=RolloutAction(
            kind=ActionKind.SET_IMAGE, name="web", images=(ContainerImage(container="app", image=V2),)
        ),
    )


def restart_agent(agent_dir: AgentPaths, pid: int) -> int:
    """SIGKILL the agent ``pid``, start another (it resumes the unfinished jobs); its pid."""
    os.kill(pid, signal.SIGKILL)
    assert _wait_gone(pid, 10)
    with connect(agent_dir, name="test") as agent:
        started = int(agent.agent["pid"])
    assert started != pid
    return started


# --- the issue's example -------------------------------------------------------------------------------------


def test_the_steps_reach_the_planned_counts_inside_maxsurge_and_maxunavailable(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload(ISSUE_STEPS)
    planned = plugin(kubeconfig, namespace, "apply", "-f", str(write(tmp_path, document)), "--plan")
    assert planned.returncode == 0, planned.stderr
    rows = plan_rows(planned.stdout)
    assert [(r[2], r[3]) for r in rows] == [(1, 9), (1, 9), (5, 5), (5, 5), (10, 0)]
    assert "peak: 13 pods" in planned.stdout
    names = [cm.metadata.name for cm in cluster.core.list_namespaced_config_map(namespace).items]
    assert record_name("web") not in names, "--plan changed nothing"
    created(cluster, namespace, kubeconfig, tmp_path, document)

    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        changed = plugin(kubeconfig, namespace, "set", "image", "web", f"app={V2}")
        # Step 2 is a pause until promoted: the job ends there, the workload waits at step 1's counts.
        assert changed.returncode == 0, changed.stderr
        assert "step 2/5: paused (pause) until promoted" in changed.stdout
        assert (
            counts(cluster, namespace)
            == {V2: (1, 1), manifests.IMAGE: (9, 9)}
            == {
                V2: (rows[1][2],) * 2,
                manifests.IMAGE: (rows[1][3],) * 2,
            }
        )
        state = canary_state(cluster, namespace)
        assert (state["step"], state["paused"]["by"]) == (1, "step")
        status = plugin(kubeconfig, namespace, "status", "web")
        assert "step 2/5: pause, 1/10 pods (paused; go on with kubectl rollout-plus promote web)" in status.stdout

        promoting = RunningPlugin("promote", "web", "-n", namespace, kubeconfig=kubeconfig)
        try:
            # Step 4 is a 5 s pause: the counts of step 3 (setWeight 50) are there when it begins.
            paused = until_canary(cluster, namespace, "the 5 s pause", lambda s: s.get("step") == 3)
            assert (
                counts(cluster, namespace)
                == {V2: (5, 5), manifests.IMAGE: (5, 5)}
                == {
                    V2: (rows[3][2],) * 2,
                    manifests.IMAGE: (rows[3][3],) * 2,
                }
            )
            ended = until_canary(cluster, namespace, "the pause's end", lambda s: s.get("step") == 4)
            assert 5.0 <= ended["step_started_at"] - paused["step_started_at"] < 7.0
        finally:
            result = promoting.finish(timeout=120)
        assert result.returncode == 0, result.stderr
        assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    finally:
        fenceposts.stop()
    assert fenceposts.breaches_of(10, "25%", "25%") == []
    assert fenceposts.pods.most <= max(r[4] for r in rows)
    state = canary_state(cluster, namespace)
    assert state["step"] == 5
    assert state["promoted"]["by"]
    reasons = {
        e.reason
        for e in cluster.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={record_name('web')}"
        ).items
    }
    assert {"CanaryStarted", "PausedAtStep", "Promoted", "StepStarted", "StepsDone"} <= reasons


# --- promote --full, abort, retry, undo ----------------------------------------------------------------------


def test_promote_full_skips_every_remaining_step(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    created(cluster, namespace, kubeconfig, tmp_path, workload("setWeight 20; pause; setWeight 60; pause"))
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        assert plugin(kubeconfig, namespace, "set", "image", "web", f"app={V2}").returncode == 0
        assert counts(cluster, namespace) == {V2: (2, 2), manifests.IMAGE: (8, 8)}
        result = plugin(kubeconfig, namespace, "promote", "web", "--full")
        assert result.returncode == 0, result.stderr
        assert "promoted past every remaining step" in result.stdout
        assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    finally:
        fenceposts.stop()
    assert fenceposts.breaches_of(10, "25%", "25%") == []
    state = canary_state(cluster, namespace)
    assert (state["full"], state["step"]) == (True, 4)


def test_abort_mid_step_restores_the_stable_then_retry_starts_again_and_undo_ends_it(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    # maxSurge 1, maxUnavailable 0: the 60 % step moves one pod at a time, each Ready after 3 s: from the second
    # canary pod on, the step has at least 12 s to go when abort is recorded.
    document = workload("setWeight 60; pause", surge=1, unavailable=0, ready_after="3s")
    created(cluster, namespace, kubeconfig, tmp_path, document)
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        rolling = RunningPlugin("set", "image", "web", f"app={V2}", "-n", namespace, kubeconfig=kubeconfig)
        try:
            watching.until(
                cluster.apps.list_namespaced_replica_set,
                lambda rs: rs.spec.template.spec.containers[0].image == V2 and rs.spec.replicas >= 2,
                namespace=namespace,
                timeout=60,
                what="the canary growing towards 6",
            )
            aborted = plugin(kubeconfig, namespace, "abort", "web")
        finally:
            changed = rolling.finish(timeout=120)
        # The set image job's driver carried the abort out (abort found the workload driven, recorded it).
        assert aborted.returncode == 0, aborted.stderr
        assert "canary aborted" in aborted.stdout
        assert changed.returncode == 1
        assert "canary aborted: ReplicaSet" in changed.stderr
        assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
        status = plugin(kubeconfig, namespace, "status", "web")
        assert "aborted by " in status.stdout
        assert canary_state(cluster, namespace)["aborted"]["by"]
        # Aborted stays aborted: a promote is refused, nothing changes.
        refused = plugin(kubeconfig, namespace, "promote", "web")
        assert refused.returncode == 1
        assert "canary was aborted: start its steps again with kubectl rollout-plus retry web" in refused.stderr

        retried = plugin(kubeconfig, namespace, "retry", "web")
        assert retried.returncode == 0, retried.stderr
        assert counts(cluster, namespace) == {V2: (6, 6), manifests.IMAGE: (4, 4)}
        assert canary_state(cluster, namespace)["step"] == 1

        # Undo during the pause: back to the stable revision, a plain rolling update, no steps.
        undone = plugin(kubeconfig, namespace, "undo", "web")
        assert undone.returncode == 0, undone.stderr + undone.stdout
        assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}, undone.stdout + undone.stderr
    finally:
        fenceposts.stop()
    assert fenceposts.breaches_of(10, 1, 0) == []


def test_a_paused_workload_holds_its_canary_until_resumed_even_when_promoted(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    created(cluster, namespace, kubeconfig, tmp_path, workload("setWeight 30; pause"))
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        assert plugin(kubeconfig, namespace, "set", "image", "web", f"app={V2}").returncode == 0
        assert plugin(kubeconfig, namespace, "pause", "web").returncode == 0
        # The promote is recorded, but the workload's own pause holds everything: no step moves.
        promoted = plugin(kubeconfig, namespace, "promote", "web")
        assert promoted.returncode == 0, promoted.stderr
        assert "is paused" in promoted.stderr
        assert counts(cluster, namespace) == {V2: (3, 3), manifests.IMAGE: (7, 7)}
        assert canary_state(cluster, namespace)["step"] == 2
        resumed = plugin(kubeconfig, namespace, "resume", "web")
        assert resumed.returncode == 0, resumed.stderr
        assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    finally:
        fenceposts.stop()
    assert fenceposts.breaches_of(10, "25%", "25%") == []


@pytest.mark.parametrize("on_failure", ["abort", "pause"])
def test_a_failing_command_gate_aborts_or_pauses_as_configured(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, on_failure: str
) -> None:
    marker = tmp_path / "gate-env"
    steps = f"setWeight 30\ngate command on-failure={on_failure}: env > {marker}; exit 3\nsetWeight 100"
    result = set_image_watched(cluster, namespace, kubeconfig, tmp_path, steps)
    assert "step 2/3: gate failed with exit code 3" in result.stdout
    environment = dict(line.split("=", 1) for line in marker.read_text().splitlines() if "=" in line)
    assert environment["ROLLOUT_PLUS_WORKLOAD"] == "web"
    assert environment["ROLLOUT_PLUS_NAMESPACE"] == namespace
    assert (environment["ROLLOUT_PLUS_STEP"], environment["ROLLOUT_PLUS_REVISION"]) == ("2", "2")
    state = canary_state(cluster, namespace)
    assert (state["gate"]["ok"], state["gate"]["exit_code"]) == (False, 3)
    if on_failure == "abort":
        assert result.returncode == 1
        assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
        assert state["aborted"]["by"] == "step"
    else:
        assert result.returncode == 0, result.stderr
        assert counts(cluster, namespace) == {V2: (3, 3), manifests.IMAGE: (7, 7)}
        assert state["paused"]["by"] == "step"
        promoted = plugin(kubeconfig, namespace, "promote", "web")
        assert promoted.returncode == 0, promoted.stderr
        assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}


# --- bad input: clear errors, nothing changed ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "words"),
    [
        ("setWeight 10; pauze", "step 2 ('pauze'): not a step"),
        ("setWeight 120", "step 1 ('setWeight 120'): weight 120% is above 100%"),
        ("setWeight 50; setWeight 20", "step 2 (setWeight 20%): weights must not decrease"),
        ("setWeight 10\ngate command:", "the command gate names no command"),
        ("setWeight 10\ngate prometheus service=prometheus:9090 threshold=<0.05:", "the Prometheus gate has no query"),
        (
            "setWeight 10\ngate prometheus service=prometheus:9090 threshold='about 5': up",
            "step 2 (\"gate prometheus service=prometheus:9090 threshold='about 5': up\"): threshold 'about 5' is not",
        ),
    ],
)
def test_malformed_steps_are_refused_before_anything_is_written(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, steps: str, words: str
) -> None:
    created(cluster, namespace, kubeconfig, tmp_path, workload(None))
    before = cluster.core.read_namespaced_config_map(record_name("web"), namespace).metadata.resource_version
    with_annotation = write(tmp_path, workload(steps), "annotated.yaml")
    without = write(tmp_path, workload(None), "plain.yaml")
    for args in (["apply", "-f", str(with_annotation)], ["apply", "-f", str(without), "--steps", steps]):
        result = plugin(kubeconfig, namespace, *args)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith('error: workload "web" has invalid canary steps (rollout-plus.io/steps): ')
        assert words in result.stderr
        assert "Traceback" not in result.stderr
    after = cluster.core.read_namespaced_config_map(record_name("web"), namespace).metadata.resource_version
    assert after == before


def test_promote_abort_retry_of_a_workload_without_steps_are_refused(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    created(cluster, namespace, kubeconfig, tmp_path, workload(None))
    before = cluster.core.read_namespaced_config_map(record_name("web"), namespace).metadata.resource_version
    for verb in ("promote", "abort", "retry"):
        result = plugin(kubeconfig, namespace, verb, "web")
        assert result.returncode == 1, result.stderr
        assert f'error: workload "web" has no canary steps (annotation rollout-plus.io/steps): nothing to {verb}' in (
            result.stderr
        )
    assert cluster.core.read_namespaced_config_map(record_name("web"), namespace).metadata.resource_version == before
    assert counts(cluster, namespace) == {manifests.IMAGE: (10, 10)}


def test_the_first_rollout_skips_the_steps(cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path) -> None:
    created(cluster, namespace, kubeconfig, tmp_path, workload("setWeight 50; pause"))
    refused = plugin(kubeconfig, namespace, "promote", "web")
    assert refused.returncode == 1
    assert "has gone past its last canary step" in refused.stderr


# --- the agent SIGKILLed during a gate and during a timed pause --------------------------------------------------


def test_the_agent_killed_during_a_gate_and_a_timed_pause_resumes_without_a_second_gate_or_a_fresh_pause(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    log = tmp_path / "gate.log"
    steps = f"setWeight 20\ngate command: echo start >> {log}; sleep 4; echo done >> {log}\npause 8s\nsetWeight 100"
    created(cluster, namespace, kubeconfig, tmp_path, workload(steps))
    spec = set_image_job(kubeconfig, namespace)
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        with connect(agent_dir, name="test") as agent:
            pid = agent.agent["pid"]
            job = agent.submit(spec)
        _follow(agent_dir, job.id, until=lambda event: isinstance(event, cev.GateStarted))
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        # The gate's shell died with its driver (PR_SET_PDEATHSIG): it never gets to say done.
        assert "done" not in (log.read_text() if log.exists() else "")

        with connect(agent_dir, name="test") as agent:
            pid = agent.agent["pid"]  # a new agent: it resumes the job, which runs the unfinished gate again
        pause = until_canary(cluster, namespace, "the timed pause", lambda s: s.get("step") == 2)
        assert pause["gate"]["ok"] is True
        # Kill it 3 s into the 8 s pause (a point in time, not a wait for something to happen).
        threading.Event().wait(max(0.0, pause["step_started_at"] + 3 - time.time()))
        killed_at = time.time()
        restart_agent(agent_dir, pid)
        ended = until_canary(cluster, namespace, "the pause's end", lambda s: s.get("step") == 3)
        seen = _follow(agent_dir, job.id)
    finally:
        fenceposts.stop()
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("succeeded", 0), finished
    assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    assert fenceposts.breaches_of(10, "25%", "25%") == []
    # The gate finished once; its result was recorded before the pause began and was never run again.
    assert log.read_text().split().count("done") == 1
    assert len([e for e in seen if isinstance(e.event, cev.GateRan)]) == 1
    # The pause counted from when it began as recorded: it ended 8 s after that, not 8 s after the restart.
    assert canary_state(cluster, namespace)["step"] == 4
    took = ended["step_started_at"] - pause["step_started_at"]
    into = killed_at - pause["step_started_at"]
    print(f"\nthe 8 s pause took {took:.2f} s, across a SIGKILL of the agent {into:.2f} s into it")
    assert 8.0 <= took < 8.0 + 1.0
