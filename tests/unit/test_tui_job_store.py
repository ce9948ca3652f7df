"""The TUI's job store: a backlog is held until it is all in (one fold, one paint), or until its deadline."""

from __future__ import annotations

from kubectl_rollout.jobs.events.base import Envelope, PodRef
from kubectl_rollout.jobs.events.eviction import EvictionStarted
from kubectl_rollout.jobs.events.job import JobStarted
from kubectl_rollout.tui.job_store import JobStore

JOB = "j1"


def envelope(seq: int) -> Envelope:
    if seq == 1:
        return Envelope(job=JOB, seq=1, at=1001.0, event=JobStarted(kind="drain", target="node/n1"))
    pod = PodRef(namespace="ns", name=f"p{seq}", node="n1")
    return Envelope(job=JOB, seq=seq, at=1000.0 + seq, event=EvictionStarted(pod=pod, attempt=1))


def store_with(seqs: range, *, hold_until: int | None = None, deadline: float = 10.0) -> JobStore:
    store = JobStore()
    if hold_until is not None:
        store.hold(JOB, until_seq=hold_until, deadline=deadline)
    for seq in seqs:
        store.add(envelope(seq), received=2000.0 + seq)
    return store


def test_a_backlog_still_coming_is_not_folded() -> None:
    store = store_with(range(1, 5), hold_until=8)
    assert store.take_changed(now=1.0) == (set(), [])
    assert store.view(JOB).last_seq == 0
    assert store.last_seq(JOB) == 4  # what the reader got, folded or not: a reattach goes on from there


def test_a_backlog_all_in_is_folded_at_once_with_each_event_timing() -> None:
    store = store_with(range(1, 5), hold_until=8)
    store.take_changed(now=1.0)
    for seq in range(5, 9):
        store.add(envelope(seq), received=2000.0 + seq)
    changed, arrivals = store.take_changed(now=1.1)
    assert changed == {JOB}
    assert store.view(JOB).last_seq == 8
    assert [(a.emitted, a.received) for a in arrivals] == [(1000.0 + s, 2000.0 + s) for s in range(1, 9)]


def test_a_backlog_that_takes_too_long_is_shown_as_far_as_it_came() -> None:
    store = store_with(range(1, 5), hold_until=8, deadline=10.0)
    assert store.take_changed(now=9.9)[0] == set()
    assert store.take_changed(now=10.0)[0] == {JOB}
    assert store.view(JOB).last_seq == 4
    store.add(envelope(5), received=2005.0)
    assert store.take_changed(now=10.1)[0] == {JOB}  # the hold is over: events fold as they come


def test_without_a_hold_events_fold_at_each_flush() -> None:
    store = store_with(range(1, 3))
    assert store.take_changed(now=0.0)[0] == {JOB}
    assert store.view(JOB).last_seq == 2
    assert not store.holding(JOB, now=0.0)
