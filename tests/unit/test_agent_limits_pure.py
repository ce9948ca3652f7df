"""The agent's bounds as pure functions: the log's quoting and throttling, the reply guard, the spec schema,
the runtime directory rule. No process, no socket."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from kubectl_rollout.agent.agent_log import LogStream, OneLineFormatter, Throttle, quote_controls
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.paths import agent_paths, session_dir_problem
from kubectl_rollout.agent.protocol import MAX_LINE, ErrorCode, ProtocolError, Response, cut, decode, encode_reply
from kubectl_rollout.agent.transport.request_schema import PARAMS, validate
from kubectl_rollout.jobs.spec import JobSpec, SpecError

FORGED = "2026-11-25 10:00:00,000 INFO job 1 (drain node/x): succeeded"


def record(message: str, *args: Any, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("kubectl_rollout.agent", logging.INFO, __file__, 1, message, args, info)


def test_a_message_is_one_line_with_its_control_characters_escaped() -> None:
    formatter = OneLineFormatter("%(levelname)s %(message)s")
    line = formatter.format(record("job %s submitted", f"x\n{FORGED}\r\x1b[31m\x9b"))
    assert line == f"INFO job x\\n{FORGED}\\r\\x1b[31m\\x9b submitted"
    assert "\n" not in line


def test_a_traceback_is_indented_so_that_no_line_of_it_starts_like_a_record() -> None:
    try:
        raise ValueError(f"bad\n{FORGED}")
    except ValueError as err:
        text = OneLineFormatter("%(message)s").format(record("failed", exc=err))
    first, *rest = text.split("\n")
    assert first == "failed"
    assert rest
    assert all(line.startswith("    | ") for line in rest)
    assert not any(line.startswith("2026") for line in text.splitlines())


def test_quote_controls_leaves_printable_text_alone() -> None:
    assert quote_controls("node/a, node-b.example — ünïcode") == "node/a, node-b.example — ünïcode"


def test_a_flood_is_written_once_per_period_with_a_count() -> None:
    now = [0.0]
    throttle = Throttle(60.0, clock=lambda: now[0])
    passed = []
    for second in range(0, 130):
        now[0] = float(second)
        for _ in range(100):  # a hundred a second, as accept() failed
            entry = record("socket.accept() out of system resource")
            if throttle.filter(entry):
                passed.append((second, entry.getMessage()))
    assert [second for second, _ in passed] == [0, 60, 120]
    assert passed[1][1] == "socket.accept() out of system resource (5999 more like it in the last 60 s, not written)"


def test_stderr_into_the_log_is_bounded_per_period() -> None:
    buffer = io.StringIO()
    logger = logging.getLogger("test.agent.stderr")
    logger.propagate = False
    handler = logging.StreamHandler(buffer)
    logger.addHandler(handler)
    try:
        stream = LogStream(logger, clock=lambda: 0.0)
        for index in range(5000):
            stream.write(f"Traceback line {index}\n")
    finally:
        logger.removeHandler(handler)
    assert len(buffer.getvalue().splitlines()) == 200


def test_an_answer_past_the_line_limit_becomes_an_error_for_the_same_id() -> None:
    line = encode_reply(Response(17, result={"blob": "x" * MAX_LINE}))
    assert len(line) < 1024
    answer = json.loads(line)
    assert answer["id"] == 17
    assert answer["error"]["code"] == ErrorCode.REPLY_TOO_LARGE
    small = encode_reply(Response(18, result={"ok": True}))
    assert json.loads(small) == {"jsonrpc": "2.0", "id": 18, "result": {"ok": True}}


def test_cut_says_how_long_the_whole_was() -> None:
    assert cut("short", 512) == "short"
    long = cut("n" * 10_000, 100)
    assert len(long) == 100
    assert long.endswith("... (10000 characters; see show)")


@pytest.mark.parametrize(
    ("line", "ident"),
    [
        (b'{"jsonrpc":"2.0","id":3,"method":"x","params":"no"}', 3),
        (b'{"jsonrpc":"2.0","id":"q","method":[]}', "q"),
    ],
)
def test_a_decode_error_keeps_the_id_it_read(line: bytes, ident: object) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(line, strict=True)
    assert caught.value.request_id == ident


def test_an_id_past_the_bounds_is_refused() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(b'{"jsonrpc":"2.0","id":"' + b"i" * 300 + b'","method":"list"}', strict=True)
    assert caught.value.code == ErrorCode.INVALID_REQUEST


def test_every_method_has_a_schema() -> None:
    from kubectl_rollout.agent.protocol import Method

    assert set(PARAMS) == set(Method)


@pytest.mark.parametrize(
    ("method", "params", "says"),
    [
        ("list", {"limit": 0}, "limit must be an integer from 1 to 1000, not 0"),
        ("list", {"limit": True}, "limit must be an integer from 1 to 1000, not a boolean"),
        ("attach", {"job": "abc", "follow": "yes"}, "follow must be true or false, not a string"),
        ("cordon", {"connection": {}, "node": "a" * 254}, "node is not a valid name"),
        ("nodes", {"connection": {}, "selector": "a in ("}, "selector is not a valid label selector"),
        ("nodes", {"connection": {"kubeconfig": "/etc/passwd"}}, "connection.kubeconfig: must be a list"),
        ("workloads", {"connection": {}, "namespace": "Kube_System"}, "namespace is not a valid namespace"),
        ("plan", {"connection": {}, "nodes": "node-1"}, "nodes must be a non-empty list of node names"),
        ("pods", {"connection": {}, "workload": "web", "limit": -1}, "limit must be an integer from 0 to 1000"),
        ("hello", {"protocol": 1, "client": "a\x1b[2J"}, "client: must not contain control characters"),
    ],
)
def test_the_schema_names_the_param_at_fault(method: str, params: dict[str, Any], says: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        validate(method, params)
    assert caught.value.code == ErrorCode.INVALID_PARAMS
    assert says in caught.value.message


def test_defaults_are_filled_in() -> None:
    assert validate("attach", {"job": "abc"}) == {"job": "abc", "from_seq": 1, "follow": True, "coalesce": False}
    assert validate("hello", {"protocol": 1}) == {"protocol": 1, "oldest": 1, "client": "?"}


def test_a_spec_from_the_cli_round_trips_through_the_schema() -> None:
    from kubectl_rollout.jobs.spec import ActionKind, Connection, DrainJob, JobKind, RolloutAction

    for spec in (
        JobSpec(kind=JobKind.DRAIN, connection=Connection(kubeconfig=("/k",)), drain=DrainJob(selector="pool=blue")),
        JobSpec(
            kind=JobKind.ROLLOUT,
            connection=Connection(context="c", namespace="shop"),
            rollout=RolloutAction(kind=ActionKind.APPLY, manifest={"metadata": {"name": "web"}}),
        ),
    ):
        assert JobSpec.from_dict(json.loads(spec.to_json())) == spec
        assert validate("submit", {"spec": json.loads(spec.to_json())})["spec"] == spec


def test_a_manifest_with_nan_is_refused() -> None:
    data = {
        "kind": "rollout",
        "connection": {},
        "rollout": {"kind": "apply", "manifest": {"spec": {"replicas": float("nan")}}},
    }
    with pytest.raises(SpecError, match=r"rollout\.manifest: must not contain NaN"):
        JobSpec.from_dict(data)


@pytest.mark.skipif(sys.platform == "darwin", reason="XDG_RUNTIME_DIR is Linux's")
@pytest.mark.parametrize(("mode", "problem"), [(0o700, None), (0o755, "has mode 0755"), (0o711, "has mode 0711")])
def test_the_runtime_dir_rule(tmp_path: Path, mode: int, problem: str | None) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    runtime.chmod(mode)
    found = session_dir_problem(runtime, uid=os.getuid())
    assert (found is None) if problem is None else (found is not None and problem in found)
    paths = agent_paths({"HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(runtime)})
    assert paths.runtime_dir == runtime / "kubectl-rollout-plus"
    if problem is not None:
        with pytest.raises(AgentError, match="chmod 700"):
            paths.ensure()
    assert session_dir_problem(Path("relative"), uid=os.getuid()) == "is not an absolute path"


def test_a_client_reading_a_line_past_the_limit_says_so_in_one_error(tmp_path: Path) -> None:
    """An older agent answered ``list`` with whole jobs, past the line limit: the client names the problem
    (and what to do) instead of failing to parse the first 4 MiB of it."""
    import socket
    import threading

    from kubectl_rollout.agent.client import AgentClient
    from kubectl_rollout.agent.paths import AgentPaths

    ours, theirs = socket.socketpair()
    ours.settimeout(20)
    line = b'{"jsonrpc":"2.0","id":1,"result":{"jobs":["' + b"x" * (MAX_LINE + 1024) + b'"]}}\n'

    def send() -> None:
        with contextlib.suppress(OSError):  # the client hangs up after the first 4 MiB: expected
            theirs.sendall(line)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    client = AgentClient.over_socket(ours, AgentPaths(runtime_dir=tmp_path, state_dir=tmp_path))
    try:
        with pytest.raises(AgentError) as caught:
            client.jobs()
    finally:
        client.close()
        theirs.close()
    assert "a line longer than the protocol's limit" in caught.value.message
    assert "agent stop" in caught.value.message


def test_an_event_past_the_line_limit_is_replaced_by_an_omitted_notice(tmp_path: Path) -> None:
    """No engine emits one today (5000 nodes of 253 characters fit); if one ever did, the stream stays whole."""
    import asyncio

    from kubectl_rollout.agent.host.job_host import JobHost
    from kubectl_rollout.agent.host.journal import Journal
    from kubectl_rollout.agent.host.live_job import LiveJob
    from kubectl_rollout.agent.paths import ENV_DIR
    from kubectl_rollout.agent.settings import Settings
    from kubectl_rollout.agent.transport.server import AgentServer
    from kubectl_rollout.jobs.spec import Connection, DrainJob, JobKind

    class Recorder:
        def __init__(self) -> None:
            self.data = bytearray()

        def write(self, data: bytes) -> None:
            self.data.extend(data)

        async def drain(self) -> None:
            await asyncio.sleep(0)

    small = b'{"jsonrpc":"2.0","method":"event","params":{"seq":1}}\n'
    huge = b'{"jsonrpc":"2.0","method":"event","params":{"seq":2,"x":"' + b"x" * MAX_LINE + b'"}}\n'
    spec = JobSpec(kind=JobKind.DRAIN, connection=Connection(), drain=DrainJob(nodes=("n1",)))
    job = LiveJob("j1", spec, resumed=False, history=[(1, None, small), (2, None, huge)])
    job.done = True
    host = JobHost(Journal(tmp_path / "j.sqlite3"), Settings(), lease_holder="test")
    agent = AgentServer(agent_paths({ENV_DIR: str(tmp_path)}), host, Settings())
    recorder = Recorder()
    asyncio.run(agent._stream(recorder, job, 1, follow=False))  # type: ignore[arg-type]
    lines = bytes(recorder.data).splitlines()
    assert all(len(line) < 1024 for line in lines)
    assert [json.loads(line)["method"] for line in lines] == ["event", "omitted", "end"]
    assert json.loads(lines[1])["params"] == {"job": "j1", "seq": 2, "bytes": len(huge), "limit": MAX_LINE}
