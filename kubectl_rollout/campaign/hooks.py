"""A campaign's hooks: a command before and after each node, whose exit code is a gate.

The command runs with ``sh -c`` in its own process group, with the node's name and the job's id in its
environment (``ROLLOUT_PLUS_NODE``, ``ROLLOUT_PLUS_JOB``, ``ROLLOUT_PLUS_HOOK`` pre or post) and the job's
cluster (``KUBECONFIG``, ``ROLLOUT_PLUS_CONTEXT``), so that a ``kubectl`` in it reaches the same cluster. A
hook that outlives its bound is killed, its whole group, and counts as failed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from typing import IO

from kubectl_rollout.jobs.events.campaign import HookRan
from kubectl_rollout.jobs.spec import Connection

#: what of a hook's output its event keeps: the end, where errors are
OUTPUT_LINES, OUTPUT_CHARS = 20, 2000


def hook_environment(*, node: str, job_id: str, hook: str, connection: Connection) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ROLLOUT_PLUS_NODE=node, ROLLOUT_PLUS_JOB=job_id, ROLLOUT_PLUS_HOOK=hook)
    if connection.kubeconfig:
        env["KUBECONFIG"] = os.pathsep.join(connection.kubeconfig)
    if connection.context:
        env["ROLLOUT_PLUS_CONTEXT"] = connection.context
    return env


def run_hook(
    command: str,
    *,
    node: str,
    job_id: str,
    hook: str,
    connection: Connection,
    timeout: float,
    cancel: threading.Event,
) -> HookRan:
    started = time.monotonic()
    # The output goes to a file, not a pipe: a chatty hook costs disk, never the agent's memory, and its end
    # (where errors are) is what is kept.
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            ["sh", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=hook_environment(node=node, job_id=job_id, hook=hook, connection=connection),
            start_new_session=True,
        )
        # A cancel of the job ends the hook too, as a timeout does.
        stopper = threading.Thread(target=_stop_on, args=(cancel, process), daemon=True, name=f"hook-{node}")
        stopper.start()
        timed_out = False
        try:
            process.wait(timeout=timeout or None)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process)
            process.wait()
        tail = _tail(output)
    return HookRan(
        node=node,
        hook=hook,
        command=command,
        exit_code=process.returncode,
        seconds=round(time.monotonic() - started, 3),
        output=tail,
        timed_out=timed_out,
    )


def _tail(output: IO[bytes]) -> str:
    size = output.seek(0, os.SEEK_END)
    output.seek(max(0, size - OUTPUT_CHARS * 4))
    text = output.read().decode(errors="replace")
    return "\n".join(text.splitlines()[-OUTPUT_LINES:])[-OUTPUT_CHARS:]


def _stop_on(cancel: threading.Event, process: subprocess.Popen[bytes]) -> None:
    while process.poll() is None:
        if cancel.wait(0.5):
            _kill_group(process)
            return


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
