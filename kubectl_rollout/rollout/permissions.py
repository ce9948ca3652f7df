"""What each rollout command needs of RBAC, checked before its first change.

A viewer who runs ``scale`` should learn which verbs it lacks in one line,
not meet the raw 403 of the first write after the record was read. The lists
follow the API calls the commands make: the record is a ConfigMap (read,
replaced by a spec change, created by ``apply``, its status patched by the
driver); a driver watches the record, the workload's ReplicaSets, their pods
and the namespace's PodDisruptionBudgets, creates, scales and deletes
ReplicaSets, and holds a ``coordination.k8s.io`` Lease; a blue-green workload's
driver also reads and patches its Services (checked up front by ``apply``).
docs/rbac/rollout.yaml is the Role that grants exactly these.
"""

from __future__ import annotations

from kubectl_rollout.jobs.spec import ActionKind, RolloutAction
from kubectl_rollout.kube.permissions import Permission
from kubectl_rollout.rollout.bluegreen.format import BLUE_GREEN, STRATEGY_ANNOTATION

#: the commands that act on a canary's steps, not on the workload's spec
CANARY_COMMANDS = frozenset({ActionKind.PROMOTE, ActionKind.ABORT, ActionKind.RETRY})


def _each(verbs: str, resource: str, namespace: str, *, group: str = "") -> list[Permission]:
    return [Permission(verb, resource, group=group, namespace=namespace) for verb in verbs.split()]


def driving_permissions(namespace: str) -> list[Permission]:
    """Driving a rollout (or following its driver, which may take over from it)."""
    return [
        *_each("list watch patch", "configmaps", namespace),
        *_each("get list watch create patch delete", "replicasets", namespace, group="apps"),
        *_each("list watch", "pods", namespace),
        *_each("list watch", "poddisruptionbudgets", namespace, group="policy"),
        *_each("get create update delete", "leases", namespace, group="coordination.k8s.io"),
    ]


def rollout_permissions(action: RolloutAction, namespace: str) -> list[Permission]:
    """What ``action`` needs in ``namespace``: the record's reads and writes, then driving unless ``--no-wait``."""
    needed = [Permission("get", "configmaps", namespace=namespace)]
    if action.kind in CANARY_COMMANDS:
        # promote, abort and retry patch the canary's state on the record
        needed += _each("patch", "configmaps", namespace)
    elif action.kind is not ActionKind.WATCH:
        # a spec change replaces the record (update); apply creates it the first time
        needed += _each("create update" if action.kind is ActionKind.APPLY else "update", "configmaps", namespace)
    if action.kind is ActionKind.APPLY and _blue_green(action):
        # its Services are read before anything is written, and switched by the driver
        needed += _each("get patch", "services", namespace)
    if action.kind is ActionKind.UNDO:
        # the revisions are the ReplicaSets
        needed.append(Permission("list", "replicasets", group="apps", namespace=namespace))
    driven = action.kind is ActionKind.WATCH or (action.kind is not ActionKind.PAUSE and action.drive.wait)
    if driven:
        needed += driving_permissions(namespace)
    return list(dict.fromkeys(needed))


def _blue_green(action: RolloutAction) -> bool:
    """The manifest asks for blue-green (its Services are checked and switched)."""
    annotations = ((action.manifest or {}).get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(STRATEGY_ANNOTATION) == BLUE_GREEN)


def adopt_permissions(namespace: str) -> list[Permission]:
    """``adopt deployment/NAME``: record created, Deployment orphan-deleted, its ReplicaSets re-owned."""
    return [
        *_each("get list watch delete", "deployments", namespace, group="apps"),
        *_each("list watch patch", "replicasets", namespace, group="apps"),
        *_each("get create patch", "configmaps", namespace),
    ]


def release_permissions(namespace: str) -> list[Permission]:
    """``release NAME``: record orphan-deleted, a Deployment created to take the ReplicaSets back."""
    return [
        *_each("get create", "deployments", namespace, group="apps"),
        *_each("list watch", "replicasets", namespace, group="apps"),
        *_each("get list watch delete", "configmaps", namespace),
    ]


def delete_permissions(namespace: str) -> list[Permission]:
    """``delete NAME``: the record goes, and the garbage collector takes its ReplicaSets and pods."""
    return _each("get delete", "configmaps", namespace)
