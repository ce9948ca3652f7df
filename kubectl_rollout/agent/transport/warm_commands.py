"""The warm command server beside the agent: started with it, stopped with it.

The server (``kubectl_rollout.cli.warm``) runs CLI code, and the agent imports
no CLI, so it is started here by module path, as its own process. Its stdin is
a pipe from the agent: when the agent exits, however it exits (a stop, a
crash, SIGKILL), the pipe closes and the server ends by itself once its
running commands have. What it writes on stderr (one line per start, stop or
refused peer) goes into the agent's log; on stdout it writes one byte per
command it takes, and each is activity for the agent's idle clock: an agent
whose warm server answers the user's commands is in use, and should not exit
and leave the next command to a cold start.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import kubectl_rollout
from kubectl_rollout.agent.agent_log import quote_controls
from kubectl_rollout.agent.paths import AgentPaths

log = logging.getLogger("kubectl_rollout.agent")

#: the server's module; named, not imported (the contract agent-has-no-front-end)
MODULE = "kubectl_rollout.cli.warm"
#: ROLLOUT_PLUS_WARM=0 in the agent's environment: no warm server (every command in-process)
ENV_WARM = "ROLLOUT_PLUS_WARM"


class WarmCommands:
    """The warm command server process of one agent."""

    def __init__(self, process: subprocess.Popen[bytes], on_command: Callable[[], None]) -> None:
        self.process = process
        self.on_command = on_command
        self._reader = threading.Thread(target=self._copy_stderr, name="warm commands log", daemon=True)
        self._reader.start()
        self._counter = threading.Thread(target=self._count_commands, name="warm commands use", daemon=True)
        self._counter.start()

    @classmethod
    def start(cls, paths: AgentPaths, *, on_command: Callable[[], None]) -> WarmCommands | None:
        """Start the server; ``on_command`` is called (from a thread of this class) for each command it takes."""
        if os.environ.get(ENV_WARM, "").strip().lower() in ("0", "false", "no", "off"):
            return None
        env = dict(os.environ)
        home = str(Path(kubectl_rollout.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (home, env.get("PYTHONPATH", "")) if p)
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", MODULE, str(paths.commands_socket)],
                stdin=subprocess.PIPE,  # its end of the agent's life
                stdout=subprocess.PIPE,  # a byte per command taken
                stderr=subprocess.PIPE,
                env=env,
                cwd="/",
                close_fds=True,
            )
        except OSError as err:
            log.warning("no warm command server (commands run in their own process): %s", err)
            return None
        return cls(process, on_command)

    def _copy_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            log.info("%s", quote_controls(line.decode(errors="replace").rstrip("\n"))[:1000])

    def _count_commands(self) -> None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while os.read(fd, 64):
            self.on_command()

    def stop(self, timeout: float = 2.0) -> None:
        """Close its pipe: it stops accepting and ends once its running commands have."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.info("the warm command server (pid %d) still runs commands; it ends after them", self.process.pid)
