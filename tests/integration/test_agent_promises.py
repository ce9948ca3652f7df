"""README promises of the agent's commands and of `status -o jsonl` that had no test (issue 19): `jobs attach
--from-seq N`, `agent logs -f`, `status NAME -w -o jsonl`.

The agent tests run a real agent in their own ROLLOUT_PLUS_AGENT_DIR (``agent_dir``), through the CLI.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from cluster_setup import deploy
from integration.test_agent import agent_dir as agent_dir  # the fixture
from integration.test_drain import node_state, pods_on
from integration.test_rollouts import apply, workload
from plugin import events, run_plugin

from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.pods import is_ready


def _lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


# --- jobs attach --from-seq N ---------------------------------------------------------------------------------


def test_jobs_attach_from_seq_starts_at_that_event_of_a_finished_job(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, agent_dir: AgentPaths
) -> None:
    (target,) = dedicated_nodes(1)
    deploy(cluster, namespace, "web", 2, pool=namespace)
    submitted = run_plugin("drain", target, "--agent", "--detach", kubeconfig=kubeconfig)
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()

    whole = run_plugin("jobs", "attach", job, "-o", "jsonl", kubeconfig=kubeconfig)
    assert whole.returncode == 0, whole.stderr
    everything = _lines(whole.stdout)
    assert everything[-1]["type"] == "JobFinished"  # the job has finished: what follows replays its journal
    # What the job did, in the cluster: the node is cordoned and empty of the test's pods.
    assert node_state(cluster, target)[0] is True
    assert [p for p in pods_on(cluster, target) if p.metadata.namespace == namespace] == []

    start = 4
    tail = run_plugin("jobs", "attach", job, "--from-seq", str(start), "-o", "jsonl", kubeconfig=kubeconfig)

    assert tail.returncode == 0, tail.stderr  # the job's exit code
    later = _lines(tail.stdout)
    assert [e["seq"] for e in later] == list(range(start, len(everything) + 1))
    assert later == everything[start - 1 :]
    # From the last event: the job's result alone, and its exit code.
    last = run_plugin("jobs", "attach", job, "--from-seq", str(len(everything)), "-o", "jsonl", kubeconfig=kubeconfig)
    assert last.returncode == 0, last.stderr
    assert _lines(last.stdout) == everything[-1:]
    # Past the last event: nothing more to print, and the job's result still decides the exit code.
    beyond = run_plugin("jobs", "attach", job, "--from-seq", str(len(everything) + 5), kubeconfig=kubeconfig)
    assert (beyond.returncode, beyond.stdout, beyond.stderr) == (0, "", "")


# --- agent logs -f --------------------------------------------------------------------------------------------


def test_agent_logs_follow_prints_lines_written_after_it_started_and_ends_on_ctrl_c(
    cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, agent_dir: AgentPaths
) -> None:
    (target,) = dedicated_nodes(1)
    started = run_plugin("agent", "start")
    assert started.returncode == 0, started.stderr
    follower = subprocess.Popen(
        [sys.executable, "-m", "kubectl_rollout", "agent", "logs", "-f"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        # The log so far first: the agent's start.
        for line in follower.stdout:
            if "listening on" in line:
                break
        # A line the agent writes only now (a job id that did not exist when the follower started).
        submitted = run_plugin("drain", target, "--agent", "--detach", kubeconfig=kubeconfig)
        assert submitted.returncode == 0, submitted.stderr
        job = submitted.stdout.strip()
        for line in follower.stdout:
            if f"job {job} (drain node/{target}): submitted" in line:
                break
        else:
            raise AssertionError("the follower ended before the job's line")
        follower.send_signal(signal.SIGINT)
        code = follower.wait(10)
        assert follower.stderr is not None
        stderr = follower.stderr.read()
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(10)
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert agent_dir.log.read_text().count(f"job {job} (drain node/{target}): submitted") == 1


# --- status NAME -w -o jsonl ------------------------------------------------------------------------------------


def test_status_watch_jsonl_prints_the_rollouts_events_parsed_back_as_what_the_cluster_shows(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    recorded = apply(kubeconfig, namespace, workload("web", 3, ready_after="1s"), tmp_path, "--no-wait")
    assert recorded.returncode == 0, recorded.stderr
    assert cluster.apps.list_namespaced_replica_set(namespace).items == []  # recorded, not driven

    once = run_plugin("status", "web", "-n", namespace, "-o", "jsonl", kubeconfig=kubeconfig)
    assert once.returncode == 2
    assert "-o jsonl prints a job's events: use it with -w" in once.stderr

    result = run_plugin(
        "status", "web", "-n", namespace, "-w", "-o", "jsonl", "--timeout", "60s", kubeconfig=kubeconfig
    )

    assert result.returncode == 0, result.stderr
    lines = events(result)
    assert len(lines) == len(result.stdout.splitlines())  # every line is an event
    parsed = [Envelope.from_dict(line) for line in lines]
    assert [e.seq for e in parsed] == list(range(1, len(parsed) + 1))
    assert len({e.job for e in parsed}) == 1
    assert all(line["schema"] == 1 for line in lines)
    types = [e.type for e in parsed]
    assert (types[0], types[-1]) == ("JobStarted", "JobFinished")
    assert lines[-1]["state"] == "succeeded"
    assert lines[-1]["exit_code"] == 0
    (finished,) = [line for line in lines if line["type"] == "RolloutFinished"]
    assert (finished["workload"], finished["namespace"], finished["outcome"], finished["succeeded"]) == (
        "web",
        namespace,
        "Complete",
        True,
    )
    # What the events say is what the cluster shows: the ReplicaSet they created is the one there, at 3,
    # all available, and the last progress line's rows are the ReplicaSets as they are.
    (created,) = [line for line in lines if line["type"] == "ReplicaSetCreated"]
    (replica_set,) = cluster.apps.list_namespaced_replica_set(namespace).items
    assert created["name"] == replica_set.metadata.name
    assert (replica_set.spec.replicas, replica_set.status.available_replicas) == (3, 3)
    last = [line for line in lines if line["type"] == "RolloutProgressed"][-1]
    assert (last["phase"], last["desired"], last["updated"], last["available"]) == ("Complete", 3, 3, 3)
    assert [(r["name"], r["desired"], r["available"]) for r in last["rows"]] == [(replica_set.metadata.name, 3, 3)]
    pods = cluster.core.list_namespaced_pod(namespace).items
    assert sorted(is_ready(p) for p in pods if p.metadata.deletion_timestamp is None) == [True] * 3
