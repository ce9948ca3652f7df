"""``restart deployment/NAME`` (or statefulset/…, daemonset/…): the eviction-based restart, from the CLI."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from kubectl_rollout.cli.options import open_cluster
from kubectl_rollout.kube.errors import UsageError

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
    use_agent: bool | None = None,
    detach: bool = False,
    **flags: Any,
) -> None:
    """Replace the pods of an unmanaged workload one at a time through the Eviction API."""
    # Imported here, not above: the engine imports the kubernetes client, the
    # rest the event classes, which `restart --help` and TAB do without.
    from kubectl_rollout.cli.job_commands import Sink, run_job_command
    from kubectl_rollout.cli.jsonl_output import JsonLinesPrinter
    from kubectl_rollout.cli.options import connection_of
    from kubectl_rollout.cli.restart_output import restart_printer
    from kubectl_rollout.jobs.events.eviction import DryRun
    from kubectl_rollout.jobs.spec import JobKind, JobSpec, RestartJob
    from kubectl_rollout.restart.engine import parse_target

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
    spec = JobSpec(
        kind=JobKind.RESTART,
        connection=connection_of(ctx, cluster, flags),
        restart=RestartJob(
            workload=str(target),
            grace_period=grace_period,
            dry_run=DryRun(dry_run),
            timeout=timeout or 0.0,
            resume=resume,
        ),
    )
    if output == "jsonl":
        sink: Sink = JsonLinesPrinter(sys.stdout)
        close: Callable[[], None] = lambda: None  # noqa: E731
    else:
        printer = restart_printer(sys.stdout, sys.stderr)
        sink, close = printer, printer.close
    run_job_command(
        ctx,
        spec,
        cluster,
        sink,
        on_interrupt=f"interrupted: stopping after the pod in flight; {target} keeps the pods replaced so far",
        close=close,
        use_agent=use_agent,
        detach=detach,
    )
