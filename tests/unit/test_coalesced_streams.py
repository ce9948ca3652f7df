"""A backlog sent coalesced (``attach`` with ``coalesce``, or a lagging client) folds to the job's view.

Over every recorded stream: the events superseded by a later event of the same object
(``Event.coalesce_key``) are left out, and the view folded from what remains must equal the view folded from
every event. A key that dropped an event the view needs would fail here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_rollout.agent.protocol import coalesce, encode_event
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.views.job import fold_all
from kubectl_rollout.tui.recorded_jobs import read_recording

STREAMS = sorted((Path(__file__).parent / "streams").glob("*.jsonl"))


def _coalesced(envelopes: list[Envelope]) -> list[Envelope]:
    backlog = [(e.seq, e.event.coalesce_key(), encode_event(json.dumps(e.as_dict()))) for e in envelopes]
    by_seq = {e.seq: e for e in envelopes}
    return [by_seq[seq] for seq, _key, _line in coalesce(backlog)]


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_the_coalesced_stream_folds_to_the_same_view(path: Path) -> None:
    envelopes = read_recording(path)
    kept = _coalesced(envelopes)
    assert fold_all(kept) == fold_all(envelopes)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.stem)
def test_every_prefix_of_the_coalesced_stream_folds_to_the_view_at_that_point(path: Path) -> None:
    # A client attaching while the job runs gets the backlog so far coalesced, then live events.
    envelopes = read_recording(path)
    for cut in range(1, len(envelopes) + 1):
        head = envelopes[:cut]
        assert fold_all(_coalesced(head) + envelopes[cut:]) == fold_all(envelopes)


def test_the_recorded_streams_do_have_events_to_leave_out() -> None:
    # Otherwise the tests above would prove nothing.
    left_out = sum(len(read_recording(p)) - len(_coalesced(read_recording(p))) for p in STREAMS)
    assert left_out > 0
