"""The agent against clients that send what they should not: a real agent process, no cluster.

Each case checks what a person would: the code and the message of the answer,
that nothing ran, the agent's memory (/proc), its log, and that it still
answers a fresh ``hello`` + ``list`` afterwards. Jobs here name a kubeconfig
that does not exist: they fail before any API call, in two events.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from watching import eventually

from kubectl_rollout.agent.client import agent_running, connect
from kubectl_rollout.agent.paths import ENV_DIR, AgentPaths, agent_paths
from kubectl_rollout.agent.protocol import MAX_LINE, ErrorCode
from kubectl_rollout.agent.settings import ENV_STALL

#: the agent drops a client that reads nothing for this long (production: 30 s)
STALL_SECONDS = 4.0
WAIT = 20.0


def wait_for(condition: Callable[[], Any], *, timeout: float = WAIT, what: str = "the condition") -> Any:
    """``watching.eventually`` with this module's default bound."""
    return eventually(condition, timeout=timeout, what=what)


class Raw:
    """One connection speaking raw lines, every read bounded by a timeout."""

    def __init__(self, paths: AgentPaths, *, hello: bool = True) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(WAIT)
        self.sock.connect(str(paths.socket))
        self.reader = self.sock.makefile("rb")
        if hello:
            assert "result" in self.ask({"id": 0, "method": "hello", "params": {"protocol": 1, "oldest": 1}})

    def send(self, line: bytes) -> None:
        self.sock.sendall(line)

    def receive(self) -> dict[str, Any]:
        line = self.reader.readline(MAX_LINE + 1)
        assert line.endswith(b"\n"), f"a broken line of {len(line)} bytes"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        return self.receive()

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


@pytest.fixture(scope="module")
def agent_env() -> Iterator[tuple[AgentPaths, dict[str, str], int]]:
    directory = tempfile.mkdtemp(prefix="rpa-hostile-", dir="/tmp")
    environ = {**os.environ, ENV_DIR: directory, ENV_STALL: str(STALL_SECONDS)}
    paths = agent_paths(environ)
    with connect(paths, environ=environ, name="hostile") as agent:
        pid = int(agent.agent["pid"])
    yield paths, environ, pid
    if agent_running(paths):
        os.kill(pid, 9)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def paths(agent_env: tuple[AgentPaths, dict[str, str], int]) -> Iterator[AgentPaths]:
    """The agent's paths; after each case, the agent must still answer a fresh hello and list, and its log
    must hold no traceback."""
    found = agent_env[0]
    yield found
    with Raw(found) as fresh:
        assert "jobs" in fresh.ask({"id": 1, "method": "list", "params": {"limit": 1}})["result"]
    assert "Traceback" not in found.log.read_text()


def spec(**drain: Any) -> dict[str, Any]:
    return {
        "kind": "drain",
        "connection": {"kubeconfig": ["/nonexistent/kubeconfig"], "context": "nowhere"},
        "drain": drain or {"nodes": ["node-1"]},
    }


def job_ids(paths: AgentPaths) -> set[str]:
    with Raw(paths) as raw:
        return {job["id"] for job in raw.ask({"id": 1, "method": "list", "params": {"limit": 1000}})["result"]["jobs"]}


def cli(environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubectl_rollout", *args], capture_output=True, text=True, env=environ, timeout=60
    )


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


# --- params: one schema, INVALID_PARAMS naming the param ------------------------------------------------------

BAD_VALUES = [b"1e400", b"Infinity", b"-Infinity", b"NaN", b'"x"', b"null", b"[]", b"{}", b"true", b"1.5"]


@pytest.mark.parametrize("value", BAD_VALUES, ids=[v.decode() for v in BAD_VALUES])
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("hello", b'{"protocol": %s, "oldest": 1}'),
        ("list", b'{"limit": %s}'),
        ("attach", b'{"job": "abc", "from_seq": %s}'),
        ("submit", b'{"spec": %s}'),
    ],
)
def test_a_wrong_value_is_invalid_params_naming_the_param(
    paths: AgentPaths, method: str, params: bytes, value: bytes
) -> None:
    field = {"hello": "protocol", "list": "limit", "attach": "from_seq", "submit": "spec"}[method]
    if method == "submit" and value == b"{}":
        field = "spec.kind"  # an object, but not a spec: its first missing field is named
    with Raw(paths) as raw:
        raw.send(b'{"jsonrpc":"2.0","id":41,"method":"%s","params":%s}\n' % (method.encode(), params % value))
        answer = raw.receive()
    assert answer["id"] == 41
    assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, answer
    assert answer["error"]["message"].startswith(field) or f" {field} " in answer["error"]["message"], answer


@pytest.mark.parametrize(
    ("drain", "field", "says"),
    [
        ({"nodes": "node-1"}, "spec.drain.nodes", "must be a list, not a string"),
        ({"nodes": ["a", "b"], "options": {"grace_period": "x"}}, "spec.drain.options.grace_period", "an integer"),
        ({}, "spec.drain.nodes", "a drain needs node names or a selector"),
        ({"nodes": []}, "spec.drain.nodes", "a drain needs node names or a selector"),
        ({"nodes": ["n" * (1024 * 1024)]}, "spec.drain.nodes[0]", "at most 253"),
        ({"nodes": ["Node_1"]}, "spec.drain.nodes[0]", "RFC 1123 subdomain"),
        ({"nodes": ["node-1\n2026-11-25 10:00:00,000 INFO forged"]}, "spec.drain.nodes[0]", "control characters"),
        ({"selector": "pool in (blue"}, "spec.drain.selector", "not a valid label selector"),
        ({"nodes": ["a"], "selector": "pool=blue"}, "spec.drain", "not both"),
        ({"nodes": ["a"], "options": {"timeout": 1e400}}, "spec.drain.options.timeout", "seconds"),
        ({"nodes": ["a"], "options": {"node_batch": 2**31}}, "spec.drain.options.node_batch", "2147483647"),
    ],
)
def test_a_spec_field_of_the_wrong_type_or_bounds_is_refused_and_nothing_runs(
    paths: AgentPaths, drain: dict[str, Any], field: str, says: str
) -> None:
    before = job_ids(paths)
    with Raw(paths) as raw:
        answer = raw.ask({"id": 7, "method": "submit", "params": {"spec": {**spec(), "drain": drain}}})
    assert answer["id"] == 7
    assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, answer
    message = answer["error"]["message"]
    assert message.startswith(field), message
    assert says in message
    assert len(message) < 400  # the 1 MiB name is not echoed back
    assert job_ids(paths) == before


@pytest.mark.parametrize(
    ("campaign", "field", "says"),
    [
        ({}, "spec.campaign.nodes", "a campaign needs node names or a selector"),
        ({"nodes": ["Node_1"]}, "spec.campaign.nodes[0]", "RFC 1123 subdomain"),
        ({"nodes": ["a"], "done": ["b\nforged"]}, "spec.campaign.done[0]", "control characters"),
        ({"selector": "pool in (blue"}, "spec.campaign.selector", "not a valid label selector"),
        ({"nodes": ["a"], "budget": "0"}, "spec.campaign.budget", "a count from 1 or a percentage from 1% to 100%"),
        ({"nodes": ["a"], "budget": "101%"}, "spec.campaign.budget", "a percentage from 1% to 100%"),
        ({"nodes": ["a"], "soak": -1}, "spec.campaign.soak", "seconds"),
        ({"nodes": ["a"], "on_blocked": "pray"}, "spec.campaign.on_blocked", "wait, skip, keep, surge"),
        ({"nodes": ["a"], "drain": {"surge_max": "lots"}}, "spec.campaign.drain.surge_max", "a count or a percentage"),
    ],
)
def test_a_campaign_spec_out_of_bounds_is_refused_and_nothing_runs(
    paths: AgentPaths, campaign: dict[str, Any], field: str, says: str
) -> None:
    before = job_ids(paths)
    bad = {**spec(), "kind": "campaign", "campaign": campaign}
    bad.pop("drain", None)
    with Raw(paths) as raw:
        answer = raw.ask({"id": 9, "method": "submit", "params": {"spec": bad}})
    assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS, answer
    message = answer["error"]["message"]
    assert message.startswith(field), message
    assert says in message
    assert job_ids(paths) == before


def test_a_kubeconfig_given_as_a_string_is_refused_not_split_into_characters(paths: AgentPaths) -> None:
    bad = {**spec(), "connection": {"kubeconfig": "/etc/shadow"}}
    with Raw(paths) as raw:
        answer = raw.ask({"id": 8, "method": "submit", "params": {"spec": bad}})
    assert answer["error"]["code"] == ErrorCode.INVALID_PARAMS
    assert answer["error"]["message"] == 'spec.connection.kubeconfig: must be a list, not a string ("/etc/shadow")'


@pytest.mark.parametrize(
    ("line", "code", "ident"),
    [
        (b'{"jsonrpc":"2.0","id":12,"method":"list","params":[1]}\n', ErrorCode.INVALID_PARAMS, 12),
        (b'{"jsonrpc":"2.0","id":"abc","method":"frobnicate"}\n', ErrorCode.METHOD_NOT_FOUND, "abc"),
        (b'{"jsonrpc":"2.0","id":13,"method":42}\n', ErrorCode.INVALID_REQUEST, 13),
        (b'{"jsonrpc":"2.0","id":14,"method":"show","params":{"job":"../../etc"}}\n', ErrorCode.INVALID_PARAMS, 14),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"list"}\n', ErrorCode.INVALID_REQUEST, None),
        (b"{nope\n", ErrorCode.PARSE_ERROR, None),
    ],
)
def test_an_error_answer_carries_the_request_id_whenever_it_was_readable(
    paths: AgentPaths, line: bytes, code: int, ident: object
) -> None:
    with Raw(paths) as raw:
        raw.send(line)
        answer = raw.receive()
    assert (answer["error"]["code"], answer["id"]) == (code, ident)


def test_before_hello_the_error_carries_the_id_too(paths: AgentPaths) -> None:
    with Raw(paths, hello=False) as raw:
        answer = raw.ask({"id": 99, "method": "list"})
    assert (answer["id"], answer["error"]["code"]) == (99, ErrorCode.HELLO_FIRST)


def test_a_submit_without_an_id_is_refused_and_not_run(paths: AgentPaths) -> None:
    before = job_ids(paths)
    with Raw(paths) as raw:
        answer = raw.ask({"method": "submit", "params": {"spec": spec()}})
        assert answer["id"] is None
        assert answer["error"]["code"] == ErrorCode.INVALID_REQUEST
        assert "'submit' has no id" in answer["error"]["message"]
        assert "nothing was run" in answer["error"]["message"]
        # The connection goes on.
        assert "jobs" in raw.ask({"id": 2, "method": "list"})["result"]
    assert job_ids(paths) == before


# --- replies: the right last_seq, within the line limit, with backpressure ------------------------------------


def finished_job(paths: AgentPaths, **drain: Any) -> dict[str, Any]:
    with Raw(paths) as raw:
        job: dict[str, Any] = raw.ask({"id": 1, "method": "submit", "params": {"spec": spec(**drain)}})["result"]

    def ended() -> bool:
        with Raw(paths) as raw:
            return raw.ask({"id": 1, "method": "show", "params": {"job": job["id"]}})["result"]["state"] == "failed"

    wait_for(ended, what=f"job {job['id']} to fail")
    return job


def test_attach_from_beyond_the_end_reports_the_jobs_real_last_seq(paths: AgentPaths) -> None:
    job = finished_job(paths)
    with Raw(paths) as raw:
        attached = raw.ask({"id": 3, "method": "attach", "params": {"job": job["id"], "from_seq": 10**9}})
        assert attached["result"]["last_seq"] == 2
        end = raw.receive()
    assert end == {"jsonrpc": "2.0", "method": "end", "params": {"job": job["id"], "last_seq": 2}}


def big_nodes() -> list[str]:
    """5000 node names of 253 characters: the largest drain by names (a 1.3 MB spec, and a target as long)."""
    return [f"{index:05d}-" + "n" * 247 for index in range(5000)]


def test_list_answers_summaries_within_the_line_limit_and_show_the_whole_job(
    paths: AgentPaths, agent_env: tuple[AgentPaths, dict[str, str], int]
) -> None:
    nodes = big_nodes()
    jobs = [finished_job(paths, nodes=nodes) for _ in range(4)]  # each whole: ~2.6 MB, all four over 10 MB
    with Raw(paths) as raw:
        raw.send(b'{"jsonrpc":"2.0","id":5,"method":"list","params":{"limit":1000}}\n')
        line = raw.reader.readline(MAX_LINE + 1)
        assert line.endswith(b"\n")
        assert len(line) < 256 * 1024
        listed = {job["id"]: job for job in json.loads(line)["result"]["jobs"]}
        for job in jobs:
            summary = listed[job["id"]]
            assert summary["abridged"] is True
            assert set(summary["spec"]) == {"kind", "version", "connection"}
            assert summary["spec"]["connection"]["context"] == "nowhere"
            assert len(summary["target"]) <= 512
            assert summary["target"].endswith("characters; see show)")
        shown = raw.ask({"id": 6, "method": "show", "params": {"job": jobs[0]["id"]}})["result"]
    assert shown["abridged"] is False
    assert shown["spec"]["drain"]["nodes"] == nodes
    # The CLI lists them too, one line each, no traceback.
    listing = cli(agent_env[1], "jobs", "list")
    assert listing.returncode == 0, listing.stderr
    assert all(job["id"] in listing.stdout for job in jobs)
    assert "Traceback" not in listing.stderr


def test_pipelined_requests_whose_answers_are_never_read_do_not_grow_the_agent(
    paths: AgentPaths, agent_env: tuple[AgentPaths, dict[str, str], int]
) -> None:
    pid = agent_env[2]
    job = finished_job(paths, nodes=big_nodes())  # its show answer: about 2.6 MB
    before = rss_kib(pid)
    greedy = Raw(paths)
    try:
        request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "show", "params": {"job": job["id"]}}).encode()
        greedy.send((request + b"\n") * 127)
        # The agent writes what the socket takes of the first answer, then waits for it to drain: it reads
        # no further request. Our receive queue fills to what the kernel holds, then stays.
        peak = before
        deadline = time.monotonic() + STALL_SECONDS - 1
        while time.monotonic() < deadline:
            peak = max(peak, rss_kib(pid))
            time.sleep(0.1)
        grown_mib = (peak - before) / 1024
        # One answer in flight (its encoding and the transport's copy), not 127 of them (330 MB).
        assert grown_mib < 48, f"the agent grew by {grown_mib:.0f} MiB"
        print(f"RSS before {before / 1024:.0f} MiB, peak {peak / 1024:.0f} MiB (+{grown_mib:.1f} MiB)")
        # A client that reads nothing for STALL_SECONDS is dropped, and said so in the log.
        wait_for(lambda: "dropped client pid" in paths.log.read_text(), what="the stalled client to be dropped")
        assert paths.log.read_text().count("dropped client pid") == 1
    finally:
        greedy.close()


# --- logs and terminals ------------------------------------------------------------------------------------------


def test_a_forged_record_in_a_name_never_becomes_a_line_of_the_log(paths: AgentPaths) -> None:
    forged = "2026-11-25 10:00:00,000 INFO job 1234 (drain node/x): succeeded, exit code 0"
    with Raw(paths) as raw:
        for params in (
            {"spec": spec(nodes=[f"node-1\n{forged}"])},
            {"spec": {**spec(), "connection": {"kubeconfig": [f"/k\n{forged}"]}}},
        ):
            assert raw.ask({"id": 1, "method": "submit", "params": params})["error"]["code"] == -32602
        hello = raw.ask({"id": 2, "method": "hello", "params": {"protocol": 1, "client": f"x\n{forged}"}})
        assert hello["error"]["code"] == ErrorCode.INVALID_PARAMS
    assert not any(line.startswith("2026-11-25 10:00:00") for line in paths.log.read_text().splitlines())


def test_escape_sequences_from_the_journal_never_reach_the_terminal_raw(
    paths: AgentPaths, agent_env: tuple[AgentPaths, dict[str, str], int]
) -> None:
    """A job's texts come from clients and clusters (an API server's error message): whatever they carry,
    ``jobs list``, ``jobs show`` and ``agent logs`` print it quoted."""
    from kubectl_rollout.agent.host.journal import Journal
    from kubectl_rollout.jobs.events.job import JobState
    from kubectl_rollout.jobs.spec import Connection, DrainJob, JobKind, JobResult, JobSpec

    hostile = "\x1b]0;owned\x07\x1b[2J\x9b31m"
    journal = Journal(paths.journal)  # a second writer beside the agent, as SQLite's WAL allows
    try:
        recorded = JobSpec(
            kind=JobKind.DRAIN, connection=Connection(context=f"ctx{hostile}"), drain=DrainJob(nodes=(f"n{hostile}",))
        )
        journal.create_job("esc0000000001", recorded)
        journal.finish(
            "esc0000000001", JobResult(state=JobState.FAILED, exit_code=1, summary=f"s{hostile}", error=f"e{hostile}")
        )
    finally:
        journal.close()
    with paths.log.open("a") as log:  # an older agent's log, written before records were quoted
        log.write(f"2026-11-25 10:00:00,000 INFO old record {hostile}\n")
    for args in (("jobs", "list"), ("jobs", "show", "esc0000000001"), ("agent", "logs")):
        shown = cli(agent_env[1], *args)
        assert shown.returncode == 0, shown.stderr
        assert not {"\x1b", "\x07", "\x9b"} & set(shown.stdout), args
        assert "\\x1b]0;owned\\x07" in shown.stdout, (args, shown.stdout)
