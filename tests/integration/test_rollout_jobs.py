"""Rollout jobs without click: ``run_rollout_action`` in this process, and the ``-o jsonl`` stream, against
the real control plane."""

from __future__ import annotations

import json
import signal
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
import yaml
from invariants import RolloutInvariants
from kubernetes import client
from lease_history import LeaseHistory
from plugin import RunningPlugin, events, run_plugin

from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Envelope, Event
from kubectl_rollout.jobs.views.rollout import fold_all
from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect
from kubectl_rollout.kube.errors import UsageError
from kubectl_rollout.kube.holder_identity import holder_verdict, parse
from kubectl_rollout.kube.record_names import driver_lease_name
from kubectl_rollout.rollout import operations
from kubectl_rollout.rollout.actions import ActionKind, DriveOptions, RolloutAction, run_rollout_action
from kubectl_rollout.rollout.record import WorkloadNotFound, read


def workload(replicas: int, ready_after: str = "1s") -> dict[str, Any]:
    document = manifests.deployment("web", replicas=replicas, annotations={manifests.READY_AFTER: ready_after})
    document["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    return document


def shape(cluster: Cluster, namespace: str) -> list[tuple[int, int, str]]:
    found = []
    for rs in cluster.apps.list_namespaced_replica_set(namespace, label_selector="app=web").items:
        revision = int((rs.metadata.annotations or {}).get("deployment.kubernetes.io/revision", "0"))
        found.append((revision, rs.spec.replicas, rs.spec.template.spec.containers[0].image))
    return sorted(found)


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.changed = threading.Condition()

    def __call__(self, event: Event) -> None:
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def wait_for(self, kind: type[Event], timeout: float = 60) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: any(isinstance(e, kind) for e in self.events), timeout), kind


def record_undriven(cluster: Cluster, *, replicas: int) -> None:
    """Managed workload web recorded and not driven (``apply --no-wait``)."""
    recorded = run_rollout_action(
        cluster,
        RolloutAction(kind=ActionKind.APPLY, manifest=workload(replicas), drive=DriveOptions(wait=False)),
        JobContext(emit=Recorder()),
    )
    assert recorded.succeeded


def test_the_jsonl_stream_folds_into_what_the_cluster_holds(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump(workload(3)))
    assert run_plugin("apply", "-f", str(path), "-n", namespace, kubeconfig=kubeconfig).returncode == 0

    result = run_plugin(
        "set", "image", "web", "app=registry.example/app:v2", "-n", namespace, "-o", "jsonl", kubeconfig=kubeconfig
    )

    assert result.returncode == 0, result.stderr
    lines = events(result)
    assert len(lines) == len(result.stdout.splitlines())  # nothing but events on stdout
    view = fold_all(Envelope.from_dict(line) for line in lines)
    assert view.finished is not None
    assert view.finished.outcome is ev.RolloutOutcome.COMPLETE
    assert [(r.revision, r.desired) for r in reversed(view.rows)] == [(s[0], s[1]) for s in shape(cluster, namespace)]
    status = json.loads(run_plugin("status", "web", "-n", namespace, "-o", "json", kubeconfig=kubeconfig).stdout)
    assert {k.value: c.reason for k, c in view.conditions.items()} == {
        c["type"]: c["reason"] for c in status["status"]["conditions"]
    }


def test_a_cancelled_job_stops_between_passes_and_the_next_one_finishes_it(namespace: str, kubeconfig: Path) -> None:
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig), namespace=namespace))
    try:
        created = run_rollout_action(
            cluster, RolloutAction(kind=ActionKind.APPLY, manifest=workload(4, "2s")), JobContext(emit=Recorder())
        )
        assert created.outcome is ev.RolloutOutcome.COMPLETE

        fenceposts = RolloutInvariants(cluster, namespace).start()
        recorder, cancel = Recorder(), threading.Event()
        change = RolloutAction(
            kind=ActionKind.SET_IMAGE,
            name="web",
            images=(ev.ContainerImage(container="app", image="registry.example/app:v2"),),
        )
        outcome: list[ev.RolloutFinished] = []
        job = threading.Thread(
            target=lambda: outcome.append(run_rollout_action(cluster, change, JobContext(emit=recorder, cancel=cancel)))
        )
        job.start()
        recorder.wait_for(ev.ReplicaSetCreated)
        cancel.set()
        job.join(timeout=30)

        assert not job.is_alive()
        (finished,) = outcome
        assert finished.outcome is ev.RolloutOutcome.INTERRUPTED
        assert recorder.events[-1] == finished
        assert shape(cluster, namespace)[-1][2] == "registry.example/app:v2"
        assert shape(cluster, namespace) != [(1, 0, manifests.IMAGE), (2, 4, "registry.example/app:v2")]
        # The lease went with the job: the next one drives at once, it does not follow a ghost.
        follower = Recorder()
        watched = run_rollout_action(
            cluster, RolloutAction(kind=ActionKind.WATCH, name="web", drive=DriveOptions()), JobContext(emit=follower)
        )
        assert watched.outcome is ev.RolloutOutcome.COMPLETE
        assert not any(isinstance(e, ev.FollowingDriver) for e in follower.events)
        assert shape(cluster, namespace) == [(1, 0, manifests.IMAGE), (2, 4, "registry.example/app:v2")]
        # The fenceposts hold across the cancelled job and the one that took over.
        assert fenceposts.stop().breaches_of(4, 1, 0) == []
    finally:
        cluster.close()


def test_an_error_ends_the_job_with_its_reason(namespace: str, kubeconfig: Path) -> None:
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig), namespace=namespace))
    recorder = Recorder()
    try:
        with pytest.raises(WorkloadNotFound, match='managed workload "ghost" not found'):
            run_rollout_action(cluster, RolloutAction(kind=ActionKind.UNDO, name="ghost"), JobContext(emit=recorder))
    finally:
        cluster.close()
    (finished,) = recorder.events
    assert isinstance(finished, ev.RolloutFinished)
    assert finished.outcome is ev.RolloutOutcome.ERROR
    assert 'managed workload "ghost" not found' in finished.message


def test_a_job_resumed_under_its_runners_lease_identity_takes_the_lease_back_at_once(
    namespace: str, kubeconfig: Path
) -> None:
    """An agent killed mid-rollout leaves its Lease behind; restarted, it holds Leases under the same identity
    and so drives on at once, where any other driver follows until the Lease lapses."""
    from kubectl_rollout.kube.record_names import record_name
    from kubectl_rollout.kube.workload_lease import WorkloadLease

    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig), namespace=namespace))
    try:
        record_undriven(cluster, replicas=2)
        # The "killed" agent's driver: it took the Lease and never released it.
        dead = WorkloadLease(
            cluster, namespace, "web", "agent-of-this-user", lease_name=record_name("web"), subject="s", advice="a"
        )
        dead.acquire()

        stranger = Recorder()
        cancel = threading.Event()
        follower = threading.Thread(
            target=run_rollout_action,
            args=(cluster, RolloutAction(kind=ActionKind.WATCH, name="web"), JobContext(emit=stranger, cancel=cancel)),
        )
        follower.start()
        stranger.wait_for(ev.FollowingDriver, timeout=30)
        cancel.set()
        follower.join(30)

        resumed = Recorder()
        finished = run_rollout_action(
            cluster,
            RolloutAction(kind=ActionKind.WATCH, name="web", drive=DriveOptions(timeout=60)),
            JobContext(emit=resumed, lease_holder="agent-of-this-user"),
        )
    finally:
        cluster.close()
    assert finished.succeeded, finished.message
    assert not [e for e in resumed.events if isinstance(e, ev.FollowingDriver)], resumed.events


def test_a_cancel_right_after_the_pause_switch_writes_the_pause_still_says_the_workload_stays_paused(
    namespace: str, kubeconfig: Path
) -> None:
    """The cancel lands in the window between the driver's own pause write and its watch bringing that write
    back (a loaded agent met it): the workload is paused all the same, and the result must say so."""
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig), namespace=namespace))
    try:
        created = run_rollout_action(
            cluster, RolloutAction(kind=ActionKind.APPLY, manifest=workload(4, "2s")), JobContext(emit=Recorder())
        )
        assert created.outcome is ev.RolloutOutcome.COMPLETE
        paused, cancel = threading.Event(), threading.Event()

        class CancelOnThePauseWrite(Recorder):
            def __call__(self, event: Event) -> None:
                super().__call__(event)
                if isinstance(event, ev.ReplicaSetCreated):
                    paused.set()
                if isinstance(event, ev.SpecChanged) and event.change is ev.SpecChange.PAUSE:
                    cancel.set()  # before the driver's next pass: its watch has not brought the write back yet

        recorder = CancelOnThePauseWrite()
        change = RolloutAction(
            kind=ActionKind.SET_IMAGE,
            name="web",
            images=(ev.ContainerImage(container="app", image="registry.example/app:v2"),),
        )
        finished = run_rollout_action(cluster, change, JobContext(emit=recorder, cancel=cancel, paused=paused))

        assert any(isinstance(e, ev.SpecChanged) and e.change is ev.SpecChange.PAUSE for e in recorder.events)
        assert (finished.outcome, finished.paused) == (ev.RolloutOutcome.INTERRUPTED, True), finished
        assert 'workload "web" stays paused' in finished.message
        assert read(cluster, namespace, "web").spec.paused is True
    finally:
        cluster.close()


def test_a_change_refused_after_the_driver_took_the_free_lease_gives_it_back_and_changes_nothing(
    namespace: str, kubeconfig: Path
) -> None:
    """The driver takes a free Lease before the change is written; a change refused after that (a container the
    template does not have) gives it back: the record and the Lease are as they were."""
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig), namespace=namespace))
    try:
        record_undriven(cluster, replicas=2)
        record = cluster.core.read_namespaced_config_map("rollout-plus.web", namespace)
        leases = LeaseHistory(cluster, namespace, driver_lease_name("web")).start()
        change = RolloutAction(
            kind=ActionKind.SET_IMAGE,
            name="web",
            images=(ev.ContainerImage(container="sidecar", image="registry.example/app:v2"),),
        )
        with pytest.raises(UsageError, match='unable to find container named "sidecar"'):
            run_rollout_action(cluster, change, JobContext(emit=Recorder()))
        # Watched, not sampled: the Lease was taken (the free one, before the change) and given back.
        assert leases.wait(lambda: leases.deletions == 1, timeout=30), (leases.versions, leases.deletions)
        leases.stop()
        assert len(leases.versions) == 1, leases.versions
        with pytest.raises(client.ApiException) as gone:
            cluster.coordination.read_namespaced_lease(driver_lease_name("web"), namespace)
        assert gone.value.status == 404
        after = cluster.core.read_namespaced_config_map("rollout-plus.web", namespace)
        assert after.metadata.resource_version == record.metadata.resource_version
    finally:
        cluster.close()


def test_a_change_written_over_a_record_listed_before_another_writer_lands_on_the_current_record(
    namespace: str, kubeconfig: Path
) -> None:
    """A job whose Lease was free edits the record its driver just listed instead of reading it again; when
    someone wrote the record in between, the write conflicts and the change is made again on what is stored."""
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig), namespace=namespace))
    try:
        record_undriven(cluster, replicas=2)
        listed = read(cluster, namespace, "web")  # as the driver's list has it
        scaled = operations.scale(cluster, namespace, "web", 3, Recorder())  # another writer, after the list
        image = ev.ContainerImage(container="app", image="registry.example/app:v2")
        changed = operations.set_image(cluster, namespace, "web", (image,), Recorder(), known=listed)
        stored = read(cluster, namespace, "web")
        assert stored.spec.replicas == 3, "the other writer's change was lost"
        assert stored.manifest["spec"]["template"]["spec"]["containers"][0]["image"] == image.image
        assert changed.change.previous_generation == scaled.record.generation
        assert stored.generation == scaled.record.generation + 1
    finally:
        cluster.close()


def test_a_change_written_over_a_record_deleted_since_it_was_listed_says_the_workload_is_gone(
    namespace: str, kubeconfig: Path
) -> None:
    """The record is deleted between the driver's list and the change's write: the change says the workload was
    not found, as a change to a missing workload does, and creates nothing (no record comes back)."""
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig), namespace=namespace))
    try:
        record_undriven(cluster, replicas=2)
        listed = read(cluster, namespace, "web")  # as the driver's list has it
        cluster.core.delete_namespaced_config_map("rollout-plus.web", namespace)  # deleted after the list
        image = ev.ContainerImage(container="app", image="registry.example/app:v2")
        recorder = Recorder()
        with pytest.raises(WorkloadNotFound, match='managed workload "web" not found in namespace'):
            operations.set_image(cluster, namespace, "web", (image,), recorder, known=listed)
        assert recorder.events == []
        with pytest.raises(client.ApiException) as gone:
            cluster.core.read_namespaced_config_map("rollout-plus.web", namespace)
        assert gone.value.status == 404
    finally:
        cluster.close()


@pytest.mark.timeout(240)
def test_a_foreground_driver_killed_mid_rollout_is_taken_over_before_its_lease_lapses(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    """`set image` run in the foreground (no terminal) is SIGKILLed mid-rollout; `status -w` on the same machine
    sees that the Lease's holder process has ended and takes the Lease at once, before it would have lapsed
    (it used to wait that out: 19-22 s), and finishes the rollout within the fenceposts."""
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump(workload(6, "2s")))
    assert run_plugin("apply", "-f", str(path), "-n", namespace, kubeconfig=kubeconfig).returncode == 0
    fenceposts = RolloutInvariants(cluster, namespace).start()
    leases = LeaseHistory(cluster, namespace, driver_lease_name("web")).start()
    driver = RunningPlugin(
        "set", "image", "web", "app=registry.example/app:v2", "-n", namespace, "-o", "jsonl", kubeconfig=kubeconfig
    )
    watching.until(
        cluster.apps.list_namespaced_replica_set,
        lambda rs: rs.spec.template.spec.containers[0].image.endswith(":v2") and (rs.status.replicas or 0) >= 1,
        namespace=namespace,
        timeout=120,
        what="the new ReplicaSet to have pods",
    )
    driver.process.send_signal(signal.SIGKILL)
    killed = driver.finish(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert not any(line["type"] == "RolloutFinished" for line in events(killed)), "killed after the rollout ended"

    lease = cluster.coordination.read_namespaced_lease(driver_lease_name("web"), namespace)
    dead = lease.spec.holder_identity
    assert parse(dead) is not None, dead  # a process identity with its proof
    assert holder_verdict(dead).gone, holder_verdict(dead)
    lapses_at = lease.spec.renew_time + timedelta(seconds=lease.spec.lease_duration_seconds)

    connection = connect(ConnectionSettings(kubeconfig=str(kubeconfig), namespace=namespace))
    recorder = Recorder()
    try:
        finished = run_rollout_action(
            connection,
            RolloutAction(kind=ActionKind.WATCH, name="web", drive=DriveOptions(timeout=150)),
            JobContext(emit=recorder),
        )
    finally:
        connection.close()

    assert finished.outcome is ev.RolloutOutcome.COMPLETE, finished.message
    took = [e for e in recorder.events if isinstance(e, ev.TookOver)]
    assert len(took) == 1, recorder.events
    assert took[0].previous_holder == dead
    assert took[0].holder_ended.endswith("has ended"), took[0]
    assert not [e for e in recorder.events if isinstance(e, ev.FollowingDriver)], recorder.events
    # From the Lease itself: the next holder acquired it before the dead one's Lease would have lapsed.
    assert leases.wait(lambda: len(leases.holders()) >= 2, timeout=30), leases.versions
    leases.stop()
    holders = leases.holders()
    assert holders[:-1] == [dead], holders  # the dead driver's, then the one that took over, nobody between
    _, acquired, _, _ = next(version for version in leases.versions if version[0] == holders[-1])
    assert acquired < lapses_at, (acquired, lapses_at)
    print(f"took over {(lapses_at - acquired).total_seconds():.1f}s before the dead driver's Lease would lapse")
    assert fenceposts.stop().breaches_of(6, 1, 0) == []
    assert shape(cluster, namespace) == [(1, 0, manifests.IMAGE), (2, 6, "registry.example/app:v2")]
