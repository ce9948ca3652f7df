"""Every registered job kind answers every fact the job loop, the agent, the CLI and the TUI ask of it.

A kind added to ``kubectl_rollout.jobs.kinds.KINDS`` without a sample spec
here fails the first test, so the others run against it too.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from kubectl_rollout.jobs.events.campaign import NodeDone, NodeKept, NodeSkipped, WaveStarted
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.kinds import KINDS, facts_for, facts_of
from kubectl_rollout.jobs.kinds.base import JobKindFacts, load
from kubectl_rollout.jobs.spec import (
    ActionKind,
    CampaignJob,
    Connection,
    DrainJob,
    DrainOptions,
    JobKind,
    JobSpec,
    RestartJob,
    RolloutAction,
)
from kubectl_rollout.jobs.views.job import empty_body

CONNECTION = Connection(kubeconfig=("/k",), context="prod", namespace="shop")

#: one spec of each kind that changes the cluster, and one that does not (a plan, a dry run) where there is one
SAMPLES: dict[JobKind, tuple[JobSpec, JobSpec | None]] = {
    JobKind.CAMPAIGN: (
        JobSpec(kind=JobKind.CAMPAIGN, connection=CONNECTION, campaign=CampaignJob(nodes=("a", "b", "c"))),
        JobSpec(kind=JobKind.CAMPAIGN, connection=CONNECTION, campaign=CampaignJob(nodes=("a",), plan_only=True)),
    ),
    JobKind.DRAIN: (
        JobSpec(kind=JobKind.DRAIN, connection=CONNECTION, drain=DrainJob(nodes=("a", "b"))),
        JobSpec(kind=JobKind.DRAIN, connection=CONNECTION, drain=DrainJob(nodes=("a",), plan_only=True)),
    ),
    JobKind.RESTART: (
        JobSpec(kind=JobKind.RESTART, connection=CONNECTION, restart=RestartJob(workload="deployment/web")),
        JobSpec(
            kind=JobKind.RESTART,
            connection=CONNECTION,
            restart=RestartJob(workload="deployment/web", dry_run=DryRun.SERVER),
        ),
    ),
    JobKind.ROLLOUT: (
        JobSpec(
            kind=JobKind.ROLLOUT, connection=CONNECTION, rollout=RolloutAction(kind=ActionKind.RESTART, name="web")
        ),
        None,
    ),
}


def test_every_kind_has_facts_and_a_sample() -> None:
    assert set(KINDS) == {kind.value for kind in JobKind}
    assert set(SAMPLES) == set(JobKind)
    for kind in JobKind:
        facts = facts_of(kind)
        assert facts is not None
        assert facts.kind is kind
        assert facts_of(kind.value) is facts
    assert facts_of("a-kind-of-a-newer-version") is None


@pytest.mark.parametrize("kind", list(JobKind), ids=str)
def test_a_kind_answers_every_fact(kind: JobKind) -> None:
    spec, harmless = SAMPLES[kind]
    facts = facts_for(spec)
    assert isinstance(facts, JobKindFacts)
    assert facts.target(spec)
    assert facts.timeout(spec) is None  # no --timeout in the sample: it waits as long as it takes
    namespace = facts.namespace(spec)
    assert namespace is None or namespace == "shop"
    claims = facts.claims(spec)
    assert claims
    assert all(claim.startswith("prod ") for claim in claims)
    if harmless is not None:
        assert facts.claims(harmless) == frozenset()  # changes nothing: claims nothing
    resumed = facts.to_resume(spec, {"JobStarted"})
    assert resumed.kind is kind
    assert facts.to_resume(resumed, {"JobStarted"}) == resumed  # resuming twice is resuming once
    assert isinstance(facts.pausable, bool)
    assert facts.pause_means
    assert isinstance(facts.live_footer, bool)


@pytest.mark.parametrize("kind", list(JobKind), ids=str)
def test_the_places_a_kind_names_exist(kind: JobKind) -> None:
    facts = facts_of(kind)
    assert facts is not None
    body = load(facts.body)
    assert list(inspect.signature(body).parameters) == ["spec", "cluster", "context"]
    printer = load(facts.printer)
    assert "live" in inspect.signature(printer).parameters
    assert inspect.isclass(load(facts.screen))
    assert type(empty_body(kind.value)) is load(facts.view)
    assert callable(load(facts.fold))
    for module in facts.event_modules:
        importlib.import_module(f"kubectl_rollout.jobs.events.{module}")


def test_a_timeout_is_the_kinds_own() -> None:
    drain = JobSpec(
        kind=JobKind.DRAIN, connection=CONNECTION, drain=DrainJob(nodes=("a",), options=DrainOptions(timeout=30))
    )
    restart = JobSpec(kind=JobKind.RESTART, connection=CONNECTION, restart=RestartJob(workload="sts/db", timeout=5))
    assert facts_for(drain).timeout(drain) == 30
    assert facts_for(restart).timeout(restart) == 5


def test_a_campaign_claims_every_node_and_its_resume_never_takes_a_finished_one_again() -> None:
    spec = JobSpec(kind=JobKind.CAMPAIGN, connection=CONNECTION, campaign=CampaignJob(nodes=("a", "b", "c", "d")))
    facts = facts_for(spec)
    assert facts.claims(spec) == {f"prod node/{n}" for n in "abcd"}
    assert facts.resume_reads_events
    recorded = [
        WaveStarted(index=1, nodes=("a", "b")),
        NodeDone(node="a", uncordoned=True),
        NodeSkipped(node="b", reason="pre-hook exited 1", uncordoned=False),
        WaveStarted(index=2, nodes=("c",)),
        NodeKept(node="c", reason="blocked"),
    ]
    resumed = facts.to_resume(spec, {e.TYPE for e in recorded}, recorded)
    assert resumed.campaign is not None
    assert resumed.campaign.done == ("a", "b", "c")
    assert resumed.campaign.started == ()  # every node whose wave started is finished
    assert facts.claims(resumed) == facts.claims(spec)  # the finished ones stay claimed until the campaign ends
    cut = facts.to_resume(resumed, {WaveStarted.TYPE}, [WaveStarted(index=3, nodes=("d",))])
    assert cut.campaign is not None
    assert cut.campaign.started == ("d",)  # cut half-way: drained again, its pre-hook not asked again
    again = facts.to_resume(cut, {NodeDone.TYPE}, [NodeDone(node="d", uncordoned=True)])
    assert again.campaign is not None
    assert again.campaign.done == ("a", "b", "c", "d")
    assert again.campaign.started == ()
