"""The agent process at its limits: no file descriptor left, a worker pool held by a cluster that never
answers, a process that answers nothing, a runtime directory others can read. Real processes, no cluster
(the "cluster" is an HTTP server of this test that answers ``/version`` and then nothing)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fake_api_servers import answering_version_then_holding
from kubeconfigs import write_kubeconfig
from watching import eventually

from kubectl_rollout.agent.client import (
    ENV_HELLO_TIMEOUT,
    AsyncAgentClient,
    agent_pid,
    agent_running,
    cluster_calls,
    connect,
    hello_timeout,
)
from kubectl_rollout.agent.errors import AgentError, AgentUnavailable
from kubectl_rollout.agent.paths import ENV_DIR, AgentPaths, agent_paths
from kubectl_rollout.agent.protocol import ErrorCode, Method, ProtocolError
from kubectl_rollout.agent.transport.server import MAX_STREAMS
from kubectl_rollout.jobs.spec import Connection, DrainJob, JobKind, JobSpec

WAIT = 30.0
#: the agent's bound on one cluster call, in seconds, raised here so that calls to a silent server hang
#: for the whole test (agent/transport/cluster_service.py's ENV_CALL_TIMEOUT)
ENV_CALL_TIMEOUT = "ROLLOUT_PLUS_AGENT_CALL_TIMEOUT"


def wait_for(condition: Callable[[], Any], *, timeout: float = WAIT, what: str = "the condition") -> Any:
    """``watching.eventually`` with this module's default bound."""
    return eventually(condition, timeout=timeout, what=what)


def cli(environ: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubectl_rollout", *args], capture_output=True, text=True, env=environ, timeout=timeout
    )


def process_gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie counts: it holds nothing any more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.fixture
def agent_dir() -> Iterator[tuple[AgentPaths, dict[str, str]]]:
    """A fresh agent's directory and environment; whatever agent runs there at the end is killed."""
    directory = tempfile.mkdtemp(prefix="rpa-limits-", dir="/tmp")
    environ = {**os.environ, ENV_DIR: directory, ENV_CALL_TIMEOUT: "600"}
    paths = agent_paths(environ)
    yield paths, environ
    pid = agent_pid(paths)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(directory, ignore_errors=True)


def start(paths: AgentPaths, environ: dict[str, str]) -> int:
    with connect(paths, environ=environ, name="limits") as agent:
        return int(agent.agent["pid"])


@pytest.fixture
def quiet_server() -> Iterator[tuple[str, threading.Event]]:
    """Answers /version (so the first contact succeeds), then holds every other request unanswered; the
    event counts nothing, it is set when the first held request arrives."""
    with answering_version_then_holding() as served:
        yield served


def quiet_connection(folder: Path, server: str) -> Connection:
    config = write_kubeconfig(folder / "kubeconfig", contexts={"quiet": (server, None)}, current="quiet")
    return Connection(kubeconfig=(str(config),), context="quiet", namespace="default", request_timeout=0)


# --- no file descriptor left -----------------------------------------------------------------------------------


def test_without_a_free_descriptor_the_agent_logs_once_and_its_error_file_stays_empty(
    agent_dir: tuple[AgentPaths, dict[str, str]],
) -> None:
    paths, environ = agent_dir
    pid = start(paths, environ)
    open_now = len(os.listdir(f"/proc/{pid}/fd"))
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (open_now + 2, hard))
    clients = []
    try:
        for _ in range(150):
            client = socket.socket(socket.AF_UNIX)
            client.setblocking(False)
            with contextlib.suppress(BlockingIOError):  # the backlog is full: this one waits in the kernel
                client.connect(str(paths.socket))
            clients.append(client)
        wait_for(lambda: "out of system resource" in paths.log.read_text(), what="the agent to log the failure")
        # The old agent wrote ~400 KB of tracebacks in these 3 s; the window is what a flood needs to show.
        time.sleep(3)
        log = paths.log.read_text()
        assert log.count("out of system resource") == 1, log
        assert "raise `ulimit -n`" in log
        assert "Traceback" not in log
        assert paths.start_errors.stat().st_size == 0
    finally:
        for client in clients:
            client.close()
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))

    # Descriptors free again: it serves as before (asyncio retries accept() a second later by itself). Until it
    # has accepted and dropped the closed clients still queued in its backlog, a connect may find that full.
    def serves() -> bool:
        try:
            with connect(paths, environ=environ, start=False, name="limits") as agent:
                return agent.jobs() == []
        except AgentUnavailable:
            return False

    wait_for(serves, what="the agent to serve again once descriptors are free")


# --- stop always stops -----------------------------------------------------------------------------------------


def test_stop_force_ends_an_agent_whose_cluster_workers_are_all_stuck(
    agent_dir: tuple[AgentPaths, dict[str, str]], quiet_server: tuple[str, threading.Event], tmp_path: Path
) -> None:
    paths, environ = agent_dir
    server, held = quiet_server
    pid = start(paths, environ)
    connection = quiet_connection(tmp_path, server)
    stuck: list[str] = []

    def one_call(_: int) -> None:
        try:
            with connect(paths, environ=environ, start=False, name="stuck") as agent:
                agent.run(cluster_calls.nodes(connection))
        except AgentError as err:
            stuck.append(err.message)  # the agent went away under it: expected

    pool = ThreadPoolExecutor(12)
    try:
        for index in range(12):  # more than the agent's cluster workers
            pool.submit(one_call, index)
        wait_for(held.is_set, what="a cluster call to reach the silent server")
        # A job against the same server: running, its first list call held too.
        with connect(paths, environ=environ, start=False, name="stuck") as agent:
            job = agent.submit(JobSpec(kind=JobKind.DRAIN, connection=connection, drain=DrainJob(nodes=("n1",))))
        started = time.monotonic()
        stopped = cli(environ, "agent", "stop", "--force", timeout=60)
        took = time.monotonic() - started
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout.startswith(f"agent stopped (pid {pid})")
        assert took < 20, took
        assert wait_for(lambda: process_gone(pid), timeout=5, what="the process to end")
        assert not agent_running(paths)
        absent = cli(environ, "agent", "status")
        assert (absent.returncode, absent.stdout.startswith("no agent is running")) == (1, True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    # The job resumes with the next agent (it was journaled as running).
    with connect(paths, environ=environ, name="limits") as agent:
        wait_for(lambda: agent.show(job.id).runs == 2, what="the job to resume")


@pytest.mark.parametrize(
    ("given", "seconds"),
    [(None, 10.0), ("2", 2.0), ("0.5", 0.5), ("300", 300.0), ("301", 10.0), ("0", 10.0), ("-1", 10.0), ("ten", 10.0)],
)
def test_the_hello_bound_is_ten_seconds_unless_the_environment_gives_a_sensible_one(
    given: str | None, seconds: float
) -> None:
    assert hello_timeout({} if given is None else {ENV_HELLO_TIMEOUT: given}) == seconds


def test_stop_force_ends_an_agent_that_answers_nothing_and_status_says_it_runs(
    agent_dir: tuple[AgentPaths, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, environ = agent_dir
    pid = start(paths, environ)
    # Each client below waits out its hello bound once: 2 s here instead of the 10 s default (the table above).
    environ[ENV_HELLO_TIMEOUT] = "2"
    monkeypatch.setenv(ENV_HELLO_TIMEOUT, "2")
    os.kill(pid, signal.SIGSTOP)  # as wedged as a process gets: it accepts (the kernel does) and answers nothing
    try:
        status = cli(environ, "agent", "status")
        assert status.returncode == 1
        assert f"an agent runs (pid {pid}) but does not answer" in status.stdout
        # Any other command says so in one line too, instead of waiting forever for its hello.
        listed = cli(environ, "jobs", "list", timeout=60)
        assert listed.returncode == 1
        assert "accepted the connection but did not answer within 2 s" in listed.stderr
        assert len(listed.stderr.strip().splitlines()) == 1
        # The TUI's client too.
        with pytest.raises(AgentUnavailable, match="did not answer within 2 s"):
            asyncio.run(asyncio.wait_for(AsyncAgentClient.open(paths, start=False), 30))
        polite = cli(environ, "agent", "stop")
        assert polite.returncode == 1
        assert "agent stop --force" in polite.stderr
        forced = cli(environ, "agent", "stop", "--force", timeout=60)
        assert forced.returncode == 0, forced.stderr
        assert forced.stdout.startswith(f"agent stopped (pid {pid})")
        assert process_gone(pid)
        assert not agent_running(paths)
    finally:
        if not process_gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_one_connection_follows_at_most_max_streams_jobs(
    agent_dir: tuple[AgentPaths, dict[str, str]], quiet_server: tuple[str, threading.Event], tmp_path: Path
) -> None:
    paths, environ = agent_dir
    server, held = quiet_server
    start(paths, environ)
    connection = quiet_connection(tmp_path, server)
    with connect(paths, environ=environ, start=False, name="limits") as agent:
        job = agent.submit(JobSpec(kind=JobKind.DRAIN, connection=connection, drain=DrainJob(nodes=("n1",))))
        wait_for(held.is_set, what="the job to reach the silent server")
        for _ in range(MAX_STREAMS):
            agent.call(Method.ATTACH, job=job.id)  # each stream follows the running job
        with pytest.raises(ProtocolError) as refused:
            agent.call(Method.ATTACH, job=job.id)
    assert refused.value.code == ErrorCode.LIMIT_REACHED
    assert "attach on a connection of its own" in refused.value.message


# --- the runtime directory -------------------------------------------------------------------------------------


def test_a_runtime_dir_that_is_not_0700_is_refused_by_every_command_with_what_to_fix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    runtime.chmod(0o755)
    environ = {
        key: value for key, value in os.environ.items() if key not in (ENV_DIR, "XDG_STATE_HOME", "XDG_RUNTIME_DIR")
    }
    environ.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime))
    fallback = Path(f"/tmp/runtime-{os.getuid()}")
    existed = fallback.exists()
    for args in (("agent", "status"), ("agent", "start"), ("agent", "stop"), ("jobs", "list")):
        ran = cli(environ, *args)
        assert ran.returncode == 1, (args, ran.stdout, ran.stderr)
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1, (args, ran.stderr)
        assert f"$XDG_RUNTIME_DIR ({runtime}) has mode 0755, not 0700" in lines[0]
        assert f"chmod 700 {runtime}" in lines[0]
        assert "Warning" not in ran.stderr
    assert stat.S_IMODE(runtime.stat().st_mode) == 0o755  # not ours to change
    assert not (runtime / "kubectl-rollout-plus").exists()
    assert fallback.exists() == existed  # platformdirs' /tmp fallback never used
