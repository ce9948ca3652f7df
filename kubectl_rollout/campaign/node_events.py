"""What a campaign says on its nodes as Kubernetes Events, so that `kubectl describe node` (and a second
operator, or the cloud console) shows which campaign has the node, in which wave, and how it ended.

The drain's own Events (Cordoned, Draining, Drained, DrainFailed) come from the drain engine; these are the
campaign's steps around them. Pure: which Events a job event makes; posting them is the engine's.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events.base import Event


@dataclass(frozen=True)
class NodeEvent:
    """One Kubernetes Event on a node."""

    node: str
    reason: str
    message: str
    warning: bool = False


def node_events(event: Event, *, job: str) -> list[NodeEvent]:
    """The Events that ``event`` of campaign ``job`` (its id, or empty in-process) puts on its nodes."""
    of = f"campaign {job}" if job else "the campaign"
    if isinstance(event, ev.WaveStarted):
        others = len(event.nodes) - 1
        beside = f" with {others} other node{'s' if others != 1 else ''}" if others else ""
        return [
            NodeEvent(node, "CampaignWaveStarted", f"Wave {event.index + 1} of {of}: cordoned{beside}, to drain")
            for node in event.nodes
        ]
    if isinstance(event, ev.PodsHeld):
        names = ", ".join(f"{p.pod.namespace}/{p.pod.name} ({p.rule})" for p in event.pods)
        return [NodeEvent(event.node, "CampaignPodsHeld", f"Pods kept by per-pod rules, waited for: {names}")]
    if isinstance(event, ev.NodeSoaked):
        return [NodeEvent(event.node, "CampaignSoaked", f"Workloads available again and for {event.seconds:g}s after")]
    if isinstance(event, ev.HookRan):
        if event.exit_code == 0:
            return [NodeEvent(event.node, "CampaignHookRan", f"{event.hook}-hook of {of} succeeded")]
        why = "timed out" if event.timed_out else f"exited {event.exit_code}"
        return [NodeEvent(event.node, "CampaignHookFailed", f"{event.hook}-hook of {of} {why}", warning=True)]
    if isinstance(event, ev.NodeDone):
        how = "replaced" if event.replaced else "uncordoned" if event.uncordoned else "left as it was"
        return [NodeEvent(event.node, "CampaignDone", f"Done by {of}: drained, {how}")]
    if isinstance(event, ev.NodeSkipped):
        return [NodeEvent(event.node, "CampaignSkipped", f"Skipped by {of}: {event.reason}", warning=True)]
    if isinstance(event, ev.NodeKept):
        label = f" (label {event.label})" if event.label else ""
        return [NodeEvent(event.node, "CampaignKept", f"Kept cordoned by {of}: {event.reason}{label}", warning=True)]
    return []
