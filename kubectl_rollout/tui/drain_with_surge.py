"""A running drain started again with ``--surge`` (the Drain screen's ``s``), through the agent.

A running drain cannot take a surge up: it decides its surges per node (or
node batch) before the first eviction there, and raises each workload in one
request with its record. So the drain is cancelled (it stops cooperatively:
no new eviction; its nodes stay cordoned; what it evicted stays evicted),
followed until it has ended (its claims on its nodes go with it, and the agent
would refuse a second drain of them before), and the same drain (nodes or
selector, every option) is submitted with ``--surge``. It runs as the app's
work, not the screen's: leaving the screen meanwhile does not leave the node
cordoned with no drain.
"""

from __future__ import annotations

import asyncio
import dataclasses

from kubectl_rollout.agent.client import Lagged, cluster_calls
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.jobs.events.job import JobFinished
from kubectl_rollout.jobs.spec import JobSpec
from kubectl_rollout.tui.agent_calls import CallRunner
from kubectl_rollout.tui.job_source import JobSource

#: how long the cancelled drain may take to end (an eviction in flight finishes first)
CANCEL_TIMEOUT = 60.0


def with_surge(spec: JobSpec) -> JobSpec:
    """The same drain with ``--surge``; ValueError for a job that is no drain."""
    if spec.drain is None:
        raise ValueError(f"a {spec.kind} job is no drain: there is nothing to surge")
    options = dataclasses.replace(spec.drain.options, surge=True)
    return dataclasses.replace(spec, drain=dataclasses.replace(spec.drain, options=options))


async def until_ended(source: JobSource, job_id: str, *, from_seq: int) -> bool:
    """Follow the job's events from ``from_seq`` to the end of the agent's stream; whether it finished.

    The stream's end, not ``JobFinished``: the agent sends that event before it lets go of the job's claims,
    and ends the stream after, so a drain of the same nodes submitted at ``JobFinished`` could be refused.
    """
    finished = False
    async for item in source.follow(job_id, from_seq=from_seq):
        finished = finished or (not isinstance(item, Lagged) and isinstance(item.event, JobFinished))
    return finished


async def drain_again_with_surge(
    *, link: CallRunner, source: JobSource, job_id: str, from_seq: int, timeout: float = CANCEL_TIMEOUT
) -> tuple[JobInfo, JobInfo]:
    """Cancel drain ``job_id``, wait until it has ended (its events from ``from_seq``), then submit it again
    with ``--surge``; the agent's entries of the cancelled job and of the new one."""
    shown = await link.run(cluster_calls.show(job_id))
    try:
        again = with_surge(JobSpec.from_dict(shown.spec))
    except ValueError as err:
        raise AgentError(f"job {job_id}: {err}") from err
    cancelled = await link.run(cluster_calls.cancel(job_id))
    try:
        ended = await asyncio.wait_for(until_ended(source, job_id, from_seq=from_seq), timeout)
    except TimeoutError as err:
        raise AgentError(
            f"job {job_id} was cancelled but has not ended after {timeout:.0f} s, so no drain with --surge was "
            f"started; its nodes stay cordoned. Once it has ended: kubectl rollout-plus drain NODE --surge"
        ) from err
    if not ended:
        raise AgentError(f"lost job {job_id}'s events before it ended, so no drain with --surge was started")
    return cancelled, await link.run(cluster_calls.submit(again))
