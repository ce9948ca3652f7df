"""The job host: starts jobs on threads, journals them, resumes them, and answers for them.

Threads:

- each job runs in a worker thread through ``run_job``, the same runner the
  CLI uses in-process. Its ``emit`` journals the event (committed), encodes
  it once, and hands the line to the thread that owns the host's state
  (``post``); the job never waits for a client;
- that thread (the transport's event loop) is the only one that changes the
  live jobs, their lines and claims: whoever follows a job watches it there
  (``LiveJob.watchers``).

Errors are the protocol's (``ProtocolError`` with its codes): what the host
refuses is what every front end says.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence

from kubectl_rollout.agent.host.conflicts import conflict
from kubectl_rollout.agent.host.journal import Journal, StoredEvent
from kubectl_rollout.agent.host.live_job import Line, LiveJob
from kubectl_rollout.agent.protocol import ErrorCode, JobInfo, ProtocolError, encode_event
from kubectl_rollout.agent.settings import Settings
from kubectl_rollout.job_loop.cluster_queries.queries import workload_claim
from kubectl_rollout.job_loop.loop import run_job
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events.base import Envelope, Event, UnknownEvent, decode_dataclass
from kubectl_rollout.jobs.events.campaign import SurgeRequested
from kubectl_rollout.jobs.events.drain import NodeCordoned
from kubectl_rollout.jobs.events.job import JobFinished, JobPaused, JobResumed, JobState
from kubectl_rollout.jobs.events.stream import EventStream, new_job_id
from kubectl_rollout.jobs.kinds import facts_for, target_of
from kubectl_rollout.jobs.kinds.campaign import finished_node, surge_request_refusal
from kubectl_rollout.jobs.kinds.drain import node_claim
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import Connection, JobResult, JobSpec

log = logging.getLogger("kubectl_rollout.agent")

#: runs a function on the thread that owns the host's state; callable from any thread
Post = Callable[[Callable[[], None]], None]


class JobHost:
    def __init__(self, journal: Journal, settings: Settings, *, lease_holder: str) -> None:
        self.journal = journal
        self.settings = settings
        #: the Lease holder identity of every job this host runs (``JobContext.lease_holder``)
        self.lease_holder = lease_holder
        self.live: dict[str, LiveJob] = {}
        #: set once the host stops: it takes no new job
        self.stopping = False
        #: ``time.monotonic()`` when a job last ended (the agent's idle clock)
        self.last_finished = time.monotonic()
        self._post: Post | None = None

    # --- life cycle ------------------------------------------------------------------------

    def start(self, post: Post) -> None:
        """Serve from now on, with ``post`` (see ``Post``); resumes the jobs the journal has unfinished."""
        self._post = post
        self._resume_unfinished()

    def stop(self) -> None:
        """Take no new job; those running go on until the process ends (and resume at the next start)."""
        self.stopping = True

    def _resume_unfinished(self) -> None:
        for info in self.journal.unfinished():
            stored = self.journal.events(info.id)
            next_seq = stored[-1].seq + 1 if stored else 1
            if stored and stored[-1].type == JobFinished.TYPE:
                # It ended, but the agent died before recording the result: take it from the last event.
                last = json.loads(stored[-1].body)
                state = JobState(last["state"])
                result = JobResult(
                    state=state, exit_code=last["exit_code"], summary=last["summary"], error=last["error"]
                )
                self.journal.finish(info.id, result)
                continue
            try:
                spec = JobSpec.from_dict(info.spec)
            except (ValueError, TypeError, KeyError) as err:
                self._close_unrunnable(info.id, next_seq, f"its spec cannot be read by this version: {err}")
                continue
            if info.cancel_requested:
                self._close_unrunnable(info.id, next_seq, "cancelled before the agent stopped", cancelled=True)
                continue
            facts = facts_for(spec)
            spec = facts.to_resume(
                spec, {e.type for e in stored}, _decoded(stored) if facts.resume_reads_events else ()
            )
            log.info("job %s (%s %s): resuming from event %d", info.id, info.kind, info.target, next_seq)
            history: list[Line] = [(e.seq, e.coalesce_key, encode_event(e.body)) for e in stored]
            # Paused before the crash: it stays paused (its JobPaused is in the history already).
            self._start(info.id, spec, resumed=True, history=history, next_seq=next_seq, paused=info.paused)

    def _close_unrunnable(self, job_id: str, next_seq: int, why: str, *, cancelled: bool = False) -> None:
        state = JobState.CANCELLED if cancelled else JobState.FAILED
        result = JobResult(state=state, exit_code=1, error="" if cancelled else f"job {job_id} was not resumed: {why}")
        stream = EventStream(job_id, lambda env: self.journal.append(env, json.dumps(env.as_dict())), next_seq=next_seq)
        stream.emit(JobFinished(state=result.state, exit_code=1, summary=why if cancelled else "", error=result.error))
        self.journal.finish(job_id, result)
        log.info("job %s: not resumed (%s)", job_id, why)

    # --- running a job ---------------------------------------------------------------------

    def _start(
        self, job_id: str, spec: JobSpec, *, resumed: bool, history: list[Line], next_seq: int, paused: bool = False
    ) -> LiveJob:
        job = LiveJob(job_id, spec, resumed=resumed, history=history)
        if paused:
            job.paused.set()
        job.stream = EventStream(job.id, lambda envelope: self._record(job, envelope), next_seq=next_seq)
        self.live[job_id] = job
        worker = threading.Thread(target=self._run, args=(job,), name=f"job {job_id}", daemon=True)
        worker.start()
        return job

    def _run(self, job: LiveJob) -> None:
        """The worker thread of one job."""
        spec = job.spec
        try:
            self.journal.mark_running(job.id)
            assert job.stream is not None
            context = JobContext(
                emit=job.stream.emit,
                cancel=job.cancel,
                paused=job.paused,
                surge_requests=job.surge_requests,
                lease_holder=self.lease_holder,
                job_id=job.id,
            )
            result = run_job(spec, context, resumed=job.resumed)
            self.journal.finish(job.id, result)
            log.info(
                "job %s (%s %s): %s, exit code %d",
                job.id,
                spec.kind.value,
                target_of(spec),
                result.state.value,
                result.exit_code,
            )
        except Exception:
            log.exception("job %s: the agent could not record it; it resumes when the agent starts again", job.id)
        finally:
            assert self._post is not None
            with contextlib.suppress(RuntimeError):  # the loop is gone: the agent is exiting
                self._post(functools.partial(self._finished, job))

    def _record(self, job: LiveJob, envelope: Envelope) -> None:
        """``emit`` of a job's stream: journal first (committed), then hand the line over to ``post``."""
        body = json.dumps(envelope.as_dict())
        self.journal.append(envelope, body)
        event = envelope.event
        node = finished_node(event)
        if node is not None:
            job.finished_nodes.add(node)
        claim = node_claim(job.spec.connection.context, event.node) if isinstance(event, NodeCordoned) else None
        assert self._post is not None
        self._post(functools.partial(job.push, envelope.seq, event.coalesce_key(), encode_event(body), claim))

    def _finished(self, job: LiveJob) -> None:
        job.finish()
        self.live.pop(job.id, None)
        self.last_finished = time.monotonic()

    # --- what front ends ask -----------------------------------------------------------------

    def submit(self, spec: JobSpec, *, submitted_by: str) -> str:
        """Journal ``spec`` as a new job and start it; its id. Refused while stopping, or when a running job
        drives an object it would."""
        if self.stopping:
            raise ProtocolError(
                ErrorCode.SHUTTING_DOWN, "the agent is stopping; run the command again to start a new one"
            )
        clash = conflict(spec, {job.id: frozenset(job.claims) for job in self.live.values()})
        if clash is not None:
            other, what = clash
            verb = "draining" if what.startswith("node/") else "driving"
            running = self.live[other]
            paused = (
                f"; it is paused: go on with `{command('jobs', 'resume', other)}`" if running.paused.is_set() else ""
            )
            raise ProtocolError(
                ErrorCode.CONFLICT,
                f"job {other} ({running.spec.kind.value} {target_of(running.spec)}) is already {verb} "
                f"{what}{paused}; follow it with `{command('jobs', 'attach', other)}`, or stop it with "
                f"`{command('jobs', 'cancel', other)}` and try again",
                {"job": other, "object": what},
            )
        job_id = new_job_id()
        # Intent before action: committed before the job starts, with who asked for it.
        self.journal.create_job(job_id, spec, submitted_by=submitted_by)
        self._start(job_id, spec, resumed=False, history=[], next_seq=1)
        log.info("job %s (%s %s): submitted", job_id, spec.kind.value, target_of(spec))
        return job_id

    def info(self, job_id: str) -> JobInfo:
        info = self.journal.get(job_id)
        if info is None:
            raise ProtocolError(
                ErrorCode.NO_SUCH_JOB,
                f"no job {job_id!r} in the agent's journal (finished jobs are kept {self.settings.retention_days:g} "
                f"days); list them with `{command('jobs', 'list')}`",
            )
        return info

    def summaries(self, *, limit: int) -> list[JobInfo]:
        """The newest jobs, abridged (``Journal.summaries``)."""
        return self.journal.summaries(limit=limit)

    def _running(self, job_id: str) -> tuple[JobInfo, LiveJob]:
        info = self.info(job_id)
        job = self.live.get(info.id)
        if job is None:
            raise ProtocolError(
                ErrorCode.JOB_FINISHED, f"job {info.id} ({info.kind} {info.target}) already {info.state}"
            )
        return info, job

    def cancel(self, job_id: str) -> None:
        _info, job = self._running(job_id)
        self.journal.request_cancel(job.id)
        job.cancel.set()
        log.info("job %s: cancel requested", job.id)

    def set_paused(self, job_id: str, paused: bool) -> None:
        info, job = self._running(job_id)
        # What pausing means is the kind's (JobKindFacts.pause_means); a kind that cannot pause says so.
        if not facts_for(job.spec).pausable:
            raise ProtocolError(ErrorCode.INVALID_PARAMS, f"job {info.id} ({info.kind}) cannot be paused")
        if job.paused.is_set() != paused:
            self.journal.set_paused(job.id, paused)
            if paused:
                job.paused.set()
            else:
                job.paused.clear()
            assert job.stream is not None
            word = "pause" if paused else "resume"
            job.stream.emit(JobPaused(by=f"jobs {word}") if paused else JobResumed(by=f"jobs {word}"))
            log.info("job %s: %s", job.id, "paused" if paused else "resumed")

    def request_surge(self, job_id: str, nodes: list[str], *, by: str) -> None:
        """Ask running campaign ``job_id`` to drain ``nodes`` through a surge: refused (nothing changed) for a job
        that is no campaign or a node it does not drain (any more); journaled (``SurgeRequested``) before the
        campaign hears of it, so that a resumed campaign surges them still."""
        info, job = self._running(job_id)
        refusal = surge_request_refusal(job.spec, finished=job.finished_nodes, nodes=nodes)
        if refusal is not None:
            raise ProtocolError(ErrorCode.INVALID_PARAMS, f"job {info.id} ({info.kind} {info.target}): {refusal}")
        assert job.stream is not None
        asked = tuple(dict.fromkeys(nodes))
        job.stream.emit(SurgeRequested(nodes=asked, by=by))
        job.surge_requests.ask(asked)
        log.info("job %s: surge requested for %s", job.id, ", ".join(asked))

    def claims(self) -> dict[str, str]:
        """What the running jobs drive: claim → job id."""
        return {claim: job.id for job in self.live.values() for claim in job.claims}

    def abort_rollout(self, connection: Connection, namespace: str, name: str) -> str:
        """Cancel the job that drives managed workload ``name``'s rollout (it stops after its current step);
        its id."""
        job_id = self.claims().get(workload_claim(connection, namespace, "workload", name))
        if job_id is None:
            raise ProtocolError(
                ErrorCode.NO_SUCH_JOB,
                f'no job of this agent drives the rollout of workload/{name} in namespace "{namespace}"; nothing was '
                f"cancelled. A rollout driven from a terminal (`{command('status', name, '-w')}`) stops with Ctrl-C "
                "there; a paused or finished one has nothing to abort",
            )
        self.cancel(job_id)
        return job_id

    def may_stop(self, *, force: bool) -> list[str]:
        """The running jobs' ids, sorted, when the host may stop; refused while jobs run, unless ``force`` (they
        resume at the next start)."""
        if self.live and not force:
            names = ", ".join(f"{job.id} ({job.spec.kind.value} {target_of(job.spec)})" for job in self.live.values())
            raise ProtocolError(
                ErrorCode.JOBS_RUNNING,
                f"jobs are running: {names}; wait for them, cancel them (`{command('jobs', 'cancel', 'ID')}`), or "
                f"stop anyway with `{command('agent', 'stop', '--force')}` (they resume when the agent starts again)",
                {"running": sorted(self.live)},
            )
        return sorted(self.live)

    def job_to_follow(self, job_id: str) -> LiveJob:
        """The job's live events; a finished job (or one this host does not run) comes from the journal, done."""
        info = self.info(job_id)
        job = self.live.get(info.id)
        if job is None:
            # Its spec is only carried along, never run: decoded as journaled, even if an older agent let
            # through what the schema now refuses.
            spec: JobSpec = decode_dataclass(JobSpec, info.spec)
            history: list[Line] = [(e.seq, e.coalesce_key, encode_event(e.body)) for e in self.journal.events(info.id)]
            job = LiveJob(info.id, spec, resumed=False, history=history)
            job.done = True
        return job


def _decoded(stored: Sequence[StoredEvent]) -> list[Event]:
    """A job's recorded events, for a kind whose resume reads them; those this version cannot read are left out."""
    events = []
    for row in stored:
        try:
            events.append(Event.from_dict(json.loads(row.body)))
        except (UnknownEvent, ValueError, TypeError, KeyError):
            log.debug("event %d of a resumed job not read", row.seq)
    return events
