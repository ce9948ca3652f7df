"""The Prometheus and Job gates of canary steps against the real control plane (issue 23).

The gate's queries go through the API server's service proxy to a small HTTP
server this test starts, which answers the Prometheus query API from a script.
The API server refuses loopback endpoint addresses (validation) and proxies
only to endpoints that are Pods of the Service's namespace with that pod IP
(pkg/registry/core/service/storage: ResourceLocation, isValidAddress); so the
server listens on the host's non-loopback address, and a Pod (kwok runs it)
is given that address as its IP, named by the Endpoints of a Service without
selector. A Job gate's Job runs under the real Job controller, its pod
succeeding or failing by kwok stage annotations. RolloutInvariants watch the
workload through every step.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import manifests
import pytest
import watching
import yaml
from integration.test_agent import _alive, _wait_gone, agent_dir
from integration.test_agent_rollouts import _follow
from integration.test_canary import (
    V2,
    canary_state,
    counts,
    created,
    plugin,
    restart_agent,
    set_image_job,
    set_image_watched,
    until_canary,
    workload,
    write,
)
from invariants import RolloutInvariants
from kubernetes import client
from plugin import RunningPlugin

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events.job import JobFinished
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import WORKLOAD_LABEL, record_name

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py

QUERY = 'sum(rate(http_requests_total{app="web",code=~"5.."}[1m])) / sum(rate(http_requests_total{app="web"}[1m]))'


def sample(value: str) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1.0, value]}]}}


EMPTY: dict[str, Any] = {"status": "success", "data": {"resultType": "vector", "result": []}}


def host_address() -> str | None:
    """The host's non-loopback IPv4 address, the one a default route leaves from (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: only the route is looked up
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address


class FakePrometheus:
    """Answers /api/v1/query with the scripted answers in turn (the last one again once they run out)."""

    def __init__(self, address: str, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.queries: list[str] = []
        self.asked = threading.Condition()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                with fake.asked:
                    fake.queries.append(parse_qs(url.query).get("query", [""])[0])
                    answer = fake.answers[min(len(fake.queries), len(fake.answers)) - 1]
                    fake.asked.notify_all()
                body = json.dumps(answer).encode() if url.path == "/api/v1/query" else b"not found"
                self.send_response(200 if url.path == "/api/v1/query" else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((address, 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-prometheus", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def prometheus(cluster: Cluster, namespace: str) -> Iterator[FakePrometheus]:
    """A fake Prometheus behind Service ``prometheus`` (port 9090, named web) of the test's namespace."""
    address = host_address()
    if address is None:
        pytest.skip("no non-loopback IPv4 address: the API server does not proxy to loopback endpoints")
    fake = FakePrometheus(address, [sample("0")])
    try:
        # A Pod whose IP is the host's address: the one kind of endpoint the service proxy goes to.
        cluster.core.create_namespaced_pod(
            namespace,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "prometheus", "labels": {"app": "prometheus"}},
                "spec": {"containers": [{"name": "prometheus", "image": "prometheus.example/fake:v1"}]},
            },
        )
        watching.until(
            cluster.core.list_namespaced_pod,
            lambda pod: pod.metadata.name == "prometheus" and bool(pod.status.pod_ip),
            namespace=namespace,
            timeout=30,
            what="the prometheus pod running",
        )
        # A JSON patch: a strategic merge would add the address beside kwok's, two IPs of one family.
        cluster.core.patch_namespaced_pod_status(
            "prometheus",
            namespace,
            [
                {"op": "replace", "path": "/status/podIP", "value": address},
                {"op": "replace", "path": "/status/podIPs", "value": [{"ip": address}]},
            ],
        )
        cluster.core.create_namespaced_service(
            namespace,
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "prometheus"},
                "spec": {"ports": [{"name": "web", "port": 9090, "targetPort": fake.port}]},
            },
        )
        cluster.core.create_namespaced_endpoints(
            namespace,
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": "prometheus"},
                "subsets": [
                    {
                        "addresses": [
                            {"ip": address, "targetRef": {"kind": "Pod", "name": "prometheus", "namespace": namespace}}
                        ],
                        "ports": [{"name": "web", "port": fake.port}],
                    }
                ],
            },
        )
        yield fake
    finally:
        fake.stop()


def gate_steps(*, count: int, interval: str = "1s", on_failure: str = "abort", extra: str = "") -> str:
    return (
        "setWeight 20\n"
        f"gate prometheus service=prometheus:9090 threshold='< 0.05' count={count} interval={interval} "
        f"on-failure={on_failure}{extra}: {QUERY}\n"
        "setWeight 100"
    )


def measurements(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return list(canary_state(cluster, namespace).get("measurements") or [])


def test_a_passing_prometheus_gate_goes_on(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, prometheus: FakePrometheus
) -> None:
    prometheus.answers = [sample("0.01"), sample("0")]
    result = set_image_watched(cluster, namespace, kubeconfig, tmp_path, gate_steps(count=2))
    assert result.returncode == 0, result.stderr
    assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    # Two measurements, a second apart, each the query as written, through the API server's service proxy.
    assert prometheus.queries == [QUERY, QUERY]
    state = canary_state(cluster, namespace)
    assert state["gate"]["ok"] is True
    assert "2 successful, 0 failed, 0 inconclusive of 2 measurements" in state["gate"]["output"]
    assert "step 2/3: gate passed" in result.stdout
    reasons = [
        e.reason
        for e in cluster.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={record_name('web')}"
        ).items
    ]
    assert reasons.count("GateMeasured") == 2
    assert "GateRan" in reasons


def test_a_failing_prometheus_gate_aborts(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, prometheus: FakePrometheus
) -> None:
    prometheus.answers = [sample("0.2")]
    result = set_image_watched(cluster, namespace, kubeconfig, tmp_path, gate_steps(count=3))
    assert result.returncode == 1
    assert "canary aborted" in result.stderr
    # The canary at 0, the stable ReplicaSet at full size, every pod available, on the cluster.
    assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
    state = canary_state(cluster, namespace)
    assert state["aborted"]["by"] == "step"
    assert state["gate"]["ok"] is False
    # failure-limit=1: the first failed measurement ends the gate; no second query.
    assert prometheus.queries == [QUERY]
    assert [(m["phase"], m["value"]) for m in state["measurements"]] == [("failed", "0.2")]


def test_an_inconclusive_prometheus_gate_pauses_until_promoted(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, prometheus: FakePrometheus
) -> None:
    prometheus.answers = [EMPTY, sample("0.01"), sample("NaN")]
    created(cluster, namespace, kubeconfig, tmp_path, workload(gate_steps(count=3)))
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        result = plugin(kubeconfig, namespace, "set", "image", "web", f"app={V2}")
        assert result.returncode == 0, result.stderr
        assert "step 2/3: gate inconclusive; paused until promoted" in result.stdout
        assert counts(cluster, namespace) == {V2: (2, 2), manifests.IMAGE: (8, 8)}
        state = canary_state(cluster, namespace)
        assert (state["paused"]["by"], state["gate"]["inconclusive"]) == ("step", True)
        assert [m["phase"] for m in state["measurements"]] == ["inconclusive", "successful", "inconclusive"]
        status = plugin(kubeconfig, namespace, "status", "web")
        assert "(paused; go on with kubectl rollout-plus promote web)" in status.stdout
        promoted = plugin(kubeconfig, namespace, "promote", "web")
        assert promoted.returncode == 0, promoted.stderr
    finally:
        fenceposts.stop()
    assert fenceposts.breaches_of(10, "25%", "25%") == []
    assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    assert len(prometheus.queries) == 3


def test_the_agent_killed_between_two_measurements_continues_the_count(
    agent_dir: AgentPaths,
    cluster: Cluster,
    namespace: str,
    kubeconfig: Path,
    tmp_path: Path,
    prometheus: FakePrometheus,
) -> None:
    prometheus.answers = [sample("0.01")]
    created(cluster, namespace, kubeconfig, tmp_path, workload(gate_steps(count=3, interval="3s")))
    spec = set_image_job(kubeconfig, namespace)
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        with connect(agent_dir, name="test") as agent:
            pid = agent.agent["pid"]
            job = agent.submit(spec)
        first = until_canary(
            cluster, namespace, "the first measurement", lambda s: len(s.get("measurements") or []) == 1
        )
        restart_agent(agent_dir, pid)  # the new agent resumes the job, and the gate where it was
        until_canary(cluster, namespace, "the gate's verdict", lambda s: s.get("step") == 2)
        seen = _follow(agent_dir, job.id)
    finally:
        fenceposts.stop()
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("succeeded", 0), finished
    assert fenceposts.breaches_of(10, "25%", "25%") == []
    assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    # Three queries in all: the restarted driver took the second and third, not three more.
    assert len(prometheus.queries) == 3
    ran = [e.event for e in seen if isinstance(e.event, cev.GateRan)]
    assert len(ran) == 1
    assert ran[0].ok
    assert "3 successful, 0 failed, 0 inconclusive of 3 measurements" in ran[0].output
    # The count went on from the recorded first measurement, each next one an interval after the last.
    taken = measurements(cluster, namespace)
    assert taken[0] == first["measurements"][0]
    ats = [m["at"] for m in taken]
    assert len(ats) == 3
    gaps = [later - earlier for earlier, later in itertools.pairwise(ats)]
    assert all(gap >= 3.0 for gap in gaps), gaps
    print(f"\nmeasurements {gaps} s apart across a SIGKILL of the agent; {len(prometheus.queries)} queries in all")


# --- the Job gate ---------------------------------------------------------------------------------------------


def job_template(cluster: Cluster, namespace: str, *, behaviour: str, complete_after: str = "0s") -> None:
    """ConfigMap ``smoke``: a Job whose one pod (kwok) succeeds or fails ``complete_after`` after it starts."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "smoke"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": {manifests.BEHAVIOUR: behaviour, manifests.COMPLETE_AFTER: complete_after}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "check", "image": "registry.example/check:v1"}],
                },
            },
        },
    }
    cluster.core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "smoke"}, "data": {"job.yaml": yaml.safe_dump(job)}}
    )


class JobCreations(watching.Follower):
    """Every Job of the namespace as it is created: (name, uid), from a list and a watch that miss nothing."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        super().__init__()
        self.batch = client.BatchV1Api(cluster.api_client)
        self.namespace = namespace
        self.created: list[tuple[str, str]] = []

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.batch.list_namespaced_job, {"namespace": self.namespace}

    def _seed(self, items: list[Any]) -> None:
        self.created += [(j.metadata.name, j.metadata.uid) for j in items]

    def _apply(self, kind: str, obj: Any) -> None:
        if kind == "ADDED":
            self.created.append((obj.metadata.name, obj.metadata.uid))

    def start(self) -> JobCreations:
        self._follow()
        return self

    def stop(self) -> None:
        self._end()


def gate_jobs(cluster: Cluster, namespace: str) -> list[Any]:
    return list(client.BatchV1Api(cluster.api_client).list_namespaced_job(namespace).items)


JOB_STEPS = "setWeight 20\ngate job: smoke\nsetWeight 100"


def gate_job_in_agent(
    agent_dir: AgentPaths, kubeconfig: Path, namespace: str, creations: JobCreations
) -> tuple[int, Any, str]:
    """``set image`` submitted to the agent, once its gate's Job is created: the agent's pid, the agent's job,
    and the gate Job's name."""
    with connect(agent_dir, name="test") as agent:
        pid = int(agent.agent["pid"])
        job = agent.submit(set_image_job(kubeconfig, namespace))
    assert creations.wait(lambda: len(creations.created) == 1, timeout=90), "the gate's Job was never created"
    return pid, job, creations.created[0][0]


def test_a_job_gate_that_succeeds_goes_on(cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path) -> None:
    job_template(cluster, namespace, behaviour="succeed")
    creations = JobCreations(cluster, namespace).start()
    try:
        result = set_image_watched(cluster, namespace, kubeconfig, tmp_path, JOB_STEPS)
    finally:
        creations.stop()
    assert result.returncode == 0, result.stderr
    assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    (job,) = gate_jobs(cluster, namespace)
    assert creations.created == [(job.metadata.name, job.metadata.uid)]
    assert any(c.type == "Complete" and c.status == "True" for c in job.status.conditions)
    assert (job.metadata.labels[WORKLOAD_LABEL], job.metadata.labels["rollout-plus.io/canary-step"]) == (
        "web",
        "2",
    )
    assert job.metadata.owner_references[0].name == record_name("web")
    env = {e.name: e.value for e in job.spec.template.spec.containers[0].env}
    assert (env["ROLLOUT_PLUS_WORKLOAD"], env["ROLLOUT_PLUS_NAMESPACE"], env["ROLLOUT_PLUS_STEP"]) == (
        "web",
        namespace,
        "2",
    )
    assert job.spec.active_deadline_seconds == 600
    state = canary_state(cluster, namespace)
    assert state["gate"]["ok"] is True
    assert "step 2/3: gate passed" in result.stdout


def test_a_job_gate_that_fails_aborts(cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path) -> None:
    job_template(cluster, namespace, behaviour="fail")
    result = set_image_watched(cluster, namespace, kubeconfig, tmp_path, JOB_STEPS)
    assert result.returncode == 1
    assert "canary aborted" in result.stderr
    assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
    state = canary_state(cluster, namespace)
    assert state["aborted"]["by"] == "step"
    assert "Failed: BackoffLimitExceeded" in state["gate"]["output"]
    assert len(gate_jobs(cluster, namespace)) == 1


def test_the_agent_killed_while_the_job_runs_follows_the_same_job(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    job_template(cluster, namespace, behaviour="succeed", complete_after="6s")
    created(cluster, namespace, kubeconfig, tmp_path, workload(JOB_STEPS))
    creations = JobCreations(cluster, namespace).start()
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        pid, job, _ = gate_job_in_agent(agent_dir, kubeconfig, namespace, creations)
        killed_at = time.time()
        restart_agent(agent_dir, pid)  # the new agent resumes the job, and finds the Job already there
        seen = _follow(agent_dir, job.id)
    finally:
        fenceposts.stop()
        creations.stop()
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("succeeded", 0), finished
    assert fenceposts.breaches_of(10, "25%", "25%") == []
    assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    # Exactly one Job was ever created for the step, and it is the one that passed the gate.
    (gate_job,) = gate_jobs(cluster, namespace)
    assert creations.created == [(gate_job.metadata.name, gate_job.metadata.uid)]
    ran = [e.event for e in seen if isinstance(e.event, cev.GateRan)]
    assert len(ran) == 1
    assert ran[0].ok
    assert gate_job.metadata.name in ran[0].output
    # The Job was still running when its driver was killed: the new driver followed it to its end.
    ended_at = gate_job.status.completion_time.timestamp()
    assert ended_at > killed_at
    print(f"\nthe gate's Job ended {ended_at - killed_at:.1f} s after its driver was SIGKILLed; one Job in all")


def test_a_job_gate_naming_a_missing_template_is_refused_before_anything_is_written(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    created(cluster, namespace, kubeconfig, tmp_path, workload(None))
    before = cluster.core.read_namespaced_config_map(record_name("web"), namespace).metadata.resource_version
    document = workload(JOB_STEPS)
    document["spec"]["template"]["spec"]["containers"][0]["image"] = V2
    result = plugin(kubeconfig, namespace, "apply", "-f", str(write(tmp_path, document, "gated.yaml")))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        'error: workload "web" has invalid canary steps (rollout-plus.io/steps): step 2 (gate job: smoke): '
        f'ConfigMap "smoke" (namespace "{namespace}") is not found; create it with the Job manifest under key '
        "job.yaml; nothing was changed"
    )
    after = cluster.core.read_namespaced_config_map(record_name("web"), namespace).metadata.resource_version
    assert after == before
    assert counts(cluster, namespace) == {manifests.IMAGE: (10, 10)}
    assert gate_jobs(cluster, namespace) == []


# --- a gate whose verdict is no longer wanted -------------------------------------------------------------------


def gate_pods(cluster: Cluster, namespace: str, job: str) -> list[str]:
    return [
        p.metadata.name for p in cluster.core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items
    ]


def stopped_events(cluster: Cluster, namespace: str) -> list[str]:
    """The messages of the Kubernetes Events ``GateStopped`` on the workload's record."""
    found = cluster.core.list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={record_name('web')},reason=GateStopped"
    )
    return [e.message for e in found.items]


def test_abort_while_the_job_gate_runs_deletes_the_job_and_its_pods(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    job_template(cluster, namespace, behaviour="succeed", complete_after="600s")
    created(cluster, namespace, kubeconfig, tmp_path, workload(JOB_STEPS))
    creations = JobCreations(cluster, namespace).start()
    fenceposts = RolloutInvariants(cluster, namespace).start()
    try:
        rolling = RunningPlugin("set", "image", "web", f"app={V2}", "-n", namespace, kubeconfig=kubeconfig)
        try:
            rolling.wait_for_stderr(lambda line: "running gate job" in line, timeout=90, what="the Job gate to start")
            assert creations.wait(lambda: len(creations.created) == 1, timeout=60), "the gate's Job was never created"
            (job_name, _uid) = creations.created[0]
            pod = watching.until(
                cluster.core.list_namespaced_pod,
                lambda p: bool(p.spec.node_name),  # kwok keeps it Pending until it completes
                namespace=namespace,
                label_selector=f"job-name={job_name}",
                timeout=60,
                what=f"the pod of Job {job_name} on a node",
            )
            aborted = plugin(kubeconfig, namespace, "abort", "web")
        finally:
            changed = rolling.finish(timeout=120)
        batch = client.BatchV1Api(cluster.api_client)
        watching.until_deleted(batch.list_namespaced_job, job_name, namespace=namespace, timeout=30)
        watching.until_deleted(cluster.core.list_namespaced_pod, pod.metadata.name, namespace=namespace, timeout=60)
    finally:
        fenceposts.stop()
        creations.stop()
    assert aborted.returncode == 0, aborted.stderr
    # The driver that ran the gate stopped it, said so, and unwound the canary.
    assert changed.returncode == 1
    assert f"step 2/3: gate stopped (aborted): Job {job_name} deleted" in changed.stdout, changed.stdout
    assert "canary aborted: ReplicaSet" in changed.stderr
    assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
    assert fenceposts.breaches_of(10, "25%", "25%") == []
    # Nothing recorded for the stopped gate (a retry runs it again); one Job in all, gone with its pods.
    assert canary_state(cluster, namespace).get("gate") is None
    assert len(creations.created) == 1
    assert gate_pods(cluster, namespace, job_name) == []
    assert stopped_events(cluster, namespace) == [
        f"step 2/3: gate job: smoke stopped (aborted): Job {job_name} deleted"
    ]


def test_abort_while_a_command_gate_runs_kills_its_command(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    said = tmp_path / "gate-pid"
    os.mkfifo(said)
    steps = f"setWeight 30\ngate command: echo $$ > {said}; exec sleep 600\nsetWeight 100"
    created(cluster, namespace, kubeconfig, tmp_path, workload(steps))
    pids: list[int] = []
    reader = threading.Thread(target=lambda: pids.append(int(said.read_text())), daemon=True)
    reader.start()  # blocks on the FIFO until the gate's command opens it
    rolling = RunningPlugin("set", "image", "web", f"app={V2}", "-n", namespace, kubeconfig=kubeconfig)
    try:
        reader.join(timeout=90)
        assert pids, "the gate's command never ran"
        (pid,) = pids
        assert _alive(pid)
        aborted = plugin(kubeconfig, namespace, "abort", "web")
    finally:
        changed = rolling.finish(timeout=120)
    assert aborted.returncode == 0, aborted.stderr
    assert changed.returncode == 1
    assert "step 2/3: gate stopped (aborted): its command killed" in changed.stdout, changed.stdout
    assert _wait_gone(pid, 10), f"the gate's command (pid {pid}) still runs"
    assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
    assert canary_state(cluster, namespace).get("gate") is None


def test_an_abort_recorded_while_the_agent_was_dead_deletes_the_job_it_left_running(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    job_template(cluster, namespace, behaviour="succeed", complete_after="600s")
    created(cluster, namespace, kubeconfig, tmp_path, workload(JOB_STEPS))
    creations = JobCreations(cluster, namespace).start()
    try:
        pid, job, job_name = gate_job_in_agent(agent_dir, kubeconfig, namespace, creations)
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        # The dead agent's Lease is left to lapse (the agent resumes its jobs itself): the abort is recorded only.
        aborted = plugin(kubeconfig, namespace, "abort", "web")
        assert aborted.returncode == 0, aborted.stderr
        assert "recorded; the driver that holds the workload (" in aborted.stderr
        assert "/rollout-plus-agent/" in aborted.stderr  # the agent, which carries it out once it runs again
        with connect(agent_dir, name="test") as agent:
            assert agent.agent["pid"] != pid
        seen = _follow(agent_dir, job.id)  # the resumed driver carries the abort out
    finally:
        creations.stop()
    stopped = [e.event for e in seen if isinstance(e.event, cev.GateStopped)]
    assert [(e.step, e.why, e.what) for e in stopped] == [(2, "aborted", f"Job {job_name} deleted")]
    batch = client.BatchV1Api(cluster.api_client)
    watching.until_deleted(batch.list_namespaced_job, job_name, namespace=namespace, timeout=30)
    assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
    assert len(creations.created) == 1
    assert stopped_events(cluster, namespace) == [
        f"step 2/3: gate job: smoke stopped (aborted): Job {job_name} deleted"
    ]
