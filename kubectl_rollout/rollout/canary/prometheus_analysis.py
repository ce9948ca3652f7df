"""A Prometheus gate's measurements and verdict: what one answer of the query API says, and when the gate is over.

One measurement is one instant query (``/api/v1/query``). Its answer is
*successful* or *failed* when it is one number (a scalar, or a vector of
exactly one sample) that the threshold accepts or refuses; it is
*inconclusive* when it says nothing about the canary: no answer (the proxy or
Prometheus answered an HTTP error, or nothing answered), an answer that is not
the query API's JSON, a query error, an empty vector, several samples (which
one would count?), a range vector, or NaN (0/0: no traffic yet).

Argo Rollouts classifies the same answers differently (metricproviders/prometheus,
utils/evaluate, analysis/analysis.go): an empty vector or a query error is an
*Error* (counted against ``consecutiveErrorLimit``, 4 by default), a NaN compared
with a threshold is *Failed*, and a run fails once failures are *above*
``failureLimit`` (default 0). Here every answer that cannot be compared is one
kind, inconclusive, and a limit is reached *at* its value: ``failure-limit=1``
is Argo's ``failureLimit: 0``.

Pure: an answer in, a measurement out; measurements in, a verdict (or none yet) out.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.rollout.steps.prometheus_gate import PrometheusGateOptions, Threshold

#: what is kept of an answer that is not understood, for people
DETAIL_KEPT = 300


class Phase(enum.StrEnum):
    SUCCESSFUL = "successful"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """One measurement of a gate, as recorded on the workload before the driver acts on it."""

    #: the step it was taken for (0-based)
    step: int
    #: when (epoch seconds)
    at: float
    phase: Phase
    #: the number the query gave, as Prometheus wrote it ("0.012", "NaN"); "" when none
    value: str = ""
    #: why it is inconclusive, for people
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "at": self.at, "phase": self.phase.value, "value": self.value, "detail": self.detail}

    @classmethod
    def from_dict(cls, raw: Any) -> Measurement | None:
        if not isinstance(raw, dict) or raw.get("phase") not in Phase._value2member_map_:
            return None
        return cls(
            step=int(raw.get("step", -1)),
            at=float(raw.get("at", 0.0)),
            phase=Phase(raw["phase"]),
            value=str(raw.get("value", "")),
            detail=str(raw.get("detail", "")),
        )


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What one query's answer says: its phase, the number it gave, why it is inconclusive."""

    phase: Phase
    value: str = ""
    detail: str = ""


def _inconclusive(detail: str) -> Answer:
    return Answer(phase=Phase.INCONCLUSIVE, detail=detail[:DETAIL_KEPT])


def classify(*, status: int, body: str, threshold: Threshold) -> Answer:
    """The phase of one answer of the query API: ``status`` is its HTTP status (0: no answer at all)."""
    if status == 0:
        return _inconclusive(f"no answer: {body}")
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return _inconclusive(f"HTTP {status}, not the query API's JSON: {body.strip()}")
    if status != 200 or parsed.get("status") != "success":
        said = parsed.get("error") or parsed.get("message") or body.strip()
        return _inconclusive(f"HTTP {status}: {said}")
    data = parsed.get("data")
    kind = data.get("resultType") if isinstance(data, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    if kind == "scalar":
        return _compared(result, threshold)
    if kind == "vector" and isinstance(result, list):
        if not result:
            return _inconclusive("no sample: the query gave an empty vector")
        if len(result) > 1:
            return _inconclusive(f"{len(result)} samples: the query must give one number (aggregate it, e.g. sum())")
        sample = result[0]
        return _compared(sample.get("value") if isinstance(sample, dict) else None, threshold)
    return _inconclusive(f"a {kind or 'malformed'} result: the query must give a scalar or one sample")


def _compared(pair: Any, threshold: Threshold) -> Answer:
    """A ``[time, "value"]`` pair against the threshold."""
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        return _inconclusive(f"a malformed sample: {json.dumps(pair)[:100]}")
    text = pair[1]
    try:
        number = float(text)
    except ValueError:
        return _inconclusive(f"a sample that is not a number: {text[:100]}")
    if math.isnan(number):
        return Answer(phase=Phase.INCONCLUSIVE, value=text, detail="NaN (no data to divide, e.g. no traffic yet)")
    phase = Phase.SUCCESSFUL if threshold.passes(number) else Phase.FAILED
    return Answer(phase=phase, value=text)


@dataclass(frozen=True, kw_only=True)
class Tally:
    successful: int
    failed: int
    inconclusive: int

    def __str__(self) -> str:
        return f"{self.successful} successful, {self.failed} failed, {self.inconclusive} inconclusive"


def tally(measurements: Sequence[Measurement]) -> Tally:
    phases = [m.phase for m in measurements]
    return Tally(
        successful=phases.count(Phase.SUCCESSFUL),
        failed=phases.count(Phase.FAILED),
        inconclusive=phases.count(Phase.INCONCLUSIVE),
    )


def verdict(measurements: Sequence[Measurement], options: PrometheusGateOptions) -> Phase | None:
    """The gate's verdict once a limit is reached or every measurement is taken; None: measure again."""
    counted = tally(measurements)
    if counted.failed >= options.failure_limit:
        return Phase.FAILED
    if counted.inconclusive >= options.inconclusive_limit:
        return Phase.INCONCLUSIVE
    if len(measurements) >= options.count:
        return Phase.SUCCESSFUL
    return None
