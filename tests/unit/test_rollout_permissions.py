"""What each rollout command asks RBAC for before its first change (kubectl_rollout/rollout/permissions.py).

The cluster side (a Role with exactly these rules works; one verb less fails in one line) is
tests/integration/test_rbac.py; this table pins which command needs which verbs.
"""

from __future__ import annotations

import pytest

from kubectl_rollout.jobs.spec import ActionKind, DriveOptions, RolloutAction
from kubectl_rollout.kube.permissions import Permission
from kubectl_rollout.rollout.permissions import rollout_permissions

NS = "shop"
DRIVING = {"list configmaps", "watch configmaps", "patch configmaps", "create replicasets.apps", "create leases"}


def names(needed: list[Permission]) -> set[str]:
    return {str(p).replace(f" in namespace {NS}", "").replace(".coordination.k8s.io", "") for p in needed}


@pytest.mark.parametrize(
    ("kind", "wait", "must", "must_not"),
    [
        (ActionKind.APPLY, True, {"get configmaps", "create configmaps", "update configmaps"} | DRIVING, set()),
        (ActionKind.APPLY, False, {"create configmaps", "update configmaps"}, DRIVING),
        (ActionKind.SCALE, True, {"update configmaps"} | DRIVING, {"create configmaps"}),
        (ActionKind.SET_IMAGE, False, {"get configmaps", "update configmaps"}, DRIVING | {"create configmaps"}),
        (ActionKind.UNDO, False, {"update configmaps", "list replicasets.apps"}, DRIVING),
        # pause records the change and never drives, whatever --wait says
        (ActionKind.PAUSE, True, {"update configmaps"}, DRIVING),
        (ActionKind.RESUME, True, {"update configmaps"} | DRIVING, set()),
        # promote, abort and retry patch the canary's state on the record, no spec
        (ActionKind.PROMOTE, False, {"get configmaps", "patch configmaps"}, {"update configmaps", "create leases"}),
        (ActionKind.ABORT, True, {"patch configmaps"} | DRIVING, {"update configmaps", "create configmaps"}),
        (ActionKind.RETRY, True, {"patch configmaps"} | DRIVING, {"update configmaps", "create configmaps"}),
        # status -w changes no spec, but may take over the driving
        (ActionKind.WATCH, True, {"get configmaps"} | DRIVING, {"update configmaps", "create configmaps"}),
    ],
)
def test_each_command_asks_for_what_it_uses(kind: ActionKind, wait: bool, must: set[str], must_not: set[str]) -> None:
    action = RolloutAction(kind=kind, name="web", drive=DriveOptions(wait=wait))
    needed = rollout_permissions(action, NS)
    assert must <= names(needed), must - names(needed)
    assert not must_not & names(needed)
    assert all(p.namespace == NS for p in needed)
    assert len(needed) == len(set(needed))
