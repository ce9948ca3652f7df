"""Client-side rollouts of managed workloads, against the real control plane.

The plugin runs as a separate process; a watch follows every pod throughout
and proves the fenceposts: never more than replicas + maxSurge pods, never
fewer than replicas - maxUnavailable Ready. Where it says so, the same
manifest also runs as a real Deployment (the server's controller) in another
namespace and the two end states are compared.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching
import yaml
from cluster_setup import create_namespace
from condition_history import ConditionHistory
from invariants import PodCensus, RolloutInvariants
from kubernetes import client
from plugin import events, run_plugin
from timeline import Timeline

from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.rollout.replica_math import max_unavailable

#: Side by side with the Deployment controller and watched for every fencepost: run one at a time on a cluster
#: of their own (hack/run-suite.sh, a serial stream), so that no other test's pods share its controllers.
pytestmark = pytest.mark.serial


def workload(
    name: str,
    replicas: int,
    *,
    surge: int | str | None = None,
    unavailable: int | str | None = None,
    recreate: bool = False,
    ready_after: str = "1s",
    extra: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    document = manifests.deployment(
        name, replicas=replicas, annotations={manifests.READY_AFTER: ready_after, **(extra or {})}
    )
    if recreate:
        document["spec"]["strategy"] = {"type": "Recreate"}
    elif surge is not None or unavailable is not None:
        rolling: dict[str, Any] = {}
        if surge is not None:
            rolling["maxSurge"] = surge
        if unavailable is not None:
            rolling["maxUnavailable"] = unavailable
        document["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": rolling}
    document["spec"].update(spec)
    return document


def apply(
    kubeconfig: Path, namespace: str, document: dict[str, Any], tmp_path: Path, *args: str, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"{document['metadata']['name']}-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump(document))
    return run_plugin("apply", "-f", str(path), "-n", namespace, *args, kubeconfig=kubeconfig, timeout=timeout)


def start_apply(kubeconfig: Path, namespace: str, document: dict[str, Any], tmp_path: Path) -> subprocess.Popen[str]:
    """`apply` in the background: a driver the test can pause around, follow or kill."""
    path = tmp_path / f"{document['metadata']['name']}-background.yaml"
    path.write_text(yaml.safe_dump(document))
    command = [
        sys.executable,
        "-m",
        "kubectl_rollout",
        "apply",
        "-f",
        str(path),
        "-n",
        namespace,
        "--kubeconfig",
        str(kubeconfig),
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def with_image(document: dict[str, Any], image: str) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return changed


def replica_sets(cluster: Cluster, namespace: str, app: str) -> dict[str, tuple[int, int, str]]:
    """name -> (revision, spec.replicas, image)"""
    found = {}
    for rs in cluster.apps.list_namespaced_replica_set(namespace, label_selector=f"app={app}").items:
        revision = int((rs.metadata.annotations or {}).get("deployment.kubernetes.io/revision", "0"))
        found[rs.metadata.name] = (revision, rs.spec.replicas, rs.spec.template.spec.containers[0].image)
    return found


def shape(cluster: Cluster, namespace: str, app: str) -> list[tuple[int, int, str]]:
    """ReplicaSets as (revision, replicas, image), names aside: comparable between controller and plugin."""
    return sorted(replica_sets(cluster, namespace, app).values())


@pytest.fixture
def twin(cluster: Cluster, namespace: str) -> Any:
    """A second namespace where the server's own Deployment controller runs the same manifest."""
    name = f"{namespace[:50]}-ctl"
    create_namespace(cluster, name)
    yield name
    cluster.core.delete_namespace(name)


def controller_rollout(cluster: Cluster, namespace: str, document: dict[str, Any], image: str | None = None) -> None:
    name = document["metadata"]["name"]
    if image is None:
        cluster.apps.create_namespaced_deployment(namespace, document)
    else:
        cluster.apps.patch_namespaced_deployment(
            name, namespace, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
        )
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: (
            d.metadata.name == name
            and d.status.observed_generation == d.metadata.generation
            and d.status.updated_replicas == d.spec.replicas
            and d.status.replicas == d.spec.replicas
            and (d.status.available_replicas or 0) == d.spec.replicas
        ),
        namespace=namespace,
        timeout=120,
        what=f"the controller's rollout of {name}",
    )


ROOT = Path(__file__).resolve().parents[2]


class SideBySide:
    """One scenario twice: driven by the plugin in ``ours``, by the server's controller in ``theirs``.

    ``watch`` starts RolloutInvariants on each side, which follow the pods and ReplicaSets throughout;
    ``compare`` checks the fenceposts on both (the controller's side is the control that the watch is right)
    and that both end in the same state (``same_state``).
    """

    def __init__(self, cluster: Cluster, ours: str, theirs: str, kubeconfig: Path, tmp_path: Path) -> None:
        self.cluster, self.ours, self.theirs = cluster, ours, theirs
        self.kubeconfig, self.tmp_path = kubeconfig, tmp_path
        self.census: list[RolloutInvariants] = []

    def watch(self) -> None:
        self.census = [RolloutInvariants(self.cluster, ns).start() for ns in (self.ours, self.theirs)]

    def _settle_theirs(self) -> None:
        def settled(d: Any) -> bool:
            s = d.status
            if d.metadata.name != "web" or s is None or s.observed_generation != d.metadata.generation:
                return False
            reasons = {c.type: c.reason for c in s.conditions or []}
            if d.spec.paused or reasons.get("Progressing") == "ProgressDeadlineExceeded":
                return True
            return bool(
                s.updated_replicas == d.spec.replicas
                and s.replicas == d.spec.replicas
                and (s.available_replicas or 0) == d.spec.replicas
                and (s.ready_replicas or 0) == d.spec.replicas
                and reasons.get("Progressing") in (None, "NewReplicaSetAvailable")
            )

        watching.until(
            self.cluster.apps.list_namespaced_deployment,
            settled,
            namespace=self.theirs,
            timeout=120,
            what="the controller's rollout",
        )

    def change_theirs(self, change: Callable[[Any], None]) -> None:
        """Read, change and write back the controller's Deployment, again on a conflict: the controller writes
        its status meanwhile (client-go's RetryOnConflict, as kubectl's edits do)."""
        for _attempt in range(10):
            current = self.cluster.apps.read_namespaced_deployment("web", self.theirs)
            change(current)
            try:
                self.cluster.apps.replace_namespaced_deployment("web", self.theirs, current)
                return
            except client.ApiException as err:
                if err.status != 409:
                    raise
        raise AssertionError(f"deployment web in {self.theirs}: still a conflict after 10 writes")

    def change_template(self, document: dict[str, Any]) -> None:
        """The controller's Deployment gets ``document``'s pod template, and nothing else."""

        def change(current: Any) -> None:
            template = document["spec"]["template"]
            current.spec.template = self.cluster.api_client.deserialize(_Raw(template), "V1PodTemplateSpec")

        self.change_theirs(change)

    def apply(self, document: dict[str, Any], *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        """The same change on both sides at the same time: the controller's is only written (it rolls out on
        its own), then ours runs to its end, then the controller's is awaited."""

        def change(current: Any) -> None:
            current.spec = self.cluster.api_client.deserialize(_Raw(document["spec"]), "V1DeploymentSpec")
            current.metadata.annotations = document["metadata"].get("annotations")

        try:
            self.change_theirs(change)
        except client.ApiException as err:
            if err.status != 404:
                raise
            self.cluster.apps.create_namespaced_deployment(self.theirs, document)
        result = apply(self.kubeconfig, self.ours, document, self.tmp_path, *args)
        assert result.returncode == expect, result.stderr
        if "--no-wait" not in args:
            self._settle_theirs()
        return result

    def kubectl(self, *args: str) -> None:
        done = subprocess.run(
            [str(ROOT / ".bin" / "kubectl"), "--kubeconfig", str(self.kubeconfig), "-n", self.theirs, *args],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr

    def undo(self, to_revision: int = 0) -> None:
        """Both sides at the same time, as ``apply``: kubectl's undo only writes the spec."""
        self.kubectl("rollout", "undo", "deployment/web", *[f"--to-revision={to_revision}"] * bool(to_revision))
        extra = ["--to-revision", str(to_revision)] if to_revision else []
        ours = run_plugin("undo", "web", *extra, "-n", self.ours, kubeconfig=self.kubeconfig)
        assert ours.returncode == 0, ours.stderr
        self._settle_theirs()

    def compare(self, replicas: int, surge: int | str, unavailable: int | str, *, recreate_race: bool = False) -> None:
        """The fenceposts as watched on both sides, then ``same_state``."""
        for census in self.census:
            census.stop()
        ours, theirs = self.census
        # maxSurge bounds pods on our side: the driver counts an old ReplicaSet's pods until they are
        # marked for deletion. The server's controller bounds spec.replicas only and grows the new
        # ReplicaSet while the old pods are still being deleted (CI saw 8 pods for 5 + 2 there).
        assert ours.breaches_of(replicas, surge, unavailable) == []
        assert theirs.breaches_of(replicas, surge, unavailable, count_pods=False) == []
        self.same_state(recreate_race=recreate_race)

    def status(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Both sides' status as comparable as two clusters' objects can be (``comparable_status``)."""
        listed = run_plugin("status", "web", "-n", self.ours, "-o", "json", kubeconfig=self.kubeconfig)
        ours = json.loads(listed.stdout)["status"]
        theirs = self.cluster.api_client.sanitize_for_serialization(
            self.cluster.apps.read_namespaced_deployment("web", self.theirs).status
        )
        return (
            comparable_status(self.cluster, self.ours, ours),
            comparable_status(self.cluster, self.theirs, theirs),
        )

    def same_state(self, *, recreate_race: bool = False) -> None:
        """ReplicaSets (revision, replicas, image, desired-replicas and max-replicas annotations), status
        counts, observedGeneration and conditions (type, status, reason, message) are the same on both sides.

        ``recreate_race``: the Progressing message may name either ReplicaSet. When a Recreate creates its new
        ReplicaSet, the controller writes "Created new replica set" from a Deployment its informer may not
        have caught up with (getNewReplicaSet); when that write conflicts, the condition stays the previous
        rollout's NewReplicaSetAvailable, and since a Recreate never has old and new pods together
        (replicas == updatedReplicas throughout) syncRolloutStatus never rewrites it: on a loaded machine
        the controller ends naming the previous ReplicaSet. Everything else must still be equal.
        """
        assert annotated_shape(self.cluster, self.ours, "web", every=True) == annotated_shape(
            self.cluster, self.theirs, "web", every=True
        )
        ours, theirs = self.status()
        if recreate_race:
            for status in (ours, theirs):
                state, reason, message = status["conditions"]["Progressing"]
                status["conditions"]["Progressing"] = (state, reason, re.sub(r"revision \d+", "revision ?", message))
        assert ours == theirs


STATUS_COUNTS = (
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
)


def comparable_status(cluster: Cluster, namespace: str, status: dict[str, Any]) -> dict[str, Any]:
    """A Deployment-shaped status (camelCase), times aside and the names that differ between two namespaces
    made alike: each ReplicaSet becomes ``<ReplicaSet of revision N>``, its pods ``<pod of revision N>``, the
    namespace ``<namespace>``. The rest of every message must read as the controller writes it."""
    names = {
        rs.metadata.name: int((rs.metadata.annotations or {}).get("deployment.kubernetes.io/revision", "0"))
        for rs in cluster.apps.list_namespaced_replica_set(namespace, label_selector="app=web").items
    }

    def plain(message: str) -> str:
        for name, revision in sorted(names.items(), key=lambda item: -len(item[0])):
            message = re.sub(rf"\b{re.escape(name)}-[a-z0-9]{{5}}\b", f"<pod of revision {revision}>", message)
            message = re.sub(rf"\b{re.escape(name)}(?![a-z0-9])-?", f"<ReplicaSet of revision {revision}>", message)
        # A ReplicaSet the API server refused has no object to name it; its name is web-HASH all the same.
        message = re.sub(r"\bweb-[a-z0-9]+\b", "<ReplicaSet not created>", message)
        return message.replace(namespace, "<namespace>")

    return {
        **{count: status.get(count) or 0 for count in STATUS_COUNTS},
        "conditions": {
            c["type"]: (c["status"], c.get("reason"), plain(c.get("message") or ""))
            for c in status.get("conditions") or []
        },
    }


class _Raw:
    """What the client's deserializer expects: an object with a JSON ``data``."""

    def __init__(self, body: Any) -> None:
        self.data = json.dumps(body)


@pytest.fixture
def both(cluster: Cluster, namespace: str, twin: str, kubeconfig: Path, tmp_path: Path) -> SideBySide:
    return SideBySide(cluster, namespace, twin, kubeconfig, tmp_path)


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable"),
    [(6, 2, 1), (8, "25%", "25%"), (5, 0, 2), (5, 2, 0)],
    ids=["absolute", "percent", "max-surge-0", "max-unavailable-0"],
)
def test_rolling_update_side_by_side_with_the_controller(
    both: SideBySide, replicas: int, surge: int | str, unavailable: int | str
) -> None:
    document = workload("web", replicas, surge=surge, unavailable=unavailable)
    created = both.apply(document)
    assert 'deployment "web" successfully rolled out' in created.stdout
    both.watch()
    both.apply(with_image(document, "registry.example/app:v2"))
    both.compare(replicas, surge, unavailable)
    assert shape(both.cluster, both.ours, "web") == [(1, 0, manifests.IMAGE), (2, replicas, "registry.example/app:v2")]


def test_recreate_side_by_side_never_runs_old_and_new_pods_together(both: SideBySide) -> None:
    # Issue 12 item 5: Recreate counts maxUnavailable 0 for Available, so both sides go Available False when
    # the old pods go and True again only when every new one is available; watched on both, write by write.
    # The old pods ignore SIGTERM and linger for their 2 s grace period: Recreate must wait them out too (the
    # census counts terminating pods as running), not only until they are marked for deletion.
    document = workload("web", 4, recreate=True, extra={manifests.ON_SIGTERM: "ignore"})
    document["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 2
    both.apply(document)
    both.watch()
    available = [
        ConditionHistory(both.cluster, namespace, "web", "Available", managed=managed).start()
        for namespace, managed in ((both.ours, True), (both.theirs, False))
    ]
    both.apply(with_image(document, "registry.example/app:v2"))
    ours, theirs = both.census
    both.compare(4, 0, 4, recreate_race=True)
    assert not ours.pods.templates_together
    assert not theirs.pods.templates_together
    assert (
        available[0].stop()
        == available[1].stop()
        == [
            ("True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
            ("False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
            ("True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
        ]
    )
    assert shape(both.cluster, both.ours, "web") == [(1, 0, manifests.IMAGE), (2, 4, "registry.example/app:v2")]


def test_recreate_is_not_held_back_by_a_pod_it_does_not_own(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    # Issue 12 item 7: a bare pod matching the selector is not one of the workload's; oldPodsRunning counts
    # only pods its ReplicaSets control, so Recreate goes on (it waited forever).
    document = workload("web", 2, recreate=True)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    stray = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stray", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": manifests.IMAGE}]},
    }
    cluster.core.create_namespaced_pod(namespace, stray)
    result = apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path, "--timeout", "60s")
    assert result.returncode == 0, result.stderr
    assert shape(cluster, namespace, "web") == [(1, 0, manifests.IMAGE), (2, 2, "registry.example/app:v2")]
    assert cluster.core.read_namespaced_pod("stray", namespace).metadata.deletion_timestamp is None


def test_undo_and_undo_to_revision_side_by_side(both: SideBySide) -> None:
    document = workload("web", 3, surge=1, unavailable=0)
    both.apply(document)
    both.watch()
    both.apply(with_image(document, "registry.example/app:v2"))
    both.apply(with_image(document, "registry.example/app:v3"))
    both.undo()
    both.undo(to_revision=1)
    both.compare(3, 1, 0)
    assert shape(both.cluster, both.ours, "web") == [
        (3, 0, "registry.example/app:v3"),
        (4, 0, "registry.example/app:v2"),
        (5, 3, manifests.IMAGE),
    ]


def with_cause(document: dict[str, Any], cause: str) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    changed["metadata"].setdefault("annotations", {})["kubernetes.io/change-cause"] = cause
    return changed


def causes(cluster: Cluster, namespace: str) -> list[tuple[int, str | None]]:
    """(revision, change-cause) of each ReplicaSet of app=web, as kubectl rollout history reads them."""
    return sorted(
        (
            int((rs.metadata.annotations or {}).get("deployment.kubernetes.io/revision", "0")),
            (rs.metadata.annotations or {}).get("kubernetes.io/change-cause"),
        )
        for rs in cluster.apps.list_namespaced_replica_set(namespace, label_selector="app=web").items
    )


def test_undo_takes_the_revisions_change_cause_and_refuses_what_kubectl_refuses_side_by_side(
    both: SideBySide,
) -> None:
    # Issue 12 item 6.
    document = workload("web", 2, surge=1, unavailable=0)
    both.apply(with_cause(document, "first"))
    both.watch()
    both.apply(with_cause(with_image(document, "registry.example/app:v2"), "second"))
    # An annotation-only edit reaches the current ReplicaSet (copyDeploymentAnnotationsToReplicaSet).
    both.apply(with_cause(with_image(document, "registry.example/app:v2"), "second, annotated"))
    # Undo copies the revision's annotations back (kubectl rollback.go): revision 3 carries "first" again.
    both.undo()
    both.compare(2, 1, 0)
    assert (
        causes(both.cluster, both.ours) == causes(both.cluster, both.theirs) == [(2, "second, annotated"), (3, "first")]
    )
    history = run_plugin("history", "web", "-n", both.ours, kubeconfig=both.kubeconfig)
    assert history.returncode == 0, history.stderr
    assert history.stdout.splitlines()[-2:] == ["2         second, annotated", "3         first"]

    # Undo to the current template changes nothing and says so as kubectl does.
    skipped = run_plugin("undo", "web", "--to-revision", "3", "-n", both.ours, kubeconfig=both.kubeconfig)
    assert skipped.returncode == 0, skipped.stderr
    assert "workload/web skipped rollback (current template already matches revision 3)" in skipped.stdout
    kubectl = subprocess.run(
        [
            str(ROOT / ".bin" / "kubectl"),
            *("--kubeconfig", str(both.kubeconfig), "-n", both.theirs),
            *("rollout", "undo", "deployment/web", "--to-revision=3"),
        ],
        capture_output=True,
        text=True,
    )
    assert "skipped rollback (current template already matches revision 3)" in kubectl.stdout

    # Undo of a paused workload is refused, as kubectl refuses it; nothing changes.
    assert run_plugin("pause", "web", "-n", both.ours, kubeconfig=both.kubeconfig).returncode == 0
    before = both.cluster.core.read_namespaced_config_map("rollout-plus.web", both.ours).metadata.resource_version
    refused = run_plugin("undo", "web", "-n", both.ours, kubeconfig=both.kubeconfig)
    assert refused.returncode != 0
    assert "you cannot roll back a paused workload" in refused.stderr
    assert "kubectl rollout-plus resume web" in refused.stderr
    after = both.cluster.core.read_namespaced_config_map("rollout-plus.web", both.ours).metadata.resource_version
    assert after == before


def test_history_cleanup_side_by_side(both: SideBySide) -> None:
    document = workload("web", 2, surge=1, unavailable=0, revisionHistoryLimit=1)
    both.apply(document)
    both.watch()
    for version in ("v2", "v3", "v4"):
        both.apply(with_image(document, f"registry.example/app:{version}"))
    both.compare(2, 1, 0)
    assert shape(both.cluster, both.ours, "web") == [
        (3, 0, "registry.example/app:v3"),
        (4, 2, "registry.example/app:v4"),
    ]


def test_history_cleanup_after_undo_keeps_revisions_not_creation_order_side_by_side(both: SideBySide) -> None:
    # Issue 12 item 3: revisionHistoryLimit 1; v1, v2, undo (v1's ReplicaSet becomes revision 3), v4. The
    # controller deletes by revision: revision 2 (v2) goes, revision 3 (v1's, the oldest ReplicaSet) stays, and
    # the next undo returns to v1. Deleting by creation time kept v2, and that undo went to the wrong image.
    document = workload("web", 2, surge=1, unavailable=0, revisionHistoryLimit=1)
    both.apply(document)
    both.watch()
    both.apply(with_image(document, "registry.example/app:v2"))
    both.undo()
    both.apply(with_image(document, "registry.example/app:v4"))
    assert (
        shape(both.cluster, both.ours, "web")
        == shape(both.cluster, both.theirs, "web")
        == [(3, 0, manifests.IMAGE), (4, 2, "registry.example/app:v4")]
    )
    both.undo()
    both.compare(2, 1, 0)
    assert shape(both.cluster, both.ours, "web") == [(4, 0, "registry.example/app:v4"), (5, 2, manifests.IMAGE)]


def test_a_paused_workload_scaled_to_zero_scales_up_again_side_by_side(both: SideBySide) -> None:
    # Issue 12 item 4: pause, scale to 0, scale to 3. With no active ReplicaSet no annotation says "scaling
    # event", but the controller's paused sync still scales the newest ReplicaSet (FindActiveOrLatest).
    document = workload("web", 2)
    both.apply(document)
    both.watch()
    assert run_plugin("pause", "web", "-n", both.ours, kubeconfig=both.kubeconfig).returncode == 0
    both.cluster.apps.patch_namespaced_deployment("web", both.theirs, {"spec": {"paused": True}})
    for size in (0, 3):
        scaled = run_plugin("scale", "web", "--replicas", str(size), "-n", both.ours, kubeconfig=both.kubeconfig)
        assert scaled.returncode == 0, scaled.stderr
        both.cluster.apps.patch_namespaced_deployment("web", both.theirs, {"spec": {"replicas": size}})
        for namespace in (both.ours, both.theirs):
            until_shape(both.cluster, namespace, [(1, size, manifests.IMAGE)], f"web at {size} in {namespace}")
    watching.until(
        both.cluster.apps.list_namespaced_replica_set,
        lambda rs: (rs.status.available_replicas or 0) == 3,
        namespace=both.ours,
        timeout=60,
        what="3 pods available again",
    )


def annotated_shape(
    cluster: Cluster, namespace: str, app: str, *, every: bool = False
) -> list[tuple[int, int, str, str | None, str | None]]:
    """(revision, replicas, image, desired-replicas, max-replicas) of the active ReplicaSets (``every``: of
    all of them), names aside."""
    found = []
    for rs in cluster.apps.list_namespaced_replica_set(namespace, label_selector=f"app={app}").items:
        annotations = rs.metadata.annotations or {}
        if rs.spec.replicas or every:
            found.append(
                (
                    int(annotations.get("deployment.kubernetes.io/revision", "0")),
                    rs.spec.replicas,
                    rs.spec.template.spec.containers[0].image,
                    annotations.get("deployment.kubernetes.io/desired-replicas"),
                    annotations.get("deployment.kubernetes.io/max-replicas"),
                )
            )
    return sorted(found)


def until_shape(cluster: Cluster, namespace: str, expected: list[tuple[int, int, str]], what: str) -> None:
    """Watch the ReplicaSets of app=web until (revision, replicas, image) of each is ``expected``."""

    def reached(items: list[Any]) -> bool:
        got = sorted(
            (
                int((rs.metadata.annotations or {}).get("deployment.kubernetes.io/revision", "0")),
                rs.spec.replicas,
                rs.spec.template.spec.containers[0].image,
            )
            for rs in items
        )
        return got == expected

    watching.until_collection(
        cluster.apps.list_namespaced_replica_set,
        reached,
        namespace=namespace,
        label_selector="app=web",
        timeout=60,
        what=what,
    )


# Issue 12 item 1. 4 replicas, maxSurge 2, maxUnavailable 3, v2 pods never Ready: both sides stop at
# v1 1 / v2 4 (v2 at full size, none of it available). The resize is spread by sync.go scale and the rolling
# update then goes as far as it can; the new size and the shape both sides reach, worked out by hand:
MID_ROLLOUT_RESIZES = {
    # allowed 5 + 2 = 7 for 5 replicas: v2 4 * 7 / 6 = 4.67 -> 5, v1 1 * 7 / 6 -> 1 (same size, but annotated
    # 5 / 7 all the same), the leftover 1 to the largest: v2 6; then reconcileNewReplicaSet: v2 6 -> 5, once.
    # With v1's annotations left at 4 / 6 the next pass saw a scaling event again and v2 went 5 -> 6 -> 5 ...
    5: [(1, 1, manifests.IMAGE), (2, 5, "registry.example/app:v2")],
    # allowed 2 + 2 = 4 for 5 replicas: v2 4 * 4 / 6 = 2.67 -> 3, v1 unchanged; then v2 3 -> 2 and v1 1 -> 0
    # (maxUnavailable 3 of 2 replicas lets both go unavailable).
    2: [(1, 0, manifests.IMAGE), (2, 2, "registry.example/app:v2")],
}


@pytest.mark.parametrize("new_size", [5, 2], ids=["up", "down"])
def test_scale_mid_rollout_side_by_side(both: SideBySide, new_size: int) -> None:
    # Both sides are mid-rollout when the resize lands: a driver runs on ours, the controller on theirs, and
    # the v2 pods never become Ready, so both stop at the same shape and stay there while the resize is
    # spread, however long the machine takes to get the resize to both. (A delay of 30 s was a race: on a
    # loaded machine the controller's v2 pods turned Ready first and its rollout moved past the shape.) Then
    # v3 (Ready at once) finishes both, scaling the never-Ready v2 down.
    document = workload("web", 4, surge=2, unavailable=3, ready_after="1s")
    both.apply(document)
    both.watch()
    v2 = with_image(document, "registry.example/app:v2")
    v2["spec"]["template"]["metadata"]["annotations"][manifests.BEHAVIOUR] = "never-ready"
    driver = start_apply(both.kubeconfig, both.ours, v2, both.tmp_path)
    both.change_template(v2)
    stalled = [(1, 1, manifests.IMAGE), (2, 4, "registry.example/app:v2")]
    for namespace in (both.ours, both.theirs):
        until_shape(both.cluster, namespace, stalled, f"the rollout in {namespace} to wait for the v2 pods")

    scaled = run_plugin(
        "scale", "web", "--replicas", str(new_size), "--no-wait", "-n", both.ours, kubeconfig=both.kubeconfig
    )
    assert scaled.returncode == 0, scaled.stderr
    both.cluster.apps.patch_namespaced_deployment("web", both.theirs, {"spec": {"replicas": new_size}})
    middle = MID_ROLLOUT_RESIZES[new_size]
    for namespace in (both.ours, both.theirs):
        until_shape(both.cluster, namespace, middle, f"the resize to {new_size} in {namespace}")
    # Every active ReplicaSet carries the new size and maxSurge in its annotations, on both sides alike.
    assert annotated_shape(both.cluster, both.ours, "web") == annotated_shape(both.cluster, both.theirs, "web")
    assert {a[3:] for a in annotated_shape(both.cluster, both.ours, "web")} == {(str(new_size), str(new_size + 2))}

    v3 = with_image(document, "registry.example/app:v3")
    v3["spec"]["replicas"] = new_size
    both.apply(v3, "--no-wait")
    _out, err = driver.communicate(timeout=180)
    assert driver.returncode == 0, err
    both._settle_theirs()
    ours, theirs = (census.stop() for census in both.census)
    most = max(4, new_size) + 2
    least = min(4 - max_unavailable(4, 2, 3), new_size - max_unavailable(new_size, 2, 3))
    assert ours.breaches(most=most, fewest=least) == []
    assert theirs.breaches(most=most, fewest=least, count_pods=False) == []
    # No churn: the driver created exactly the pods the controller created, image by image.
    assert ours.pods.pods_per_image() == theirs.pods.pods_per_image()
    both.same_state()
    assert (
        shape(both.cluster, both.ours, "web")
        == shape(both.cluster, both.theirs, "web")
        == [(1, 0, manifests.IMAGE), (2, 0, "registry.example/app:v2"), (3, new_size, "registry.example/app:v3")]
    )


def test_pause_mid_rollout_then_resume_side_by_side(both: SideBySide) -> None:
    # Both sides are paused mid-rollout (v1 -> v2), take a real change while paused (v3: no ReplicaSet is
    # created, nothing moves), and are resumed: both finish at v3, the fenceposts watched throughout. The v2
    # pod never becomes Ready, so both rollouts wait at their first step until the pause lands, however long
    # the CLI takes to start (with v2 Ready after 2 s, a loaded machine's 8-16 s start let the rollout end
    # first); the resumed rollout to v3 scales that pod down.
    document = workload("web", 6, surge=1, unavailable=0, ready_after="2s")
    both.apply(document)
    both.watch()
    v2 = with_image(document, "registry.example/app:v2")
    v2["spec"]["template"]["metadata"]["annotations"][manifests.BEHAVIOUR] = "never-ready"
    driver = start_apply(both.kubeconfig, both.ours, v2, both.tmp_path)
    both.change_template(v2)
    for namespace in (both.ours, both.theirs):
        watching.until(
            both.cluster.apps.list_namespaced_replica_set,
            lambda rs: rs.spec.template.spec.containers[0].image.endswith(":v2") and rs.spec.replicas >= 1,
            namespace=namespace,
            timeout=60,
            what=f"the rollout in {namespace} under way",
        )
    paused = run_plugin("pause", "web", "-n", both.ours, kubeconfig=both.kubeconfig)
    assert paused.returncode == 0, paused.stderr
    both.cluster.apps.patch_namespaced_deployment("web", both.theirs, {"spec": {"paused": True}})
    _out, err = driver.communicate(timeout=60)
    assert driver.returncode == 0, err
    assert "is paused" in err
    frozen = shape(both.cluster, both.ours, "web")
    assert frozen != [(1, 0, manifests.IMAGE), (2, 6, "registry.example/app:v2")]  # stopped midway
    assert run_plugin("status", "web", "-w", "-n", both.ours, kubeconfig=both.kubeconfig).returncode == 0
    assert shape(both.cluster, both.ours, "web") == frozen  # a driver does not move a paused workload

    # A real change while paused: recorded on both sides, rolled out on neither.
    v3 = with_image(document, "registry.example/app:v3")
    v3["spec"]["paused"] = True
    frozen_theirs = shape(both.cluster, both.theirs, "web")
    both.apply(v3)
    assert shape(both.cluster, both.ours, "web") == frozen
    assert shape(both.cluster, both.theirs, "web") == frozen_theirs
    ours, theirs = both.status()
    assert ours["conditions"]["Progressing"] == theirs["conditions"]["Progressing"]
    assert ours["conditions"]["Progressing"] == ("Unknown", "DeploymentPaused", "Deployment is paused")

    # Resumed on both sides at once: the controller's side rolls out while our resume drives ours.
    both.cluster.apps.patch_namespaced_deployment("web", both.theirs, {"spec": {"paused": False}})
    resumed = run_plugin("resume", "web", "-n", both.ours, kubeconfig=both.kubeconfig)
    assert resumed.returncode == 0, resumed.stderr
    both._settle_theirs()
    both.compare(6, 1, 0)
    assert shape(both.cluster, both.ours, "web") == [
        (1, 0, manifests.IMAGE),
        (2, 0, "registry.example/app:v2"),
        (3, 6, "registry.example/app:v3"),
    ]


def test_crash_looping_new_pods_fail_fast_and_auto_rollback_returns(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 3, surge=1, unavailable=0)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    broken = with_image(document, "registry.example/app:broken")
    broken["spec"]["template"]["metadata"]["annotations"].update(
        {manifests.BEHAVIOUR: "crash-loop", manifests.RESTART_EVERY: "1s"}
    )

    watched = RolloutInvariants(cluster, namespace).start()
    started = time.monotonic()
    failed = apply(kubeconfig, namespace, broken, tmp_path, "--fail-after-restarts", "2", "--auto-rollback")
    elapsed = time.monotonic() - started

    assert failed.returncode == 1
    # The crash-looping pods are never Ready: the surge pod comes and goes, the old ones all stay.
    assert watched.stop().breaches_of(3, 1, 0) == []
    assert "CrashLoopBackOff" in failed.stdout + failed.stderr
    assert "rolled back to revision 1" in failed.stderr
    assert elapsed < 60
    rses = sorted(replica_sets(cluster, namespace, "web").values())
    assert rses[-1] == (3, 3, manifests.IMAGE)  # revision 1's ReplicaSet, now revision 3, holds every replica


def test_progress_deadline_exceeded_side_by_side(both: SideBySide) -> None:
    document = workload("web", 2, surge=1, unavailable=0, progressDeadlineSeconds=4)
    both.apply(document)
    stuck = with_image(document, "registry.example/app:stuck")
    stuck["spec"]["template"]["metadata"]["annotations"][manifests.BEHAVIOUR] = "never-ready"
    both.watch()

    result = both.apply(stuck, expect=1)

    assert 'deployment "web" exceeded its progress deadline' in result.stdout + result.stderr
    both.compare(2, 1, 0)
    status = json.loads(run_plugin("status", "web", "-n", both.ours, "-o", "json", kubeconfig=both.kubeconfig).stdout)
    progressing = next(c for c in status["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")

    # Issue 12 item 8: pausing keeps ProgressDeadlineExceeded (checkPausedConditions), so status still fails.
    assert run_plugin("pause", "web", "-n", both.ours, kubeconfig=both.kubeconfig).returncode == 0
    both.cluster.apps.patch_namespaced_deployment("web", both.theirs, {"spec": {"paused": True}})
    watching.until(
        both.cluster.apps.list_namespaced_deployment,
        lambda d: d.status.observed_generation == d.metadata.generation,
        namespace=both.theirs,
        timeout=30,
        what="the controller to see the pause",
    )
    for args in ([], ["-w"]):
        paused = run_plugin("status", "web", *args, "-n", both.ours, kubeconfig=both.kubeconfig)
        assert paused.returncode == 1, (args, paused.stdout, paused.stderr)
        assert 'deployment "web" exceeded its progress deadline' in paused.stdout + paused.stderr
    ours = json.loads(run_plugin("status", "web", "-n", both.ours, "-o", "json", kubeconfig=both.kubeconfig).stdout)
    theirs = both.cluster.apps.read_namespaced_deployment("web", both.theirs).status
    assert {c["type"]: (c["status"], c["reason"]) for c in ours["status"]["conditions"]} == {
        c.type: (c.status, c.reason) for c in theirs.conditions
    }


@pytest.mark.serial_stream("others")  # not side by side: beside the surges
def test_a_driver_killed_mid_rollout_is_finished_by_the_next_one(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 6, surge=1, unavailable=0, ready_after="2s")
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    watched = RolloutInvariants(cluster, namespace).start()
    driver = start_apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path)
    watching.until(
        cluster.apps.list_namespaced_replica_set,
        lambda rs: rs.spec.template.spec.containers[0].image.endswith(":v2") and rs.spec.replicas >= 2,
        namespace=namespace,
        timeout=60,
        what="the rollout to be under way",
    )
    driver.send_signal(signal.SIGKILL)
    driver.wait()

    # The dead driver was a process of this machine: status -w takes its Lease over at once and drives
    # (test_rollout_jobs.py checks that against the Lease's times).
    finished = run_plugin("status", "web", "-w", "-n", namespace, kubeconfig=kubeconfig, timeout=120)

    assert finished.returncode == 0, finished.stderr
    assert watched.stop().breaches_of(6, 1, 0) == []
    assert shape(cluster, namespace, "web") == [(1, 0, manifests.IMAGE), (2, 6, "registry.example/app:v2")]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(kind="StatefulSet"), "expected an apps/v1 Deployment manifest"),
        (lambda d: d["spec"]["selector"]["matchLabels"].update(app="other"), "`selector` does not match template"),
        (
            lambda d: d["spec"].update(strategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
            "may not be 0 when `maxSurge` is 0",
        ),
        (
            lambda d: d["spec"].update(strategy={"rollingUpdate": {"maxUnavailable": "120%"}}),
            "must not be greater than 100%",
        ),
        (lambda d: d["spec"].update(replicas=-3), "spec.replicas: Invalid value: -3"),
        (
            lambda d: d["spec"].update(replicas=99999999999),
            "spec.replicas: Invalid value: 99999999999: must be less than or equal to 2147483647",
        ),
    ],
    ids=["not-a-deployment", "selector", "both-zero", "over-100-percent", "negative-replicas", "past-int32"],
)
def test_invalid_manifests_change_nothing(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, change: Any, message: str
) -> None:
    document = workload("web", 2)
    change(document)

    result = apply(kubeconfig, namespace, document, tmp_path)

    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert (
        cluster.core.list_namespaced_config_map(
            namespace, label_selector="app.kubernetes.io/managed-by=kubectl-rollout-plus"
        ).items
        == []
    )
    assert cluster.apps.list_namespaced_replica_set(namespace).items == []


def replica_set_counts(cluster: Cluster, namespace: str) -> list[tuple[str, int]]:
    return [(rs.metadata.name, rs.spec.replicas) for rs in cluster.apps.list_namespaced_replica_set(namespace).items]


@pytest.mark.parametrize("replicas", ["99999999999", str(2**31), "-1", "many"])
def test_scale_past_int32_is_refused_and_changes_nothing(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path, replicas: str
) -> None:
    # 99999999999 was accepted once: the ReplicaSet's count wrapped to 1,215,752,191 and pods flooded in.
    assert apply(kubeconfig, namespace, workload("web", 2), tmp_path).returncode == 0
    record_before = cluster.core.read_namespaced_config_map("rollout-plus.web", namespace).data
    sets_before = [
        (rs.metadata.name, rs.spec.replicas) for rs in cluster.apps.list_namespaced_replica_set(namespace).items
    ]

    result = run_plugin("scale", "web", "--replicas", replicas, "-n", namespace, kubeconfig=kubeconfig)

    assert result.returncode == 2, result.stderr
    assert "Invalid value for '--replicas'" in result.stderr
    assert "Traceback" not in result.stderr
    assert cluster.core.read_namespaced_config_map("rollout-plus.web", namespace).data == record_before
    sets_after = [
        (rs.metadata.name, rs.spec.replicas) for rs in cluster.apps.list_namespaced_replica_set(namespace).items
    ]
    assert sets_after == sets_before


def test_a_changed_selector_is_refused_and_changes_nothing(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    # Issue 12 item 11: spec.selector is immutable; the API server refuses the change for a Deployment.
    document = workload("web", 2)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    before_record = cluster.core.read_namespaced_config_map("rollout-plus.web", namespace)
    before_rs = shape(cluster, namespace, "web")
    changed = copy.deepcopy(document)
    changed["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "front"}}
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/app:v2"

    result = apply(kubeconfig, namespace, changed, tmp_path)

    assert result.returncode == 2, result.stderr
    assert 'Deployment "web" is invalid: spec.selector: Invalid value:' in result.stderr
    assert "field is immutable" in result.stderr
    assert "kubectl rollout-plus delete web" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    after_record = cluster.core.read_namespaced_config_map("rollout-plus.web", namespace)
    assert after_record.metadata.resource_version == before_record.metadata.resource_version
    assert shape(cluster, namespace, "web") == before_rs
    # The same selector spelt with an empty matchExpressions is no change at all.
    spelt = copy.deepcopy(document)
    spelt["spec"]["selector"]["matchExpressions"] = []
    assert apply(kubeconfig, namespace, spelt, tmp_path).returncode == 0


def test_unknown_workload_is_one_line(namespace: str, kubeconfig: Path) -> None:
    for args in (["status", "ghost"], ["set", "image", "ghost", "app=x"], ["undo", "ghost"], ["pause", "ghost"]):
        result = run_plugin(*args, "-n", namespace, kubeconfig=kubeconfig)
        assert result.returncode == 1, args
        assert 'managed workload "ghost" not found' in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_delete_removes_the_record_and_everything_it_owns(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    assert apply(kubeconfig, namespace, workload("web", 2), tmp_path).returncode == 0
    pods = {p.metadata.name for p in cluster.core.list_namespaced_pod(namespace, label_selector="app=web").items}
    assert len(pods) == 2
    assert run_plugin("delete", "web", "-n", namespace, kubeconfig=kubeconfig).returncode == 0
    watching.until_deleted(cluster.core.list_namespaced_config_map, "rollout-plus.web", namespace=namespace, timeout=30)
    # Foreground deletion: the garbage collector removes the ReplicaSets, and their pods, before the record; the
    # ReplicaSets' and the pods' owner references block it until they are gone, not merely going.
    assert cluster.apps.list_namespaced_replica_set(namespace).items == []
    left = [(p.metadata.name, p.metadata.owner_references) for p in cluster.core.list_namespaced_pod(namespace).items]
    assert left == [], f"pods left after the record of web went: {left}"


def test_adopt_then_release_keeps_every_pod(cluster: Cluster, namespace: str, kubeconfig: Path) -> None:
    document = workload("shop", 3)
    cluster.apps.create_namespaced_deployment(namespace, document)
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: (d.status.available_replicas or 0) == 3,
        namespace=namespace,
        timeout=60,
        what="shop available",
    )
    before = {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items}
    census = PodCensus(cluster, namespace, "shop").start()

    adopted = run_plugin("adopt", "deployment/shop", "-n", namespace, kubeconfig=kubeconfig)
    assert adopted.returncode == 0, adopted.stderr
    owners = {
        ref.kind
        for rs in cluster.apps.list_namespaced_replica_set(namespace).items
        for ref in rs.metadata.owner_references
    }
    assert owners == {"ConfigMap"}
    status = run_plugin("status", "shop", "-w", "-n", namespace, kubeconfig=kubeconfig)
    assert status.returncode == 0, status.stderr
    released = run_plugin("release", "shop", "-n", namespace, kubeconfig=kubeconfig)
    assert released.returncode == 0, released.stderr
    watching.until(
        cluster.apps.list_namespaced_replica_set,
        lambda rs: any(ref.kind == "Deployment" for ref in rs.metadata.owner_references or []),
        namespace=namespace,
        timeout=30,
        what="the Deployment controller to adopt the ReplicaSet",
    )
    census.stop()

    assert {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items} == before
    assert census.most == 3
    assert census.fewest_ready == 3


def test_reapplying_the_manifest_of_an_adopted_deployment_replaces_no_pod(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    # Issue 12 item 2: the adopted record holds the Deployment's spec as the API server defaulted it; the
    # manifest that created it does not spell the defaults out. The controller compares defaulted templates,
    # so re-applying that manifest is no template change: no new ReplicaSet, no pod replaced.
    document = workload("shop", 3)
    cluster.apps.create_namespaced_deployment(namespace, document)
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: (d.status.available_replicas or 0) == 3,
        namespace=namespace,
        timeout=60,
        what="shop available",
    )
    adopted = run_plugin("adopt", "deployment/shop", "-n", namespace, kubeconfig=kubeconfig)
    assert adopted.returncode == 0, adopted.stderr
    before = {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items}
    replica_sets_before = shape(cluster, namespace, "shop")
    census = PodCensus(cluster, namespace, "shop").start()

    reapplied = apply(kubeconfig, namespace, document, tmp_path)
    assert reapplied.returncode == 0, reapplied.stderr
    # Spelling out defaults (a tagged image's pull policy, the default termination message path and DNS
    # policy) is the same template again.
    spelt = copy.deepcopy(document)
    spelt["spec"]["template"]["spec"]["containers"][0].update(
        imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log"
    )
    spelt["spec"]["template"]["spec"]["dnsPolicy"] = "ClusterFirst"
    respelt = apply(kubeconfig, namespace, spelt, tmp_path)
    assert respelt.returncode == 0, respelt.stderr
    census.stop()

    assert shape(cluster, namespace, "shop") == replica_sets_before
    assert {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items} == before
    assert census.pods_per_image() == {manifests.IMAGE: 3}
    assert 'deployment "shop" successfully rolled out' in respelt.stdout


def test_a_manifest_that_only_adds_defaults_rolls_nothing_out(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 2)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    before = {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items}
    spelt = copy.deepcopy(document)
    spelt["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent"
    spelt["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    result = apply(kubeconfig, namespace, spelt, tmp_path)
    assert result.returncode == 0, result.stderr
    assert shape(cluster, namespace, "web") == [(1, 2, manifests.IMAGE)]
    assert {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items} == before
    # A real change is still one: Always is not the default pull policy of a tagged image.
    changed = copy.deepcopy(spelt)
    changed["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    assert apply(kubeconfig, namespace, changed, tmp_path).returncode == 0
    assert shape(cluster, namespace, "web") == [(1, 0, manifests.IMAGE), (2, 2, manifests.IMAGE)]


def test_a_template_the_api_server_refuses_changes_nothing(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    # The server-side dry run that defaults the template also validates it: refused before anything is stored.
    document = workload("web", 2)
    document["spec"]["template"]["spec"]["containers"][0]["name"] = "Not_A_Name"
    result = apply(kubeconfig, namespace, document, tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith('error: Deployment "web" is invalid: spec.template.spec.containers[0].name')
    assert len(result.stderr.strip().splitlines()) == 1
    assert (
        cluster.core.list_namespaced_config_map(
            namespace, label_selector="app.kubernetes.io/managed-by=kubectl-rollout-plus"
        ).items
        == []
    )
    assert cluster.apps.list_namespaced_replica_set(namespace).items == []


def test_adopting_a_missing_deployment_changes_nothing(namespace: str, kubeconfig: Path, cluster: Cluster) -> None:
    result = run_plugin("adopt", "deployment/ghost", "-n", namespace, kubeconfig=kubeconfig)
    assert result.returncode == 1
    assert (
        result.stderr.strip() == f'error: deployment "ghost" not found in namespace "{namespace}"; nothing was changed'
    )
    assert (
        cluster.core.list_namespaced_config_map(
            namespace, label_selector="app.kubernetes.io/managed-by=kubectl-rollout-plus"
        ).items
        == []
    )


def test_min_ready_seconds_holds_the_rollout_until_pods_have_been_ready_that_long(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 2, surge=1, unavailable=0, ready_after="0s", minReadySeconds=3)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    watched = RolloutInvariants(cluster, namespace).start()
    started = time.monotonic()
    result = apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path)
    elapsed = time.monotonic() - started

    assert result.returncode == 0, result.stderr
    # Available as the ReplicaSets count it (Ready for minReadySeconds), not only Ready, never below 2.
    assert watched.stop().breaches_of(2, 1, 0) == []
    # maxSurge 1, maxUnavailable 0: two new pods one after the other, each available minReadySeconds after
    # Ready. The ReplicaSet controller counts from the Ready condition's lastTransitionTime, which the API
    # stores in whole seconds, so each wait may be up to 1 s shorter: at least 2 x (3 - 1) s in all.
    assert elapsed >= 4.0, elapsed


def test_changing_only_min_ready_seconds_updates_the_replica_set_side_by_side(both: SideBySide) -> None:
    # Issue 12 item 9: no rollout, the ReplicaSet takes the new minReadySeconds (getNewReplicaSet).
    document = workload("web", 2)
    both.apply(document)
    both.watch()
    slower = copy.deepcopy(document)
    slower["spec"]["minReadySeconds"] = 7
    both.apply(slower)
    for census in both.census:
        census.stop()
        # Not a rollout: no pod created or deleted, no ReplicaSet resized, every pod Ready throughout. The
        # ReplicaSets' available count may drop (a pod Ready for less than 7 s is no longer available), as
        # the ReplicaSet controller recounts it: the fenceposts of a rollout do not apply to that.
        assert census.pods.pods_per_image() == {manifests.IMAGE: 2}, census.namespace
        assert (census.pods.most, census.pods.fewest_ready, census.replica_sets.most_replicas) == (2, 2, 2)
    for namespace in (both.ours, both.theirs):
        watching.until(
            both.cluster.apps.list_namespaced_replica_set,
            lambda rs: (
                rs.spec.min_ready_seconds == 7
                and rs.status.observed_generation == rs.metadata.generation
                and (rs.status.available_replicas or 0) == 2
            ),
            namespace=namespace,
            timeout=30,
            what=f"the ReplicaSet in {namespace} to take minReadySeconds 7 and count both pods available again",
        )
    # The controller may have settled before the recount; its status follows the ReplicaSet's (ours is
    # complete only once both pods are available under the new minReadySeconds).
    watching.until(
        both.cluster.apps.list_namespaced_deployment,
        lambda d: d.status.observed_generation == d.metadata.generation and (d.status.available_replicas or 0) == 2,
        namespace=both.theirs,
        timeout=30,
        what="the controller to count both pods available again",
    )
    both.same_state()
    assert shape(both.cluster, both.ours, "web") == shape(both.cluster, both.theirs, "web") == [(1, 2, manifests.IMAGE)]


def test_old_replica_sets_never_shrink_past_a_pdb(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 4, surge=1, unavailable=1)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, manifests.pdb("web", app="web", min_available=4))
    watching.until(
        cluster.policy.list_namespaced_pod_disruption_budget,
        lambda p: p.status is not None and p.status.expected_pods == 4,
        namespace=namespace,
        timeout=30,
        what="PDB processed",
    )
    census = PodCensus(cluster, namespace, "web").start()

    result = apply(kubeconfig, namespace, with_image(document, "registry.example/app:v2"), tmp_path, "-o", "jsonl")
    census.stop()

    assert result.returncode == 0, result.stderr
    # The controller may go down to 3 Ready (maxUnavailable 1); the PDB asks for 4, and gets them.
    assert census.fewest_ready == 4
    holds = [(e["pdbs"], e["held"]) for e in events(result) if e["type"] == "ScaleDownHeldByPdb"]
    assert holds, "the PDB held no scale-down back"
    # Reported when the hold changes, not once per pass of the driver (each pod event wakes one).
    assert all(a != b for a, b in itertools.pairwise(holds)), holds


def test_replica_failure_from_a_quota_side_by_side(both: SideBySide) -> None:
    for namespace in (both.ours, both.theirs):
        both.cluster.core.create_namespaced_resource_quota(
            namespace, {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "2"}}}
        )
    document = workload("web", 4, surge=1, unavailable=1, progressDeadlineSeconds=5)
    both.watch()

    result = both.apply(document, expect=1)

    assert 'deployment "web" exceeded its progress deadline' in result.stdout + result.stderr
    for census in both.census:
        census.stop()
    ours, theirs = both.census
    # A first rollout: nothing is available before it; the quota holds both sides at 2 pods of 4.
    assert ours.breaches(most=5, fewest=0) == []
    assert theirs.breaches(most=5, fewest=0, count_pods=False) == []
    assert ours.pods.most == theirs.pods.most == 2
    # Our status is as fresh as the last driver pass: the driver stops at the deadline, maybe before the two
    # pods the quota lets in are Ready, where the controller goes on counting. Once both sides have them
    # available, one more pass (status -w, which fails at once past the deadline) brings ours up to date.
    for namespace, listing in (
        (both.ours, both.cluster.apps.list_namespaced_replica_set),
        (both.theirs, both.cluster.apps.list_namespaced_deployment),
    ):
        watching.until(
            listing,
            lambda obj: (obj.status.available_replicas or 0) == 2,
            namespace=namespace,
            timeout=60,
            what=f"the two pods in {namespace} available",
        )
    refreshed = run_plugin("status", "web", "-w", "-n", both.ours, kubeconfig=both.kubeconfig)
    assert refreshed.returncode == 1, refreshed.stderr
    both.same_state()
    status, _theirs = both.status()
    assert status["conditions"]["ReplicaFailure"][:2] == ("True", "FailedCreate")


def test_a_refused_replica_set_is_replica_set_create_error_side_by_side(both: SideBySide) -> None:
    # Issue 12 item 10: a quota on ReplicaSets refuses the new one. The controller sets Progressing False /
    # ReplicaSetCreateError ('Failed to create new replica set "NAME": ...') and tries again; so do we, until
    # the command's --timeout. (The job used to die on the 403.)
    document = workload("web", 2)
    both.apply(document)
    for namespace in (both.ours, both.theirs):
        both.cluster.core.create_namespaced_resource_quota(
            namespace, {"metadata": {"name": "rs"}, "spec": {"hard": {"count/replicasets.apps": "1"}}}
        )
        watching.until(
            both.cluster.core.list_namespaced_resource_quota,
            lambda q: (q.status.used or {}).get("count/replicasets.apps") == "1",
            namespace=namespace,
            timeout=30,
            what=f"the quota in {namespace} to count the ReplicaSet",
        )
    both.watch()
    v2 = with_image(document, "registry.example/app:v2")
    result = apply(both.kubeconfig, both.ours, v2, both.tmp_path, "--timeout", "8s")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    both.change_template(v2)
    watching.until(
        both.cluster.apps.list_namespaced_deployment,
        lambda d: any(c.reason == "ReplicaSetCreateError" for c in d.status.conditions or []),
        namespace=both.theirs,
        timeout=60,
        what="the controller's ReplicaSetCreateError",
    )
    for census in both.census:
        census.stop()
    ours_watched, theirs_watched = both.census
    assert ours_watched.breaches_of(2, "25%", "25%") == []
    assert theirs_watched.breaches_of(2, "25%", "25%", count_pods=False) == []
    ours, theirs = both.status()
    assert ours["conditions"]["Progressing"] == theirs["conditions"]["Progressing"]
    state, reason, message = ours["conditions"]["Progressing"]
    assert (state, reason) == ("False", "ReplicaSetCreateError")
    assert message.startswith('Failed to create new replica set "<ReplicaSet not created>": ')
    assert "exceeded quota: rs" in message
    assert shape(both.cluster, both.ours, "web") == shape(both.cluster, both.theirs, "web") == [(1, 2, manifests.IMAGE)]


def test_a_replica_set_name_taken_by_another_template_is_a_collision(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    from kubectl_rollout.rollout.spec import parse_workload
    from kubectl_rollout.rollout.template_hash import pod_template_hash

    document = workload("web", 2)
    spec = parse_workload(document, default_namespace=namespace)
    squatter = manifests.deployment("web", replicas=0)
    squatter.update(kind="ReplicaSet")
    squatter["metadata"]["name"] = f"web-{pod_template_hash(spec.template)}"
    squatter["spec"]["selector"]["matchLabels"]["squat"] = "yes"
    squatter["spec"]["template"]["metadata"]["labels"]["squat"] = "yes"
    cluster.apps.create_namespaced_replica_set(namespace, squatter)
    watched = RolloutInvariants(cluster, namespace).start()

    result = apply(kubeconfig, namespace, document, tmp_path)

    assert result.returncode == 0, result.stderr
    # A first rollout (nothing available before it), the squatter's ReplicaSet counted and never scaled.
    assert watched.stop().breaches(most=3, fewest=0) == []
    ours = [rs for rs in replica_sets(cluster, namespace, "web") if rs != squatter["metadata"]["name"]]
    assert ours == [f"web-{pod_template_hash(spec.template, 1)}"]
    status = json.loads(run_plugin("status", "web", "-n", namespace, "-o", "json", kubeconfig=kubeconfig).stdout)
    assert status["status"]["collisionCount"] == 1


def test_restart_replaces_every_pod_with_a_rolling_update(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    assert apply(kubeconfig, namespace, workload("web", 3, surge=1, unavailable=0), tmp_path).returncode == 0
    before = {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items}
    census = PodCensus(cluster, namespace, "web").start()

    restarted = run_plugin("restart", "web", "-n", namespace, kubeconfig=kubeconfig)
    census.stop()

    assert restarted.returncode == 0, restarted.stderr
    after = {
        p.metadata.uid
        for p in cluster.core.list_namespaced_pod(namespace).items
        if p.metadata.deletion_timestamp is None
    }
    assert len(after) == 3
    assert not after & before
    assert census.most <= 4
    assert census.fewest_ready == 3
    new = [rs for rs in cluster.apps.list_namespaced_replica_set(namespace).items if rs.spec.replicas]
    assert "kubectl.kubernetes.io/restartedAt" in (new[0].spec.template.metadata.annotations or {})


def test_new_pods_that_cannot_pull_their_image_fail_fast(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 2, surge=1, unavailable=0)
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    missing = with_image(document, "registry.example/app:does-not-exist")
    missing["spec"]["template"]["metadata"]["annotations"][manifests.BEHAVIOUR] = "image-pull-backoff"

    watched = RolloutInvariants(cluster, namespace).start()
    started = time.monotonic()
    result = apply(kubeconfig, namespace, missing, tmp_path)

    assert result.returncode == 1
    assert time.monotonic() - started < 30  # well before the 600 s progress deadline
    assert watched.stop().breaches_of(2, 1, 0) == []
    assert "cannot pull its image (ImagePullBackOff)" in result.stdout + result.stderr
    status = json.loads(run_plugin("status", "web", "-n", namespace, "-o", "json", kubeconfig=kubeconfig).stdout)
    failure = next(c for c in status["status"]["conditions"] if c["type"] == "ReplicaFailure")
    assert failure["reason"] == "NewPodsFailing"
    assert sorted(replica_sets(cluster, namespace, "web").values())[0] == (1, 2, manifests.IMAGE)


def replica_set_sizes(timeline: Timeline) -> list[tuple[str, int]]:
    """Every spec.replicas the cluster gave a ReplicaSet after the first list, in its order: (name, replicas);
    a ReplicaSet created since counts from 0."""
    sizes: dict[str, int] = {}
    changes = []
    for write in timeline.writes("rs"):
        replicas = 0 if write.type == "DELETED" else write.obj.spec.replicas
        if write.type != "LISTED" and sizes.get(write.name, 0) != replicas:
            changes.append((write.name, replicas))
        sizes[write.name] = replicas
    return changes


def test_status_watch_follows_a_rollout_another_driver_holds(
    cluster: Cluster, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    document = workload("web", 4, surge=1, unavailable=0, ready_after="2s")
    assert apply(kubeconfig, namespace, document, tmp_path).returncode == 0
    timeline = (
        Timeline()
        .watch("rs", cluster.apps.list_namespaced_replica_set, namespace=namespace, label_selector="app=web")
        .watch("lease", cluster.coordination.list_namespaced_lease, namespace=namespace)
    )
    manifest = tmp_path / "web-v2.yaml"
    manifest.write_text(yaml.safe_dump(with_image(document, "registry.example/app:v2")))
    command = [sys.executable, "-m", "kubectl_rollout", "apply", "-f", str(manifest), "-n", namespace, "-o", "jsonl"]
    driver = subprocess.Popen(
        [*command, "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watching.until(
        cluster.coordination.list_namespaced_lease,
        lambda lease: lease.metadata.name == "rollout-plus.web",
        namespace=namespace,
        timeout=30,
        what="the first driver's lease",
    )

    follower = run_plugin("status", "web", "-w", "-n", namespace, kubeconfig=kubeconfig, timeout=120)
    driven, _ = driver.communicate(timeout=120)
    timeline.stop()

    # It followed and drove nothing: from the driver's start, only the driver held the workload's Lease, and
    # every size the cluster gave a ReplicaSet is one the driver says it set, in the same order. (The driver may
    # say a size twice: a pass whose ReplicaSet watch had not yet shown its own last write plans that write again.)
    holders = {
        w.obj.spec.holder_identity
        for w in timeline.writes("lease")
        if w.name == "rollout-plus.web" and w.obj.spec.holder_identity and w.type != "LISTED"
    }
    assert holders, "the lease was never held"
    assert {holder.split("/")[1] for holder in holders} == {str(driver.pid)}, (
        f"the lease of web was held by {sorted(holders)}; the driver is process {driver.pid}"
    )
    said = [
        (e["name"], e["replicas"] if e["type"] == "ReplicaSetCreated" else e["to_replicas"])
        for e in map(json.loads, (line for line in driven.splitlines() if line.startswith("{")))
        if e["type"] == "ReplicaSetCreated"
        or (e["type"] == "ReplicaSetScaled" and e["to_replicas"] != e["from_replicas"])
    ]
    assert said, driven
    done = replica_set_sizes(timeline)
    reported = iter(said)
    assert done, "no ReplicaSet was resized"
    assert all(change in reported for change in done), f"the cluster did {done}; the driver says it did {said}"
    assert driver.returncode == 0
    assert follower.returncode == 0, follower.stderr
    assert "following its progress" in follower.stderr
    assert follower.stdout.strip().splitlines()[-1] == 'deployment "web" successfully rolled out'
