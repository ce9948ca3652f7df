"""A workload's pod template as the API server stores it, defaults filled in.

The controller tells the new ReplicaSet from the old ones by comparing pod
templates as the API server stored them (EqualIgnoreHash), so a manifest that
spells out a default (``imagePullPolicy: IfNotPresent`` on a tagged image) or
leaves one out is the same template, and re-applying the manifest that created
an adopted Deployment restarts nothing. Defaulting is the server's business
(and changes between versions), so we ask it: a server-side dry-run create of
a ReplicaSet with the template, which persists nothing and needs no permission
beyond the one a rollout needs anyway.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.serialization import to_plain
from kubectl_rollout.rollout.spec import InvalidManifest, WorkloadSpec

#: (namespace, the template as written) -> the template as stored; a process asks once per template
_CACHE: dict[tuple[str, str], dict[str, Any]] = {}
_CACHE_SIZE = 64


def defaulted_template(cluster: Cluster, spec: WorkloadSpec) -> dict[str, Any] | None:
    """``spec.template`` with the API server's defaults; InvalidManifest when the server finds the template
    invalid; None when it refuses the dry run for another reason (a ReplicaSet quota already used up, an
    admission webhook, no permission to create ReplicaSets), which the rollout itself then meets and reports."""
    key = (spec.namespace, json.dumps(spec.template, sort_keys=True))
    if key in _CACHE:
        return _CACHE[key]
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"generateName": f"{spec.name}-", "namespace": spec.namespace},
        "spec": {"replicas": 0, "selector": dict(spec.selector), "template": dict(spec.template)},
    }
    try:
        stored = call_with_retry(cluster.apps.create_namespaced_replica_set, spec.namespace, body, dry_run="All")
    except ApiException as err:
        if err.status == 403 or (err.status == 400 and "does not support dry run" in _causes(err)):
            # Not the template's fault: a quota, an admission webhook (one with side effects refuses every dry
            # run), or no permission to create ReplicaSets.
            return None
        if err.status in (400, 422):
            raise InvalidManifest(f'Deployment "{spec.name}" is invalid: {_causes(err)}') from err
        raise
    template: dict[str, Any] = to_plain(stored.spec.template)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = template
    return template


def _causes(err: ApiException) -> str:
    """The server's reasons, without its 'ReplicaSet.apps "web-" is invalid:' prefix (ours is a Deployment)."""
    try:
        message = str(json.loads(err.body or "{}").get("message") or err.reason)
    except ValueError:
        message = str(err.reason)
    _, found, rest = message.partition(" is invalid: ")
    return rest if found else message
