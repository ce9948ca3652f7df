"""The agent's Unix-socket server: it serves the job host and the cluster queries to clients.

The loop owns the sockets. Each attached client has a cursor into the job's
events, and a writer that sends what it has not seen yet, waiting for the
socket to drain between chunks: a slow client falls behind on its own (its
backlog is coalesced when it lags far, see ``protocol.coalesce``), and a
client whose socket takes nothing for ``stall_seconds`` is dropped. Nothing a
client does slows a job or the other clients. The job host posts each job's
events onto this loop (``JobHost.start(post)``), where the streams watch them.

Exits after ``idle_seconds`` with no job and no client, never while a job runs.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import errno
import json
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Coroutine
from typing import Any

from kubectl_rollout import __version__
from kubectl_rollout.agent.agent_log import quote_controls
from kubectl_rollout.agent.allocator import release_freed_memory
from kubectl_rollout.agent.host.job_host import JobHost
from kubectl_rollout.agent.host.live_job import LiveJob
from kubectl_rollout.agent.paths import AgentPaths
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
    encode_reply,
    negotiate,
)
from kubectl_rollout.agent.settings import Settings
from kubectl_rollout.agent.transport.cluster_service import CLUSTER_METHODS, ClusterService, as_protocol_errors
from kubectl_rollout.agent.transport.connection import Connection
from kubectl_rollout.agent.transport.peer import peer_of
from kubectl_rollout.agent.transport.request_schema import validate
from kubectl_rollout.job_loop.cluster_queries.queries import connection_of, namespace_of

log = logging.getLogger("kubectl_rollout.agent")

#: events written to a client between two waits for its socket to drain
CHUNK = 64
#: what one client may have in flight: the kernel's send buffer and asyncio's, each bounded
SOCKET_BUFFER = 32 * 1024
WRITE_BUFFER_HIGH = 64 * 1024
#: jobs one connection may follow at once (``attach``); a client attaching should use a connection per job
MAX_STREAMS = 8
#: what a ``list`` answer may fill of the line limit (the rest: the envelope around the jobs)
LIST_BUDGET = MAX_LINE - 64 * 1024
#: accept() errors that mean "no descriptor or buffer free now": the loop retries by itself a second later
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class AgentServer:
    """Serves ``host`` on the socket of ``paths``."""

    def __init__(self, paths: AgentPaths, host: JobHost, settings: Settings) -> None:
        self.paths = paths
        self.host = host
        self.settings = settings
        self.clients: set[Connection] = set()
        #: how many connections follow each job now
        self.attached: collections.Counter[str] = collections.Counter()
        self.started_at = time.time()
        self._last_busy = time.monotonic()
        self._stopping: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._force_exit = False
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
        loop = self._loop

        def post(step: Callable[[], None]) -> None:  # from a job's thread: its events join on this loop
            loop.call_soon_threadsafe(step)

        self.host.start(post)
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
        if self.host.live:
            log.info(
                "stopping with %d job(s) running (%s); they resume when the agent starts again",
                len(self.host.live),
                ", ".join(self.host.live),
            )
            self._force_exit = True

    def _on_signal(self, signum: int) -> None:
        log.info("received %s; stopping", signal.Signals(signum).name)
        self.stop()

    def stop(self) -> None:
        if self._stopping is not None and not self._stopping.is_set():
            self.host.stop()
            self._stopping.set()
            if self.on_stop is not None:
                self.on_stop()

    def note_activity(self) -> None:
        """Something used the agent without a connection (a warm command): its idle clock starts again.

        Called from another thread: one float assignment, atomic under the GIL, read by ``_watch_idle``.
        """
        self._last_busy = time.monotonic()

    async def _watch_idle(self) -> None:
        released = time.monotonic()
        while True:
            await asyncio.sleep(min(1.0, self.settings.idle_seconds / 4))
            if self.host.live or self.clients:
                self._last_busy = time.monotonic()
            elif self.host.last_finished > released:
                # Nothing runs and nobody reads a job's lines any more: what the jobs held is garbage now, and
                # the allocator gives its pages back (agent/allocator.py), a few ms while nothing waits.
                release_freed_memory()
                released = time.monotonic()
            elif time.monotonic() - max(self._last_busy, self.host.last_finished) >= self.settings.idle_seconds:
                log.info("idle for %.0f s (no job, no client); exiting", self.settings.idle_seconds)
                self.stop()
                return

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
                result = await self.cluster.call(message.method, params, self.host.claims())
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
            job_id = self.host.submit(params["spec"], submitted_by=f"{connection.client} (pid {connection.pid})")
            return self._info(job_id).as_dict()
        if method == Method.LIST:
            return self._list(limit=params["limit"])
        if method == Method.SHOW:
            return self._info(params["job"]).as_dict()
        if method == Method.CANCEL:
            self.host.cancel(str(params["job"]))
            return self._info(params["job"]).as_dict()
        if method in (Method.PAUSE, Method.RESUME):
            self.host.set_paused(str(params["job"]), method == Method.PAUSE)
            return self._info(params["job"]).as_dict()
        if method == Method.SURGE:
            self.host.request_surge(str(params["job"]), params["nodes"], by=f"jobs surge ({connection.client})")
            return self._info(params["job"]).as_dict()
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
        for info in self.host.summaries(limit=limit):
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
            "running_jobs": sorted(self.host.live),
            "clients": len(self.clients),
            "idle_seconds": self.settings.idle_seconds,
        }

    def _info(self, job_id: Any) -> JobInfo:
        """The job as the journal has it, with the connections that follow it now."""
        return self._with_clients(self.host.info(str(job_id)))

    def _with_clients(self, info: JobInfo) -> JobInfo:
        return dataclasses.replace(info, attached=self.attached[info.id])

    def _abort(self, params: dict[str, Any]) -> dict[str, Any]:
        """Cancel the job that drives a managed workload's rollout: it stops after its current step."""
        with as_protocol_errors():
            connection = connection_of(params)
        job_id = self.host.abort_rollout(connection, namespace_of(params, connection), params["workload"])
        return self._info(job_id).as_dict()

    def _shutdown(self, *, force: bool) -> dict[str, Any]:
        running = self.host.may_stop(force=force)
        log.info("shutdown requested")
        assert self._loop is not None
        self._loop.call_soon(self.stop)  # after this answer is written
        return {"stopping": True, "running": running}

    # --- attach ----------------------------------------------------------------------------

    def _attach(self, params: dict[str, Any]) -> tuple[LiveJob, int, dict[str, Any]]:
        job = self.host.job_to_follow(str(params["job"]))
        from_seq: int = params["from_seq"]
        return job, from_seq, self._info(job.id).as_dict()

    async def _stream(
        self, connection: Connection, job: LiveJob, next_seq: int, *, follow: bool, coalesce_backlog: bool = False
    ) -> None:
        """Write the job's events from ``next_seq`` on; with ``coalesce_backlog``, those there are already are
        sent coalesced (a TUI's first paint of a 5000-pod drain needs each pod's last state, not its history)."""
        waiter = asyncio.Event()
        wake = waiter.set
        job.watchers.add(wake)
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
            job.watchers.discard(wake)
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
