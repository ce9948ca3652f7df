"""What a forked child does to become the caller's command, then run it as the in-process path would.

The warm server forks with everything imported; the caller's process had
its own descriptors, environment, working directory, umask, signal
dispositions, standard streams and ``sys.path``. The child takes each of
those from the request, then runs ``cli.main.main`` (or ``complete``) and lets
what it raises reach the interpreter's top level: ``SystemExit`` becomes the
exit code, an uncaught Ctrl-C ends the child by SIGINT, and a failed flush of
stdout at exit gives 120, all as in the caller's own process.

One step differs in how, not in what: the end. Tearing down an interpreter
that holds the kubernetes client takes longer (0.3 s) than the command, so
the child does what Python's exit does for a process (waits for its
threads, runs the atexit functions, flushes the standard streams, words an
uncaught exception, ends by SIGINT after an uncaught Ctrl-C) and then leaves
with ``os._exit``, without freeing every object one by one.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import locale
import os
import signal
import sys
from typing import Any

#: the dispositions a child takes from the request (ignored by the caller) or from Python's defaults
_RESET = (
    signal.SIGCHLD,
    signal.SIGHUP,
    signal.SIGTERM,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGTSTP,
    signal.SIGINT,
)
#: what Python itself ignores at start (and so would the in-process command)
_PYTHON_IGNORES = (signal.SIGPIPE, signal.SIGXFSZ)
#: blocked by the server from just before its fork until the child is the caller's command (``run``): the client
#: passes a Ctrl-C on the moment it learns the child's pid, and one delivered before ``_reset_signals`` would run
#: the server's handler in the child (which stops "the server": it unlinked the server's socket) and be lost to
#: the command. Blocked, it waits and reaches the command.
FORK_BLOCKED = frozenset({*_RESET, signal.SIGWINCH})


def become(request: dict[str, Any], fds: list[int]) -> None:
    """Turn this freshly forked process into the caller's command (``fds``: stdin, stdout, stderr, cwd)."""
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    os.fchdir(fds[3])
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    try:
        locale.setlocale(locale.LC_CTYPE, "")  # as Python sets it at start, from the caller's environment
    except locale.Error:
        locale.setlocale(locale.LC_CTYPE, "C")
    os.umask(request["umask"])
    nice = request.get("nice")
    if isinstance(nice, int) and nice > os.getpriority(os.PRIO_PROCESS, 0):
        os.setpriority(os.PRIO_PROCESS, 0, nice)  # `nice kubectl rollout-plus ...`; never above the server's
    sys.argv = list(request["argv"])
    sys.path[:] = request["path"]
    _reset_signals(set(request["ignored"]))
    _standard_streams(request["stdio"])
    if "random" in sys.modules:
        sys.modules["random"].seed()  # already re-seeded at fork by random itself; said here so nobody wonders


def run(entry: str) -> None:
    """Run the command and end this process as Python would end the in-process command (never returns)."""
    from kubectl_rollout.cli.main import complete, main

    interrupted = False
    try:
        # A signal that came since the fork is delivered here, as the command's (a Ctrl-C: KeyboardInterrupt).
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORK_BLOCKED)
        (complete if entry == "complete" else main)()
        code = 0
    except SystemExit as stop:
        code = exit_code_of(stop.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code, interrupted = 1, True
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    code = _finish(code)
    if interrupted:  # Python's own end after an uncaught KeyboardInterrupt (Py_Main: exit by SIGINT)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def exit_code_of(value: object) -> int:
    """The status ``sys.exit(value)`` gives at the top level (``_Py_HandleSystemExit``)."""
    if value is None:
        return 0
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            return -1 & 0xFF  # PyLong_AsLong fails: -1
        return value & 0xFF  # what exit(3) keeps of it
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{value}\n")
    return 1


def _finish(code: int) -> int:
    """Py_FinalizeEx's part that a process can see: threads joined, atexit run, standard streams flushed."""
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # what the interpreter calls at exit
    atexit._run_exitfuncs()
    failed = False
    for stream in (sys.stdout, sys.stderr):
        try:
            if not stream.closed:
                stream.flush()
        except Exception as err:
            failed = True
            if stream is sys.stdout:  # PyErr_WriteUnraisable(stdout); stderr's own failure is silent
                try:
                    sys.stderr.write(f"Exception ignored in: {stream!r}\n{type(err).__name__}: {err}\n")
                    sys.stderr.flush()
                except Exception:
                    pass
    return 120 if failed else code


def _reset_signals(ignored: set[int]) -> None:
    signal.set_wakeup_fd(-1)
    for number in _RESET:
        if number in ignored:
            signal.signal(number, signal.SIG_IGN)
        elif number == signal.SIGINT:
            signal.signal(number, signal.default_int_handler)
        else:
            signal.signal(number, signal.SIG_DFL)
    for number in _PYTHON_IGNORES:
        signal.signal(number, signal.SIG_IGN)


def _standard_streams(settings: list[dict[str, Any]]) -> None:
    """New sys.stdin/stdout/stderr on descriptors 0-2, made as Python made the caller's (create_stdio)."""
    streams = []
    names = ("<stdin>", "<stdout>", "<stderr>")
    for fd, (mode, setting) in enumerate(zip(("r", "w", "w"), settings, strict=True)):
        unbuffered = setting["write_through"] and mode == "w"
        # Not closed here: it is sys.stdin/stdout/stderr from now on (and never closes its descriptor).
        binary: Any = open(fd, mode + "b", buffering=0 if unbuffered else -1, closefd=False)  # noqa: SIM115
        raw = binary if unbuffered else binary.raw
        raw.name = names[fd]  # as create_stdio names it (in reprs: "Exception ignored in: <...'<stdout>'...>")
        stream = io.TextIOWrapper(
            binary,  # a raw FileIO when unbuffered, as Python's own
            encoding=setting["encoding"],
            errors=setting["errors"],
            newline="\n",
            line_buffering=setting["line_buffering"],
            write_through=setting["write_through"],
        )
        stream.mode = mode  # type: ignore[misc]  # as create_stdio sets it
        streams.append(stream)
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[misc]
