"""A Job gate's template, read from its ConfigMap: checked by ``apply`` before anything is written, read again by
the driver when the gate's step begins (the template as it is then is the one that runs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.cluster_access import Cluster, describe_api_error
from kubectl_rollout.rollout.canary.gate_job import template_job
from kubectl_rollout.rollout.steps.format import STEPS_ANNOTATION, InvalidSteps, JobGate, parse_steps
from kubectl_rollout.rollout.steps.job_gate import JobTemplateRef


def read_template(cluster: Cluster, namespace: str, ref: JobTemplateRef) -> dict[str, Any]:
    """The Job manifest ``ref`` names; ValueError saying what is missing or wrong, and what to do."""
    where = f'ConfigMap "{ref.config_map}" (namespace "{namespace}")'
    try:
        config_map = cluster.core.read_namespaced_config_map(ref.config_map, namespace)
    except ApiException as err:
        if err.status == 404:
            raise ValueError(f"{where} is not found; create it with the Job manifest under key {ref.key}") from None
        raise ValueError(f"{where} could not be read: {describe_api_error(err)}") from None
    text = (config_map.data or {}).get(ref.key)
    if text is None:
        keys = ", ".join(sorted(config_map.data or {})) or "none"
        raise ValueError(f"{where} has no key {ref.key} (its keys: {keys}); write the Job manifest there")
    return template_job(text, where=f"{where}, key {ref.key},")


def check_job_templates(cluster: Cluster, *, namespace: str, workload: str, annotations: Mapping[str, str]) -> None:
    """Every Job gate of the workload's steps names a template that is there and holds a Job; InvalidSteps (exit 2)
    naming the workload and each step whose template is not."""
    text = annotations.get(STEPS_ANNOTATION)
    if not isinstance(text, str) or not text.strip():
        return
    errors: list[str] = []
    for index, step in enumerate(parse_steps(text, workload=workload), start=1):
        if isinstance(step, JobGate):
            try:
                read_template(cluster, namespace, step.template)
            except ValueError as err:
                errors.append(f"step {index} ({step}): {err}")
    if errors:
        raise InvalidSteps(
            f'workload "{workload}" has invalid canary steps ({STEPS_ANNOTATION}): '
            + "; ".join(errors)
            + "; nothing was changed"
        )
