"""The facts of a campaign: a pool of nodes drained in waves (budget, zones, rate, soak, hooks, windows)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar

from kubectl_rollout.jobs.events import campaign as campaign_events
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.kinds.base import JobKindFacts
from kubectl_rollout.jobs.kinds.drain import node_claim
from kubectl_rollout.jobs.spec import JobKind

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from kubectl_rollout.jobs.events.base import Event
    from kubectl_rollout.jobs.spec import CampaignJob, JobSpec

#: the events that end a node's part in a campaign: a resumed campaign never takes such a node again
FINISHED_NODE_EVENTS = (campaign_events.NodeDone, campaign_events.NodeSkipped, campaign_events.NodeKept)


def finished_node(event: Event) -> str | None:
    """The campaign node ``event`` finishes, if it finishes one."""
    return event.node if isinstance(event, FINISHED_NODE_EVENTS) else None


def surge_request_refusal(spec: JobSpec, *, finished: Collection[str], nodes: Sequence[str]) -> str | None:
    """Why a surge request for ``nodes`` cannot be taken by this job (``finished``: its nodes finished in this
    run), or None. A campaign's own nodes only, none of them finished: a finished node is never drained again."""
    if spec.campaign is None:
        return f"a {spec.kind.value} job is no campaign; a drain surges with `drain NODE --surge`"
    if not nodes:
        return "name the nodes to surge"
    campaign = spec.campaign
    ours = set(campaign.nodes)
    strangers = [n for n in nodes if n not in ours]
    if strangers:
        return f"{_nodes(strangers)} {'is' if len(strangers) == 1 else 'are'} not in this campaign"
    over = [n for n in nodes if n in finished or n in campaign.done]
    if over:
        return (
            f"{_nodes(over)} {'is' if len(over) == 1 else 'are'} finished in this campaign (done, skipped or kept) "
            "and never drained again"
        )
    if campaign.plan_only or campaign.drain.dry_run is not DryRun.NONE:
        return "a plan or a dry run drains nothing"
    return None


def _nodes(names: Sequence[str]) -> str:
    return ", ".join(f"node/{n}" for n in names)


def _section(spec: JobSpec) -> CampaignJob:
    assert spec.campaign is not None, f"a {spec.kind.value} job is not a campaign"
    return spec.campaign


class CampaignFacts(JobKindFacts):
    kind: ClassVar[JobKind] = JobKind.CAMPAIGN
    body = "kubectl_rollout.campaign.job:run_campaign_job"
    printer = "kubectl_rollout.cli.campaign_output:campaign_printer"
    live_footer = False
    screen = "kubectl_rollout.tui.screens.campaign:CampaignScreen"
    view = "kubectl_rollout.jobs.views.campaign:CampaignView"
    fold = "kubectl_rollout.jobs.views.campaign:fold"
    event_modules = ("campaign",)
    pausable = True
    pause_means = "no new wave and no new eviction starts; those in flight go on"
    resume_reads_events = True

    def target(self, spec: JobSpec) -> str:
        campaign = _section(spec)
        if campaign.selector:
            return f"-l {campaign.selector}" + (f" ({len(campaign.nodes)} nodes)" if campaign.nodes else "")
        return ", ".join(f"node/{n}" for n in campaign.nodes)

    def timeout(self, spec: JobSpec) -> float | None:
        # --timeout bounds each node; the campaign itself waits for its windows for as long as it takes.
        return None

    def namespace(self, spec: JobSpec) -> str | None:
        return None  # nodes have none

    def claims(self, spec: JobSpec) -> frozenset[str]:
        campaign = _section(spec)
        if campaign.plan_only or campaign.drain.dry_run is not DryRun.NONE:
            return frozenset()
        # Every node of the campaign, done ones included: a drain of a node the campaign let go of is for
        # the campaign's end. A campaign by selector alone (a spec not made by the CLI) claims its nodes
        # as it cordons them, as a drain does.
        return frozenset(node_claim(spec.connection.context, node) for node in campaign.nodes)

    def to_resume(self, spec: JobSpec, recorded: set[str], events: Sequence[Event] = ()) -> JobSpec:
        # The nodes it finished (done, skipped, kept) are never taken again; a node cut off half-way is
        # cordoned still and is drained again (its evicted pods are gone: nothing is evicted twice).
        # A node whose wave had started keeps its pre-hook's answer: it is not asked again.
        campaign = _section(spec)
        finished = [e.node for e in events if isinstance(e, FINISHED_NODE_EVENTS)]
        done = tuple(dict.fromkeys((*campaign.done, *finished)))
        admitted = [n for e in events if isinstance(e, campaign_events.WaveStarted) for n in e.nodes]
        started = tuple(n for n in dict.fromkeys((*campaign.started, *admitted)) if n not in done)
        # A node a person asked to surge (``jobs surge``) and not finished drains with --surge from its start.
        asked = [n for e in events if isinstance(e, campaign_events.SurgeRequested) for n in e.nodes]
        surge = tuple(n for n in dict.fromkeys((*campaign.surge_nodes, *asked)) if n not in done)
        if (done, started, surge) == (campaign.done, campaign.started, campaign.surge_nodes):
            return spec
        changed = dataclasses.replace(campaign, done=done, started=started, surge_nodes=surge)
        return dataclasses.replace(spec, campaign=changed)


CAMPAIGN = CampaignFacts()
