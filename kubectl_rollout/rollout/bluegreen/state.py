"""Where a blue-green rollout stands, as kept on the workload's record (its ConfigMap's ``blueGreen`` key), and
what the driver does next: given the settings, that state, the two ReplicaSets' counts and the clock.

The state is the only memory of a blue-green rollout: the stable ReplicaSet
(the one the active Service selects until promote), when the preview became
ready, who promoted or aborted it and when, and when the active Service was
switched, recorded once the switch is made. The old ReplicaSet is scaled down
``scale-down-delay`` after that recorded time, so a driver started mid-delay
waits only what is left.

Pure: the state and the counts in, a decision out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.rollout.bluegreen.format import BlueGreen
from kubectl_rollout.rollout.canary.state import Mark
from kubectl_rollout.rollout.steps.weights import Counts


def _time(raw: Any) -> float | None:
    return float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None


@dataclass(frozen=True, kw_only=True)
class BlueGreenState:
    #: the template the new ReplicaSet runs (our template hash); another one starts a new blue-green rollout
    new_hash: str
    #: the ReplicaSet the active Service selects until promote, and its pod-template-hash ("": a first rollout)
    stable: str = ""
    stable_pod_hash: str = ""
    #: when every pod of the preview was first available (epoch seconds); auto-promote counts from then
    ready_at: float | None = None
    #: waiting for promote, marked once
    paused: Mark | None = None
    promoted: Mark | None = None
    #: when the active Service was switched to the new ReplicaSet, written after the switch was made
    switched_at: float | None = None
    #: when the old ReplicaSet reached 0: the rollout is over
    scaled_down_at: float | None = None
    aborted: Mark | None = None
    retried: Mark | None = None

    @property
    def first(self) -> bool:
        """No stable ReplicaSet: a first rollout, the active Service is pointed at the new one once available."""
        return not self.stable

    @property
    def done(self) -> bool:
        return self.scaled_down_at is not None or (self.first and self.switched_at is not None)

    def as_dict(self) -> dict[str, Any]:
        raw: dict[str, Any] = {
            "new_hash": self.new_hash,
            "stable": self.stable,
            "stable_pod_hash": self.stable_pod_hash,
        }
        for key in ("ready_at", "switched_at", "scaled_down_at"):
            if getattr(self, key) is not None:
                raw[key] = getattr(self, key)
        for key in ("paused", "promoted", "aborted", "retried"):
            mark = getattr(self, key)
            if mark is not None:
                raw[key] = mark.as_dict()
        return raw

    @classmethod
    def from_dict(cls, raw: Any) -> BlueGreenState | None:
        if not isinstance(raw, dict) or not raw.get("new_hash"):
            return None
        return cls(
            new_hash=str(raw["new_hash"]),
            stable=str(raw.get("stable", "")),
            stable_pod_hash=str(raw.get("stable_pod_hash", "")),
            ready_at=_time(raw.get("ready_at")),
            paused=Mark.from_dict(raw.get("paused")),
            promoted=Mark.from_dict(raw.get("promoted")),
            switched_at=_time(raw.get("switched_at")),
            scaled_down_at=_time(raw.get("scaled_down_at")),
            aborted=Mark.from_dict(raw.get("aborted")),
            retried=Mark.from_dict(raw.get("retried")),
        )


@dataclass(frozen=True, kw_only=True)
class Sizes:
    """One ReplicaSet as the decision sees it: spec.replicas, the pods it may still have, available pods."""

    replicas: int = 0
    pods: int = 0
    available: int = 0

    def at(self, count: int) -> bool:
        """Exactly ``count`` replicas, every one of them there and available (and no pod on its way out)."""
        return self.replicas == count and self.pods == count and self.available >= count


# --- decisions ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Grow:
    """Drive the ReplicaSets to ``goal`` (the new one to its preview or full size, the stable one kept)."""

    goal: Counts


@dataclass(frozen=True, kw_only=True)
class MarkReady:
    """Every preview pod is available: record when (auto-promote counts from then), paused if it waits."""

    goal: Counts
    waits: bool


@dataclass(frozen=True, kw_only=True)
class WaitForPromote:
    """The preview is ready and marked: hold until ``promote`` (``until``: an auto-promote's time)."""

    goal: Counts
    until: float | None


@dataclass(frozen=True, kw_only=True)
class AutoPromote:
    """Auto-promote's time has come: record a promote by the workload's own setting."""

    goal: Counts


@dataclass(frozen=True, kw_only=True)
class SwitchActive:
    """Promoted, the new ReplicaSet at full size and every pod available: the active Service selects it now."""

    goal: Counts


@dataclass(frozen=True, kw_only=True)
class KeepOld:
    """Switched: the old ReplicaSet keeps its size until ``until`` (the recorded switch + the delay)."""

    goal: Counts
    until: float


@dataclass(frozen=True, kw_only=True)
class ScaleDownOld:
    """The delay is over: the old ReplicaSet goes to 0; ``reached`` once it is there (then recorded)."""

    goal: Counts
    reached: bool


@dataclass(frozen=True, kw_only=True)
class Unwind:
    """Aborted: the active Service back on the stable ReplicaSet (before anything shrinks), the new one to 0."""

    goal: Counts
    reached: bool


Decision = Grow | MarkReady | WaitForPromote | AutoPromote | SwitchActive | KeepOld | ScaleDownOld | Unwind


def decide(
    *, settings: BlueGreen, state: BlueGreenState, replicas: int, new: Sizes, stable: Sizes, now: float
) -> Decision | None:
    """What the driver does now; None when there is nothing of blue-green's to do (a first rollout still rolling,
    or a rollout that is over: the plain rolling update carries on)."""
    full = Counts(canary=replicas, stable=replicas)
    if state.aborted is not None:
        goal = Counts(canary=0, stable=replicas)
        return Unwind(goal=goal, reached=new.at(0) and stable.at(replicas))
    if state.done:
        return None
    if state.first:
        # Nothing to compare with: the rolling update creates the new ReplicaSet; the active Service follows it
        # once every replica is available.
        return SwitchActive(goal=full) if new.at(replicas) else None
    if state.switched_at is not None:
        until = state.switched_at + settings.scale_down_delay
        if now < until:
            return KeepOld(goal=full, until=until)
        goal = Counts(canary=replicas, stable=0)
        return ScaleDownOld(goal=goal, reached=new.at(replicas) and stable.at(0))
    if state.promoted is not None:
        return SwitchActive(goal=full) if new.at(replicas) and stable.at(replicas) else Grow(goal=full)
    preview = Counts(canary=settings.preview_size(replicas), stable=replicas)
    if state.ready_at is None:
        if new.at(preview.canary):
            return MarkReady(goal=preview, waits=settings.auto_promote_after != 0)
        return Grow(goal=preview)
    if settings.auto_promote_after is None:
        return WaitForPromote(goal=preview, until=None)
    until = state.ready_at + settings.auto_promote_after
    if now >= until:
        return AutoPromote(goal=preview)
    return WaitForPromote(goal=preview, until=until)


def promoted(state: BlueGreenState, *, by: str, now: float) -> BlueGreenState:
    return dataclasses.replace(state, promoted=Mark(by=by, at=now), paused=None)


def retried(state: BlueGreenState, *, by: str, now: float) -> BlueGreenState:
    """An aborted rollout from the start again: the preview grows, and waits to be promoted again."""
    return BlueGreenState(
        new_hash=state.new_hash,
        stable=state.stable,
        stable_pod_hash=state.stable_pod_hash,
        retried=Mark(by=by, at=now),
    )
