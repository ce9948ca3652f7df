"""A managed workload's spec: an ordinary apps/v1 Deployment manifest, defaulted and validated.

Defaults and validation follow the API server's for apps/v1 Deployments
(pkg/apis/apps/v1/defaults.go, pkg/apis/apps/validation), so a manifest that
`kubectl apply` would accept is accepted here, and one it would refuse is
refused before anything is created, with the API server's wording:

    Deployment "web" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be
    greater than 100%

Pure: dictionaries in, a frozen spec (or an error listing every problem) out.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.kube.api_bounds import INT32_MAX
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.label_selectors import selector_matches_dict
from kubectl_rollout.kube.names import DNS_SUBDOMAIN, MAX_NAME_LENGTH
from kubectl_rollout.kube.record_names import RECORD_PREFIX
from kubectl_rollout.rollout.steps.format import STEPS_ANNOTATION, InvalidSteps, parse_steps

_PERCENT = re.compile(r"^(\d+)%$")

DEFAULT_SURGE = "25%"
DEFAULT_UNAVAILABLE = "25%"
DEFAULT_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE = 600


class InvalidManifest(UserFacingError):
    """Exit code 2: the input is wrong, nothing was sent to the cluster."""

    exit_code = 2


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    name: str
    namespace: str
    replicas: int
    #: metav1.LabelSelector as a dict (matchLabels / matchExpressions)
    selector: Mapping[str, Any]
    #: the pod template (metadata + spec), as given
    template: Mapping[str, Any]
    strategy: str
    max_surge: int | str
    max_unavailable: int | str
    min_ready_seconds: int
    revision_history_limit: int
    progress_deadline_seconds: int
    paused: bool
    labels: Mapping[str, str]
    annotations: Mapping[str, str]

    @property
    def rolling(self) -> bool:
        return self.strategy == "RollingUpdate"


def _quote(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def _int_or_percent(value: Any, path: str, errors: list[str], *, at_most_100: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        errors.append(f"{path}: Invalid value: {_quote(value)}: must be an integer or percentage (e.g '5%')")
        return
    if isinstance(value, int):
        if value < 0:
            errors.append(f"{path}: Invalid value: {value}: must be greater than or equal to 0")
        elif value > INT32_MAX:
            errors.append(f"{path}: Invalid value: {value}: must be less than or equal to {INT32_MAX} (an int32)")
        return
    found = _PERCENT.match(value)
    if found is None:
        errors.append(f"{path}: Invalid value: {_quote(value)}: must be an integer or percentage (e.g '5%')")
    elif at_most_100 and int(found.group(1)) > 100:
        errors.append(f"{path}: Invalid value: {_quote(value)}: must not be greater than 100%")


def _is_zero(value: int | str) -> bool:
    return value == 0 or value == "0%"


def _non_negative_int(document: Mapping[str, Any], key: str, default: int, path: str, errors: list[str]) -> int:
    value = document.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(f"{path}: Invalid value: {_quote(value)}: must be an integer")
        return default
    if value < 0:
        errors.append(f"{path}: Invalid value: {value}: must be greater than or equal to 0")
    elif value > INT32_MAX:
        # The API server's decoder refuses it (an int32 field); a ReplicaSet written from it would wrap.
        errors.append(f"{path}: Invalid value: {value}: must be less than or equal to {INT32_MAX} (an int32)")
        return default
    return value


def parse_workload(document: Mapping[str, Any], *, default_namespace: str) -> WorkloadSpec:
    """Default and validate a Deployment manifest; raise InvalidManifest listing every problem."""
    metadata = document.get("metadata") or {}
    name = str(metadata.get("name") or "")
    _require_deployment(document, name)
    errors: list[str] = []
    _check_name(name, errors)
    namespace = str(metadata.get("namespace") or default_namespace)

    spec = document.get("spec") or {}
    replicas = _non_negative_int(spec, "replicas", 1, "spec.replicas", errors)
    selector = spec.get("selector")
    template = spec.get("template") or {}
    _check_selector(selector, template, errors)
    _check_containers(template, errors)
    strategy_type, surge, unavailable = _strategy(spec.get("strategy") or {}, errors)
    min_ready = _non_negative_int(spec, "minReadySeconds", 0, "spec.minReadySeconds", errors)
    history = _non_negative_int(
        spec, "revisionHistoryLimit", DEFAULT_HISTORY_LIMIT, "spec.revisionHistoryLimit", errors
    )
    deadline = _non_negative_int(
        spec, "progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE, "spec.progressDeadlineSeconds", errors
    )
    if deadline <= min_ready:
        errors.append(f"spec.progressDeadlineSeconds: Invalid value: {deadline}: must be greater than minReadySeconds")

    if errors:
        label = f'Deployment "{name}"' if name else "Deployment"
        joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise InvalidManifest(f"{label} is invalid: {joined}")
    _check_steps(metadata.get("annotations") or {}, name, strategy_type)
    return WorkloadSpec(
        name=name,
        namespace=namespace,
        replicas=replicas,
        selector=copy.deepcopy(dict(selector or {})),
        template=copy.deepcopy(dict(template)),
        strategy=strategy_type,
        max_surge=surge,
        max_unavailable=unavailable,
        min_ready_seconds=min_ready,
        revision_history_limit=history,
        progress_deadline_seconds=deadline,
        paused=bool(spec.get("paused", False)),
        labels=dict(metadata.get("labels") or {}),
        annotations=dict(metadata.get("annotations") or {}),
    )


def _check_steps(annotations: Mapping[str, Any], name: str, strategy_type: str) -> None:
    """Canary steps (the annotation) parse, and come with a RollingUpdate: Recreate has no room for a canary."""
    text = annotations.get(STEPS_ANNOTATION)
    if text is None:
        return
    if not isinstance(text, str):
        raise InvalidSteps(f'workload "{name}": the annotation {STEPS_ANNOTATION} must be a string of steps')
    if text.strip() and parse_steps(text, workload=name) and strategy_type != "RollingUpdate":
        raise InvalidSteps(
            f'workload "{name}" has canary steps ({STEPS_ANNOTATION}) and the {strategy_type} strategy: steps '
            "need RollingUpdate (old and new pods side by side); nothing was changed"
        )


def _require_deployment(document: Mapping[str, Any], name: str) -> None:
    kind, api_version = document.get("kind"), document.get("apiVersion")
    if kind != "Deployment" or api_version != "apps/v1":
        raise InvalidManifest(
            f"expected an apps/v1 Deployment manifest, got {api_version or '?'} {kind or '?'}"
            + (f' "{name}"' if name else "")
            + "; managed workloads are described by ordinary apps/v1 Deployment manifests"
        )


def _check_name(name: str, errors: list[str]) -> None:
    # The record is a ConfigMap named rollout-plus.NAME, which must be a valid name too.
    longest = MAX_NAME_LENGTH - len(RECORD_PREFIX)
    if not name:
        errors.append("metadata.name: Required value: name is required")
    elif len(name) > longest or not DNS_SUBDOMAIN.match(name):
        errors.append(
            f"metadata.name: Invalid value: {_quote(name)}: a lowercase RFC 1123 subdomain of at most "
            f"{longest} characters"
        )


def _check_selector(selector: Any, template: Mapping[str, Any], errors: list[str]) -> None:
    template_labels = (template.get("metadata") or {}).get("labels") or {}
    if not selector:
        errors.append("spec.selector: Required value")
    elif not (selector.get("matchLabels") or selector.get("matchExpressions")):
        errors.append("spec.selector: Invalid value: {}: empty selector is invalid for deployment")
    elif not selector_matches_dict(selector, template_labels):
        errors.append(
            f"spec.template.metadata.labels: Invalid value: {json.dumps(template_labels, sort_keys=True)}: "
            "`selector` does not match template `labels`"
        )


def _check_containers(template: Mapping[str, Any], errors: list[str]) -> None:
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers:
        errors.append("spec.template.spec.containers: Required value")
    for index, container in enumerate(containers):
        if not container.get("name"):
            errors.append(f"spec.template.spec.containers[{index}].name: Required value")
        if not container.get("image"):
            errors.append(f"spec.template.spec.containers[{index}].image: Required value")


def _strategy(strategy: Mapping[str, Any], errors: list[str]) -> tuple[str, int | str, int | str]:
    """The strategy's type, maxSurge and maxUnavailable, defaulted (Recreate: 0 and 0)."""
    strategy_type = strategy.get("type") or "RollingUpdate"
    surge: int | str = DEFAULT_SURGE
    unavailable: int | str = DEFAULT_UNAVAILABLE
    if strategy_type == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            errors.append(
                "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
            )
        surge, unavailable = 0, 0
    elif strategy_type == "RollingUpdate":
        rolling = strategy.get("rollingUpdate") or {}
        surge = rolling.get("maxSurge", DEFAULT_SURGE)
        unavailable = rolling.get("maxUnavailable", DEFAULT_UNAVAILABLE)
        path = "spec.strategy.rollingUpdate"
        _int_or_percent(unavailable, f"{path}.maxUnavailable", errors, at_most_100=True)
        _int_or_percent(surge, f"{path}.maxSurge", errors, at_most_100=False)
        if _is_zero(unavailable) and _is_zero(surge):
            errors.append(
                f"{path}.maxUnavailable: Invalid value: {_quote(unavailable)}: may not be 0 when `maxSurge` is 0"
            )
    else:
        errors.append(
            f"spec.strategy.type: Unsupported value: {_quote(strategy_type)}: supported values: "
            '"Recreate", "RollingUpdate"'
        )
    return strategy_type, surge, unavailable
