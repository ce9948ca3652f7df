"""What every job kind must say about itself, in one object that every part asks.

A job kind (a drain, a rollout, a restart by eviction, and the kinds to come)
is described once, by a ``JobKindFacts``: what its job acts on, how long it
may take, which objects it claims while it runs, whether it can be paused,
what it runs again after a crash, and where its body, its printer and its
screen live. The job loop, the agent, the CLI's printers and the TUI read
these facts; none of them keeps a list of kinds of its own.

The body, the view, the printer and the screen are named by where they live
(``"package.module:name"``) and imported by whoever needs them: this layer is
plain data, imports no engine and no front end, and is imported by the views
(``views.job`` folds a job of any kind), so it imports no view either.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kubectl_rollout.jobs.events.base import Event
    from kubectl_rollout.jobs.spec import JobKind, JobSpec


def load(location: str) -> Any:
    """The object at ``"package.module:name"``, importing its module now."""
    module, _, name = location.partition(":")
    return getattr(importlib.import_module(module), name)


def claim(context: str | None, what: str) -> str:
    """One object of one cluster, as the agent's claims name it: ``CONTEXT node/NAME``, ``CONTEXT ns/kind/NAME``."""
    return f"{context or ''} {what}"


class JobKindFacts(ABC):
    """A job kind's facts. Subclasses set the class attributes and answer the methods for a spec of their kind."""

    #: the kind, as ``JobSpec.kind`` and ``JobStarted.kind`` name it
    kind: ClassVar[JobKind]
    #: its body: ``run(spec, cluster, context) -> JobResult``, beside its engine
    body: ClassVar[str]
    #: its text printer for ``jobs attach`` and ``jobs logs``: ``printer(out, err, *, live) -> TextPrinter``
    printer: ClassVar[str]
    #: whether its command, in a terminal, keeps a live footer under its log (the printer's ``live``)
    live_footer: ClassVar[bool]
    #: the TUI screen that shows one job of the kind
    screen: ClassVar[str]
    #: the event modules (``kubectl_rollout.jobs.events.X``) whose events belong to this kind's jobs
    event_modules: ClassVar[tuple[str, ...]]
    #: the view its events fold into (``kubectl_rollout.jobs.views``): a class made empty with no arguments
    view: ClassVar[str]
    #: the view's reducer: ``fold(view, envelope) -> view``
    fold: ClassVar[str]
    #: whether ``jobs pause`` may pause a running job of the kind
    pausable: ClassVar[bool]
    #: what pausing a job of the kind does, for a person
    pause_means: ClassVar[str]
    #: whether ``to_resume`` reads the job's recorded events themselves (a campaign: which nodes it finished),
    #: not only their types; the agent decodes them for it then
    resume_reads_events: ClassVar[bool] = False

    @abstractmethod
    def target(self, spec: JobSpec) -> str:
        """What the job acts on, for a person: ``node/a, node/b``, ``-l pool=blue``, ``deployment/web``."""

    @abstractmethod
    def timeout(self, spec: JobSpec) -> float | None:
        """The job's own --timeout in seconds; None: it waits for as long as it takes (and so does its outage)."""

    @abstractmethod
    def namespace(self, spec: JobSpec) -> str | None:
        """The namespace of what the job acts on, as far as the spec says; None: cluster-scoped, or the
        connection's namespace (``-n``, then the context's) decides when the job connects."""

    @abstractmethod
    def claims(self, spec: JobSpec) -> frozenset[str]:
        """The objects the job drives while it runs (``claim``), so that a second job on them is refused."""

    @abstractmethod
    def to_resume(self, spec: JobSpec, recorded: set[str], events: Sequence[Event] = ()) -> JobSpec:
        """What an interrupted job runs when it is resumed, given the types of the events it had emitted (and,
        when ``resume_reads_events``, those events)."""
