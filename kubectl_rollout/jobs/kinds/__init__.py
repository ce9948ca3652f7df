"""Every job kind this version runs, each described once (``base.JobKindFacts``).

To add a kind: its spec section (``jobs/spec.py``), its events and view, its
engine package with its body, its screen, and its facts module here, listed in
``KINDS``.
"""

from __future__ import annotations

from kubectl_rollout.jobs.kinds.base import JobKindFacts
from kubectl_rollout.jobs.kinds.campaign import CAMPAIGN
from kubectl_rollout.jobs.kinds.drain import DRAIN
from kubectl_rollout.jobs.kinds.restart import RESTART
from kubectl_rollout.jobs.kinds.rollout import ROLLOUT
from kubectl_rollout.jobs.spec import JobKind, JobSpec

KINDS: dict[str, JobKindFacts] = {facts.kind.value: facts for facts in (CAMPAIGN, DRAIN, RESTART, ROLLOUT)}


def facts_of(kind: str | JobKind) -> JobKindFacts | None:
    """The facts of ``kind`` (a ``JobKind`` or its name, as ``JobStarted.kind`` has it); None for a kind this
    version does not know (a newer agent's job)."""
    return KINDS.get(str(kind))


def facts_for(spec: JobSpec) -> JobKindFacts:
    """The facts of a spec's kind; a spec decodes only with a kind this version knows."""
    facts = KINDS.get(spec.kind.value)
    assert facts is not None, f"job kind {spec.kind.value} has no facts"
    return facts


def target_of(spec: JobSpec) -> str:
    """What the job acts on, for a person: ``node/a, node/b``, ``-l pool=blue``, ``deployment/web``."""
    return facts_for(spec).target(spec)


__all__ = ["KINDS", "JobKindFacts", "facts_for", "facts_of", "target_of"]
