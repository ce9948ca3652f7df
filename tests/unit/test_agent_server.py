"""A real agent process, without a cluster: the protocol's errors over the wire, a job's life from submit to
its last event, and shutdown. (A job whose kubeconfig does not exist fails before any API call.)"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubectl_rollout.agent.client import AgentClient, agent_running, connect
from kubectl_rollout.agent.paths import ENV_DIR, AgentPaths, agent_paths
from kubectl_rollout.agent.protocol import ErrorCode, ProtocolError
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted
from kubectl_rollout.jobs.spec import Connection, DrainJob, JobKind, JobSpec


@pytest.fixture(scope="module")
def agent_env() -> Iterator[tuple[AgentPaths, dict[str, str]]]:
    directory = tempfile.mkdtemp(prefix="rpa-unit-", dir="/tmp")
    environ = {**os.environ, ENV_DIR: directory}
    paths = agent_paths(environ)
    with connect(paths, environ=environ, name="unit") as agent:
        pid = agent.agent["pid"]
    yield paths, environ
    if agent_running(paths):
        os.kill(pid, 9)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def agent(agent_env: tuple[AgentPaths, dict[str, str]]) -> Iterator[AgentClient]:
    paths, environ = agent_env
    with connect(paths, environ=environ, start=False, name="unit") as client:
        yield client


def _raw(paths: AgentPaths, *lines: bytes) -> list[dict[str, object]]:
    """Send ``lines`` on a fresh connection and read one answer per line."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(paths.socket))
        reader = sock.makefile("rb")
        answers = []
        for line in lines:
            sock.sendall(line)
            answers.append(json.loads(reader.readline()))
        return answers


def test_the_socket_is_0600_in_a_0700_directory(agent_env: tuple[AgentPaths, dict[str, str]]) -> None:
    paths, _ = agent_env
    assert stat.S_IMODE(paths.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(paths.runtime_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(paths.state_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(paths.journal.stat().st_mode) == 0o600


def test_protocol_errors_over_the_wire_leave_the_connection_usable(
    agent_env: tuple[AgentPaths, dict[str, str]],
) -> None:
    paths, _ = agent_env
    before_hello, not_json, mismatch, hello, unknown, bad_params = _raw(
        paths,
        b'{"jsonrpc":"2.0","id":1,"method":"list"}\n',
        b"{nope\n",
        b'{"jsonrpc":"2.0","id":2,"method":"hello","params":{"protocol":7,"oldest":7}}\n',
        b'{"jsonrpc":"2.0","id":3,"method":"hello","params":{"protocol":1,"oldest":1}}\n',
        b'{"jsonrpc":"2.0","id":4,"method":"frobnicate"}\n',
        b'{"jsonrpc":"2.0","id":5,"method":"submit","params":{"spec":{"kind":"drain"}}}\n',
    )
    assert before_hello["error"]["code"] == ErrorCode.HELLO_FIRST  # type: ignore[index]
    assert not_json["error"]["code"] == ErrorCode.PARSE_ERROR  # type: ignore[index]
    assert mismatch["error"]["code"] == ErrorCode.VERSION_MISMATCH  # type: ignore[index]
    assert "this client speaks 7 (accepts 7 and newer), the agent speaks 1" in mismatch["error"]["message"]  # type: ignore[index]
    assert hello["result"]["protocol"] == 1  # type: ignore[index]
    assert unknown["error"]["code"] == ErrorCode.METHOD_NOT_FOUND  # type: ignore[index]
    assert bad_params["error"]["code"] == ErrorCode.INVALID_PARAMS  # type: ignore[index]


def test_an_unknown_job_is_named_with_where_to_look(agent: AgentClient) -> None:
    with pytest.raises(ProtocolError) as caught:
        agent.show("nope")
    assert caught.value.code == ErrorCode.NO_SUCH_JOB
    assert "no job 'nope' in the agent's journal" in caught.value.message
    assert "kubectl rollout-plus jobs list" in caught.value.message


def test_a_job_from_submit_to_its_last_event(agent: AgentClient, agent_env: tuple[AgentPaths, dict[str, str]]) -> None:
    paths, environ = agent_env
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=("/nonexistent/kubeconfig",), context="nowhere"),
        drain=DrainJob(nodes=("n1",)),
    )
    info = agent.submit(spec)
    assert JobSpec.from_dict(info.spec) == spec
    with connect(paths, environ=environ, start=False, name="unit") as follower:
        events = list(follower.attach(info.id))
    assert [type(e.event) for e in events] == [JobStarted, JobFinished]
    assert [e.seq for e in events] == [1, 2]
    finished = events[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 1
    assert finished.error
    # From a later sequence number: only what follows it.
    with connect(paths, environ=environ, start=False, name="unit") as follower:
        assert [e.seq for e in follower.attach(info.id, from_seq=2)] == [2]
    shown = agent.show(info.id)
    assert (shown.state, shown.exit_code, shown.last_seq, shown.runs) == ("failed", 1, 2, 1)
    assert shown.error == finished.error
    assert info.id in [job.id for job in agent.jobs()]
    with pytest.raises(ProtocolError) as caught:
        agent.cancel(info.id)
    assert caught.value.code == ErrorCode.JOB_FINISHED


def test_shutdown_stops_the_agent_and_frees_its_socket(agent_env: tuple[AgentPaths, dict[str, str]]) -> None:
    paths, environ = agent_env
    with connect(paths, environ=environ, start=False, name="unit") as agent:
        assert agent.shutdown() == {"stopping": True, "running": []}
    deadline = time.monotonic() + 15
    while agent_running(paths) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not agent_running(paths)
    assert not Path(paths.socket).exists()
    assert "shutdown requested" in paths.log.read_text()
