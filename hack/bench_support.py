"""What the benchmark scripts share: timing a command with its peak memory, reading the audit log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

#: Runs a command and reports the peak RSS of its process tree alone on stderr's last line.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def timed(
    command: list[str], env: dict[str, str], *, check: bool = True
) -> tuple[float, int, subprocess.CompletedProcess[str]]:
    """Wall time and peak RSS (KiB) of one command; exits the benchmark if the command fails (with ``check``)."""
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True, env=env)
    elapsed = time.monotonic() - started
    if check and result.returncode != 0:
        print(result.stdout[-2000:], result.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"{command[0]} failed with {result.returncode}")
    peak = int(result.stderr.strip().splitlines()[-1])
    return elapsed, peak, result


def audit_requests(
    audit_log: Path, since: float, until: float, *, user: str | None = None, agent: str | None = None
) -> int:
    """Requests received in [since, until] from ``user`` and/or a user agent starting with ``agent``."""
    ids = set()
    with audit_log.open() as lines:
        for line in lines:
            event = json.loads(line)
            if user is not None and event.get("user", {}).get("username") != user:
                continue
            if agent is not None and not event.get("userAgent", "").startswith(agent):
                continue
            received = event.get("requestReceivedTimestamp", "")
            stamp = time.mktime(time.strptime(received[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
            if since - 1 <= stamp <= until + 1:
                ids.add(event["auditID"])
    return len(ids)


def audit_time(stamp: str) -> float:
    """An audit log timestamp (RFC 3339, microseconds) as epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def completed_requests(audit_log: Path, namespace: str) -> Iterator[dict[str, Any]]:
    """The audit log's entries of requests on objects of ``namespace``, once each, as they completed."""
    with audit_log.open() as lines:
        for line in lines:
            entry = json.loads(line)
            if (
                entry.get("stage") == "ResponseComplete"
                and (entry.get("objectRef") or {}).get("namespace") == namespace
            ):
                yield entry


#: the ReplicaSet controller's user, and kube-controller-manager's client limit it sends under (--kube-api-qps,
#: --kube-api-burst; hack/cluster.py keeps the defaults)
RS_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"
DISRUPTION_CONTROLLER = "system:serviceaccount:kube-system:disruption-controller"
RS_CONTROLLER_QPS = 20
RS_CONTROLLER_BURST = 30


def pace_floor(
    received: Sequence[float], *, qps: float = RS_CONTROLLER_QPS, burst: int = RS_CONTROLLER_BURST
) -> float | None:
    """When requests sent under a client limit of ``qps`` after a burst of ``burst`` (a token bucket, as
    client-go's) can have been sent at the earliest (epoch seconds): the first, then all but the burst at that
    pace. None for none."""
    if not received:
        return None
    return min(received) + max(0, len(received) - burst) / qps


def controller_requests(audit_log: Path, namespace: str, since: float, until: float, user: str) -> list[float]:
    """When (epoch seconds) ``user``'s requests on ``namespace`` were received in [since, until], in order."""
    return sorted(
        received
        for entry in completed_requests(audit_log, namespace)
        if entry.get("user", {}).get("username") == user
        and since <= (received := audit_time(entry["requestReceivedTimestamp"])) <= until
    )


def replica_set_controller_requests(audit_log: Path, namespace: str, since: float, until: float) -> list[float]:
    """When (epoch seconds) the ReplicaSet controller's requests on ``namespace`` were received in [since, until]."""
    return controller_requests(audit_log, namespace, since, until, RS_CONTROLLER)


def bench_cluster(given: Path | None, bench_dir: Path, up_args: Sequence[str] = ()) -> tuple[Path, bool]:
    """The kubeconfig of the cluster to measure on: the given one, or a cluster of the benchmark's own started
    in ``bench_dir`` (``up_args``: more of hack/cluster.py up's arguments); and whether this call started it (so
    the caller stops it)."""
    if given is not None:
        return given.resolve(), False
    up = subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parent / "cluster.py"), "up", "--dir", str(bench_dir), *up_args],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    return Path(up.stdout.strip().splitlines()[-1]), True


def user_environment(**extra: str) -> dict[str, str]:
    """This process's environment as a user's shell has it: without the PYTHON* variables a harness may set.

    PYTHONDONTWRITEBYTECODE (set on some build machines) makes every process compile our modules from source
    again: about 16 ms more per warm command and 0.8 s per in-process one here, which no installed plugin pays
    (pip and pipx compile at install time; a checkout writes its __pycache__ on the first run).
    """
    kept = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    return {**kept, **extra}
