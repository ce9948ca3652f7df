"""The TUI in a real terminal: ``drain NODE --tui`` under tmux, read back with ``capture-pane``.

tmux gives the app a real pseudo-terminal at 80x24 (keys with ``send-keys``),
so this runs the TUI the way a person over SSH does: the CLI submits the
drain to the agent, opens the TUI on it, and the screen must show the PDB that
blocks it with its counts, then, once the PDB has room, the node drained.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import manifests
import pytest
from cluster_setup import deploy
from integration.test_agent import _follow, _place, agent_dir
from integration.test_drain import add_pdb
from invariants import HealthyPods

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import ENV_DIR, AgentPaths
from kubectl_rollout.jobs.events.job import JobPaused
from kubectl_rollout.kube.cluster_access import Cluster

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py


class Tmux:
    """One tmux server of our own (``-L``), so no other session is ever touched."""

    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.name, *args], capture_output=True, text=True, check=True)
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "tui")

    def drain_with_tui(self, kubeconfig: Path, node: str) -> None:
        """``drain NODE --tui`` in session ``tui``, 80x24, with this test's agent."""
        self.plugin_with_tui(kubeconfig, "drain", node)

    def plugin_with_tui(self, kubeconfig: Path, *args: str) -> None:
        """``kubectl rollout-plus ARGS --tui`` in session ``tui``, 80x24, with this test's agent."""
        command = [sys.executable, "-m", "kubectl_rollout", "--kubeconfig", str(kubeconfig), *args, "--tui"]
        env = {
            ENV_DIR: os.environ[ENV_DIR],
            "PATH": os.environ["PATH"],
            "TERM": "xterm-256color",
            "PYTHONPATH": os.pathsep.join(sys.path),
        }
        environment = [f"{k}={v}" for k, v in env.items()]
        self.run("new-session", "-d", "-s", "tui", "-x", "80", "-y", "24", "env", *environment, *command)

    def wait_for(self, check: Callable[[str], bool], *, what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = self.screen()
            if check(shown):
                return shown
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; the terminal showed:\n{shown}")


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is missing: run hack/install-system-packages.sh (make setup does)", pytrace=False)
    server = Tmux(f"rollout-plus-test-{uuid.uuid4().hex[:8]}")
    yield server
    subprocess.run(["tmux", "-L", server.name, "kill-server"], capture_output=True)


def test_drain_tui_in_a_terminal_shows_the_blocking_pdb_then_the_node_drained(
    agent_dir: AgentPaths,
    tmux: Tmux,
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    (node,) = dedicated_nodes(1)
    _place(cluster, namespace, node, replicas=2)
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, manifests.pdb("web", app="web", min_available=2))
    tmux.drain_with_tui(kubeconfig, node)

    shown = tmux.wait_for(lambda s: f"PDB {namespace}/web" in s, what="the blocker panel naming the PDB")
    assert "2/2 healthy/needed" in shown, shown
    assert "web 2/2" in shown, shown  # the pod table's PDB column
    assert "blocked" in shown, shown

    cluster.policy.patch_namespaced_pod_disruption_budget(
        "web", namespace, {"spec": {"minAvailable": None, "maxUnavailable": 2}}
    )
    shown = tmux.wait_for(lambda s: f"{node}  drained" in s, what=f"{node} drained on the screen")
    assert f"PDB {namespace}/web" not in shown, "the blocker panel stayed after the PDB had room"

    tmux.run("send-keys", "-t", "tui", "q")
    # The screen shows the node drained as soon as the event comes; the job ends a moment later.
    deadline = time.monotonic() + 30
    while True:
        with connect(name="test", start=False) as agent:
            (job,) = agent.jobs()
        if job.state != "running" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert (job.kind, job.target, job.state) == ("drain", f"node/{node}", "succeeded")


def test_s_in_a_terminal_drains_a_held_deployment_again_with_surge(
    agent_dir: AgentPaths,
    tmux: Tmux,
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    """One pod of Deployment solo behind minAvailable 1: the panel names solo and offers s; s, then y, and the
    node drains with --surge (a stand-in on the other node first), solo never without a Ready pod."""
    (node,) = dedicated_nodes(1)
    deploy(cluster, namespace, "solo", 1, pool=namespace)
    dedicated_nodes(1)  # where the surge's extra pod goes
    add_pdb(cluster, namespace, "solo", app="solo", expected=1, min_available=1)
    healthy = HealthyPods(cluster, namespace).start()
    tmux.drain_with_tui(kubeconfig, node)

    def squeezed(shown: str) -> str:
        return "".join(shown.split())  # the panel wraps its lines where the terminal ends

    # The panel says what s does, and the footer shows the key.
    shown = tmux.wait_for(lambda s: "(presss)" in squeezed(s) and "s Surge" in s, what="s offered")
    assert f"GiveDeployment{namespace}/solomorereplicas" in squeezed(shown), shown

    tmux.run("send-keys", "-t", "tui", "s")
    tmux.wait_for(lambda s: "again with --surge?" in s, what="the confirmation")
    tmux.run("send-keys", "-t", "tui", "y")
    shown = tmux.wait_for(lambda s: f"{node}  drained" in s, what=f"{node} drained by the drain with --surge")
    assert f"PDB {namespace}/solo" not in shown

    tmux.run("send-keys", "-t", "tui", "q")
    # The screen shows the node drained as soon as the event comes; the job ends a moment later: followed to
    # its end on the agent's stream.
    with connect(name="test", start=False) as agent:
        (again,) = [job for job in agent.jobs() if job.state != "cancelled"]
        for _ in agent.attach(again.id):
            pass
        jobs = {job.id: agent.show(job.id) for job in agent.jobs()}
    assert sorted(job.state for job in jobs.values()) == ["cancelled", "succeeded"], jobs
    assert jobs[again.id].spec["drain"]["options"]["surge"] is True
    assert cluster.core.read_node(node).spec.unschedulable is True
    assert cluster.apps.read_namespaced_deployment("solo", namespace).spec.replicas == 1
    healthy.settle({"solo": 1})
    assert healthy.stop()["solo"] >= 1


def test_campaign_tui_in_a_terminal_shows_its_waves_and_the_pdb_holding_the_first_and_p_pauses_it(
    agent_dir: AgentPaths,
    tmux: Tmux,
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    """``campaign A B --tui``: one pod of Deployment solo behind minAvailable 1 on the first node holds the first
    wave; the screen shows the waves, the node blocked and the PDB with its workload; p pauses the campaign."""
    (first,) = dedicated_nodes(1)
    deploy(cluster, namespace, "solo", 1, pool=namespace)
    (second,) = dedicated_nodes(1)
    add_pdb(cluster, namespace, "solo", app="solo", expected=1, min_available=1)
    tmux.plugin_with_tui(kubeconfig, "campaign", first, second, "--budget", "1", "--order", "given")

    def squeezed(shown: str) -> str:
        return "".join(shown.split())

    wanted = (
        "wave 1/2 · out 1/1",
        "1 blocked · 1 waiting",
        "1     current",  # the waves table
        "2     next",
        "blocked  1 pod held by PDB",  # the node's state and why
    )

    def all_shown(shown: str) -> bool:
        # The panel wraps its lines where the terminal ends, and the tables' columns take the width the terminal
        # gives them: everything is looked for without the spaces.
        panel = f"PDB{namespace}/solo" in squeezed(shown) and f"GiveDeployment{namespace}/solo" in squeezed(shown)
        return panel and all(squeezed(w) in squeezed(shown) for w in wanted)

    tmux.wait_for(all_shown, what="the waves, the blocked node and the panel naming solo")

    tmux.run("send-keys", "-t", "tui", "p")
    with connect(name="test", start=False) as agent:
        (job,) = agent.jobs()
    _follow(job.id, until=JobPaused)  # the job's own stream says when the agent paused it
    with connect(name="test", start=False) as agent:
        job = agent.show(job.id)
    assert (job.kind, job.paused) == ("campaign", True)
    tmux.wait_for(lambda s: "paused" in s.splitlines()[1], what="'paused' in the header line")
    tmux.run("send-keys", "-t", "tui", "q")
    with connect(name="test", start=False) as agent:
        agent.cancel(job.id)
    # Held and then paused: the second node was never cordoned.
    assert not cluster.core.read_node(second).spec.unschedulable
