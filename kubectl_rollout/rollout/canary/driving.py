"""The canary's part of a driver pass: where the steps stand, what the ReplicaSets aim at, what to record.

The rollout driver asks once per pass (``CanaryWalker.pass_``), before it plans:
the answer is the counts to aim at (``goal``, which the plan reaches inside
maxSurge / maxUnavailable), whether the rollout holds (no progress deadline
while a pause or a gate waits), whether this pass wrote the record (then the
pass ends there and the next one starts from the watch's fresh copy: one
write per pass, none computed from a stale read), and whether the job ends
(paused until promoted, aborted).

Everything that must survive the driver is written to the record before it is
acted on: the step and when it began, who paused it, a gate's result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubectl_rollout.jobs import next_steps
from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events.base import Emit
from kubectl_rollout.jobs.events.rollout import RolloutOutcome
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.rollout.canary.command_gate import CommandGateRun, gate_environment
from kubectl_rollout.rollout.canary.gate_job import gate_job_name
from kubectl_rollout.rollout.canary.gate_thread import GateThread
from kubectl_rollout.rollout.canary.job_gate_run import delete_gate_job, job_gate_run
from kubectl_rollout.rollout.canary.prometheus_gate_run import measure
from kubectl_rollout.rollout.canary.record_state import record_canary_event, save_state, state_of, step_started
from kubectl_rollout.rollout.canary.state import (
    Advance,
    CanaryState,
    GateFailed,
    GateResult,
    Hold,
    Mark,
    Measure,
    Move,
    RunGate,
    Unwind,
    decide,
    is_reached,
    next_step,
    step_line,
)
from kubectl_rollout.rollout.plan import ManagedReplicaSet, pods_held
from kubectl_rollout.rollout.record import Record
from kubectl_rollout.rollout.state import PROGRESSING, RolloutStatus
from kubectl_rollout.rollout.steps.format import STEPS_ANNOTATION, CommandGate, JobGate, Step, parse_steps
from kubectl_rollout.rollout.steps.weights import Counts

#: who paused a canary at a pause step, or aborted it on a failed gate: the step itself, not a person
BY_STEP = "step"


@dataclass(frozen=True, kw_only=True)
class CanaryEnd:
    """The job ends here: ``outcome`` (Paused, Aborted) with ``message``; the canary waits for a person."""

    outcome: RolloutOutcome
    message: str


@dataclass(frozen=True, kw_only=True)
class CanaryPass:
    #: the counts to aim at (None: no canary under way, a plain rolling update)
    goal: Counts | None = None
    stable: str = ""
    #: a pause, a gate or an abort holds the rollout: no progress deadline runs
    holding: bool = False
    #: this pass wrote the record: end the pass, decide again on the watch's copy
    wrote: bool = False
    #: a timed pause ends then (epoch seconds): the driver looks again at that moment
    until: float | None = None
    end: CanaryEnd | None = None


def workload_steps(record: Record) -> tuple[Step, ...]:
    """The steps the workload's manifest asks for (its annotation); () without any."""
    text = record.spec.annotations.get(STEPS_ANNOTATION, "")
    return parse_steps(text, workload=record.name) if text.strip() else ()


class CanaryWalker:
    """One driver's view of a workload's canary: the gate it runs, and what it already reported."""

    def __init__(self, cluster: Cluster, name: str, emit: Emit, *, wake: Callable[[], None]) -> None:
        """``wake``: what a gate that ends calls, so that the driver records its result at once."""
        self.cluster = cluster
        self.name = name
        self.emit = emit
        self._wake = wake
        self._gate: GateThread | None = None
        #: (canary hash, step) of the gate run by this driver
        self._gate_for: tuple[str, int] | None = None
        #: (steps, the step's text) of that gate, for what is said when it is stopped
        self._gate_said: tuple[int, str] = (0, "")
        #: (canary hash, step, when it began) of the aborted Job gate step whose Job this driver deleted
        self._orphan_ended: tuple[str, int, float] | None = None
        #: (canary hash, step) of the last StepStarted reported, so that a driver that takes over says it once
        self._announced: tuple[str, int] | None = None

    def _tell(self, record: Record, reason: str, message: str, *, warning: bool = False) -> None:
        """A Kubernetes Event on the workload's record, for ``kubectl describe`` and a second operator."""
        record_canary_event(self.cluster, record, reason=reason, message=message, warning=warning)

    def stop(self) -> None:
        """The driver ends: a gate still running is killed (the next driver runs it again from the start)."""
        if self._gate is not None and not self._gate.finished:
            self._gate.stop()

    # --- one pass -------------------------------------------------------------------------

    @staticmethod
    def under_way(record: Record, *, template_hash: str) -> str | None:
        """The stable ReplicaSet of the current template's canary, when one began (steps to go or not): a paused
        workload holds its counts as they are, not filled up to replicas + maxSurge (the controller's paused sync)."""
        state = state_of(record)
        if state is None or state.canary_hash != template_hash or not state.stable:
            return None
        return state.stable

    def pass_(
        self,
        record: Record,
        *,
        template_hash: str,
        new: ManagedReplicaSet | None,
        old: Sequence[ManagedReplicaSet],
        now: float,
    ) -> CanaryPass:
        if not record.spec.rolling:
            return CanaryPass()
        state = state_of(record)
        self._cancel_unwanted_gate(record, state)
        if state is None or state.canary_hash != template_hash:
            return self._begin(record, state, template_hash=template_hash, old=old, now=now)
        steps = parse_steps("\n".join(state.steps), workload=record.name) if state.steps else ()
        replicas = record.spec.replicas
        decision = decide(steps=steps, state=state, replicas=replicas, now=now)
        if decision is None:
            return CanaryPass()
        stable = next((rs for rs in old if rs.name == state.stable), None)
        others = [rs for rs in old if rs is not stable]
        if any(rs.unobserved for rs in (new, stable) if rs is not None):
            # A ReplicaSet's status lags its spec: no count read from it is trusted; the watch brings the next.
            return CanaryPass(goal=_as_they_are(new, stable), stable=state.stable, holding=True)
        goal: Counts | None = getattr(decision, "goal", None)
        reached = self._reached(goal, new, stable, others)
        self._announce(record, state)
        if isinstance(decision, Move):
            if reached and decision.advance:
                self.emit(
                    cev.StepReached(
                        workload=self.name,
                        step=state.step + 1,
                        steps=len(steps),
                        text=str(steps[state.step]),
                        canary=decision.goal.canary,
                        stable=decision.goal.stable,
                        replicas=replicas,
                    )
                )
                return self._advance(record, state, steps, now=now)
            return CanaryPass(goal=decision.goal, stable=state.stable)
        if isinstance(decision, Advance):
            return self._advance(record, state, steps, now=now)
        if isinstance(decision, Hold):
            if decision.mark_paused:
                return self._mark_paused(record, state, steps, now=now)
            if decision.until is None and reached:
                text = step_line(steps=state.steps, index=state.step, canary=decision.goal.canary, replicas=replicas)
                return CanaryPass(
                    goal=decision.goal,
                    stable=state.stable,
                    holding=True,
                    end=CanaryEnd(
                        outcome=RolloutOutcome.PAUSED,
                        message=f'workload "{self.name}" is paused at {text}; go on with '
                        f"{next_steps.command('promote', self.name)}, or {next_steps.command('abort', self.name)}",
                    ),
                )
            return CanaryPass(goal=decision.goal, stable=state.stable, holding=True, until=decision.until)
        if isinstance(decision, RunGate):
            return self._run_gate(record, state, steps, decision, new=new, stable=stable, now=now)
        if isinstance(decision, Measure):
            if now < decision.due:
                return CanaryPass(goal=decision.goal, stable=state.stable, holding=True, until=decision.due)
            measure(self.cluster, record, state, steps, decision.gate, emit=self.emit, now=now)
            return CanaryPass(wrote=True)
        if isinstance(decision, GateFailed):
            result = state.gate
            reason = f"{steps[state.step]} failed" + (
                f" with exit code {result.exit_code}" if result is not None and result.exit_code is not None else ""
            )
            if result is not None and not isinstance(steps[state.step], CommandGate):
                reason += f" ({result.output})"
            return self._abort(record, state, steps, by=BY_STEP, reason=reason, now=now)
        assert isinstance(decision, Unwind)
        self._end_orphaned_job(record, state, steps)
        goal = decision.goal
        if self._reached(goal, new, stable, others):
            stable_name = stable.name if stable is not None else state.stable
            return CanaryPass(
                goal=goal,
                stable=state.stable,
                holding=True,
                end=CanaryEnd(
                    outcome=RolloutOutcome.ABORTED,
                    message=f"canary aborted: ReplicaSet {stable_name} is back at {replicas} replicas; "
                    f"start the steps again with {next_steps.command('retry', self.name)}, or change the workload",
                ),
            )
        return CanaryPass(goal=goal, stable=state.stable, holding=True)

    # --- a gate whose verdict is no longer wanted ---------------------------------------------

    def _cancel_unwanted_gate(self, record: Record, state: CanaryState | None) -> None:
        """The gate this driver runs, when the canary was aborted, promoted past its step, retried or replaced (a
        new template, the steps removed) while it ran: its command is killed, its Job deleted."""
        if self._gate is None or self._gate_for is None:
            return
        if state is not None and self._gate_for == (state.canary_hash, state.step) and state.aborted is None:
            return
        gate, (gate_hash, index), (steps, text) = self._gate, self._gate_for, self._gate_said
        self._gate, self._gate_for = None, None
        if gate.finished:
            return  # it ended before the news came: nothing to stop, and a Job's pods keep its logs
        if state is not None and state.aborted is not None:
            why = "aborted"
            self._orphan_ended = (state.canary_hash, state.step, state.step_started_at)  # deleted here, once
        elif state is not None and state.canary_hash == gate_hash:
            why = "promoted" if state.step > index else "retried"  # an abort and a retry between two passes
        else:
            why = "replaced"
        self._stopped(record, step=index, steps=steps, text=text, why=why, what=gate.cancel())

    def _end_orphaned_job(self, record: Record, state: CanaryState, steps: tuple[Step, ...]) -> None:
        """An aborted canary at a Job gate that no driver follows now (the driver that created the Job died, or
        the abort was carried out where no driver ran): its Job is deleted, once per driver."""
        if state.step >= len(steps) or not isinstance(steps[state.step], JobGate):
            return
        if state.gate is not None and state.gate.step == state.step:
            return  # the Job ended and its verdict is recorded: nothing runs
        key = (state.canary_hash, state.step, state.step_started_at)
        if self._orphan_ended == key:
            return
        self._orphan_ended = key
        name = gate_job_name(
            workload=record.name,
            canary_hash=state.canary_hash,
            step=state.step,
            step_started_at=state.step_started_at,
        )
        what = delete_gate_job(self.cluster, name, record.namespace)
        if what is not None:
            self._stopped(
                record, step=state.step, steps=len(steps), text=str(steps[state.step]), why="aborted", what=what
            )

    def _stopped(self, record: Record, *, step: int, steps: int, text: str, why: str, what: str) -> None:
        self.emit(cev.GateStopped(workload=self.name, step=step + 1, steps=steps, text=text, why=why, what=what))
        self._tell(record, "GateStopped", f"step {step + 1}/{steps}: {text} stopped ({why}): {what}")

    # --- the steps ------------------------------------------------------------------------

    @staticmethod
    def _reached(
        goal: Counts | None,
        new: ManagedReplicaSet | None,
        stable: ManagedReplicaSet | None,
        others: Sequence[ManagedReplicaSet],
    ) -> bool:
        if goal is None:
            return False

        def counts(rs: ManagedReplicaSet | None) -> tuple[int, int, int]:
            return (rs.replicas, pods_held(rs), rs.available) if rs is not None else (0, 0, 0)

        return is_reached(goal, canary=counts(new), stable=counts(stable), others=sum(pods_held(o) for o in others))

    def _begin(
        self,
        record: Record,
        state: CanaryState | None,
        *,
        template_hash: str,
        old: Sequence[ManagedReplicaSet],
        now: float,
    ) -> CanaryPass:
        """A new template: a canary begins when the workload has steps and a stable ReplicaSet with pods."""
        steps = workload_steps(record)
        texts = tuple(str(s) for s in steps)
        active = [rs for rs in old if rs.replicas > 0]
        going_back = state is not None and template_hash == state.stable_hash
        if not steps:
            if state is None:
                return CanaryPass()  # no steps, never had any: a plain rolling update
            save_state(self.cluster, record, None)  # the steps were removed: so is what is left of their canary
            return CanaryPass(wrote=True)
        if not active or going_back:
            # A first rollout (nothing to compare with), or back to the stable revision (undo, a change
            # reverted): a plain rolling update, recorded as a canary whose steps are all done.
            save_state(self.cluster, record, CanaryState(canary_hash=template_hash, steps=texts, step=len(texts)))
            return CanaryPass(wrote=True)
        kept = state is not None and any(rs.name == state.stable for rs in active)
        stable = (
            next(rs for rs in active if state is not None and rs.name == state.stable)
            if kept
            else max(active, key=lambda rs: (rs.revision, rs.created))
        )
        fresh = CanaryState(
            canary_hash=template_hash,
            stable=stable.name,
            stable_hash=stable.template_hash,
            steps=texts,
            step=0,
            step_started_at=now,
        )
        save_state(self.cluster, record, fresh)
        self.emit(cev.CanaryStarted(workload=self.name, canary_hash=template_hash, stable=stable.name, steps=texts))
        self._tell(
            record,
            "CanaryStarted",
            f"canary of {len(texts)} steps started; stable ReplicaSet {stable.name}",
        )
        return CanaryPass(wrote=True)

    def _announce(self, record: Record, state: CanaryState) -> None:
        """StepStarted, once per step and driver (a driver that takes over says where the canary stands)."""
        if self._announced == (state.canary_hash, state.step):
            return
        started = step_started(record)
        if started is not None:
            self._announced = (state.canary_hash, state.step)
            self.emit(started)

    def _advance(self, record: Record, state: CanaryState, steps: tuple[Step, ...], *, now: float) -> CanaryPass:
        after = next_step(state, now=now)
        save_state(self.cluster, record, after, status=_progress_refreshed(record.status, now))
        if after.done:
            self.emit(cev.StepsDone(workload=self.name, steps=len(steps)))
            self._tell(record, "StepsDone", f"all {len(steps)} steps done")
        else:
            self._tell(
                record,
                "StepStarted",
                f"step {after.step + 1}/{len(steps)}: {steps[after.step]}",
            )
        return CanaryPass(wrote=True)

    def _mark_paused(self, record: Record, state: CanaryState, steps: tuple[Step, ...], *, now: float) -> CanaryPass:
        after = dataclasses.replace(state, paused=Mark(by=BY_STEP, at=now))
        save_state(self.cluster, record, after)
        text = str(steps[state.step])
        self.emit(
            cev.PausedAtStep(workload=self.name, step=state.step + 1, steps=len(steps), text=text, by=BY_STEP, when=now)
        )
        self._tell(
            record,
            "PausedAtStep",
            f"paused at step {state.step + 1}/{len(steps)} ({text}) until promoted",
        )
        return CanaryPass(wrote=True)

    def _abort(
        self, record: Record, state: CanaryState, steps: tuple[Step, ...], *, by: str, reason: str, now: float
    ) -> CanaryPass:
        after = dataclasses.replace(state, aborted=Mark(by=by, at=now), paused=None)
        save_state(self.cluster, record, after)
        self.emit(
            cev.Aborted(workload=self.name, step=state.step + 1, steps=len(steps), by=by, when=now, reason=reason)
        )
        self._tell(record, "Aborted", f"canary aborted: {reason}", warning=True)
        return CanaryPass(wrote=True)

    def _run_gate(
        self,
        record: Record,
        state: CanaryState,
        steps: tuple[Step, ...],
        decision: RunGate,
        *,
        new: ManagedReplicaSet | None,
        stable: ManagedReplicaSet | None,
        now: float,
    ) -> CanaryPass:
        holding = CanaryPass(goal=decision.goal, stable=state.stable, holding=True)
        key = (state.canary_hash, state.step)
        text = str(steps[state.step])
        if self._gate is None or self._gate_for != key:
            environment = gate_environment(
                workload=self.name,
                namespace=record.namespace,
                revision=new.revision if new is not None else 0,
                step=state.step + 1,
                steps=len(steps),
                canary=new.name if new is not None else "",
                stable=stable.name if stable is not None else state.stable,
            )
            gate = decision.gate
            self._gate = (
                CommandGateRun(gate.command, environment)
                if isinstance(gate, CommandGate)
                else job_gate_run(self.cluster, record, state, gate, environment)
            ).start(self._wake)
            self._gate_for = key
            self._gate_said = (len(steps), text)
            self.emit(cev.GateStarted(workload=self.name, step=state.step + 1, steps=len(steps), text=text))
            return holding
        outcome = self._gate.outcome
        if outcome is None:
            return holding
        result = GateResult(
            step=state.step,
            ok=outcome.ok,
            exit_code=outcome.exit_code,
            output=outcome.output,
            started_at=outcome.started_at,
            finished_at=outcome.finished_at,
        )
        # Recorded before it is acted on: a driver that dies after this write never runs the gate again.
        save_state(self.cluster, record, dataclasses.replace(state, gate=result))
        self._gate, self._gate_for = None, None
        self.emit(
            cev.GateRan(
                workload=self.name,
                step=state.step + 1,
                steps=len(steps),
                text=text,
                ok=outcome.ok,
                exit_code=outcome.exit_code,
                output=outcome.output,
                seconds=round(outcome.finished_at - outcome.started_at, 3),
                on_failure=decision.gate.on_failure.value,
            )
        )
        verdict = (
            "passed"
            if outcome.ok
            else f"failed (exit code {outcome.exit_code})"
            if outcome.exit_code is not None
            else f"failed ({outcome.output[-300:]})"
        )
        self._tell(
            record,
            "GateRan",
            f"step {state.step + 1}/{len(steps)}: {text} {verdict}",
            warning=not outcome.ok,
        )
        return CanaryPass(wrote=True)


def _as_they_are(new: ManagedReplicaSet | None, stable: ManagedReplicaSet | None) -> Counts:
    """The counts as they are: nothing moves while a status lags."""
    return Counts(canary=new.replicas if new is not None else 0, stable=stable.replicas if stable is not None else 0)


def _progress_refreshed(status: RolloutStatus, now: float) -> dict[str, object]:
    """The status with Progressing's lastUpdateTime at ``now``: a step that ends is progress, so that a long
    pause never counts against the progress deadline of the steps after it."""
    conditions = tuple(
        dataclasses.replace(c, last_update_time=now) if c.type == PROGRESSING and c.status == "True" else c
        for c in status.conditions
    )
    return dataclasses.replace(status, conditions=conditions).as_dict()
