#!/usr/bin/env python3
"""Benchmark: the server's Deployment controller against `kubectl rollout-plus` driving the same rollout.

Scenario 1 (the issue's): 100 replicas, maxSurge 25%, maxUnavailable 25%, pods
Ready 1 s after they start, one image change; as a real Deployment and as a
managed workload, --rounds times each (default 3) on one cluster, alternating
which goes first, each in a fresh namespace. Printed per run and as medians:
both completion times (timed from the same point), their ratio, and the API
requests of each driver (the deployment-controller
service account against our user agent, from the audit log; the ReplicaSet
controller's work is the same on both sides and not counted).

Scenario 2: 2000 replicas roll out an image change, as a real Deployment and
as a managed workload (one run each, the controller first); both times, both
drivers' API requests (counted as in scenario 1) and our driver's peak RSS.

Scenario 4, an image change of 100 replicas as a user lives it (the same
workload as scenario 1), each timed from its first command's start to its
last one's exit: `kubectl set image deployment/web` then `kubectl rollout
status deployment/web`, against `kubectl rollout-plus set image web` with the
user's agent running (through its warm command server; the job runs in the
agent, the command follows it) and the same with ROLLOUT_PLUS_WARM=0 and
`--in-process` (no agent: the CLI's start and the driver in one process);
--rounds times each, rotating which goes first. Medians and ratios. Each run
also counts the ReplicaSet controller's requests (the audit log): it makes
every pod of every way at kube-controller-manager's client limit, 20 a second
after a burst of 30, so a run cannot end before its first one plus (n - 30) /
20 s; what each way adds to that floor is printed beside its median.

Scenario 3, resume after SIGKILL: a foreground `set image -o jsonl` of 10
replicas is SIGKILLed as soon as it has scaled the new ReplicaSet up, then
`status -w -o jsonl` runs; --resume-rounds times (default 5). Printed per run
and as medians: from the kill to the `TookOver` line (the Lease taken over;
the CLI's start included), and to the rollout's end.

    .venv/bin/python hack/bench_rollout.py [--skip-large | --large-only | --only-user]
        [--only-resume [--kubeconfig PATH]]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hack"))
sys.path.insert(0, str(ROOT))

from bench_support import (  # noqa: E402
    audit_requests,
    pace_floor,
    replica_set_controller_requests,
    timed,
    user_environment,
)

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect  # noqa: E402
from kubectl_rollout.kube.watched_collection import WatchedCollection  # noqa: E402

BENCH_DIR = ROOT / ".cluster" / "bench-rollout"
PLUGIN = Path(sys.executable).parent / "kubectl-rollout_plus"
CONTROLLER = "system:serviceaccount:kube-system:deployment-controller"


def manifest(name: str, replicas: int, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": {"rollout-plus.test/ready-after": "1s"}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


def namespace(cluster: Cluster, name: str) -> None:
    cluster.core.create_namespace({"metadata": {"name": name}})
    for _ in range(100):
        if any(sa.metadata.name == "default" for sa in cluster.core.list_namespaced_service_account(name).items):
            return
        time.sleep(0.1)


def controller_done(d: Any, replicas: int) -> bool:
    s = d.status
    return bool(
        s is not None
        and s.observed_generation == d.metadata.generation
        and s.updated_replicas == replicas
        and s.replicas == replicas
        and (s.available_replicas or 0) == replicas
    )


def delete_namespace(cluster: Cluster, ns: str, timeout: float = 300) -> None:
    """Delete a run's namespace and wait until it is gone: its pods' teardown (the garbage collector, the
    ReplicaSet controller's own client budget) must not overlap the next run it is compared with."""
    gone = WatchedCollection(
        cluster.core.list_namespace, field_selector=f"metadata.name={ns}", description=f"namespace {ns}"
    ).start()
    try:
        cluster.core.delete_namespace(ns)
        if not gone.wait_until(lambda c: not c.objects_locked(), timeout, None):
            raise SystemExit(f"namespace {ns} was not gone {timeout:.0f}s after its deletion")
    finally:
        gone.stop()


def wait_controller(cluster: Cluster, ns: str, name: str, replicas: int, timeout: float = 1800) -> float:
    """Seconds until the controller reports the rollout complete, seen through a watch (no polling lag)."""
    started = time.monotonic()
    collection = WatchedCollection(
        cluster.apps.list_namespaced_deployment,
        namespace=ns,
        field_selector=f"metadata.name={name}",
        description=f"deployment {name}",
    ).start()
    try:
        done = collection.wait_until(
            lambda c: any(controller_done(d, replicas) for d in c.objects_locked().values()), timeout, None
        )
    finally:
        collection.stop()
    if not done:
        raise SystemExit(f"the controller's rollout of {ns}/{name} did not finish in {timeout:.0f}s")
    return time.monotonic() - started


def managed(kubeconfig: Path, ns: str, document: dict[str, Any], tmp: Path) -> tuple[float, int]:
    path = tmp / f"{document['metadata']['name']}.json"
    path.write_text(json.dumps(document))
    env = user_environment(KUBECONFIG=str(kubeconfig))
    seconds, peak, _ = timed([str(PLUGIN), "apply", "-f", str(path), "-n", ns, "-o", "jsonl"], env)
    return seconds, peak


def controller_rollout(cluster: Cluster, audit: Path, ns: str) -> tuple[float, int]:
    namespace(cluster, ns)
    cluster.apps.create_namespaced_deployment(ns, manifest("web", 100, "registry.example/web:v1"))
    wait_controller(cluster, ns, "web", 100)
    time.sleep(2)
    since = time.time()
    started = time.monotonic()  # the same point as the plugin's: just before the change is sent
    cluster.apps.patch_namespaced_deployment(
        "web",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "registry.example/web:v2"}]}}}},
    )
    wait_controller(cluster, ns, "web", 100)
    seconds = time.monotonic() - started
    until = time.time()
    cluster.core.delete_namespace(ns)
    return seconds, audit_requests(audit, since, until, user=CONTROLLER)


def plugin_rollout(cluster: Cluster, kubeconfig: Path, audit: Path, ns: str, tmp: Path) -> tuple[float, int]:
    namespace(cluster, ns)
    managed(kubeconfig, ns, manifest("web", 100, "registry.example/web:v1"), tmp)
    time.sleep(2)
    since = time.time()
    seconds, _ = managed(kubeconfig, ns, manifest("web", 100, "registry.example/web:v2"), tmp)
    until = time.time()
    cluster.core.delete_namespace(ns)
    return seconds, audit_requests(audit, since, until, agent="kubectl-rollout-plus/")


KUBECTL = ROOT / ".bin" / "kubectl"
USER_WAYS = ("kubectl", "warm", "in-process")


@dataclass(frozen=True)
class UserRun:
    """One image change as a user lives it, and the ReplicaSet controller's part in it."""

    seconds: float
    #: the ReplicaSet controller's requests on the namespace from the first command's start to the last one's exit
    rs_controller_requests: int
    #: the earliest its client limit lets those requests end, in seconds from the first command's start
    rs_controller_floor: float


def user_change(
    cluster: Cluster, kubeconfig: Path, audit: Path, ns: str, tmp: Path, way: str, agent_env: dict[str, str]
) -> UserRun:
    """From the first command's start to the last one's exit, for one way of changing the image."""
    namespace(cluster, ns)
    if way == "kubectl":
        cluster.apps.create_namespaced_deployment(ns, manifest("web", 100, "registry.example/web:v1"))
        wait_controller(cluster, ns, "web", 100)
    else:
        managed(kubeconfig, ns, manifest("web", 100, "registry.example/web:v1"), tmp)
    time.sleep(2)
    env = user_environment(KUBECONFIG=str(kubeconfig))
    new = "app=registry.example/web:v2"
    if way == "kubectl":
        commands = [
            [str(KUBECTL), "set", "image", "deployment/web", new, "-n", ns],
            [str(KUBECTL), "rollout", "status", "deployment/web", "-n", ns, "--timeout", "10m"],
        ]
    elif way == "warm":
        env = {**env, **agent_env}
        commands = [[str(PLUGIN), "set", "image", "web", new, "-n", ns, "--agent"]]
    else:
        env = {**env, "ROLLOUT_PLUS_WARM": "0"}
        commands = [[str(PLUGIN), "set", "image", "web", new, "-n", ns, "--in-process"]]
    started, wall = time.monotonic(), time.time()
    for command in commands:
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    # The audit log is written before each response (--audit-log-mode=blocking): complete for the run by now.
    received = replica_set_controller_requests(audit, ns, wall, wall + seconds)
    floor = pace_floor(received)
    delete_namespace(cluster, ns)
    return UserRun(seconds, len(received), (floor - wall) if floor is not None else 0.0)


def start_agent() -> dict[str, str]:
    """A user agent of the benchmark's own, its warm command server answering; the environment that finds it."""
    import socket

    directory = Path(tempfile.mkdtemp(prefix="rpb-", dir="/tmp"))  # a socket path has ~100 bytes
    agent_env = {"ROLLOUT_PLUS_AGENT_DIR": str(directory)}
    subprocess.run([str(PLUGIN), "agent", "start"], env=user_environment(**agent_env), check=True)
    commands = directory / "run" / "commands.sock"
    deadline = time.monotonic() + 60
    while True:  # the server's child of the agent: answering its socket is the only sign it gives
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(str(commands))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the agent's warm command server did not answer within 60 s") from None
                time.sleep(0.05)
    return agent_env


def user_scenario(cluster: Cluster, kubeconfig: Path, audit: Path, tmp: Path, rounds: int) -> None:
    print("\n== an image change of 100 replicas as a user lives it: first command's start to last one's exit ==")
    print("   (RS controller: its requests in the run, and the earliest its client limit lets them end)")
    agent_env = start_agent()
    runs: dict[str, list[UserRun]] = {way: [] for way in USER_WAYS}
    try:
        for run in range(rounds):
            order = USER_WAYS[run % 3 :] + USER_WAYS[: run % 3]
            for way in order:
                ns = f"bench-user-{way}-{run}"
                done = user_change(cluster, kubeconfig, audit, ns, tmp, way, agent_env)
                runs[way].append(done)
                print(
                    f"  run {run + 1} {way:10s} {done.seconds:6.2f} s"
                    f"   RS controller: {done.rs_controller_requests} requests, floor {done.rs_controller_floor:.2f} s",
                    flush=True,
                )
    finally:
        subprocess.run([str(PLUGIN), "agent", "stop"], env=user_environment(**agent_env), stdout=subprocess.DEVNULL)
    kubectl_seconds = statistics.median(r.seconds for r in runs["kubectl"])
    print(f"\nmedians of {rounds} runs each, rotating which goes first; beside each, the median over its runs of")
    print("(time - the RS controller's floor in that run): what the way added to the cluster's own pace")
    for way, words in (
        ("kubectl", "kubectl set image + kubectl rollout status"),
        ("warm", "kubectl rollout-plus set image, with the agent (warm)"),
        ("in-process", "kubectl rollout-plus set image, without an agent (in-process)"),
    ):
        seconds = statistics.median(r.seconds for r in runs[way])
        beyond = statistics.median(r.seconds - r.rs_controller_floor for r in runs[way])
        ratio = "" if way == "kubectl" else f"   {seconds / kubectl_seconds:5.2f}x"
        print(f"{words:62s} {seconds:7.2f} s   (+{beyond:.3f} s){ratio}")
    print("target: with the agent <= 1.00x")


def jsonl_until(process: subprocess.Popen[str], wanted: str) -> bool:
    """Read the process's -o jsonl lines until one of type ``wanted`` (True) or the end (False)."""
    assert process.stdout is not None
    return any(line.startswith("{") and json.loads(line).get("type") == wanted for line in process.stdout)


def resume_after_kill(cluster: Cluster, kubeconfig: Path, ns: str, tmp: Path) -> tuple[float, float]:
    """Seconds from SIGKILL of a foreground driver mid-rollout to `status -w` taking its Lease, and to the end."""
    namespace(cluster, ns)
    managed(kubeconfig, ns, manifest("web", 10, "registry.example/web:v1"), tmp)
    env = user_environment(KUBECONFIG=str(kubeconfig))
    change = [str(PLUGIN), "set", "image", "web", "app=registry.example/web:v2", "-n", ns, "-o", "jsonl"]
    driver = subprocess.Popen(change, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if not jsonl_until(driver, "ReplicaSetCreated") or not jsonl_until(driver, "RolloutProgressed"):
        raise SystemExit(f"`set image` in {ns} ended before its rollout was under way")
    driver.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    driver.wait()
    status = [str(PLUGIN), "status", "web", "-w", "-n", ns, "-o", "jsonl"]
    resumer = subprocess.Popen(status, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if not jsonl_until(resumer, "TookOver"):
        raise SystemExit(f"`status -w` in {ns} never took the Lease over")
    took = time.monotonic() - killed
    if resumer.wait(600) != 0:
        raise SystemExit(f"`status -w` in {ns} failed")
    done = time.monotonic() - killed
    cluster.core.delete_namespace(ns)
    return took, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-large", action="store_true", help="leave scenario 2 (2000 replicas) out")
    parser.add_argument("--large-only", action="store_true", help="run scenario 2 (2000 replicas) alone")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="rollouts by each driver, alternating (>= 3)")
    parser.add_argument("--resume-rounds", type=int, default=5, help="foreground drivers killed and resumed")
    parser.add_argument("--only-resume", action="store_true", help="scenario 3 alone")
    parser.add_argument("--only-user", action="store_true", help="scenario 4 (as a user lives it) alone")
    parser.add_argument("--kubeconfig", type=Path, help="with --only-resume: a running cluster to measure on")
    args = parser.parse_args()
    if args.kubeconfig is not None:
        if not args.only_resume:
            parser.error("--kubeconfig goes with --only-resume (the other scenarios read the audit log of their own)")
        cluster = connect(ConnectionSettings(kubeconfig=str(args.kubeconfig)))
        tmp = Path(tempfile.mkdtemp(prefix="bench-resume-"))
        try:
            resume_scenario(cluster, args.kubeconfig.resolve(), tmp, args.resume_rounds)
        finally:
            cluster.close()
        return 0
    up = subprocess.run(
        [
            sys.executable,
            str(ROOT / "hack" / "cluster.py"),
            "up",
            "--dir",
            str(BENCH_DIR),
            "--nodes",
            "8",
            "--audit",
            # every request is in the log when the call returns, for both drivers alike
            "--apiserver-arg=--audit-log-mode=blocking",
        ],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    audit = BENCH_DIR / "logs" / "audit.log"
    cluster = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    tmp = BENCH_DIR / "manifests"
    tmp.mkdir(exist_ok=True)
    try:
        if args.only_resume:
            resume_scenario(cluster, kubeconfig, tmp, args.resume_rounds)
            return 0
        if args.only_user:
            user_scenario(cluster, kubeconfig, audit, tmp, args.rounds)
            return 0
        if not args.large_only:
            print("\n== rollout: 100 replicas, maxSurge 25%, maxUnavailable 25%, Ready 1 s after start ==")
            runs: dict[str, list[tuple[float, int]]] = {"controller": [], "plugin": []}
            for run in range(args.rounds):
                order = ["controller", "plugin"] if run % 2 == 0 else ["plugin", "controller"]
                for driver in order:
                    ns = f"bench-{driver}-{run}"
                    if driver == "controller":
                        runs[driver].append(controller_rollout(cluster, audit, ns))
                    else:
                        runs[driver].append(plugin_rollout(cluster, kubeconfig, audit, ns, tmp))
                    seconds, requests = runs[driver][-1]
                    print(f"  run {run + 1} {driver:10s} {seconds:6.2f} s  {requests:4d} requests", flush=True)
            controller_seconds = statistics.median(r[0] for r in runs["controller"])
            plugin_seconds = statistics.median(r[0] for r in runs["plugin"])
            controller_requests = statistics.median(r[1] for r in runs["controller"])
            plugin_requests = statistics.median(r[1] for r in runs["plugin"])
            print(f"\nmedians of {args.rounds} runs each, alternating which driver goes first; both timed from just")
            print("before the change is sent (the PATCH; the CLI's start) until the bench sees the rollout complete")
            print("(the controller's status on a watch; the CLI's exit)")
            print(f"Deployment controller        {controller_seconds:7.2f} s   {controller_requests:5.0f} API requests")
            print(f"kubectl rollout-plus         {plugin_seconds:7.2f} s   {plugin_requests:5.0f} API requests")
            print(f"ratio rollout-plus/controller {plugin_seconds / controller_seconds:6.2f}   (target <= 1.10)")

        if not args.skip_large:
            large = 2000
            namespace(cluster, "bench-large-controller")
            cluster.apps.create_namespaced_deployment(
                "bench-large-controller", manifest("big", large, "registry.example/big:v1")
            )
            wait_controller(cluster, "bench-large-controller", "big", large)
            time.sleep(2)
            since = time.time()
            started = time.monotonic()
            cluster.apps.patch_namespaced_deployment(
                "big",
                "bench-large-controller",
                {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "registry.example/big:v2"}]}}}},
            )
            wait_controller(cluster, "bench-large-controller", "big", large)
            controller_seconds = time.monotonic() - started
            controller_requests = audit_requests(audit, since, time.time(), user=CONTROLLER)
            cluster.core.delete_namespace("bench-large-controller")

            namespace(cluster, "bench-large")
            started = time.monotonic()
            managed(kubeconfig, "bench-large", manifest("big", large, "registry.example/big:v1"), tmp)
            created = time.monotonic() - started
            time.sleep(2)
            since = time.time()
            seconds, peak = managed(kubeconfig, "bench-large", manifest("big", large, "registry.example/big:v2"), tmp)
            requests = audit_requests(audit, since, time.time(), agent="kubectl-rollout-plus/")
            print(f"\n== rollout: {large} replicas, maxSurge 25%, maxUnavailable 25%, one run each ==")
            print(f"first rollout of the managed workload ({large} pods created)  {created:7.2f} s")
            print(
                f"Deployment controller: image change rolled out  {controller_seconds:7.2f} s   "
                f"{controller_requests} API requests"
            )
            print(
                f"kubectl rollout-plus:  image change rolled out  {seconds:7.2f} s   {requests} API requests   "
                f"driver peak RSS {peak / 1024:.0f} MiB (target <= 100)"
            )
            print(f"requests rollout-plus/controller {requests / max(controller_requests, 1):.2f}   (target <= 1.10)")
        if not args.large_only:
            user_scenario(cluster, kubeconfig, audit, tmp, args.rounds)
            resume_scenario(cluster, kubeconfig, tmp, args.resume_rounds)
    finally:
        cluster.close()
        if not args.keep:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(BENCH_DIR)])
    return 0


def resume_scenario(cluster: Cluster, kubeconfig: Path, tmp: Path, rounds: int) -> None:
    print("\n== resume after SIGKILL of a foreground `set image` (10 replicas), by `status -w` ==")
    runs = []
    for run in range(rounds):
        runs.append(resume_after_kill(cluster, kubeconfig, f"bench-resume-{run}", tmp))
        took, done = runs[-1]
        print(
            f"  run {run + 1}  Lease taken over {took:6.2f} s after the kill   rollout done {done:6.2f} s", flush=True
        )
    took = statistics.median(r[0] for r in runs)
    done = statistics.median(r[1] for r in runs)
    print(f"medians of {rounds} runs: Lease taken over {took:.2f} s after the kill, rollout done after {done:.2f} s")


if __name__ == "__main__":
    sys.exit(main())
