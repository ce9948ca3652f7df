"""Running the plugin the way users do: a separate process, real exit code and streams."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def run_plugin(
    *args: str, kubeconfig: Path | None = None, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kubectl_rollout", *args]
    if kubeconfig is not None:
        command += ["--kubeconfig", str(kubeconfig)]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout)


def events(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The JSON lines of a ``-o jsonl`` run."""
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


class RunningPlugin:
    """The plugin started as a separate process whose stdout the test follows line by line while it runs, to
    act the moment it says something (``wait_for``) instead of after a guessed delay."""

    def __init__(self, *args: str, kubeconfig: Path | None = None) -> None:
        command = [sys.executable, "-m", "kubectl_rollout", *args]
        if kubeconfig is not None:
            command += ["--kubeconfig", str(kubeconfig)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._stderr_lines: queue.Queue[str | None] = queue.Queue()
        #: the stdout lines taken so far
        self.stdout: list[str] = []
        self._stderr: list[str] = []
        # Both pipes read all along (a full stderr pipe would stall the plugin), each through its one file object:
        # a second reader of the same pipe (``communicate``) would miss the lines this one has buffered.
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.lines.put), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self._stderr_lines.put), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, take: Callable[[str | None], None]) -> None:
        for line in stream:
            take(line)
        stream.close()
        take(None)  # the end of the output

    def wait_for(self, predicate: Callable[[str], bool], *, timeout: float, what: str) -> str:
        """The first stdout line (after the last one taken) for which ``predicate`` holds."""
        return self._wait(self.lines, self.stdout, predicate, timeout=timeout, what=what)

    def wait_for_stderr(self, predicate: Callable[[str], bool], *, timeout: float, what: str) -> str:
        """The first stderr line (after the last one taken) for which ``predicate`` holds."""
        return self._wait(self._stderr_lines, self._stderr, predicate, timeout=timeout, what=what)

    @staticmethod
    def _wait(
        lines: queue.Queue[str | None], taken: list[str], predicate: Callable[[str], bool], *, timeout: float, what: str
    ) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {what} within {timeout} s; it said {taken}") from None
            if line is None:
                raise AssertionError(f"the plugin ended before {what}; it said {taken}")
            taken.append(line)
            if predicate(line):
                return line

    def finish(self, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """Wait for the process to end; the whole of its output, as ``run_plugin`` gives it."""
        try:
            self.process.wait(timeout)
        finally:
            self.process.kill()  # a no-op once it ended
            for reader in self._readers:
                reader.join(10)
        for lines, taken in ((self.lines, self.stdout), (self._stderr_lines, self._stderr)):
            while not lines.empty():
                line = lines.get_nowait()
                if line is not None:
                    taken.append(line)
        stderr = "".join(self._stderr)
        return subprocess.CompletedProcess(self.process.args, self.process.returncode, "".join(self.stdout), stderr)


#: the console scripts' module, run through a wrapper: its first argument names a file where it writes the warm
#: child's pid once the warm server took the command, its second is the program's name (argv[0])
WARM_WRAPPER = """\
import sys
from kubectl_rollout.cli.warm import client

report = sys.argv.pop(1)
original = client.WarmCommand._follow


def follow(self, sock, reader):
    with open(report, "w") as out:
        out.write(str(self.child))
    return original(self, sock, reader)


client.WarmCommand._follow = follow
sys.argv[0] = sys.argv.pop(1)
client.main()
"""


def socket_answers(path: Path) -> bool:
    """Whether something accepts connections on the Unix socket ``path`` now."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def wait_for_warm_server(runtime_dir: Path, *, timeout: float = 60) -> None:
    """Until the agent's warm command server (started with the agent) answers: its imports, a second of CPU on
    a loaded machine, are done, and no longer compete with what a test measures next.

    The one wait here that asks again and again: the server is the agent's child, so a test holds neither its
    stderr (where it says it listens) nor a pipe of it; connecting is the only sign it gives."""
    deadline = time.monotonic() + timeout
    while not socket_answers(runtime_dir / "commands.sock"):
        if time.monotonic() > deadline:
            raise AssertionError(f"no warm command server in {runtime_dir} within {timeout} s")
        time.sleep(0.05)


def wait_for_exit(pid: int, *, timeout: float, what: str) -> None:
    """Until process ``pid`` (any process, not only a child of this one) has ended: a pidfd turns readable then."""
    import select

    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # ended already
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(timeout * 1000):
            raise AssertionError(f"no {what} within {timeout} s")
    finally:
        os.close(pidfd)
