"""The warm command server: one process with the CLI imported, forking a child per command.

Started by the agent (``python -m kubectl_rollout.cli.warm SOCKET``, by
module path: the agent imports no CLI), with a pipe from the agent as its
stdin; it ends when that pipe closes (the agent stopped, or died) or on
SIGTERM, after its running commands have ended. Single-threaded, so that a
fork copies a process in a known state: one loop (``selectors``) over the
listening socket, the connections, the agent's pipe and the SIGCHLD wake-up.

Per connection: the peer's uid is checked (SO_PEERCRED), the request is read
with its descriptors (``wire``), the code it expects is compared with the
code imported here (``wire.identity``: a refusal makes the client run the
command itself), then a child is forked and its pid sent. The child becomes
the command (``child``); the server closes its copies of the caller's
descriptors at once, reaps the child on SIGCHLD and sends its wait status. A
client that goes away first has its child killed: nothing of a command
outlives the process that asked for it.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib
import os
import selectors
import signal
import socket
import stat
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from kubectl_rollout.cli.warm import child
from kubectl_rollout.cli.warm.wire import FD_COUNT, Reader, identity, send

#: what the eligible commands import (beyond cli.main), imported once here so that no child pays for it
PRELOAD = (
    "kubectl_rollout.cli.main",
    "kubectl_rollout.cli.rollout_commands",
    "kubectl_rollout.cli.drain_commands",
    "kubectl_rollout.cli.agent_commands",
    "kubectl_rollout.cli.job_commands",
    "kubectl_rollout.cli.drain_output",
    "kubectl_rollout.cli.text_output",
    "kubectl_rollout.kube.cluster_access",
    "kubectl_rollout.kube.version_probe",
    "kubectl_rollout.rollout.operations",
    "kubectl_rollout.agent.client",
    "kubectl_rollout.job_loop.loop",
    "kubectl_rollout.drain.job",  # drain --plan, in-process
    "kubectl_rollout.drain.cordon",
    "concurrent.futures.thread",
    "kubernetes.client",
    "kubernetes.config",
    "yaml",
    "urllib3",
)
#: how long a stopping server lets running reads finish before it kills them (a followed job ends with its agent)
STOP_GRACE = 30.0
#: a connection that has not sent its whole request by then is dropped
REQUEST_SECONDS = 5.0


@dataclass
class Pending:
    """A connection whose request is still arriving."""

    since: float
    reader: Reader = field(default_factory=Reader)


@dataclass
class Running:
    """A connection whose command runs in child ``pid``."""

    pid: int
    #: a job command following its job in the agent: not killed when a stopping server's grace ends
    follows: bool = False
    #: False once the client has gone (its child was killed; nobody to tell its status)
    connected: bool = True


class WarmServer:
    def __init__(self, path: str) -> None:
        self.path = path
        self.identity = identity()
        self.selector = selectors.DefaultSelector()
        self.pending: dict[socket.socket, Pending] = {}
        self.running: dict[socket.socket, Running] = {}
        self.stopping_since: float | None = None
        #: whether stdout is the agent's pipe, told of each command taken (not when run by hand or by a test)
        self.agent_pipe = False
        self.wake_r, self.wake_w = socket.socketpair()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    # --- life cycle --------------------------------------------------------------------------

    def serve(self) -> tuple[dict[str, Any], list[int]]:
        """Serve until stopped (then exit); in a forked child, return its request and descriptors."""
        self._listen()
        self.agent_pipe = _agent_pipe_on_stdout()
        for sock in (self.wake_r, self.wake_w):
            sock.setblocking(False)
        signal.set_wakeup_fd(self.wake_w.fileno(), warn_on_full_buffer=False)
        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(number, self._on_signal)
        self.selector.register(self.listener, selectors.EVENT_READ, "listener")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.selector.register(0, selectors.EVENT_READ, "agent")
        _log(f"pid {os.getpid()} listening on {self.path}")
        if self.agent_pipe:
            # The agent's idle clock starts again once commands can be answered warm: a start slowed by a loaded
            # machine does not use up the idle time the first command has to reach it.
            _tell_agent_in_use()
        while self.stopping_since is None or self.running:
            timeout = 1.0
            for key, _events in self.selector.select(timeout):
                if key.fd not in self.selector.get_map():
                    continue  # closed by an event before it in this batch (the listener, when stopping)
                became = self._handle(key.data, key.fileobj)
                if became is not None:
                    return became
            self._expire()
        _log("stopped")
        sys.exit(0)

    def _listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a killed server's: the agent starts one server, and it holds the pid lock
        umask = os.umask(0o177)  # born 0600
        try:
            self.listener.bind(self.path)
        finally:
            os.umask(umask)
        os.chmod(self.path, 0o600)
        self.listener.listen(64)
        self.listener.setblocking(False)

    def _on_signal(self, number: int, _frame: Any) -> None:
        if number in (signal.SIGTERM, signal.SIGINT):
            self._stop(f"received {signal.Signals(number).name}")
        # SIGCHLD: the wake-up descriptor has woken the loop, which reaps

    def _stop(self, why: str) -> None:
        if self.stopping_since is not None:
            return
        _log(f"stopping ({why}); {len(self.running)} command(s) running")
        self.stopping_since = time.monotonic()
        self.selector.unregister(self.listener)
        self.listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(0)
        for sock in list(self.pending):
            self._drop(sock)

    def _expire(self) -> None:
        now = time.monotonic()
        for sock, pending in list(self.pending.items()):
            if now - pending.since > REQUEST_SECONDS:
                self._drop(sock)
        if self.stopping_since is not None and now - self.stopping_since > STOP_GRACE:
            for running in self.running.values():
                if not running.follows:
                    _kill(running.pid)

    # --- events ------------------------------------------------------------------------------

    def _handle(self, what: str, fileobj: Any) -> tuple[dict[str, Any], list[int]] | None:
        if what == "listener":
            self._accept()
        elif what == "wake":
            with contextlib.suppress(BlockingIOError):
                while self.wake_r.recv(512):
                    pass
            self._reap()
        elif what == "agent":
            try:
                data = os.read(0, 512)
            except OSError:
                data = b""
            if not data:
                self._stop("the agent has gone")
        elif what == "request":
            return self._read_request(fileobj)
        elif what == "running":
            self._client_gone(fileobj)
        return None

    def _accept(self) -> None:
        try:
            sock, _address = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as err:
            if err.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                _log(f"accept failed: {err}")
                return
            raise
        try:
            uid, pid = _peer(sock)
        except OSError as err:
            _log(f"refused a connection: cannot tell who it is from ({err})")
            sock.close()
            return
        if uid != os.getuid():
            _log(f"refused a connection from uid {uid} (pid {pid}): this server serves uid {os.getuid()} only")
            sock.close()
            return
        sock.setblocking(False)
        self.pending[sock] = Pending(since=time.monotonic())
        self.selector.register(sock, selectors.EVENT_READ, "request")

    def _read_request(self, sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
        pending = self.pending[sock]
        try:
            data, fds, _flags, _address = socket.recv_fds(sock, 64 * 1024, FD_COUNT)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            self._drop(sock)
            return None
        pending.reader.fds.extend(fds)
        if not data:
            self._drop(sock)
            return None
        try:
            request = pending.reader.feed(data)
        except ValueError as err:
            _log(f"dropped a connection: {err}")
            self._drop(sock)
            return None
        if request is None:
            return None
        del self.pending[sock]
        self.selector.unregister(sock)
        return self._start(sock, request, pending.reader.fds)

    def _start(
        self, sock: socket.socket, request: dict[str, Any], fds: list[int]
    ) -> tuple[dict[str, Any], list[int]] | None:
        refusal = self._refusal(request, fds)
        if refusal is not None:
            _close_fds(fds)
            with contextlib.suppress(OSError):
                sock.setblocking(True)
                sock.settimeout(1.0)
                send(sock, {"accepted": False, "reason": refusal})
            sock.close()
            return None
        # Until the child is the command (``child.FORK_BLOCKED``); the server's own are delivered after the fork.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, child.FORK_BLOCKED)
        pid = os.fork()
        if pid == 0:
            try:
                self._forget_in_child(sock)
                return request, fds
            except BaseException:
                os._exit(70)  # never back into the server's loop
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _close_fds(fds)  # the caller's terminal and pipes are the child's alone now
        self.running[sock] = Running(pid=pid, follows=request.get("follows") is True)
        try:
            sock.setblocking(True)
            sock.settimeout(1.0)
            send(sock, {"accepted": True, "pid": pid})
            sock.setblocking(False)
        except OSError:
            self._client_gone(sock)
            return None
        self.selector.register(sock, selectors.EVENT_READ, "running")
        if self.agent_pipe:
            _tell_agent_in_use()
        return None

    def _refusal(self, request: dict[str, Any], fds: list[int]) -> str | None:
        if len(fds) != FD_COUNT:
            return f"{len(fds)} descriptors, not {FD_COUNT}"
        if self.stopping_since is not None:
            return "stopping"
        if request.get("identity") != self.identity:
            return "the client runs other code than this server imported"
        expected = {"entry": str, "argv": list, "env": dict, "path": list, "umask": int, "ignored": list, "stdio": list}
        for name, kind in expected.items():
            if not isinstance(request.get(name), kind):
                return f"no {name} in the request"
        if len(request["stdio"]) != 3:
            return "not three standard streams"
        return None

    def _forget_in_child(self, mine: socket.socket) -> None:
        """In a child: close everything of the server's (by its objects, so that nothing closes a reused number)."""
        signal.set_wakeup_fd(-1)
        self.selector.close()
        for sock in (self.listener, self.wake_r, self.wake_w, mine, *self.pending, *self.running):
            sock.close()
        for pending in self.pending.values():
            _close_fds(pending.reader.fds)
        self.pending.clear()
        self.running.clear()

    def _client_gone(self, sock: socket.socket) -> None:
        running = self.running[sock]
        if running.connected:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(sock)
            running.connected = False
            _kill(running.pid)  # the process that asked for the command is gone: so is the command
            sock.close()

    def _reap(self) -> None:
        by_pid = {running.pid: sock for sock, running in self.running.items()}
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            sock = by_pid.get(pid)
            if sock is None:
                continue
            running = self.running.pop(sock)
            if running.connected:
                with contextlib.suppress(KeyError, ValueError):
                    self.selector.unregister(sock)
                with contextlib.suppress(OSError):
                    sock.setblocking(True)
                    sock.settimeout(1.0)
                    send(sock, {"wait_status": status})
                sock.close()

    def _drop(self, sock: socket.socket) -> None:
        pending = self.pending.pop(sock, None)
        if pending is not None:
            _close_fds(pending.reader.fds)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(sock)
        sock.close()


def _agent_pipe_on_stdout() -> bool:
    """Whether stdout is a pipe (the agent's); made non-blocking, so that telling the agent never waits."""
    try:
        if not stat.S_ISFIFO(os.fstat(1).st_mode):
            return False
        os.set_blocking(1, False)
    except OSError:
        return False
    return True


def _tell_agent_in_use() -> None:
    """One byte on stdout, the agent's pipe: a command taken is activity for its idle clock."""
    with contextlib.suppress(OSError):  # a full pipe (the agent reads it) or the agent gone: nothing to tell
        os.write(1, b".")


def _peer(sock: socket.socket) -> tuple[int, int]:
    from kubectl_rollout.agent.transport.peer import peer_of

    peer = peer_of(sock)
    return peer.uid, peer.pid


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


def _log(message: str) -> None:
    """One line on stderr, which the agent copies into its log."""
    sys.stderr.write(f"warm command server: {message}\n")
    sys.stderr.flush()


def preload() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    # Out of the collector's sight: a child's collections neither scan nor touch (copy) the server's objects.
    gc.collect()
    gc.freeze()


def main() -> None:
    """``python -m kubectl_rollout.cli.warm SOCKET``: serve until the agent goes; in each child, the command."""
    if len(sys.argv) != 2:
        sys.exit("usage: python -m kubectl_rollout.cli.warm SOCKET (the agent starts it)")
    os.umask(0o077)
    preload()
    request, fds = WarmServer(sys.argv[1]).serve()
    child.become(request, fds)
    child.run(request["entry"])
