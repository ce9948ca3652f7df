"""The Prometheus gate's pure parts: its step's format, what one answer of the query API says, the verdict.

The answers are shaped like those Argo Rollouts' Prometheus provider handles
(metricproviders/prometheus: a scalar, a vector, a matrix) and the cases its
analysis tests classify (utils/evaluate, analysis/analysis.go); where we
classify differently (an empty vector, NaN, the limits) the case says so.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from kubectl_rollout.rollout.canary.prometheus_analysis import Measurement, Phase, classify, verdict
from kubectl_rollout.rollout.canary.prometheus_query import proxy_path
from kubectl_rollout.rollout.canary.state import (
    Advance,
    CanaryState,
    GateFailed,
    GateResult,
    Hold,
    Mark,
    Measure,
    decide,
    next_step,
)
from kubectl_rollout.rollout.steps.format import InvalidSteps, OnFailure, PrometheusGate, parse_steps
from kubectl_rollout.rollout.steps.prometheus_gate import (
    PrometheusGateOptions,
    PrometheusService,
    Threshold,
    parse_threshold,
)
from kubectl_rollout.rollout.steps.weights import Counts

SERVICE = "service=monitoring/prometheus:9090"
QUERY = 'sum(rate(http_requests_total{code=~"5.."}[1m])) / sum(rate(http_requests_total[1m]))'


def gate(text: str) -> PrometheusGate:
    (step,) = parse_steps(text, workload="web")
    assert isinstance(step, PrometheusGate)
    return step


# --- the step's format -------------------------------------------------------------------------------------


def test_the_issue_example_parses_with_its_defaults() -> None:
    found = gate(f"gate prometheus {SERVICE} threshold='< 0.05': {QUERY}")
    assert found == PrometheusGate(
        query=QUERY,
        options=PrometheusGateOptions(
            service=PrometheusService(namespace="monitoring", name="prometheus", port="9090"),
            threshold=Threshold(op="<", value=0.05),
            interval=30.0,
            count=3,
            failure_limit=1,
            inconclusive_limit=2,
        ),
    )
    # Written back (the record keeps the steps as text), it parses to the same step.
    assert gate(str(found)) == found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "gate prometheus service=prometheus:web threshold=>=99.5 interval=5s count=4 failure-limit=2 "
            "inconclusive-limit=3 on-failure=pause: avg(up)",
            (PrometheusService(namespace="", name="prometheus", port="web"), Threshold(op=">=", value=99.5), 5.0, 4),
        ),
        (
            'gate: prometheus threshold="!= 0" service=a/b:1 count=1: x; y',  # the query keeps its ";"
            (PrometheusService(namespace="a", name="b", port="1"), Threshold(op="!=", value=0.0), 30.0, 1),
        ),
    ],
)
def test_options(text: str, expected: tuple[Any, ...]) -> None:
    found = gate(text)
    assert (found.options.service, found.options.threshold, found.options.interval, found.options.count) == expected
    assert gate(str(found)) == found


def test_on_failure_and_the_query_taking_the_rest_of_its_line() -> None:
    steps = parse_steps(
        f"setWeight 10; gate prometheus {SERVICE} threshold=<1 on-failure=pause: a; b\npause", workload="w"
    )
    assert len(steps) == 3
    assert isinstance(steps[1], PrometheusGate)
    assert (steps[1].query, steps[1].on_failure) == ("a; b", OnFailure.PAUSE)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (f"gate prometheus {SERVICE} threshold='< 0.05':", "the Prometheus gate has no query"),
        (f"gate prometheus {SERVICE} threshold='< 0.05'", "gives its query after a colon"),
        (f"gate prometheus {SERVICE}: up", "the Prometheus gate has no threshold"),
        ("gate prometheus threshold=<1: up", "the Prometheus gate names no service"),
        (f"gate prometheus {SERVICE} threshold='about 5': up", "threshold 'about 5' is not a comparison"),
        (f"gate prometheus {SERVICE} threshold='< 1e999': up", "compares with an infinite number"),
        (f"gate prometheus {SERVICE} threshold=<1 count=0: up", "count=0: a whole number from 1 to 60"),
        (f"gate prometheus {SERVICE} threshold=<1 count=2 failure-limit=3: up", "failure-limit=3: a whole number"),
        (f"gate prometheus {SERVICE} threshold=<1 interval=100ms: up", "interval=100ms: from 1s to 1h0m0s"),
        (f"gate prometheus {SERVICE} threshold=<1 on-failure=retry: up", "on-failure=retry: abort or pause"),
        (f"gate prometheus {SERVICE} threshold=<1 speed=9: up", "unknown gate option 'speed=9'"),
        (f"gate prometheus {SERVICE} threshold=<1 threshold=>2: up", "option threshold is given twice"),
        ("gate prometheus service=prometheus threshold=<1: up", "is not [NAMESPACE/]NAME:PORT"),
        ("gate prometheus service=p:70000 threshold=<1: up", "is not [NAMESPACE/]NAME:PORT"),
        (f"gate prometheus {SERVICE} threshold='<1: up", "gives its query after a colon"),  # the quote hides it
        (f"gate prometheus {SERVICE} threshold=<1 count=3\\: up", "the gate's options do not parse"),
    ],
)
def test_refusals_name_the_workload_the_step_and_what_to_write(text: str, words: str) -> None:
    with pytest.raises(InvalidSteps) as refused:
        parse_steps(f"setWeight 10\n{text}", workload="web")
    message = str(refused.value)
    assert message.startswith('workload "web" has invalid canary steps (rollout-plus.io/steps): step 2 (')
    assert words in message


@pytest.mark.parametrize(
    ("text", "passing", "failing"),
    [("< 0.05", 0.049, 0.05), ("<=1", 1.0, 1.01), (">0", 0.1, 0.0), (">= 99.5", 99.5, 99.4), ("== 1", 1, 2)],
)
def test_threshold(text: str, passing: float, failing: float) -> None:
    threshold = parse_threshold(text)
    assert threshold.passes(passing)
    assert not threshold.passes(failing)


def test_the_proxy_path_defaults_to_the_workloads_namespace() -> None:
    service = PrometheusService(namespace="", name="prometheus", port="web")
    assert proxy_path(service, namespace="shop") == "/api/v1/namespaces/shop/services/prometheus:web/proxy/api/v1/query"


# --- what one answer says ------------------------------------------------------------------------------------


def ok(result_type: str, result: Any) -> str:
    return json.dumps({"status": "success", "data": {"resultType": result_type, "result": result}})


def sample(value: str, **labels: str) -> dict[str, Any]:
    return {"metric": labels, "value": [1_700_000_000.123, value]}


BELOW = Threshold(op="<", value=0.05)


@pytest.mark.parametrize(
    ("status", "body", "phase", "value", "detail"),
    [
        # Argo: a scalar is compared as one number
        (200, ok("scalar", [1_700_000_000, "0.01"]), Phase.SUCCESSFUL, "0.01", ""),
        (200, ok("scalar", [1_700_000_000, "0.2"]), Phase.FAILED, "0.2", ""),
        # Argo: a vector gives its samples; one sample is one number here
        (200, ok("vector", [sample("0.0")]), Phase.SUCCESSFUL, "0.0", ""),
        (200, ok("vector", [sample("0.05", job="web")]), Phase.FAILED, "0.05", ""),
        (200, ok("vector", [sample("+Inf")]), Phase.FAILED, "+Inf", ""),
        # Argo: an empty vector cannot be evaluated (Error, against consecutiveErrorLimit); here inconclusive
        (200, ok("vector", []), Phase.INCONCLUSIVE, "", "no sample: the query gave an empty vector"),
        # Argo: NaN < 0.05 is false, so Failed; here NaN (0/0, no traffic) says nothing: inconclusive
        (200, ok("vector", [sample("NaN")]), Phase.INCONCLUSIVE, "NaN", "NaN (no data to divide"),
        (200, ok("scalar", [1_700_000_000, "NaN"]), Phase.INCONCLUSIVE, "NaN", "NaN"),
        # several samples: which one would count?
        (200, ok("vector", [sample("0", pod="a"), sample("1", pod="b")]), Phase.INCONCLUSIVE, "", "2 samples"),
        # a range query's matrix (Argo flattens it); an instant gate wants one number
        (200, ok("matrix", [{"metric": {}, "values": [[1, "0"]]}]), Phase.INCONCLUSIVE, "", "a matrix result"),
        (200, ok("string", [1, "x"]), Phase.INCONCLUSIVE, "", "a string result"),
        (200, ok("vector", [{"metric": {}, "value": [1, 0.01]}]), Phase.INCONCLUSIVE, "", "a malformed sample"),
        (200, ok("vector", [sample("many")]), Phase.INCONCLUSIVE, "", "a sample that is not a number: many"),
        # Prometheus refused the query (Argo: Error)
        (
            400,
            json.dumps({"status": "error", "errorType": "bad_data", "error": 'parse error: unexpected "}"'}),
            Phase.INCONCLUSIVE,
            "",
            'HTTP 400: parse error: unexpected "}"',
        ),
        # the API server's own refusals: no endpoints, no permission
        (
            503,
            json.dumps({"kind": "Status", "message": 'no endpoints available for service "prometheus:9090"'}),
            Phase.INCONCLUSIVE,
            "",
            'HTTP 503: no endpoints available for service "prometheus:9090"',
        ),
        (403, json.dumps({"kind": "Status", "message": "forbidden"}), Phase.INCONCLUSIVE, "", "HTTP 403: forbidden"),
        (502, "Error trying to reach service: dial tcp: connection refused", Phase.INCONCLUSIVE, "", "HTTP 502, not"),
        (0, "ReadTimeoutError: timed out", Phase.INCONCLUSIVE, "", "no answer: ReadTimeoutError"),
        (200, "[]", Phase.INCONCLUSIVE, "", "HTTP 200, not the query API's JSON"),
    ],
)
def test_classify(status: int, body: str, phase: Phase, value: str, detail: str) -> None:
    answer = classify(status=status, body=body, threshold=BELOW)
    assert (answer.phase, answer.value) == (phase, value)
    assert answer.detail.startswith(detail) if detail else answer.detail == ""


# --- the verdict ---------------------------------------------------------------------------------------------

S, F, N = Phase.SUCCESSFUL, Phase.FAILED, Phase.INCONCLUSIVE  # N: neither


def options(count: int = 3, failure_limit: int = 1, inconclusive_limit: int = 2) -> PrometheusGateOptions:
    return PrometheusGateOptions(
        service=PrometheusService(namespace="", name="p", port="9090"),
        threshold=BELOW,
        count=count,
        failure_limit=failure_limit,
        inconclusive_limit=inconclusive_limit,
    )


@pytest.mark.parametrize(
    ("phases", "settings", "expected"),
    [
        ([], options(), None),
        ([S, S], options(), None),
        ([S, S, S], options(), S),  # Argo: count reached, failureLimit not: Successful
        ([F], options(), F),  # failure-limit=1 is Argo's failureLimit 0: the first failure fails
        ([S, F], options(failure_limit=2), None),
        ([S, F, F], options(failure_limit=2), F),
        ([S, F, S], options(failure_limit=2), S),  # one failure below the limit: the gate passes
        ([N], options(), None),
        ([N, S, N], options(), N),  # at the inconclusive limit: the canary pauses
        ([N, S, S], options(), S),
        ([N], options(count=1, inconclusive_limit=1), N),
        ([N, F], options(), F),  # a failure is a failure, whatever came before
    ],
)
def test_verdict(phases: list[Phase], settings: PrometheusGateOptions, expected: Phase | None) -> None:
    taken = [Measurement(step=1, at=float(i), phase=p) for i, p in enumerate(phases)]
    assert verdict(taken, settings) == expected


# --- the walk: when to measure, what a verdict does -----------------------------------------------------------

STEPS = parse_steps(
    f"setWeight 20\ngate prometheus {SERVICE} threshold=<0.05 interval=10s: {QUERY}\n"
    f"gate prometheus {SERVICE} threshold=<0.05 on-failure=pause: {QUERY}\nsetWeight 100",
    workload="web",
)
T0 = 1_000_000.0
GOAL = Counts(canary=2, stable=8)


def at(step: int, **changes: object) -> CanaryState:
    state = CanaryState(
        canary_hash="h2",
        stable="web-1",
        stable_hash="h1",
        steps=tuple(str(s) for s in STEPS),
        step=step,
        step_started_at=T0,
    )
    return dataclasses.replace(state, **changes)  # type: ignore[arg-type]


def taken(*ats: float, step: int = 1) -> tuple[Measurement, ...]:
    return tuple(Measurement(step=step, at=a, phase=Phase.SUCCESSFUL, value="0") for a in ats)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        # the first measurement at once, each next one an interval after the last recorded (a restart continues)
        (at(1), Measure(goal=GOAL, gate=STEPS[1], due=T0)),  # type: ignore[arg-type]
        (at(1, measurements=taken(T0 + 1)), Measure(goal=GOAL, gate=STEPS[1], due=T0 + 11)),  # type: ignore[arg-type]
        (
            at(1, measurements=taken(T0 + 1, T0 + 11)),
            Measure(goal=GOAL, gate=STEPS[1], due=T0 + 21),  # type: ignore[arg-type]
        ),
        # measurements from before the step began (a retry) or of another step do not count
        (at(1, measurements=taken(T0 - 5)), Measure(goal=GOAL, gate=STEPS[1], due=T0)),  # type: ignore[arg-type]
        (at(1, measurements=taken(T0 + 1, step=2)), Measure(goal=GOAL, gate=STEPS[1], due=T0)),  # type: ignore[arg-type]
        (at(1, gate=GateResult(step=1, ok=True)), Advance()),
        (at(1, gate=GateResult(step=1, ok=False)), GateFailed(on_failure=OnFailure.ABORT)),
        # inconclusive pauses, whatever on-failure says (as Argo pauses an inconclusive analysis)
        (at(1, gate=GateResult(step=1, ok=False, inconclusive=True)), Hold(goal=GOAL, until=None, mark_paused=True)),
        (
            at(1, gate=GateResult(step=1, ok=False, inconclusive=True), paused=Mark(by="step", at=T0)),
            Hold(goal=GOAL, until=None),
        ),
        (at(2, gate=GateResult(step=2, ok=False)), Hold(goal=GOAL, until=None, mark_paused=True)),
    ],
)
def test_decide(state: CanaryState, expected: object) -> None:
    assert decide(steps=STEPS, state=state, replicas=10, now=T0) == expected


def test_the_measurements_survive_the_record_and_go_with_their_step() -> None:
    state = at(
        1,
        measurements=(
            Measurement(step=1, at=T0, phase=Phase.INCONCLUSIVE, detail="no sample"),
            Measurement(step=1, at=T0 + 10, phase=Phase.FAILED, value="0.2"),
        ),
        gate=GateResult(step=1, ok=False, output="0 successful, 1 failed, 1 inconclusive"),
    )
    assert CanaryState.from_dict(json.loads(json.dumps(state.as_dict()))) == state
    assert len(state.step_measurements()) == 2
    assert next_step(state, now=T0 + 20).step_measurements() == ()
