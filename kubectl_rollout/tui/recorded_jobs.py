"""Jobs read back from recordings of their events (``-o jsonl``, ``jobs logs ID -o jsonl``).

The TUI opened on a recording shows each job as it ended (``tui --replay
FILE``), and the snapshot tests render screens from recorded streams so that
they never depend on a live cluster's timing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

from kubectl_rollout.agent.client import Lagged
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.job import JobFinished, JobPaused, JobResumed, JobStarted
from kubectl_rollout.jobs.views.job import JobView, fold_all


class RecordingIsReadOnly(AgentError):
    pass


def read_recording(path: Path) -> list[Envelope]:
    """Every envelope in a JSON-lines file; a line that is not one names the file and line."""
    envelopes = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            envelopes.append(Envelope.from_dict(json.loads(line)))
        except (ValueError, KeyError) as err:
            raise ValueError(f"{path}:{number}: not an event envelope ({err}); record one with -o jsonl") from err
    return envelopes


def _info_of(view: JobView, *, last_seq: int) -> JobInfo:
    finished = view.finished
    return JobInfo(
        id=view.job,
        kind=view.kind,
        target=view.target,
        state=str(view.state),
        context=view.context,
        namespace=view.namespace,
        created_at=view.started_at or 0.0,
        started_at=view.started_at,
        finished_at=view.updated_at if finished is not None else None,
        exit_code=finished.exit_code if finished is not None else None,
        summary=finished.summary if finished is not None else "",
        error=finished.error if finished is not None else "",
        last_seq=last_seq,
        paused=view.paused,
        submitted_by="recording",
    )


def _job_facts(events: list[Envelope]) -> list[Envelope]:
    """The events the job list needs (the job's own, and the first and last for the kind and times)."""
    kept = {events[0].seq: events[0], events[-1].seq: events[-1]}
    kept.update((e.seq, e) for e in events if isinstance(e.event, JobStarted | JobPaused | JobResumed | JobFinished))
    return [kept[seq] for seq in sorted(kept)]


class RecordedJobs:
    can_act = False

    def __init__(self, envelopes: Iterable[Envelope], *, description: str = "recording") -> None:
        self.description = description
        self._events: dict[str, list[Envelope]] = {}
        for envelope in envelopes:
            self._events.setdefault(envelope.job, []).append(envelope)
        self._infos = [
            _info_of(fold_all(_job_facts(events)), last_seq=events[-1].seq) for events in self._events.values()
        ]
        self._infos.sort(key=lambda info: info.created_at, reverse=True)

    @classmethod
    def from_files(cls, paths: Iterable[Path]) -> RecordedJobs:
        paths = list(paths)
        envelopes = [e for path in paths for e in read_recording(path)]
        return cls(envelopes, description=", ".join(p.name for p in paths))

    async def jobs(self) -> list[JobInfo]:
        return list(self._infos)

    async def follow(
        self, job_id: str, *, from_seq: int = 1, coalesce: bool = False
    ) -> AsyncIterator[Envelope | Lagged]:
        # ``coalesce`` allows leaving events out, it does not ask to: a recording is in memory already.
        for envelope in self._events.get(job_id, []):
            if envelope.seq >= from_seq:
                yield envelope

    def _refuse(self, what: str, job_id: str) -> RecordingIsReadOnly:
        return RecordingIsReadOnly(f"job {job_id} is a recording ({self.description}); it cannot be {what}")

    async def cancel(self, job_id: str) -> JobInfo:
        raise self._refuse("cancelled", job_id)

    async def pause(self, job_id: str) -> JobInfo:
        raise self._refuse("paused", job_id)

    async def resume(self, job_id: str) -> JobInfo:
        raise self._refuse("resumed", job_id)

    async def close(self) -> None:
        return None
