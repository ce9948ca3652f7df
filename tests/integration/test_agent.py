"""The agent against the real control plane, with real agent processes in a temporary ROLLOUT_PLUS_AGENT_DIR.

Each test gets its own agent directory, so its own agent; the fixture stops
(or kills) the agent it started, by the pid in its pid file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
from cluster_setup import until_scheduler_skips
from integration.test_drain_surge import ReplicaHistory, one_replica_min_available_one
from invariants import HealthyPods
from kubernetes import client as k8s
from lease_history import LeaseHistory
from plugin import RunningPlugin, events, run_plugin

from kubectl_rollout.agent.client import agent_running, connect
from kubectl_rollout.agent.paths import ENV_DIR, AgentPaths, agent_paths
from kubectl_rollout.agent.protocol import ErrorCode, ProtocolError
from kubectl_rollout.agent.settings import ENV_IDLE, ENV_STALL
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.drain import BatchStarted, NodeCordoned
from kubectl_rollout.jobs.events.eviction import EvictionBlocked, PodEvicted, PodGone
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted
from kubectl_rollout.jobs.events.surge import SurgeRestored, SurgeStarted
from kubectl_rollout.jobs.spec import Connection, DrainJob, DrainOptions, JobKind, JobSpec
from kubectl_rollout.kube import record_names
from kubectl_rollout.kube.cluster_access import Cluster

OPERATOR = "rollout-plus-operator"
AGENT_MODULE = "kubectl_rollout.agent"


def _agent_pid(paths: AgentPaths) -> int | None:
    try:
        text = paths.pid_file.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text and agent_running(paths) else None


def _alive(pid: int) -> bool:
    """Running (not a zombie: an agent this test process spawned stays one until reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    if state == "Z":
        # A zombie leader may still have threads exiting (holding its sockets): dead once it can be reaped,
        # or, not our child, once its last thread is gone.
        try:
            return os.waitpid(pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return len(list(Path(f"/proc/{pid}/task").iterdir())) > 1
    return True


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def agents_of(directory: Path) -> list[int]:
    """Every live agent process started with this agent directory (from /proc: cmdline and environment)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().split(") ")[1][0]
        except OSError:
            continue
        if state != "Z" and AGENT_MODULE.encode() in cmdline and f"{ENV_DIR}={directory}".encode() in environ:
            found.append(int(entry.name))
    return found


@pytest.fixture
def agent_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentPaths]:
    """A fresh agent directory (short: a socket path has ~100 bytes), set for this process and its children."""
    directory = Path(tempfile.mkdtemp(prefix="rpa-", dir="/tmp"))
    monkeypatch.setenv(ENV_DIR, str(directory))
    paths = agent_paths()
    yield paths
    for pid in agents_of(directory):
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 10)
    shutil.rmtree(directory, ignore_errors=True)


def _place(cluster: Cluster, namespace: str, node: str, *, replicas: int, ready_after: str = "0s") -> None:
    """Deployment web with ``replicas`` pods, all on ``node``."""
    cluster.apps.create_namespaced_deployment(
        namespace,
        manifests.deployment(
            "web",
            replicas=replicas,
            annotations={manifests.READY_AFTER: ready_after},
            pod_spec=manifests.placement(namespace, node),
        ),
    )
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: (d.status.available_replicas or 0) == replicas,
        namespace=namespace,
        timeout=120,
        what=f"web available ({replicas} pods on {node})",
    )


def _pdb(cluster: Cluster, namespace: str, *, replicas: int, max_unavailable: int) -> None:
    cluster.policy.create_namespaced_pod_disruption_budget(
        namespace, manifests.pdb("web", app="web", max_unavailable=max_unavailable)
    )
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.status is not None and p.status.expected_pods == replicas,
        namespace=namespace,
        timeout=30,
        what="the PDB processed",
    )


def _drain_spec(kubeconfig: Path, node: str, namespace: str, *, context: str | None = None, **options: Any) -> JobSpec:
    return JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=(str(kubeconfig),), context=context, namespace=namespace),
        drain=DrainJob(nodes=(node,), options=DrainOptions(timeout=180, **options)),
    )


def _follow(job_id: str, *, from_seq: int = 1, until: Any = None) -> list[Envelope]:
    """The job's events from ``from_seq`` until it finishes, or until an event of type ``until`` (or for which
    ``until``, a function, says True)."""
    seen = []
    with connect(name="test") as agent:
        for envelope in agent.attach(job_id, from_seq=from_seq):
            seen.append(envelope)
            if until is None:
                continue
            if isinstance(until, type) and isinstance(envelope.event, until):
                break
            if not isinstance(until, type) and until(envelope.event):
                break
    return seen


# --- one agent per user ---------------------------------------------------------------------------


def test_twenty_clients_started_at_once_with_no_agent_end_up_talking_to_one_agent(agent_dir: AgentPaths) -> None:
    command = [sys.executable, "-m", "kubectl_rollout", "agent", "start", "-o", "json"]
    clients = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(20)]
    answers = []
    for process in clients:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
        answers.append(json.loads(out))
    pids = {answer["pid"] for answer in answers}
    assert len(pids) == 1, pids
    assert agents_of(agent_dir.runtime_dir.parent) == list(pids)
    assert _agent_pid(agent_dir) == pids.pop()
    assert oct(agent_dir.socket.stat().st_mode & 0o777) == "0o600"
    assert oct(agent_dir.runtime_dir.stat().st_mode & 0o777) == "0o700"


def test_the_agent_exits_when_idle_and_never_while_a_job_runs(
    agent_dir: AgentPaths,
    monkeypatch: pytest.MonkeyPatch,
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    monkeypatch.setenv(ENV_IDLE, "2")
    (node,) = dedicated_nodes(1)
    # One pod behind a PDB that allows nothing: the drain is blocked (for longer than the idle time) until released.
    _place(cluster, namespace, node, replicas=1)
    _pdb(cluster, namespace, replicas=1, max_unavailable=0)
    with connect(name="test") as agent:
        pid = agent.agent["pid"]
        job = agent.submit(_drain_spec(kubeconfig, node, namespace))
    time.sleep(5)  # more than twice the idle time, with no client
    assert _agent_pid(agent_dir) == pid, "the agent exited while a job ran"
    # The second job on the same node is refused, naming the first.
    with connect(name="test") as agent, pytest.raises(ProtocolError) as caught:
        agent.submit(_drain_spec(kubeconfig, node, namespace))
    assert caught.value.code == ErrorCode.CONFLICT
    assert f"job {job.id} (drain node/{node}) is already draining node/{node}" in caught.value.message
    assert f"kubectl rollout-plus jobs cancel {job.id}" in caught.value.message
    # Release the PDB: the job ends, then the idle agent exits on its own.
    cluster.policy.delete_namespaced_pod_disruption_budget("web", namespace)
    finished = _follow(job.id)[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, finished
    assert _wait_gone(pid, 15), "the idle agent did not exit"
    assert not agent_dir.socket.exists()
    assert "idle for 2 s (no job, no client); exiting" in agent_dir.log.read_text()


# --- nothing secret -------------------------------------------------------------------------------


def _token_of(kubeconfig: Path, user: str) -> str:
    document = json.loads(kubeconfig.read_text())
    return str(next(u["user"]["token"] for u in document["users"] if u["name"] == user))


def test_the_token_is_never_in_the_journal_the_logs_or_the_socket_traffic(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    node, _spare = dedicated_nodes(2)
    _place(cluster, namespace, node, replicas=2)
    token = _token_of(kubeconfig, OPERATOR)
    assert len(token) > 10
    traffic = bytearray()
    with connect(name="test", trace=lambda _way, data: traffic.extend(data)) as agent:
        job = agent.submit(_drain_spec(kubeconfig, node, namespace, context=OPERATOR))
        seen = list(agent.attach(job.id))
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, finished
    assert len(seen) > 5
    assert b"PodGone" in traffic
    with connect(name="test") as agent:
        agent.shutdown()
    assert _wait_gone(int(agent_dir.pid_file.read_text()), 15)
    files = [p for d in (agent_dir.state_dir, agent_dir.runtime_dir) for p in d.iterdir() if p.is_file()]
    assert agent_dir.journal in files
    for path in files:
        assert token.encode() not in path.read_bytes(), path
    assert token.encode() not in traffic
    with sqlite3.connect(agent_dir.journal) as db:
        (spec,) = db.execute("SELECT spec FROM jobs WHERE id = ?", (job.id,)).fetchone()
        assert json.loads(spec)["connection"]["context"] == OPERATOR
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# --- attached output is in-process output --------------------------------------------------------


def _normalise(text: str, names: dict[str, str]) -> str:
    for real, placeholder in names.items():
        text = text.replace(real, placeholder)
    text = re.sub(r"web-[a-z0-9]{5,10}-[a-z0-9]{5}", "web-POD", text)
    return re.sub(r"\d+(\.\d+)?s\b", "Ns", text)


def _normalised_events(stdout: str, names: dict[str, str]) -> list[dict[str, Any]]:
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    result = []
    for line in lines:
        event = json.loads(_normalise(line, names))
        del event["job"], event["at"]
        result.append(_without_durations(event))
    return result


def _pods_in_any_order(items: list[Any], of_a_pod: Callable[[Any], bool]) -> list[Any]:
    """``items`` with each run of consecutive pod items sorted: the drain's pod workers run concurrently (an
    eviction's wait for the pod to go overlaps the next eviction), so two drains of the same pods interleave
    their lines differently, and after ``_normalise`` every pod has the same name anyway."""
    result: list[Any] = []
    run: list[Any] = []
    for item in items:
        if of_a_pod(item):
            run.append(item)
            continue
        result += sorted(run, key=repr)
        run = []
        result.append(item)
    return result + sorted(run, key=repr)


def _names_a_pod(item: str | dict[str, Any]) -> bool:
    """A line or an event about one pod of the drain (after ``_normalise``)."""
    return "web-POD" in (item if isinstance(item, str) else json.dumps(item))


def _without_durations(value: Any) -> Any:
    """Every float is a measured time (seconds waited, since when): the same shape, not the same value."""
    if isinstance(value, float):
        return "FLOAT"
    if isinstance(value, dict):
        return {k: _without_durations(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_durations(v) for v in value]
    return value


def _extra_namespace(cluster: Cluster, stem: str) -> str:
    name = f"{stem}-{uuid.uuid4().hex[:6]}"
    cluster.core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    watching.until(
        cluster.core.list_namespaced_service_account,
        lambda sa: sa.metadata.name == "default",
        namespace=name,
        timeout=30,
        what=f"serviceaccount default in {name}",
    )
    return name


@pytest.mark.parametrize("output", ["text", "jsonl"])
def test_an_attached_drain_prints_what_an_in_process_drain_prints(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, output: str
) -> None:
    first, second = dedicated_nodes(2)
    other = _extra_namespace(cluster, "attached")
    try:
        # The same workload twice (its own namespace and node each time), drained once each way.
        for ns, node in ((namespace, first), (other, second)):
            cluster.apps.create_namespaced_deployment(
                ns,
                manifests.deployment(
                    "web",
                    replicas=3,
                    pod_spec={
                        **manifests.placement(namespace, node),
                    },
                ),
            )
            watching.until(
                cluster.apps.list_namespaced_deployment,
                lambda d: (d.status.available_replicas or 0) == 3,
                namespace=ns,
                timeout=120,
                what=f"web available in {ns}",
            )
        flags = ["--max-concurrent-evictions=1", "--timeout=120s", "-o", output, "--kubeconfig", str(kubeconfig)]
        here = run_plugin("drain", first, "-n", namespace, "--in-process", *flags)
        there = run_plugin("drain", second, "-n", other, "--agent", *flags)
    finally:
        cluster.core.delete_namespace(other)
    assert here.returncode == there.returncode == 0, (here.stderr, there.stderr)
    assert agents_of(agent_dir.runtime_dir.parent), "the --agent run did not go through an agent"
    names_here = {first: "NODE", namespace: "NS"}
    names_there = {second: "NODE", other: "NS"}
    if output == "text":
        lines_there = _normalise(there.stdout, names_there).splitlines()
        lines_here = _normalise(here.stdout, names_here).splitlines()
        assert _pods_in_any_order(lines_there, _names_a_pod) == _pods_in_any_order(lines_here, _names_a_pod)
        for lines in (lines_there, lines_here):
            # whatever the interleaving, a pod is evicted only after its eviction was said to start
            evicting = evicted = 0
            for line in lines:
                evicting += "evicting pod" in line
                evicted += line.endswith(" evicted")
                assert evicted <= evicting, lines
        assert _normalise(there.stderr, names_there) == _normalise(here.stderr, names_here)
        assert "evicting pod" in here.stdout
    else:
        assert _pods_in_any_order(_normalised_events(there.stdout, names_there), _names_a_pod) == _pods_in_any_order(
            _normalised_events(here.stdout, names_here), _names_a_pod
        )
        assert next(e["type"] for e in events(here)) == "JobStarted"


# --- a client that never reads -----------------------------------------------------------------


#: pods in the never-reading client's drain (issue 10: "a client that connects and never reads during a
#: 1000-pod drain"), spread over NODES nodes
PODS, NODES = 1000, 3


def _bare_pods(cluster: Cluster, namespace: str, nodes: list[str], count: int) -> None:
    """``count`` unreplicated pods bound straight to ``nodes`` (round robin; no scheduler, no controller),
    created from 8 threads, then waited for until every one runs (a watch)."""
    from concurrent.futures import ThreadPoolExecutor

    from kubectl_rollout.kube.api_retry import call_with_retry

    def create(index: int) -> None:
        body = manifests.pod(f"p{index:04d}", grace_period=0, spec=manifests.placement(namespace))
        body["metadata"]["labels"]["app"] = "web"
        body["spec"]["nodeName"] = nodes[index % len(nodes)]
        call_with_retry(cluster.core.create_namespaced_pod, namespace, body)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(count)))
    running: set[str] = set()

    def all_running(pod: Any) -> bool:
        if pod.status.phase == "Running":
            running.add(pod.metadata.name)
        return len(running) == count

    watching.until(
        cluster.core.list_namespaced_pod, all_running, namespace=namespace, timeout=300, what=f"{count} pods running"
    )


def _log_time(line: str) -> float:
    """The time of an agent log line (``2026-11-23 14:05:22,123 WARNING ...``, local time)."""
    stamp, millis = line[:23].split(",")
    return time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000


def test_a_client_that_never_reads_is_dropped_and_slows_neither_the_job_nor_other_clients(
    agent_dir: AgentPaths,
    monkeypatch: pytest.MonkeyPatch,
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
    kubeconfig: Path,
) -> None:
    """A 1000-pod drain of 3 nodes in the agent, with a client that greets, attaches and never reads a byte,
    and a client that reads everything.

    The job emits into the journal and hands each line to the event loop; it never waits for a client. So
    while the stalled client's socket is full (the last ``stall_seconds`` before it is dropped) the job goes
    on emitting at its own pace and the reading client keeps receiving at once. The wall time the stalled
    client does not cost is measured by `make bench-agent` (attached with a never-reading client vs
    in-process, medians of alternating runs), not asserted here.
    """
    stall_seconds = 3
    monkeypatch.setenv(ENV_STALL, str(stall_seconds))
    nodes = dedicated_nodes(NODES)
    _bare_pods(cluster, namespace, nodes, PODS)
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        drain=DrainJob(nodes=tuple(nodes), options=DrainOptions(timeout=600, force=True)),
    )
    with connect(name="test") as agent:
        job = agent.submit(spec)
    # The stalled client: greets, attaches, and never reads again (its receive buffer is small, so it fills fast).
    stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(str(agent_dir.socket))
    stalled.sendall(
        b'{"jsonrpc":"2.0","id":1,"method":"hello","params":{"protocol":1,"oldest":1,"client":"stalled"}}\n'
    )
    stalled.sendall(b'{"jsonrpc":"2.0","id":2,"method":"attach","params":{"job":"' + job.id.encode() + b'"}}\n')
    received: list[tuple[float, Envelope]] = []
    try:
        with connect(name="reader") as reader:
            for envelope in reader.attach(job.id):
                received.append((time.time(), envelope))
    finally:
        stalled.close()
    seen = [envelope for _at, envelope in received]
    seqs = [envelope.seq for envelope in seen]
    assert seqs == list(range(1, len(seqs) + 1)), "the reading client missed or reordered events"
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("succeeded", 0), finished
    gone = [e for e in seen if isinstance(e.event, PodGone)]
    assert len(gone) == PODS
    # The stalled client was dropped, while the job ran.
    drops = [line for line in agent_dir.log.read_text().splitlines() if "dropped client pid" in line]
    assert len(drops) == 1, drops
    assert f"(stalled): it read nothing for {stall_seconds} s; jobs go on" in drops[0], drops
    dropped_at = _log_time(drops[0])
    started_at, finished_at = seen[0].at, seen[-1].at
    assert started_at < dropped_at < finished_at, "the stalled client was dropped only after the job ended"
    # While its socket was full, the job went on emitting, and the reader received each event at once.
    stalled_window = [
        (got - envelope.at) for got, envelope in received if dropped_at - stall_seconds <= envelope.at <= dropped_at
    ]
    assert len(stalled_window) >= 50, f"only {len(stalled_window)} events while the client stalled"
    lags = sorted(got - envelope.at for got, envelope in received)
    window = sorted(stalled_window)
    p95, p95_stalled = lags[int(len(lags) * 0.95)], window[int(len(window) * 0.95)]
    print(
        f"\n{PODS} pods on {NODES} nodes: {len(seen)} events in {finished_at - started_at:.1f} s; "
        f"{len(window)} of them while the stalled client's socket was full; "
        f"reader lag p50 {1000 * lags[len(lags) // 2]:.1f} ms, p95 {1000 * p95:.1f} ms "
        f"(while stalled: p95 {1000 * p95_stalled:.1f} ms)"
    )
    assert p95_stalled < 1.0, f"events reached the reading client {p95_stalled:.3f} s late (p95) during the stall"
    assert p95 < 1.0, f"events reached the reading client {p95:.3f} s late (p95)"


# --- the peer's uid -------------------------------------------------------------------------------


def test_a_connection_from_another_uid_is_refused_and_logged(agent_dir: AgentPaths) -> None:
    # Failed, not skipped, where it cannot run: a skip would hide the only check of the peer's uid.
    if os.getuid() != 0:
        pytest.fail("connecting as another uid needs root: run this test as root (CI does)", pytrace=False)
    with connect(name="test") as agent:
        pid = agent.agent["pid"]
    # Loosen the directory and socket (as a careless chmod would) so that uid 65534 can reach it at all.
    os.chmod(agent_dir.runtime_dir, 0o711)
    os.chmod(agent_dir.runtime_dir.parent, 0o711)
    os.chmod(agent_dir.socket, 0o666)
    script = (
        "import os, socket, sys\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
        "print(s.makefile().readline())  # the agent answers before any request, then hangs up\n"
    )
    outcome = subprocess.run(
        [sys.executable, "-c", script, str(agent_dir.socket)], capture_output=True, text=True, timeout=30
    )
    assert outcome.returncode == 0, outcome.stderr
    answer = json.loads(outcome.stdout)
    assert answer["error"]["message"] == "this agent serves uid 0 only, not uid 65534"
    assert "refused a connection from uid 65534" in agent_dir.log.read_text()
    assert _agent_pid(agent_dir) == pid


# --- crash and resume -----------------------------------------------------------------------------


#: where the agent is killed: the event after which it dies, and how the scenario differs
KILL_POINTS: dict[str, tuple[Any, dict[str, bool]]] = {
    "after-cordon": (NodeCordoned, {}),
    "mid-wave": (PodGone, {}),
    "while-blocked-on-a-pdb": (EvictionBlocked, {}),
    "while-waiting-for-deletion": (PodEvicted, {"linger": True}),
    "in-a-node-batch": (lambda e: isinstance(e, BatchStarted) and e.index == 2, {"batch": True}),
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_after_sigkill_the_journal_is_intact_and_the_restarted_agent_finishes_the_drain(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path, point: str
) -> None:
    until, variant = KILL_POINTS[point]
    *targets, spare = dedicated_nodes(3 if variant.get("batch") else 2)
    # Six pods behind maxUnavailable 1, replacements Ready 3 s after start: one pod at a time, ~20 s in all.
    # "linger": evicted pods take their 3 s grace period to go. "batch": two nodes, drained one batch at a time.
    annotations = {manifests.READY_AFTER: "3s"}
    if variant.get("linger"):
        annotations[manifests.ON_SIGTERM] = "ignore"
    cluster.core.patch_node(spare, {"spec": {"unschedulable": True}})
    try:
        until_scheduler_skips(cluster, spare)
        cluster.apps.create_namespaced_deployment(
            namespace,
            manifests.deployment("web", replicas=6, annotations=annotations, pod_spec=manifests.placement(namespace)),
        )
        watching.until(
            cluster.apps.list_namespaced_deployment,
            lambda d: (d.status.available_replicas or 0) == 6,
            namespace=namespace,
            timeout=120,
            what="web available",
        )
    finally:
        cluster.core.patch_node(spare, {"spec": {"unschedulable": None}})
    _pdb(cluster, namespace, replicas=6, max_unavailable=1)
    assert not any(cluster.core.read_node(t).spec.unschedulable for t in targets), "a target was cordoned already"
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        drain=DrainJob(
            nodes=tuple(targets),
            options=DrainOptions(timeout=180, grace_period=3, node_batch=1 if variant.get("batch") else 0),
        ),
    )
    healthy = HealthyPods(cluster, namespace).start()
    try:
        with connect(name="test") as agent:
            pid = agent.agent["pid"]
            job = agent.submit(spec)
        before = _follow(job.id, until=until)
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        with sqlite3.connect(agent_dir.journal) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            (state,) = db.execute("SELECT state FROM jobs WHERE id = ?", (job.id,)).fetchone()
        assert state == "running"
        # The next client starts a new agent, which resumes the job from the journal and the cluster.
        with connect(name="test") as agent:
            assert agent.agent["pid"] != pid
        after = _follow(job.id, from_seq=before[-1].seq + 1)
    finally:
        minimum = healthy.stop()
    finished = after[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, finished
    events_all = _follow(job.id)
    seqs = [e.seq for e in events_all]
    assert seqs == list(range(1, len(seqs) + 1))
    starts = [e.event for e in events_all if isinstance(e.event, JobStarted)]
    assert [s.resumed for s in starts] == [False, True]
    cordons = [e.event for e in events_all if isinstance(e.event, NodeCordoned)]
    journaled_before_kill = {e.event.node for e in before if isinstance(e.event, NodeCordoned)}
    for target in targets:
        changed = [c.changed for c in cordons if c.node == target]
        assert changed, f"{target} was never cordoned by the drain"
        assert changed.count(True) <= 1, f"{target} was cordoned twice: {changed}"
        if target in journaled_before_kill:
            assert changed[0] is True, f"{target}'s first cordon changed nothing: {changed}"
        # Otherwise the kill may have landed between the cordon request and its journal entry: the first run
        # cordoned the node (it was schedulable before the job, checked above) and the resumed run finds it so.
        remaining = [
            p.metadata.name for p in cluster.core.list_namespaced_pod(namespace).items if p.spec.node_name == target
        ]
        assert remaining == []
        assert cluster.core.read_node(target).spec.unschedulable is True
    assert minimum["web"] >= 5, f"the PDB's minimum was broken: {minimum}"
    with connect(name="test") as agent:
        info = agent.show(job.id)
    assert (info.state, info.runs) == ("succeeded", 2)
    # Who submitted it is journaled with it: the agent that finished it never met that client.
    assert info.submitted_by == f"test (pid {os.getpid()})", info.submitted_by


@pytest.mark.serial  # kills a surging drain: the next drain anywhere would restore its record
def test_a_surge_drain_killed_with_the_agent_after_its_scale_up_is_restored_by_the_resumed_agent(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    target, spare = dedicated_nodes(2)
    # One replica behind minAvailable 1: only a surge lets it go, and the kill lands while it is raised.
    one_replica_min_available_one(cluster, namespace, target, spare)
    history = ReplicaHistory(cluster, namespace, "web").start()
    healthy = HealthyPods(cluster, namespace).start()
    try:
        with connect(name="test") as agent:
            pid = agent.agent["pid"]
            job = agent.submit(_drain_spec(kubeconfig, target, namespace, surge=True))
        before = _follow(job.id, until=SurgeStarted)
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        raised = cluster.apps.read_namespaced_deployment("web", namespace)
        assert raised.spec.replicas == 2
        killed_drain = raised.metadata.labels[record_names.SURGED_BY]
        # The next client starts a new agent, which resumes the job: it restores the record first.
        with connect(name="test") as agent:
            assert agent.agent["pid"] != pid
        after = _follow(job.id, from_seq=before[-1].seq + 1)
        healthy.settle({"web": 1})
    finally:
        minimum = healthy.stop()
        counts = history.stop()
    finished = after[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, [(type(e.event).__name__, getattr(e.event, "reason", "")) for e in after]
    leftovers = [e.event for e in after if isinstance(e.event, SurgeRestored) and e.event.leftover]
    assert [(r.drain, r.replicas, r.count_restored) for r in leftovers] == [(killed_drain, 1, True)]
    # Raised by the killed run and put back by the resumed one; if the pod on the node is still there (the
    # ReplicaSet controller picks which pod the restore removes), the resumed run surges afresh.
    assert counts[:3] == [1, 2, 1], counts
    assert counts[-1] == 1, counts
    assert max(counts) == 2, counts
    print(f"\nreplica counts {counts}; resumed run: {[type(e.event).__name__ for e in after]}")
    assert minimum == {"web": 1}
    assert record_names.SURGE_ORIGINAL not in (
        cluster.apps.read_namespaced_deployment("web", namespace).metadata.labels or {}
    )
    assert [p for p in cluster.core.list_namespaced_pod(namespace).items if p.spec.node_name == target] == []


# --- the CLI with the agent -----------------------------------------------------------------------


def test_detach_ctrl_c_and_a_second_ctrl_c_from_the_cli(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    (node,) = dedicated_nodes(1)
    _place(cluster, namespace, node, replicas=1)
    _pdb(cluster, namespace, replicas=1, max_unavailable=0)  # the drain waits until cancelled
    detached = run_plugin("drain", node, "-n", namespace, "--detach", kubeconfig=kubeconfig)
    assert detached.returncode == 0, detached.stderr
    job_id = detached.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{12}", job_id), detached.stdout

    # Ctrl-C once: detached, told how to come back and how to stop; the job goes on.
    follower = RunningPlugin("jobs", "attach", job_id)
    follower.wait_for(lambda line: "evicting pod" in line, timeout=60, what="an eviction")
    follower.process.send_signal(signal.SIGINT)
    err = follower.finish(timeout=30).stderr
    assert follower.process.returncode == 130, err
    assert f"detached from job {job_id}; it goes on in the agent." in err
    assert f"follow it again: kubectl rollout-plus jobs attach {job_id}" in err
    assert f"stop it:         kubectl rollout-plus jobs cancel {job_id}" in err
    with connect(name="test") as agent:
        assert agent.show(job_id).state == "running"

    # Ctrl-C twice: the job is cancelled, and followed until it has stopped. The second press comes the
    # moment the first shows (its first line), while the CLI may still be handling it: a press at any moment
    # after the first counts (tests/unit/test_ctrl_c.py presses inside each step of that handling).
    follower = RunningPlugin("jobs", "attach", job_id)
    follower.wait_for(lambda line: "evicting pod" in line, timeout=60, what="an eviction")
    follower.process.send_signal(signal.SIGINT)
    follower.wait_for_stderr(lambda line: "detached from job" in line, timeout=60, what="the first Ctrl-C's line")
    follower.process.send_signal(signal.SIGINT)
    err = follower.finish(timeout=60).stderr
    assert follower.process.returncode == 1, err
    assert f"cancelling job {job_id} (drain node/{node}); waiting for it to stop..." in err
    with connect(name="test") as agent:
        info = agent.show(job_id)
    assert (info.state, info.cancel_requested) == ("cancelled", True)
    assert cluster.core.read_node(node).spec.unschedulable is True
    listing = run_plugin("jobs", "list", "-o", "json")
    assert listing.returncode == 0, listing.stderr
    assert [job["state"] for job in json.loads(listing.stdout) if job["id"] == job_id] == ["cancelled"]


def test_when_the_agent_cannot_start_the_job_runs_in_process_after_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, namespace: str, kubeconfig: Path
) -> None:
    unsafe = tmp_path / "agent"
    (unsafe / "run").mkdir(parents=True)
    (unsafe / "run").chmod(0o777)
    monkeypatch.setenv(ENV_DIR, str(unsafe))
    missing = f"{namespace}-no-such-node"
    result = run_plugin("drain", missing, "--agent", kubeconfig=kubeconfig)
    assert result.returncode == 1
    warning, error = result.stderr.splitlines()
    assert warning.startswith(f"warning: refusing to use {unsafe / 'run'} for the agent:")
    assert "is writable by others (mode 0777)" in warning
    assert warning.endswith("; running the job in this process instead")
    assert error.startswith(f'error: node "{missing}" not found; nothing was changed')
    assert agents_of(unsafe) == []


def test_a_restart_by_eviction_resumes_after_sigkill_at_once_replacing_no_pod_twice(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    from cluster_setup import deploy

    from kubectl_rollout.jobs.events.eviction import EvictionStarted
    from kubectl_rollout.jobs.events.restart import PodReplaced, RestartPlanned, WaitingToStart
    from kubectl_rollout.jobs.spec import RestartJob

    deploy(cluster, namespace, "web", 4, annotations={manifests.READY_AFTER: "2s"})
    pods = cluster.core.list_namespaced_pod(namespace, label_selector="app=web").items
    originals = {p.metadata.uid for p in pods}
    original_names = {p.metadata.name for p in pods}
    spec = JobSpec(
        kind=JobKind.RESTART,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        restart=RestartJob(workload="deployment/web", timeout=180),
    )
    healthy = HealthyPods(cluster, namespace).start()
    leases = LeaseHistory(cluster, namespace, "rollout-plus.restart.deployment.web").start()
    try:
        with connect(name="test") as agent:
            pid = agent.agent["pid"]
            first_started_at = agent.agent["started_at"]
            job = agent.submit(spec)
        before = _follow(job.id, until=PodReplaced)
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        killed = cluster.coordination.read_namespaced_lease(leases.name, namespace).spec
        with connect(name="test") as agent:
            restarted_at = agent.agent["started_at"]
        after = _follow(job.id, from_seq=before[-1].seq + 1)
        healthy.settle({"web": 4})
    finally:
        minimum = healthy.stop()
        leases.stop()
    finished = after[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, finished
    # The pod in flight when the agent died may be asked again (it was not replaced yet); a replacement never is.
    evicted = {e.event.pod.name for e in before + after if isinstance(e.event, EvictionStarted)}
    assert evicted == original_names, f"evicted {evicted}, the originals were {original_names}"
    replaced = [e.event.pod.name for e in before + after if isinstance(e.event, PodReplaced)]
    assert len(replaced) == len(set(replaced)), f"a pod was replaced twice: {replaced}"
    now = {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace, label_selector="app=web").items}
    assert not now & originals, "an original pod was left"
    assert minimum["web"] >= 3, minimum
    # The restarted agent recognised the Lease its predecessor held: no wait for it to lapse.
    lease_waits = [e.event for e in after if isinstance(e.event, WaitingToStart) and "lease" in e.event.reason]
    assert lease_waits == []
    planned = next(e for e in after if isinstance(e.event, RestartPlanned))
    assert isinstance(planned.event, RestartPlanned)
    assert planned.event.resumed
    # On the cluster: the restarted agent took the Lease over while the killed agent's last renewal still held it
    # (a driver that did not know it as its own would have waited until renewTime + leaseDurationSeconds).
    last_of_the_killed = (killed.holder_identity, killed.acquire_time, killed.renew_time, killed.lease_duration_seconds)
    taken = leases.versions[leases.versions.index(last_of_the_killed) + 1 :]
    assert taken, "the resumed job never wrote its Lease"
    taken_at = taken[0][2].timestamp()
    held_until = killed.renew_time.timestamp() + killed.lease_duration_seconds
    assert taken_at < held_until, (taken[0], killed)
    # From the agent's start to the Lease in its hands, the resumed job took about what the first run took from its
    # agent's start to its new Lease (the baseline, measured here under the same load: the job's start, the
    # connection, the Lease's write), not the Lease's 15 s on top. The agent's own start (spawn, imports) is left
    # out, the same for both runs but seconds apart from one start to the next on a loaded machine; so is the plan,
    # which a resumed restart makes only once the pod it evicted before the kill has a Ready replacement.
    first_taken_at = leases.versions[0][1].timestamp()
    first_take = first_taken_at - first_started_at
    resumed_take = taken_at - restarted_at
    print(
        f"\nthe resumed restart took its Lease {resumed_take:.2f} s after the agent's restart (the first run: "
        f"{first_take:.2f} s), {held_until - taken_at:.2f} s before the killed agent's would have lapsed"
    )
    assert resumed_take < first_take + 3.0


def test_a_paused_drain_starts_no_eviction_until_it_is_resumed(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    """Checked on the cluster: the pods' deletions and two marker ConfigMaps written right after the pause
    and right before the resume, all in the order etcd committed them (``timeline``)."""
    from timeline import Timeline, marked_for_deletion

    from kubectl_rollout.jobs.events.job import JobPaused, JobResumed

    (node,) = dedicated_nodes(1)
    # Five pods that linger for their 2 s grace period once evicted; one eviction at a time.
    cluster.apps.create_namespaced_deployment(
        namespace,
        manifests.deployment(
            "web",
            replicas=5,
            annotations={manifests.ON_SIGTERM: "ignore"},
            pod_spec=manifests.placement(namespace, node),
        ),
    )
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: (d.status.available_replicas or 0) == 5,
        namespace=namespace,
        timeout=120,
        what="web available",
    )
    marker = "rollout-plus.test/marker"
    timeline = (
        Timeline()
        .watch("pod", cluster.core.list_namespaced_pod, namespace=namespace)
        .watch("marker", cluster.core.list_namespaced_config_map, namespace=namespace, label_selector=marker)
    )

    def mark(name: str) -> None:
        body = {"metadata": {"name": name, "labels": {marker: name}}}
        cluster.core.create_namespaced_config_map(namespace, body)

    def accepted() -> dict[str, Any]:
        """Each pod's first write marking it for deletion: the API server accepted its eviction."""
        found: dict[str, Any] = {}
        for write in timeline.writes("pod"):
            if marked_for_deletion(write):
                found.setdefault(write.name, write)
        return found

    spec = _drain_spec(kubeconfig, node, namespace, max_concurrent_evictions=1, grace_period=2)
    with connect(name="test") as agent:
        job = agent.submit(spec)
    evicted: list[str] = []

    def second_eviction(event: Any) -> bool:
        if isinstance(event, PodEvicted):
            evicted.append(event.pod.name)
        return len(evicted) == 2

    _follow(job.id, until=second_eviction)
    with connect(name="test") as agent:
        assert agent.pause(job.id).paused
    mark("paused")

    def both_accepted() -> dict[str, Any] | None:
        found = accepted()
        return found if set(evicted) <= set(found) else None

    seen_accepted = watching.eventually(both_accepted, timeout=30, what="the two evictions on the pods' watch")
    first, second = (seen_accepted[name] for name in evicted)
    # Unpaused, the drain went from one accepted eviction to the next in `pace`; paused, it must start none in
    # several times that (time is what is tested here), once the eviction in flight at the pause has ended.
    pace = second.at - first.at
    watching.until_deleted(cluster.core.list_namespaced_pod, second.name, namespace=namespace, timeout=60)
    time.sleep(max(2.0, 3 * pace))
    mark("resuming")
    with connect(name="test") as agent:
        assert agent.show(job.id).paused
        assert not agent.resume(job.id).paused
    seen = _follow(job.id)
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, finished

    timeline.stop()
    markers = {w.name: w.revision for w in timeline.writes("marker") if w.type != "DELETED"}
    order = sorted(accepted().values(), key=lambda w: w.revision)
    during = [w.name for w in order if markers["paused"] < w.revision < markers["resuming"]]
    assert set(during) <= {second.name}, f"evictions accepted while paused: {during}"
    assert len([w for w in order if w.revision > markers["resuming"]]) == 3, [w.name for w in order]
    kinds = [type(e.event) for e in seen]
    assert kinds.index(JobPaused) < kinds.index(JobResumed)


def test_an_attached_cli_follows_its_job_through_a_crash_of_the_agent(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, dedicated_nodes: Any, kubeconfig: Path
) -> None:
    node, spare = dedicated_nodes(2)
    # Four pods on the node (the spare cordoned while they are created), replacements Ready 2 s after start.
    cluster.core.patch_node(spare, {"spec": {"unschedulable": True}})
    try:
        until_scheduler_skips(cluster, spare)
        cluster.apps.create_namespaced_deployment(
            namespace,
            manifests.deployment(
                "web", replicas=4, annotations={manifests.READY_AFTER: "2s"}, pod_spec=manifests.placement(namespace)
            ),
        )
        watching.until(
            cluster.apps.list_namespaced_deployment,
            lambda d: (d.status.available_replicas or 0) == 4,
            namespace=namespace,
            timeout=120,
            what="web available",
        )
    finally:
        cluster.core.patch_node(spare, {"spec": {"unschedulable": None}})
    _pdb(cluster, namespace, replicas=4, max_unavailable=1)
    follower = RunningPlugin("drain", node, "-n", namespace, "--agent", "-o", "jsonl", kubeconfig=kubeconfig)
    first = json.loads(follower.wait_for(lambda line: '"type": "PodGone"' in line, timeout=90, what="a pod gone"))
    pid = _agent_pid(agent_dir)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    finished = follower.finish(timeout=180)
    assert finished.returncode == 0, finished.stderr
    lines = [json.loads(line) for line in finished.stdout.splitlines() if line.startswith("{")]
    assert lines[-1]["type"] == "JobFinished"
    assert lines[-1]["exit_code"] == 0
    # The CLI printed each event once, in order, from the first agent and then the second.
    assert [e["seq"] for e in lines] == list(range(lines[0]["seq"], lines[-1]["seq"] + 1))
    assert first in lines
    assert [e["resumed"] for e in lines if e["type"] == "JobStarted"] == [False, True]


def test_a_rollout_runs_in_the_agent_and_its_events_print_as_in_process(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, tmp_path: Path, kubeconfig: Path
) -> None:
    import yaml

    document = manifests.deployment("web", replicas=3, annotations={manifests.READY_AFTER: "1s"})
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump(document))
    applied = run_plugin("apply", "-f", str(path), "-n", namespace, "--agent", "-o", "jsonl", kubeconfig=kubeconfig)
    assert applied.returncode == 0, applied.stderr
    lines = events(applied)
    assert (lines[0]["type"], lines[-1]["type"], lines[-1]["exit_code"]) == ("JobStarted", "JobFinished", 0)
    job_id = lines[0]["job"]
    with connect(name="test") as agent:
        info = agent.show(job_id)
    assert (info.kind, info.state) == ("rollout", "succeeded")
    # Replayed from the agent's journal through the rollout's own printer.
    replayed = run_plugin("jobs", "logs", job_id)
    assert replayed.returncode == 0, replayed.stderr
    document["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/app:v2"
    path.write_text(yaml.safe_dump(document))
    here = run_plugin("apply", "-f", str(path), "-n", namespace, "--in-process", kubeconfig=kubeconfig)
    assert here.returncode == 0, here.stderr
    # The same printer, fed by the agent's journal and by the job in this process.
    assert replayed.stdout.splitlines()[0] == "workload/web created"
    assert here.stdout.splitlines()[0] == "workload/web configured"
    for output in (replayed.stdout, here.stdout):
        assert 'deployment "web" successfully rolled out' in output.splitlines()
