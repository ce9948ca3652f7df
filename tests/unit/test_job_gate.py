"""The Job gate's pure parts: its step's format, the Job's name and shape, what the Job's conditions say."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

from kubectl_rollout.kube.record_names import WORKLOAD_LABEL
from kubectl_rollout.rollout.canary.gate_job import (
    LONGEST_JOB_NAME,
    STEP_LABEL,
    gate_job,
    gate_job_name,
    job_verdict,
    template_job,
)
from kubectl_rollout.rollout.canary.state import CanaryState, GateResult, Hold, RunGate, decide
from kubectl_rollout.rollout.steps.format import InvalidSteps, JobGate, OnFailure, parse_steps
from kubectl_rollout.rollout.steps.job_gate import JobTemplateRef
from kubectl_rollout.rollout.steps.weights import Counts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gate job: smoke", JobGate(template=JobTemplateRef(config_map="smoke"))),
        ("gate: job: smoke/check.yaml", JobGate(template=JobTemplateRef(config_map="smoke", key="check.yaml"))),
        (
            "gate job timeout=90s on-failure=pause: smoke",
            JobGate(template=JobTemplateRef(config_map="smoke"), timeout=90.0, on_failure=OnFailure.PAUSE),
        ),
    ],
)
def test_job_gates_parse_and_write_back(text: str, expected: JobGate) -> None:
    assert parse_steps(text, workload="web") == (expected,)
    assert parse_steps(str(expected), workload="web") == (expected,)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("gate job:", "the Job gate names no template: write gate job: CONFIGMAP"),
        ("gate job smoke", "a Job gate names its template after a colon"),
        ("gate job: Smoke_Test", "'Smoke_Test' is not a ConfigMap's name (and key)"),
        ("gate job timeout=0s: smoke", "timeout=0s: from 1s to 24h0m0s"),
        ("gate job retries=3: smoke", "unknown gate option 'retries=3'"),
    ],
)
def test_bad_job_gates_are_refused_naming_the_step(text: str, words: str) -> None:
    with pytest.raises(InvalidSteps) as refused:
        parse_steps(f"setWeight 10\n{text}", workload="web")
    assert str(refused.value).startswith('workload "web" has invalid canary steps (rollout-plus.io/steps): step 2 (')
    assert words in str(refused.value)


def test_the_jobs_name_is_the_same_for_every_driver_and_new_for_a_retry() -> None:
    name = gate_job_name(workload="web", canary_hash="5d8f7c9b4", step=1, step_started_at=1000.5)
    assert name.startswith("web-5d8f7c9b4-gate2-")
    assert name == gate_job_name(workload="web", canary_hash="5d8f7c9b4", step=1, step_started_at=1000.5)
    assert name != gate_job_name(workload="web", canary_hash="5d8f7c9b4", step=1, step_started_at=2000.5)
    assert name != gate_job_name(workload="web", canary_hash="5d8f7c9b4", step=2, step_started_at=1000.5)
    long_a = gate_job_name(workload="a" * 60 + "x", canary_hash="5d8f7c9b4", step=1, step_started_at=1.0)
    long_b = gate_job_name(workload="a" * 60 + "y", canary_hash="5d8f7c9b4", step=1, step_started_at=1.0)
    assert len(long_a) <= LONGEST_JOB_NAME
    assert long_a != long_b


TEMPLATE = """
apiVersion: batch/v1
kind: Job
metadata:
  name: from-the-template
  namespace: elsewhere
  labels: {team: checks}
spec:
  backoffLimit: 0
  activeDeadlineSeconds: 30
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: check
        image: registry.example/check:v1
        env: [{name: ROLLOUT_PLUS_STEP, value: stale}, {name: KEEP, value: "1"}]
"""


def test_the_job_is_named_labelled_owned_bounded_and_told_where_it_runs() -> None:
    job = gate_job(
        template_job(TEMPLATE, where="ConfigMap smoke"),
        name="web-h2-gate2-abcd",
        namespace="shop",
        workload="web",
        step=1,
        canary_hash="h2",
        environment={"ROLLOUT_PLUS_WORKLOAD": "web", "ROLLOUT_PLUS_STEP": "2"},
        owner={"apiVersion": "v1", "kind": "ConfigMap", "name": "rollout-plus.web", "uid": "u1"},
        timeout=600.0,
    )
    assert (job["metadata"]["name"], job["metadata"]["namespace"]) == ("web-h2-gate2-abcd", "shop")
    assert job["metadata"]["labels"] == {
        "team": "checks",
        WORKLOAD_LABEL: "web",
        STEP_LABEL: "2",
        "rollout-plus.io/canary-hash": "h2",
    }
    assert job["metadata"]["ownerReferences"][0]["name"] == "rollout-plus.web"
    assert job["spec"]["activeDeadlineSeconds"] == 30  # the template's, shorter than the gate's timeout
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [
        {"name": "KEEP", "value": "1"},
        {"name": "ROLLOUT_PLUS_WORKLOAD", "value": "web"},
        {"name": "ROLLOUT_PLUS_STEP", "value": "2"},
    ]
    assert yaml.safe_load(TEMPLATE)["metadata"]["name"] == "from-the-template"  # the template is not changed


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("kind: Deployment\napiVersion: apps/v1", "does not hold a batch/v1 Job manifest"),
        ("apiVersion: batch/v1\nkind: Job\nspec: {template: {spec: {}}}", "the Job has no spec.template"),
        ("{", "is not YAML"),
    ],
)
def test_templates_that_hold_no_job_are_refused(text: str, words: str) -> None:
    with pytest.raises(ValueError, match="ConfigMap smoke") as refused:
        template_job(text, where="ConfigMap smoke")
    assert words in str(refused.value)


def condition(kind: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], None),
        # the Job controller's interim conditions (1.31+) are not an end yet
        ([condition("SuccessCriteriaMet")], None),
        ([condition("FailureTarget", reason="BackoffLimitExceeded")], None),
        ([condition("Complete", "False")], None),
        ([condition("SuccessCriteriaMet"), condition("Complete")], (True, "Complete")),
        (
            [condition("FailureTarget"), condition("Failed", reason="BackoffLimitExceeded", message="reached")],
            (False, "Failed: BackoffLimitExceeded: reached"),
        ),
        ([condition("Failed", reason="DeadlineExceeded")], (False, "Failed: DeadlineExceeded")),
    ],
)
def test_job_verdict(conditions: list[dict[str, Any]], expected: tuple[bool, str] | None) -> None:
    assert job_verdict({"status": {"conditions": conditions}}) == expected


def test_a_job_gate_runs_until_its_result_is_recorded() -> None:
    steps = parse_steps("setWeight 20\ngate job: smoke\ngate job on-failure=pause: smoke", workload="web")
    state = CanaryState(canary_hash="h2", stable="web-1", steps=tuple(str(s) for s in steps), step=1)
    goal = Counts(canary=2, stable=8)
    assert decide(steps=steps, state=state, replicas=10, now=0.0) == RunGate(goal=goal, gate=steps[1])  # type: ignore[arg-type]
    failed = dataclasses.replace(state, step=2, gate=GateResult(step=2, ok=False, output="Job x: Failed"))
    assert decide(steps=steps, state=failed, replicas=10, now=0.0) == Hold(goal=goal, until=None, mark_paused=True)
