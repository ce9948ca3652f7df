"""Which command lines the warm server may run: decided from argv alone, without importing click.

Two short, explicit lists: the commands that read the cluster (or ask the
agent) and end at once, and the job commands whose job runs in the agent (the
child only submits it and follows it, as the in-process command would: the
same decision, ``cli/agent_choice.py``). Anything else, anything this reading
does not follow (an unknown flag before the command, ``--help``, a job that
would run in-process, ``--tui``), runs in-process: a command wrongly left out
is only slower, one wrongly let in could behave differently, so every doubt
says no.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubectl_rollout.cli.agent_choice import wants_agent

#: kubectl's connection flags that take a value (cli/options.py), accepted before the command as after it
VALUE_FLAGS = frozenset({"--kubeconfig", "--context", "-n", "--namespace", "--request-timeout"})
#: commands that read and end at once, whatever their other flags
ALWAYS = frozenset({"version", "history", "cordon", "uncordon", "pause"})
#: the job commands (``agent_options``): eligible when their job runs in the agent; ``status`` is one with ``-w``
JOB_COMMANDS = frozenset(
    {"apply", "set", "scale", "restart", "resume", "undo", "promote", "abort", "retry", "drain", "campaign"}
)
#: job commands whose ``--plan`` only reads and prints (without ``--detach``)
PLANNING = frozenset({"drain", "campaign"})
#: the agent's job commands that only read
JOBS_READING = frozenset({"list", "show"})
#: never through the warm server, whichever the command: help (as quick either way), and what hands over the terminal
NEVER = frozenset({"-h", "--help", "--tui"})


def _skip_connection_flags(args: Sequence[str], start: int) -> int | None:
    """The index of the first word after the connection flags from ``start``; None at anything else."""
    index = start
    while index < len(args):
        word = args[index]
        if word in VALUE_FLAGS:
            index += 2
        elif word.startswith("--") and word.split("=", 1)[0] in VALUE_FLAGS and "=" in word:
            index += 1
        elif word.startswith("-n") and len(word) > 2 and not word.startswith("--"):
            index += 1  # -nNAMESPACE
        elif word.startswith("-"):
            return None  # a flag this reading does not know (or `--`): in-process decides
        else:
            return index
    return None  # no command at all: the group's usage, in-process


def _watches(words: Sequence[str]) -> bool:
    """``-w``/``--watch``, alone or in a cluster of short flags (``-wo``): a job, not a read."""
    for word in words:
        if word == "--watch" or word.startswith("--watch="):
            return True
        if word.startswith("-") and not word.startswith("--") and "w" in word[1:]:
            return True
    return False


def eligible(
    args: Sequence[str],
    *,
    completing: bool = False,
    environ: Mapping[str, str] | None = None,
    terminal: bool | None = None,
) -> bool:
    """Whether the command line ``args`` (argv without the program) may run through the warm server.

    ``completing``: kubectl's TAB request (``kubectl_complete-rollout_plus``), read-only and bounded (a node
    list asks the cluster with a 3 s timeout): always eligible. ``environ`` and ``terminal`` (stdout's) decide,
    as for the in-process command, whether a job runs in the agent.
    """
    if completing:
        return True
    if any(word in NEVER for word in args):
        return False
    at = _skip_connection_flags(args, 0)
    if at is None:
        return False
    command, rest = args[at], args[at + 1 :]
    if command in ALWAYS:
        return True
    if command == "status":
        return not _watches(rest) or _runs_in_agent(rest, environ, terminal)
    if command in PLANNING and "--plan" in rest:
        return "--detach" not in rest
    if command in JOB_COMMANDS:
        return _runs_in_agent(rest, environ, terminal)
    if command == "jobs":
        sub = _skip_connection_flags(rest, 0)
        return sub is not None and rest[sub] in JOBS_READING
    return False


def follows_a_job(args: Sequence[str]) -> bool:
    """Whether an eligible ``args`` submits a job to the agent and follows it (not bounded by a read's time)."""
    at = _skip_connection_flags(args, 0)
    if at is None:
        return False
    command, rest = args[at], args[at + 1 :]
    if command == "status":
        return _watches(rest)
    if command in PLANNING:
        return "--plan" not in rest
    return command in JOB_COMMANDS


def _runs_in_agent(words: Sequence[str], environ: Mapping[str, str] | None, terminal: bool | None) -> bool:
    """What the job command will choose (``run_job_command``): the agent, unless ``--in-process`` or the
    environment or a stdout that is no terminal says otherwise; ``--detach`` always means the agent."""
    if "--in-process" in words:
        return False
    if "--agent" in words or "--detach" in words:
        return True
    return wants_agent(None, environ, terminal=terminal)
