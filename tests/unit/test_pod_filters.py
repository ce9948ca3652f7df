"""kubectl's drain filters, with cases from kubectl's own tests (pkg/cmd/drain/drain_test.go, pkg/drain)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from podmodels import pod

from kubectl_rollout.drain.pod_filters import (
    DAEMONSET_FATAL,
    DAEMONSET_WARNING,
    LOCAL_STORAGE_FATAL,
    LOCAL_STORAGE_WARNING,
    UNMANAGED_FATAL,
    UNMANAGED_WARNING,
    DaemonSetLookup,
    FilterOptions,
    Outcome,
    judge,
    make_filters,
    summarize_errors,
    summarize_warnings,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
DS_GONE = DaemonSetLookup(found=False, not_found=True, error='daemonsets.apps "ds" not found')


def verdict(p: Any, daemonsets: dict[tuple[str, str], DaemonSetLookup] | None = None, **options: Any) -> Any:
    return judge(p, make_filters(FilterOptions(**options), daemonsets or {}, NOW))


CASES = [
    # (description, pod, options, daemonset lookups, delete, outcome, message)
    ("RS-managed pod", pod(), {}, None, True, Outcome.OKAY, ""),
    ("Job-managed pod", pod(owner=("Job", "j"), owner_api="batch/v1"), {}, None, True, Outcome.OKAY, ""),
    ("DS-managed pod", pod(owner=("DaemonSet", "ds")), {}, None, False, Outcome.ERROR, DAEMONSET_FATAL),
    (
        "DS-managed pod with --ignore-daemonsets",
        pod(owner=("DaemonSet", "ds")),
        {"ignore_daemonsets": True},
        None,
        False,
        Outcome.WARNING,
        DAEMONSET_WARNING,
    ),
    (
        "DS-managed pod with emptyDir with --ignore-daemonsets",
        pod(owner=("DaemonSet", "ds"), empty_dir=True),
        {"ignore_daemonsets": True},
        None,
        False,
        Outcome.WARNING,
        DAEMONSET_WARNING,
    ),
    ("finished DS pod", pod(owner=("DaemonSet", "ds"), phase="Succeeded"), {}, None, True, Outcome.OKAY, ""),
    (
        "orphaned DS pod",
        pod(owner=("DaemonSet", "ds")),
        {},
        {("ns", "ds"): DS_GONE},
        False,
        Outcome.ERROR,
        'daemonsets.apps "ds" not found',
    ),
    (
        "orphaned DS pod with --force",
        pod(owner=("DaemonSet", "ds")),
        {"force": True},
        {("ns", "ds"): DS_GONE},
        True,
        Outcome.WARNING,
        'daemonsets.apps "ds" not found',
    ),
    (
        "DaemonSet of another API group is not a DaemonSet",
        pod(owner=("DaemonSet", "ds"), owner_api="ext/v1"),
        {},
        None,
        True,
        Outcome.OKAY,
        "",
    ),
    ("mirror pod", pod(owner=None, mirror=True), {}, None, False, Outcome.SKIP, ""),
    ("naked pod", pod(owner=None), {}, None, False, Outcome.ERROR, UNMANAGED_FATAL),
    ("naked pod with --force", pod(owner=None), {"force": True}, None, True, Outcome.WARNING, UNMANAGED_WARNING),
    ("finished naked pod", pod(owner=None, phase="Failed"), {}, None, True, Outcome.OKAY, ""),
    ("pod with emptyDir", pod(empty_dir=True), {}, None, False, Outcome.ERROR, LOCAL_STORAGE_FATAL),
    (
        "pod with emptyDir and --delete-emptydir-data",
        pod(empty_dir=True),
        {"delete_emptydir_data": True},
        None,
        True,
        Outcome.WARNING,
        LOCAL_STORAGE_WARNING,
    ),
    ("terminated pod with emptyDir", pod(empty_dir=True, phase="Succeeded"), {}, None, True, Outcome.OKAY, ""),
    # Filter order: local storage is judged before "no controller".
    ("naked pod with emptyDir", pod(owner=None, empty_dir=True), {}, None, False, Outcome.ERROR, LOCAL_STORAGE_FATAL),
    (
        "naked pod with emptyDir, both overrides",
        pod(owner=None, empty_dir=True),
        {"force": True, "delete_emptydir_data": True},
        None,
        True,
        Outcome.WARNING,
        LOCAL_STORAGE_WARNING,
    ),
    (
        "deleted long ago, skip timeout 30s",
        pod(deleted_at=NOW - timedelta(seconds=31)),
        {"skip_wait_for_delete_timeout": 30},
        None,
        False,
        Outcome.SKIP,
        "",
    ),
    (
        "deleted recently, skip timeout 30s",
        pod(deleted_at=NOW - timedelta(seconds=10)),
        {"skip_wait_for_delete_timeout": 30},
        None,
        True,
        Outcome.OKAY,
        "",
    ),
    ("deleted long ago, no skip timeout", pod(deleted_at=NOW - timedelta(hours=1)), {}, None, True, Outcome.OKAY, ""),
]


@pytest.mark.parametrize(
    ("pod_", "options", "daemonsets", "delete", "outcome", "message"), [pytest.param(*c[1:], id=c[0]) for c in CASES]
)
def test_filters(
    pod_: Any, options: dict[str, Any], daemonsets: Any, delete: bool, outcome: Outcome, message: str
) -> None:
    result = verdict(pod_, daemonsets, **options)
    assert (result.delete, result.outcome, result.message) == (delete, outcome, message)


def test_summaries_use_kubectls_wording() -> None:
    judged = [
        (pod("a", owner=None), verdict(pod(owner=None))),
        (pod("b", owner=None), verdict(pod(owner=None))),
        (pod("c", empty_dir=True), verdict(pod(empty_dir=True))),
        (pod("d", owner=("DaemonSet", "ds")), verdict(pod(owner=("DaemonSet", "ds")), ignore_daemonsets=True)),
    ]
    assert summarize_errors(judged) == [
        f"cannot delete {UNMANAGED_FATAL}: ns/a, ns/b",
        f"cannot delete {LOCAL_STORAGE_FATAL}: ns/c",
    ]
    assert summarize_warnings(judged) == f"{DAEMONSET_WARNING}: ns/d"


def test_a_bare_emptydir_pod_under_both_overrides_gets_both_warnings() -> None:
    # kubectl keeps the last filter's warning ("declare no controller"); we keep it and the local-storage one.
    bare = pod("e", owner=None, empty_dir=True)
    judged = [
        (bare, verdict(bare, force=True, delete_emptydir_data=True)),
        (pod("f", owner=None), verdict(pod(owner=None), force=True)),
    ]
    assert judged[0][1].warnings == (LOCAL_STORAGE_WARNING, UNMANAGED_WARNING)
    assert summarize_warnings(judged) == f"{LOCAL_STORAGE_WARNING}: ns/e; {UNMANAGED_WARNING}: ns/e, ns/f"


def test_a_daemonset_lookup_failure_shows_the_whole_error() -> None:
    # filters.go: err.Error() of the GET, not a summary of it.
    denied = DaemonSetLookup(
        found=False,
        error='daemonsets.apps "ds" is forbidden: User "drainer" cannot get resource "daemonsets" in API group "apps"'
        ' in the namespace "ns"',
    )
    ds_pod = pod("d", owner=("DaemonSet", "ds"))
    result = verdict(ds_pod, {("ns", "ds"): denied}, force=True, ignore_daemonsets=True)
    assert (result.delete, result.outcome) == (False, Outcome.ERROR)
    assert summarize_errors([(ds_pod, result)]) == [f"cannot delete {denied.error}: ns/d"]
