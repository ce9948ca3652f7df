#!/usr/bin/env python3
"""Where a campaign's memory goes: one in-process campaign under tracemalloc, its top holders at the peak.

The large benchmark's campaign (hack/bench_campaign.py --large-only: 300 nodes, 30 Deployments x 200 pods,
maxUnavailable 20 %, --budget 20% --per-zone) at a scale of one's choosing. The campaign runs in a child
process with tracemalloc on; a sampler takes a snapshot each time the traced memory passes its highest so far
(by --step MiB), and at the end the child prints the peak, the top holders of the last (highest) snapshot by
file:line and the tracebacks of the largest ones, and the process's VmHWM.

    .venv/bin/python hack/campaign_memory.py --nodes 60 --deployments 6 --replicas 200 [--dir .cluster/mem]
    .venv/bin/python hack/campaign_memory.py --kubeconfig K --pool-label L ...  # a cluster already up

It starts its own cluster in --dir (unless --kubeconfig) and stops it (unless --keep).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack"))

#: the child: the plugin's main under tracemalloc, and a sampler that keeps the snapshot at the highest point
_CHILD = """
import os, sys, threading, time, tracemalloc, atexit, linecache
frames, step, top = int(os.environ["MEM_FRAMES"]), float(os.environ["MEM_STEP"]) * 2**20, int(os.environ["MEM_TOP"])
if frames:
    tracemalloc.start(frames)
state = {"high": 0, "snapshot": None, "at": 0.0, "rss": 0, "threads": 0, "sockets": 0, "rss_at": ""}
started = time.monotonic()
timeline = open(os.environ["MEM_TIMELINE"], "w") if os.environ.get("MEM_TIMELINE") else None

def proc():
    fields = {}
    for line in open(f"/proc/{os.getpid()}/status"):
        key, _, value = line.partition(":")
        fields[key] = value.split()[0] if value.split() else ""
    sockets = 0
    for fd in os.listdir(f"/proc/{os.getpid()}/fd"):
        try:
            sockets += os.readlink(f"/proc/{os.getpid()}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return int(fields["VmRSS"]), int(fields["Threads"]), sockets

def sample():
    while True:
        time.sleep(1.0)
        rss, threads, sockets = proc()
        if timeline:
            timeline.write(f"{time.monotonic() - started:.0f} {rss} {threads} {sockets} {sys.getallocatedblocks()}\\n")
            timeline.flush()
        if rss > state["rss"]:
            at = f"{time.monotonic() - started:.0f} s in, {threads} threads, {sockets} sockets"
            state["rss"], state["rss_at"] = rss, at
        state["threads"] = max(state["threads"], threads)
        state["sockets"] = max(state["sockets"], sockets)
        if not frames:
            continue
        current, _ = tracemalloc.get_traced_memory()
        if current > state["high"] + step:
            state["high"] = current
            state["snapshot"] = tracemalloc.take_snapshot().filter_traces(
                (tracemalloc.Filter(False, tracemalloc.__file__),)
            )
            state["at"] = time.monotonic() - started

threading.Thread(target=sample, daemon=True).start()

def report():
    out = sys.stderr
    print(f"\\n== process: peak VmRSS {state['rss'] / 1024:.1f} MiB ({state['rss_at']}); "
          f"at most {state['threads']} threads, {state['sockets']} sockets", file=out)
    if not frames:
        for line in open(f"/proc/{os.getpid()}/status"):
            if line.startswith("VmHWM"):
                print("process " + line.strip(), file=out)
        return
    _, peak = tracemalloc.get_traced_memory()
    print(f"\\n== tracemalloc: peak {peak / 2**20:.1f} MiB; snapshot at {state['high'] / 2**20:.1f} MiB, "
          f"{state['at']:.0f} s in", file=out)
    snap = state["snapshot"]
    if snap is not None:
        print("-- top holders by file:line", file=out)
        for stat in snap.statistics("lineno")[:top]:
            frame = stat.traceback[0]
            print(f"{stat.size / 2**20:8.2f} MiB {stat.count:8d} blocks  {frame.filename}:{frame.lineno}", file=out)
        print("-- the largest by traceback", file=out)
        for stat in snap.statistics("traceback")[:8]:
            print(f"{stat.size / 2**20:8.2f} MiB {stat.count:8d} blocks", file=out)
            for line in stat.traceback.format(limit=frames, most_recent_first=True):
                print("    " + line, file=out)
    for line in open(f"/proc/{os.getpid()}/status"):
        if line.startswith("VmHWM"):
            print("process " + line.strip(), file=out)

atexit.register(report)
sys.argv = ["kubectl-rollout_plus", *sys.argv[1:]]
from kubectl_rollout.cli.main import main
main()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=60)
    parser.add_argument("--deployments", type=int, default=6)
    parser.add_argument("--replicas", type=int, default=200)
    parser.add_argument("--dir", default=str(ROOT / ".cluster" / "mem"))
    parser.add_argument("--kubeconfig", help="a cluster already up (its nodes labelled with the bench's pool)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running")
    parser.add_argument("--frames", type=int, default=12, help="frames kept per allocation; 0: no tracemalloc")
    parser.add_argument("--arena-max", type=int, help="MALLOC_ARENA_MAX for the campaign (glibc)")
    parser.add_argument("--step", type=float, default=1.0, help="MiB above the last snapshot to take another")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--code", help="run the campaign from this checkout (e.g. a worktree of the commit before)")
    parser.add_argument("--timeline", help="write 'seconds VmRSS(KiB) threads sockets' each second to this file")
    args = parser.parse_args()

    import bench_campaign as bench

    from kubectl_rollout.kube.cluster_access import ConnectionSettings, connect

    started_here = args.kubeconfig is None
    if started_here:
        up = subprocess.run(
            [sys.executable, str(ROOT / "hack" / "cluster.py"), "up", "--dir", args.dir, "--nodes", str(args.nodes)],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    else:
        kubeconfig = Path(args.kubeconfig).resolve()  # the campaign may run from another checkout (--code)
    print(f"kubeconfig {kubeconfig}", flush=True)
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    try:
        nodes = sorted(n.metadata.name for n in cluster.core.list_node().items)
        bench.label_pool(cluster, nodes)
        apps = bench.workloads(args.replicas, {"app": (args.deployments, {"maxUnavailable": "20%"})})
        namespace = f"mem-{int(time.time())}"
        t0 = time.monotonic()
        bench.prepare(cluster, namespace, apps, args.replicas)
        print(f"{len(apps)} x {args.replicas} pods on {len(nodes)} nodes ready in {time.monotonic() - t0:.0f} s")
        env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "MEM_FRAMES": str(args.frames),
            "MEM_STEP": str(args.step),
            "MEM_TOP": str(args.top),
        }
        if args.timeline:
            env["MEM_TIMELINE"] = args.timeline
        if args.arena_max:
            env["MALLOC_ARENA_MAX"] = str(args.arena_max)
        command = [sys.executable, "-c", _CHILD, "campaign", "-l", bench.POOL_LABEL, "--budget", "20%"]
        command += ["--per-zone", "--ignore-daemonsets", "--in-process"]
        t0 = time.monotonic()
        result = subprocess.run(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=args.code or ROOT
        )
        print(f"campaign exited {result.returncode} after {time.monotonic() - t0:.0f} s")
        report = result.stderr
        print(report[report.find("== process") :] if "== process" in report else report[-4000:])
        bench.clean_up(cluster, namespace, nodes)
    finally:
        cluster.close()
        if started_here and not args.keep:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", args.dir])
    return 0


if __name__ == "__main__":
    sys.exit(main())
