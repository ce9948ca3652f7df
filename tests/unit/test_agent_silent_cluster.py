"""The agent's cluster calls against servers that do not answer: each call ends, the agent stays responsive.

A server that accepts connections and never answers (a black-holed load
balancer) once wedged the agent: the TUI's ``nodes`` calls, with no
request timeout, never returned, about six of them filled the worker pool,
and every later cluster call hung. Now a server that never answered fails
each call at its first contact (2.5 s), and one that answered once and then
went silent fails it at the agent's call timeout (shortened here). No cluster
is needed: the servers are sockets of this test.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fake_api_servers import answering_version_then_holding
from kubeconfigs import write_kubeconfig
from plugin import wait_for_warm_server

from kubectl_rollout.agent.client import agent_running, cluster_calls, connect
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.paths import ENV_DIR, AgentPaths, agent_paths
from kubectl_rollout.agent.protocol import ErrorCode
from kubectl_rollout.agent.transport.cluster_service import ENV_CALL_TIMEOUT
from kubectl_rollout.jobs.spec import Connection

#: the agent's call timeout in these tests (production: 20 s)
CALL_TIMEOUT = 2.0
#: more calls at once than the agent has worker threads on two cores (min(32, cores + 4) = 6)
CONCURRENT_CALLS = 10


@pytest.fixture(scope="module")
def agent_env() -> Iterator[tuple[AgentPaths, dict[str, str]]]:
    directory = tempfile.mkdtemp(prefix="rpa-silent-", dir="/tmp")
    environ = {**os.environ, ENV_DIR: directory, ENV_CALL_TIMEOUT: str(CALL_TIMEOUT)}
    paths = agent_paths(environ)
    with connect(paths, environ=environ, name="silent") as agent:
        pid = agent.agent["pid"]
    wait_for_warm_server(paths.runtime_dir)
    yield paths, environ
    if agent_running(paths):
        os.kill(pid, 9)
    shutil.rmtree(directory, ignore_errors=True)


def kubeconfig(folder: Path, server: str) -> Path:
    return write_kubeconfig(folder / "kubeconfig", contexts={"quiet": (server, None)}, current="quiet")


@pytest.fixture
def silent_server() -> Iterator[str]:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(128)
        yield f"https://127.0.0.1:{silent.getsockname()[1]}"


@pytest.fixture
def gone_quiet_server() -> Iterator[str]:
    """Answers /version (the first contact), then never answers anything else until the test ends."""
    with answering_version_then_holding() as (url, _held):
        yield url


def many_nodes_calls(paths: AgentPaths, environ: dict[str, str], config: Path) -> list[tuple[float, str]]:
    """CONCURRENT_CALLS ``nodes`` calls at once, each on its own connection: (seconds, error message) each."""
    connection = Connection(kubeconfig=(str(config),), context="quiet", namespace="default", request_timeout=0)

    def one(_: int) -> tuple[float, str]:
        started = time.monotonic()
        with connect(paths, environ=environ, start=False, name="silent") as agent, pytest.raises(AgentError) as failed:
            agent.run(cluster_calls.nodes(connection))
        assert getattr(failed.value, "code", ErrorCode.CLUSTER_ERROR) == ErrorCode.CLUSTER_ERROR
        return time.monotonic() - started, failed.value.message

    with ThreadPoolExecutor(CONCURRENT_CALLS) as pool:
        return list(pool.map(one, range(CONCURRENT_CALLS)))


def still_answers(paths: AgentPaths, environ: dict[str, str]) -> float:
    started = time.monotonic()
    with connect(paths, environ=environ, start=False, name="silent") as agent:
        agent.jobs(limit=5)
    return time.monotonic() - started


def test_a_server_that_never_answered_fails_every_call_at_first_contact(
    agent_env: tuple[AgentPaths, dict[str, str]], silent_server: str, tmp_path: Path
) -> None:
    paths, environ = agent_env
    baseline = still_answers(paths, environ)
    answers = many_nodes_calls(paths, environ, kubeconfig(tmp_path, silent_server))
    for seconds, message in answers:
        assert message == (
            f'the Kubernetes API server at {silent_server} (context "quiet") did not answer in time; check that it is '
            "up and reachable from here (VPN, proxy, firewall) and --request-timeout"
        )
        # One first contact (2.5 s) answers every call queued behind it; a loaded machine's second more.
        assert seconds < baseline + 2.5 + 1.0, answers
    assert still_answers(paths, environ) < baseline + 1.0


def test_a_server_gone_quiet_after_answering_fails_every_call_at_the_call_timeout(
    agent_env: tuple[AgentPaths, dict[str, str]], gone_quiet_server: str, tmp_path: Path
) -> None:
    paths, environ = agent_env
    baseline = still_answers(paths, environ)
    answers = many_nodes_calls(paths, environ, kubeconfig(tmp_path, gone_quiet_server))
    for seconds, message in answers:
        assert f"the Kubernetes API server at {gone_quiet_server}" in message, answers
        assert "did not answer in time" in message, answers
        # The call timeout, once per round of the worker pool (and one retry of urllib3's per call at most).
        assert seconds < baseline + 2 * 2 * CALL_TIMEOUT + 2.0, answers
    assert still_answers(paths, environ) < baseline + 1.0
