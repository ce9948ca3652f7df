"""Running a job from the command line: the spec from the flags, the printer from ``-o``, the exit code
from the result.

Every job command builds a ``JobSpec`` and hands it to ``run_job_command``,
which runs it in the agent (when the CLI runs in a terminal: the job survives
the terminal) or in this process (in CI: nothing to survive). Both feed the
same printer with the same events, so the output is the same either way, and
the exit code is the job's.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from kubectl_rollout.agent import client as agent_client
from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.protocol import JobInfo
from kubectl_rollout.cli.agent_choice import wants_agent
from kubectl_rollout.cli.interruptible import CtrlC, run_interruptibly
from kubectl_rollout.cli.job_options import tui_requested
from kubectl_rollout.cli.options import Failure
from kubectl_rollout.jobs.events.base import Envelope
from kubectl_rollout.jobs.events.job import JobFinished, JobState
from kubectl_rollout.jobs.events.stream import EventStream, new_job_id
from kubectl_rollout.jobs.next_steps import command
from kubectl_rollout.jobs.spec import JobResult, JobSpec
from kubectl_rollout.kube.errors import UsageError

if TYPE_CHECKING:
    # The runner (the engines) and the cluster access import the kubernetes
    # client: imported when a job runs, so that --help and TAB do without it.
    from kubectl_rollout.kube.cluster_access import Cluster

Sink = Callable[[Envelope], None]

#: a second Ctrl-C within this many seconds of the first cancels the job
CANCEL_WINDOW = 3.0
#: the exit code of a run that stopped following its job (the shell's for SIGINT)
EXIT_DETACHED = 130


def run_job_command(
    ctx: click.Context,
    spec: JobSpec,
    cluster: Cluster,
    sink: Sink,
    *,
    on_interrupt: str,
    close: Callable[[], None],
    use_agent: bool | None = None,
    detach: bool = False,
) -> None:
    """Run the job in the agent or here (see the module's docstring); exits with the job's exit code."""
    if detach and use_agent is False:
        raise UsageError("--detach runs the job in the agent; drop --in-process (or --detach)")
    tui = tui_requested(ctx)
    if tui and use_agent is False:
        raise UsageError("--tui runs the job in the agent; drop --in-process (or --tui)")
    if tui:
        try:
            agent = agent_client.connect()
        except AgentError as err:
            raise Failure(f"{err.message}; without an agent --tui cannot run the job", 1) from err
        with agent:
            try:
                info = agent.submit(spec)
            except AgentError as err:
                raise Failure(err.message, err.exit_code) from err
        close()
        from kubectl_rollout.cli.tui_command import open_tui

        open_tui(open_job=info.id, cluster=spec.connection)
        return
    if detach or wants_agent(use_agent):
        try:
            agent = agent_client.connect()
        except AgentError as err:
            if detach:
                raise Failure(f"{err.message}; without an agent --detach cannot run the job", 1) from err
            click.echo(f"warning: {err.message}; running the job in this process instead", err=True)
        else:
            run_in_agent(ctx, agent, spec, sink, close=close, detach=detach)
            return
    run_in_process(ctx, spec, cluster, sink, on_interrupt=on_interrupt, close=close)


def run_in_process(
    ctx: click.Context, spec: JobSpec, cluster: Cluster, sink: Sink, *, on_interrupt: str, close: Callable[[], None]
) -> JobResult:
    """Run the job here, printing through ``sink``; Ctrl-C cancels it cooperatively.

    Exits the command with the job's exit code; an error the job ended on is printed ``error: ...``.
    """
    from kubectl_rollout.agent.allocator import limit_arenas
    from kubectl_rollout.job_loop.loop import run_job
    from kubectl_rollout.jobs.context import JobContext

    # As in the agent (agent/allocator.py): a job's threads, one per pod evicted, mostly wait on the network, and
    # glibc's 8 arenas per core are as many places for a wave's freed pages to stay.
    limit_arenas()
    cancel = threading.Event()
    stream = EventStream(new_job_id(), sink)
    try:
        result = run_interruptibly(
            lambda: run_job(spec, JobContext(emit=stream.emit, cancel=cancel, job_id=stream.job_id), cluster=cluster),
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


def run_in_agent(
    ctx: click.Context,
    agent: agent_client.AgentClient,
    spec: JobSpec,
    sink: Sink,
    *,
    close: Callable[[], None],
    detach: bool,
) -> None:
    """Submit the job to the agent, then follow it (or, ``detach``, print its id and return)."""
    with agent:
        try:
            info = agent.submit(spec)
        except AgentError as err:
            raise Failure(err.message, err.exit_code) from err
    if detach:
        click.echo(info.id)
        return
    finished = follow_job(info.id, sink, close=close)
    exit_with(ctx, info.id, finished)


def exit_with(ctx: click.Context, job_id: str, finished: JobFinished | None) -> None:
    """Exit as the job did: its error printed ``error: ...``, its exit code."""
    if finished is None:
        raise Failure(
            f"the agent ended the events of job {job_id} before its result; see `{command('jobs', 'show', job_id)}`",
            1,
        )
    if finished.error:
        raise Failure(finished.error, finished.exit_code)
    if finished.exit_code:
        ctx.exit(finished.exit_code)


def follow_job(job_id: str, sink: Sink, *, close: Callable[[], None], from_seq: int = 1) -> JobFinished | None:
    """Print the job's events through ``sink`` until it finishes; its ``JobFinished``.

    Ctrl-C detaches (the job goes on in the agent) and says how to come back and how to stop it; a second
    Ctrl-C within 3 s cancels the job and keeps following until it has stopped. The window opens at the
    first press (a second one that comes while the first is still being handled counts) and closes 3 s
    after the message. A lost connection (the agent died) is retried once: the agent starts again and
    resumes the job.
    """
    with CtrlC() as ctrl_c:
        return _follow(job_id, sink, close=close, from_seq=from_seq, ctrl_c=ctrl_c)


def _follow(job_id: str, sink: Sink, *, close: Callable[[], None], from_seq: int, ctrl_c: CtrlC) -> JobFinished | None:
    last_seq = from_seq - 1
    cancelling = False
    reconnected = False
    while True:
        try:
            ctrl_c.interrupt_next()
            with agent_client.connect() as agent:
                for envelope in agent.attach(job_id, from_seq=last_seq + 1):
                    sink(envelope)
                    last_seq = envelope.seq
                    if isinstance(envelope.event, JobFinished):
                        close()
                        return envelope.event
                # Attached past its last event (`jobs attach --from-seq` beyond it): the result, from the journal.
                ended = _result_of_finished(agent.show(job_id))
            close()
            return ended
        except AgentError as err:
            if reconnected:
                close()
                raise Failure(err.message, err.exit_code) from err
            reconnected = True
        except KeyboardInterrupt:
            close()
            if cancelling:
                click.echo(f"\nstopped following job {job_id}; it is being cancelled", err=True)
                raise click.exceptions.Exit(EXIT_DETACHED) from None
            click.echo(
                f"\ndetached from job {job_id}; it goes on in the agent.\n"
                f"  follow it again: {command('jobs', 'attach', job_id)}\n"
                f"  stop it:         {command('jobs', 'cancel', job_id)}  (or Ctrl-C again within "
                f"{CANCEL_WINDOW:.0f} s)",
                err=True,
            )
            if not ctrl_c.pressed_again(within=CANCEL_WINDOW):
                raise click.exceptions.Exit(EXIT_DETACHED) from None
            cancel_job(job_id)
            # Following again until the job has stopped: the next press (or one during the cancel) stops that.
            cancelling = True


def _result_of_finished(info: JobInfo) -> JobFinished | None:
    """A finished job's result as its last event said it (None while it runs)."""
    state = JobState(info.state) if info.state in JobState.__members__.values() else None
    if state is None or not state.finished:
        return None
    return JobFinished(state=state, exit_code=info.exit_code or 0, summary=info.summary, error=info.error)


def cancel_job(job_id: str) -> None:
    try:
        with agent_client.connect(start=False) as agent:
            info = agent.cancel(job_id)
    except AgentError as err:
        raise Failure(err.message, err.exit_code) from err
    click.echo(f"cancelling job {info.id} ({info.kind} {info.target}); waiting for it to stop...", err=True)


def live() -> bool:
    return sys.stdout.isatty()
