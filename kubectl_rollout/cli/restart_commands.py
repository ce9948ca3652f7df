"""``restart deployment/NAME`` (or statefulset/…, daemonset/…): the eviction-based restart, from the CLI."""

from __future__ import annotations

import sys
from typing import Any

import click

from kubectl_rollout.cli.interruptible import run_interruptibly
from kubectl_rollout.cli.jsonl_output import JsonLinesPrinter
from kubectl_rollout.cli.options import open_cluster
from kubectl_rollout.cli.restart_output import RestartPrinter
from kubectl_rollout.eviction.pod_evictor import DryRun, EvictionSettings
from kubectl_rollout.jobs.events.stream import EventStream, new_job_id
from kubectl_rollout.kube.errors import UsageError
from kubectl_rollout.kube.permissions import Permission, require
from kubectl_rollout.restart.engine import EvictionRestart, RestartTarget, parse_target

#: options of the managed restart that mean nothing here, with their defaults
MANAGED_ONLY = {"auto_rollback": False, "ignore_pdb": False, "fail_after_restarts": 3, "wait": True}


def restart_by_eviction(
    ctx: click.Context,
    text: str,
    *,
    timeout: float | None,
    grace_period: int,
    dry_run: str,
    resume: bool,
    output: str,
    **flags: Any,
) -> None:
    """Replace the pods of an unmanaged workload one at a time through the Eviction API."""
    given = [name for name, default in MANAGED_ONLY.items() if flags.pop(name, default) != default]
    if given:
        names = ", ".join("--" + n.replace("_", "-") for n in given)
        verb = "apply" if len(given) > 1 else "applies"
        raise UsageError(f"{names} {verb} only to managed workloads, not to {text}")
    cluster = open_cluster(ctx, **flags)
    try:
        target = parse_target(text, cluster.namespace)
    except ValueError as err:
        raise UsageError(str(err)) from err
    _require_permissions(cluster, target, DryRun(dry_run))
    settings = EvictionSettings(
        grace_period=grace_period, dry_run=DryRun(dry_run), timeout=timeout or 0.0, pdb_namespace=target.namespace
    )
    if output == "jsonl":
        stream = EventStream(new_job_id(), JsonLinesPrinter(sys.stdout))
    else:
        human = RestartPrinter(sys.stdout, sys.stderr)
        stream = EventStream(new_job_id(), lambda envelope: human(envelope.event))
    engine = EvictionRestart(cluster, target, stream.emit, settings=settings, resume=resume)
    result = run_interruptibly(
        engine.run,
        engine.cancel,
        on_interrupt=f"interrupted: stopping after the pod in flight; {target} keeps the pods replaced so far",
        name=f"restart {target}",
    )
    if result.failure:
        ctx.exit(1)


def _require_permissions(cluster: Any, target: RestartTarget, dry_run: DryRun) -> None:
    resource = f"{target.kind.lower()}s"
    needed = [
        Permission("get", resource, group="apps", namespace=target.namespace),
        Permission("list", "pods", namespace=target.namespace),
        Permission("watch", "pods", namespace=target.namespace),
        Permission("list", "poddisruptionbudgets", group="policy", namespace=target.namespace),
    ]
    if target.kind == "Deployment":
        needed.append(Permission("list", "replicasets", group="apps", namespace=target.namespace))
    if dry_run is not DryRun.CLIENT:
        needed.append(Permission("create", "pods", subresource="eviction", namespace=target.namespace))
    if dry_run is DryRun.NONE:
        # the cutoff that makes a stopped restart resumable is a label on the workload
        needed.append(Permission("patch", resource, group="apps", namespace=target.namespace))
        # the lease that keeps a second restart of the workload from running beside this one
        needed += [
            Permission(verb, "leases", group="coordination.k8s.io", namespace=target.namespace)
            for verb in ("get", "create", "update", "delete")
        ]
    require(cluster, needed, action=f"kubectl rollout-plus restart {target}")
