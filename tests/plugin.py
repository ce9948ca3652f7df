"""Running the plugin the way users do: a separate process, real exit code and streams."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
