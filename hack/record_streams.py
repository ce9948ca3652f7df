#!/usr/bin/env python3
"""Records the event streams of real jobs for the reducers' table tests (tests/unit/streams/).

Runs against the local control plane (``--kubeconfig``, default the one
``hack/cluster.py up`` wrote in .cluster/default): a drain of two nodes, one
whose pods a PodDisruptionBudget holds back and one whose bare pod refuses to
go, then a restart by eviction of the surviving Deployment. Each job's
``-o jsonl`` output is saved as it came, so the unit tests fold what the
engines really emitted.

    .venv/bin/python hack/record_streams.py --kubeconfig .cluster/shared/kubeconfig
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client, config, utils

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import manifests  # noqa: E402  (a test helper module, by path)

OUT = ROOT / "tests" / "unit" / "streams"


def _apply(api: client.ApiClient, namespace: str, body: dict[str, Any]) -> None:
    utils.create_from_dict(api, body, namespace=namespace)


def _wait(what: str, check: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            sys.exit(f"record_streams: timed out waiting for {what}")
        time.sleep(0.2)


def _plugin(kubeconfig: str, *args: str) -> str:
    command = [str(ROOT / ".venv" / "bin" / "kubectl-rollout_plus"), "--kubeconfig", kubeconfig, *args, "-o", "jsonl"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    print(f"$ {' '.join(args)} -> exit {done.returncode}", file=sys.stderr)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", default=str(ROOT / ".cluster" / "default" / "kubeconfig"))
    args = parser.parse_args()
    config.load_kube_config(config_file=args.kubeconfig)
    api = client.ApiClient()
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)

    run = uuid.uuid4().hex[:6]
    namespace, pool = f"streams-{run}", f"streams-{run}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    _wait("the default service account", lambda: core.list_namespaced_service_account(namespace).items)
    node_a, node_b, node_c = (f"streams-{run}-{x}" for x in "abc")
    try:
        core.create_node(manifests.dedicated_node(node_a, pool=pool))
        web = manifests.deployment(
            "web",
            replicas=3,
            annotations={manifests.READY_AFTER: "1s"},
            pod_spec=manifests.placement(pool),
        )
        _apply(api, namespace, web)
        _apply(api, namespace, manifests.pdb("web", app="web", max_unavailable=1))

        def web_ready() -> bool:
            status = apps.read_namespaced_deployment("web", namespace).status
            return (status.available_replicas or 0) == 3

        _wait("web available on node a", web_ready)
        core.create_node(manifests.dedicated_node(node_b, pool=pool))
        core.create_node(manifests.dedicated_node(node_c, pool=pool))
        bare = manifests.pod("bare", spec={**manifests.placement(pool, node_c)})
        _apply(api, namespace, bare)
        _wait("the bare pod running", lambda: core.read_namespaced_pod("bare", namespace).status.phase == "Running")

        OUT.mkdir(parents=True, exist_ok=True)
        drain = _plugin(args.kubeconfig, "drain", node_a, node_c, "--timeout", "60s")
        (OUT / "drain_pdb_and_bare_pod.jsonl").write_text(drain)
        _wait("web available again", web_ready)
        restart = _plugin(args.kubeconfig, "restart", "deployment/web", "-n", namespace)
        (OUT / "restart_deployment.jsonl").write_text(restart)
    finally:
        core.delete_namespace(namespace)
        for node in (node_a, node_b, node_c):
            with contextlib.suppress(client.ApiException):
                core.delete_node(node)
    print(f"record_streams: wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
