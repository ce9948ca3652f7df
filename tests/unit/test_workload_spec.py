"""Managed-workload manifests: defaults and validation like the API server's for apps/v1 Deployments."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubectl_rollout.rollout.spec import InvalidManifest, parse_workload
from kubectl_rollout.rollout.steps.format import InvalidSteps
from kubectl_rollout.rollout.template_hash import fnv1a_32, pod_template_hash, safe_encode

BASE: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "x"}]}},
    },
}


def manifest(**spec: Any) -> dict[str, Any]:
    document = copy.deepcopy(BASE)
    document["spec"].update(spec)
    return document


def test_defaults_are_the_api_servers() -> None:
    spec = parse_workload(BASE, default_namespace="shop")
    assert (spec.name, spec.namespace, spec.replicas, spec.strategy) == ("web", "shop", 1, "RollingUpdate")
    assert (spec.max_surge, spec.max_unavailable) == ("25%", "25%")
    assert (spec.revision_history_limit, spec.progress_deadline_seconds, spec.min_ready_seconds) == (10, 600, 0)
    assert spec.paused is False


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}},
            'expected an apps/v1 Deployment manifest, got v1 Pod "web"',
        ),
        (
            manifest(replicas=-1),
            'Deployment "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
        ),
        (
            manifest(selector={"matchLabels": {"app": "api"}}),
            'spec.template.metadata.labels: Invalid value: {"app": "web"}: `selector` does not match template `labels`',
        ),
        (manifest(selector={}), "spec.selector: Required value"),
        (
            manifest(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0",
        ),
        (
            manifest(strategy={"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": "0%"}}),
            'maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0',
        ),
        (
            manifest(strategy={"rollingUpdate": {"maxUnavailable": "150%"}}),
            'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%',
        ),
        (
            manifest(strategy={"rollingUpdate": {"maxSurge": "lots"}}),
            'maxSurge: Invalid value: "lots": must be an integer or percentage',
        ),
        (manifest(strategy={"rollingUpdate": {"maxSurge": -1}}), "maxSurge: Invalid value: -1: must be greater"),
        (
            manifest(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}),
            "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
        ),
        (manifest(strategy={"type": "BlueGreen"}), 'spec.strategy.type: Unsupported value: "BlueGreen"'),
        (
            manifest(minReadySeconds=30, progressDeadlineSeconds=30),
            "spec.progressDeadlineSeconds: Invalid value: 30: must be greater than minReadySeconds",
        ),
        (manifest(revisionHistoryLimit=-2), "spec.revisionHistoryLimit: Invalid value: -2"),
        # int32 fields: the API server's decoder refuses more; a ReplicaSet written from it would wrap around.
        (
            manifest(replicas=99999999999),
            "spec.replicas: Invalid value: 99999999999: must be less than or equal to 2147483647 (an int32)",
        ),
        (manifest(replicas=2**31), "spec.replicas: Invalid value: 2147483648: must be less than or equal"),
        (manifest(minReadySeconds=2**31), "spec.minReadySeconds: Invalid value: 2147483648"),
        (manifest(progressDeadlineSeconds=2**63), "spec.progressDeadlineSeconds: Invalid value: 9223372036854775808"),
        (manifest(revisionHistoryLimit=2**31), "spec.revisionHistoryLimit: Invalid value: 2147483648"),
        (
            manifest(strategy={"rollingUpdate": {"maxSurge": 2**31}}),
            "maxSurge: Invalid value: 2147483648: must be less than or equal to 2147483647",
        ),
        ({**BASE, "metadata": {"name": "Web_1"}}, 'metadata.name: Invalid value: "Web_1"'),
    ],
)
def test_bad_manifests_are_refused_with_the_api_servers_words(document: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidManifest) as refused:
        parse_workload(document, default_namespace="default")
    assert message in refused.value.message
    assert refused.value.exit_code == 2


def test_every_problem_is_listed_at_once() -> None:
    with pytest.raises(InvalidManifest) as refused:
        parse_workload(
            manifest(replicas=-1, strategy={"rollingUpdate": {"maxUnavailable": "101%"}}), default_namespace="default"
        )
    assert refused.value.message.startswith('Deployment "web" is invalid: [spec.replicas')
    assert "101%" in refused.value.message


def test_maxsurge_percent_may_exceed_100_like_upstream() -> None:
    spec = parse_workload(
        manifest(strategy={"rollingUpdate": {"maxSurge": "200%", "maxUnavailable": 0}}), default_namespace="default"
    )
    assert spec.max_surge == "200%"


def test_recreate_has_no_surge() -> None:
    spec = parse_workload(manifest(strategy={"type": "Recreate"}), default_namespace="default")
    assert (spec.strategy, spec.rolling, spec.max_surge, spec.max_unavailable) == ("Recreate", False, 0, 0)


@pytest.mark.parametrize(("data", "expected"), [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968)])
def test_fnv1a_32_reference_values(data: bytes, expected: int) -> None:
    assert fnv1a_32(data) == expected


def test_hash_ignores_its_own_label_and_changes_with_the_template_and_collisions() -> None:
    template = BASE["spec"]["template"]
    labelled = copy.deepcopy(template)
    labelled["metadata"]["labels"]["pod-template-hash"] = "abc"
    changed = copy.deepcopy(template)
    changed["spec"]["containers"][0]["image"] = "y"

    assert pod_template_hash(template) == pod_template_hash(labelled)
    assert pod_template_hash(template) != pod_template_hash(changed)
    assert pod_template_hash(template, 1) != pod_template_hash(template)
    assert set(pod_template_hash(template)) <= set("bcdfghjklmnpqrstvwxz2456789")
    # Digits map to "456789bcdf": why controller hashes look like 5d8f6c7b9.
    assert safe_encode("0123456789") == "456789bcdf"


def _with_steps(steps: Any, **spec: Any) -> dict[str, Any]:
    document = manifest(**spec)
    document["metadata"]["annotations"] = {"rollout-plus.io/steps": steps}
    return document


def test_canary_steps_are_checked_with_the_manifest() -> None:
    assert parse_workload(_with_steps("setWeight 20; pause"), default_namespace="shop").annotations == {
        "rollout-plus.io/steps": "setWeight 20; pause"
    }
    with pytest.raises(InvalidSteps, match=r"step 1 \('setWeight 101'\): weight 101% is above 100%"):
        parse_workload(_with_steps("setWeight 101"), default_namespace="shop")
    with pytest.raises(InvalidSteps, match="must be a string of steps"):
        parse_workload(_with_steps(["setWeight 20"]), default_namespace="shop")


def test_canary_steps_need_a_rolling_update() -> None:
    with pytest.raises(InvalidSteps, match="steps need RollingUpdate"):
        parse_workload(_with_steps("setWeight 20", strategy={"type": "Recreate"}), default_namespace="shop")
    # an empty annotation asks for no steps
    assert (
        parse_workload(_with_steps("  ", strategy={"type": "Recreate"}), default_namespace="shop").strategy
        == "Recreate"
    )
