"""The Job gate's step: ``gate job [timeout=DURATION] [on-failure=abort|pause]: CONFIGMAP[/KEY]``.

The template is a ``batch/v1`` Job manifest kept in a ConfigMap of the
workload's namespace, under ``KEY`` (default ``job.yaml``). A ConfigMap, not a
file: the driver that creates the Job may be the agent of another machine, or
the one that takes over after a crash, and each must read the same template;
in the cluster, beside the workload, it is one object that any driver reads,
that ``kubectl edit`` changes, that RBAC guards and that ``apply`` checks
before anything is written.

``timeout`` (default 10m, from 1s to 24h) bounds the Job: it becomes the Job's
``activeDeadlineSeconds`` unless the template's own is shorter, so that the
Job controller itself fails a Job that runs too long.

Pure: text in, a frozen reference (or ValueError saying what to write instead) out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubectl_rollout.kube.durations import go_duration, parse_duration

#: the ConfigMap's key that holds the Job manifest, unless the step names another
DEFAULT_KEY = "job.yaml"
DEFAULT_TIMEOUT_SECONDS = 600.0
LONGEST_TIMEOUT_SECONDS = 24 * 3600.0

_NAME = r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?"
_KEY = r"[-._a-zA-Z0-9]{1,253}"
_REFERENCE = re.compile(rf"^({_NAME})(?:/({_KEY}))?$")


@dataclass(frozen=True, kw_only=True)
class JobTemplateRef:
    """Where the Job's manifest is: ConfigMap ``config_map`` of the workload's namespace, key ``key``."""

    config_map: str
    key: str = DEFAULT_KEY

    def __str__(self) -> str:
        return self.config_map if self.key == DEFAULT_KEY else f"{self.config_map}/{self.key}"


def parse_template_ref(text: str) -> JobTemplateRef:
    if not text:
        raise ValueError("the Job gate names no template: write gate job: CONFIGMAP (its key job.yaml holds the Job)")
    found = _REFERENCE.match(text)
    if found is None:
        raise ValueError(
            f"{text!r} is not a ConfigMap's name (and key): write gate job: CONFIGMAP or gate job: CONFIGMAP/KEY"
        )
    return JobTemplateRef(config_map=found.group(1), key=found.group(3) or DEFAULT_KEY)


def parse_timeout(text: str) -> float:
    seconds = parse_duration(text)
    if not 1.0 <= seconds <= LONGEST_TIMEOUT_SECONDS:
        raise ValueError(f"timeout={text}: from 1s to {go_duration(LONGEST_TIMEOUT_SECONDS)}")
    return seconds
