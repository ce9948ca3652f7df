"""Every registered job kind answers every fact the job loop, the agent, the CLI and the TUI ask of it.

A kind added to ``kubectl_rollout.jobs.kinds.KINDS`` without a sample spec
here fails the first test, so the others run against it too.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.kinds import KINDS, facts_for, facts_of
from kubectl_rollout.jobs.kinds.base import JobKindFacts, load
from kubectl_rollout.jobs.spec import (
    ActionKind,
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
