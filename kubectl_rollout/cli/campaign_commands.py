"""``campaign``: drain a pool of nodes in waves, within a budget, zones, a rate, windows, with hooks.

Everything that could be wrong with the command line (a budget of 0 or past 100 %, a malformed window, an
unknown time zone, a label that cannot be) is refused before the cluster is touched; then the nodes are
resolved (none matching is an error) and the caller's permissions checked, still before any change.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kubectl_rollout.cli.bounded_types import OBJECT_NAME
from kubectl_rollout.cli.cluster_completion import complete_nodes
from kubectl_rollout.cli.drain_commands import (
    delete_emptydir_data_option,
    force_option,
    grace_period_option,
    ignore_daemonsets_option,
    max_concurrent_evictions_option,
    selector_callback,
    surge_max_callback,
)
from kubectl_rollout.cli.job_options import agent_options
from kubectl_rollout.cli.options import duration_callback, global_options, open_cluster
from kubectl_rollout.kube.errors import UsageError

if TYPE_CHECKING:
    from kubectl_rollout.cli.job_commands import Sink
    from kubectl_rollout.jobs.events.base import Envelope
    from kubectl_rollout.kube.cluster_access import Cluster


def _checked(parse: Callable[[str], object], flag: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback that refuses, as a usage error naming ``flag``, what ``parse`` refuses."""

    def callback(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        values = value if isinstance(value, tuple) else (value,)
        for one in values:
            if one is None:
                continue
            try:
                parse(one)
            except ValueError as err:
                raise click.BadParameter(str(err), param_hint=flag) from err
        return value

    return callback


def _budget(text: str) -> object:
    from kubectl_rollout.campaign.budget import parse_budget

    return parse_budget(text)


def _zone_budget(text: str) -> object:
    from kubectl_rollout.campaign.budget import parse_budget

    return parse_budget(text, flag="--zone-budget")


def _rate(text: str) -> object:
    from kubectl_rollout.campaign.rate import parse_rate

    return parse_rate(text)


def _window(text: str) -> object:
    from kubectl_rollout.campaign.windows import parse_window

    return parse_window(text)


def _label_option(flag: str, *, when: str) -> Callable[[Any], Any]:
    """``--pre-label`` / ``--post-label``: kured's labels before and after a node, checked as they are parsed."""

    def parse(text: str) -> object:
        from kubectl_rollout.campaign.settings import parse_label

        return parse_label(text, flag=flag)

    return click.option(
        flag,
        f"{flag.removeprefix('--').replace('-', '_')}s",
        multiple=True,
        callback=_checked(parse, flag),
        metavar="KEY=VALUE|KEY-",
        help=f"A label set (or removed) on each node {when} (repeatable).",
    )


@click.command()
@click.argument("nodes", nargs=-1, type=OBJECT_NAME, shell_complete=complete_nodes)
@click.option(
    "-l",
    "--selector",
    default=None,
    callback=selector_callback,
    metavar="SELECTOR",
    help="The nodes of the campaign by label (e.g. pool=blue); with NODE... too, both sets.",
)
@click.option(
    "--budget",
    default="1",
    show_default=True,
    callback=_checked(_budget, "--budget"),
    metavar="N|P%",
    help="Nodes out at once (cordoned and not done): a count, or a percentage of the campaign's nodes, "
    "rounded up as karpenter's NodePool budgets round (5% of 10 nodes is 1). A wave is that many nodes.",
)
@click.option(
    "--per-zone",
    is_flag=True,
    help="One zone (topology.kubernetes.io/zone) at a time: a zone's nodes all "
    "done before the next zone's first starts.",
)
@click.option(
    "--zone-budget",
    default=None,
    callback=_checked(_zone_budget, "--zone-budget"),
    metavar="N|P%",
    help="Nodes of one zone out at once, at most: a count or a percentage of that zone's nodes (--budget applies too).",
)
@click.option(
    "--rate",
    default=None,
    callback=_checked(_rate, "--rate"),
    metavar="N/PERIOD",
    help="At most N nodes start within any PERIOD (e.g. 3/10m); a wave waits until the rate allows it.",
)
@click.option(
    "--soak",
    default="0s",
    callback=duration_callback,
    show_default=True,
    metavar="DURATION",
    help="After each wave, the workloads that lost pods must be fully available and stay so this long "
    "before the after-hooks and the next wave.",
)
@click.option(
    "--order",
    type=click.Choice(["least-loaded", "given"]),
    default="least-loaded",
    show_default=True,
    help="least-loaded: fewest pods first; given: NODE... as named, then the selector's in name order.",
)
@click.option(
    "--window",
    "windows",
    multiple=True,
    callback=_checked(_window, "--window"),
    metavar="'[DAYS] START-END [ZONE]'",
    help="When nodes may start (repeatable; outside every window none does): e.g. 'Mon-Fri 22:00-04:00 "
    "Europe/Berlin', 'Sat,Sun 01:00-05:00', 'daily 10:00:00-10:30:00 UTC'. END before START crosses midnight.",
)
@click.option(
    "--at-window-end",
    type=click.Choice(["finish", "stop"]),
    default="finish",
    show_default=True,
    help="What the nodes in progress do when the window closes: finish their drains, or stop (they stay "
    "cordoned and are drained again at the next window).",
)
@click.option(
    "--pre-hook",
    default=None,
    metavar="CMD",
    help="A command (sh -c) run before each node is cordoned, "
    "with ROLLOUT_PLUS_NODE and ROLLOUT_PLUS_JOB set; non-zero: see --on-hook-failure.",
)
@click.option(
    "--post-hook",
    default=None,
    metavar="CMD",
    help="A command run after each node is drained and soaked "
    "(reboot or replace it here), before it is uncordoned; non-zero: see --on-hook-failure.",
)
@click.option(
    "--hook-timeout",
    default="10m",
    callback=duration_callback,
    show_default=True,
    metavar="DURATION",
    help="How long a hook may run; past it, it is killed and counts as failed. 0: no limit.",
)
@click.option(
    "--on-hook-failure",
    type=click.Choice(["stop", "skip"]),
    default="stop",
    show_default=True,
    help="stop: no node starts after a failed hook; skip: leave that node (a pre-hook's: never cordoned; a "
    "post-hook's: left cordoned) and go on.",
)
@_label_option("--pre-label", when="before its cordon, once its pre-hook let it in")
@_label_option("--post-label", when="after its drain, before its post-hook")
@click.option(
    "--on-blocked",
    type=click.Choice(["wait", "skip", "keep", "surge"]),
    default="wait",
    show_default=True,
    help="A node not drained within --timeout: wait (no bound), skip (uncordon it, go on, report it), keep "
    "(leave it cordoned and labelled rollout-plus.io/campaign-kept, go on), surge (drain it again with "
    "--surge: extra replicas first; kept if that fails too).",
)
@click.option(
    "--timeout",
    default="0s",
    callback=duration_callback,
    show_default=True,
    metavar="DURATION",
    help="How long one node's drain may take before --on-blocked applies; 0 with --on-blocked wait.",
)
@click.option("--no-uncordon", is_flag=True, help="Leave each node cordoned after its after-hook.")
@click.option(
    "--taint-pending/--no-taint-pending",
    default=True,
    show_default=True,
    help="Put a soft taint (rollout-plus.io/campaign=JOB:PreferNoSchedule) on every node still to drain, so "
    "that evicted pods go to nodes done or outside the pool and are not evicted again; the scheduler still "
    "uses those nodes when nothing else fits. Each node's taint comes off when the campaign is finished with "
    "it; all of them at the end, and while it waits for a window.",
)
@ignore_daemonsets_option
@delete_emptydir_data_option
@force_option
@grace_period_option
@max_concurrent_evictions_option
@click.option(
    "--surge-max",
    default=None,
    callback=surge_max_callback,
    metavar="N|P%",
    help="With --on-blocked surge: at most N extra replicas per workload, or P% of its replicas.",
)
@click.option(
    "--plan",
    "plan_only",
    is_flag=True,
    help="Print the plan (waves, their blockers, the pods rules keep, the time) and change nothing.",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json", "jsonl"]),
    default="text",
    show_default=True,
    help="text: lines for people; jsonl: one event per line; json: the plan (with --plan).",
)
@agent_options
@global_options
@click.pass_context
def campaign(
    ctx: click.Context,
    /,
    nodes: tuple[str, ...],
    selector: str,
    budget: str,
    per_zone: bool,
    zone_budget: str | None,
    rate: str | None,
    soak: float,
    order: str,
    windows: tuple[str, ...],
    at_window_end: str,
    pre_hook: str | None,
    post_hook: str | None,
    hook_timeout: float,
    on_hook_failure: str,
    pre_labels: tuple[str, ...],
    post_labels: tuple[str, ...],
    on_blocked: str,
    timeout: float,
    no_uncordon: bool,
    taint_pending: bool,
    ignore_daemonsets: bool,
    delete_emptydir_data: bool,
    force: bool,
    grace_period: int,
    max_concurrent_evictions: int,
    surge_max: str | None,
    plan_only: bool,
    output: str,
    use_agent: bool | None,
    detach: bool,
    **flags: Any,
) -> None:
    """Drain a pool of nodes in waves: a budget out at once, zones, a rate, soak, hooks and windows.

    Each wave is cordoned whole first (no evicted pod lands on a node next in
    line; the later waves' nodes carry a soft taint), then drained through the Eviction API (PodDisruptionBudgets
    honoured, blocked pods explained), then soaked; then each node's
    after-hook runs and it is uncordoned. Pods with karpenter.sh/do-not-disrupt
    or Cluster API's cluster.x-k8s.io/drain (skip, wait-completed) are not
    evicted. In the agent, the campaign waits for its windows and resumes
    after a restart without draining a finished node again.

    \b
    Exit codes: 0 every node done; 1 a node skipped, kept or failed, or the
    campaign stopped; 2 bad usage.

    \b
    Examples:
      kubectl rollout-plus campaign -l pool=blue --budget 20% --per-zone --plan
      kubectl rollout-plus campaign -l pool=blue --budget 2 --soak 2m --ignore-daemonsets \\
          --window 'Mon-Fri 22:00-04:00 Europe/Berlin' --post-hook ./reboot-node.sh
    """
    from kubectl_rollout.cli.job_commands import run_job_command
    from kubectl_rollout.cli.options import connection_of
    from kubectl_rollout.jobs.spec import (
        AtWindowEnd,
        CampaignJob,
        DrainOptions,
        JobKind,
        JobSpec,
        NodeOrder,
        OnBlocked,
        OnHookFailure,
    )

    if not nodes and not selector:
        raise UsageError("campaign needs NODE names or -l/--selector; e.g. kubectl rollout-plus campaign -l pool=blue")
    if output == "json" and not plan_only:
        raise UsageError("-o json prints the plan; use it with --plan, or use -o jsonl for events")
    if on_blocked in ("skip", "keep", "surge") and timeout <= 0:
        raise UsageError(
            f"--on-blocked {on_blocked} acts on a node not drained within --timeout; give one, e.g. --timeout 10m"
        )
    if surge_max is not None and on_blocked != "surge":
        raise UsageError("--surge-max bounds the surge of --on-blocked surge; add --on-blocked surge")
    cluster = open_cluster(ctx, **flags)
    job = CampaignJob(
        nodes=_resolved(cluster, nodes, selector),
        selector=selector,
        budget=budget,
        per_zone=per_zone,
        zone_budget=zone_budget or "",
        rate=rate or "",
        soak=soak,
        order=NodeOrder(order),
        windows=windows,
        at_window_end=AtWindowEnd(at_window_end),
        pre_hook=pre_hook or "",
        post_hook=post_hook or "",
        hook_timeout=hook_timeout,
        on_hook_failure=OnHookFailure(on_hook_failure),
        pre_labels=pre_labels,
        post_labels=post_labels,
        on_blocked=OnBlocked(on_blocked),
        uncordon=not no_uncordon,
        taint_pending=taint_pending,
        drain=DrainOptions(
            force=force,
            ignore_daemonsets=ignore_daemonsets,
            delete_emptydir_data=delete_emptydir_data,
            grace_period=grace_period,
            timeout=timeout,
            max_concurrent_evictions=max_concurrent_evictions,
            surge_max=surge_max or DrainOptions.surge_max,
        ),
        plan_only=plan_only,
    )
    spec = JobSpec(kind=JobKind.CAMPAIGN, connection=connection_of(ctx, cluster, flags), campaign=job)
    sink, close = _sink(output)
    run_job_command(
        ctx,
        spec,
        cluster,
        sink,
        on_interrupt="interrupted: stopping the campaign (the nodes in progress stay cordoned)...",
        close=close,
        use_agent=False if plan_only and not detach else use_agent,
        detach=detach,
    )


def _resolved(cluster: Cluster, names: tuple[str, ...], selector: str) -> tuple[str, ...]:
    """NODE... then the selector's nodes (by name): pinned in the spec, so that the job claims them all from
    its start and a resume takes the same ones."""
    from kubectl_rollout.drain.engine import DrainError
    from kubectl_rollout.kube.api_retry import call_with_retry

    chosen = list(dict.fromkeys(names))
    if selector:
        listing = call_with_retry(cluster.core.list_node, label_selector=selector)
        if not listing.items:
            raise DrainError(
                f'no node matches the selector "{selector}"; nothing was changed. Check it with kubectl get nodes -l'
            )
        chosen += sorted(n.metadata.name for n in listing.items if n.metadata.name not in chosen)
    return tuple(chosen)


def _sink(output: str) -> tuple[Sink, Callable[[], None]]:
    from kubectl_rollout.cli.campaign_output import campaign_printer, plan_as_json
    from kubectl_rollout.cli.job_commands import live
    from kubectl_rollout.cli.jsonl_output import JsonLinesPrinter
    from kubectl_rollout.jobs.events import campaign as campaign_events

    if output == "jsonl":
        return JsonLinesPrinter(sys.stdout), lambda: None
    printer = campaign_printer(sys.stdout, sys.stderr, live=live())
    if output != "json":
        return printer, printer.close

    def plan_as_json_then_text(envelope: Envelope) -> None:
        if isinstance(envelope.event, campaign_events.CampaignPlanned):
            click.echo(plan_as_json(envelope.event))
        else:
            printer(envelope)

    return plan_as_json_then_text, printer.close
