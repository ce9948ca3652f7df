#!/usr/bin/env python3
"""Benchmark: every command pointed at a cluster that is not there, beside kubectl's same command.

    .venv/bin/python hack/bench_unreachable.py [--runs N] [--servers refused,silent] [--limit SECONDS]

Two servers that are not there: "refused" (nothing listens on 127.0.0.1:1:
a wrong port, a stopped cluster) and "silent" (a socket of this script that
accepts connections and never answers: a black-holed load balancer, a VPN
that drops packets). For each command, the plugin's and then kubectl's
(.bin/kubectl), alternating which goes first from one run to the next, the
median wall time of N runs (default 3), the exit code and how many lines
were printed, and whether a traceback showed. A run still going after
--limit seconds (default 60) is killed and shown as ">LIMIT".
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = Path(sys.executable).parent / "kubectl-rollout_plus"
KUBECTL = ROOT / ".bin" / "kubectl"

#: (our command, kubectl's nearest one)
COMMANDS: list[tuple[list[str], list[str]]] = [
    (["version"], ["version"]),
    (["cordon", "node-1"], ["cordon", "node-1"]),
    (["drain", "node-1", "--in-process"], ["drain", "node-1"]),
    (["drain", "node-1", "--plan"], ["drain", "node-1", "--dry-run=client"]),
    (["status", "web"], ["rollout", "status", "deployment/web"]),
    (["history", "web"], ["rollout", "history", "deployment/web"]),
    (["scale", "web", "--replicas", "3", "--in-process"], ["scale", "deployment/web", "--replicas", "3"]),
    (["undo", "web", "--in-process"], ["rollout", "undo", "deployment/web"]),
    (["pause", "web"], ["rollout", "pause", "deployment/web"]),
    (["restart", "web", "--in-process"], ["rollout", "restart", "deployment/web"]),
    (["set", "image", "web", "web=nginx:2", "--in-process"], ["set", "image", "deployment/web", "web=nginx:2"]),
    (["delete", "web"], ["delete", "deployment/web"]),
    (["adopt", "deployment/web"], ["get", "deployment/web"]),
]


def kubeconfig(folder: Path, name: str, server: str) -> Path:
    path = folder / f"{name}.kubeconfig"
    path.write_text(
        f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}", insecure-skip-tls-verify: true}}}}]
users: [{{name: u, user: {{token: not-a-secret}}}}]
contexts: [{{name: {name}, context: {{cluster: c, user: u}}}}]
current-context: {name}
"""
    )
    return path


def once(command: list[str], config: Path, limit: float) -> tuple[float, str]:
    env = {**os.environ, "KUBECONFIG": str(config), "NO_COLOR": "1"}
    started = time.monotonic()
    try:
        result = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=limit, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return limit, "killed"
    elapsed = time.monotonic() - started
    output = result.stdout + result.stderr
    lines = len(output.strip().splitlines())
    traceback = ", traceback" if "Traceback" in output else ""
    return elapsed, f"exit {result.returncode}, {lines} line{'s' if lines != 1 else ''}{traceback}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--servers", default="refused,silent")
    parser.add_argument("--limit", type=float, default=60.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder, socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(512)
        servers = {
            "refused": kubeconfig(Path(folder), "refused", "https://127.0.0.1:1"),
            "silent": kubeconfig(Path(folder), "silent", f"https://127.0.0.1:{silent.getsockname()[1]}"),
        }
        print(f"{'server':8} {'command':46} {'rollout-plus':>12}  {'':28} {'kubectl':>9}  ")
        for server in args.servers.split(","):
            config = servers[server]
            for ours, theirs in COMMANDS:
                timings: dict[str, list[float]] = {"ours": [], "theirs": []}
                said: dict[str, str] = {}
                for run in range(args.runs):
                    order = [("ours", [str(PLUGIN), *ours]), ("theirs", [str(KUBECTL), *theirs])]
                    for who, command in order if run % 2 == 0 else reversed(order):
                        elapsed, said[who] = once(command, config, args.limit)
                        timings[who].append(elapsed)
                ours_s = statistics.median(timings["ours"])
                theirs_s = statistics.median(timings["theirs"])

                def shown(seconds: float, what: str) -> str:
                    return f">{args.limit:.0f}s" if what == "killed" else f"{seconds:.2f}s"

                print(
                    f"{server:8} {' '.join(ours):46} {shown(ours_s, said['ours']):>12}  {'(' + said['ours'] + ')':28} "
                    f"{shown(theirs_s, said['theirs']):>9}  ({said['theirs']})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
