"""What the thin client and the warm server say to each other, and where: standard library only.

One connection per command, on ``commands.sock`` beside the agent's socket
(the same private directory, see ``agent/paths.py``). Each message is a
4-byte big-endian length and that many bytes of JSON; file descriptors ride
with a message as SCM_RIGHTS.

1. client → server: the request (``Request``: argv, environment, stdio
   settings, umask, which entry point, the code it expects) with four
   descriptors: stdin, stdout, stderr and the working directory.
2. server → client: ``{"accepted": false, "reason": ...}`` (the client runs
   the command itself), or ``{"accepted": true, "pid": N}``: from here on
   the server's answer is final, and the client forwards its signals to N.
3. server → client: ``{"wait_status": S}``, the child's status as waitpid
   gave it, once the child has ended and been reaped.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from typing import Any

#: the socket's name in the agent's runtime directory
SOCKET_NAME = "commands.sock"
#: ROLLOUT_PLUS_WARM=0 runs every command in-process (the warm server is not even asked)
ENV_WARM = "ROLLOUT_PLUS_WARM"
#: a request is argv and an environment: bounded well below anything a shell passes
MAX_MESSAGE = 4 * 1024 * 1024
#: stdin, stdout, stderr, the working directory
FD_COUNT = 4
_LENGTH = struct.Struct(">I")
#: what the agent's paths.py calls its directories (APP, ENV_DIR): repeated here so that the client needs no pathlib
_APP = "kubectl-rollout-plus"
_ENV_DIR = "ROLLOUT_PLUS_AGENT_DIR"


def socket_path(environ: dict[str, str] | os._Environ[str]) -> str:
    """Where the warm server listens: beside ``agent.sock``, in ``agent_paths(environ).runtime_dir``."""
    override = environ.get(_ENV_DIR)
    if override:
        return os.path.join(os.path.abspath(os.path.expanduser(override)), "run", SOCKET_NAME)
    session = environ.get("XDG_RUNTIME_DIR")
    if session and sys.platform.startswith("linux"):
        return os.path.join(session, _APP, SOCKET_NAME)
    from kubectl_rollout.agent.paths import agent_paths  # the rarer cases (platformdirs): paths.py decides

    return str(agent_paths(environ).runtime_dir / SOCKET_NAME)


def identity() -> dict[str, Any]:
    """The code and interpreter a command would run on: a server whose identity differs refuses the request.

    The package's version and folder (another install, an upgrade), the newest source file's time (an edited
    checkout), and what the interpreter fixed at its start (its version, UTF-8 mode, -W options).
    """
    import kubectl_rollout

    home = os.path.dirname(os.path.realpath(kubectl_rollout.__file__))
    return {
        "version": kubectl_rollout.__version__,
        "home": home,
        "sources": newest_source(home),
        "python": sys.version,
        "utf8_mode": sys.flags.utf8_mode,
        "warnoptions": list(sys.warnoptions),
    }


def newest_source(home: str) -> int:
    """The newest modification time (ns) of a ``.py`` file under ``home``.

    Files only: a folder's time changes when Python writes its ``__pycache__``, which is not a change of code.
    """
    newest = 0
    pending = [home]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    newest = max(newest, entry.stat().st_mtime_ns)
    return newest


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    if len(body) > MAX_MESSAGE:
        raise ValueError(f"message of {len(body)} bytes, more than {MAX_MESSAGE}")
    return _LENGTH.pack(len(body)) + body


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """Send ``message`` whole (the descriptors with its first bytes)."""
    data = encode(message)
    sent = socket.send_fds(sock, [data], fds) if fds else sock.send(data)
    if sent < len(data):
        sock.sendall(data[sent:])


class Reader:
    """Reads length-prefixed messages from a socket, blocking or as bytes arrive (``feed``), with their fds."""

    def __init__(self) -> None:
        self.buffer = b""
        self.fds: list[int] = []

    def feed(self, data: bytes) -> dict[str, Any] | None:
        """Add ``data``; the next whole message, or None until it is whole. ValueError: not a message."""
        self.buffer += data
        if len(self.buffer) < _LENGTH.size:
            return None
        (length,) = _LENGTH.unpack_from(self.buffer)
        if length > MAX_MESSAGE:
            raise ValueError(f"a message of {length} bytes, more than {MAX_MESSAGE}")
        end = _LENGTH.size + length
        if len(self.buffer) < end:
            return None
        body, self.buffer = self.buffer[_LENGTH.size : end], self.buffer[end:]
        message = json.loads(body)
        if not isinstance(message, dict):
            raise ValueError("a message that is not a JSON object")
        return message

    def receive(self, sock: socket.socket) -> dict[str, Any] | None:
        """The next message, blocking; None when the peer closed first."""
        while True:
            message = self.feed(b"")
            if message is not None:
                return message
            data, fds, _flags, _address = socket.recv_fds(sock, 64 * 1024, FD_COUNT)
            self.fds.extend(fds)
            if not data:
                return None
            message = self.feed(data)
            if message is not None:
                return message


def exit_code(wait_status: int) -> tuple[int, int | None]:
    """The exit code a shell gives a process that ended with ``wait_status``, and the signal that killed it.

    An exit: its code. Killed by signal N: 128 + N (as a shell reports it), and N, so that the client can end
    by the same signal, as the in-process command would have (Ctrl-C reaching Python's top level, say).
    """
    if os.WIFEXITED(wait_status):
        return os.WEXITSTATUS(wait_status), None
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        return 128 + number, number
    return 1, None  # stopped or continued: waitpid without WUNTRACED never reports these
