"""One measurement of a Prometheus gate, taken and recorded: the driver's side of ``prometheus_analysis``.

The measurement (and, when it ends the gate, the verdict) is written to the
record over the version read before the driver acts on it, so that a driver
that restarts continues the count where it was: the next measurement is due
an interval after the last recorded one. A query whose answer never reached
the record (the driver died, or the write lost a race) is simply taken again:
a query changes nothing.
"""

from __future__ import annotations

import dataclasses

from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.rollout.canary.prometheus_analysis import Measurement, Phase, classify, tally, verdict
from kubectl_rollout.rollout.canary.prometheus_query import instant_query
from kubectl_rollout.rollout.canary.record_state import record_canary_event, save_state
from kubectl_rollout.rollout.canary.state import CanaryState, GateResult
from kubectl_rollout.rollout.record import Record
from kubectl_rollout.rollout.steps.format import PrometheusGate, Step


def measure(
    cluster: Cluster,
    record: Record,
    state: CanaryState,
    steps: tuple[Step, ...],
    gate: PrometheusGate,
    *,
    emit: Emit,
    now: float,
) -> None:
    """Query once, record the measurement (and the verdict when it is the last one needed), then report it."""
    earlier = state.step_measurements()
    number, of = state.step + 1, len(steps)
    if not earlier:
        emit(cev.GateStarted(workload=record.name, step=number, steps=of, text=str(gate)))
    raw = instant_query(cluster, gate.options.service, gate.query, namespace=record.namespace)
    answer = classify(status=raw.status, body=raw.body, threshold=gate.options.threshold)
    taken = (
        *earlier,
        Measurement(step=state.step, at=now, phase=answer.phase, value=answer.value, detail=answer.detail),
    )
    ended = verdict(taken, gate.options)
    summary = f"{tally(taken)} of {len(taken)} measurements (threshold {gate.options.threshold})"
    result = (
        GateResult(
            step=state.step,
            ok=ended is Phase.SUCCESSFUL,
            output=summary,
            started_at=taken[0].at,
            finished_at=now,
            inconclusive=ended is Phase.INCONCLUSIVE,
        )
        if ended is not None
        else None
    )
    # Recorded before it is acted on: a driver that restarts continues the count from here.
    save_state(cluster, record, dataclasses.replace(state, measurements=taken, gate=result or state.gate))
    emit(
        cev.GateMeasured(
            workload=record.name,
            step=number,
            steps=of,
            measurement=len(taken),
            count=gate.options.count,
            phase=answer.phase.value,
            value=answer.value,
            detail=answer.detail,
        )
    )
    said = answer.value or answer.detail
    record_canary_event(
        cluster,
        record,
        reason="GateMeasured",
        message=f"step {number}/{of}: measurement {len(taken)}/{gate.options.count} {answer.phase.value}: {said}",
        warning=answer.phase is not Phase.SUCCESSFUL,
    )
    if result is None:
        return
    emit(
        cev.GateRan(
            workload=record.name,
            step=number,
            steps=of,
            text=str(gate),
            ok=result.ok,
            output=summary,
            seconds=round(now - taken[0].at, 3),
            on_failure=gate.on_failure.value,
            inconclusive=result.inconclusive,
        )
    )
    record_canary_event(
        cluster,
        record,
        reason="GateRan",
        message=f"step {number}/{of}: Prometheus gate {ended}: {summary}",
        warning=not result.ok,
    )
