"""``tui``: the terminal UI over the agent's jobs (Textual is imported only when it runs)."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_rollout.cli.options import Failure


def open_tui(*, open_job: str | None = None, readonly: bool = False, replay: tuple[Path, ...] = ()) -> None:
    """Run the TUI until the user leaves it; the jobs go on in the agent."""
    from kubectl_rollout.tui.app import RolloutPlusApp, agent_connect, recording_connect

    try:
        connect = recording_connect(list(replay)) if replay else agent_connect()
    except ValueError as err:
        raise Failure(str(err), 2) from err
    app = RolloutPlusApp(connect, readonly=readonly or bool(replay), open_job=open_job)
    app.run()
    if app.return_code:
        raise Failure("the TUI stopped with an error (see above)", app.return_code)


@click.command("tui")
@click.option("--readonly", is_flag=True, help="Show every job and hide every action (cancel, pause, resume).")
@click.option("--job", "job_id", metavar="ID", help="Open on this job's screen instead of the job list.")
@click.option(
    "--replay",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    multiple=True,
    metavar="FILE",
    help="Show the jobs recorded in FILE (-o jsonl or `jobs logs ID -o jsonl`) instead of the agent's; read-only.",
)
def tui(readonly: bool, job_id: str | None, replay: tuple[Path, ...]) -> None:
    """Watch and steer the agent's jobs live in a terminal UI (drains, rollouts, restarts).

    \b
    Screens: Jobs (every job of the agent; Enter opens one), a drain's nodes,
    pods and the PodDisruptionBudgets that block them, a rollout's revisions,
    ReplicaSets and conditions. Keys are in the footer and under ?; Ctrl+P
    lists every action. q leaves the TUI and detaches: jobs go on in the agent.

    \b
    Examples:
      kubectl rollout-plus tui
      kubectl rollout-plus tui --job 9dc74a32dd7a
      kubectl rollout-plus drain node-a --tui
      kubectl rollout-plus tui --replay drain.jsonl
    """
    open_tui(open_job=job_id, readonly=readonly, replay=replay)
