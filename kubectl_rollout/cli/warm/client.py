"""The console scripts' entry points: a command through the warm server when it may, else in this process.

``kubectl-rollout_plus`` and ``kubectl_complete-rollout_plus`` start here. An
eligible command (``eligibility``) whose warm server answers runs in a child
of that server, on this process's own stdin, stdout, stderr and working
directory; this process forwards its signals to the child and exits as the
child did. Anything else (no agent, no server yet, a refusal, a command not
on the list, ``ROLLOUT_PLUS_WARM=0``) imports the CLI and runs it here, as
before. Never both: once the server has accepted a command, its answer is final.

Standard library only until the in-process path is taken: this module's
whole point is what it does not import.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from types import FrameType
from typing import Any

from kubectl_rollout.cli.warm.eligibility import eligible, follows_a_job
from kubectl_rollout.cli.warm.wire import ENV_WARM, Reader, exit_code, identity, send, socket_path

#: signals this process passes on to the command's child (the terminal sends them to this process only)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH)
#: signals whose default action ends a process without a core dump: a child killed by one ends this process
#: the same way (its parent, a shell, sees what it would have seen); any other ends it with 128 + N
REPEATED = frozenset({signal.SIGHUP, signal.SIGINT, signal.SIGKILL, signal.SIGPIPE, signal.SIGTERM, signal.SIGALRM})
#: dispositions a child inherits from the caller when the caller ignores them (nohup, a background job)
INHERITED_IGNORES = (*FORWARDED, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGTSTP)


def main() -> None:
    """``kubectl-rollout_plus`` (or, linked, ``kubectl_complete-rollout_plus``)."""
    # What cli/completion.py's invoked_for_completion decides, without importing click for it.
    _run(completing=os.path.basename(sys.argv[0]).startswith("kubectl_complete-"))


def complete() -> None:
    """``kubectl_complete-rollout_plus``: kubectl's plugin completion."""
    _run(completing=True)


def _run(*, completing: bool) -> None:
    if _warm_allowed(os.environ) and eligible(sys.argv[1:], completing=completing):
        status = WarmCommand("complete" if completing else "main").run()
        if status is not None:
            _end_as(status)
    from kubectl_rollout.cli.main import complete as complete_in_process
    from kubectl_rollout.cli.main import main as main_in_process

    if completing:
        complete_in_process()
    else:
        main_in_process()


def _warm_allowed(environ: os._Environ[str]) -> bool:
    return environ.get(ENV_WARM, "").strip().lower() not in ("0", "false", "no", "off")


class WarmCommand:
    """One command run by the warm server: the request, the signals passed on, the child's status."""

    def __init__(self, entry: str) -> None:
        self.entry = entry
        self.child: int | None = None
        #: signals received before the child's pid was known: passed on once it is, or raised here on a fallback
        self.pending: list[int] = []
        self.previous: dict[int, Any] = {}

    def run(self) -> int | None:
        """The child's wait status; None when the server did not take the command (then run it in-process)."""
        request = self._request()
        if request is None:
            return None
        sock = self._connect()
        if sock is None:
            return None
        with sock:
            accepted, reader = self._hand_over(sock, request)
            if not accepted:
                self._restore_signals(raise_pending=True)
                return None
            return self._follow(sock, reader)

    def _request(self) -> dict[str, Any] | None:
        streams = (sys.stdin, sys.stdout, sys.stderr)
        if any(stream is None for stream in streams):
            return None  # a descriptor closed at start: in-process, as Python set it up
        umask = os.umask(0o022)
        os.umask(umask)
        ignored = [int(number) for number in INHERITED_IGNORES if signal.getsignal(number) == signal.SIG_IGN]
        return {
            "entry": self.entry,
            "argv": sys.argv,
            "env": dict(os.environ),
            "path": sys.path,
            "umask": umask,
            "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "ignored": ignored,
            "stdio": [_stream_settings(stream) for stream in streams],
            "identity": identity(),
            # a job followed until it ends (not bounded like a read): a stopping server lets it finish
            "follows": follows_a_job(sys.argv[1:]),
        }

    def _connect(self) -> socket.socket | None:
        try:
            path = socket_path(os.environ)
        except Exception:  # an unusable agent directory: the in-process path says what is wrong, if it needs it
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            if _peer_uid(sock) != os.getuid():
                raise OSError("the warm server's socket belongs to another user")
        except OSError:
            sock.close()
            return None
        return sock

    def _hand_over(self, sock: socket.socket, request: dict[str, Any]) -> tuple[bool, Reader]:
        """Send the request with our descriptors; whether the server accepted it (and knows the child's pid)."""
        reader = Reader()
        try:
            cwd = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return False, reader
        self._catch_signals()
        try:
            send(sock, request, [0, 1, 2, cwd])
            reply = reader.receive(sock)
        except (OSError, ValueError):
            return False, reader
        finally:
            os.close(cwd)
        if reply is None or reply.get("accepted") is not True or not isinstance(reply.get("pid"), int):
            return False, reader
        self.child = reply["pid"]
        for number in self.pending:
            self._forward(number)
        self.pending.clear()
        return True, reader

    def _follow(self, sock: socket.socket, reader: Reader) -> int:
        """Wait for the child's status, passing our signals on to it meanwhile."""
        try:
            final = reader.receive(sock)
        except (OSError, ValueError):
            final = None
        if final is None or not isinstance(final.get("wait_status"), int):
            # The server went away mid-command (killed): the child's fate is unknown, and nothing runs twice.
            sys.stderr.write(
                f"error: the warm command server stopped before command (pid {self.child}) ended; "
                f"its exit status is unknown. Run it again with {ENV_WARM}=0 to run it in this process\n"
            )
            return 1 << 8
        return int(final["wait_status"])

    # --- signals ---------------------------------------------------------------------------

    def _catch_signals(self) -> None:
        for number in FORWARDED:
            current = signal.getsignal(number)
            if current == signal.SIG_IGN:
                continue  # ignored by whoever started us: ignored by the child too (``ignored``)
            self.previous[number] = current
            signal.signal(number, self._on_signal)
        if signal.getsignal(signal.SIGTSTP) == signal.SIG_DFL:
            self.previous[signal.SIGTSTP] = signal.SIG_DFL
            signal.signal(signal.SIGTSTP, self._on_terminal_stop)

    def _on_terminal_stop(self, number: int, _frame: FrameType | None) -> None:
        """Ctrl-Z: the child stops with us and goes on when we do (``fg``/``bg``), as one process would.

        The terminal stops only its foreground process group, this client's; the child is in the server's.
        SIGSTOP, not SIGTSTP, for the child: a process group without a parent in this session (the server's)
        has its SIGTSTP discarded by the kernel.
        """
        child = self.child
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGSTOP)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)  # stops here; the shell's SIGCONT lets this call return
        signal.signal(number, self._on_terminal_stop)
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGCONT)

    def _on_signal(self, number: int, _frame: FrameType | None) -> None:
        if self.child is None:
            self.pending.append(number)
        else:
            self._forward(number)

    def _forward(self, number: int) -> None:
        assert self.child is not None
        with contextlib.suppress(ProcessLookupError):  # ended already: its status is on its way
            os.kill(self.child, number)

    def _restore_signals(self, *, raise_pending: bool) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)
        self.previous.clear()
        if raise_pending:
            for number in self.pending:
                signal.raise_signal(number)  # what would have happened here without the attempt
        self.pending.clear()


def _stream_settings(stream: Any) -> dict[str, Any]:
    """What Python chose for a standard stream at start (from this process's environment and descriptors)."""
    return {
        "encoding": stream.encoding,
        "errors": stream.errors,
        "line_buffering": stream.line_buffering,
        "write_through": stream.write_through,
    }


def _peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end (agent/transport/peer.py's reading, without its imports)."""
    import struct

    if sys.platform.startswith("linux"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", raw)[1])
    if sys.platform == "darwin":
        raw = sock.getsockopt(0, 0x001, struct.calcsize("IIh"))  # SOL_LOCAL, LOCAL_PEERCRED: struct xucred
        return int(struct.unpack_from("IIh", raw)[1])
    raise OSError(f"cannot tell a Unix socket peer's uid on {sys.platform}")


def _end_as(wait_status: int) -> None:
    """Exit as the child did: its code, or killed by the same signal (else 128 + N)."""
    code, number = exit_code(wait_status)
    if number is not None and number in REPEATED:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        if number != signal.SIGKILL:  # which has no handler to reset
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    # Without the interpreter's teardown (~9 ms here: this process is the last link of the command's chain). The
    # child wrote the output itself; this process has no thread and no atexit function of its own, so what Python's
    # exit would still do is flush our streams, which is done here; a stream that fails to flush gets Python's own
    # exit and its wording (exit 120).
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)
