"""The rollout's text output: kubectl rollout status' lines on stdout, the driver's doings on stderr."""

from __future__ import annotations

import io

from kubectl_rollout.cli.rollout_output import rollout_printer
from kubectl_rollout.jobs.events import canary as cev
from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.events.stream import EventStream

WAITING = 'Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...'
DONE = 'deployment "web" successfully rolled out'


def render(*events: Event) -> tuple[list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    stream = EventStream("job", rollout_printer(out, err))
    for event in events:
        stream.emit(event)
    return out.getvalue().splitlines(), err.getvalue().splitlines()


def progressed(message: str, phase: ev.RolloutPhase = ev.RolloutPhase.UPDATING) -> ev.RolloutProgressed:
    return ev.RolloutProgressed(workload="web", namespace="shop", message=message, phase=phase)


def finished(outcome: ev.RolloutOutcome, message: str, *, succeeded: bool = False) -> ev.RolloutFinished:
    return ev.RolloutFinished(workload="web", namespace="shop", succeeded=succeeded, outcome=outcome, message=message)


def test_one_pass_of_actions_is_one_line_before_the_state_it_led_to() -> None:
    out, err = render(
        ev.SpecChanged(workload="web", namespace="shop", change=ev.SpecChange.APPLY, generation=1, created=True),
        ev.ReplicaSetCreated(workload="web", name="web-7c9d", revision=2, replicas=1),
        progressed(WAITING),
        ev.ReplicaSetScaled(workload="web", name="web-5b8f", from_replicas=3, to_replicas=2),
        ev.ReplicaSetScaled(workload="web", name="web-7c9d", from_replicas=1, to_replicas=2, updated=True),
        progressed(WAITING),
        ev.ReplicaSetDeleted(workload="web", name="web-1a2b", revision=1),
        progressed(DONE, ev.RolloutPhase.COMPLETE),
        finished(ev.RolloutOutcome.COMPLETE, DONE, succeeded=True),
    )
    assert out == ["workload/web created", WAITING, WAITING, DONE]
    assert err == [
        "  create the new ReplicaSet at 1 (revision 2)",
        "  scale web-5b8f to 2; scale web-7c9d to 2",
        "  delete web-1a2b (beyond revisionHistoryLimit)",
    ]


def test_a_pdb_hold_names_the_pdbs_and_repeats_where_the_rollout_stands() -> None:
    room = ev.PdbRoom(namespace="shop", name="web", disruptions_allowed=0, healthy=4, needed=4, expected_pods=5)
    hold = ev.ScaleDownHeldByPdb(
        workload="web", pdbs=(room,), held=(ev.HeldScaleDown(name="web-5b8f", replicas=4, wanted=3, allowed=4),)
    )
    out, err = render(hold, progressed(WAITING), hold)
    assert err == [
        "  scale-down held back by PodDisruptionBudget shop/web",
        "  scale-down held back by PodDisruptionBudget shop/web",
    ]
    assert out == [WAITING, WAITING]


def test_auto_rollback_and_its_failure() -> None:
    failed = 'deployment "web" failed: pod web-7c9d-x: container app is in CrashLoopBackOff (restarted 2 times)'
    out, err = render(
        progressed(failed, ev.RolloutPhase.PODS_FAILING),
        ev.RollingBack(workload="web", from_revision=2, to_revision=1, replica_set="web-5b8f", generation=3),
        ev.RevisionAssigned(workload="web", name="web-5b8f", revision=3, previous_revision=1),
        progressed(DONE, ev.RolloutPhase.COMPLETE),
        ev.RolledBack(workload="web", to_revision=1, replica_set="web-5b8f", complete=True),
        finished(ev.RolloutOutcome.ROLLED_BACK, f"rolled back to revision 1: {DONE}"),
    )
    assert out == [failed, failed, DONE]
    assert err == [
        "  rolling back to revision 1 (web-5b8f)",
        "  web-5b8f becomes revision 3",
        f"error: rolled back to revision 1: {DONE}",
    ]


def test_following_another_driver_is_said_once_then_its_states() -> None:
    following = ev.FollowingDriver(
        workload="web", lease="shop/rollout-plus.web", holder="host/7/abcd", expires_at=1.0, seconds_left=11.6
    )
    out, err = render(following, progressed(WAITING), following, progressed(DONE, ev.RolloutPhase.COMPLETE))
    assert err == [
        'managed workload "web" is being driven by host/7/abcd (lease shop/rollout-plus.web valid for 12s more); '
        "following its progress"
    ]
    assert out == [WAITING, DONE]


def test_a_driver_that_takes_over_starts_without_a_state_to_repeat() -> None:
    room = ev.PdbRoom(namespace="shop", name="web", disruptions_allowed=0, healthy=1, needed=1, expected_pods=1)
    out, err = render(
        ev.FollowingDriver(workload="web", lease="shop/rollout-plus.web"),
        progressed(WAITING),
        ev.TookOver(workload="web", lease="shop/rollout-plus.web"),
        ev.ScaleDownHeldByPdb(workload="web", pdbs=(room,), held=()),
    )
    assert err[0] == "lease shop/rollout-plus.web was just taken by another process; following its progress"
    assert out == [WAITING]


def test_a_lease_taken_from_an_ended_process_says_so_and_shows_the_holder_briefly() -> None:
    holder = "host/7/abcd1234/proc,uid=1000,start=9,boot=1a2b3c4d5e6f,machine=9f8e7d6c5b4a,pidns=4026531836"
    out, err = render(
        ev.TookOver(
            workload="web",
            lease="shop/rollout-plus.web",
            previous_holder=holder,
            holder_ended="process 7 of host has ended",
        ),
        progressed(DONE, ev.RolloutPhase.COMPLETE),
    )
    assert err == ["lease shop/rollout-plus.web taken over from host/7/abcd1234: process 7 of host has ended"]
    assert out == [DONE]
    # one taken after it lapsed, as before, is no news
    assert render(ev.TookOver(workload="web", lease="shop/rollout-plus.web", previous_holder=holder)) == ([], [])


def test_what_each_command_recorded() -> None:
    def changed(change: ev.SpecChange, **data: object) -> ev.SpecChanged:
        return ev.SpecChanged(workload="web", namespace="shop", change=change, generation=2, **data)  # type: ignore[arg-type]

    out, err = render(
        changed(ev.SpecChange.APPLY),
        changed(ev.SpecChange.UNDO, to_revision=1, replica_set="web-5b8f"),
        changed(ev.SpecChange.PAUSE),
        changed(ev.SpecChange.RESUME),
        changed(ev.SpecChange.IMAGE),
        changed(ev.SpecChange.SCALE, replicas=3),
    )
    assert out == ["workload/web configured", "workload/web paused", "workload/web resumed"]
    assert err == ["workload/web rolling back to revision 1"]


def test_endings() -> None:
    paused = 'workload "web" is paused (...); resume it with kubectl rollout-plus resume web'
    assert render(finished(ev.RolloutOutcome.PAUSED, paused, succeeded=True)) == ([], [paused])
    assert render(finished(ev.RolloutOutcome.TIMED_OUT, "timed out after 5s: x")) == (
        [],
        ["error: timed out after 5s: x"],
    )
    # The command prints an error itself; a recorded change needs no ending.
    assert render(finished(ev.RolloutOutcome.ERROR, "not found")) == ([], [])
    assert render(finished(ev.RolloutOutcome.RECORDED, "recorded", succeeded=True)) == ([], [])


# --- canary steps: where the steps stand on stdout, the driver's doings on stderr ----------------------------


def test_a_canary_that_pauses_for_promote() -> None:
    paused = 'workload "web" is paused at step 2/3: pause, 1/10 pods; go on with kubectl rollout-plus promote web'
    out, err = render(
        cev.StepStarted(workload="web", step=1, steps=3, text="setWeight 10%", canary=1, stable=9, replicas=10),
        cev.StepReached(workload="web", step=1, steps=3, text="setWeight 10%", canary=1, stable=9, replicas=10),
        cev.StepStarted(workload="web", step=2, steps=3, text="pause", canary=1, stable=9, replicas=10),
        cev.PausedAtStep(workload="web", step=2, steps=3, text="pause", by="step", when=1.0),
        ev.RolloutFinished(
            workload="web", namespace="shop", succeeded=True, outcome=ev.RolloutOutcome.PAUSED, message=paused
        ),
    )
    assert out == [
        "step 1/3: setWeight 10%, 1/10 pods",
        "step 2/3: pause, 1/10 pods",
        "step 2/3: paused (pause) until promoted",
    ]
    assert err == ["  step 1/3 reached: 1 canary, 9 stable pods available", paused]


def test_gates_promote_abort_retry() -> None:
    out, err = render(
        cev.GateStarted(workload="web", step=2, steps=3, text="gate command: ./check.sh"),
        cev.GateRan(
            workload="web", step=2, steps=3, text="gate command: ./check.sh", ok=False, exit_code=3, output="a\nno\n"
        ),
        cev.Aborted(workload="web", step=2, steps=3, by="step", when=1.0, reason="gate command: ./check.sh failed"),
        cev.Retried(workload="web", steps=3, by="alice@build-01", when=2.0),
        cev.Promoted(workload="web", step=1, steps=3, by="alice@build-01", when=3.0),
        cev.Promoted(workload="web", step=2, steps=3, by="alice@build-01", when=4.0, full=True),
        cev.StepsDone(workload="web", steps=3, full=True),
    )
    assert out == [
        "step 2/3: gate failed with exit code 3; on failure: abort (no)",
        "workload/web canary aborted at step 2/3: gate command: ./check.sh failed",
        "workload/web canary retried from step 1/3",
        "workload/web promoted past step 1/3",
        "workload/web promoted past every remaining step",
        "steps done (3): the new revision takes every replica",
    ]
    assert err == ["  step 2/3: running gate command: ./check.sh"]


def test_a_gate_stopped_says_why_and_what() -> None:
    out, err = render(
        cev.GateStopped(
            workload="web",
            step=2,
            steps=3,
            text="gate job: smoke",
            why="aborted",
            what="Job web-5d8f-gate2-9f29 deleted",
        ),
        cev.GateStopped(workload="web", step=2, steps=3, text="gate command: x", why="promoted", what=""),
    )
    assert out == [
        "step 2/3: gate stopped (aborted): Job web-5d8f-gate2-9f29 deleted",
        "step 2/3: gate stopped (promoted)",
    ]
    assert err == []


def test_a_command_recorded_for_another_driver_says_which_and_how_to_follow_it() -> None:
    message = "recorded; the driver that holds the workload (build-01/rollout-plus-agent) carries it out; follow it"
    held = ev.RolloutFinished(
        workload="web",
        namespace="shop",
        succeeded=True,
        outcome=ev.RolloutOutcome.RECORDED,
        message=message,
        driven_by="build-01/rollout-plus-agent",
    )
    unheld = ev.RolloutFinished(
        workload="web", namespace="shop", succeeded=True, outcome=ev.RolloutOutcome.RECORDED, message="recorded"
    )
    assert render(held) == ([], [message])
    assert render(unheld) == ([], [])


def test_an_abort_that_restored_the_stable_says_so_without_error() -> None:
    message = "canary aborted: ReplicaSet web-1 is back at 10 replicas"
    _out, err = render(
        ev.RolloutFinished(
            workload="web", namespace="shop", succeeded=True, outcome=ev.RolloutOutcome.ABORTED, message=message
        )
    )
    assert err == [message]


def test_a_gates_output_reaches_the_terminal_without_its_escapes() -> None:
    out, _err = render(
        cev.GateRan(workload="web", step=1, steps=1, text="gate command: x", ok=True, output="ok \x1b[2J\x07done\n")
    )
    assert out == ["step 1/1: gate passed (ok ?[2J?done)"]


def test_a_prometheus_gates_measurements_and_verdicts() -> None:
    text = "gate prometheus service=prometheus:9090 threshold='< 0.05' count=2: up"
    out, err = render(
        cev.GateMeasured(workload="web", step=2, steps=3, measurement=1, count=2, phase="successful", value="0.01"),
        cev.GateMeasured(
            workload="web", step=2, steps=3, measurement=2, count=2, phase="inconclusive", detail="no sample\x1b[2J"
        ),
        cev.GateRan(workload="web", step=2, steps=3, text=text, ok=False, inconclusive=True, output="1 successful"),
        cev.GateRan(workload="web", step=2, steps=3, text=text, ok=False, output="0 successful, 1 failed"),
        cev.GateRan(workload="web", step=2, steps=3, text="gate job: smoke", ok=False, output="Job x: Failed"),
    )
    assert err == [
        "  step 2/3: measurement 1/2 successful: 0.01",
        "  step 2/3: measurement 2/2 inconclusive: no sample?[2J",
    ]
    assert out == [
        "step 2/3: gate inconclusive; paused until promoted (1 successful)",
        "step 2/3: gate failed; on failure: abort (0 successful, 1 failed)",
        "step 2/3: gate failed; on failure: abort (Job x: Failed)",
    ]
