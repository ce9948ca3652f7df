"""``agent start|stop|status|logs`` and ``jobs list|show|attach|cancel|pause|resume|surge|logs``."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import click

from kubectl_rollout.agent import client as agent_client
from kubectl_rollout.agent.agent_log import quote_controls
from kubectl_rollout.agent.client import cluster_calls
from kubectl_rollout.agent.errors import AgentError, AgentUnavailable
from kubectl_rollout.agent.paths import AgentPaths, agent_paths
from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.agent.settings import ENV_IDLE, Settings
from kubectl_rollout.cli.bounded_types import count
from kubectl_rollout.cli.job_commands import Sink, exit_with, follow_job, live
from kubectl_rollout.cli.jsonl_output import JsonLinesPrinter
from kubectl_rollout.cli.options import Failure
from kubectl_rollout.jobs.events.job import JobFinished
from kubectl_rollout.jobs.kinds import facts_of
from kubectl_rollout.jobs.kinds.base import load
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import JobKind
from kubectl_rollout.jobs.views.campaign import CampaignView
from kubectl_rollout.jobs.views.campaign import fold as fold_campaign
from kubectl_rollout.jobs.views.campaign_surge import surge_targets
from kubectl_rollout.kube.durations import parse_duration

_output_json = click.option(
    "-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format."
)
_output_events = click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "jsonl"]),
    default="text",
    show_default=True,
    help="text: the job command's own lines; jsonl: one event per line, as -o jsonl prints them.",
)


def _connect(*, start: bool) -> agent_client.AgentClient:
    try:
        return agent_client.connect(start=start)
    except AgentError as err:
        raise Failure(_safe(err.message), err.exit_code) from err


#: how long `agent stop` and `agent status` wait for one answer of an agent that accepted the connection
ANSWER_TIMEOUT = 5.0
#: how long each step of `agent stop --force` (the shutdown request, SIGTERM, SIGKILL) waits for the exit
STOP_STEP = 5.0


def _paths() -> AgentPaths:
    try:
        return agent_paths().ensure()
    except AgentError as err:
        raise Failure(_safe(err.message), err.exit_code) from err


def _safe(text: object) -> str:
    """What the agent sent, fit for a terminal: a job's target or error may carry a client's ESC sequences."""
    return quote_controls(str(text))


def _when(epoch: float | None) -> str:
    return "-" if epoch is None else datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")


# --- agent ------------------------------------------------------------------------------------------


@click.group("agent")
def agent_group() -> None:
    """The local agent that runs jobs, so that they survive a closed terminal.

    \b
    It starts on demand (any job command run in a terminal starts it), runs
    one per user, and exits after 10 minutes with no job and no client.
    Its socket is in the user's runtime directory, its journal and logs in
    the user's state directory ($ROLLOUT_PLUS_AGENT_DIR overrides both).
    """


@agent_group.command("start")
@click.option("--foreground", is_flag=True, help="Run the agent in this process (for debugging); logs to stderr too.")
@click.option(
    "--idle-timeout",
    default=None,
    metavar="DURATION",
    help=f"Exit after this long with no job and no client (default 10m; also ${ENV_IDLE} in seconds).",
)
@_output_json
@click.pass_context
def agent_start(ctx: click.Context, foreground: bool, idle_timeout: str | None, output: str) -> None:
    """Start the agent (if it is not running) and say where it is."""
    if idle_timeout is not None:
        try:
            seconds = parse_duration(idle_timeout)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint="--idle-timeout") from err
        os.environ[ENV_IDLE] = str(seconds)
    if foreground:
        from kubectl_rollout.agent.transport.process import (
            run_agent,  # the job runner, and through it the kubernetes client
        )

        try:
            settings = Settings.from_env()
        except AgentError as err:
            raise Failure(_safe(err.message), err.exit_code) from err
        ctx.exit(run_agent(settings=settings, foreground=True))
    with _connect(start=True) as agent:
        hello = agent.agent
    if output == "json":
        click.echo(json.dumps(hello, indent=2))
        return
    click.echo(f"agent running (pid {hello['pid']}, version {hello['agent_version']}); socket {hello['socket']}")


@agent_group.command("stop")
@click.option(
    "--force",
    is_flag=True,
    help="Stop even while jobs run (they resume when the agent starts again); an agent that does not stop "
    "within seconds is ended with SIGTERM, then SIGKILL.",
)
def agent_stop(force: bool) -> None:
    """Stop the agent (refused while jobs run, unless --force)."""
    paths = _paths()
    try:
        agent = agent_client.connect(paths, start=False, io_timeout=ANSWER_TIMEOUT)
    except AgentUnavailable:
        pid = agent_client.agent_pid(paths)
        if pid is None:
            click.echo("no agent is running")
            return
        if not force:
            raise Failure(
                f"the agent (pid {pid}) holds its lock but does not answer on {paths.socket}; end it with "
                f"`{command('agent', 'stop', '--force')}`",
                1,
            ) from None
        _end(paths, pid)
        click.echo(f"agent stopped (pid {pid}); it did not answer, so it was ended by signal; its jobs resume")
        return
    except AgentError as err:
        raise Failure(_safe(err.message), err.exit_code) from err
    pid = int(agent.agent["pid"])
    with agent:
        try:
            stopping = agent.shutdown(force=force)
        except AgentError as err:
            if not force or getattr(err, "code", None) is not None:
                raise Failure(_safe(err.message), err.exit_code) from err
            stopping = {}  # it took the request and did not answer: the signals below end it
    if not _gone(paths, STOP_STEP if force else 15.0):
        if not force:
            raise Failure(
                f"the agent (pid {pid}) did not stop within 15 s; `{command('agent', 'stop', '--force')}` ends it "
                f"(its log: `{command('agent', 'logs')}`)",
                1,
            )
        _end(paths, pid)
    running = stopping.get("running") or []
    resumes = f"; {len(running)} running job(s) resume when it starts again" if running else ""
    click.echo(f"agent stopped (pid {pid}){resumes}")


def _gone(paths: AgentPaths, seconds: float) -> bool:
    """Whether the agent's pid lock is free within ``seconds`` (the kernel frees it when the process ends)."""
    deadline = time.monotonic() + seconds
    while agent_client.agent_running(paths):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _end(paths: AgentPaths, pid: int) -> None:
    """SIGTERM the process holding the agent's pid lock, then SIGKILL: a stop that always stops.

    The signals go to the pid the lock's holder wrote, only while it still holds the lock (a pid that
    ended and was reused by another process holds no lock of ours).
    """
    for signum in (signal.SIGTERM, signal.SIGKILL):
        if agent_client.agent_pid(paths) != pid:
            return
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return
        except PermissionError as err:
            raise Failure(f"cannot signal the agent (pid {pid}): {err.strerror}", 1) from err
        if _gone(paths, STOP_STEP):
            return
    raise Failure(
        f"the agent (pid {pid}) still holds {paths.pid_file} after SIGKILL; it may be stuck in the kernel "
        "(a hung file system); check `ps -o stat,wchan -p {pid}`".replace("{pid}", str(pid)),
        1,
    )


@agent_group.command("status")
@_output_json
@click.pass_context
def agent_status(ctx: click.Context, output: str) -> None:
    """Whether the agent runs, where, and its jobs. Exits 1 when no agent is running."""
    paths = _paths()
    try:
        agent = agent_client.connect(paths, start=False, io_timeout=ANSWER_TIMEOUT)
    except AgentUnavailable as err:
        # No answer is not the same as no agent: a process may hold the pid lock and answer nothing (stuck, or
        # stopping); a new one could not start beside it.
        pid = agent_client.agent_pid(paths)
        if output == "json":
            click.echo(json.dumps({"running": pid is not None, "answering": False, "pid": pid}))
        elif pid is None:
            click.echo(err.message)
        else:
            click.echo(
                f"an agent runs (pid {pid}) but does not answer on {paths.socket}; it may be stopping. If it "
                f"stays so, `{command('agent', 'stop', '--force')}` ends it"
            )
        ctx.exit(1)
    except AgentError as err:
        raise Failure(_safe(err.message), err.exit_code) from err
    with agent:
        hello = agent.agent
    if output == "json":
        click.echo(json.dumps({"running": True, **hello}, indent=2))
        return
    jobs = ", ".join(hello["running_jobs"]) or "none"
    click.echo(f"agent running: pid {hello['pid']}, version {hello['agent_version']}, protocol {hello['protocol']}")
    click.echo(f"  since:   {_when(hello['started_at'])}")
    click.echo(f"  socket:  {hello['socket']}")
    click.echo(f"  journal: {hello['journal']}")
    click.echo(f"  log:     {hello['log']}")
    click.echo(f"  jobs running: {jobs}; clients: {hello['clients']}; idle exit after {hello['idle_seconds']:g} s")


@agent_group.command("logs")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines (Ctrl-C stops).")
def agent_logs(follow: bool) -> None:
    """Print the agent's log (rotated at 1 MiB, three old files kept next to it)."""
    path = agent_paths().log
    if not path.exists() and not follow:
        raise Failure(f"no agent log at {path} yet: the agent has not run as this user", 1)
    position, inode = 0, None
    try:
        while True:
            try:
                st = path.stat()
            except FileNotFoundError:
                st = None
            if st is not None:
                if st.st_ino != inode or st.st_size < position:
                    position, inode = 0, st.st_ino  # rotated: start the new file
                with path.open("rb") as log:
                    log.seek(position)
                    chunk = log.read()
                    position = log.tell()
                # The log quotes what clients sent; an older log may not have: nothing raw reaches the terminal.
                text = chunk.decode(errors="replace")
                sys.stdout.write("\n".join(_safe(line) for line in text.split("\n")))
                sys.stdout.flush()
            if not follow:
                return
            time.sleep(0.2)
    except KeyboardInterrupt:
        return


# --- jobs -------------------------------------------------------------------------------------------


@click.group("jobs")
def jobs_group() -> None:
    """The agent's jobs: list them, show one, follow it, pause, resume, surge or cancel it, print its events."""


def printer_for(kind: str, output: str) -> tuple[Sink, Callable[[], None]]:
    """The same printer the job's own command uses."""
    facts = facts_of(kind)
    if output == "jsonl" or facts is None:  # a kind this version does not know: its events as they are
        return JsonLinesPrinter(sys.stdout), lambda: None
    printer = load(facts.printer)(sys.stdout, sys.stderr, live=facts.live_footer and live())
    return printer, printer.close


@jobs_group.command("list")
@click.option("--limit", type=count(at_least=1), default=50, show_default=True, help="The newest N jobs.")
@_output_json
def jobs_list(limit: int, output: str) -> None:
    """The agent's jobs, newest first."""
    with _connect(start=True) as agent:
        try:
            jobs = agent.jobs(limit=limit)
        except AgentError as err:
            raise Failure(_safe(err.message), err.exit_code) from err
    if output == "json":
        click.echo(json.dumps([job.as_dict() for job in jobs], indent=2))
        return
    rows: list[tuple[str, ...]] = [("ID", "KIND", "TARGET", "STATE", "CREATED", "EXIT", "SUMMARY")]
    for job in jobs:
        exit_code = "-" if job.exit_code is None else str(job.exit_code)
        rows.append(
            tuple(
                _safe(cell)
                for cell in (
                    job.id,
                    job.kind,
                    job.target,
                    job.state,
                    _when(job.created_at),
                    exit_code,
                    job.summary or job.error,
                )
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        click.echo("   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "   " + row[-1])


def _show(job: JobInfo) -> None:
    # Every text the agent keeps came from a client or a cluster: quoted before it reaches the terminal.
    info = dataclasses.replace(
        job,
        id=_safe(job.id),
        kind=_safe(job.kind),
        target=_safe(job.target),
        state=_safe(job.state),
        summary=_safe(job.summary),
        error=_safe(job.error),
        context=None if job.context is None else _safe(job.context),
        namespace=None if job.namespace is None else _safe(job.namespace),
    )
    click.echo(f"job {info.id}: {info.kind} {info.target}")
    notes = [note for note, on in (("cancel requested", info.cancel_requested), ("paused", info.paused)) if on]
    click.echo(f"  state:    {info.state}" + (f" ({', '.join(notes)})" if notes else ""))
    click.echo(f"  context:  {info.context or '-'}; namespace: {info.namespace or '-'}")
    click.echo(f"  created:  {_when(info.created_at)}; started: {_when(info.started_at)}")
    click.echo(f"  finished: {_when(info.finished_at)}; exit code: {'-' if info.exit_code is None else info.exit_code}")
    click.echo(f"  events:   {info.last_seq}; runs: {info.runs}" + (" (resumed)" if info.runs > 1 else ""))
    if info.summary:
        click.echo(f"  summary:  {info.summary}")
    if info.error:
        click.echo(f"  error:    {info.error}")


@jobs_group.command("show")
@click.argument("job_id", metavar="ID")
@_output_json
def jobs_show(job_id: str, output: str) -> None:
    """One job: what it runs, its state, its result."""
    with _connect(start=True) as agent:
        try:
            info = agent.show(job_id)
        except AgentError as err:
            raise Failure(_safe(err.message), err.exit_code) from err
    if output == "json":
        click.echo(json.dumps(info.as_dict(), indent=2))
    else:
        _show(info)


@jobs_group.command("cancel")
@click.argument("job_id", metavar="ID")
@_output_json
def jobs_cancel(job_id: str, output: str) -> None:
    """Ask a running job to stop (a drain starts no new eviction and leaves its nodes cordoned)."""
    with _connect(start=True) as agent:
        try:
            info = agent.cancel(job_id)
        except AgentError as err:
            raise Failure(_safe(err.message), err.exit_code) from err
    if output == "json":
        click.echo(json.dumps(info.as_dict(), indent=2))
        return
    click.echo(
        f"cancel requested for job {info.id} ({info.kind} {_safe(info.target)}); follow it to its end with "
        f"`{command('jobs', 'attach', info.id)}`"
    )


def _pause_command(name: str, *, paused: bool) -> click.Command:
    @click.command(name)
    @click.argument("job_id", metavar="ID")
    @_output_json
    def command_function(job_id: str, output: str) -> None:
        with _connect(start=True) as agent:
            try:
                info = agent.pause(job_id) if paused else agent.resume(job_id)
            except AgentError as err:
                raise Failure(_safe(err.message), err.exit_code) from err
        if output == "json":
            click.echo(json.dumps(info.as_dict(), indent=2))
        elif paused:
            what = (
                "its workload is paused (no rollout progress; scaling still applies)"
                if info.kind == "rollout"
                else "no new eviction starts (those in flight go on)"
            )
            click.echo(
                f"job {info.id} ({info.kind} {_safe(info.target)}) paused: {what}; "
                f"go on with `{command('jobs', 'resume', info.id)}`"
            )
        else:
            click.echo(f"job {info.id} ({info.kind} {_safe(info.target)}) resumed")

    command_function.help = (
        "Pause a running job until `jobs resume ID`. A drain or restart starts no new eviction (those in flight "
        "go on, and its --timeout keeps running); a rollout pauses the workload it drives, as `pause NAME` does, "
        "and waits for `jobs resume ID` instead of ending. A paused job stays paused if the agent restarts."
        if paused
        else "Resume a paused job (a rollout: resume its workload and drive on)."
    )
    return command_function


jobs_group.add_command(_pause_command("pause", paused=True))
jobs_group.add_command(_pause_command("resume", paused=False))


@jobs_group.command("surge")
@click.argument("job_id", metavar="ID")
@click.argument("nodes", metavar="[NODE]...", nargs=-1)
@_output_json
def jobs_surge(job_id: str, nodes: tuple[str, ...], output: str) -> None:
    """Drain nodes of running campaign ID through a surge, the rest of its wave going on.

    A node draining now stops waiting for its PodDisruptionBudget and is drained again with --surge (its
    workload gets extra replicas on other nodes first; what was evicted stays evicted); a node of a later wave
    drains with --surge from its start. Without NODE: the nodes of the current wave that a PDB holds now for a
    workload a surge can raise. Kept in the job's journal: a campaign resumed after a restart surges them still.
    """
    with _connect(start=True) as agent:
        try:
            asked = list(nodes) or _blocked_surgeable(agent, job_id)
            info = agent.run(cluster_calls.surge(job_id, asked))
        except AgentError as err:
            raise Failure(_safe(err.message), err.exit_code) from err
    if output == "json":
        click.echo(json.dumps(info.as_dict(), indent=2))
        return
    click.echo(
        f"job {info.id} ({info.kind} {_safe(info.target)}) drains {', '.join(f'node/{n}' for n in asked)} "
        f"through a surge; follow it with `{command('jobs', 'attach', info.id)}`"
    )


def _blocked_surgeable(agent: agent_client.AgentClient, job_id: str) -> list[str]:
    """The nodes of campaign ``job_id``'s current wave a surge is for now (``campaign_surge``), from its events."""
    info = agent.show(job_id)
    if info.kind != JobKind.CAMPAIGN.value:
        raise AgentError(f"job {info.id} ({info.kind} {_safe(info.target)}) is no campaign; nothing was changed")
    view = CampaignView()
    for envelope in agent.attach(job_id, follow=False):
        view = fold_campaign(view, envelope)
    targets = surge_targets(view)
    if not targets:
        raise AgentError(
            f"no node of job {info.id}'s current wave is held by a PodDisruptionBudget whose workload a surge can "
            f"raise; nothing was changed. Name the nodes to surge: `{command('jobs', 'surge', info.id, 'NODE')}`"
        )
    return list(targets)


def _job_kind(job_id: str) -> str:
    with _connect(start=True) as agent:
        try:
            return agent.show(job_id).kind
        except AgentError as err:
            raise Failure(_safe(err.message), err.exit_code) from err


@jobs_group.command("attach")
@click.argument("job_id", metavar="ID")
@click.option("--from-seq", type=count(at_least=1), default=1, show_default=True, help="Start at this event.")
@_output_events
@click.pass_context
def jobs_attach(ctx: click.Context, job_id: str, from_seq: int, output: str) -> None:
    """Follow a job: its events so far, then live, until it ends; exits with the job's exit code.

    Ctrl-C detaches (the job goes on); a second Ctrl-C within 3 s cancels it.
    """
    sink, close = printer_for(_job_kind(job_id), output)
    exit_with(ctx, job_id, follow_job(job_id, sink, close=close, from_seq=from_seq))


@jobs_group.command("logs")
@click.argument("job_id", metavar="ID")
@_output_events
def jobs_logs(job_id: str, output: str) -> None:
    """Print a job's events so far, as its command printed them (without following)."""
    with _connect(start=True) as agent:
        try:
            kind = agent.show(job_id).kind
        except AgentError as err:
            raise Failure(_safe(err.message), err.exit_code) from err
        sink, close = printer_for(kind, output)
        finished: Any = None
        for envelope in agent.attach(job_id, follow=False):
            sink(envelope)
            if isinstance(envelope.event, JobFinished):
                finished = envelope.event
        close()
    if finished is not None and finished.error:
        click.echo(f"error: {finished.error}", err=True)
