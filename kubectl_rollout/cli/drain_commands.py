"""``drain``, ``cordon`` and ``uncordon``: kubectl's flags and wording, and more.

Everything that could be wrong with the command line is checked before the
cluster is touched; then the nodes are resolved and the caller's permissions
are checked, still before any change.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kubectl_rollout.cli.bounded_types import GRACE_PERIOD, NON_NEGATIVE_INT64, OBJECT_NAME, count
from kubectl_rollout.cli.cluster_completion import complete_nodes
from kubectl_rollout.cli.job_options import agent_options
from kubectl_rollout.cli.options import duration_callback, global_options, open_cluster
from kubectl_rollout.jobs import next_steps
from kubectl_rollout.kube.errors import UsageError
from kubectl_rollout.kube.label_selectors import validate_label_selector

# The engine, the cluster access and the permission checks import the
# kubernetes client, the job spec and the printers the event classes: each
# function imports them where it needs them, so that `drain --help` and TAB
# completion do without them.
if TYPE_CHECKING:
    from kubectl_rollout.cli.job_commands import Sink
    from kubectl_rollout.jobs.events.base import Envelope

log = logging.getLogger(__name__)


def selector_callback(_ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if not value:
        return ""
    try:
        validate_label_selector(value)
    except ValueError as err:
        flag = "--pod-selector" if param.name == "pod_selector" else "-l/--selector"
        raise click.BadParameter(
            f"{value!r} is not a valid label selector ({err}); e.g. app=web,tier!=db or 'env in (prod,staging)'",
            param_hint=flag,
        ) from err
    return value


def surge_max_callback(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from kubectl_rollout.drain.surge.decision import parse_surge_max

    try:
        parse_surge_max(value)
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--surge-max") from err
    return value.strip()


def _check_targets(nodes: tuple[str, ...], selector: str, command: str) -> None:
    if not nodes and not selector:
        raise UsageError(f"{command} needs NODE names or -l/--selector; e.g. kubectl rollout-plus {command} node-1")
    if nodes and selector:
        raise UsageError("cannot specify both a node name and a --selector option")


_dry_run_option = click.option(
    "--dry-run",
    type=click.Choice(["none", "client", "server"]),
    default="none",
    is_flag=False,
    flag_value="client",
    show_default=True,
    help="client: only print what would be done; server: also submit the requests with dryRun, so the API "
    "server (and its PDB checks) judge them without persisting anything. --dry-run alone means client.",
)
_selector_option = click.option(
    "-l",
    "--selector",
    default=None,
    callback=selector_callback,
    metavar="SELECTOR",
    help="Select the nodes by label (e.g. node-pool=blue) instead of naming them.",
)


#: kubectl drain's pod options, which a campaign's drains take too
ignore_daemonsets_option = click.option("--ignore-daemonsets", is_flag=True, help="Ignore DaemonSet-managed pods.")
delete_emptydir_data_option = click.option(
    "--delete-emptydir-data",
    is_flag=True,
    help="Continue even if there are pods using emptyDir (local data that will be deleted when the node is drained).",
)
force_option = click.option(
    "--force", is_flag=True, help="Continue even if there are pods that do not declare a controller."
)
grace_period_option = click.option(
    "--grace-period",
    type=GRACE_PERIOD,
    default=-1,
    show_default=True,
    help="Period of time in seconds given to each pod to terminate gracefully. If negative, the default "
    "value specified in the pod will be used.",
)
max_concurrent_evictions_option = click.option(
    "--max-concurrent-evictions",
    type=count(at_least=0),
    default=50,
    show_default=True,
    help="Evictions in flight at once (requested, pod not gone yet). 0 means no limit, like kubectl.",
)


@click.command()
@click.argument("nodes", nargs=-1, type=OBJECT_NAME, shell_complete=complete_nodes)
@_selector_option
@ignore_daemonsets_option
@delete_emptydir_data_option
@force_option
@grace_period_option
@click.option(
    "--timeout",
    default="0s",
    callback=duration_callback,
    show_default=True,
    metavar="DURATION",
    help="The length of time to wait per node before giving up, zero means infinite.",
)
@click.option(
    "--pod-selector",
    default=None,
    callback=selector_callback,
    metavar="SELECTOR",
    help="Label selector to filter pods on the node.",
)
@click.option(
    "--disable-eviction",
    is_flag=True,
    help="Force drain to use delete, even if eviction is supported. This will bypass checking "
    "PodDisruptionBudgets, use with caution.",
)
@click.option(
    "--skip-wait-for-delete-timeout",
    type=NON_NEGATIVE_INT64,
    default=0,
    show_default=True,
    help="If pod DeletionTimestamp older than N seconds, skip waiting for the pod. Seconds must be greater "
    "than 0 to skip.",
)
@click.option(
    "--chunk-size",
    type=NON_NEGATIVE_INT64,
    default=500,
    show_default=True,
    help="Return large lists in chunks rather than all at once. Pass 0 to disable.",
)
@_dry_run_option
@max_concurrent_evictions_option
@click.option(
    "--node-batch",
    type=count(at_least=1),
    default=None,
    metavar="N",
    help="Drain N nodes at a time; before the next batch, wait until every workload that lost a pod is "
    "fully available again. Without it: cordon all nodes first, then drain them one by one (kubectl).",
)
@click.option(
    "--uncordon-on-failure",
    is_flag=True,
    help="Uncordon a node whose drain failed or timed out (by default it stays cordoned, like kubectl).",
)
@click.option(
    "--surge",
    is_flag=True,
    help="Where a PodDisruptionBudget allows no eviction now, first give the pods' Deployment extra replicas "
    "(Ready on other nodes), then evict, then restore its count. A workload managed by rollout-plus is "
    "surged through its one ReplicaSet while the drain holds its driver's Lease (apply and scale are "
    "refused meanwhile). The original count is recorded on the object raised, so a later drain, uncordon "
    "or resume restores it after a crash. What cannot surge (StatefulSets, bare pods, HPA, mid-rollout, "
    "no room, quota) is explained and waits for its PDB.",
)
@click.option(
    "--surge-max",
    default=None,
    callback=surge_max_callback,
    metavar="N|P%",
    help="With --surge: at most N extra replicas per workload, or P% of its replicas (rounded up). "
    "Default 100%: as many as it has pods on the drained nodes.",
)
@click.option(
    "--surge-wait",
    default="60s",
    callback=duration_callback,
    show_default=True,
    metavar="DURATION",
    help="With --surge: how long extra pods may take to be Ready; past it (Pending: no room) the surge is "
    "given up, its count restored, and the pods wait for their PDB.",
)
@click.option(
    "--plan",
    "plan_only",
    is_flag=True,
    help="Print the pre-flight plan (every pod, its verdict and why) and exit without changing anything.",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json", "jsonl"]),
    default="text",
    show_default=True,
    help="text: kubectl-style lines (live progress on a terminal); jsonl: one event per line; "
    "json: the plan (with --plan or --dry-run).",
)
@agent_options
@global_options
@click.pass_context
def drain(
    ctx: click.Context,
    /,
    nodes: tuple[str, ...],
    selector: str,
    ignore_daemonsets: bool,
    delete_emptydir_data: bool,
    force: bool,
    grace_period: int,
    timeout: float,
    pod_selector: str,
    disable_eviction: bool,
    skip_wait_for_delete_timeout: int,
    chunk_size: int,
    dry_run: str,
    max_concurrent_evictions: int,
    node_batch: int | None,
    uncordon_on_failure: bool,
    surge: bool,
    surge_max: str | None,
    surge_wait: float,
    plan_only: bool,
    output: str,
    use_agent: bool | None,
    detach: bool,
    **flags: Any,
) -> None:
    """Drain NODE... in preparation for maintenance: cordon, then evict its pods.

    Evictions go through the Eviction API, so PodDisruptionBudgets are
    honoured. A pod blocked by a PDB is retried as soon as the PDB has room
    (watched, not polled), Retry-After is always honoured, and every blocked
    pod is explained: which PDB, how many healthy pods it has and needs, since
    when, and when the next attempt comes.

    \b
    Exit codes: 0 every node drained; 1 some pods could not be removed (the
    summary lists them, with each node's state); 2 bad usage.

    \b
    Examples:
      kubectl rollout-plus drain node-1 --ignore-daemonsets
      kubectl rollout-plus drain -l pool=blue --node-batch=2 --ignore-daemonsets
      kubectl rollout-plus drain node-1 --plan -o json
      kubectl rollout-plus drain node-1 --surge --surge-max=25%
    """
    from kubectl_rollout.cli.job_commands import run_job_command
    from kubectl_rollout.cli.options import connection_of
    from kubectl_rollout.jobs.events.eviction import DryRun
    from kubectl_rollout.jobs.spec import DrainJob, DrainOptions, JobKind, JobSpec

    _check_targets(nodes, selector, "drain")
    if output == "json" and not (plan_only or dry_run != "none"):
        raise UsageError("-o json prints the plan; use it with --plan or --dry-run, or use -o jsonl for events")
    if surge_max is not None and not surge:
        raise UsageError("--surge-max bounds a surge; add --surge (e.g. --surge --surge-max=25%)")
    if surge and disable_eviction:
        raise UsageError(
            "--surge makes room for evictions under PodDisruptionBudgets; --disable-eviction deletes pods "
            "past their PDBs, so the two do not go together"
        )
    options = DrainOptions(
        force=force,
        ignore_daemonsets=ignore_daemonsets,
        delete_emptydir_data=delete_emptydir_data,
        grace_period=grace_period,
        timeout=timeout,
        pod_selector=pod_selector,
        disable_eviction=disable_eviction,
        skip_wait_for_delete_timeout=skip_wait_for_delete_timeout,
        chunk_size=chunk_size,
        dry_run=DryRun(dry_run),
        max_concurrent_evictions=max_concurrent_evictions,
        node_batch=node_batch or 0,
        uncordon_on_failure=uncordon_on_failure,
        surge=surge,
        surge_max=surge_max or DrainOptions.surge_max,
        surge_wait=surge_wait,
    )
    cluster = open_cluster(ctx, **flags)
    spec = JobSpec(
        kind=JobKind.DRAIN,
        connection=connection_of(ctx, cluster, flags),
        drain=DrainJob(nodes=nodes, selector=selector, options=options, plan_only=plan_only),
    )
    sink, close = _sink(output)
    run_job_command(
        ctx,
        spec,
        cluster,
        sink,
        on_interrupt="interrupted: stopping the drain (nodes stay cordoned)...",
        close=close,
        # --plan changes nothing and ends at once: nothing for the agent to keep alive.
        use_agent=False if plan_only and not detach else use_agent,
        detach=detach,
    )


def _sink(output: str) -> tuple[Sink, Callable[[], None]]:
    """Where the drain's events go for ``-o``: JSON lines, the plan as JSON, or kubectl-style text."""
    from kubectl_rollout.cli.drain_output import drain_printer, plan_as_json
    from kubectl_rollout.cli.job_commands import live
    from kubectl_rollout.cli.jsonl_output import JsonLinesPrinter
    from kubectl_rollout.jobs.events import drain as drain_events

    if output == "jsonl":
        return JsonLinesPrinter(sys.stdout), lambda: None
    printer = drain_printer(sys.stdout, sys.stderr, live=live())
    if output != "json":
        return printer, printer.close

    from kubectl_rollout.jobs.events import surge as surge_events

    # --surge follows the plan with its SurgesPlanned: one JSON document holds both ("surges").
    held: list[drain_events.DrainPlanned] = []

    def flush(surges: surge_events.SurgesPlanned | None = None) -> None:
        if held:
            click.echo(plan_as_json(held.pop(), surges))

    def plan_as_json_then_text(envelope: Envelope) -> None:
        event = envelope.event
        if isinstance(event, drain_events.DrainPlanned):
            flush()
            held.append(event)
        elif isinstance(event, surge_events.SurgesPlanned):
            flush(event)
        else:
            flush()
            printer(envelope)

    def close() -> None:
        flush()
        printer.close()

    return plan_as_json_then_text, close


def _cordon_command(name: str, *, cordoned: bool) -> click.Command:
    verb = "cordon" if cordoned else "uncordon"

    @click.command(name=name)
    @click.argument("nodes", nargs=-1, type=OBJECT_NAME, shell_complete=complete_nodes)
    @_selector_option
    @_dry_run_option
    @global_options
    @click.pass_context
    def command(ctx: click.Context, /, nodes: tuple[str, ...], selector: str, dry_run: str, **flags: Any) -> None:
        from kubectl_rollout.cli.drain_output import drain_printer
        from kubectl_rollout.drain.engine import DrainEngine
        from kubectl_rollout.jobs.context import JobContext
        from kubectl_rollout.jobs.events.eviction import DryRun
        from kubectl_rollout.jobs.events.stream import EventStream, new_job_id
        from kubectl_rollout.jobs.spec import DrainOptions
        from kubectl_rollout.kube.permissions import Permission, require

        _check_targets(nodes, selector, verb)
        cluster = open_cluster(ctx, **flags)
        printer = drain_printer(sys.stdout, sys.stderr)
        stream = EventStream(new_job_id(), printer)
        options = DrainOptions(dry_run=DryRun(dry_run))
        engine = DrainEngine(cluster, options, JobContext(emit=stream.emit))
        try:
            targets = engine.resolve_nodes(list(nodes), selector)
            if dry_run != "client":
                require(cluster, [Permission("patch", "nodes")], action=next_steps.command(verb))
            for node in targets:
                (engine.cordon if cordoned else engine.uncordon)(node)
            if not cordoned and dry_run == "none":
                # A surge drain killed before its restore left a raised count behind: put it back now.
                engine.restore_leftover_surges()
        finally:
            engine.close()

    command.help = f"Mark NODE... as {'un' if cordoned else ''}schedulable" + (
        " (new pods will not be placed there)." if cordoned else "."
    )
    return command


cordon = _cordon_command("cordon", cordoned=True)
uncordon = _cordon_command("uncordon", cordoned=False)
