"""Talking to the agent: connect (starting it if needed), hello, then submit, list, show, attach, cancel,
and the cluster methods of ``cluster_calls`` (``run``).

Standard library and ``jobs`` only (the TUI imports this module).

Starting on demand, as tmux's ``client_connect`` does: when the socket is
missing or refuses, take the spawn lock (``flock``), try once more (another
client may have just started an agent), remove a stale socket if no agent
holds the pid lock, spawn ``python -m kubectl_rollout.agent`` detached, and
wait for it to answer. Twenty clients started at once end up with one agent.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import kubectl_rollout
from kubectl_rollout.agent.cluster_calls import Call
from kubectl_rollout.agent.errors import AgentError, AgentUnavailable
from kubectl_rollout.agent.paths import AgentPaths, agent_paths
from kubectl_rollout.agent.protocol import (
    MAX_LINE,
    OLDEST_ACCEPTED,
    PROTOCOL_VERSION,
    JobInfo,
    Method,
    Notice,
    Notification,
    ProtocolError,
    Request,
    Response,
    decode,
    encode,
)
from kubectl_rollout.agent.settings import seconds_from
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import JobSpec

#: how long a spawned agent may take to answer (it imports the kubernetes client first)
START_TIMEOUT = 20.0
#: how long a listening agent may take to answer hello: one that accepts and never answers (stopped, wedged)
#: must not hang every command that connects
HELLO_TIMEOUT = 10.0
#: seconds instead of HELLO_TIMEOUT (the tests of a wedged agent shorten it; a very slow machine may lengthen it)
ENV_HELLO_TIMEOUT = "ROLLOUT_PLUS_AGENT_HELLO_TIMEOUT"
#: sees every line sent (">") and received ("<"), for tests and debugging
Trace = Callable[[str, bytes], None]

T = TypeVar("T")

_NOT_LISTENING = (errno.ENOENT, errno.ECONNREFUSED, errno.ECONNRESET)


class AgentClient:
    """One connection to the agent, greeted. Not thread-safe: one caller at a time."""

    def __init__(
        self, sock: socket.socket, paths: AgentPaths, *, trace: Trace | None = None, name: str = "cli"
    ) -> None:
        self.paths = paths
        self._sock = sock
        self._file = sock.makefile("rb")
        self._trace = trace
        self._ids = itertools.count(1)
        self.name = name
        self.agent: dict[str, Any] = {}

    # --- plumbing --------------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        if self._trace is not None:
            self._trace(">", data)
        try:
            self._sock.sendall(data)
        except OSError as err:
            raise self._lost(err) from err

    def _receive(self) -> Response | Notification:
        try:
            line = self._file.readline(MAX_LINE)
        except OSError as err:
            raise self._lost(err) from err
        if self._trace is not None and line:
            self._trace("<", line)
        if not line:
            raise self._lost(None)
        if len(line) >= MAX_LINE and not line.endswith(b"\n"):
            # The rest of that line is still in the socket: nothing after it can be read in step again.
            self.close()
            raise AgentError(
                f"the agent sent a line longer than the protocol's limit ({MAX_LINE} bytes); this connection is "
                f"closed. An older agent answers `jobs list` with whole jobs: `{command('agent', 'stop')}` and run "
                "the command again to use this version's agent"
            )
        message = decode(line)
        if isinstance(message, Request):
            raise ProtocolError(-32600, f"the agent sent a request ({message.method}); clients answer none")
        return message

    def _lost(self, err: OSError | None) -> AgentError:
        why = f": {err.strerror or err}" if err is not None else ""
        return AgentError(
            f"lost the connection to the agent ({self.paths.socket}){why}; its jobs go on or resume when it starts "
            f"again: `{command('jobs', 'list')}`; its log: `{command('agent', 'logs')}`"
        )

    def call(self, method: Method, **params: Any) -> Any:
        ident = next(self._ids)
        self._send(encode(Request(ident, method.value, params)))
        while True:
            message = self._receive()
            if isinstance(message, Response) and message.id in (ident, None):
                if message.error is not None:
                    raise message.error
                return message.result

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
            self._sock.close()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- methods ---------------------------------------------------------------------------

    def hello(self) -> dict[str, Any]:
        self.agent = dict(self.call(Method.HELLO, protocol=PROTOCOL_VERSION, oldest=OLDEST_ACCEPTED, client=self.name))
        return self.agent

    def submit(self, spec: JobSpec) -> JobInfo:
        return JobInfo.from_dict(self.call(Method.SUBMIT, spec=spec.as_dict()))

    def jobs(self, *, limit: int = 100) -> list[JobInfo]:
        """The newest jobs, abridged (``JobInfo.abridged``; ``show`` has one whole); fewer than ``limit`` when
        they would not all fit in one line."""
        return [JobInfo.from_dict(item) for item in self.call(Method.LIST, limit=limit)["jobs"]]

    def show(self, job_id: str) -> JobInfo:
        return JobInfo.from_dict(self.call(Method.SHOW, job=job_id))

    def cancel(self, job_id: str) -> JobInfo:
        return JobInfo.from_dict(self.call(Method.CANCEL, job=job_id))

    def pause(self, job_id: str) -> JobInfo:
        return JobInfo.from_dict(self.call(Method.PAUSE, job=job_id))

    def resume(self, job_id: str) -> JobInfo:
        return JobInfo.from_dict(self.call(Method.RESUME, job=job_id))

    def shutdown(self, *, force: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = self.call(Method.SHUTDOWN, force=force)
        return result

    def run(self, call: Call[T]) -> T:
        """One of ``cluster_calls``' requests (``nodes``, ``plan``, ``cordon``, ``workloads``, ...), its answer read."""
        return call.parse(self.call(call.method, **call.params))

    def attach(self, job_id: str, *, from_seq: int = 1, follow: bool = True) -> Iterator[Envelope]:
        """The job's events from ``from_seq`` on, then (``follow``) live until its last.

        Use the connection for nothing else while iterating.
        """
        self.call(Method.ATTACH, job=job_id, from_seq=from_seq, follow=follow)
        while True:
            message = self._receive()
            if not isinstance(message, Notification):
                continue
            if message.method == Notice.EVENT:
                yield Envelope.from_dict(message.params)
            elif message.method == Notice.END:
                return


# --- connecting, and starting the agent ----------------------------------------------------------


def hello_timeout(environ: Mapping[str, str] = os.environ) -> float:
    """HELLO_TIMEOUT, or the positive number of seconds ENV_HELLO_TIMEOUT gives (at most 30 times it)."""
    return seconds_from(environ, ENV_HELLO_TIMEOUT, HELLO_TIMEOUT)


def _open(paths: AgentPaths, *, trace: Trace | None, name: str, io_timeout: float | None = None) -> AgentClient:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound = hello_timeout()
    sock.settimeout(bound if io_timeout is None else min(io_timeout, bound))
    try:
        sock.connect(str(paths.socket))
    except OSError:
        sock.close()
        raise
    client = AgentClient(sock, paths, trace=trace, name=name)
    try:
        client.hello()
        sock.settimeout(io_timeout)  # an attached stream may wait long between events: no bound unless asked
    except ProtocolError:
        client.close()
        raise
    except AgentError as err:
        client.close()
        if isinstance(err.__cause__, TimeoutError):
            # Listening, and silent: starting another beside it would fail on its pid lock. Said at once.
            raise AgentUnavailable(
                f"the agent at {paths.socket} accepted the connection but did not answer within "
                f"{bound:g} s (stopped or stuck); `{command('agent', 'status')}` shows it, "
                f"`{command('agent', 'stop', '--force')}` ends it"
            ) from err
        # Accepted, then reset: the agent is exiting (a killed agent's last thread still held the socket).
        raise ConnectionResetError(errno.ECONNRESET, "the agent hung up during hello") from err
    except BaseException:
        client.close()
        raise
    return client


def _not_listening(err: OSError) -> bool:
    return err.errno in _NOT_LISTENING


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _agent_alive(paths: AgentPaths) -> bool:
    """Whether an agent holds the pid lock (running, perhaps not listening yet)."""
    try:
        fd = os.open(paths.pid_file, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _spawn(paths: AgentPaths, environ: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
    env = dict(os.environ if environ is None else environ)
    # Where this copy of the plugin lives (a site-packages, a checkout, a zipapp): the agent runs the same code.
    home = str(Path(kubectl_rollout.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (home, env.get("PYTHONPATH", "")) if p)
    fd = os.open(paths.start_errors, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "wb") as errors:
        return subprocess.Popen(
            [sys.executable, "-m", "kubectl_rollout.agent"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=env,
            cwd="/",
            start_new_session=True,  # no terminal's Ctrl-C or hangup reaches it
            close_fds=True,
        )


def connect(
    paths: AgentPaths | None = None,
    *,
    start: bool = True,
    environ: Mapping[str, str] | None = None,
    trace: Trace | None = None,
    name: str = "cli",
    timeout: float = START_TIMEOUT,
    io_timeout: float | None = None,
) -> AgentClient:
    """A greeted connection to this user's agent, started first if ``start`` and none answers.

    ``io_timeout``: the longest any read or write on the connection may wait (``agent stop`` and ``status``
    must not hang on an agent that accepts and never answers). Raises AgentUnavailable when there is no agent
    (``start=False``) or it could not be started, and ProtocolError when it speaks a protocol this client does
    not accept.
    """
    paths = (paths or agent_paths(environ)).ensure()
    try:
        return _open(paths, trace=trace, name=name, io_timeout=io_timeout)
    except OSError as err:
        if not _not_listening(err):
            raise AgentUnavailable(f"cannot reach the agent at {paths.socket}: {err.strerror or err}") from err
        if not start:
            raise AgentUnavailable(
                f"no agent is running (no answer on {paths.socket}); `{command('agent', 'start')}` starts one, "
                "and so does any job command run in a terminal"
            ) from err
    with _locked(paths.spawn_lock):
        try:
            return _open(paths, trace=trace, name=name)  # another client may have started it meanwhile
        except OSError as err:
            if not _not_listening(err):
                raise AgentUnavailable(f"cannot reach the agent at {paths.socket}: {err.strerror or err}") from err
        if not _agent_alive(paths):
            paths.socket.unlink(missing_ok=True)  # stale: left by an agent that died
        process = _spawn(paths, environ)
        deadline = time.monotonic() + timeout
        while True:
            try:
                return _open(paths, trace=trace, name=name)
            except OSError as err:
                if not _not_listening(err):
                    raise AgentUnavailable(f"cannot reach the agent at {paths.socket}: {err.strerror or err}") from err
            code = process.poll()
            if code is not None and not _agent_alive(paths):
                said = paths.start_errors.read_text(errors="replace").strip().splitlines()
                why = said[-1] if said else f"it exited with code {code}"
                raise AgentUnavailable(f"the agent did not start: {why} (its log: {paths.log})")
            if time.monotonic() > deadline:
                raise AgentUnavailable(
                    f"the agent did not answer on {paths.socket} within {timeout:.0f} s of starting; see its log "
                    f"{paths.log}"
                )
            time.sleep(0.05)


def agent_running(paths: AgentPaths | None = None) -> bool:
    return _agent_alive(paths or agent_paths())


def agent_pid(paths: AgentPaths) -> int | None:
    """The pid of the process that holds the agent's pid lock (it wrote its pid after taking it); None when no
    process holds it. What ``agent stop --force`` ends when the agent no longer answers."""
    try:
        fd = os.open(paths.pid_file, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 32).decode(errors="replace").strip()
            return int(text) if text.isdigit() else None
        return None
    finally:
        os.close(fd)
