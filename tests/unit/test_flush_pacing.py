"""When the TUI flushes after events: soon after the first of a burst, never more often than its rate."""

from __future__ import annotations

import pytest

from kubectl_rollout.tui.flush_pacing import FlushPacer


def pacer() -> FlushPacer:
    return FlushPacer(gather=0.01, min_interval=0.1)


def test_an_event_after_a_quiet_while_is_flushed_after_the_gathering_wait_only() -> None:
    assert pacer().arrived(100.0) == pytest.approx(0.01)


def test_events_while_a_flush_is_due_ask_for_none_more() -> None:
    p = pacer()
    assert p.arrived(100.0) is not None
    assert p.arrived(100.002) is None
    assert p.arrived(100.009) is None


@pytest.mark.parametrize(
    ("flushed_at", "arrives_at", "delay"),
    [
        (100.0, 100.02, 0.08),  # soon after a flush: waits for the interval to pass
        (100.0, 100.095, 0.01),  # the interval passes within the gathering wait
        (100.0, 101.0, 0.01),  # long after: the gathering wait only
    ],
)
def test_a_flush_comes_no_sooner_than_the_interval_after_the_last(
    flushed_at: float, arrives_at: float, delay: float
) -> None:
    p = pacer()
    p.arrived(flushed_at - 0.01)
    p.flushed(flushed_at)
    assert p.arrived(arrives_at) == pytest.approx(delay)


def test_what_arrives_after_a_flush_asks_for_another() -> None:
    p = pacer()
    p.arrived(100.0)
    p.flushed(100.01)
    assert p.arrived(100.5) == pytest.approx(0.01)
