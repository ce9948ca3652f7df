"""Rollouts the agent drives, through a SIGKILL of the agent (issue 10, "Resume"), against the real control plane.

Each crash test kills the agent at one point of a rollout, found by watching the cluster (or the job's events),
never by sleeping: mid-scale-up, mid-scale-down, during a Recreate's wait for the old pods to go, during a PDB
hold of the scale-down. RolloutInvariants watch the pods and ReplicaSets throughout. The next client starts a
new agent, which resumes the job from its journal: the change is not made twice (one new ReplicaSet), the
rollout ends as it would have, and the job goes on within 3 s of the agent's restart because the agent takes
its Lease back.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
from integration.test_agent import _wait_gone, agent_dir, agents_of
from invariants import ReplicaSetScaling, RolloutInvariants
from plugin import run_plugin

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import ENV_DIR, AgentPaths, agent_paths
from kubectl_rollout.agent.protocol import ErrorCode, ProtocolError
from kubectl_rollout.agent.transport.process import lease_holder_for
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.api import ApiUnreachable
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted
from kubectl_rollout.jobs.spec import ActionKind, Connection, JobKind, JobSpec, RolloutAction
from kubectl_rollout.kube.cluster_access import Cluster

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py

V2 = "registry.example/app:v2"


def _workload(replicas: int, strategy: dict[str, Any], ready_after: str, **annotations: str) -> dict[str, Any]:
    document = manifests.deployment(
        "web", replicas=replicas, strategy=strategy, annotations={manifests.READY_AFTER: ready_after, **annotations}
    )
    document["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 4
    return document


def _rolling(surge: int, unavailable: int) -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}


def _with_image(document: dict[str, Any], image: str) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return changed


def _apply_spec(kubeconfig: Path, namespace: str, document: dict[str, Any]) -> JobSpec:
    return JobSpec(
        kind=JobKind.ROLLOUT,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        rollout=RolloutAction(kind=ActionKind.APPLY, manifest=document),
    )


def _follow(
    paths: AgentPaths, job_id: str, *, from_seq: int = 1, until: Callable[[Any], bool] | None = None
) -> list[Envelope]:
    """The job's events from ``from_seq`` until it finishes, or until one for which ``until`` says True."""
    seen = []
    with connect(paths, environ=_environ(paths), name="test") as agent:
        for envelope in agent.attach(job_id, from_seq=from_seq):
            seen.append(envelope)
            if until is not None and until(envelope.event):
                break
    return seen


def _environ(paths: AgentPaths) -> dict[str, str]:
    """The environment of an agent that ``connect`` starts for ``paths``."""
    return {**os.environ, ENV_DIR: str(paths.state_dir.parent)}


def _run_to_end(paths: AgentPaths, spec: JobSpec) -> list[Envelope]:
    with connect(paths, environ=_environ(paths), name="test") as agent:
        job = agent.submit(spec)
    seen = _follow(paths, job.id)
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert finished.exit_code == 0, finished
    return seen


def _replica_sets(cluster: Cluster, namespace: str) -> list[tuple[int, int, str]]:
    found = []
    for rs in cluster.apps.list_namespaced_replica_set(namespace, label_selector="app=web").items:
        revision = int((rs.metadata.annotations or {}).get("deployment.kubernetes.io/revision", "0"))
        found.append((revision, rs.spec.replicas, rs.spec.template.spec.containers[0].image))
    return sorted(found)


def _integrity(paths: AgentPaths, job_id: str) -> str:
    with sqlite3.connect(paths.journal) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        (state,) = db.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return str(state)


def _is_v2(rs: Any) -> bool:
    return bool(rs.spec.template.spec.containers[0].image == V2)


# --- the points to kill at: each waits, watching, until the rollout is there ---------------------------------


def _mid_scale_up(cluster: Cluster, namespace: str, paths: AgentPaths, job_id: str) -> None:
    # maxSurge 1, maxUnavailable 0, 6 replicas, Ready after 2 s: the new ReplicaSet grows one pod at a time.
    watching.until(
        cluster.apps.list_namespaced_replica_set,
        lambda rs: _is_v2(rs) and 2 <= rs.spec.replicas < 6,
        namespace=namespace,
        timeout=60,
        what="the new ReplicaSet growing",
    )


def _mid_scale_down(cluster: Cluster, namespace: str, paths: AgentPaths, job_id: str) -> None:
    # maxSurge 0, maxUnavailable 1, 5 replicas: the old ReplicaSet shrinks first, one pod at a time.
    watching.until(
        cluster.apps.list_namespaced_replica_set,
        lambda rs: not _is_v2(rs) and 1 <= rs.spec.replicas <= 3,
        namespace=namespace,
        timeout=60,
        what="the old ReplicaSet shrinking",
    )


def _recreate_wait(cluster: Cluster, namespace: str, paths: AgentPaths, job_id: str) -> None:
    # Old pods ignore SIGTERM and linger for their 4 s grace period: the Recreate waits for them to go.
    watching.until(
        cluster.core.list_namespaced_pod,
        lambda pod: pod.metadata.deletion_timestamp is not None,
        namespace=namespace,
        timeout=60,
        what="an old pod on its way out",
    )
    assert not any(_is_v2(rs) for rs in cluster.apps.list_namespaced_replica_set(namespace).items)


def _pdb_hold(cluster: Cluster, namespace: str, paths: AgentPaths, job_id: str) -> None:
    # The PDB wants all 4 Ready: the old ReplicaSet waits until the surge pod is Ready (3 s).
    _follow(paths, job_id, until=lambda event: isinstance(event, ev.ScaleDownHeldByPdb))
    old = [rs for rs in cluster.apps.list_namespaced_replica_set(namespace).items if not _is_v2(rs)]
    assert [rs.spec.replicas for rs in old] == [4]


CASES = {
    "mid-scale-up": dict(replicas=6, strategy=_rolling(1, 0), ready_after="2s", most=7, fewest=6, at=_mid_scale_up),
    "mid-scale-down": dict(replicas=5, strategy=_rolling(0, 1), ready_after="2s", most=5, fewest=4, at=_mid_scale_down),
    "recreate-wait": dict(
        replicas=4,
        strategy={"type": "Recreate"},
        ready_after="1s",
        annotations={manifests.ON_SIGTERM: "ignore"},
        most=4,
        fewest=0,
        at=_recreate_wait,
    ),
    "pdb-hold": dict(replicas=4, strategy=_rolling(1, 1), ready_after="3s", pdb=4, most=5, fewest=4, at=_pdb_hold),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_rollout_resumes_after_sigkill_of_the_agent_with_one_new_replica_set(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path, case: str
) -> None:
    c = CASES[case]
    replicas = c["replicas"]
    document = _workload(replicas, c["strategy"], c["ready_after"], **c.get("annotations", {}))
    # The baseline for the resumed job: how long a fresh agent (this connect starts it, as the one after the
    # kill does) takes from its start (imports done, serving) to a job's first step here and now. Measured from
    # the agent's own start, not the client's connect: the interpreter's start and imports before it take
    # seconds more or less with what the other test worker runs at that moment, and say nothing of the Lease.
    with connect(agent_dir, environ=_environ(agent_dir), name="test") as agent:
        first_started_at = agent.agent["started_at"]
        first = agent.submit(_apply_spec(kubeconfig, namespace, document))
    first_run = _follow(agent_dir, first.id)
    first_end = first_run[-1].event
    assert isinstance(first_end, JobFinished)
    assert first_end.exit_code == 0, first_end
    first_step = first_run[1].at - first_started_at
    if "pdb" in c:
        cluster.policy.create_namespaced_pod_disruption_budget(
            namespace, manifests.pdb("web", app="web", min_available=c["pdb"])
        )
        watching.until(
            cluster.policy.list_namespaced_pod_disruption_budget,
            lambda p: p.status is not None and p.status.expected_pods == replicas,
            namespace=namespace,
            timeout=30,
            what="the PDB processed",
        )
    census = RolloutInvariants(cluster, namespace).start()
    try:
        with connect(agent_dir, name="test") as agent:
            pid = agent.agent["pid"]
            job = agent.submit(_apply_spec(kubeconfig, namespace, _with_image(document, V2)))
        c["at"](cluster, namespace, agent_dir, job.id)
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        assert _integrity(agent_dir, job.id) == "running"
        asked_at = time.time()
        with connect(agent_dir, name="test") as agent:
            assert agent.agent["pid"] != pid
            restarted_at = agent.agent["started_at"]
        seen = _follow(agent_dir, job.id)
    finally:
        census.stop()
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("succeeded", 0), finished
    rollout_end = next(e.event for e in reversed(seen) if isinstance(e.event, ev.RolloutFinished))
    assert isinstance(rollout_end, ev.RolloutFinished)
    assert (rollout_end.succeeded, rollout_end.outcome) == (True, ev.RolloutOutcome.COMPLETE), rollout_end
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    starts = [i for i, e in enumerate(seen) if isinstance(e.event, JobStarted)]
    assert [e.event.resumed for e in seen if isinstance(e.event, JobStarted)] == [False, True]
    # The change was made once: one SpecChanged, one new ReplicaSet.
    assert len([e for e in seen if isinstance(e.event, ev.SpecChanged)]) == 1
    created = [e.event.revision for e in seen if isinstance(e.event, ev.ReplicaSetCreated)]
    assert created == [2], created
    assert _replica_sets(cluster, namespace) == [(1, 0, manifests.IMAGE), (2, replicas, V2)]
    # The rollout's bounds held throughout, across the crash.
    assert census.breaches(most=c["most"], fewest=c["fewest"]) == []
    if c["strategy"]["type"] == "Recreate":
        assert not census.pods.templates_together
    assert _integrity(agent_dir, job.id) == "succeeded"
    # The resumed job took its Lease back at once: it never followed its own dead driver.
    resumed = seen[starts[1] :]
    assert not any(isinstance(e.event, ev.FollowingDriver) for e in resumed)
    went_on = resumed[1]
    # From the new agent's start to its first step, the resumed job took about what the first run took (the
    # baseline above: connection, Lease, first read), not the Lease's 15 s on top: the 3 s target.
    resumed_step = went_on.at - restarted_at
    print(
        f"\n{case}: the resumed job's first step ({went_on.type}) {resumed_step:.2f} s after the agent's restart "
        f"({went_on.at - asked_at:.2f} s after a client started it; a fresh agent's first job: {first_step:.2f} s "
        "after its start)"
    )
    assert resumed_step < first_step + 3.0


# --- two agents, one rollout ------------------------------------------------------------------------------


@pytest.fixture
def other_agent() -> Iterator[AgentPaths]:
    """A second agent directory (its own state directory, so its own Lease identity), not in this environment."""
    directory = Path(tempfile.mkdtemp(prefix="rpb-", dir="/tmp"))
    yield agent_paths({ENV_DIR: str(directory)})
    for pid in agents_of(directory):
        os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 10)
    shutil.rmtree(directory, ignore_errors=True)


def test_two_agents_one_drives_the_other_follows_and_takes_over_when_the_first_is_killed(
    agent_dir: AgentPaths, other_agent: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    first, second = agent_dir, other_agent
    assert lease_holder_for(first) != lease_holder_for(second)
    document = _workload(6, _rolling(1, 0), "3s")
    _run_to_end(first, _apply_spec(kubeconfig, namespace, document))
    census = RolloutInvariants(cluster, namespace).start()
    try:
        with connect(first, name="test") as agent:
            pid = agent.agent["pid"]
            driving = agent.submit(_apply_spec(kubeconfig, namespace, _with_image(document, V2)))
        watching.until(
            cluster.coordination.list_namespaced_lease,
            lambda lease: (
                lease.metadata.name == "rollout-plus.web" and lease.spec.holder_identity == lease_holder_for(first)
            ),
            namespace=namespace,
            timeout=30,
            what="the first agent's Lease",
        )
        # The same rollout given to the second agent: `status -w` of the workload.
        watch = JobSpec(
            kind=JobKind.ROLLOUT,
            connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
            rollout=RolloutAction(kind=ActionKind.WATCH, name="web"),
        )
        with connect(second, environ=_environ(second), name="test") as agent:
            assert agent.agent["pid"] != pid
            following = agent.submit(watch)
        before = _follow(second, following.id, until=lambda event: isinstance(event, ev.FollowingDriver))
        told = before[-1].event
        assert isinstance(told, ev.FollowingDriver)
        assert told.holder == lease_holder_for(first)
        assert all(
            rs.spec.replicas < 6 for rs in cluster.apps.list_namespaced_replica_set(namespace).items if _is_v2(rs)
        )
        os.kill(pid, signal.SIGKILL)
        killed_at = time.time()
        assert _wait_gone(pid, 10)
        seen = _follow(second, following.id)
    finally:
        census.stop()
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("succeeded", 0), finished
    took = next(e for e in seen if isinstance(e.event, ev.TookOver))
    assert isinstance(took.event, ev.TookOver)
    assert took.event.previous_holder == lease_holder_for(first)
    print(f"\nthe second agent took over {took.at - killed_at:.2f} s after the first was killed (Lease 15 s)")
    assert _replica_sets(cluster, namespace) == [(1, 0, manifests.IMAGE), (2, 6, V2)]
    assert census.breaches(most=7, fewest=6) == []
    assert _integrity(first, driving.id) == "running"  # the first agent never ran again
    assert _integrity(second, following.id) == "succeeded"


# --- jobs pause / jobs resume of a rollout ----------------------------------------------------------------


@pytest.mark.parametrize("while_paused", ["nothing-else", "the-agent-is-killed-and-restarted"])
def test_jobs_pause_pauses_the_rollout_on_its_workload_and_jobs_resume_drives_it_to_the_end(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path, while_paused: str
) -> None:
    """ "the-agent-is-killed-and-restarted": SIGKILL while paused; the resumed job finds the workload paused
    by it and stays paused (no scaling, still watched), neither pausing it again nor resuming it."""
    from kubectl_rollout.jobs.events.job import JobPaused, JobResumed
    from kubectl_rollout.rollout.record import read

    # maxSurge 1, maxUnavailable 0, 6 replicas, Ready after 2 s: a step every ~2 s, ~12 s in all unpaused.
    document = _workload(6, _rolling(1, 0), "2s")
    _run_to_end(agent_dir, _apply_spec(kubeconfig, namespace, document))
    census = RolloutInvariants(cluster, namespace).start()
    scaling = None
    try:
        with connect(agent_dir, name="test") as agent:
            job = agent.submit(_apply_spec(kubeconfig, namespace, _with_image(document, V2)))
        _mid_scale_up(cluster, namespace, agent_dir, job.id)
        paused = run_plugin("jobs", "pause", job.id)
        assert paused.returncode == 0, paused.stderr
        assert paused.stdout.strip() == (
            f"job {job.id} (rollout workload/web) paused: its workload is paused (no rollout progress; scaling still "
            f"applies); go on with `kubectl rollout-plus jobs resume {job.id}`"
        )
        # The job pauses the workload (its own SpecChanged), as `pause web` would.
        _follow(
            agent_dir,
            job.id,
            until=lambda event: isinstance(event, ev.SpecChanged) and event.change is ev.SpecChange.PAUSE,
        )
        assert read(cluster, namespace, "web").spec.paused is True
        # From here on, every change of a ReplicaSet's size is recorded; none may come until the resume.
        scaling = ReplicaSetScaling(cluster, namespace).start()
        listed = cluster.apps.list_namespaced_replica_set(namespace).items
        new_size = next(rs.spec.replicas for rs in listed if _is_v2(rs))
        assert new_size < 6, f"the rollout finished before the pause: the new ReplicaSet has {new_size}"
        time.sleep(8)  # four of the 2 s steps the rollout would have made unpaused
        if while_paused == "the-agent-is-killed-and-restarted":
            with connect(agent_dir, name="test") as agent:
                pid = agent.agent["pid"]
            os.kill(pid, signal.SIGKILL)
            assert _wait_gone(pid, 10)
            assert _integrity(agent_dir, job.id) == "running"
            with connect(agent_dir, name="test") as agent:
                assert agent.agent["pid"] != pid
            _follow(agent_dir, job.id, until=lambda event: isinstance(event, JobStarted) and event.resumed)
            time.sleep(4)  # the resumed job's passes, on a paused workload
        with connect(agent_dir, name="test") as agent:
            info = agent.show(job.id)
            assert (info.state, info.paused) == ("running", True), info
            # `resume web` as a second job is refused, pointing at the paused job.
            resume = JobSpec(
                kind=JobKind.ROLLOUT,
                connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
                rollout=RolloutAction(kind=ActionKind.RESUME, name="web"),
            )
            with pytest.raises(ProtocolError) as refused:
                agent.submit(resume)
            assert refused.value.code == ErrorCode.CONFLICT
            assert f"it is paused: go on with `kubectl rollout-plus jobs resume {job.id}`" in refused.value.message
            resumed_at = time.monotonic()
            assert not agent.resume(job.id).paused
        seen = _follow(agent_dir, job.id)
    finally:
        census.stop()
        if scaling is not None:
            scaling.stop()
    assert scaling is not None
    scaled_while_paused = [change for change in scaling.seen() if change[0] < resumed_at]
    assert scaled_while_paused == [], f"ReplicaSets scaled while the rollout was paused: {scaled_while_paused}"
    after = [change for change in scaling.seen() if change[0] >= resumed_at]
    assert after, "nothing was scaled after the resume"
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("succeeded", 0), finished
    rollout_end = next(e.event for e in reversed(seen) if isinstance(e.event, ev.RolloutFinished))
    assert isinstance(rollout_end, ev.RolloutFinished)
    assert (rollout_end.outcome, rollout_end.paused) == (ev.RolloutOutcome.COMPLETE, False), rollout_end
    # The job reported the pause, and the rollout's own view said paused meanwhile.
    kinds = [type(e.event) for e in seen]
    assert kinds.index(JobPaused) < kinds.index(JobResumed)
    changes = [e.event.change for e in seen if isinstance(e.event, ev.SpecChanged)]
    assert changes == [ev.SpecChange.APPLY, ev.SpecChange.PAUSE, ev.SpecChange.RESUME], changes
    runs = [e.event.resumed for e in seen if isinstance(e.event, JobStarted)]
    assert runs == ([False, True] if while_paused == "the-agent-is-killed-and-restarted" else [False]), runs
    paused_reports = [
        e.event for e in seen[kinds.index(JobPaused) :] if isinstance(e.event, ev.RolloutProgressed) and e.event.paused
    ]
    assert paused_reports, "no progress report said paused"
    # One new ReplicaSet; the rollout's bounds held throughout.
    created = [e.event.revision for e in seen if isinstance(e.event, ev.ReplicaSetCreated)]
    assert created == [2], created
    assert _replica_sets(cluster, namespace) == [(1, 0, manifests.IMAGE), (2, 6, V2)]
    assert read(cluster, namespace, "web").spec.paused is False
    assert census.breaches(most=7, fewest=6) == []
    with connect(agent_dir, name="test") as agent:
        assert agent.show(job.id).paused is False


# --- SIGKILL before the rollout's SpecChanged ----------------------------------------------------------------


def _record_generation(cluster: Cluster, namespace: str) -> int:
    return int(cluster.core.read_namespaced_config_map("rollout-plus.web", namespace).data["generation"])


def _journaled(paths: AgentPaths, job_id: str, event_type: str) -> int:
    with sqlite3.connect(paths.journal) as db:
        (count,) = db.execute("SELECT count(*) FROM events WHERE job = ? AND type = ?", (job_id, event_type)).fetchone()
    return int(count)


class _AnsweredOnceServer:
    """A server that answers ``GET /version`` (a client's first contact) and drops every other request
    unanswered: an API server that answered once and then went away. A job that meets it rides the outage
    out (a server that never answered would fail the job at once)."""

    def __init__(self) -> None:
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not self.path.startswith("/version"):
                    self.close_connection = True  # dropped with no answer: a connection error for the client
                    return
                body = b'{"major": "1", "minor": "36", "gitVersion": "v1.36.3"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

            def log_message(self, *_args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _copy_pointing_at(kubeconfig: Path, copy_path: Path, server: str) -> None:
    """The kubeconfig as it is, but every cluster's server ``server``."""
    document = json.loads(kubeconfig.read_text())
    for entry in document["clusters"]:
        entry["cluster"]["server"] = server
    copy_path.write_text(json.dumps(document))


@pytest.mark.parametrize("point", ["before-the-record-is-written", "right-after-the-record-is-written"])
def test_a_rollout_killed_before_its_spec_changed_is_journaled_is_changed_once_on_resume(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, point: str
) -> None:
    """The agent dies before the job's SpecChanged is in its journal: the resumed job runs its command again
    (not `status -w`, which would follow the old generation to a false "complete"), and the change is still
    made once.

    "before-the-record-is-written": the job's kubeconfig names a loopback port where nothing listens (a port
    this test holds bound, never listening), so its first API call is refused and the job waits out the
    outage (ApiUnreachable): the record cannot have been written when the agent is killed. The kubeconfig
    is then pointed back at the API server, and the restarted agent reads it again as it resumes the job.

    "right-after-the-record-is-written": the agent is killed the moment a watch sees the record's new
    generation; whether the job's SpecChanged made it to the journal first is a race, reported, and the
    outcome must be the same either way.
    """
    document = _workload(4, _rolling(1, 0), "1s")
    _run_to_end(agent_dir, _apply_spec(kubeconfig, namespace, document))
    assert _record_generation(cluster, namespace) == 1
    job_kubeconfig = tmp_path / "kubeconfig"
    gone = _AnsweredOnceServer()
    if point == "before-the-record-is-written":
        _copy_pointing_at(kubeconfig, job_kubeconfig, gone.url)
    else:
        shutil.copyfile(kubeconfig, job_kubeconfig)
    census = RolloutInvariants(cluster, namespace).start()
    try:
        with connect(agent_dir, name="test") as agent:
            pid = agent.agent["pid"]
            job = agent.submit(_apply_spec(job_kubeconfig, namespace, _with_image(document, V2)))
        if point == "before-the-record-is-written":
            _follow(agent_dir, job.id, until=lambda event: isinstance(event, ApiUnreachable))
        else:
            watching.until(
                cluster.core.list_namespaced_config_map,
                lambda cm: cm.metadata.name == "rollout-plus.web" and cm.data["generation"] == "2",
                namespace=namespace,
                timeout=60,
                what="the record's generation 2",
            )
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        spec_changed_before_kill = _journaled(agent_dir, job.id, "SpecChanged")
        if point == "before-the-record-is-written":
            assert spec_changed_before_kill == 0
            assert _record_generation(cluster, namespace) == 1, "the record changed while the server was unreachable"
            shutil.copyfile(kubeconfig, job_kubeconfig)
        print(f"\n{point}: SpecChanged was {'' if spec_changed_before_kill else 'not '}journaled before the kill")
        assert _integrity(agent_dir, job.id) == "running"
        with connect(agent_dir, name="test") as agent:
            assert agent.agent["pid"] != pid
        seen = _follow(agent_dir, job.id)
    finally:
        census.stop()
        gone.close()
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("succeeded", 0), finished
    rollout_end = next(e.event for e in reversed(seen) if isinstance(e.event, ev.RolloutFinished))
    assert isinstance(rollout_end, ev.RolloutFinished)
    assert (rollout_end.succeeded, rollout_end.outcome) == (True, ev.RolloutOutcome.COMPLETE), rollout_end
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    assert [e.event.resumed for e in seen if isinstance(e.event, JobStarted)] == [False, True]
    # Journaled once whichever way the race went: by the first run, or by the command run again.
    changed = [e.event for e in seen if isinstance(e.event, ev.SpecChanged)]
    assert len(changed) == 1, changed
    assert changed[0].generation == 2, changed[0]
    # The change was made once: generation 2, one new ReplicaSet, the old one scaled to nothing.
    assert _record_generation(cluster, namespace) == 2
    created = [e.event.revision for e in seen if isinstance(e.event, ev.ReplicaSetCreated)]
    # Reported at most once. A kill that falls between the new ReplicaSet's create and its event (a rehearsal
    # met it) leaves it to the resumed run, which finds it made and only scales it; the cluster shows it was
    # made once either way.
    assert created in ([], [2]), [(e.seq, e.type) for e in seen]
    assert _replica_sets(cluster, namespace) == [(1, 0, manifests.IMAGE), (2, 4, V2)]
    assert census.breaches(most=5, fewest=4) == []
    assert _integrity(agent_dir, job.id) == "succeeded"


def test_a_rollout_job_cancelled_while_paused_leaves_its_workload_paused_and_says_so(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path
) -> None:
    from kubectl_rollout.rollout.record import read

    document = _workload(6, _rolling(1, 0), "2s")
    _run_to_end(agent_dir, _apply_spec(kubeconfig, namespace, document))
    census = RolloutInvariants(cluster, namespace).start()
    scaling = None
    try:
        with connect(agent_dir, name="test") as agent:
            job = agent.submit(_apply_spec(kubeconfig, namespace, _with_image(document, V2)))
        _mid_scale_up(cluster, namespace, agent_dir, job.id)
        with connect(agent_dir, name="test") as agent:
            assert agent.pause(job.id).paused
        _follow(
            agent_dir,
            job.id,
            until=lambda event: isinstance(event, ev.SpecChanged) and event.change is ev.SpecChange.PAUSE,
        )
        scaling = ReplicaSetScaling(cluster, namespace).start()
        with connect(agent_dir, name="test") as agent:
            assert agent.cancel(job.id).cancel_requested
        seen = _follow(agent_dir, job.id)
        time.sleep(3)  # whatever a driver left behind would show now
    finally:
        census.stop()
        if scaling is not None:
            scaling.stop()
    assert scaling is not None
    assert scaling.seen() == [], f"ReplicaSets scaled after the pause: {scaling.seen()}"
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("cancelled", 1), finished
    rollout_end = next(e.event for e in reversed(seen) if isinstance(e.event, ev.RolloutFinished))
    assert isinstance(rollout_end, ev.RolloutFinished)
    assert (rollout_end.outcome, rollout_end.paused) == (ev.RolloutOutcome.INTERRUPTED, True), rollout_end
    assert rollout_end.message == (
        'interrupted while paused; workload "web" stays paused: resume it with kubectl rollout-plus resume web'
    )
    assert read(cluster, namespace, "web").spec.paused is True
    assert census.breaches(most=7, fewest=6) == []
