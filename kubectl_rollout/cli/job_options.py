"""The flags every job command shares: where the job runs (``--agent`` / ``--in-process``) and ``--detach``.

click alone: job commands' modules apply these at import, and `--help` and TAB import nothing heavier.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kubectl_rollout.cli.agent_choice import ENV_AGENT

F = TypeVar("F", bound=Callable[..., Any])


#: where ``--tui`` leaves its choice (in the context's meta: no job command's signature has to carry it)
TUI_REQUESTED = "rollout_plus.tui"


def _remember_tui(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[TUI_REQUESTED] = True
    return value


def tui_requested(ctx: click.Context) -> bool:
    return bool(ctx.meta.get(TUI_REQUESTED))


def agent_options(command_function: F) -> F:
    """``--agent/--in-process``, ``--detach`` and ``--tui``, for every job command."""
    command_function = click.option(
        "--tui",
        is_flag=True,
        expose_value=False,
        callback=_remember_tui,
        help="Run the job in the agent and watch it in the TUI; leaving the TUI leaves the job running.",
    )(command_function)
    command_function = click.option(
        "--detach",
        is_flag=True,
        help="Run the job in the agent and print its id at once; follow it later with `jobs attach ID`.",
    )(command_function)
    return click.option(
        "--agent/--in-process",
        "use_agent",
        default=None,
        help=f"Run the job in the local agent (it survives this terminal) or in this process. Default: the agent "
        f"when stdout is a terminal, else in-process; {ENV_AGENT}=1/0 chooses too.",
    )(command_function)
