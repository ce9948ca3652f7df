"""Starting the agent on demand, and asking whether one runs: the spawn lock, the pid lock, the process.

As tmux's ``client_connect`` does: a client that finds no agent takes the
spawn lock (``flock``), tries once more (another client may have just started
one), removes a stale socket if no agent holds the pid lock, spawns ``python
-m kubectl_rollout.agent`` detached, and waits for it to answer
(``core.connect``). Twenty clients started at once end up with one agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import kubectl_rollout
from kubectl_rollout.agent.paths import AgentPaths, agent_paths


@contextlib.asynccontextmanager
async def spawn_lock(path: Path) -> AsyncIterator[None]:
    """Hold ``path``'s flock. While another client starts the agent, the wait blocks a worker thread, not the
    loop (a TUI's), and ends when the kernel hands the lock over."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def agent_alive(paths: AgentPaths) -> bool:
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


def spawn(paths: AgentPaths, environ: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
    env = dict(os.environ if environ is None else environ)
    # Where this copy of the plugin lives (a site-packages, a checkout, a zipapp): the agent runs the same code.
    home = str(Path(kubectl_rollout.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (home, env.get("PYTHONPATH", "")) if p)
    # A long-lived process whose jobs come and go: with Python's small-object allocator, the few objects that
    # outlive a job pin the 1 MiB arenas its pods filled, and a 5000-pod drain left ~50 MiB that never came back.
    # With malloc alone, the agent's malloc_trim after each job returns them (agent/allocator.py). A user's own
    # PYTHONMALLOC (debug, say) wins.
    env.setdefault("PYTHONMALLOC", "malloc")
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


def agent_running(paths: AgentPaths | None = None) -> bool:
    return agent_alive(paths or agent_paths())


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
