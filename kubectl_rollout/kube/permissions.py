"""Asking the API server, before changing anything, whether we may do what a command needs.

A drain that cordons a node and then finds it may not evict leaves the cluster
half-changed; SelfSubjectAccessReviews let the command refuse up front, naming
the permission that is missing.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kubernetes import client

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError


@dataclass(frozen=True)
class Permission:
    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    #: "" means all namespaces (or a cluster-scoped resource)
    namespace: str = ""

    def __str__(self) -> str:
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        if self.group:
            resource = f"{resource}.{self.group}"
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return f"{self.verb} {resource}{where}"


class PermissionDenied(UserFacingError):
    pass


#: reviews asked at once: a rollout's job asks ~20 before its first write, one round trip each. Fewer than
#: the client's smallest connection pool (5 on one CPU), so no connection is opened only to be thrown away.
CONCURRENT_REVIEWS = 4


def missing_permissions(cluster: Cluster, needed: list[Permission]) -> list[Permission]:
    """The permissions of ``needed`` the server does not grant, in ``needed``'s order.

    A rollout's job asks about 20 before its first write, so they go out
    together and as plain JSON: one after the other through the client's
    models they took twice as long (37 against 17 ms on loopback, more over a
    real network), all of it before anything the user asked for happened.
    """
    if not needed:
        return []
    api = client.AuthorizationV1Api(cluster.api_client)

    def allowed(permission: Permission) -> bool:
        attributes = {
            "verb": permission.verb,
            "resource": permission.resource,
            "group": permission.group,
            "subresource": permission.subresource or None,
            "namespace": permission.namespace or None,
        }
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {key: value for key, value in attributes.items() if value is not None}},
        }
        # JSON in and out, not the client's models: building and reading those cost more CPU than the round trip.
        response = call_with_retry(api.create_self_subject_access_review, review, _preload_content=False)
        try:
            answer = json.loads(response.data)
        finally:
            response.release_conn()
        return bool((answer.get("status") or {}).get("allowed"))

    with ThreadPoolExecutor(max_workers=min(len(needed), CONCURRENT_REVIEWS), thread_name_prefix="review") as pool:
        answers = list(pool.map(allowed, needed))
    return [permission for permission, ok in zip(needed, answers, strict=True) if not ok]


def require(cluster: Cluster, needed: list[Permission], *, action: str) -> None:
    missing = missing_permissions(cluster, needed)
    if missing:
        raise PermissionDenied(
            f'context "{cluster.context}" may not {", ".join(str(p) for p in missing)}, which {action} needs; '
            "nothing was changed. Use a context with these permissions (docs/rbac.md has a Role for each command)"
        )
