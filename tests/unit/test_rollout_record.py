"""What the record refuses to store, before anything reaches the cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_rollout.rollout.record import _check_selector_unchanged, next_generation
from kubectl_rollout.rollout.spec import InvalidManifest, WorkloadSpec, parse_workload
from kubectl_rollout.rollout.template_hash import template_identity


def spec(selector: dict[str, Any], labels: dict[str, str]) -> WorkloadSpec:
    return parse_workload(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "selector": selector,
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "a", "image": "v"}]}},
            },
        },
        default_namespace="default",
    )


WEB = spec({"matchLabels": {"app": "web"}}, {"app": "web"})


@pytest.mark.parametrize(
    ("selector", "labels"),
    [
        ({"matchLabels": {"app": "web", "tier": "front"}}, {"app": "web", "tier": "front"}),
        ({"matchLabels": {"app": "api"}}, {"app": "api"}),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, {"app": "web"}),
    ],
    ids=["narrower", "other", "same-pods-other-spelling"],
)
def test_a_changed_selector_is_immutable(selector: dict[str, Any], labels: dict[str, str]) -> None:
    with pytest.raises(InvalidManifest, match=r"spec\.selector: Invalid value: .*field is immutable"):
        _check_selector_unchanged(WEB, spec(selector, labels))


def test_an_empty_match_expressions_is_the_same_selector() -> None:
    _check_selector_unchanged(WEB, spec({"matchLabels": {"app": "web"}, "matchExpressions": []}, {"app": "web"}))


def pod_template(name: str, node: str, annotations: dict[str, str], labels: dict[str, str]) -> dict[str, Any]:
    """deployment_util_test.go generatePodTemplateSpec."""
    return {
        "metadata": {"name": name, "annotations": annotations, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "a", "image": "v"}]},
    }


HASH = "pod-template-hash"


@pytest.mark.parametrize(
    ("former", "latter", "equal"),
    [
        # deployment_util_test.go TestEqualIgnoreHash
        pytest.param(
            pod_template("foo", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            pod_template("foo", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            True,
            id="same-spec-same-labels",
        ),
        pytest.param(
            pod_template("foo", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            pod_template("foo", "foo-node", {}, {HASH: "value-2", "something": "else"}),
            True,
            id="only-hash-value-differs",
        ),
        pytest.param(
            pod_template("foo", "foo-node", {}, {"something": "else"}),
            pod_template("foo", "foo-node", {}, {HASH: "value-2", "something": "else"}),
            True,
            id="former-without-hash",
        ),
        pytest.param(
            pod_template("foo", "foo-node", {}, {"something": "else"}),
            pod_template("foo", "foo-node", {}, {HASH: "value-2"}),
            False,
            id="different-label-former-without-hash",
        ),
        pytest.param(
            pod_template("foo", "foo-node", {}, {HASH: "value-1"}),
            pod_template("foo", "foo-node", {}, {"something": "else"}),
            False,
            id="different-label-latter-without-hash",
        ),
        pytest.param(
            pod_template("foo", "foo-node", {}, {HASH: "value-1"}),
            pod_template("foo", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            False,
            id="different-label-same-hash",
        ),
        pytest.param(
            pod_template("foo", "foo-node", {"former": "value"}, {HASH: "value-1", "something": "else"}),
            pod_template("foo", "foo-node", {"latter": "value"}, {HASH: "value-1", "something": "else"}),
            False,
            id="different-spec-same-labels",
        ),
        pytest.param(
            pod_template("foo-1", "foo-node", {}, {HASH: "value-1", "something": "else"}),
            pod_template("foo-2", "foo-node", {}, {HASH: "value-2", "something": "else"}),
            False,
            id="different-spec-different-hash",
        ),
        pytest.param(
            pod_template("foo-1", "foo-node-1", {}, {"something": "else"}),
            pod_template("foo-2", "foo-node-2", {}, {HASH: "value-2", "something": "else"}),
            False,
            id="different-spec-former-without-hash",
        ),
        pytest.param(
            pod_template("foo", "foo-node-1", {}, {"something": "else"}),
            pod_template("foo", "foo-node-2", {}, {"nothing": "else"}),
            False,
            id="different-spec-different-labels",
        ),
    ],
)
def test_equal_ignore_hash(former: dict[str, Any], latter: dict[str, Any], equal: bool) -> None:
    assert (template_identity(former) == template_identity(latter)) is equal
    assert (template_identity(latter) == template_identity(former)) is equal


def test_template_identity_ignores_the_hash_label_and_key_order() -> None:
    # util/deployment_util_test.go TestEqualIgnoreHash: templates equal but for pod-template-hash are equal.
    base = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "a", "image": "v"}]}}
    hashed = {"spec": {"containers": [{"image": "v", "name": "a"}]}, "metadata": {"labels": {"app": "web"}}}
    hashed["metadata"]["labels"]["pod-template-hash"] = "abc"  # type: ignore[index]
    assert template_identity(base) == template_identity(hashed)
    other = {"metadata": {"labels": {"app": "web", "x": "y"}}, "spec": base["spec"]}
    assert template_identity(base) != template_identity(other)


def manifest(image: str = "v1", annotations: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "web", **extra}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": image}]}}}}


@pytest.mark.parametrize(
    ("previous", "stored", "generation"),
    [
        (manifest(), manifest(), 3),
        (manifest(), manifest("v2"), 4),
        # Annotations are copied to the ReplicaSets: a Deployment's generation grows with them too.
        (
            manifest(annotations={"kubernetes.io/change-cause": "a"}),
            manifest(annotations={"kubernetes.io/change-cause": "b"}),
            4,
        ),
        (manifest(), manifest(annotations={"team": "x"}), 4),
        # An empty map is no annotation at all (Semantic.DeepEqual), and labels are not copied: no new generation.
        (manifest(), manifest(annotations={}), 3),
        (manifest(), manifest(labels={"team": "x"}), 3),
    ],
    ids=["unchanged", "spec", "annotation-changed", "annotation-added", "empty-annotations", "labels"],
)
def test_the_generation_grows_with_the_spec_and_the_annotations_as_a_deployments_does(
    previous: dict[str, Any], stored: dict[str, Any], generation: int
) -> None:
    assert next_generation(previous, stored, 3) == generation
