"""Whether one RBAC rule, as a SelfSubjectRulesReview returns it, grants a permission (kube/permissions.py).

Cases from RBAC's own RuleAllows (pkg/apis/rbac/v1/evaluation_helpers.go); the cluster side (a Role with
exactly a command's rules works, one verb less fails in one line) is tests/integration/test_rbac.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_rollout.kube.permissions import Permission, rule_allows

PATCH_CM = Permission("patch", "configmaps", namespace="shop")
CREATE_RS = Permission("create", "replicasets", group="apps", namespace="shop")
EVICT = Permission("create", "pods", subresource="eviction", namespace="shop")


def rule(verbs: str, groups: str, resources: str, names: str = "") -> dict[str, Any]:
    built: dict[str, Any] = {"verbs": verbs.split(), "apiGroups": groups.split(","), "resources": resources.split()}
    if names:
        built["resourceNames"] = names.split()
    return built


@pytest.mark.parametrize(
    ("the_rule", "permission", "allowed"),
    [
        (rule("*", "*", "*"), PATCH_CM, True),
        (rule("get list patch", "", "configmaps"), PATCH_CM, True),
        (rule("get list", "", "configmaps"), PATCH_CM, False),
        # the core group is "", and a rule of another group does not grant it
        (rule("patch", "apps", "configmaps"), PATCH_CM, False),
        (rule("create", "apps", "replicasets"), CREATE_RS, True),
        (rule("create", "", "replicasets"), CREATE_RS, False),
        (rule("create", "*", "replicasets"), CREATE_RS, True),
        # a rule limited to named objects grants no request without a name
        (rule("patch", "", "configmaps", names="rollout-plus.web"), PATCH_CM, False),
        # subresources: only the combined name, or */subresource, or *
        (rule("create", "", "pods"), EVICT, False),
        (rule("create", "", "pods/eviction"), EVICT, True),
        (rule("create", "", "*/eviction"), EVICT, True),
        (rule("create", "", "*/status"), EVICT, False),
        (rule("create", "", "*/eviction"), Permission("create", "pods", namespace="shop"), False),
        (rule("create", "", "pods/*"), EVICT, False),
    ],
)
def test_a_rule_grants_what_rbac_would(the_rule: dict[str, Any], permission: Permission, allowed: bool) -> None:
    assert rule_allows(the_rule, permission) is allowed
