"""The agent's log is rotated at 1 MiB and three old files are kept (README, "The agent"), and `agent logs -f`
goes on in the new file. A real agent process in its own ROLLOUT_PLUS_AGENT_DIR; no cluster."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubectl_rollout.agent.client import agent_pid
from kubectl_rollout.agent.paths import ENV_DIR, AgentPaths, agent_paths

MIB = 1024 * 1024


def cli(environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubectl_rollout", *args], capture_output=True, text=True, env=environ, timeout=60
    )


@pytest.fixture
def agent_environ() -> Iterator[tuple[dict[str, str], AgentPaths]]:
    directory = Path(tempfile.mkdtemp(prefix="rpr-", dir="/tmp"))
    environ = {**os.environ, ENV_DIR: str(directory)}
    paths = agent_paths(environ).ensure()
    yield environ, paths
    cli(environ, "agent", "stop", "--force")
    pid = agent_pid(paths)
    if pid is not None:  # the agent this test started, by its pid
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(directory, ignore_errors=True)


def test_the_log_rotates_at_one_mib_keeping_three_old_files_and_logs_follow_goes_on_in_the_new_one(
    agent_environ: tuple[dict[str, str], AgentPaths],
) -> None:
    environ, paths = agent_environ
    log = paths.log
    # A log a few bytes short of 1 MiB and three older ones: the agent's first record does not fit, so it
    # rotates them all by one (the oldest goes) and starts a new file.
    line = "an older agent's record\n"
    current = line * ((MIB - 64) // len(line))
    log.write_text(current)
    for n in (1, 2, 3):
        Path(f"{log}.{n}").write_text(f"rotated {n}\n")
    follower = subprocess.Popen(
        [sys.executable, "-m", "kubectl_rollout", "agent", "logs", "-f"],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        assert follower.stdout.readline() == line  # following the file as it is

        started = cli(environ, "agent", "start")
        assert started.returncode == 0, started.stderr

        # The follower reads on from the new file (its inode changed): the agent's own first record.
        for printed in follower.stdout:
            if "listening on" in printed:
                break
        else:
            raise AssertionError("the follower ended before the new file's first record")
        follower.send_signal(signal.SIGINT)
        assert follower.wait(10) == 0
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(10)

    assert Path(f"{log}.1").read_text() == current
    assert Path(f"{log}.2").read_text() == "rotated 1\n"
    assert Path(f"{log}.3").read_text() == "rotated 2\n"
    assert not Path(f"{log}.4").exists()  # three kept: "rotated 3" is gone
    fresh = log.read_text()
    assert "listening on" in fresh
    assert line not in fresh
    assert log.stat().st_size < MIB
    assert stat.S_IMODE(log.stat().st_mode) == 0o600  # the new file is this user's alone, as the first was
    # `agent logs` prints the current file.
    printed = cli(environ, "agent", "logs")
    assert printed.returncode == 0, printed.stderr
    assert "listening on" in printed.stdout
    assert line not in printed.stdout
