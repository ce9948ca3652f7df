"""``tui``: the terminal UI over the agent's jobs (Textual is imported only when it runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kubectl_rollout.cli.options import Failure, connection_of, global_options, open_cluster
from kubectl_rollout.jobs.spec import Connection


def open_tui(
    *,
    open_job: str | None = None,
    readonly: bool = False,
    replay: tuple[Path, ...] = (),
    cluster: Connection | None = None,
    node_selector: str = "",
    no_cluster: str = "",
) -> None:
    """Run the TUI until the user leaves it; the jobs go on in the agent.

    ``cluster``: the cluster its Nodes and Workloads screens show (None: they say there is none, and
    ``no_cluster`` why).
    """
    from kubectl_rollout.tui.app import RolloutPlusApp, agent_connect, recording_connect
    from kubectl_rollout.tui.cluster_scope import ClusterScope

    try:
        connect = recording_connect(list(replay)) if replay else agent_connect()
    except ValueError as err:
        raise Failure(str(err), 2) from err
    scope = None
    if cluster is not None and not replay:
        scope = ClusterScope(connection=cluster, node_selector=node_selector, readonly=readonly)
    app = RolloutPlusApp(
        connect, readonly=readonly or bool(replay), open_job=open_job, cluster=scope, no_cluster=no_cluster
    )
    app.run()
    if app.return_code:
        raise Failure("the TUI stopped with an error (see above)", app.return_code)


@click.command("tui")
@click.option(
    "--readonly",
    is_flag=True,
    help="Show everything and hide every action (cancel, pause, resume, cordon, drain, rollout changes).",
)
@click.option(
    "-l",
    "--selector",
    "node_selector",
    default="",
    metavar="SELECTOR",
    help="The Nodes screen shows the nodes this label selector selects (default: every node).",
)
@click.option("--job", "job_id", metavar="ID", help="Open on this job's screen instead of the job list.")
@click.option(
    "--replay",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    multiple=True,
    metavar="FILE",
    help="Show the jobs recorded in FILE (-o jsonl or `jobs logs ID -o jsonl`) instead of the agent's; read-only.",
)
@global_options
@click.pass_context
def tui(
    ctx: click.Context,
    /,
    readonly: bool,
    node_selector: str,
    job_id: str | None,
    replay: tuple[Path, ...],
    **flags: Any,
) -> None:
    """Watch and steer the agent's jobs live in a terminal UI (drains, rollouts, restarts).

    \b
    Screens: Jobs (1: every job of the agent; Enter opens one), a drain's
    nodes, pods and the PodDisruptionBudgets that block them, a rollout's
    revisions, ReplicaSets and conditions; Nodes (2: cordon, uncordon, a
    drain's plan, then the drain) and Workloads (3: of the namespace, -n;
    pause, resume, undo, restart, set image, abort) of the cluster the
    connection flags name. Keys are in the footer and under ?; Ctrl+P
    lists every action. q leaves the TUI and detaches: jobs go on in the agent.

    \b
    Examples:
      kubectl rollout-plus tui
      kubectl rollout-plus tui --job 9dc74a32dd7a
      kubectl rollout-plus drain node-a --tui
      kubectl rollout-plus tui --replay drain.jsonl
    """
    from kubectl_rollout.kube.cluster_access import ClusterAccessError

    cluster = None
    no_cluster = ""
    if not replay:
        try:
            # Reads the kubeconfig (no request): the screens then name the cluster as a job spec does.
            cluster = connection_of(ctx, open_cluster(ctx, **flags), flags)
        except ClusterAccessError as err:
            # The Jobs screen needs the agent only; the Nodes and Workloads screens say why they are empty.
            no_cluster = f"no cluster is configured: {err.message}"
    open_tui(
        open_job=job_id,
        readonly=readonly,
        replay=replay,
        cluster=cluster,
        node_selector=node_selector,
        no_cluster=no_cluster,
    )
