#!/usr/bin/env python3
"""Record the event streams of real rollouts, for the rollout view's table-driven tests.

Runs the plugin with ``-o jsonl`` against a running cluster (the local control
plane, with the kwok stages of hack/kwok/stages.yaml) and writes one file per
job, tests/unit/streams/rollout_*.jsonl. Each scenario gets a namespace of its
own, deleted at the end. The plugin must be on PATH as ``kubectl-rollout_plus``.

    PATH=.venv/bin:$PATH hack/record_rollout_streams.py --kubeconfig .cluster/default/kubeconfig [SCENARIO...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

ROOT = Path(__file__).resolve().parent.parent
STREAMS = ROOT / "tests" / "unit" / "streams"
READY_AFTER = "rollout-plus.test/ready-after"
BEHAVIOUR = "rollout-plus.test/behaviour"
RESTART_EVERY = "rollout-plus.test/restart-every"


def workload(replicas: int, surge: int, unavailable: int, image: str = "registry.example/app:v1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {READY_AFTER: "1s"}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
        },
    }


class Scenario:
    def __init__(self, kubeconfig: str, api: client.ApiClient) -> None:
        self.kubeconfig = kubeconfig
        self.core = client.CoreV1Api(api)
        self.policy = client.PolicyV1Api(api)
        self.coordination = client.CoordinationV1Api(api)
        self.namespace = f"streams-{uuid.uuid4().hex[:6]}"
        self.tmp = Path(tempfile.mkdtemp())

    def __enter__(self) -> Scenario:
        self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=self.namespace)))
        until(
            lambda: any(
                sa.metadata.name == "default" for sa in self.core.list_namespaced_service_account(self.namespace).items
            ),
            "the default service account",
        )
        return self

    def __exit__(self, *_: object) -> None:
        self.core.delete_namespace(self.namespace)

    def command(self, *args: str) -> list[str]:
        return ["kubectl-rollout_plus", *args, "-n", self.namespace, "--kubeconfig", self.kubeconfig]

    def run(self, *args: str, record: str | None = None, expect: int = 0) -> None:
        done = subprocess.run(
            self.command(*args, *(["-o", "jsonl"] if record else [])), capture_output=True, text=True, timeout=300
        )
        if done.returncode != expect:
            sys.exit(f"{' '.join(args)} exited {done.returncode}, not {expect}:\n{done.stderr}")
        if record:
            (STREAMS / f"rollout_{record}.jsonl").write_text(done.stdout)
            print(f"rollout_{record}.jsonl: {len(done.stdout.splitlines())} events")

    def apply(self, document: dict[str, Any], *args: str, record: str | None = None, expect: int = 0) -> None:
        path = self.tmp / f"web-{time.monotonic_ns()}.yaml"
        path.write_text(yaml.safe_dump(document))
        self.run("apply", "-f", str(path), *args, record=record, expect=expect)


def until(predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {what}")
        time.sleep(0.2)


def set_image(s: Scenario) -> None:
    s.apply(workload(3, 1, 0), record="apply_created")
    s.run("set", "image", "web", "app=registry.example/app:v2", record="set_image")
    s.run("undo", "web", record="undo")


def pdb_held(s: Scenario) -> None:
    s.apply(workload(4, 1, 1))
    pdb = {"metadata": {"name": "web"}, "spec": {"minAvailable": 4, "selector": {"matchLabels": {"app": "web"}}}}
    s.policy.create_namespaced_pod_disruption_budget(s.namespace, pdb)
    until(
        lambda: (s.policy.read_namespaced_pod_disruption_budget("web", s.namespace).status.expected_pods or 0) == 4,
        "the PDB's status",
    )
    s.run("set", "image", "web", "app=registry.example/app:v2", record="pdb_held")


def auto_rollback(s: Scenario) -> None:
    s.apply(workload(3, 1, 0))
    broken = workload(3, 1, 0, image="registry.example/app:broken")
    broken["spec"]["template"]["metadata"]["annotations"].update({BEHAVIOUR: "crash-loop", RESTART_EVERY: "1s"})
    s.apply(broken, "--fail-after-restarts", "2", "--auto-rollback", record="auto_rollback", expect=1)


def follow(s: Scenario) -> None:
    document = workload(4, 1, 0)
    document["spec"]["template"]["metadata"]["annotations"][READY_AFTER] = "2s"
    s.apply(document)
    driver = subprocess.Popen(
        s.command("set", "image", "web", "app=registry.example/app:v2"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        until(
            lambda: any(
                lease.metadata.name == "rollout-plus.web"
                for lease in s.coordination.list_namespaced_lease(s.namespace).items
            ),
            "the driver's lease",
        )
        s.run("status", "web", "-w", record="follow")
    finally:
        driver.wait(timeout=120)


SCENARIOS = {"set_image": set_image, "pdb_held": pdb_held, "auto_rollback": auto_rollback, "follow": follow}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO", help=f"any of {', '.join(SCENARIOS)} (default: all)"
    )
    args = parser.parse_args()
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario {', '.join(sorted(unknown))}; choose from {', '.join(SCENARIOS)}")
    STREAMS.mkdir(parents=True, exist_ok=True)
    api = config.new_client_from_config(config_file=args.kubeconfig)
    for name in args.scenarios or SCENARIOS:
        with Scenario(args.kubeconfig, api) as scenario:
            SCENARIOS[name](scenario)


if __name__ == "__main__":
    main()
