"""Blue-green on managed workloads against the real control plane (issue 23).

Each test runs in its own namespace with an active and a preview Service that
select the workload's pods (``app: web``). The Services and the ReplicaSets
are watched from before the change until after it (``Timeline``), and the
watched history is what the tests check: when each Service's selector took
which ``pod-template-hash``, and that the active Service never selected a
ReplicaSet with a pod not available (events ordered by resourceVersion,
which one etcd orders across both watches). Where the rollout stands is read
from the record (the ConfigMap's ``blueGreen`` key).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
from integration.test_agent import _wait_gone, agent_dir
from integration.test_agent_rollouts import _follow
from integration.test_canary import plugin, write
from kubernetes import client
from plugin import RunningPlugin
from watching import Follower

from kubectl_rollout.agent.client import connect
from kubectl_rollout.agent.paths import AgentPaths
from kubectl_rollout.jobs.events import bluegreen as bev
from kubectl_rollout.jobs.events.job import JobFinished, JobStarted
from kubectl_rollout.jobs.events.rollout import ContainerImage
from kubectl_rollout.jobs.spec import ActionKind, Connection, JobKind, JobSpec, RolloutAction
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.record_names import record_name

__all__ = ["agent_dir"]  # the fixture, shared with test_agent.py

V2 = "registry.example/app:v2"
HASH = "pod-template-hash"


def workload(
    *, delay: str = "3s", preview: str | None = "web-preview", extra: dict[str, str] | None = None, replicas: int = 10
) -> dict[str, Any]:
    document = manifests.deployment(
        "web",
        replicas=replicas,
        annotations={manifests.READY_AFTER: "1s"},
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
    )
    annotations = {
        "rollout-plus.io/strategy": "blueGreen",
        "rollout-plus.io/active-service": "web",
        "rollout-plus.io/scale-down-delay": delay,
    }
    if preview is not None:
        annotations["rollout-plus.io/preview-service"] = preview
    document["metadata"]["annotations"] = {**annotations, **(extra or {})}
    return document


def create_service(cluster: Cluster, namespace: str, name: str, selector: dict[str, str] | None = None) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": selector or {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    cluster.core.create_namespaced_service(namespace, body)


def selected(cluster: Cluster, namespace: str, service: str) -> str:
    return str((cluster.core.read_namespaced_service(service, namespace).spec.selector or {}).get(HASH, ""))


def replica_sets(cluster: Cluster, namespace: str) -> dict[str, tuple[int, int, str]]:
    """Image -> (spec.replicas, availableReplicas, pod-template-hash) of the workload's ReplicaSets."""
    found = {}
    for rs in cluster.apps.list_namespaced_replica_set(namespace, label_selector="app=web").items:
        image = rs.spec.template.spec.containers[0].image
        available = (rs.status.available_replicas or 0) if rs.status else 0
        found[image] = (rs.spec.replicas or 0, available, rs.metadata.labels[HASH])
    return found


def counts(cluster: Cluster, namespace: str) -> dict[str, tuple[int, int]]:
    return {image: (spec, available) for image, (spec, available, _) in replica_sets(cluster, namespace).items()}


def state(cluster: Cluster, namespace: str) -> dict[str, Any]:
    config_map = cluster.core.read_namespaced_config_map(record_name("web"), namespace)
    return dict(json.loads((config_map.data or {}).get("blueGreen") or "{}"))


def until_state(cluster: Cluster, namespace: str, what: str, predicate: Any, timeout: float = 90) -> dict[str, Any]:
    found = watching.until(
        cluster.core.list_namespaced_config_map,
        lambda cm: predicate(json.loads((cm.data or {}).get("blueGreen") or "{}")),
        namespace=namespace,
        field_selector=f"metadata.name={record_name('web')}",
        timeout=timeout,
        what=what,
    )
    return dict(json.loads(found.data["blueGreen"]))


def created(cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, document: dict[str, Any]) -> str:
    """The workload applied (a first rollout), its active Service on the first ReplicaSet: that one's hash."""
    result = plugin(kubeconfig, namespace, "apply", "-f", str(write(tmp_path, document)))
    assert result.returncode == 0, result.stderr
    (first,) = replica_sets(cluster, namespace).values()
    assert first[:2] == (10, 10)
    # A first rollout has nothing to switch from: the active Service is pointed at the ReplicaSet once it is all
    # available (the job ended only after that).
    assert selected(cluster, namespace, "web") == first[2]
    return first[2]


def event_reasons(cluster: Cluster, namespace: str) -> set[str]:
    """The reasons of the Kubernetes Events on the workload's record (what kubectl describe lists)."""
    found = cluster.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={record_name('web')}")
    return {e.reason for e in found.items}


# --- watching the Services and the ReplicaSets ---------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    #: the object's resourceVersion (one etcd: ordered across both watches) and when the test received it
    version: int
    at: float
    kind: str
    name: str
    #: a Service: the hash its selector holds; a ReplicaSet: its own pod-template-hash
    hash: str
    replicas: int = 0
    available: int = 0


class _History(Follower):
    def __init__(self, cluster: Cluster, namespace: str, list_func: Any) -> None:
        super().__init__()
        self.namespace = namespace
        self.list_func = list_func
        self.seen: list[Seen] = []

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.list_func, {"namespace": self.namespace}

    def _seed(self, items: list[Any]) -> None:
        for obj in items:
            self._apply("ADDED", obj)

    def _apply(self, kind: str, obj: Any) -> None:
        if kind != "DELETED":
            self.seen.append(self._seen(obj))

    def _seen(self, obj: Any) -> Seen:
        raise NotImplementedError


class _Services(_History):
    def _seen(self, obj: Any) -> Seen:
        hash_ = str((obj.spec.selector or {}).get(HASH, ""))
        return Seen(int(obj.metadata.resource_version), time.time(), "Service", obj.metadata.name, hash_)


class _ReplicaSets(_History):
    def _seen(self, obj: Any) -> Seen:
        available = (obj.status.available_replicas or 0) if obj.status else 0
        return Seen(
            int(obj.metadata.resource_version),
            time.time(),
            "ReplicaSet",
            obj.metadata.name,
            (obj.metadata.labels or {}).get(HASH, ""),
            obj.spec.replicas or 0,
            available,
        )


class Timeline:
    """The namespace's Services and ReplicaSets, every version of them, from ``start`` until ``stop``."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.services = _Services(cluster, namespace, cluster.core.list_namespaced_service)
        self.replica_sets = _ReplicaSets(cluster, namespace, cluster.apps.list_namespaced_replica_set)

    def start(self) -> Timeline:
        self.services._follow()
        self.replica_sets._follow()
        return self

    def stop(self) -> None:
        self.services._end()
        self.replica_sets._end()

    def wait_selects(self, service: str, hash_: str, timeout: float = 60) -> Seen:
        def found() -> Seen | None:
            return next((s for s in self.services.seen if s.name == service and s.hash == hash_), None)

        assert self.services.wait(lambda: found() is not None, timeout=timeout), f"{service} never selected {hash_}"
        seen = found()
        assert seen is not None
        return seen

    def selections(self, service: str) -> list[Seen]:
        """Each change of what ``service`` selects, in order (its first version included)."""
        changes: list[Seen] = []
        for seen in sorted(self.services.seen, key=lambda s: s.version):
            if seen.name == service and (not changes or changes[-1].hash != seen.hash):
                changes.append(seen)
        return changes

    def of(self, hash_: str) -> list[Seen]:
        return sorted((s for s in self.replica_sets.seen if s.hash == hash_), key=lambda s: s.version)

    def active_breaches(self, service: str = "web") -> list[str]:
        """Every moment the active Service selected a ReplicaSet not at full availability (none, or one with a
        pod not available), in the order etcd wrote the changes."""
        breaches = []
        selecting = ""
        latest: dict[str, Seen] = {}
        for seen in sorted([*self.services.seen, *self.replica_sets.seen], key=lambda s: s.version):
            if seen.kind == "Service":
                if seen.name != service:
                    continue
                selecting = seen.hash
            else:
                latest[seen.hash] = seen
            rs = latest.get(selecting)
            if selecting and (rs is None or rs.replicas == 0 or rs.available < rs.replicas):
                breaches.append(f"{service} selects {selecting} at version {seen.version}: {rs}")
        return breaches


def until_endpoints(cluster: Cluster, namespace: str, service: str, pods: set[str]) -> None:
    """Until the Service's EndpointSlice lists exactly ``pods`` (10 endpoints fit one slice), by watching."""
    discovery = client.DiscoveryV1Api(cluster.core.api_client)
    watching.until(
        discovery.list_namespaced_endpoint_slice,
        lambda s: {e.target_ref.name for e in s.endpoints or [] if e.target_ref is not None} == pods,
        namespace=namespace,
        label_selector=f"kubernetes.io/service-name={service}",
        timeout=30,
        what=f"the EndpointSlice of Service {service} listing {sorted(pods)}",
    )


def pods_of(cluster: Cluster, namespace: str, hash_: str) -> set[str]:
    return {
        p.metadata.name for p in cluster.core.list_namespaced_pod(namespace, label_selector=f"{HASH}={hash_}").items
    }


def previewing(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, *, delay: str
) -> tuple[str, str, Timeline, Any]:
    """Services web and web-preview, the workload applied at v1, its Services and ReplicaSets watched from then
    on, and set image v2, which ends with the preview waiting for promote: (v1's hash, v2's, the timeline, set
    image's result)."""
    create_service(cluster, namespace, "web")
    create_service(cluster, namespace, "web-preview")
    v1 = created(cluster, namespace, kubeconfig, tmp_path, workload(delay=delay))
    timeline = Timeline(cluster, namespace).start()
    changed = plugin(kubeconfig, namespace, "set", "image", "web", f"app={V2}")
    assert changed.returncode == 0, changed.stderr
    return v1, replica_sets(cluster, namespace)[V2][2], timeline, changed


# --- promote ---------------------------------------------------------------------------------------------------


def test_promote_switches_the_active_service_and_the_old_replicaset_waits_out_the_delay(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    v1, v2, timeline, changed = previewing(cluster, namespace, kubeconfig, tmp_path, delay="3s")
    try:
        # The preview is at full size beside the stable ReplicaSet: the job ends there, waiting for promote.
        assert "blue-green: preview ready 10/10, waiting for promote" in changed.stdout
        assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (10, 10)}
        assert (selected(cluster, namespace, "web"), selected(cluster, namespace, "web-preview")) == (v1, v2)
        status = plugin(kubeconfig, namespace, "status", "web")
        assert "blue-green: preview ready 10/10, waiting for promote" in status.stdout
        # status -w finds no driver: it drives, says where the rollout stands, and ends where it waits.
        watched = plugin(kubeconfig, namespace, "status", "web", "-w")
        assert watched.returncode == 0, watched.stderr
        assert "blue-green: preview ready 10/10, waiting for promote" in watched.stdout

        promoted_at = time.time()
        promoting = RunningPlugin("promote", "web", "-n", namespace, kubeconfig=kubeconfig)
        try:
            switch = timeline.wait_selects("web", v2)
            # The real EndpointSlice controller follows the selector: the active Service's endpoints are the new
            # ReplicaSet's pods alone.
            until_endpoints(cluster, namespace, "web", pods_of(cluster, namespace, v2))
        finally:
            result = promoting.finish(timeout=120)
        assert result.returncode == 0, result.stderr
        assert "blue-green: active switched to ReplicaSet web-" in result.stdout
        assert "old scaled down in 3s" in result.stdout
        assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    finally:
        timeline.stop()
    recorded = state(cluster, namespace)
    assert recorded["promoted"]["by"]
    # The active Service switched once, at promote and not before; the preview (on the first ReplicaSet since
    # the first rollout) as soon as the new ReplicaSet existed, before any of its pods was available.
    assert [s.hash for s in timeline.selections("web")] == [v1, v2]
    assert switch.at >= promoted_at
    # The recorded time is written right after the switch (the watch delivers it within moments, even on a
    # busy machine): that is the moment the delay counts from.
    assert switch.at <= recorded["switched_at"] + 2.0
    assert [s.hash for s in timeline.selections("web-preview")] == [v1, v2]
    preview_switch = timeline.selections("web-preview")[1]
    first_available = next(s for s in timeline.of(v2) if s.available > 0)
    assert preview_switch.version < first_available.version
    # The old ReplicaSet kept its 10 replicas until the recorded switch + 3 s, then went to 0.
    old = timeline.of(v1)
    scaled = next(s for s in old if s.replicas < 10)
    assert all(s.replicas == 10 for s in old if s.version < scaled.version)
    assert scaled.replicas == 0
    assert scaled.at >= recorded["switched_at"] + 3.0, (scaled.at, recorded["switched_at"])
    print(f"\nold ReplicaSet scaled down {scaled.at - recorded['switched_at']:.2f} s after the recorded switch (3 s)")
    assert recorded["scaled_down_at"] >= recorded["switched_at"] + 3.0
    assert timeline.active_breaches() == []
    assert {"BlueGreenStarted", "ServiceSwitched", "PreviewReady", "Promoted", "ScaledDown"} <= event_reasons(
        cluster, namespace
    )
    reported = json.loads(plugin(kubeconfig, namespace, "status", "web", "-o", "json").stdout)
    assert reported["blueGreen"]["scaled_down_at"] == recorded["scaled_down_at"]


def test_a_small_preview_promotes_itself_and_grows_to_full_size_before_the_switch(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    create_service(cluster, namespace, "web")
    extra = {"rollout-plus.io/preview-replicas": "2", "rollout-plus.io/auto-promote": "2s"}
    v1 = created(cluster, namespace, kubeconfig, tmp_path, workload(delay="1s", preview=None, extra=extra))
    timeline = Timeline(cluster, namespace).start()
    try:
        changed = plugin(kubeconfig, namespace, "set", "image", "web", f"app={V2}")
        assert changed.returncode == 0, changed.stderr
        assert "blue-green: preview ready 2/2, promoting itself in 2s" in changed.stdout
        assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    finally:
        timeline.stop()
    recorded = state(cluster, namespace)
    assert recorded["promoted"]["by"] == "auto-promote"
    assert recorded["promoted"]["at"] >= recorded["ready_at"] + 2.0
    v2 = replica_sets(cluster, namespace)[V2][2]
    new = timeline.of(v2)
    # The preview held 2 replicas until promoted, then grew to 10; the active Service switched only once all 10
    # were available (active_breaches), and never to a ReplicaSet of 2.
    sizes = [s.replicas for s in new]
    assert set(sizes[: sizes.index(10)]) == {2}
    switch = timeline.selections("web")[1]
    assert switch.hash == v2
    assert max(s.version for s in new if s.available < 10) < switch.version
    assert timeline.active_breaches() == []
    assert [s.hash for s in timeline.selections("web")] == [v1, v2]


# --- abort, retry ----------------------------------------------------------------------------------------------


def test_abort_before_and_after_the_switch_goes_back_to_the_stable_and_retry_starts_again(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    v1, v2, timeline, _ = previewing(cluster, namespace, kubeconfig, tmp_path, delay="60s")
    try:
        # Abort before promote: the active Service never left the stable ReplicaSet; the preview goes to 0.
        aborted = plugin(kubeconfig, namespace, "abort", "web")
        assert aborted.returncode == 0, aborted.stderr
        assert "blue-green aborted" in aborted.stdout
        assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
        assert selected(cluster, namespace, "web") == v1
        assert "blue-green: aborted by " in plugin(kubeconfig, namespace, "status", "web").stdout
        refused = plugin(kubeconfig, namespace, "promote", "web")
        assert refused.returncode == 1
        assert "was aborted: start it again with kubectl rollout-plus retry web" in refused.stderr

        retried = plugin(kubeconfig, namespace, "retry", "web")
        assert retried.returncode == 0, retried.stderr
        assert "blue-green: preview ready 10/10, waiting for promote" in retried.stdout
        assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (10, 10)}

        # Promote, then abort during the 60 s delay: the active Service goes back to the stable ReplicaSet,
        # which was kept at full size for exactly this, and only then the new one goes to 0.
        promoting = RunningPlugin("promote", "web", "-n", namespace, kubeconfig=kubeconfig)
        try:
            timeline.wait_selects("web", v2)
            until_state(cluster, namespace, "the switch recorded", lambda s: s.get("stable") and "switched_at" in s)
            # A second operator follows the promote's driver: it sees the switch and the delay's end.
            followed = plugin(kubeconfig, namespace, "status", "web", "-w", "--timeout", "3s")
            assert "blue-green: active switched, old scaled down in " in followed.stdout, followed.stdout
            aborted = plugin(kubeconfig, namespace, "abort", "web")
        finally:
            result = promoting.finish(timeout=120)
        assert aborted.returncode == 0, aborted.stderr
        # The promote's driver carried the abort out.
        assert result.returncode == 1
        assert "blue-green aborted: the active Service web selects ReplicaSet" in result.stderr
        assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
        assert selected(cluster, namespace, "web") == v1
    finally:
        timeline.stop()
    assert [s.hash for s in timeline.selections("web")] == [v1, v2, v1]
    back = timeline.selections("web")[2]
    # Switched back before the new ReplicaSet lost a replica.
    shrinking = next(s for s in reversed(timeline.of(v2)) if s.replicas == 10)
    assert back.version < next(s for s in timeline.of(v2) if s.version > shrinking.version).version
    assert timeline.active_breaches() == []
    assert state(cluster, namespace)["aborted"]["by"]
    assert {"Aborted", "Retried", "ServiceSwitched"} <= event_reasons(cluster, namespace)


def test_undo_during_the_delay_is_a_blue_green_change_back_to_the_kept_replicaset(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    # The undo must land within the delay: a command's start took over 6 s once at load 9-12 (the promote ended
    # "promoted"); the promote back at the end waits the delay out.
    v1, v2, timeline, _ = previewing(cluster, namespace, kubeconfig, tmp_path, delay="20s")
    try:
        promoting = RunningPlugin("promote", "web", "-n", namespace, kubeconfig=kubeconfig)
        try:
            until_state(cluster, namespace, "the switch recorded", lambda s: s.get("stable") and "switched_at" in s)
            # Recorded only: the promote's driver carries it out (it watches the record).
            undone = plugin(kubeconfig, namespace, "undo", "web", "--no-wait")
            assert undone.returncode == 0, undone.stderr
        finally:
            result = promoting.finish(timeout=120)
        # The previous revision, kept through the delay, is the preview now: at full size at once, waiting.
        assert result.returncode == 0, result.stderr
        assert "blue-green: preview ready 10/10, waiting for promote" in result.stdout
        assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (10, 10)}
        assert (selected(cluster, namespace, "web"), selected(cluster, namespace, "web-preview")) == (v2, v1)
        assert state(cluster, namespace)["stable_pod_hash"] == v2
        back = plugin(kubeconfig, namespace, "promote", "web")
        assert back.returncode == 0, back.stderr
        assert counts(cluster, namespace) == {V2: (0, 0), manifests.IMAGE: (10, 10)}
    finally:
        timeline.stop()
    assert [s.hash for s in timeline.selections("web")] == [v1, v2, v1]
    assert timeline.active_breaches() == []


def test_an_active_service_deleted_mid_rollout_stops_the_switch_with_a_clear_error(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    v1, _, timeline, _ = previewing(cluster, namespace, kubeconfig, tmp_path, delay="3s")
    timeline.stop()
    cluster.core.delete_namespaced_service("web", namespace)
    result = plugin(kubeconfig, namespace, "promote", "web")
    assert result.returncode == 1
    assert 'its Service "web" is gone from namespace' in result.stderr
    assert "create it again (the rollout goes on from where it stands)" in result.stderr
    assert "Traceback" not in result.stderr
    # Nothing was scaled down: both revisions still at full size, the old one still serving what selects it.
    assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (10, 10)}
    assert "switched_at" not in state(cluster, namespace)
    # Created again (as it was, on the stable ReplicaSet), the rollout goes on from the recorded promote.
    create_service(cluster, namespace, "web", selector={"app": "web", HASH: v1})
    resumed = plugin(kubeconfig, namespace, "status", "web", "-w")
    assert resumed.returncode == 0, resumed.stderr
    assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}


def test_apply_flags_write_the_blue_green_annotations(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    create_service(cluster, namespace, "web")
    create_service(cluster, namespace, "web-preview")
    plain = manifests.deployment("web", replicas=10, annotations={manifests.READY_AFTER: "1s"})
    flags = ["--active-service", "web", "--preview-service", "web-preview", "--scale-down-delay", "90"]
    result = plugin(kubeconfig, namespace, "apply", "-f", str(write(tmp_path, plain)), *flags)
    assert result.returncode == 0, result.stderr
    manifest = json.loads(cluster.core.read_namespaced_config_map(record_name("web"), namespace).data["manifest"])
    assert manifest["metadata"]["annotations"] == {
        "rollout-plus.io/strategy": "blueGreen",
        "rollout-plus.io/active-service": "web",
        "rollout-plus.io/preview-service": "web-preview",
        "rollout-plus.io/scale-down-delay": "1m30s",
    }
    ((_, _, first),) = replica_sets(cluster, namespace).values()
    assert (selected(cluster, namespace, "web"), selected(cluster, namespace, "web-preview")) == (first, first)
    same = plugin(
        kubeconfig,
        namespace,
        "apply",
        "-f",
        str(write(tmp_path, plain)),
        "--active-service",
        "web",
        "--preview-service",
        "web",
    )
    assert same.returncode == 2, same.stderr
    assert "name the same Service 'web'" in same.stderr


# --- the agent SIGKILLed during the delay ------------------------------------------------------------------------


def test_the_agent_killed_during_the_delay_scales_down_at_the_recorded_time(
    agent_dir: AgentPaths, cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    create_service(cluster, namespace, "web")
    document = workload(delay="8s", preview=None, extra={"rollout-plus.io/auto-promote": "true"})
    v1 = created(cluster, namespace, kubeconfig, tmp_path, document)
    spec = JobSpec(
        kind=JobKind.ROLLOUT,
        connection=Connection(kubeconfig=(str(kubeconfig),), namespace=namespace),
        rollout=RolloutAction(
            kind=ActionKind.SET_IMAGE, name="web", images=(ContainerImage(container="app", image=V2),)
        ),
    )
    timeline = Timeline(cluster, namespace).start()
    try:
        with connect(agent_dir, name="test") as agent:
            pid = agent.agent["pid"]
            job = agent.submit(spec)
        # The first rollout recorded a switch too (no stable ReplicaSet): this one has a stable ReplicaSet.
        switched = until_state(
            cluster, namespace, "the switch recorded", lambda s: s.get("stable") and "switched_at" in s
        )
        # Kill it 3 s into the 8 s delay (a point in time, not a wait for something to happen).
        threading.Event().wait(max(0.0, switched["switched_at"] + 3 - time.time()))
        killed_at = time.time()
        os.kill(pid, signal.SIGKILL)
        assert _wait_gone(pid, 10)
        with connect(agent_dir, name="test") as agent:
            assert agent.agent["pid"] != pid  # a new agent: it resumes the job
        done = until_state(cluster, namespace, "the old ReplicaSet scaled down", lambda s: "scaled_down_at" in s)
        seen = _follow(agent_dir, job.id)
    finally:
        timeline.stop()
    finished = seen[-1].event
    assert isinstance(finished, JobFinished)
    assert (finished.state, finished.exit_code) == ("succeeded", 0), finished
    assert counts(cluster, namespace) == {V2: (10, 10), manifests.IMAGE: (0, 0)}
    assert done["promoted"]["by"] == "auto-promote"
    old = timeline.of(v1)
    scaled = next(s for s in old if s.replicas < 10)
    took = scaled.at - switched["switched_at"]
    into = killed_at - switched["switched_at"]
    resumed = next(e.at for e in seen if isinstance(e.event, JobStarted) and e.event.resumed)
    print(
        f"\nthe 8 s delay took {took:.2f} s (seen by watch), across a SIGKILL of the agent {into:.2f} s into it; "
        f"the resumed job started {resumed - switched['switched_at']:.2f} s after the switch"
    )
    # Counted from the recorded switch: 8 s after it, not a full 8 s after the kill or the restart (the restart of
    # the agent alone takes seconds on a busy machine, so that is the bound that says it).
    assert 8.0 <= took < min(into, resumed - switched["switched_at"]) + 8.0
    assert all(s.replicas == 10 for s in old if s.version < scaled.version)
    assert len([e for e in seen if isinstance(e.event, bev.OldScaledDown)]) == 1
    assert timeline.active_breaches() == []


# --- bad input: clear errors, nothing changed ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "words"),
    [
        (
            {"rollout-plus.io/active-service": "missing"},
            'its active Service "missing" (rollout-plus.io/active-service) does not exist in namespace',
        ),
        ({"rollout-plus.io/preview-service": "web"}, "name the same Service 'web'"),
        ({"rollout-plus.io/steps": "setWeight 10; pause"}, "canary steps (rollout-plus.io/steps) and blue-green"),
        (
            {"rollout-plus.io/active-service": "other"},
            'its active Service "other" selects app=other, which the workload\'s pods (labels app=web) do not carry',
        ),
    ],
)
def test_bad_blue_green_input_is_refused_before_anything_is_written(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, annotations: dict[str, str], words: str
) -> None:
    create_service(cluster, namespace, "web")
    create_service(cluster, namespace, "web-preview")
    create_service(cluster, namespace, "other", selector={"app": "other"})
    bad = workload(extra=annotations)
    # A new workload: no record, no ReplicaSet.
    result = plugin(kubeconfig, namespace, "apply", "-f", str(write(tmp_path, bad, "bad.yaml")))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith('error: workload "web"'), result.stderr
    assert words in result.stderr
    assert "nothing was changed" in result.stderr
    assert "Traceback" not in result.stderr
    names = [cm.metadata.name for cm in cluster.core.list_namespaced_config_map(namespace).items]
    assert record_name("web") not in names
    assert replica_sets(cluster, namespace) == {}
    # An existing workload: its record and its Services stay as they were.
    v1 = created(cluster, namespace, kubeconfig, tmp_path, workload())
    before = cluster.core.read_namespaced_config_map(record_name("web"), namespace).metadata.resource_version
    bad["spec"]["template"]["spec"]["containers"][0]["image"] = V2
    result = plugin(kubeconfig, namespace, "apply", "-f", str(write(tmp_path, bad, "bad.yaml")))
    assert result.returncode == 2, result.stderr
    assert words in result.stderr
    after = cluster.core.read_namespaced_config_map(record_name("web"), namespace).metadata.resource_version
    assert after == before
    assert counts(cluster, namespace) == {manifests.IMAGE: (10, 10)}
    assert (selected(cluster, namespace, "web"), selected(cluster, namespace, "other")) == (v1, "")
