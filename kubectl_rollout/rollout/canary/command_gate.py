"""Running a command gate: a local command whose exit code decides whether the canary goes on.

The command runs with ``sh -c`` on the driver's machine, with the workload,
its namespace, the revision and the step in its environment. It runs on a
thread of its own, so that the driver keeps its Lease and its watches while it
waits. On Linux the command is killed when that thread's process dies
(``PR_SET_PDEATHSIG``): a driver that is SIGKILLed leaves no gate running
behind it, and the next driver runs the gate again from the start; a gate that
finished has its result on the record and is never run again.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping

from kubectl_rollout.rollout.canary.gate_thread import GateOutcome, GateThread

#: a gate's command gets this long, then it is killed and counts as failed
GATE_TIMEOUT_SECONDS = 600.0
#: the output kept for the record and the events: its last characters
OUTPUT_KEPT = 2000
_PR_SET_PDEATHSIG = 1


def gate_environment(
    *, workload: str, namespace: str, revision: int, step: int, steps: int, canary: str, stable: str
) -> dict[str, str]:
    """What a gate's command learns from its environment (steps counted from 1)."""
    return {
        "ROLLOUT_PLUS_WORKLOAD": workload,
        "ROLLOUT_PLUS_NAMESPACE": namespace,
        "ROLLOUT_PLUS_REVISION": str(revision),
        "ROLLOUT_PLUS_STEP": str(step),
        "ROLLOUT_PLUS_STEPS": str(steps),
        "ROLLOUT_PLUS_CANARY_REPLICASET": canary,
        "ROLLOUT_PLUS_STABLE_REPLICASET": stable,
    }


def _die_with_parent() -> Callable[[], None] | None:
    """What the gate's child runs before its command: die with the driver's process.

    The death signal only covers a parent that dies after it is set: a driver SIGKILLed between the fork and
    the ``prctl`` (a loaded machine makes that window tens of milliseconds) left the command running, and the
    next driver ran the gate a second time beside it. So the child checks, once the signal is set, that its
    parent is still the process that forked it, and ends at once if not.
    """
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    prctl = libc.prctl
    driver = os.getpid()

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != driver:
            os._exit(1)  # the driver died before the signal was set: nobody waits for this gate

    return set_death_signal


class CommandGateRun(GateThread):
    """One run of a gate's command, on a thread; ``outcome`` once it has ended."""

    def __init__(self, command: str, environment: Mapping[str, str], *, timeout: float = GATE_TIMEOUT_SECONDS) -> None:
        super().__init__(name="canary-gate")
        self.command = command
        self.environment = {**os.environ, **environment}
        self.timeout = timeout
        self.started_at = time.time()
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def stop(self) -> None:
        """Kill the command (the driver is ending without its verdict); the next driver runs it again."""
        self._kill()

    def cancel(self) -> str:
        return "its command killed" if self._kill() else "its command had ended"

    def _kill(self) -> bool:
        """Kill the command's process group; whether it was still running."""
        with self._lock:
            self._stopped = True
            if self._process is not None and self._process.poll() is None:
                os.killpg(self._process.pid, signal.SIGKILL)
                return True
            return False

    def _run(self) -> None:
        try:
            self.outcome = self._execute()
        finally:
            self._on_end()

    def _execute(self) -> GateOutcome:
        try:
            with self._lock:
                if self._stopped:
                    raise OSError("stopped before it started")
                # The workload's own gate, run as its owner asked; the child only calls prctl before exec.
                self._process = subprocess.Popen(
                    ["/bin/sh", "-c", self.command],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    env=self.environment,
                    start_new_session=True,
                    preexec_fn=_die_with_parent(),
                )
            process = self._process
        except OSError as err:
            return GateOutcome(
                ok=False,
                exit_code=None,
                output=f"could not start: {err}",
                started_at=self.started_at,
                finished_at=time.time(),
            )
        try:
            output, _ = process.communicate(timeout=self.timeout)
            code: int | None = process.returncode
            text = output.decode(errors="replace")
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            code = None
            text = output.decode(errors="replace") + f"\nkilled after {self.timeout:g}s"
        return GateOutcome(
            ok=code == 0,
            exit_code=code,
            output=text[-OUTPUT_KEPT:],
            started_at=self.started_at,
            finished_at=time.time(),
        )
