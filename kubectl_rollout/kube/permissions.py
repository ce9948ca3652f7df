"""Asking the API server, before changing anything, whether we may do what a command needs.

A drain that cordons a node and then finds it may not evict leaves the cluster
half-changed; SelfSubjectAccessReviews let the command refuse up front, naming
the permission that is missing.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

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

    A rollout's job asks about 20 before its first write. Those in one
    namespace are answered by one SelfSubjectRulesReview (what the user may do
    there, as rules), when the server's answer is complete: RBAC's always is,
    and nothing else grants or denies then. Otherwise (a webhook authorizer, a
    rule list the server would not give, a permission over all namespaces or
    a cluster-scoped one) each is asked with a SelfSubjectAccessReview; those
    go out together and as plain JSON: one after the other through the
    client's models they took twice as long (37 against 17 ms on loopback,
    more over a real network), all of it before anything the user asked for
    happened, and each of the concurrent ones opened a connection of its own
    (a TLS handshake each).
    """
    if not needed:
        return []
    api = client.AuthorizationV1Api(cluster.api_client)
    answers: dict[Permission, bool] = {}
    for namespace in dict.fromkeys(p.namespace for p in needed if p.namespace):
        rules = _rules_in(api, namespace)
        if rules is None:
            continue
        for permission in needed:
            if permission.namespace == namespace:
                answers[permission] = any(rule_allows(rule, permission) for rule in rules)
    asked = [p for p in dict.fromkeys(needed) if p not in answers]
    if asked:
        with ThreadPoolExecutor(max_workers=min(len(asked), CONCURRENT_REVIEWS), thread_name_prefix="review") as pool:
            answers.update(zip(asked, pool.map(lambda p: _allowed(api, p), asked), strict=True))
    return [permission for permission in needed if not answers[permission]]


def _post_json(call: Any, body: dict[str, Any]) -> dict[str, Any]:
    """JSON in and out, not the client's models: building and reading those cost more CPU than the round trip."""
    response = call_with_retry(call, body, _preload_content=False)
    try:
        answer: dict[str, Any] = json.loads(response.data)
    finally:
        response.release_conn()
    return answer


def _allowed(api: client.AuthorizationV1Api, permission: Permission) -> bool:
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
    answer = _post_json(api.create_self_subject_access_review, review)
    return bool((answer.get("status") or {}).get("allowed"))


def _rules_in(api: client.AuthorizationV1Api, namespace: str) -> list[dict[str, Any]] | None:
    """What the user may do in ``namespace``, as resource rules; None unless the server's answer is complete."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": namespace},
    }
    try:
        answer = _post_json(api.create_self_subject_rules_review, review)
    except ApiException:
        return None  # not answered (an old or restricted server): each permission is asked on its own
    status = answer.get("status") or {}
    if status.get("incomplete") or status.get("evaluationError"):
        return None
    return list(status.get("resourceRules") or [])


def rule_allows(rule: dict[str, Any], permission: Permission) -> bool:
    """Whether one resource rule grants ``permission`` (RBAC's RuleAllows: VerbMatches, APIGroupMatches,
    ResourceMatches with ``*/subresource``; a rule limited to resource names grants no unnamed request)."""
    verbs = rule.get("verbs") or []
    groups = rule.get("apiGroups") or []
    resources = rule.get("resources") or []
    if rule.get("resourceNames"):
        return False
    if "*" not in verbs and permission.verb not in verbs:
        return False
    if "*" not in groups and permission.group not in groups:
        return False
    combined = f"{permission.resource}/{permission.subresource}" if permission.subresource else permission.resource
    return any(
        resource in ("*", combined) or (permission.subresource != "" and resource == f"*/{permission.subresource}")
        for resource in resources
    )


def require(cluster: Cluster, needed: list[Permission], *, action: str) -> None:
    missing = missing_permissions(cluster, needed)
    if missing:
        raise PermissionDenied(
            f'context "{cluster.context}" may not {", ".join(str(p) for p in missing)}, which {action} needs; '
            "nothing was changed. Use a context with these permissions (docs/rbac.md has a Role for each command)"
        )
