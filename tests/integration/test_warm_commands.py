"""The warm command server against the real control plane: every eligible command, warm and in-process, alike.

Each test has an agent of its own (a temporary ROLLOUT_PLUS_AGENT_DIR), so a
warm command server of its own. Every command runs twice through the console
script's thin client: with the server (and the test checks that the server
did take it: the client's record of the child's pid) and with
``ROLLOUT_PLUS_WARM=0`` (in-process, as without an agent); stdout, stderr and
the exit code must be the same bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import manifests
import pytest
import yaml
from fake_api_servers import answering_version_then_holding
from kubeconfigs import write_kubeconfig
from plugin import WARM_WRAPPER, run_plugin, wait_for_exit, wait_for_warm_server

from kubectl_rollout.agent.paths import ENV_DIR, AgentPaths, agent_paths
from kubectl_rollout.agent.settings import ENV_IDLE
from kubectl_rollout.cli.warm.wire import ENV_WARM
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.rollout import record as managed_record

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PLUGIN = "kubectl-rollout_plus"
COMPLETE = "kubectl_complete-rollout_plus"
#: a server nothing listens on: refused at once
REFUSING = "https://127.0.0.1:1"


@dataclass(frozen=True)
class Outcome:
    stdout: bytes
    stderr: bytes
    code: int
    warm: bool


class Runner:
    """Runs the thin client the way a console script does, warm or in-process."""

    def __init__(self, paths: AgentPaths, scratch: Path) -> None:
        self.paths = paths
        self.scratch = scratch
        self.wrapper = scratch / "client.py"
        self.wrapper.write_text(WARM_WRAPPER)
        self.count = 0

    def env(self, *, warm: bool, **extra: str) -> dict[str, str]:
        env = {**os.environ, ENV_DIR: str(self.paths.runtime_dir.parent), ENV_WARM: "1" if warm else "0", **extra}
        env.pop("KUBECONFIG", None)
        return {**env, **extra}

    def start(
        self, *args: str, warm: bool, program: str = PLUGIN, cwd: Path | None = None, **extra: str
    ) -> tuple[subprocess.Popen[bytes], Path]:
        self.count += 1
        report = self.scratch / f"warm-{self.count}"
        process = subprocess.Popen(
            [sys.executable, str(self.wrapper), str(report), program, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=self.env(warm=warm, **extra),
            cwd=cwd,
        )
        return process, report

    def run(self, *args: str, warm: bool, program: str = PLUGIN, cwd: Path | None = None, **extra: str) -> Outcome:
        process, report = self.start(*args, warm=warm, program=program, cwd=cwd, **extra)
        stdout, stderr = process.communicate(timeout=60)
        return Outcome(stdout, stderr, process.returncode, report.exists())

    def both(self, *args: str, program: str = PLUGIN, **extra: str) -> tuple[Outcome, Outcome]:
        warm = self.run(*args, warm=True, program=program, **extra)
        cold = self.run(*args, warm=False, program=program, **extra)
        assert warm.warm, f"the warm server did not take {args}: {warm}"
        assert not cold.warm
        return warm, cold


def _warm_servers_of(socket_path: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"kubectl_rollout.cli.warm" in cmdline and str(socket_path).encode() in cmdline:
                found.append(int(entry.name))
    return found


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Runner]:
    """An agent of this test's own, with its warm command server answering."""
    directory = Path(tempfile.mkdtemp(prefix="rpw-", dir="/tmp"))
    paths = agent_paths({ENV_DIR: str(directory)})
    env = {**os.environ, ENV_DIR: str(directory)}
    env.pop(ENV_WARM, None)
    subprocess.run([sys.executable, "-m", "kubectl_rollout", "agent", "start"], env=env, check=True, timeout=60)
    # The agent starts its warm server; it answers once it has imported the CLI.
    wait_for_warm_server(paths.runtime_dir)
    servers = _warm_servers_of(paths.commands_socket)
    yield Runner(paths, tmp_path)
    subprocess.run([sys.executable, "-m", "kubectl_rollout", "agent", "stop", "--force"], env=env, timeout=60)
    # The server ends with its agent, by itself.
    for pid in servers:
        wait_for_exit(pid, timeout=30, what="warm server's end")
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def workload(kubeconfig: Path, namespace: str, dedicated_nodes: Callable[[int], list[str]], tmp_path: Path) -> str:
    """Managed workload ``web`` (one replica, on a node of this test's) in ``namespace``, rolled out."""
    dedicated_nodes(1)
    document = manifests.deployment("web", replicas=1, pod_spec=manifests.placement(namespace))
    document["metadata"]["annotations"] = {"kubernetes.io/change-cause": "first"}
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump(document))
    applied = run_plugin("apply", "-f", str(path), "-n", namespace, "--in-process", kubeconfig=kubeconfig)
    assert applied.returncode == 0, applied.stderr
    return "web"


def _same(warm: Outcome, cold: Outcome) -> None:
    assert (warm.stdout, warm.stderr, warm.code) == (cold.stdout, cold.stderr, cold.code)


# 23 commands, each run warm and in-process: 46 processes, 238 s at load 15 (where the module's 240 s ran out)
@pytest.mark.timeout(600)
def test_every_eligible_command_prints_and_exits_the_same_warm_and_in_process(
    warm: Runner, kubeconfig: Path, namespace: str, workload: str, tmp_path: Path
) -> None:
    k = ["--kubeconfig", str(kubeconfig), "-n", namespace]
    node = f"{namespace}-n0"
    refusing = write_kubeconfig(tmp_path / "refusing", contexts={"gone": (REFUSING, None)}, current="gone")
    cases: list[tuple[list[str], int]] = [
        (["version", "--kubeconfig", str(kubeconfig)], 0),
        (["version", "--client", "-o", "json"], 0),
        (["history", workload, *k], 0),
        (["history", workload, "--revision", "1", *k], 0),
        (["history", "absent", *k], 1),
        (["history", workload, "--revision", "lots", *k], 2),
        (["history", *k], 2),
        (["status", workload, *k], 0),
        (["-n", namespace, "--kubeconfig", str(kubeconfig), "status", workload, "-o", "json"], 0),
        (["status", "absent", *k], 1),
        (["status", workload, "-o", "jsonl", *k], 2),
        (["drain", node, "--plan", *k], 0),
        (["drain", node, "--plan", "-o", "json", "--ignore-daemonsets", *k], 0),
        (["drain", "absent-node", "--plan", *k], 1),
        (["cordon", "absent-node", *k], 1),
        (["uncordon", "absent-node", *k], 1),
        (["jobs", "list"], 0),
        (["jobs", "show", "0123456789ab"], 1),
        (["history", workload, "--kubeconfig", str(refusing)], 1),
        (["status", workload, "--kubeconfig", str(refusing)], 1),
        (["cordon", node, "--kubeconfig", str(refusing)], 1),
        (["drain", node, "--plan", "--kubeconfig", str(refusing)], 1),
        (["version", "--kubeconfig", str(refusing)], 1),
    ]
    for args, code in cases:
        warm_run, cold_run = warm.both(*args)
        _same(warm_run, cold_run)
        assert warm_run.code == code, (args, warm_run)
    # Cordon and uncordon change the node: each way from the same state.
    for command in ("cordon", "uncordon"):
        warm_run = warm.run(command, node, *k, warm=True)
        undo = warm.run("uncordon" if command == "cordon" else "cordon", node, *k, warm=False)
        cold_run = warm.run(command, node, *k, warm=False)
        assert (undo.code, warm_run.warm) == (0, True)
        _same(warm_run, cold_run)
        assert warm_run.stdout == f"node/{node} {command}ed\n".encode()
    # kubectl's TAB: the test's own nodes (other tests add theirs), and a workload's flags.
    for args in ([*k, "drain", f"{namespace}-"], [*k, "cordon", f"{namespace}-n"], ["history", "--rev"]):
        warm_run, cold_run = warm.both(*args, program=COMPLETE)
        _same(warm_run, cold_run)
    assert warm.run(*k, "drain", f"{namespace}-", warm=True, program=COMPLETE).stdout == f"{node}\n:4\n".encode()
    # ... and the namespace's managed workloads, for every command that takes one
    for command in (["status"], ["history"], ["set", "image"], ["undo"], ["restart"]):
        warm_run, cold_run = warm.both(*k, *command, "w", program=COMPLETE)
        _same(warm_run, cold_run)
        assert warm_run.stdout == b"web\n:4\n", (command, warm_run)


def test_a_kubeconfig_changed_between_two_warm_commands_is_read_again(
    warm: Runner, kubeconfig: Path, namespace: str, workload: str, tmp_path: Path
) -> None:
    config = yaml.safe_load(kubeconfig.read_text())
    copy = tmp_path / "config"
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    copy.write_text(yaml.safe_dump(config))
    first = warm.run("history", workload, warm=True, KUBECONFIG=str(copy))
    assert (first.warm, first.code, first.stdout.startswith(b"workload/web\n")) == (True, 0, True), first
    # The same file, now naming another namespace: the next command reads it again.
    for context in config["contexts"]:
        context["context"]["namespace"] = "default"
    copy.write_text(yaml.safe_dump(config))
    second = warm.run("history", workload, warm=True, KUBECONFIG=str(copy))
    assert (second.warm, second.code, b'namespace "default"' in second.stderr) == (True, 1, True), second
    # Another file in $KUBECONFIG (a context that cannot be reached), and a relative --kubeconfig (the cwd's).
    refusing = write_kubeconfig(tmp_path / "refusing", contexts={"gone": (REFUSING, None)}, current="gone")
    third = warm.run("history", workload, warm=True, KUBECONFIG=str(refusing))
    assert (third.warm, third.code, b"127.0.0.1:1" in third.stderr) == (True, 1, True), third
    relative = warm.run("history", workload, "--kubeconfig", "config", "-n", namespace, warm=True, cwd=tmp_path)
    assert (relative.warm, relative.code) == (True, 0), relative


def _interrupted(warm: Runner, kubeconfig: Path, *, through_warm: bool) -> Outcome:
    """``history web`` against an API server that holds the request, Ctrl-C once it does."""
    with answering_version_then_holding() as (url, held):
        quiet = write_kubeconfig(kubeconfig, contexts={"quiet": (url, "default")}, current="quiet")
        process, report = warm.start("history", "web", "--kubeconfig", str(quiet), warm=through_warm)
        try:
            assert held.wait(60), "the command never reached the API server"
            process.send_signal(signal.SIGINT)  # a terminal's Ctrl-C reaches the client, the foreground process
            stdout, stderr = process.communicate(timeout=60)
        finally:
            process.kill()
        held.clear()
    return Outcome(stdout, stderr, process.returncode, report.exists())


def test_ctrl_c_reaches_the_command_and_the_client_ends_as_in_process(warm: Runner, tmp_path: Path) -> None:
    warm_run = _interrupted(warm, tmp_path / "quiet", through_warm=True)
    cold_run = _interrupted(warm, tmp_path / "quiet", through_warm=False)
    assert (warm_run.warm, cold_run.warm) == (True, False)
    _same(warm_run, cold_run)
    assert warm_run.code != 0


def test_commands_answered_warm_keep_an_idle_agent_from_exiting(tmp_path: Path) -> None:
    # An agent with no job and no client exits when idle; one whose warm server answers the user's commands is in
    # use, and its exit would leave the next command to a cold start. Its idle clock starts when its warm server
    # listens (a warm server slow to start on a loaded machine had used up 3 s before the first command came).
    idle = 5.0
    directory = Path(tempfile.mkdtemp(prefix="rpw-", dir="/tmp"))
    paths = agent_paths({ENV_DIR: str(directory)})
    env = {**os.environ, ENV_DIR: str(directory), ENV_IDLE: str(idle)}
    env.pop(ENV_WARM, None)
    try:
        subprocess.run([sys.executable, "-m", "kubectl_rollout", "agent", "start"], env=env, check=True, timeout=60)
        wait_for_warm_server(paths.runtime_dir)
        agent = int(paths.pid_file.read_text())
        runner = Runner(paths, tmp_path)
        started = time.monotonic()
        answered = 0
        while time.monotonic() - started < 3 * idle:
            outcome = runner.run("version", "--client", warm=True)
            assert (outcome.warm, outcome.code) == (True, 0), f"after {answered} warm commands: {outcome}"
            answered += 1
        assert Path(f"/proc/{agent}").exists(), f"the agent exited although {answered} commands used it"
        # Left alone, it still exits when idle (and its warm server with it).
        wait_for_exit(agent, timeout=10 * idle, what="idle agent's exit")
    finally:
        subprocess.run([sys.executable, "-m", "kubectl_rollout", "agent", "stop", "--force"], env=env, timeout=60)
        shutil.rmtree(directory, ignore_errors=True)


def test_a_job_command_in_the_agent_is_submitted_and_followed_from_a_warm_child(
    warm: Runner, kubeconfig: Path, namespace: str, workload: str, cluster: Cluster
) -> None:
    k = ["--kubeconfig", str(kubeconfig), "-n", namespace]
    # What fails before a job exists fails alike, warm or not.
    for args, code in [
        (["set", "image", "absent", "app=registry.example/app:v2", "--agent", *k], 1),
        (["set", "image", workload, "no-equals-sign", "--agent", *k], 2),
        (["scale", workload, "--replicas", "-1", "--agent", *k], 2),
        (["drain", "absent-node", "--agent", *k], 1),
    ]:
        warm_run, cold_run = warm.both(*args)
        _same(warm_run, cold_run)
        assert warm_run.code == code, (args, warm_run)
    # A real change: the warm child submits it to the agent and follows it to its end, as the CLI would.
    image = "registry.example/app:v2"
    changed = warm.run("set", "image", workload, f"app={image}", "--agent", *k, warm=True)
    assert (changed.warm, changed.code) == (True, 0), changed
    assert changed.stdout.decode().endswith(f'deployment "{workload}" successfully rolled out\n'), changed
    record = managed_record.read(cluster, namespace, workload)
    assert [c["image"] for c in record.manifest["spec"]["template"]["spec"]["containers"]] == [image]
    # The job ran in the agent (its journal has it), not in the command's child.
    listed = warm.run("jobs", "list", "-o", "json", warm=True)
    jobs = json.loads(listed.stdout)
    succeeded = [(j["kind"], j["target"]) for j in jobs if j["state"] == "succeeded"]
    assert succeeded == [("rollout", f"workload/{workload}")], jobs
    followed = warm.run("status", workload, "-w", "--agent", *k, warm=True)
    assert (followed.warm, followed.code) == (True, 0), followed
