"""A campaign's settings read from its spec, all checked before anything is written.

The spec carries them as text (``--budget 20%``, ``--window 'Mon-Fri 22:00-04:00 Europe/Berlin'``) so that
it stays plain JSON; the CLI checks them as it parses its flags, and the job's body checks them again as it
starts (a spec may come from the agent's socket), before the first cordon.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_rollout.campaign.budget import Budget, parse_budget
from kubectl_rollout.campaign.rate import Rate, parse_rate
from kubectl_rollout.campaign.windows import Schedule, schedule_of
from kubectl_rollout.jobs.spec import CampaignJob
from kubectl_rollout.kube.errors import UsageError
from kubectl_rollout.kube.label_selectors import check_label


@dataclass(frozen=True, kw_only=True)
class NodeLabel:
    key: str
    #: None: remove the label
    value: str | None

    def __str__(self) -> str:
        return f"{self.key}-" if self.value is None else f"{self.key}={self.value}"


@dataclass(frozen=True, kw_only=True)
class CampaignSettings:
    budget: Budget
    zone_budget: Budget | None
    rate: Rate | None
    schedule: Schedule | None
    pre_labels: tuple[NodeLabel, ...]
    post_labels: tuple[NodeLabel, ...]


def parse_label(text: str, *, flag: str) -> NodeLabel:
    """``key=value`` sets a label, ``key-`` removes it (``kubectl label``'s forms)."""
    key, equals, value = text.partition("=")
    label = NodeLabel(key=key, value=value) if equals else NodeLabel(key=text[:-1], value=None)
    if not equals and not text.endswith("-"):
        raise ValueError(f"{flag} {text!r} is neither key=value nor key- (to remove it); e.g. {flag} patched=true")
    try:
        check_label(label.key, label.value)
    except ValueError as err:
        raise ValueError(f"{flag} {text!r}: {err}") from err
    return label


def settings_of(job: CampaignJob) -> CampaignSettings:
    """The campaign's settings, or a ``UsageError`` (one line, exit 2) naming the flag at fault."""
    try:
        return CampaignSettings(
            budget=parse_budget(job.budget),
            zone_budget=parse_budget(job.zone_budget, flag="--zone-budget") if job.zone_budget else None,
            rate=parse_rate(job.rate) if job.rate else None,
            schedule=schedule_of(job.windows),
            pre_labels=tuple(parse_label(t, flag="--pre-label") for t in job.pre_labels),
            post_labels=tuple(parse_label(t, flag="--post-label") for t in job.post_labels),
        )
    except ValueError as err:
        raise UsageError(str(err)) from err
