"""The surge decision (kubectl_rollout.drain.surge.decision): pure tables."""

from __future__ import annotations

import pytest

from kubectl_rollout.drain.surge.decision import (
    SurgeMax,
    WorkloadFacts,
    budget_room,
    decide,
    gitops_marker,
    lowered_replicas,
    parse_surge_max,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", SurgeMax(count=1)),
        ("10", SurgeMax(count=10)),
        (" 3 ", SurgeMax(count=3)),
        ("25%", SurgeMax(percent=25)),
        ("100%", SurgeMax(percent=100)),
        ("150%", SurgeMax(percent=150)),
    ],
)
def test_surge_max_parses_a_count_or_a_percentage(text: str, expected: SurgeMax) -> None:
    assert parse_surge_max(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", "would surge nothing"),
        ("0%", "would surge nothing"),
        ("-1", "neither a count nor a percentage"),
        ("1.5", "neither a count nor a percentage"),
        ("%", "neither a count nor a percentage"),
        ("ten", "neither a count nor a percentage"),
        ("", "neither a count nor a percentage"),
    ],
)
def test_bad_surge_max_is_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_surge_max(text)


@pytest.mark.parametrize(
    ("surge_max", "replicas", "bound"),
    [
        (SurgeMax(count=3), 10, 3),
        (SurgeMax(percent=25), 10, 3),  # 2.5 rounds up, as maxSurge does
        (SurgeMax(percent=25), 1, 1),
        (SurgeMax(percent=100), 10, 10),
        (SurgeMax(percent=1), 1, 1),  # never 0: a surge of nothing is no surge
    ],
)
def test_surge_max_bound(surge_max: SurgeMax, replicas: int, bound: int) -> None:
    assert surge_max.bound(replicas) == bound


def facts(**overrides: object) -> WorkloadFacts:
    base: dict[str, object] = {
        "kind": "Deployment",
        "namespace": "ns",
        "name": "web",
        "replicas": 1,
        "pods_on_nodes": 1,
        "disruptions_allowed": 0,
    }
    base.update(overrides)
    return WorkloadFacts(**base)  # type: ignore[arg-type]


ALL = SurgeMax(percent=100)


@pytest.mark.parametrize(
    ("given", "surge_max", "surge", "reason"),
    [
        # the classic: one replica, minAvailable 1 (allowed 0)
        (facts(), ALL, 1, "surge by 1 (from 1 to 2 replicas)"),
        # 10 pods on the node behind maxUnavailable 1: all ten, or what --surge-max allows
        (facts(replicas=10, pods_on_nodes=10, disruptions_allowed=1), ALL, 10, "from 10 to 20"),
        (facts(replicas=10, pods_on_nodes=10, disruptions_allowed=1), SurgeMax(count=4), 4, "from 10 to 14"),
        (facts(replicas=10, pods_on_nodes=10, disruptions_allowed=1), SurgeMax(percent=25), 3, "from 10 to 13"),
        # only the pods on the drained nodes count
        (facts(replicas=10, pods_on_nodes=2, disruptions_allowed=1), ALL, 2, "from 10 to 12"),
        # the PDB has room for all of them now: nothing to gain
        (facts(replicas=10, pods_on_nodes=2, disruptions_allowed=2), ALL, 0, "no surge needed"),
        (facts(disruptions_allowed=None), ALL, 0, "no PodDisruptionBudget"),
        (facts(kind="StatefulSet"), ALL, 0, "identities"),
        (facts(kind="Pod"), ALL, 0, "bare pod"),
        (facts(kind="Job"), ALL, 0, "a Job's replicas are not a count"),
        # a managed workload surges like a Deployment (through its one ReplicaSet), when steady and free
        (facts(kind="ManagedWorkload"), ALL, 1, "surge by 1 (from 1 to 2 replicas)"),
        (
            facts(kind="ManagedWorkload", replicas=10, pods_on_nodes=10, disruptions_allowed=1),
            SurgeMax(count=4),
            4,
            "from 10 to 14",
        ),
        (
            facts(kind="ManagedWorkload", rolling_out=True, rollout_detail="2 of its ReplicaSets have a count"),
            ALL,
            0,
            "middle of a rollout (2 of its ReplicaSets have a count); the drain waits for its PDB",
        ),
        (
            facts(kind="ManagedWorkload", lease_held="managed workload ns/web is being driven by h/1/a (lease ...)"),
            ALL,
            0,
            "managed workload ns/web is being driven by h/1/a",
        ),
        (facts(kind="ManagedWorkload", leftover_record=True), ALL, 0, "earlier surge is still recorded"),
        (facts(kind="ManagedWorkload", disruptions_allowed=None), ALL, 0, "no PodDisruptionBudget"),
        (facts(kind="ManagedWorkload", disruptions_allowed=1), ALL, 0, "no surge needed"),
        (facts(autoscaler="ns/web"), ALL, 0, "HorizontalPodAutoscaler ns/web sets its replica count"),
        (facts(leftover_record=True), ALL, 0, "earlier surge is still recorded"),
        (facts(rolling_out=True), ALL, 0, "middle of a rollout"),
        (facts(pods_on_nodes=0), ALL, 0, "no pods on the drained nodes"),
    ],
)
def test_decide(given: WorkloadFacts, surge_max: SurgeMax, surge: int, reason: str) -> None:
    decision = decide(given, surge_max)
    assert decision.surge == surge
    assert reason in decision.reason


def test_gitops_surges_with_a_warning() -> None:
    decision = decide(facts(gitops="label argocd.argoproj.io/instance=shop"), ALL)
    assert decision.surge == 1
    assert "may revert the replica count" in decision.warning


@pytest.mark.parametrize(
    ("labels", "annotations", "marker"),
    [
        ({"argocd.argoproj.io/instance": "shop"}, {}, "label argocd.argoproj.io/instance=shop"),
        ({"kustomize.toolkit.fluxcd.io/name": "apps"}, {}, "label kustomize.toolkit.fluxcd.io/name=apps"),
        ({"helm.toolkit.fluxcd.io/name": "web"}, {}, "label helm.toolkit.fluxcd.io/name=web"),
        ({"app.kubernetes.io/managed-by": "Helm"}, {}, "label app.kubernetes.io/managed-by=Helm"),
        ({"app.kubernetes.io/managed-by": "flux"}, {}, "label app.kubernetes.io/managed-by=flux"),
        ({}, {"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:ns/web"}, "annotation argocd.argoproj.io"),
        ({}, {"meta.helm.sh/release-name": "web"}, "annotation meta.helm.sh/release-name=web"),
        ({"app.kubernetes.io/managed-by": "kubectl-rollout-plus"}, {}, None),
        ({"app": "web"}, {}, None),
    ],
)
def test_gitops_marker(labels: dict[str, str], annotations: dict[str, str], marker: str | None) -> None:
    found = gitops_marker(labels, annotations)
    if marker is None:
        assert found is None
    else:
        assert found is not None
        assert found.startswith(marker)


@pytest.mark.parametrize(
    ("original", "surge", "evicted", "replicas"),
    [
        (10, 10, 0, 20),
        (10, 10, 1, 19),
        (10, 10, 10, 10),
        (10, 3, 5, 10),  # never below the original, whatever else was evicted
        (1, 1, 1, 1),
    ],
)
def test_lowered_replicas(original: int, surge: int, evicted: int, replicas: int) -> None:
    assert lowered_replicas(original=original, surge=surge, evicted=evicted) == replicas


# By the disruption controller's arithmetic (getExpectedPodCount): maxUnavailable against the count, rounded
# up; minAvailable against the healthy pods, at most the count.
@pytest.mark.parametrize(
    ("min_available", "max_unavailable", "replicas", "room"),
    [
        (1, None, 1, 0),
        (9, None, 10, 1),
        (9, None, 20, 11),
        (12, None, 10, 0),
        ("50%", None, 10, 5),
        ("50%", None, 3, 1),
        (None, 1, 10, 1),
        (None, 0, 10, 0),
        (None, "25%", 10, 3),
        (None, "10%", 1, 1),
        (None, None, 10, None),
        ("half", None, 10, None),
    ],
)
def test_budget_room_from_the_spec(
    min_available: int | str | None, max_unavailable: int | str | None, replicas: int, room: int | None
) -> None:
    assert budget_room(min_available=min_available, max_unavailable=max_unavailable, replicas=replicas) == room


def test_a_stale_status_that_shows_room_the_spec_cannot_give_still_surges() -> None:
    # One replica behind minAvailable 1, just after a leftover surge of 2 was restored: the status still says 1.
    facts = WorkloadFacts(
        kind="Deployment",
        namespace="ns",
        name="web",
        replicas=1,
        pods_on_nodes=1,
        disruptions_allowed=1,
        room_by_spec=0,
    )
    assert decide(facts, SurgeMax(percent=100)).surge == 1
