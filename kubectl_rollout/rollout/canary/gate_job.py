"""The Job a Job gate creates, and what the Job's conditions say: pure, dicts in and out.

The Job's name is a function of what is on the record (the workload, the
canary's template hash, the step, and when the step began), so that every
driver, before or after a crash, asks for the same Job: the second create
meets AlreadyExists and follows the Job that is there; a retry (the step
begins again) makes a new one.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

import yaml

from kubectl_rollout.kube.record_names import WORKLOAD_LABEL

#: a Job's name is a label value of its pods (job-name): at most 63 characters
LONGEST_JOB_NAME = 63
STEP_LABEL = "rollout-plus.io/canary-step"
HASH_LABEL = "rollout-plus.io/canary-hash"


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def gate_job_name(*, workload: str, canary_hash: str, step: int, step_started_at: float) -> str:
    """``web-5d8f7c9b-gate2-1a2b``: the workload, the canary's template hash, the step (from 1), and a digest of
    when the step began (a retry's Job is another one)."""
    tail = f"-{canary_hash}-gate{step + 1}-{_digest(repr(step_started_at), 4)}"
    room = LONGEST_JOB_NAME - len(tail)
    prefix = workload if len(workload) <= room else f"{workload[: room - 5].rstrip('-.')}-{_digest(workload, 4)}"
    return f"{prefix}{tail}"


def template_job(text: str, *, where: str) -> dict[str, Any]:
    """The Job manifest of a template; ValueError saying what is wrong with it (``where``: the ConfigMap and key)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(f"{where} is not YAML: {err}".splitlines()[0]) from None
    if not isinstance(document, dict) or document.get("kind") != "Job" or document.get("apiVersion") != "batch/v1":
        raise ValueError(f"{where} does not hold a batch/v1 Job manifest")
    template = (document.get("spec") or {}).get("template")
    if not isinstance(template, dict) or not (template.get("spec") or {}).get("containers"):
        raise ValueError(f"{where}: the Job has no spec.template with containers")
    return document


def gate_job(
    template: Mapping[str, Any],
    *,
    name: str,
    namespace: str,
    workload: str,
    step: int,
    canary_hash: str,
    environment: Mapping[str, str],
    owner: Mapping[str, Any],
    timeout: float,
) -> dict[str, Any]:
    """The Job to create from ``template``: named, labelled with the workload and the step, owned by the record
    (deleting the workload deletes its gates' Jobs), the gate's environment in each container, and no longer than
    ``timeout`` (its activeDeadlineSeconds, unless the template's is shorter)."""
    job = copy.deepcopy(dict(template))
    metadata = {k: v for k, v in (job.get("metadata") or {}).items() if k in ("labels", "annotations")}
    metadata["name"] = name
    metadata["namespace"] = namespace
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        WORKLOAD_LABEL: workload,
        STEP_LABEL: str(step + 1),
        HASH_LABEL: canary_hash,
    }
    metadata["ownerReferences"] = [dict(owner)]
    job["metadata"] = metadata
    spec = job["spec"]
    given = spec.get("activeDeadlineSeconds")
    deadline = max(1, int(timeout))
    spec["activeDeadlineSeconds"] = min(int(given), deadline) if isinstance(given, int) and given > 0 else deadline
    pod = spec["template"].setdefault("spec", {})
    for container in pod.get("containers") or []:
        kept = [e for e in container.get("env") or [] if e.get("name") not in environment]
        container["env"] = kept + [{"name": k, "value": v} for k, v in environment.items()]
    return job


def job_verdict(job: Mapping[str, Any]) -> tuple[bool, str] | None:
    """(passed, what the Job says) once it has ended (a Complete or Failed condition that is True); else None."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("status") != "True":
            continue
        said = ": ".join(x for x in (condition.get("reason"), condition.get("message")) if x)
        if condition.get("type") == "Complete":
            return True, "Complete" + (f" ({said})" if said else "")
        if condition.get("type") == "Failed":
            return False, "Failed" + (f": {said}" if said else "")
    return None
