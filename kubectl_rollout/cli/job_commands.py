"""Running a job from the command line: the spec from the flags, the printer from ``-o``, the exit code
from the result.

Every job command builds a ``JobSpec`` and hands it to the job runner, the
same one the agent uses; the printers consume the job's event stream.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kubectl_rollout.cli.interruptible import run_interruptibly
from kubectl_rollout.cli.options import Failure, settings_from
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.stream import EventStream, new_job_id
from kubectl_rollout.jobs.spec import Connection, JobResult, JobSpec

if TYPE_CHECKING:
    # The runner (the engines) and the cluster access import the kubernetes
    # client: imported when a job runs, so that --help and TAB do without it.
    from kubectl_rollout.kube.cluster_access import Cluster

Sink = Callable[[Envelope], None]


def connection_of(ctx: click.Context, cluster: Cluster, flags: dict[str, Any]) -> Connection:
    """The job's cluster as the flags resolved it: absolute kubeconfig paths, the context and namespace used."""
    from kubectl_rollout.kube.cluster_access import kubeconfig_paths

    settings = settings_from(ctx, **flags)
    paths = [p for p in kubeconfig_paths(settings.kubeconfig, os.environ) if p.is_file()]
    return Connection(
        kubeconfig=tuple(str(p.resolve()) for p in paths),
        context=cluster.context,
        namespace=cluster.namespace,
        request_timeout=settings.request_timeout,
    )


def run_in_process(
    ctx: click.Context, spec: JobSpec, cluster: Cluster, sink: Sink, *, on_interrupt: str, close: Callable[[], None]
) -> JobResult:
    """Run the job here, printing through ``sink``; Ctrl-C cancels it cooperatively.

    Exits the command with the job's exit code; an error the job ended on is printed ``error: ...``.
    """
    from kubectl_rollout.jobs.runner import run_job

    cancel = threading.Event()
    stream = EventStream(new_job_id(), sink)
    try:
        result = run_interruptibly(
            lambda: run_job(spec, stream.emit, cancel, cluster=cluster),
            cancel,
            on_interrupt=on_interrupt,
            name=f"{spec.kind.value} job",
        )
    finally:
        close()
    if result.error:
        raise Failure(result.error, result.exit_code)
    if result.exit_code:
        ctx.exit(result.exit_code)
    return result


def live() -> bool:
    return sys.stdout.isatty()
