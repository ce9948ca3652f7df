"""Asking the API server, before changing anything, whether we may do what a command needs.

A drain that cordons a node and then finds it may not evict leaves the cluster
half-changed; SelfSubjectAccessReviews let the command refuse up front, naming
the permission that is missing.
"""

from __future__ import annotations

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


def missing_permissions(cluster: Cluster, needed: list[Permission]) -> list[Permission]:
    api = client.AuthorizationV1Api(cluster.api_client)
    missing = []
    for permission in needed:
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    verb=permission.verb,
                    resource=permission.resource,
                    group=permission.group,
                    subresource=permission.subresource or None,
                    namespace=permission.namespace or None,
                )
            )
        )
        answer = call_with_retry(api.create_self_subject_access_review, review)
        if answer.status is None or not answer.status.allowed:
            missing.append(permission)
    return missing


def require(cluster: Cluster, needed: list[Permission], *, action: str) -> None:
    missing = missing_permissions(cluster, needed)
    if missing:
        raise PermissionDenied(
            f'context "{cluster.context}" may not {", ".join(str(p) for p in missing)}, which {action} needs; '
            "nothing was changed. Use a context with these permissions (docs/rbac.md has a Role for each command)"
        )
