"""Blue-green's pure parts: the annotations it is asked with, and what the driver does at each point of it.

Cases from Argo Rollouts' blue-green (rollout/bluegreen.go, utils/defaults): the
old ReplicaSet kept ``scaleDownDelaySeconds`` (30 s by default) after the active
Service is switched, the preview at ``previewReplicaCount`` until promote, then
at full size before the switch; where we differ (auto-promote off by default)
the case says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_rollout.cli.main import cli
from kubectl_rollout.rollout.bluegreen.format import BlueGreen, InvalidBlueGreen, blue_green_of
from kubectl_rollout.rollout.bluegreen.plan import plan_rows
from kubectl_rollout.rollout.bluegreen.state import (
    AutoPromote,
    BlueGreenState,
    Grow,
    KeepOld,
    MarkReady,
    ScaleDownOld,
    Sizes,
    SwitchActive,
    Unwind,
    WaitForPromote,
    decide,
    promoted,
    retried,
)
from kubectl_rollout.rollout.canary.state import Mark
from kubectl_rollout.rollout.steps.weights import Counts

BG = {"rollout-plus.io/strategy": "blueGreen", "rollout-plus.io/active-service": "web"}


def parse(extra: dict[str, Any], *, strategy: str = "RollingUpdate") -> BlueGreen | None:
    return blue_green_of({**BG, **extra}, workload="web", strategy_type=strategy)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, BlueGreen(active_service="web")),
        (
            {
                "rollout-plus.io/preview-service": "web-preview",
                "rollout-plus.io/scale-down-delay": "3s",
                "rollout-plus.io/auto-promote": "true",
                "rollout-plus.io/preview-replicas": "2",
            },
            BlueGreen(
                active_service="web",
                preview_service="web-preview",
                scale_down_delay=3.0,
                auto_promote_after=0.0,
                preview_replicas=2,
            ),
        ),
        ({"rollout-plus.io/auto-promote": "1m30s"}, BlueGreen(active_service="web", auto_promote_after=90.0)),
        ({"rollout-plus.io/auto-promote": "False"}, BlueGreen(active_service="web")),
        ({"rollout-plus.io/scale-down-delay": "0"}, BlueGreen(active_service="web", scale_down_delay=0.0)),
    ],
)
def test_the_annotations_give_the_settings(extra: dict[str, Any], expected: BlueGreen) -> None:
    assert parse(extra) == expected


def test_argo_s_default_delay_is_30_seconds() -> None:
    settings = parse({})
    assert settings is not None
    assert settings.scale_down_delay == 30.0
    assert settings.auto_promote_after is None  # Argo promotes itself by default; we wait for a person


def test_no_strategy_is_no_blue_green() -> None:
    assert blue_green_of({}, workload="web", strategy_type="RollingUpdate") is None
    assert blue_green_of({"rollout-plus.io/strategy": "canary"}, workload="web", strategy_type="Recreate") is None


@pytest.mark.parametrize(
    ("annotations", "strategy", "words"),
    [
        ({"rollout-plus.io/strategy": "blueGreen"}, "RollingUpdate", "rollout-plus.io/active-service is required"),
        ({**BG, "rollout-plus.io/preview-service": "web"}, "RollingUpdate", "name the same Service 'web'"),
        ({**BG, "rollout-plus.io/steps": "setWeight 10"}, "RollingUpdate", "canary steps"),
        (BG, "Recreate", "blue-green needs RollingUpdate"),
        ({**BG, "rollout-plus.io/scale-down-delay": "soon"}, "RollingUpdate", "scale-down-delay: invalid duration"),
        ({**BG, "rollout-plus.io/scale-down-delay": "25h"}, "RollingUpdate", "is longer than 24h"),
        (
            {**BG, "rollout-plus.io/auto-promote": "maybe"},
            "RollingUpdate",
            "auto-promote: 'maybe' is neither false, true nor a duration",
        ),
        ({**BG, "rollout-plus.io/preview-replicas": "0"}, "RollingUpdate", "is not a count of at least 1"),
        ({**BG, "rollout-plus.io/active-service": "Web_1"}, "RollingUpdate", "is not a Service name"),
        ({"rollout-plus.io/strategy": "blue-green"}, "RollingUpdate", "'blue-green' is not a strategy"),
        ({"rollout-plus.io/active-service": "web"}, "RollingUpdate", "without rollout-plus.io/strategy: blueGreen"),
    ],
)
def test_bad_settings_are_refused_naming_the_workload(annotations: dict[str, Any], strategy: str, words: str) -> None:
    with pytest.raises(InvalidBlueGreen) as refused:
        blue_green_of(annotations, workload="web", strategy_type=strategy)
    assert refused.value.exit_code == 2
    assert refused.value.message.startswith('workload "web" has an invalid blue-green strategy: ')
    assert words in refused.value.message
    assert refused.value.message.endswith("nothing was changed")


# --- the walk ------------------------------------------------------------------------------------------------

R = 10
NOW = 1000.0
SETTINGS = BlueGreen(active_service="web", scale_down_delay=30.0)
STARTED = BlueGreenState(new_hash="new", stable="web-old", stable_pod_hash="old")
FULL = Sizes(replicas=R, pods=R, available=R)
NONE = Sizes()
BY = Mark(by="alice@host", at=NOW - 5)


def at(replicas: int, available: int | None = None, pods: int | None = None) -> Sizes:
    return Sizes(
        replicas=replicas,
        pods=replicas if pods is None else pods,
        available=replicas if available is None else available,
    )


@pytest.mark.parametrize(
    ("settings", "state", "new", "stable", "expected"),
    [
        # the preview grows to full size (Argo: previewReplicaCount unset) while the stable keeps every replica
        (SETTINGS, STARTED, NONE, FULL, Grow(goal=Counts(canary=R, stable=R))),
        (SETTINGS, STARTED, at(R, 7), FULL, Grow(goal=Counts(canary=R, stable=R))),
        # every preview pod available: recorded, and it waits for promote (Argo's default would promote itself)
        (SETTINGS, STARTED, FULL, FULL, MarkReady(goal=Counts(canary=R, stable=R), waits=True)),
        (
            BlueGreen(active_service="web", preview_replicas=2),
            STARTED,
            at(2),
            FULL,
            MarkReady(goal=Counts(canary=2, stable=R), waits=True),
        ),
        (
            BlueGreen(active_service="web", auto_promote_after=0.0),
            STARTED,
            FULL,
            FULL,
            MarkReady(goal=Counts(canary=R, stable=R), waits=False),
        ),
        (
            SETTINGS,
            BlueGreenState(new_hash="new", stable="web-old", ready_at=NOW - 1, paused=BY),
            FULL,
            FULL,
            WaitForPromote(goal=Counts(canary=R, stable=R), until=None),
        ),
        # auto-promote after a duration counts from when the preview was recorded ready (Argo's
        # autoPromotionSeconds counts from the pause)
        (
            BlueGreen(active_service="web", auto_promote_after=20.0),
            BlueGreenState(new_hash="new", stable="web-old", ready_at=NOW - 5),
            FULL,
            FULL,
            WaitForPromote(goal=Counts(canary=R, stable=R), until=NOW + 15),
        ),
        (
            BlueGreen(active_service="web", auto_promote_after=20.0),
            BlueGreenState(new_hash="new", stable="web-old", ready_at=NOW - 20),
            FULL,
            FULL,
            AutoPromote(goal=Counts(canary=R, stable=R)),
        ),
        # promoted with a small preview: to full size first, then the switch
        (
            BlueGreen(active_service="web", preview_replicas=2),
            promoted(BlueGreenState(new_hash="new", stable="web-old", ready_at=NOW - 9), by="alice", now=NOW),
            at(2),
            FULL,
            Grow(goal=Counts(canary=R, stable=R)),
        ),
        (
            SETTINGS,
            promoted(STARTED, by="alice", now=NOW),
            at(R, 9),
            FULL,
            Grow(goal=Counts(canary=R, stable=R)),
        ),
        (SETTINGS, promoted(STARTED, by="alice", now=NOW), FULL, FULL, SwitchActive(goal=Counts(canary=R, stable=R))),
        # switched: the old one keeps its size for the delay counted from the recorded switch, then goes to 0
        (
            SETTINGS,
            BlueGreenState(new_hash="new", stable="web-old", promoted=BY, switched_at=NOW - 12),
            FULL,
            FULL,
            KeepOld(goal=Counts(canary=R, stable=R), until=NOW + 18),
        ),
        (
            SETTINGS,
            BlueGreenState(new_hash="new", stable="web-old", promoted=BY, switched_at=NOW - 30),
            FULL,
            FULL,
            ScaleDownOld(goal=Counts(canary=R, stable=0), reached=False),
        ),
        (
            SETTINGS,
            BlueGreenState(new_hash="new", stable="web-old", promoted=BY, switched_at=NOW - 31),
            FULL,
            at(0, pods=3),
            ScaleDownOld(goal=Counts(canary=R, stable=0), reached=False),
        ),
        (
            SETTINGS,
            BlueGreenState(new_hash="new", stable="web-old", promoted=BY, switched_at=NOW - 31),
            FULL,
            NONE,
            ScaleDownOld(goal=Counts(canary=R, stable=0), reached=True),
        ),
        # over: nothing of blue-green's to do
        (
            SETTINGS,
            BlueGreenState(new_hash="new", stable="web-old", switched_at=NOW - 40, scaled_down_at=NOW - 9),
            FULL,
            NONE,
            None,
        ),
        # aborted, before or after the switch: the stable at full size, the new one at 0
        (
            SETTINGS,
            BlueGreenState(new_hash="new", stable="web-old", aborted=BY),
            at(R, 4),
            FULL,
            Unwind(goal=Counts(canary=0, stable=R), reached=False),
        ),
        (
            SETTINGS,
            BlueGreenState(new_hash="new", stable="web-old", switched_at=NOW - 3, aborted=BY),
            NONE,
            FULL,
            Unwind(goal=Counts(canary=0, stable=R), reached=True),
        ),
        # a first rollout: a plain rolling update, then the active Service follows the new ReplicaSet
        (SETTINGS, BlueGreenState(new_hash="new"), at(7, 5), NONE, None),
        (SETTINGS, BlueGreenState(new_hash="new"), FULL, NONE, SwitchActive(goal=Counts(canary=R, stable=R))),
        (SETTINGS, BlueGreenState(new_hash="new", switched_at=NOW - 1), FULL, NONE, None),
    ],
)
def test_what_the_driver_does(
    settings: BlueGreen, state: BlueGreenState, new: Sizes, stable: Sizes, expected: object
) -> None:
    assert decide(settings=settings, state=state, replicas=R, new=new, stable=stable, now=NOW) == expected


def test_retry_starts_the_preview_again_and_keeps_the_stable() -> None:
    aborted = BlueGreenState(
        new_hash="new", stable="web-old", stable_pod_hash="old", ready_at=NOW - 50, promoted=BY, aborted=BY
    )
    again = retried(aborted, by="bob", now=NOW)
    assert again == BlueGreenState(
        new_hash="new", stable="web-old", stable_pod_hash="old", retried=Mark(by="bob", at=NOW)
    )
    assert decide(settings=SETTINGS, state=again, replicas=R, new=NONE, stable=FULL, now=NOW) == Grow(
        goal=Counts(canary=R, stable=R)
    )


def test_the_state_survives_the_record() -> None:
    state = BlueGreenState(
        new_hash="new",
        stable="web-old",
        stable_pod_hash="old",
        ready_at=NOW - 9,
        paused=BY,
        promoted=BY,
        switched_at=NOW - 3,
        aborted=BY,
        retried=BY,
    )
    assert BlueGreenState.from_dict(state.as_dict()) == state
    assert BlueGreenState.from_dict({"stable": "x"}) is None
    assert BlueGreenState.from_dict("garbage") is None


# --- the plan before the run ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "rows"),
    [
        (
            SETTINGS,
            [
                ("preview, waiting", 10, 10),
                ("promote: the active Service switches", 10, 10),
                ("30s after the switch", 10, 0),
            ],
        ),
        (
            BlueGreen(active_service="web", preview_replicas=2, auto_promote_after=90.0, scale_down_delay=3.0),
            [("preview", 2, 10), ("auto-promote after 1m30s: the switch", 10, 10), ("3s after the switch", 10, 0)],
        ),
        (
            BlueGreen(active_service="web", preview_replicas=50),
            [
                ("preview, waiting", 10, 10),
                ("promote: the active Service switches", 10, 10),
                ("30s after the switch", 10, 0),
            ],
        ),
    ],
)
def test_the_plan_holds_both_revisions_until_the_delay_is_over(
    settings: BlueGreen, rows: list[tuple[str, int, int]]
) -> None:
    planned = plan_rows(settings, replicas=R)
    assert [(row.when, row.new, row.old) for row in planned] == rows
    assert max(row.pods for row in planned) == 2 * R


def test_apply_plan_prints_the_peak_and_changes_nothing(tmp_path: Path) -> None:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {**BG, "rollout-plus.io/preview-replicas": "2"}},
        "spec": {
            "replicas": R,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "a"}]},
            },
        },
    }
    path = tmp_path / "web.yaml"
    path.write_text(json.dumps(manifest))
    # No cluster at all: the plan is the manifest's alone.
    result = CliRunner().invoke(cli, ["apply", "-f", str(path), "--plan", "--kubeconfig", str(tmp_path / "none")])
    assert result.exit_code == 0, result.output
    assert "preview, waiting                                2   10    12" in result.output
    assert "peak: 20 pods (blue-green holds both revisions, beyond maxSurge)" in result.output
