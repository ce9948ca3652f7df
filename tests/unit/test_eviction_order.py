from __future__ import annotations

from podmodels import pod

from kubectl_rollout.eviction.order import eviction_order


def test_ordinary_pods_first_critical_later_daemonsets_last() -> None:
    pods = [
        pod("ds-agent", owner=("DaemonSet", "agent")),
        pod("dns", priority=2_000_000_000, priority_class="system-cluster-critical"),
        pod("batch", priority=-10),
        pod("web", priority=100),
        pod("api", priority=100),
        pod("default"),
        pod("node-critical", priority=2_000_001_000, priority_class="system-node-critical"),
    ]
    assert [p.metadata.name for p in eviction_order(pods)] == [
        "batch",
        "default",
        "api",
        "web",
        "dns",
        "node-critical",
        "ds-agent",
    ]
