"""The Kubernetes Events a campaign puts on its nodes: one table, job event -> Events."""

from __future__ import annotations

import pytest

from kubectl_rollout.campaign.node_events import NodeEvent, node_events
from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.drain import NodeCordoned

HELD = ev.RuledPod(
    pod=PodRef(namespace="shop", name="db-0", node="n1"),
    rule=ev.PodRule.DO_NOT_DISRUPT,
    source="karpenter.sh/do-not-disrupt=true",
    effect="waits",
)


@pytest.mark.parametrize(
    ("event", "job", "expected"),
    [
        pytest.param(
            ev.WaveStarted(index=1, nodes=("n1", "n2"), zones=("a",)),
            "abc123",
            [
                NodeEvent(
                    "n1", "CampaignWaveStarted", "Wave 2 of campaign abc123: cordoned with 1 other node, to drain"
                ),
                NodeEvent(
                    "n2", "CampaignWaveStarted", "Wave 2 of campaign abc123: cordoned with 1 other node, to drain"
                ),
            ],
            id="a wave: each of its nodes",
        ),
        pytest.param(
            ev.WaveStarted(index=0, nodes=("n1",)),
            "",
            [NodeEvent("n1", "CampaignWaveStarted", "Wave 1 of the campaign: cordoned, to drain")],
            id="a wave of one, in-process (no job id)",
        ),
        pytest.param(
            ev.WaveStarted(index=0, nodes=("n1", "n2", "n3")),
            "j",
            [
                NodeEvent(n, "CampaignWaveStarted", "Wave 1 of campaign j: cordoned with 2 other nodes, to drain")
                for n in ("n1", "n2", "n3")
            ],
            id="a wave of three",
        ),
        pytest.param(
            ev.PodsHeld(node="n1", pods=(HELD,)),
            "j",
            [NodeEvent("n1", "CampaignPodsHeld", "Pods kept by per-pod rules, waited for: shop/db-0 (do-not-disrupt)")],
            id="pods held by a rule",
        ),
        pytest.param(
            ev.NodeSoaked(node="n1", index=0, seconds=120.0),
            "j",
            [NodeEvent("n1", "CampaignSoaked", "Workloads available again and for 120s after")],
            id="soaked",
        ),
        pytest.param(
            ev.HookRan(node="n1", hook="post", command="./reboot", exit_code=0, seconds=1.0),
            "j",
            [NodeEvent("n1", "CampaignHookRan", "post-hook of campaign j succeeded")],
            id="a hook that succeeded",
        ),
        pytest.param(
            ev.HookRan(node="n1", hook="pre", command="./check", exit_code=3, seconds=1.0),
            "j",
            [NodeEvent("n1", "CampaignHookFailed", "pre-hook of campaign j exited 3", warning=True)],
            id="a hook that failed",
        ),
        pytest.param(
            ev.HookRan(node="n1", hook="post", command="sleep 1d", exit_code=-9, seconds=600.0, timed_out=True),
            "j",
            [NodeEvent("n1", "CampaignHookFailed", "post-hook of campaign j timed out", warning=True)],
            id="a hook that timed out",
        ),
        pytest.param(
            ev.NodeDone(node="n1", uncordoned=True, replaced=True),
            "j",
            [NodeEvent("n1", "CampaignDone", "Done by campaign j: drained, replaced")],
            id="done, replaced by its after-hook",
        ),
        pytest.param(
            ev.NodeDone(node="n1", uncordoned=True),
            "j",
            [NodeEvent("n1", "CampaignDone", "Done by campaign j: drained, uncordoned")],
            id="done, uncordoned",
        ),
        pytest.param(
            ev.NodeDone(node="n1", uncordoned=False),
            "j",
            [NodeEvent("n1", "CampaignDone", "Done by campaign j: drained, left as it was")],
            id="done, --no-uncordon",
        ),
        pytest.param(
            ev.NodeSkipped(node="n1", reason="pre-hook exited 1", uncordoned=False),
            "j",
            [NodeEvent("n1", "CampaignSkipped", "Skipped by campaign j: pre-hook exited 1", warning=True)],
            id="skipped",
        ),
        pytest.param(
            ev.NodeKept(node="n1", reason="PDB shop/db", label="rollout-plus.io/kept=j"),
            "j",
            [
                NodeEvent(
                    "n1",
                    "CampaignKept",
                    "Kept cordoned by campaign j: PDB shop/db (label rollout-plus.io/kept=j)",
                    warning=True,
                )
            ],
            id="kept",
        ),
        pytest.param(NodeCordoned(node="n1", changed=True), "j", [], id="the drain's own events are the drain's"),
        pytest.param(ev.WindowClosed(next_opening=None), "j", [], id="an event of no node"),
    ],
)
def test_a_campaign_event_puts_these_events_on_its_nodes(event: Event, job: str, expected: list[NodeEvent]) -> None:
    assert node_events(event, job=job) == expected
