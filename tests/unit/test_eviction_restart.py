"""The pure parts of the eviction-based restart: targets, order, availability."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from kubectl_rollout.kube.pods import is_available
from kubectl_rollout.restart.engine import parse_target, replacement_order

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        ("deployment/web", "Deployment", "web"),
        ("deploy/web", "Deployment", "web"),
        ("deployments.apps/web", "Deployment", "web"),
        ("sts/db", "StatefulSet", "db"),
        ("StatefulSet/db", "StatefulSet", "db"),
        ("ds/agent", "DaemonSet", "agent"),
        ("daemonsets/agent", "DaemonSet", "agent"),
    ],
)
def test_targets_accept_kubectl_spellings(text: str, kind: str, name: str) -> None:
    target = parse_target(text, "prod")
    assert (target.kind, target.name, target.namespace) == (kind, name, "prod")


@pytest.mark.parametrize("text", ["web", "pod/web", "replicaset/web-abc", "deployment/", "/web", "job/x"])
def test_other_targets_are_refused_naming_what_is_accepted(text: str) -> None:
    with pytest.raises(ValueError, match="use deployment/NAME, statefulset/NAME or daemonset/NAME"):
        parse_target(text, "prod")


def pod(name: str, *, node: str = "", created: int = 0, ready: bool | None = True, ready_for: int = 60) -> Any:
    conditions = (
        []
        if ready is None
        else [
            SimpleNamespace(
                type="Ready",
                status="True" if ready else "False",
                last_transition_time=NOW - timedelta(seconds=ready_for),
            )
        ]
    )
    return SimpleNamespace(
        metadata=SimpleNamespace(
            name=name, creation_timestamp=NOW + timedelta(seconds=created), deletion_timestamp=None
        ),
        spec=SimpleNamespace(node_name=node),
        status=SimpleNamespace(conditions=conditions),
    )


def names(pods: list[Any]) -> list[str]:
    return [p.metadata.name for p in pods]


def test_statefulset_pods_go_from_the_highest_ordinal_like_its_rolling_update() -> None:
    pods = [pod("db-0"), pod("db-10"), pod("db-2"), pod("db-1")]
    assert names(replacement_order("StatefulSet", pods)) == ["db-10", "db-2", "db-1", "db-0"]


def test_deployment_pods_go_oldest_first() -> None:
    pods = [pod("web-c", created=5), pod("web-a", created=9), pod("web-b", created=1), pod("web-d", created=5)]
    assert names(replacement_order("Deployment", pods)) == ["web-b", "web-c", "web-d", "web-a"]


def test_daemonset_pods_go_node_by_node() -> None:
    pods = [pod("a-x", node="node-2"), pod("a-y", node="node-0"), pod("a-z", node="node-1")]
    assert names(replacement_order("DaemonSet", pods)) == ["a-y", "a-z", "a-x"]


@pytest.mark.parametrize(
    ("ready", "ready_for", "min_ready_seconds", "deleting", "expected"),
    [
        (True, 0, 0, False, True),
        (True, 4, 5, False, False),  # Ready, but not for minReadySeconds yet
        (True, 5, 5, False, True),
        (False, 60, 0, False, False),
        (None, 60, 0, False, False),  # no Ready condition at all
        (True, 60, 0, True, False),  # being deleted: on its way out, not a replacement
    ],
)
def test_availability_counts_like_the_controllers(
    ready: bool | None, ready_for: int, min_ready_seconds: int, deleting: bool, expected: bool
) -> None:
    candidate = pod("web-a", ready=ready, ready_for=ready_for)
    if deleting:
        candidate.metadata.deletion_timestamp = NOW
    assert is_available(candidate, min_ready_seconds, NOW) is expected
