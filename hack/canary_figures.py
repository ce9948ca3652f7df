"""Where a canary's time and requests go, step by step: the pure arithmetic of hack/bench_canary.py.

A run is cut into segments at the moments the record says each step began
(the ``canary`` key's ``step_started_at``, written by the driver as it moves
on): ``start`` from the command's start to the first step, one segment per
step, and ``end`` from the record's "every step done" to the command's exit.
In each segment:

- the timed pause is what the step asks for (``pause 2s``: 2 s);
- the readiness wait is the critical path the cluster imposes: from the
  segment's first scale-up (a ReplicaSet seen growing, or a pod seen created,
  whichever came first) to the last pod created in the segment seen Ready;
- the overhead is the rest: what the driver (and the control plane between our
  request and its effect) added beyond the pause and the readiness wait;
- the requests are our user agent's, by when the API server received them.

Times are epoch seconds from one clock (the bench, the driver and the local
API server run on one machine). Nothing here reads the cluster.
"""

from __future__ import annotations

import itertools
import json
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from kubectl_rollout.rollout.steps.format import Pause, parse_steps


@dataclass(frozen=True, kw_only=True)
class Segment:
    label: str
    start: float
    end: float
    #: the timed pause the segment's step asks for (0: none)
    pause: float = 0.0


@dataclass(frozen=True, kw_only=True)
class PodLife:
    """When a watch first saw a pod, and first saw it Ready (None: never)."""

    created: float
    ready: float | None


@dataclass(frozen=True, kw_only=True)
class Request:
    """One API request as the audit log has it: when it was received, and on what."""

    at: float
    verb: str
    resource: str

    @property
    def kind(self) -> str:
        return f"{self.verb} {self.resource}"


@dataclass(frozen=True, kw_only=True)
class SegmentFigures:
    label: str
    seconds: float
    pause: float
    readiness: float
    #: seconds - pause - readiness (of medians: the median of the runs' own, not the difference of medians)
    overhead: float
    #: "verb resource" -> requests (a median may be a half)
    requests: Mapping[str, float] = field(default_factory=dict)


def segments(*, steps: str, step_starts: Mapping[int, float], began: float, ended: float) -> list[Segment]:
    """The segments of one run: ``steps`` the annotation's text, ``step_starts`` step index (0-based; the
    number of steps for "every step done") -> when the record says it began, ``began``/``ended`` the command's
    start and exit. ValueError when a step's start is missing or the starts go back in time: the record's
    history was not seen whole, and no figure would be right."""
    parsed = parse_steps(steps, workload="bench")
    missing = [index for index in range(len(parsed) + 1) if index not in step_starts]
    if missing:
        raise ValueError(f"the record never showed the start of step(s) {[index + 1 for index in missing]}")
    moments = [began, *(step_starts[index] for index in range(len(parsed) + 1)), ended]
    if any(later < earlier for earlier, later in itertools.pairwise(moments)):
        raise ValueError(f"the moments of the run go back in time: {moments}")
    found = [Segment(label="start", start=began, end=moments[1])]
    for index, step in enumerate(parsed):
        pause = step.seconds if isinstance(step, Pause) and step.seconds is not None else 0.0
        found.append(
            Segment(label=f"{index + 1} {step}", start=moments[index + 1], end=moments[index + 2], pause=pause)
        )
    found.append(Segment(label="end", start=moments[-2], end=ended))
    return found


def readiness_wait(segment: Segment, *, scale_ups: Iterable[float], pods: Iterable[PodLife]) -> float:
    """From the segment's first scale-up to the last pod created in it seen Ready (bounded by the segment's
    end: a pod Ready later was not on this step's path); 0 when the segment created no pod."""
    created = [pod for pod in pods if segment.start <= pod.created < segment.end]
    if not created:
        return 0.0
    first = min(
        min(pod.created for pod in created),
        min((at for at in scale_ups if segment.start <= at < segment.end), default=segment.end),
    )
    last = max((pod.ready for pod in created if pod.ready is not None), default=first)
    return max(0.0, min(last, segment.end) - first)


def attribute(requests: Iterable[Request], found: Sequence[Segment]) -> tuple[list[Counter[str]], Counter[str]]:
    """Each segment's requests by "verb resource" (a request received at a boundary belongs to the segment
    that begins there), and those received outside every segment."""
    per_segment: list[Counter[str]] = [Counter() for _ in found]
    outside: Counter[str] = Counter()
    for request in requests:
        index = next(
            (
                i
                for i, segment in enumerate(found)
                if segment.start <= request.at < segment.end or (i == len(found) - 1 and request.at == segment.end)
            ),
            None,
        )
        (outside if index is None else per_segment[index])[request.kind] += 1
    return per_segment, outside


def figures(
    found: Sequence[Segment], *, scale_ups: Sequence[float], pods: Sequence[PodLife], requests: Sequence[Request]
) -> tuple[list[SegmentFigures], Counter[str]]:
    """Every segment's figures, and the requests outside every segment."""
    counted, outside = attribute(requests, found)
    run = []
    for segment, counts in zip(found, counted, strict=True):
        seconds = segment.end - segment.start
        readiness = readiness_wait(segment, scale_ups=scale_ups, pods=pods)
        run.append(
            SegmentFigures(
                label=segment.label,
                seconds=seconds,
                pause=segment.pause,
                readiness=readiness,
                overhead=seconds - segment.pause - readiness,
                requests=counts,
            )
        )
    return run, outside


def total(run: Sequence[SegmentFigures]) -> SegmentFigures:
    summed: dict[str, float] = {}
    for figure in run:
        for kind, count in figure.requests.items():
            summed[kind] = summed.get(kind, 0) + count
    return SegmentFigures(
        label="total",
        seconds=sum(f.seconds for f in run),
        pause=sum(f.pause for f in run),
        readiness=sum(f.readiness for f in run),
        overhead=sum(f.overhead for f in run),
        requests=summed,
    )


def medians(runs: Sequence[Sequence[SegmentFigures]]) -> list[SegmentFigures]:
    """Segment by segment, the median of each figure over the runs (a request kind a run did not make counts
    0 in it); a total's median is taken over the runs' totals, not summed from the segments' medians."""
    labels = [[figure.label for figure in run] for run in runs]
    if not runs or any(run != labels[0] for run in labels):
        raise ValueError(f"the runs have different segments: {labels}")
    found = []
    for index, label in enumerate(labels[0]):
        column = [run[index] for run in runs]
        kinds = sorted({kind for figure in column for kind in figure.requests})
        found.append(
            SegmentFigures(
                label=label,
                seconds=statistics.median(f.seconds for f in column),
                pause=statistics.median(f.pause for f in column),
                readiness=statistics.median(f.readiness for f in column),
                overhead=statistics.median(f.overhead for f in column),
                requests={kind: statistics.median(f.requests.get(kind, 0) for f in column) for kind in kinds},
            )
        )
    return found


def audit_requests(lines: Iterable[str], *, agent: str, since: float, until: float) -> list[Request]:
    """The requests of a user agent starting with ``agent`` received in [since, until], once each, from the
    lines of an audit log (JSON, one event a line; a request appears at several stages)."""
    seen: set[str] = set()
    found = []
    for line in lines:
        event = json.loads(line)
        if not str(event.get("userAgent", "")).startswith(agent) or event["auditID"] in seen:
            continue
        at = datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
        if not since <= at <= until:
            continue
        seen.add(event["auditID"])
        ref = event.get("objectRef") or {}
        resource = ref.get("resource") or event.get("requestURI", "?").split("?")[0]
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        found.append(Request(at=at, verb=event["verb"], resource=resource))
    return found
