"""What the API server's authorizer lets a user do (SubjectAccessReview, asked as the admin), for permissions worded
the way the plugin's refusals word them: ``VERB RESOURCE[/SUBRESOURCE][.GROUP][ in namespace NAMESPACE]``.

A test of a refusal compares the permissions the refusal names with the cluster's own answers, not with a list
that could be as wrong as the code under test.
"""

from __future__ import annotations

import re

from kubernetes import client

from kubectl_rollout.kube.cluster_access import Cluster

_PERMISSION = re.compile(
    r"^(?P<verb>[a-z]+) (?P<resource>[a-z]+)(?:/(?P<sub>[a-z]+))?(?:\.(?P<group>[a-z0-9.]+))?"
    r"(?: in namespace (?P<namespace>[a-z0-9-]+))?$"
)


def named_permissions(refusal: str) -> list[str]:
    """The permissions a one-line refusal (``... may not A, B, which ... needs; ...``) names, as worded."""
    found = re.search(r" may not (?P<list>.+?), which ", refusal)
    assert found is not None, f"no list of permissions in {refusal!r}"
    return found.group("list").split(", ")


def allowed(cluster: Cluster, permission: str, *, user: str, groups: tuple[str, ...] = ()) -> bool:
    """Whether the authorizer lets ``user`` (in ``groups``, and authenticated) do ``permission``."""
    parsed = _PERMISSION.match(permission)
    assert parsed is not None, f"not a permission as refusals word them: {permission!r}"
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user,
            groups=[*groups, "system:authenticated"],
            resource_attributes=client.V1ResourceAttributes(
                verb=parsed["verb"],
                resource=parsed["resource"],
                subresource=parsed["sub"],
                group=parsed["group"] or "",
                namespace=parsed["namespace"],
            ),
        )
    )
    answer = client.AuthorizationV1Api(cluster.api_client).create_subject_access_review(review)
    return bool(answer.status.allowed)
