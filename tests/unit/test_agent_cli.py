"""``agent start|status|logs|stop`` as a person runs them: separate processes, real exit codes, no cluster."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kubectl_rollout.agent.paths import ENV_DIR


def _run(directory: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubectl_rollout", *args],
        capture_output=True,
        text=True,
        env={**os.environ, ENV_DIR: directory},
        timeout=60,
    )


def test_start_status_logs_and_stop() -> None:
    directory = tempfile.mkdtemp(prefix="rpa-cli-", dir="/tmp")
    socket = Path(directory) / "run" / "agent.sock"

    absent = _run(directory, "agent", "status")
    assert absent.returncode == 1
    assert absent.stdout.startswith(f"no agent is running (no answer on {socket}); ")
    assert "`kubectl rollout-plus agent start` starts one" in absent.stdout

    started = _run(directory, "agent", "start")
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout.startswith("agent running (pid ")
        status = _run(directory, "agent", "status", "-o", "json")
        assert status.returncode == 0, status.stderr
        answer = json.loads(status.stdout)
        assert answer["running"] is True
        assert answer["socket"] == str(socket)
        assert (answer["protocol"], answer["running_jobs"]) == (1, [])
        pid = answer["pid"]
        logs = _run(directory, "agent", "logs")
        assert f"(pid {pid}) listening on {socket}" in logs.stdout
        jobs = _run(directory, "jobs", "list", "-o", "json")
        assert (jobs.returncode, json.loads(jobs.stdout)) == (0, [])
        missing = _run(directory, "jobs", "show", "nope")
        assert missing.returncode == 1
        assert missing.stderr.startswith("error: no job 'nope' in the agent's journal")
    finally:
        stopped = _run(directory, "agent", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.strip() == f"agent stopped (pid {pid})"
    assert not socket.exists()
    assert _run(directory, "agent", "stop").stdout.strip() == "no agent is running"
    shutil.rmtree(directory, ignore_errors=True)
