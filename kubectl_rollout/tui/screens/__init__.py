"""The TUI's screens, by name: the top-level ones (one key each) and the screen of each job kind.

A top-level screen is registered here by where it lives (``"module:Class"``) and imported
when first shown. To add a top-level screen, add a ``TopScreen``; its key
switches to it and the command palette lists it. The screen of a job kind is
that kind's fact (``JobKindFacts.screen``). The modal dialogs the screens open
(confirm, help, a drain plan, ...) live in ``dialogs/``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.jobs.kinds import facts_of
from kubectl_rollout.jobs.kinds.base import load
from kubectl_rollout.jobs.kinds.drain import DRAIN

_SCREENS = "kubectl_rollout.tui.screens"


@dataclass(frozen=True)
class TopScreen:
    #: the app's mode for it (each top-level screen keeps its own stack of job screens)
    mode: str
    #: the key that switches to it
    key: str
    title: str
    #: where its class lives, "package.module:Class"
    location: str

    def load(self) -> Any:
        module, _, name = self.location.partition(":")
        return getattr(importlib.import_module(module), name)


TOP_SCREENS: tuple[TopScreen, ...] = (
    TopScreen("jobs", "1", "Jobs", f"{_SCREENS}.jobs:JobsScreen"),
    TopScreen("nodes", "2", "Nodes", f"{_SCREENS}.nodes:NodesScreen"),
    TopScreen("workloads", "3", "Workloads", f"{_SCREENS}.workloads:WorkloadsScreen"),
)


def job_screen_class(kind: str) -> Any:
    """The screen class for a job of ``kind`` (its facts' ``screen``); a kind this version does not know gets
    the drain's pod table."""
    facts = facts_of(kind) or DRAIN
    return load(facts.screen)
