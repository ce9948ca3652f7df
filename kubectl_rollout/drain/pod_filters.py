"""Which pods on a node a drain removes: kubectl's filters, in kubectl's order.

Ported from the behaviour of kubectl's pkg/drain/filters.go. Each pod goes
through the filters in order and the first one that does not allow deletion
decides (a later warning never hides an earlier error):

1. deleted long ago (with --skip-wait-for-delete-timeout) -> skip
2. DaemonSet-managed -> error, or skip with a warning (--ignore-daemonsets);
   an orphan whose DaemonSet is gone -> delete with a warning under --force
3. mirror (static) pod -> skip
4. emptyDir volume -> error, or delete with a warning (--delete-emptydir-data)
5. no controller -> error, or delete with a warning (--force)

Finished pods (Succeeded/Failed) pass filters 2, 4 and 5: removing them
disrupts nothing. The functions here are pure: the engine looks DaemonSets up
beforehand and hands the answers in.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubectl_rollout.kube.pods import controller_of, deleted_long_ago, is_daemonset_pod, is_finished, qualified

# kubectl's wording, kept so that scripts grepping kubectl's output keep working.
DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING = "deleting Pods with local storage"
UNMANAGED_FATAL = "Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


class Outcome(enum.Enum):
    OKAY = "Okay"
    SKIP = "Skip"
    WARNING = "Warning"
    ERROR = "Error"


@dataclass(frozen=True, kw_only=True)
class Verdict:
    delete: bool
    outcome: Outcome
    message: str = ""
    #: every warning the filters raised, in filter order (``message`` is the first)
    warnings: tuple[str, ...] = ()


OKAY = Verdict(delete=True, outcome=Outcome.OKAY)
SKIP = Verdict(delete=False, outcome=Outcome.SKIP)


@dataclass(frozen=True, kw_only=True)
class FilterOptions:
    force: bool = False
    ignore_daemonsets: bool = False
    delete_emptydir_data: bool = False
    #: seconds; 0 disables the filter, as in kubectl
    skip_wait_for_delete_timeout: int = 0


@dataclass(frozen=True)
class DaemonSetLookup:
    """What a GET of a pod's DaemonSet answered: found, or the error's text."""

    found: bool
    not_found: bool = False
    error: str = ""


PodFilter = Callable[[Any], Verdict]


def make_filters(
    options: FilterOptions, daemonsets: Mapping[tuple[str, str], DaemonSetLookup], now: datetime
) -> list[PodFilter]:
    def skip_deleted(pod: Any) -> Verdict:
        return SKIP if deleted_long_ago(pod, options.skip_wait_for_delete_timeout, now) else OKAY

    def daemonset(pod: Any) -> Verdict:
        if not is_daemonset_pod(pod) or is_finished(pod):
            return OKAY
        ref = controller_of(pod)
        assert ref is not None
        lookup = daemonsets.get((pod.metadata.namespace, ref.name), DaemonSetLookup(found=True))
        if not lookup.found:
            if lookup.not_found and options.force:
                return Verdict(delete=True, outcome=Outcome.WARNING, message=lookup.error)
            return Verdict(delete=False, outcome=Outcome.ERROR, message=lookup.error)
        if not options.ignore_daemonsets:
            return Verdict(delete=False, outcome=Outcome.ERROR, message=DAEMONSET_FATAL)
        return Verdict(delete=False, outcome=Outcome.WARNING, message=DAEMONSET_WARNING)

    def mirror(pod: Any) -> Verdict:
        return SKIP if MIRROR_POD_ANNOTATION in (pod.metadata.annotations or {}) else OKAY

    def local_storage(pod: Any) -> Verdict:
        if not any(v.empty_dir is not None for v in pod.spec.volumes or []) or is_finished(pod):
            return OKAY
        if not options.delete_emptydir_data:
            return Verdict(delete=False, outcome=Outcome.ERROR, message=LOCAL_STORAGE_FATAL)
        return Verdict(delete=True, outcome=Outcome.WARNING, message=LOCAL_STORAGE_WARNING)

    def unreplicated(pod: Any) -> Verdict:
        if is_finished(pod) or controller_of(pod) is not None:
            return OKAY
        if options.force:
            return Verdict(delete=True, outcome=Outcome.WARNING, message=UNMANAGED_WARNING)
        return Verdict(delete=False, outcome=Outcome.ERROR, message=UNMANAGED_FATAL)

    return [skip_deleted, daemonset, mirror, local_storage, unreplicated]


def judge(pod: Any, filters: Iterable[PodFilter]) -> Verdict:
    """The first filter that refuses decides; otherwise the pod goes, with every warning raised.

    kubectl keeps only the last filter's verdict, so a later "okay" silently
    drops an earlier warning (an emptyDir pod with a controller is deleted
    without "deleting Pods with local storage"). We keep every warning: losing
    local data deserves the line, and a bare emptyDir pod under ``--force
    --delete-emptydir-data`` still gets kubectl's "declare no controller" one.
    """
    warnings: list[str] = []
    for pod_filter in filters:
        verdict = pod_filter(pod)
        if not verdict.delete:
            return verdict
        if verdict.outcome is Outcome.WARNING:
            warnings.append(verdict.message)
    if not warnings:
        return OKAY
    return Verdict(delete=True, outcome=Outcome.WARNING, message=warnings[0], warnings=tuple(warnings))


def summarize_warnings(judged: Iterable[tuple[Any, Verdict]]) -> str:
    """kubectl's warning line: "MESSAGE: ns/a, ns/b; MESSAGE2: ns/c"."""
    grouped: dict[str, list[str]] = {}
    for pod, verdict in judged:
        if verdict.outcome is Outcome.WARNING:
            for message in verdict.warnings or (verdict.message,):
                grouped.setdefault(message, []).append(qualified(pod))
    return "; ".join(f"{message}: {', '.join(pods)}" for message, pods in grouped.items())


def summarize_errors(judged: Iterable[tuple[Any, Verdict]]) -> list[str]:
    """kubectl's errors: "cannot delete MESSAGE: ns/a, ns/b", one per message."""
    grouped: dict[str, list[str]] = {}
    for pod, verdict in judged:
        if verdict.outcome is Outcome.ERROR:
            grouped.setdefault(verdict.message or "unexpected error", []).append(qualified(pod))
    return [f"cannot delete {message}: {', '.join(pods)}" for message, pods in grouped.items()]
