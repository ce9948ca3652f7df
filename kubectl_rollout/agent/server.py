"""The agent process: an asyncio Unix-socket server that runs jobs in worker threads and journals them.

Threads and the loop:

- each job runs in a worker thread through ``run_job``, the same runner the
  CLI uses in-process. Its ``emit`` journals the event (committed), encodes
  it once, and hands the line to the event loop (``call_soon_threadsafe``);
  the job never waits for a client;
- the loop owns the sockets. Each attached client has a cursor into the job's
  events, and a writer that sends what it has not seen yet, waiting for the
  socket to drain between chunks: a slow client falls behind on its own (its
  backlog is coalesced when it lags far, see ``protocol.coalesce``), and a
  client whose socket takes nothing for ``stall_seconds`` is dropped. Nothing
  a client does slows a job or the other clients.

Exits after ``idle_seconds`` with no job and no client, never while a job runs.
Logs go to the state directory (rotated); nothing secret is logged.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import logging
import logging.handlers
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

from kubectl_rollout import __version__
from kubectl_rollout.agent.agent_log import OneLineFormatter, Throttle, capture_stderr, quote_controls
from kubectl_rollout.agent.cluster_service import CLUSTER_METHODS, ClusterService, as_protocol_errors
from kubectl_rollout.agent.conflicts import conflict
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.journal import Journal
from kubectl_rollout.agent.paths import AgentPaths, agent_paths
from kubectl_rollout.agent.peer import peer_of
from kubectl_rollout.agent.protocol import (
    MAX_LINE,
    ErrorCode,
    JobInfo,
    Method,
    Notice,
    Notification,
    ProtocolError,
    Response,
    coalesce,
    cut,
    decode,
    encode,
    encode_event,
    encode_reply,
    negotiate,
)
from kubectl_rollout.agent.request_schema import validate
from kubectl_rollout.agent.settings import Settings
from kubectl_rollout.job_loop.cluster_queries.queries import connection_of, namespace_of, workload_claim
from kubectl_rollout.job_loop.loop import run_job
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events.base import Envelope, decode_dataclass
from kubectl_rollout.jobs.events.drain import NodeCordoned
from kubectl_rollout.jobs.events.job import JobFinished, JobPaused, JobResumed, JobState
from kubectl_rollout.jobs.events.stream import EventStream, new_job_id
from kubectl_rollout.jobs.kinds import facts_for, target_of
from kubectl_rollout.jobs.kinds.drain import node_claim
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import JobResult, JobSpec

log = logging.getLogger("kubectl_rollout.agent")

#: events written to a client between two waits for its socket to drain
CHUNK = 64
#: what one client may have in flight: the kernel's send buffer and asyncio's, each bounded
SOCKET_BUFFER = 32 * 1024
WRITE_BUFFER_HIGH = 64 * 1024
#: how long a starting agent waits for the pid lock of one that is still exiting
PID_LOCK_WAIT = 3.0
#: jobs one connection may follow at once (``attach``); a client attaching should use a connection per job
MAX_STREAMS = 8
#: what a ``list`` answer may fill of the line limit (the rest: the envelope around the jobs)
LIST_BUDGET = MAX_LINE - 64 * 1024
#: how long a stopping agent may take before it exits anyway (a worker thread stuck in a cluster call)
STOP_GRACE = 10.0
#: accept() errors that mean "no descriptor or buffer free now": the loop retries by itself a second later
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


Line = tuple[int, str | None, bytes]


class LiveJob:
    """A job this agent runs: its events so far (``lines[i]`` has seq ``i + 1``) and who waits for more."""

    def __init__(self, job_id: str, spec: JobSpec, *, resumed: bool, history: list[Line]) -> None:
        self.id = job_id
        self.spec = spec
        self.resumed = resumed
        self.cancel = threading.Event()
        #: set while paused (``run_job``'s ``paused``)
        self.paused = threading.Event()
        #: the job's event stream, made before its thread starts so that the loop may emit into it too
        self.stream: EventStream | None = None
        self.lines = history
        self.claims = set(facts_for(spec).claims(spec))
        self.done = False
        self.waiters: set[asyncio.Event] = set()

    def push(self, seq: int, key: str | None, line: bytes, claim: str | None) -> None:
        self.lines.append((seq, key, line))
        if claim is not None:
            self.claims.add(claim)
        self.wake()

    def finish(self) -> None:
        self.done = True
        self.wake()

    def wake(self) -> None:
        for waiter in self.waiters:
            waiter.set()


class Connection:
    def __init__(self, writer: asyncio.StreamWriter, *, uid: int, pid: int, stall_seconds: float) -> None:
        self.writer = writer
        self.uid = uid
        self.pid = pid
        self.stall_seconds = stall_seconds
        self.client = "?"
        self.greeted = False
        #: dropped for reading nothing for stall_seconds
        self.dropped = False

    def write(self, data: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(data)

    async def drain(self) -> None:
        if self.dropped:
            raise ConnectionResetError("client stalled")
        try:
            await asyncio.wait_for(self.writer.drain(), self.stall_seconds)
        except TimeoutError:
            if self.dropped:  # an answer and a stream waited on it together: dropped (and logged) once
                raise ConnectionResetError("client stalled") from None
            self.dropped = True
            log.warning(
                "dropped client pid %d (%s): it read nothing for %.0f s; jobs go on",
                self.pid,
                self.client,
                self.stall_seconds,
            )
            self.writer.transport.abort()
            raise ConnectionResetError("client stalled") from None


class Agent:
    def __init__(self, paths: AgentPaths, journal: Journal, settings: Settings) -> None:
        self.paths = paths
        self.journal = journal
        self.settings = settings
        self.live: dict[str, LiveJob] = {}
        self.clients: set[Connection] = set()
        #: how many connections follow each job now
        self.attached: collections.Counter[str] = collections.Counter()
        self.started_at = time.time()
        self._last_busy = time.monotonic()
        self._stopping: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._force_exit = False
        self.lease_holder = lease_holder_for(paths)
        self.cluster = ClusterService()
        #: called once when the agent starts stopping; the agent process arms its exit watchdog here
        self.on_stop: Callable[[], None] | None = None

    # --- life cycle ------------------------------------------------------------------------

    async def serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.set_exception_handler(_loop_exception)
        self._stopping = asyncio.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._loop.add_signal_handler(signum, self._on_signal, signum)
        socket_path = self.paths.socket
        socket_path.unlink(missing_ok=True)  # stale: we hold the pid lock, so no agent is listening on it
        umask = os.umask(0o177)  # the socket is born 0600
        try:
            server = await asyncio.start_unix_server(self._serve_client, path=str(socket_path), limit=MAX_LINE)
        finally:
            os.umask(umask)
        os.chmod(socket_path, 0o600)
        log.info("agent %s (pid %d) listening on %s", __version__, os.getpid(), socket_path)
        self._resume_unfinished()
        idle = asyncio.create_task(self._watch_idle())
        try:
            await self._stopping.wait()
        finally:
            idle.cancel()
            server.close()
            socket_path.unlink(missing_ok=True)
            for connection in list(self.clients):
                connection.writer.transport.abort()
        unanswered = self.cluster.busy
        if not self.cluster.stop():
            # Closing a connection a stuck call holds could wait for that call: the process exit closes it.
            log.info("stopping with %d cluster call(s) unanswered; exiting without waiting", unanswered)
            self._force_exit = True
        if self.live:
            log.info(
                "stopping with %d job(s) running (%s); they resume when the agent starts again",
                len(self.live),
                ", ".join(self.live),
            )
            self._force_exit = True

    def _on_signal(self, signum: int) -> None:
        log.info("received %s; stopping", signal.Signals(signum).name)
        self.stop()

    def stop(self) -> None:
        if self._stopping is not None and not self._stopping.is_set():
            self._stopping.set()
            if self.on_stop is not None:
                self.on_stop()

    async def _watch_idle(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.settings.idle_seconds / 4))
            if self.live or self.clients:
                self._last_busy = time.monotonic()
            elif time.monotonic() - self._last_busy >= self.settings.idle_seconds:
                log.info("idle for %.0f s (no job, no client); exiting", self.settings.idle_seconds)
                self.stop()
                return

    # --- jobs ------------------------------------------------------------------------------

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
            spec = facts_for(spec).to_resume(spec, {e.type for e in stored})
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
                emit=job.stream.emit, cancel=job.cancel, paused=job.paused, lease_holder=self.lease_holder
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
            assert self._loop is not None
            with contextlib.suppress(RuntimeError):  # the loop is gone: the agent is exiting
                self._loop.call_soon_threadsafe(self._finished, job)

    def _record(self, job: LiveJob, envelope: Envelope) -> None:
        """``emit`` of a job's stream: journal first (committed), then hand the line to the loop."""
        body = json.dumps(envelope.as_dict())
        self.journal.append(envelope, body)
        event = envelope.event
        claim = node_claim(job.spec.connection.context, event.node) if isinstance(event, NodeCordoned) else None
        assert self._loop is not None
        self._loop.call_soon_threadsafe(job.push, envelope.seq, event.coalesce_key(), encode_event(body), claim)

    def _finished(self, job: LiveJob) -> None:
        job.finish()
        self.live.pop(job.id, None)
        self._last_busy = time.monotonic()

    # --- clients ---------------------------------------------------------------------------

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            peer = peer_of(writer.get_extra_info("socket"))
        except OSError as err:
            log.warning("refused a connection: cannot tell who it is from (%s)", err)
            writer.close()
            return
        if peer.uid != os.getuid():
            log.warning(
                "refused a connection from uid %d (pid %d): this agent serves uid %d only",
                peer.uid,
                peer.pid,
                os.getuid(),
            )
            refusal = ProtocolError(
                ErrorCode.INVALID_REQUEST, f"this agent serves uid {os.getuid()} only, not uid {peer.uid}"
            )
            writer.write(encode(Response(None, error=refusal)))
            writer.close()
            return
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        writer.transport.set_write_buffer_limits(high=WRITE_BUFFER_HIGH)
        connection = Connection(writer, uid=peer.uid, pid=peer.pid, stall_seconds=self.settings.stall_seconds)
        self.clients.add(connection)
        streams: set[asyncio.Task[None]] = set()
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    log.warning("dropped client pid %d: a line longer than %d bytes", peer.pid, MAX_LINE)
                    break
                except (ConnectionError, asyncio.CancelledError):
                    break  # gone, or the agent is stopping
                if not line:
                    break
                reply, stream = await self._answer(connection, line, streams)
                if reply is None:
                    continue
                # Backpressure: the next request is read once this answer is in the socket. A client that
                # pipelines requests and reads nothing holds one answer here, not one per request; one
                # that takes nothing for stall_seconds is dropped (Connection.drain).
                connection.write(reply)
                if stream is not None:
                    task = asyncio.create_task(stream)
                    streams.add(task)
                    task.add_done_callback(streams.discard)
                await connection.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            for task in list(streams):
                task.cancel()
            self.clients.discard(connection)
            self._last_busy = time.monotonic()
            writer.close()

    async def _answer(
        self, connection: Connection, line: bytes, streams: set[asyncio.Task[None]]
    ) -> tuple[bytes | None, Coroutine[Any, Any, None] | None]:
        """The answer to one line (None: none is due), and the stream an ``attach`` starts after it."""
        try:
            message = decode(line, strict=True)
        except ProtocolError as err:
            return encode(Response(err.request_id, error=err)), None
        if isinstance(message, Response):
            return None, None  # clients send requests only; an answer answers nothing here
        if isinstance(message, Notification):
            # JSON-RPC runs a request without an id and answers nothing. Here a job started that way could not
            # be followed, paused or cancelled by the one who asked: it is refused instead, and said so.
            refusal = ProtocolError(
                ErrorCode.INVALID_REQUEST,
                f"{quote_controls(cut(message.method, 64))!r} has no id: the agent runs only requests it can "
                'answer; nothing was run. Send it with an "id"',
            )
            return encode(Response(None, error=refusal)), None
        try:
            if message.method != Method.HELLO and not connection.greeted:
                raise ProtocolError(
                    ErrorCode.HELLO_FIRST, f"call {Method.HELLO} first, then {quote_controls(cut(message.method, 64))}"
                )
            params = validate(message.method, message.params)
            if message.method == Method.ATTACH:
                if len(streams) >= MAX_STREAMS:
                    raise ProtocolError(
                        ErrorCode.LIMIT_REACHED,
                        f"this connection follows {len(streams)} jobs already, the most one connection may; "
                        "attach on a connection of its own (PROTOCOL.md)",
                        {"streams": MAX_STREAMS},
                    )
                job, next_seq, result = self._attach(params)
                reply = encode(Response(message.id, result=result))
                if len(reply) > MAX_LINE:  # refused as too large: no stream follows an error
                    return encode_reply(Response(message.id, result=result)), None
                stream = self._stream(
                    connection, job, next_seq, follow=params["follow"], coalesce_backlog=params["coalesce"]
                )
                return reply, stream
            if message.method in CLUSTER_METHODS:
                result = await self.cluster.call(message.method, params, self._claims())
            else:
                result = self._call(connection, message.method, params)
            connection.greeted = connection.greeted or message.method == Method.HELLO
            return encode_reply(Response(message.id, result=result)), None
        except ProtocolError as err:
            return encode(Response(message.id, error=err)), None
        except Exception as err:
            log.exception("%s from pid %d failed", cut(message.method, 64), connection.pid)
            failure = ProtocolError(
                ErrorCode.INTERNAL_ERROR,
                f"{cut(message.method, 64)} failed in the agent: {cut(str(err), 1024)}; see {self.paths.log}",
            )
            return encode(Response(message.id, error=failure)), None

    def _call(self, connection: Connection, method: str, params: dict[str, Any]) -> Any:
        """A method answered on the loop; ``params`` are checked (``request_schema.validate``)."""
        if method == Method.HELLO:
            return self._hello(connection, params)
        if method == Method.SUBMIT:
            return self._submit(connection, params["spec"])
        if method == Method.LIST:
            return self._list(limit=params["limit"])
        if method == Method.SHOW:
            return self._info(params).as_dict()
        if method == Method.CANCEL:
            return self._cancel(params)
        if method in (Method.PAUSE, Method.RESUME):
            return self._pause(params, paused=method == Method.PAUSE)
        if method == Method.SHUTDOWN:
            return self._shutdown(force=params["force"])
        if method == Method.ABORT:
            return self._abort(params)
        raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"no method {method!r}; the agent knows {', '.join(Method)}")

    def _list(self, *, limit: int) -> dict[str, Any]:
        """The newest jobs, abridged (``Journal.summaries``), as many as fit in one line: ``more`` says some did
        not."""
        jobs: list[dict[str, Any]] = []
        size = 0
        more = False
        for info in self.journal.summaries(limit=limit):
            item = self._with_clients(info).as_dict()
            length = len(json.dumps(item, separators=(",", ":"))) + 1
            if size + length > LIST_BUDGET:
                more = True
                break
            jobs.append(item)
            size += length
        return {"jobs": jobs, "more": more}

    def _hello(self, connection: Connection, params: dict[str, Any]) -> dict[str, Any]:
        connection.client = params["client"]
        agreed = negotiate(client_version=params["protocol"], client_oldest=params["oldest"])
        return {
            "protocol": agreed,
            "agent_version": __version__,
            "pid": os.getpid(),
            "started_at": self.started_at,
            "socket": str(self.paths.socket),
            "journal": str(self.paths.journal),
            "log": str(self.paths.log),
            "running_jobs": sorted(self.live),
            "clients": len(self.clients),
            "idle_seconds": self.settings.idle_seconds,
        }

    def _submit(self, connection: Connection, spec: JobSpec) -> dict[str, Any]:
        if self._stopping is not None and self._stopping.is_set():
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
        self.journal.create_job(job_id, spec, submitted_by=f"{connection.client} (pid {connection.pid})")
        self._start(job_id, spec, resumed=False, history=[], next_seq=1)
        log.info("job %s (%s %s): submitted", job_id, spec.kind.value, target_of(spec))
        return self._info({"job": job_id}).as_dict()

    def _info(self, params: dict[str, Any]) -> JobInfo:
        job_id = str(params["job"])
        info = self.journal.get(job_id)
        if info is None:
            raise ProtocolError(
                ErrorCode.NO_SUCH_JOB,
                f"no job {job_id!r} in the agent's journal (finished jobs are kept {self.settings.retention_days:g} "
                f"days); list them with `{command('jobs', 'list')}`",
            )
        return self._with_clients(info)

    def _with_clients(self, info: JobInfo) -> JobInfo:
        return dataclasses.replace(info, attached=self.attached[info.id])

    def _cancel(self, params: dict[str, Any]) -> dict[str, Any]:
        info = self._info(params)
        job = self.live.get(info.id)
        if job is None:
            raise ProtocolError(
                ErrorCode.JOB_FINISHED, f"job {info.id} ({info.kind} {info.target}) already {info.state}"
            )
        self.journal.request_cancel(job.id)
        job.cancel.set()
        log.info("job %s: cancel requested", job.id)
        return self._info(params).as_dict()

    def _pause(self, params: dict[str, Any], *, paused: bool) -> dict[str, Any]:
        info = self._info(params)
        job = self.live.get(info.id)
        if job is None:
            raise ProtocolError(
                ErrorCode.JOB_FINISHED, f"job {info.id} ({info.kind} {info.target}) already {info.state}"
            )
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
        return self._info(params).as_dict()

    # --- the cluster (cluster_service) ----------------------------------------------------

    def _claims(self) -> dict[str, str]:
        """What the running jobs drive: claim → job id."""
        return {claim: job.id for job in self.live.values() for claim in job.claims}

    def _abort(self, params: dict[str, Any]) -> dict[str, Any]:
        """Cancel the job that drives a managed workload's rollout: it stops after its current step."""
        with as_protocol_errors():
            connection = connection_of(params)
        name = params["workload"]
        namespace = namespace_of(params, connection)
        job_id = self._claims().get(workload_claim(connection, namespace, "workload", name))
        if job_id is None:
            raise ProtocolError(
                ErrorCode.NO_SUCH_JOB,
                f'no job of this agent drives the rollout of workload/{name} in namespace "{namespace}"; nothing was '
                f"cancelled. A rollout driven from a terminal (`{command('status', name, '-w')}`) stops with Ctrl-C "
                "there; a paused or finished one has nothing to abort",
            )
        return self._cancel({"job": job_id})

    def _shutdown(self, *, force: bool) -> dict[str, Any]:
        if self.live and not force:
            names = ", ".join(f"{job.id} ({job.spec.kind.value} {target_of(job.spec)})" for job in self.live.values())
            raise ProtocolError(
                ErrorCode.JOBS_RUNNING,
                f"jobs are running: {names}; wait for them, cancel them (`{command('jobs', 'cancel', 'ID')}`), or "
                f"stop anyway with `{command('agent', 'stop', '--force')}` (they resume when the agent starts again)",
                {"running": sorted(self.live)},
            )
        log.info("shutdown requested")
        assert self._loop is not None
        self._loop.call_soon(self.stop)  # after this answer is written
        return {"stopping": True, "running": sorted(self.live)}

    # --- attach ----------------------------------------------------------------------------

    def _attach(self, params: dict[str, Any]) -> tuple[LiveJob, int, dict[str, Any]]:
        info = self._info(params)
        from_seq: int = params["from_seq"]
        job = self.live.get(info.id)
        if job is None:
            # Finished (or not run by this agent): its events come from the journal, then the stream ends. Its
            # spec is only carried along, never run: decoded as journaled, even if an older agent let through
            # what the schema now refuses.
            spec: JobSpec = decode_dataclass(JobSpec, info.spec)
            history: list[Line] = [(e.seq, e.coalesce_key, encode_event(e.body)) for e in self.journal.events(info.id)]
            job = LiveJob(info.id, spec, resumed=False, history=history)
            job.done = True
        return job, from_seq, info.as_dict()

    async def _stream(
        self, connection: Connection, job: LiveJob, next_seq: int, *, follow: bool, coalesce_backlog: bool = False
    ) -> None:
        """Write the job's events from ``next_seq`` on; with ``coalesce_backlog``, those there are already are
        sent coalesced (a TUI's first paint of a 5000-pod drain needs each pod's last state, not its history)."""
        waiter = asyncio.Event()
        job.waiters.add(waiter)
        self.attached[job.id] += 1
        try:
            while True:
                waiter.clear()
                backlog = job.lines[next_seq - 1 :]
                if backlog:
                    if coalesce_backlog or len(backlog) > self.settings.lag_events:
                        coalesce_backlog = False  # asked for: the backlog at attach; after it, only when lagging
                        kept = coalesce(backlog)
                        if len(kept) < len(backlog):
                            skipped = {"job": job.id, "skipped": len(backlog) - len(kept)}
                            connection.write(encode(Notification(Notice.LAGGED, skipped)))
                        backlog = kept
                    for start in range(0, len(backlog), CHUNK):
                        chunk = backlog[start : start + CHUNK]
                        connection.write(b"".join(_fitting(job.id, seq, line) for seq, _key, line in chunk))
                        await connection.drain()
                    next_seq = backlog[-1][0] + 1
                    continue
                if job.done or not follow:
                    break
                await waiter.wait()
            # The job's own last event, also when the client asked from beyond it (from_seq 10**9).
            last_seq = job.lines[-1][0] if job.lines else 0
            connection.write(encode(Notification(Notice.END, {"job": job.id, "last_seq": last_seq})))
            await connection.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            job.waiters.discard(waiter)
            self.attached[job.id] -= 1
            if self.attached[job.id] <= 0:
                del self.attached[job.id]

    @property
    def force_exit(self) -> bool:
        return self._force_exit


def _fitting(job_id: str, seq: int, line: bytes) -> bytes:
    """An event's line, or, past the line limit, an ``omitted`` notice in its place: a client reads at most
    MAX_LINE, and a longer line would leave it reading the rest as the next lines."""
    if len(line) <= MAX_LINE:
        return line
    log.warning(
        "job %s: event %d is %d bytes, past the line limit; clients get an omitted notice", job_id, seq, len(line)
    )
    params = {"job": job_id, "seq": seq, "bytes": len(line), "limit": MAX_LINE}
    return encode(Notification(Notice.OMITTED, params))


def lease_holder_for(paths: AgentPaths) -> str:
    """The agent's Lease holder identity: the same for every run of this user's agent with this state directory
    on this machine (so that a restarted agent takes back its Leases at once), different for any other."""
    digest = hashlib.sha256(str(paths.state_dir).encode()).hexdigest()[:8]
    return f"{socket.gethostname()}/rollout-plus-agent/uid-{os.getuid()}/{digest}"


# --- the process -------------------------------------------------------------------------------


def _setup_logging(paths: AgentPaths, *, foreground: bool) -> None:
    handler = logging.handlers.RotatingFileHandler(paths.log, maxBytes=1024 * 1024, backupCount=3, encoding="utf-8")
    os.chmod(paths.log, 0o600)
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger("kubectl_rollout")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    # asyncio's own records (an accept that failed, a transport error) repeat as fast as the loop turns:
    # into the rotated log, once per period each, never onto stderr (agent-start.err, which nobody rotates).
    loop_log = logging.getLogger("asyncio")
    loop_log.addHandler(handler)
    loop_log.addFilter(Throttle())
    loop_log.propagate = False
    if foreground and sys.stderr.isatty():
        terminal = logging.StreamHandler(sys.stderr)
        terminal.setFormatter(OneLineFormatter("%(message)s"))
        root.addHandler(terminal)
        loop_log.addHandler(terminal)
    # A handler that fails (a full disk, no descriptor left) says so on stderr, which is now the log itself.
    logging.raiseExceptions = False
    capture_stderr(logging.getLogger("kubectl_rollout.agent.stderr"))


def _loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's errors, one line each in the log (throttled by the ``asyncio`` logger's filter).

    An accept() without a free descriptor is not the agent's failure: asyncio stops accepting for a second
    and tries again; the log says so once a minute, with how many times it happened meanwhile.
    """
    loop_log = logging.getLogger("asyncio")
    error = context.get("exception")
    message = str(context.get("message") or "event loop error").replace("%", "%%")
    if isinstance(error, OSError) and error.errno in _OUT_OF_RESOURCES:
        loop_log.error(
            f"{message}: {error.strerror}; new connections wait until descriptors are free "
            "(raise `ulimit -n`, or close clients)"
        )
        return
    loop_log.error(message, exc_info=error if isinstance(error, BaseException) else None)


def _exit_after(seconds: float) -> None:
    """End the process in ``seconds`` if it has not ended by then: a stop always stops, whatever a thread holds.

    The journal commits each step as it happens, so what a forced exit cuts short resumes at the next start.
    """

    def watchdog() -> None:
        time.sleep(seconds)
        log.warning("still not stopped %.0f s after the stop; exiting now (jobs resume at the next start)", seconds)
        logging.shutdown()
        os._exit(1)

    threading.Thread(target=watchdog, name="stop watchdog", daemon=True).start()


def _hold_pid_lock(paths: AgentPaths) -> int:
    """Lock the pid file for the agent's life: a second agent of this user fails here."""
    fd = os.open(paths.pid_file, os.O_RDWR | os.O_CREAT, 0o600)
    # A killed agent's threads may take a moment to let go of the lock: wait a little before giving up.
    deadline = time.monotonic() + PID_LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() < deadline:
                time.sleep(0.05)
                continue
        other = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise AgentError(
            f"an agent is already running (pid {other}, socket {paths.socket}); stop it with "
            f"`{command('agent', 'stop')}` first"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def run_agent(paths: AgentPaths | None = None, settings: Settings | None = None, *, foreground: bool = False) -> int:
    """Run the agent in this process until it stops; the exit code."""
    os.umask(0o077)  # the journal, the logs, the pid file: this user's alone
    try:
        paths = (paths or agent_paths()).ensure()
        settings = settings or Settings.from_env()
        _hold_pid_lock(paths)
        _setup_logging(paths, foreground=foreground)
        journal = Journal(paths.journal)
    except AgentError as err:
        print(f"error: {err.message}", file=sys.stderr)
        return 1
    pruned = journal.prune(older_than_days=settings.retention_days)
    if pruned:
        log.info("pruned %d job(s) finished more than %g days ago", pruned, settings.retention_days)
    agent = Agent(paths, journal, settings)
    agent.on_stop = lambda: _exit_after(STOP_GRACE)
    try:
        asyncio.run(agent.serve())
    except Exception:
        log.exception("the agent failed; jobs it ran resume when it starts again")
        logging.shutdown()
        os._exit(1)
    log.info("agent stopped")
    if agent.force_exit:
        # Worker threads are still in their engines; the journal has what they did, the resume does the rest.
        logging.shutdown()
        os._exit(0)
    journal.close()
    logging.shutdown()
    return 0


def main() -> None:
    """``python -m kubectl_rollout.agent``: the agent in the foreground (what a client spawns)."""
    sys.exit(run_agent(foreground=True))
