"""How a managed workload asks for blue-green: annotations of its own manifest.

    rollout-plus.io/strategy: blueGreen
    rollout-plus.io/active-service: web          # required: the Service users reach
    rollout-plus.io/preview-service: web-preview # optional: the new revision, before promote
    rollout-plus.io/scale-down-delay: 30s        # the old ReplicaSet kept after the switch (Argo's 30 s)
    rollout-plus.io/auto-promote: "false"        # false (wait for promote), true, or a DURATION after ready
    rollout-plus.io/preview-replicas: "2"        # the new ReplicaSet's size until promote (default: replicas)

Pure: the manifest's annotations in, settings (or one error naming the
workload and every bad annotation) out. That the Services exist and select
the workload's pods is checked against the cluster (``services``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.kube.durations import go_duration, parse_duration
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.rollout.steps.format import STEPS_ANNOTATION

STRATEGY_ANNOTATION = "rollout-plus.io/strategy"
ACTIVE_SERVICE = "rollout-plus.io/active-service"
PREVIEW_SERVICE = "rollout-plus.io/preview-service"
SCALE_DOWN_DELAY = "rollout-plus.io/scale-down-delay"
AUTO_PROMOTE = "rollout-plus.io/auto-promote"
PREVIEW_REPLICAS = "rollout-plus.io/preview-replicas"
BLUE_GREEN = "blueGreen"
CANARY = "canary"
#: Argo Rollouts' scaleDownDelaySeconds default (utils/defaults: DefaultScaleDownDelaySeconds)
DEFAULT_SCALE_DOWN_DELAY_SECONDS = 30.0
#: the longest scale-down delay and auto-promote wait, as for a timed pause step
LONGEST_WAIT_SECONDS = 24 * 3600.0
#: a Service's name: an RFC 1035 label (apimachinery ValidateServiceName)
_SERVICE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
#: the annotations only blue-green reads: any of them without the strategy is a mistake worth saying
BLUE_GREEN_ANNOTATIONS = (ACTIVE_SERVICE, PREVIEW_SERVICE, SCALE_DOWN_DELAY, AUTO_PROMOTE, PREVIEW_REPLICAS)


class InvalidBlueGreen(UserFacingError):
    """Exit code 2, as an invalid manifest: nothing was sent to the cluster."""

    exit_code = 2


@dataclass(frozen=True, kw_only=True)
class BlueGreen:
    active_service: str
    preview_service: str | None = None
    scale_down_delay: float = DEFAULT_SCALE_DOWN_DELAY_SECONDS
    #: None: wait for ``promote``; 0: switch as soon as the preview is ready; N: N seconds after it is
    auto_promote_after: float | None = None
    #: the new ReplicaSet's size before promote (None: the workload's replicas)
    preview_replicas: int | None = None

    def preview_size(self, replicas: int) -> int:
        return replicas if self.preview_replicas is None else min(self.preview_replicas, replicas)

    def describe(self) -> str:
        """One line for people: what the workload's blue-green does."""
        preview = f", preview Service {self.preview_service}" if self.preview_service else ""
        if self.auto_promote_after is None:
            promote = "waits for promote"
        elif self.auto_promote_after == 0:
            promote = "promotes itself once the preview is ready"
        else:
            promote = f"promotes itself {go_duration(self.auto_promote_after)} after the preview is ready"
        return (
            f"blue-green: active Service {self.active_service}{preview}; {promote}; the old ReplicaSet is scaled "
            f"down {go_duration(self.scale_down_delay)} after the switch"
        )


def blue_green_of(annotations: Mapping[str, Any], *, workload: str, strategy_type: str) -> BlueGreen | None:
    """The workload's blue-green settings; None when it has none (a canary or a plain rolling update).

    Refused with every problem named (InvalidBlueGreen, exit 2): an unknown strategy, no active Service, the
    same Service twice, a bad delay or count, canary steps beside blue-green, a Recreate workload.
    """
    strategy = annotations.get(STRATEGY_ANNOTATION)
    given = [key for key in BLUE_GREEN_ANNOTATIONS if key in annotations]
    if strategy is None or strategy == CANARY:
        if given:
            raise _invalid(
                workload,
                [f"{', '.join(given)} without {STRATEGY_ANNOTATION}: {BLUE_GREEN}"],
                advice=f"add the annotation {STRATEGY_ANNOTATION}: {BLUE_GREEN}, or remove them",
            )
        return None
    if strategy != BLUE_GREEN:
        raise _invalid(
            workload,
            [f"{STRATEGY_ANNOTATION}: {strategy!r} is not a strategy"],
            advice=f"use {BLUE_GREEN} or {CANARY}",
        )
    errors: list[str] = []
    steps = annotations.get(STEPS_ANNOTATION)
    if isinstance(steps, str) and steps.strip():
        errors.append(f"canary steps ({STEPS_ANNOTATION}) and blue-green cannot go together")
    if strategy_type != "RollingUpdate":
        errors.append(
            f"the {strategy_type} strategy stops the old pods first; blue-green needs RollingUpdate "
            "(old and new pods side by side)"
        )
    active = _service_name(annotations, ACTIVE_SERVICE, errors, required=True)
    preview = _service_name(annotations, PREVIEW_SERVICE, errors, required=False)
    if active is not None and active == preview:
        errors.append(f"{ACTIVE_SERVICE} and {PREVIEW_SERVICE} name the same Service {active!r}")
    delay = _seconds(annotations.get(SCALE_DOWN_DELAY), SCALE_DOWN_DELAY, errors)
    auto = _auto_promote(annotations.get(AUTO_PROMOTE), errors)
    count = _preview_replicas(annotations.get(PREVIEW_REPLICAS), errors)
    if errors or active is None:
        raise _invalid(workload, errors, advice="fix the annotations")
    return BlueGreen(
        active_service=active,
        preview_service=preview,
        scale_down_delay=DEFAULT_SCALE_DOWN_DELAY_SECONDS if delay is None else delay,
        auto_promote_after=auto,
        preview_replicas=count,
    )


def _invalid(workload: str, errors: list[str], *, advice: str) -> InvalidBlueGreen:
    return InvalidBlueGreen(
        f'workload "{workload}" has an invalid blue-green strategy: {"; ".join(errors)}; {advice}; nothing was changed'
    )


def _service_name(annotations: Mapping[str, Any], key: str, errors: list[str], *, required: bool) -> str | None:
    value = annotations.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            errors.append(f"{key} is required (the Service whose selector is switched at promote)")
        return None
    if not isinstance(value, str) or not _SERVICE_NAME.match(value):
        errors.append(f"{key}: {value!r} is not a Service name (a lowercase RFC 1035 label of at most 63 characters)")
        return None
    return value


def _seconds(value: Any, key: str, errors: list[str]) -> float | None:
    if value is None:
        return None
    try:
        seconds = parse_duration(str(value))
    except ValueError as err:
        errors.append(f"{key}: {err}")
        return None
    if seconds > LONGEST_WAIT_SECONDS:
        errors.append(f"{key}: {value!r} is longer than {go_duration(LONGEST_WAIT_SECONDS)}")
        return None
    return seconds


def _auto_promote(value: Any, errors: list[str]) -> float | None:
    text = str(value).strip().lower() if value is not None else "false"
    if text == "false":
        return None
    if text == "true":
        return 0.0
    try:
        parse_duration(text)
    except ValueError:
        errors.append(f"{AUTO_PROMOTE}: {value!r} is neither false, true nor a duration like 30s or 5m")
        return None
    return _seconds(value, AUTO_PROMOTE, errors)


def _preview_replicas(value: Any, errors: list[str]) -> int | None:
    if value is None:
        return None
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        errors.append(f"{PREVIEW_REPLICAS}: {value!r} is not a count of at least 1")
        return None
    return int(text)
