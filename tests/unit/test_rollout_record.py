"""What the record refuses to store, before anything reaches the cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_rollout.rollout.record import _check_selector_unchanged
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
