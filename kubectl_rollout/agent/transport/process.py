"""The agent process: one per user (the pid lock), its log, its stop watchdog, and ``main``.

``run_agent`` holds the pid lock for the process's life, opens the log
(rotated; nothing secret is logged) and the journal, builds the job host and
serves it (``server.AgentServer``) until it stops. A stop always stops: the
journal has what the jobs did, and they resume at the next start.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import logging
import logging.handlers
import os
import socket
import sys
import threading
import time

from kubectl_rollout.agent.agent_log import OneLineFormatter, Throttle, capture_stderr
from kubectl_rollout.agent.allocator import limit_arenas
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.host.job_host import JobHost
from kubectl_rollout.agent.host.journal import Journal
from kubectl_rollout.agent.paths import AgentPaths, agent_paths
from kubectl_rollout.agent.settings import Settings
from kubectl_rollout.agent.transport.server import AgentServer
from kubectl_rollout.agent.transport.warm_commands import WarmCommands
from kubectl_rollout.jobs.next_steps import command

log = logging.getLogger("kubectl_rollout.agent")

#: how long a starting agent waits for the pid lock of one that is still exiting
PID_LOCK_WAIT = 3.0
#: how long a stopping agent may take before it exits anyway (a worker thread stuck in a cluster call)
STOP_GRACE = 10.0


def lease_holder_for(paths: AgentPaths) -> str:
    """The agent's Lease holder identity: the same for every run of this user's agent with this state directory
    on this machine (so that a restarted agent takes back its Leases at once), different for any other."""
    digest = hashlib.sha256(str(paths.state_dir).encode()).hexdigest()[:8]
    return f"{socket.gethostname()}/rollout-plus-agent/uid-{os.getuid()}/{digest}"


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
    limit_arenas()  # before any thread: a long-lived process, its threads mostly waiting on the network
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
    host = JobHost(journal, settings, lease_holder=lease_holder_for(paths))
    agent = AgentServer(paths, host, settings)
    agent.on_stop = lambda: _exit_after(STOP_GRACE)
    # Beside the agent for its whole life; it ends by itself when this process does, however that happens.
    warm = WarmCommands.start(paths, on_command=agent.note_activity)
    try:
        asyncio.run(agent.serve())
    except Exception:
        log.exception("the agent failed; jobs it ran resume when it starts again")
        logging.shutdown()
        os._exit(1)
    if warm is not None:
        warm.stop()
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
