"""The rollout planner, step by step, against a simulated ReplicaSet controller.

Each step applies the planned actions, then lets the simulated ReplicaSets
catch up (pods appear at once, become available after ``ready_after``
steps; a deleted pod leaves status.replicas at once but keeps terminating
for ``grace`` more steps, as the cluster's pods do for their grace period).
Invariants are checked after every step, as the integration tests do on the
real cluster with a watch.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubectl_rollout.rollout.plan import (
    CanaryGoal,
    CopyAnnotations,
    CreateReplicaSet,
    DeleteReplicaSet,
    ManagedReplicaSet,
    ScaleReplicaSet,
    SetMinReadySeconds,
    SetRevision,
    annotations_after_undo,
    annotations_to_copy,
    cleanup,
    old_pods_running,
    plan,
    revision_history,
    split,
    surge_annotation,
)
from kubectl_rollout.rollout.replica_math import max_surge, max_unavailable
from kubectl_rollout.rollout.spec import WorkloadSpec, parse_workload
from kubectl_rollout.rollout.steps.weights import Counts


def spec(
    replicas: int,
    surge: int | str = "25%",
    unavailable: int | str = "25%",
    *,
    recreate: bool = False,
    history: int = 10,
    paused: bool = False,
) -> WorkloadSpec:
    strategy: dict[str, Any] = (
        {"type": "Recreate"}
        if recreate
        else {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    )
    return parse_workload(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas,
                "strategy": strategy,
                "revisionHistoryLimit": history,
                "paused": paused,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "a", "image": "v"}]},
                },
            },
        },
        default_namespace="default",
    )


class Simulation:
    """ReplicaSets that the planner drives and a toy ReplicaSet controller fills."""

    def __init__(
        self, rses: list[ManagedReplicaSet], ready_after: int = 1, *, delete_lag: int = 0, grace: int = 1
    ) -> None:
        self.rses = {rs.name: rs for rs in rses}
        self.ages: dict[str, list[int]] = {rs.name: [0] * rs.current for rs in rses}
        self.ready_after = ready_after
        self.clock = 10.0
        #: pods of a shrunk ReplicaSet go this many ticks late, as the real ReplicaSet controller
        #: deletes them asynchronously; meanwhile they still count in status.replicas
        self.delete_lag = delete_lag
        self._shrinking: dict[str, int] = {}
        #: a deleted pod is out of status.replicas at once but still runs (terminating) through the
        #: next `grace` steps, as a real pod does for its grace period; (template hash, last tick) each
        self.grace = grace
        self.terminating: list[tuple[str, int]] = []
        self.ticks = 0
        #: pods present (running or terminating) per template hash after each tick: what a watch sees
        self.pods_seen: list[dict[str, int]] = []

    def apply(self, actions: list[Any], target: WorkloadSpec, template_hash: str) -> None:
        for action in actions:
            if isinstance(action, CreateReplicaSet):
                self.clock += 1
                name = f"web-{template_hash}"
                self.rses[name] = ManagedReplicaSet(
                    name=name,
                    template_hash=template_hash,
                    replicas=action.replicas,
                    created=self.clock,
                    revision=action.revision,
                    desired_replicas=target.replicas,
                    max_replicas=surge_annotation(target),
                )
                self.ages[name] = []
            elif isinstance(action, ScaleReplicaSet):
                self.rses[action.name] = dataclasses.replace(
                    self.rses[action.name],
                    replicas=action.replicas,
                    desired_replicas=target.replicas,
                    max_replicas=surge_annotation(target),
                )
            elif isinstance(action, SetRevision):
                self.rses[action.name] = dataclasses.replace(self.rses[action.name], revision=action.revision)
            elif isinstance(action, DeleteReplicaSet):
                del self.rses[action.name]

    def tick(self) -> None:
        """The ReplicaSet controller: create or delete pods; pods age towards availability."""
        self.ticks += 1
        for name, rs in self.rses.items():
            ages = [a + 1 for a in self.ages[name]]
            waited = self._shrinking.pop(name, 0)
            if len(ages) > rs.replicas and waited < self.delete_lag:
                self._shrinking[name] = waited + 1
            else:
                self.terminating += [(rs.template_hash, self.ticks + self.grace)] * (len(ages) - rs.replicas)
                ages = ages[: rs.replicas]
            ages += [0] * (rs.replicas - len(ages))
            self.ages[name] = ages
            available = sum(1 for a in ages if a >= self.ready_after)
            self.rses[name] = dataclasses.replace(rs, current=len(ages), available=available)
        seen = {rs.template_hash: rs.current for rs in self.rses.values()}
        for template_hash, _ in self.terminating:
            seen[template_hash] = seen.get(template_hash, 0) + 1
        self.pods_seen.append(seen)
        self.terminating = [(template_hash, last) for template_hash, last in self.terminating if last > self.ticks]

    @property
    def total(self) -> int:
        return sum(rs.current for rs in self.rses.values())

    @property
    def available(self) -> int:
        return sum(rs.available for rs in self.rses.values())


def run(
    sim: Simulation, target: WorkloadSpec, template_hash: str, steps: int = 200
) -> list[tuple[list[Any], int, int]]:
    """Plan, apply, let the ReplicaSets catch up; until complete. Returns (actions, pods, available) per step."""
    trace = []
    for _ in range(steps):
        new = [rs for rs in sim.rses.values() if rs.template_hash == template_hash]
        complete = bool(new) and new[0].available == target.replicas == new[0].replicas and sim.total == target.replicas
        # oldPodsRunning sees the pods themselves: terminating ones too
        old_running = any(rs.current for rs in sim.rses.values() if rs.template_hash != template_hash) or any(
            hash_ != template_hash for hash_, _ in sim.terminating
        )
        actions = plan(
            target,
            template_hash,
            list(sim.rses.values()),
            status_replicas=sim.total,
            old_pods_running=old_running,
            complete=complete,
        )
        sim.apply(actions, target, template_hash)
        sim.tick()
        trace.append((actions, sim.total, sim.available))
        if complete and not actions:
            break
    return trace


def v1(replicas: int, **kwargs: Any) -> ManagedReplicaSet:
    return ManagedReplicaSet(
        name="web-v1",
        template_hash="v1",
        replicas=replicas,
        current=replicas,
        available=replicas,
        created=1.0,
        revision=1,
        desired_replicas=replicas,
        **kwargs,
    )


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable"),
    [
        (10, "25%", "25%"),
        (10, 0, 1),
        (10, 1, 0),
        (10, "50%", 0),
        (3, 1, 1),
        (100, "25%", "25%"),
        (5, "30%", "30%"),
        (1, 0, 1),
        (1, 1, 0),
    ],
)
@pytest.mark.parametrize("delete_lag", [0, 1, 2], ids=["prompt-deletes", "deletes-1-late", "deletes-2-late"])
def test_rolling_update_keeps_the_fenceposts_at_every_step(
    replicas: int, surge: int | str, unavailable: int | str, delete_lag: int
) -> None:
    target = spec(replicas, surge, unavailable)
    sim = Simulation([v1(replicas)], delete_lag=delete_lag)
    top = replicas + max_surge(replicas, surge, unavailable)
    floor = replicas - max_unavailable(replicas, surge, unavailable)
    for _actions, total, available in run(sim, target, "v2"):
        assert total <= top
        assert available >= floor
    assert {rs.name: rs.replicas for rs in sim.rses.values()} == {"web-v1": 0, "web-v2": replicas}
    assert sim.rses["web-v2"].revision == 2


def test_first_steps_match_the_controller() -> None:
    # 10 replicas, maxSurge 2, maxUnavailable 2: create at 2, then shrink the old to 8, ...
    target = spec(10, 2, 2)
    sim = Simulation([v1(10)])
    steps = [actions for actions, _, _ in run(sim, target, "v2")]
    assert steps[0] == [CreateReplicaSet(2, 2)]
    assert steps[1] == [ScaleReplicaSet("web-v1", 8)]
    assert steps[2] == [ScaleReplicaSet("web-v2", 4)]


def test_pods_not_yet_deleted_hold_back_the_new_replica_set() -> None:
    # The old ReplicaSet was shrunk to 8 but the ReplicaSet controller has not removed its
    # pods yet: growing the new one now would run 12 pods for 10 + maxSurge 2.
    target = spec(10, 2, 2)
    old = dataclasses.replace(v1(10), replicas=8)
    new = ManagedReplicaSet(
        name="web-v2", template_hash="v2", replicas=2, current=2, available=2, created=2.0, revision=2
    )
    held = plan(target, "v2", [old, new], status_replicas=12, old_pods_running=True, complete=False)
    assert ScaleReplicaSet("web-v2", 4) not in held
    # web-v1 still reports 10 available for a size of 8: upstream's cleanupUnhealthyReplicas refuses to "scale
    # down" 8 -> 10 and the sync stops until the ReplicaSet's status catches up; so does ours.
    assert held == []
    gone = plan(
        target,
        "v2",
        [dataclasses.replace(old, current=8, available=8), new],
        status_replicas=10,
        old_pods_running=True,
        complete=False,
    )
    assert gone == [ScaleReplicaSet("web-v2", 4)]


#: an older ReplicaSet asked for 8 of 10 pods (maxSurge 2) beside web-v2 running 2: its status, its live pods, its
#: last resize unobserved; and what web-v2 grows to (None: it waits)
ROOM_LEFT_BY_THE_OLDER_PODS = [
    # what the status and the pods agree on: the older ReplicaSet holds its spec, web-v2 grows
    pytest.param(8, 8, False, 4, id="settled"),
    # its status still counts pods on their way out: wait for it (one status round trip a step)
    pytest.param(10, 8, False, None, id="status-behind-deletes"),
    # grown 8 -> 10 and shrunk back before the ReplicaSet controller wrote its status again (it writes the pods it
    # saw before its own creates): the status says 8, the pod watch sees the 10 it made
    pytest.param(8, 10, False, None, id="status-behind-creates"),
    # its last resize not yet seen by the ReplicaSet controller, which may still be making pods for a larger
    # size: neither count has them yet
    pytest.param(8, 8, True, None, id="resize-unobserved"),
]


def asked_for_eight(status: int, live: int, unobserved: bool) -> ManagedReplicaSet:
    return dataclasses.replace(
        v1(10), replicas=8, current=status, available=min(status, 8), live=live, unobserved=unobserved
    )


def v2_running_two() -> ManagedReplicaSet:
    return ManagedReplicaSet(
        name="web-v2", template_hash="v2", replicas=2, current=2, available=2, created=2.0, revision=2, live=2
    )


@pytest.mark.parametrize(("old_status", "old_live", "old_unobserved", "grows_to"), ROOM_LEFT_BY_THE_OLDER_PODS)
def test_the_new_replica_set_grows_only_into_room_the_old_pods_left(
    old_status: int, old_live: int, old_unobserved: bool, grows_to: int | None
) -> None:
    # 10 replicas, maxSurge 2: web-v1 asked for 8, web-v2 runs 2; room for web-v2 to reach 4 once web-v1 has 8.
    target = spec(10, 2, 2)
    old = asked_for_eight(old_status, old_live, old_unobserved)
    planned = plan(
        target, "v2", [old, v2_running_two()], status_replicas=old_status + 2, old_pods_running=True, complete=False
    )
    grown = [a for a in planned if isinstance(a, ScaleReplicaSet) and a.name == "web-v2"]
    assert grown == ([] if grows_to is None else [ScaleReplicaSet("web-v2", grows_to)])


@pytest.mark.parametrize(("stable_status", "stable_live", "stable_unobserved", "grows_to"), ROOM_LEFT_BY_THE_OLDER_PODS)
def test_a_canary_grows_only_into_room_the_stable_pods_left(
    stable_status: int, stable_live: int, stable_unobserved: bool, grows_to: int | None
) -> None:
    # The same counts as a rolling update's, on the way to a 50 % step: the stable ReplicaSet asked for 8, the
    # canary runs 2; maxSurge 2 of 10 leaves the canary room for 4 once the stable one holds 8 pods.
    stable = asked_for_eight(stable_status, stable_live, stable_unobserved)
    step = CanaryGoal(counts=Counts(canary=5, stable=5), stable="web-v1")
    planned = plan(
        spec(10, 2, 2),
        "v2",
        [stable, v2_running_two()],
        status_replicas=stable_status + 2,
        old_pods_running=True,
        complete=False,
        canary=step,
    )
    grown = [a for a in planned if isinstance(a, ScaleReplicaSet) and a.name == "web-v2"]
    assert grown == ([] if grows_to is None else [ScaleReplicaSet("web-v2", grows_to)])


@pytest.mark.parametrize("delete_lag", [0, 1], ids=["prompt-deletes", "deletes-1-late"])
@pytest.mark.parametrize("grace", [1, 2], ids=["terminating-1-step", "terminating-2-steps"])
def test_recreate_waits_for_every_old_pod_before_creating_the_new_replica_set(delete_lag: int, grace: int) -> None:
    # Old pods leave status.replicas as soon as they are deleted but run on while they terminate: a
    # planner that creates the new ReplicaSet with the scale-down, or as soon as status.replicas is 0,
    # has new pods beside terminating old ones.
    target = spec(4, recreate=True)
    sim = Simulation([v1(4)], delete_lag=delete_lag, grace=grace)
    run(sim, target, "v2")
    both = [(step, seen) for step, seen in enumerate(sim.pods_seen) if seen.get("v1") and seen.get("v2")]
    assert not both, f"new pods beside old ones (step, pods per template): {both}"
    assert any(seen.get("v1") for seen in sim.pods_seen), "the old pods were never seen"
    assert sim.rses["web-v2"].replicas == 4
    assert sim.pods_seen[-1] == {"v1": 0, "v2": 4}


def test_resize_mid_rollout_is_proportional() -> None:
    rses = [
        v1(8),
        ManagedReplicaSet(
            name="web-v2",
            template_hash="v2",
            replicas=5,
            current=5,
            available=0,
            created=2.0,
            revision=2,
            desired_replicas=10,
            max_replicas=13,
        ),
    ]
    rses[0] = dataclasses.replace(rses[0], desired_replicas=10, max_replicas=13)
    bigger = spec(50, 6, 0)
    actions = plan(bigger, "v2", rses, status_replicas=13, old_pods_running=True, complete=False)
    assert actions == [ScaleReplicaSet("web-v1", 34), ScaleReplicaSet("web-v2", 22)]


def test_paused_workloads_only_scale() -> None:
    paused = spec(10, paused=True)
    assert plan(paused, "v2", [v1(10)], status_replicas=10, old_pods_running=True, complete=False) == []
    resized = spec(12, paused=True)
    assert plan(resized, "v2", [v1(10)], status_replicas=10, old_pods_running=True, complete=False) == [
        ScaleReplicaSet("web-v1", 12)
    ]


def test_undo_reuses_the_old_replica_set_with_a_new_revision() -> None:
    rses = [
        dataclasses.replace(v1(0), current=0, available=0),
        ManagedReplicaSet(
            name="web-v2",
            template_hash="v2",
            replicas=10,
            current=10,
            available=10,
            created=2.0,
            revision=2,
            desired_replicas=10,
        ),
    ]
    actions = plan(spec(10), "v1", rses, status_replicas=10, old_pods_running=True, complete=False)
    assert actions == [SetRevision("web-v1", 3)]


def test_history_beyond_the_limit_is_pruned_oldest_first_once_complete() -> None:
    old = [
        ManagedReplicaSet(name=f"web-{i}", template_hash=str(i), replicas=0, created=float(i), revision=i)
        for i in range(1, 5)
    ]
    new = ManagedReplicaSet(
        name="web-new",
        template_hash="new",
        replicas=3,
        current=3,
        available=3,
        created=9.0,
        revision=5,
        desired_replicas=3,
    )
    actions = plan(spec(3, history=2), "new", [*old, new], status_replicas=3, old_pods_running=False, complete=True)
    assert actions == [DeleteReplicaSet("web-1"), DeleteReplicaSet("web-2")]
    assert plan(spec(3, history=2), "new", [*old, new], status_replicas=3, old_pods_running=False, complete=False) == []


def test_scaling_up_mid_rollout_resizes_once_then_carries_on() -> None:
    # Issue 12 item 1: 10 replicas, maxSurge 3, maxUnavailable 2, mid-rollout (old 1, new 10 with 6
    # available, both annotated 10 / 13), then scaled to 11. The controller's scale gives the new
    # ReplicaSet 13 and rewrites the annotations of *both* ReplicaSets (11 / 14); the rollout then
    # takes it back to 11 once and finishes. With the old ReplicaSet's annotations left at 10, every
    # other pass saw a scaling event again and the new ReplicaSet flipped between 13 and 11.
    old = ManagedReplicaSet(
        name="web-v1",
        template_hash="v1",
        replicas=1,
        current=1,
        available=1,
        created=1.0,
        revision=1,
        desired_replicas=10,
        max_replicas=13,
    )
    new = ManagedReplicaSet(
        name="web-v2",
        template_hash="v2",
        replicas=10,
        current=10,
        available=6,
        created=2.0,
        revision=2,
        desired_replicas=10,
        max_replicas=13,
    )
    target = spec(11, 3, 2)
    first = plan(target, "v2", [old, new], status_replicas=11, old_pods_running=True, complete=False)
    # Every active ReplicaSet is written: the old one keeps its size and gets fresh annotations.
    assert first == [ScaleReplicaSet("web-v1", 1), ScaleReplicaSet("web-v2", 13)]

    sim = Simulation([old, new], ready_after=2)
    trace = run(sim, target, "v2")
    new_sizes = [a.replicas for actions, _, _ in trace for a in actions if a == ScaleReplicaSet("web-v2", a.replicas)]
    assert new_sizes == [13, 11]
    assert {rs.name: (rs.replicas, rs.desired_replicas, rs.max_replicas) for rs in sim.rses.values()} == {
        "web-v1": (0, 11, 14),
        "web-v2": (11, 11, 14),
    }


def history_rs(
    name: str, replicas: int, revision: int, created: float, *, current: int | None = None, **kwargs: Any
) -> ManagedReplicaSet:
    return ManagedReplicaSet(
        name=name,
        template_hash=name,
        replicas=replicas,
        current=replicas if current is None else current,
        created=created,
        revision=revision,
        **kwargs,
    )


def cleanup_names(old: list[ManagedReplicaSet], limit: int) -> set[str]:
    return {a.name for a in cleanup(spec(1, history=limit), old) if isinstance(a, DeleteReplicaSet)}


@pytest.mark.parametrize(
    ("old", "limit", "deleted"),
    [
        # sync_test.go TestDeploymentController_cleanupDeployment: (name, spec.replicas, status.replicas, revision)
        pytest.param(
            [("foo-1", 0, 0, 1), ("foo-2", 0, 0, 2), ("foo-3", 0, 0, 3)], 1, {"foo-1", "foo-2"}, id="two-beyond-limit"
        ),
        pytest.param(
            [("foo-1", 0, 0, 1), ("foo-2", 0, 1, 2), ("foo-3", 1, 0, 3), ("foo-4", 1, 1, 4)],
            0,
            {"foo-1"},
            id="only-spec-and-status-0",
        ),
        pytest.param([("foo-1", 0, 0, 1), ("foo-2", 0, 0, 2)], 0, {"foo-1", "foo-2"}, id="limit-0"),
        pytest.param([("foo-1", 1, 1, 1), ("foo-2", 1, 1, 2)], 0, set(), id="all-have-replicas"),
        pytest.param([("foo-1", 0, 0, 1), ("foo-2", 0, 0, 2), ("foo-3", 0, 0, 3)], 2**31 - 1, set(), id="unlimited"),
        # sync_test.go TestDeploymentController_cleanupDeploymentOrder (created foo-1 < foo-2 < foo-3 < foo-4;
        # revision 0: no revision annotation)
        pytest.param([("foo-1", 0, 0, 1), ("foo-2", 0, 0, 2)], 1, {"foo-1"}, id="order-lower-revision"),
        pytest.param([("foo-1", 0, 0, 2), ("foo-2", 0, 0, 1)], 1, {"foo-2"}, id="order-lower-revision-though-newer"),
        pytest.param([("foo-1", 0, 0, 1), ("foo-2", 0, 0, 0)], 1, {"foo-2"}, id="order-no-revision-newer"),
        pytest.param([("foo-1", 0, 0, 0), ("foo-2", 0, 0, 2)], 1, {"foo-1"}, id="order-no-revision-older"),
        pytest.param(
            [("foo-1", 1, 1, 1), ("foo-2", 0, 0, 2), ("foo-3", 0, 0, 3)], 1, {"foo-2"}, id="order-skip-with-replicas"
        ),
        pytest.param(
            [("foo-1", 1, 1, 1), ("foo-2", 1, 1, 2), ("foo-3", 0, 0, 3)], 1, set(), id="order-both-with-replicas"
        ),
        pytest.param(
            [("foo-1", 0, 0, 3), ("foo-2", 0, 0, 1), ("foo-3", 0, 0, 4), ("foo-4", 0, 0, 2)],
            2,
            {"foo-2", "foo-4"},
            id="order-2-of-4",
        ),
    ],
)
def test_history_cleanup_like_the_controller(
    old: list[tuple[str, int, int, int]], limit: int, deleted: set[str]
) -> None:
    rses = [
        history_rs(name, replicas, revision, float(i), current=current)
        for i, (name, replicas, current, revision) in enumerate(old)
    ]
    assert cleanup_names(rses, limit) == deleted


def test_history_cleanup_skips_replica_sets_already_going_or_not_yet_observed() -> None:
    # cleanupDeployment: one already being deleted does not count against the limit; one whose status
    # lags its spec (generation > observedGeneration) is not deleted on this pass.
    assert cleanup_names([history_rs("foo-1", 0, 1, 1.0, deleting=True)], 0) == set()
    lagging = history_rs("foo-2", 0, 2, 2.0, unobserved=True)
    assert cleanup_names([history_rs("foo-1", 0, 1, 1.0), lagging, history_rs("foo-3", 0, 3, 3.0)], 1) == {"foo-1"}


def test_history_cleanup_after_undo_keeps_the_undone_revision() -> None:
    # Issue 12 item 3: revisionHistoryLimit 1; v1, v2, undo (v1's ReplicaSet becomes revision 3), v4.
    # v1's ReplicaSet is the oldest by creation but holds revision 3: revision 2 is the one to go.
    rses = [
        history_rs("web-v1", 0, 3, 1.0),
        history_rs("web-v2", 0, 2, 2.0),
        history_rs("web-v4", 2, 4, 4.0, available=2, desired_replicas=2, max_replicas=3),
    ]
    rses[2] = dataclasses.replace(rses[2], template_hash="v4")
    actions = plan(spec(2, 1, 0, history=1), "v4", rses, status_replicas=2, old_pods_running=False, complete=True)
    assert actions == [DeleteReplicaSet("web-v2")]


def test_a_paused_workload_at_zero_replicas_scales_up() -> None:
    # Issue 12 item 4: pause, scale to 0, scale to 3. No ReplicaSet is active, so no annotation says
    # "scaling event"; the controller's paused sync still scales the newest ReplicaSet (FindActiveOrLatest).
    emptied = dataclasses.replace(v1(0), current=0, available=0, desired_replicas=0, max_replicas=0)
    assert plan(spec(3, paused=True), "v1", [emptied], status_replicas=0, old_pods_running=False, complete=False) == [
        ScaleReplicaSet("web-v1", 3)
    ]
    # The same while a new template waits behind the pause: the newest ReplicaSet is the one to grow.
    older = dataclasses.replace(emptied, name="web-v0", template_hash="v0", created=0.5, revision=0)
    assert plan(
        spec(3, paused=True), "v2", [older, emptied], status_replicas=0, old_pods_running=False, complete=False
    ) == [ScaleReplicaSet("web-v1", 3)]


def test_a_paused_workload_prunes_history_too() -> None:
    # sync.go sync: a paused Deployment's sync runs cleanupDeployment, complete or not.
    rses = [history_rs("web-1", 0, 1, 1.0), history_rs("web-2", 0, 2, 2.0), dataclasses.replace(v1(3), revision=3)]
    actions = plan(
        spec(3, history=1, paused=True), "v1", rses, status_replicas=3, old_pods_running=True, complete=False
    )
    assert actions == [DeleteReplicaSet("web-1")]


@pytest.mark.parametrize(
    ("old_status_replicas", "pod_phases", "running"),
    [
        # recreate_test.go TestOldPodsRunning; the new ReplicaSet's uid is "new"
        pytest.param([], {}, False, id="no-old-replica-sets"),
        pytest.param([0, 0], {"some-uid": ["Running"], "other-uid": ["Running"]}, True, id="old-with-running-pods"),
        pytest.param([1], {}, True, id="no-pods-but-status-replicas"),
        pytest.param([0], {}, False, id="no-pods-no-status-replicas"),
        pytest.param([0], {"uid-1": ["Failed", "Succeeded"]}, False, id="terminal-pods-only"),
        pytest.param([0], {"uid-1": ["Unknown"]}, True, id="unknown-phase"),
        pytest.param([0], {"uid-1": ["Pending"]}, True, id="pending"),
        pytest.param([0], {"uid-1": ["Running"]}, True, id="running"),
        pytest.param(
            [0], {"uid-1": ["Failed", "Succeeded"], "uid-2": [], "uid-3": ["Pending"]}, True, id="terminal-and-pending"
        ),
        # ours: the new ReplicaSet's own pods never hold it back
        pytest.param([0], {"new": ["Running", "Pending"]}, False, id="new-pods-only"),
    ],
)
def test_old_pods_running(old_status_replicas: list[int], pod_phases: dict[str, list[str]], running: bool) -> None:
    assert old_pods_running(new_uid="new", old_status_replicas=old_status_replicas, pod_phases=pod_phases) is running


def test_a_changed_min_ready_seconds_goes_to_the_new_replica_set() -> None:
    # Issue 12 item 9: sync.go getNewReplicaSet updates minReadySeconds on the existing new ReplicaSet,
    # paused or not; no new ReplicaSet for it.
    current = dataclasses.replace(v1(3), min_ready_seconds=0)
    document_spec = dataclasses.replace(spec(3), min_ready_seconds=5)
    assert plan(document_spec, "v1", [current], status_replicas=3, old_pods_running=False, complete=True) == [
        SetMinReadySeconds("web-v1", 5)
    ]
    paused = dataclasses.replace(document_spec, paused=True)
    assert plan(paused, "v1", [current], status_replicas=3, old_pods_running=False, complete=True) == [
        SetMinReadySeconds("web-v1", 5)
    ]
    done = dataclasses.replace(current, min_ready_seconds=5)
    assert plan(document_spec, "v1", [done], status_replicas=3, old_pods_running=False, complete=True) == []


def test_revision_history_is_capped_like_the_controller() -> None:
    # deployment_util_test.go TestAnnotationUtils "SetNewReplicaSetAnnotations": revisions 11 to 20 in turn with
    # a 5-character limit keep the last two old revisions ("11,12", then "12,13", ...).
    history, revision = "", ""
    for number in range(11, 21):
        if revision:
            capped = revision_history(history, revision, limit=5)
            history = capped if capped is not None else history
        revision = str(number)
        if number >= 13:
            assert history == f"{number - 2},{number - 1}"
    assert revision_history("", "7") == "7"
    assert revision_history("1,2", "3") == "1,2,3"
    assert revision_history("123456", "7", limit=5) == "7"  # every older revision dropped
    assert revision_history("1", "123456", limit=5) is None  # nothing makes it fit: left as it was


def test_annotations_go_to_the_replica_set_and_come_back_on_undo() -> None:
    workload = {
        "kubernetes.io/change-cause": "v2",
        "team": "a",
        "deployment.kubernetes.io/revision": "4",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }
    replica_set = {"kubernetes.io/change-cause": "v1", "deployment.kubernetes.io/revision": "1", "old-only": "x"}
    # copyDeploymentAnnotationsToReplicaSet: the controller's own and last-applied stay out; extra ones stay.
    assert annotations_to_copy(workload, replica_set) == {"kubernetes.io/change-cause": "v2", "team": "a"}
    # kubectl rollback.go: the workload takes the revision's annotations, keeping its own skipped ones.
    assert annotations_after_undo(workload, {**replica_set, "rollout-plus.kubectl.io/template": "{}"}) == {
        "kubernetes.io/change-cause": "v1",
        "old-only": "x",
        "deployment.kubernetes.io/revision": "4",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }


def test_annotation_only_edits_reach_the_new_replica_set() -> None:
    current = dataclasses.replace(v1(3), annotations={"kubernetes.io/change-cause": "first"})
    edited = dataclasses.replace(spec(3), annotations={"kubernetes.io/change-cause": "second"})
    assert plan(edited, "v1", [current], status_replicas=3, old_pods_running=False, complete=True) == [
        CopyAnnotations("web-v1", {"kubernetes.io/change-cause": "second"})
    ]


def find_rs(name: str, template: str, created: float, replicas: int = 1) -> ManagedReplicaSet:
    return ManagedReplicaSet(name=name, template_hash=template, replicas=replicas, created=created)


NEW_RS = find_rs("new-rs", "nginx", 2.0)  # created later
NEW_RS_DUP = find_rs("new-rs-dup", "nginx", 1.0)  # same template, another hash, created first
OLD_RS = find_rs("old-rs", "nginx-old-1", 0.5)


@pytest.mark.parametrize(
    ("replica_sets", "new", "old"),
    [
        # deployment_util_test.go TestFindNewReplicaSet and TestFindOldReplicaSets
        pytest.param([NEW_RS, OLD_RS], NEW_RS, [OLD_RS], id="same-template-other-hash"),
        pytest.param([NEW_RS, OLD_RS, NEW_RS_DUP], NEW_RS_DUP, [NEW_RS, OLD_RS], id="oldest-of-two-new"),
        pytest.param([OLD_RS], None, [OLD_RS], id="no-new"),
        pytest.param([NEW_RS], NEW_RS, [], id="no-old"),
    ],
)
def test_find_new_and_old_replica_sets(
    replica_sets: list[ManagedReplicaSet], new: ManagedReplicaSet | None, old: list[ManagedReplicaSet]
) -> None:
    found, others = split("nginx", replica_sets)
    assert found == new
    assert sorted(rs.name for rs in others) == sorted(rs.name for rs in old)


def test_a_blue_green_goal_is_reached_at_once_beyond_maxsurge() -> None:
    """Blue-green: the new ReplicaSet at full size beside the old one (twice the pods, not maxSurge's), every
    other old ReplicaSet at 0; the same goal as a canary's moves inside maxSurge."""
    other = ManagedReplicaSet(name="web-v0", template_hash="v0", replicas=2, current=2, available=2, revision=0)
    v2 = ManagedReplicaSet(name="web-v2", template_hash="v2", replicas=0, created=2.0, revision=2, desired_replicas=10)
    both = Counts(canary=10, stable=10)
    at_once = CanaryGoal(counts=both, stable="web-v1", at_once=True)
    assert plan(
        spec(10), "v2", [v1(10)], status_replicas=10, old_pods_running=True, complete=False, canary=at_once
    ) == [CreateReplicaSet(10, 2)]
    assert plan(
        spec(10), "v2", [other, v1(10), v2], status_replicas=12, old_pods_running=True, complete=False, canary=at_once
    ) == [ScaleReplicaSet("web-v2", 10), ScaleReplicaSet("web-v0", 0)]
    stepwise = CanaryGoal(counts=both, stable="web-v1")
    assert plan(
        spec(10), "v2", [v1(10)], status_replicas=10, old_pods_running=True, complete=False, canary=stepwise
    ) == [CreateReplicaSet(3, 2)]
    # After the delay: the old one to 0 at once (the driver still holds it to what the PDBs allow).
    gone = CanaryGoal(counts=Counts(canary=10, stable=0), stable="web-v1", at_once=True)
    full = dataclasses.replace(v2, replicas=10, current=10, available=10)
    assert plan(
        spec(10), "v2", [v1(10), full], status_replicas=20, old_pods_running=True, complete=False, canary=gone
    ) == [ScaleReplicaSet("web-v1", 0)]
