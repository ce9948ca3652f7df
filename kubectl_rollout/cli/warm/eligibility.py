"""Which command lines the warm server may run: decided from argv alone, without importing click.

A short, explicit list: the commands that read the cluster (or ask the agent)
and end at once. Anything else, anything this reading does not follow (an
unknown flag before the command, ``--help``, ``status -w``, a job), runs
in-process: a command wrongly left out is only slower, one wrongly let in
could behave differently, so every doubt says no.
"""

from __future__ import annotations

from collections.abc import Sequence

#: kubectl's connection flags that take a value (cli/options.py), accepted before the command as after it
VALUE_FLAGS = frozenset({"--kubeconfig", "--context", "-n", "--namespace", "--request-timeout"})
#: commands that read and end at once, whatever their other flags
ALWAYS = frozenset({"version", "history", "cordon", "uncordon"})
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


def eligible(args: Sequence[str], *, completing: bool = False) -> bool:
    """Whether the command line ``args`` (argv without the program) may run through the warm server.

    ``completing``: kubectl's TAB request (``kubectl_complete-rollout_plus``), read-only and bounded (a node
    list asks the cluster with a 3 s timeout): always eligible.
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
        return not _watches(rest)
    if command == "drain":
        return "--plan" in rest and "--detach" not in rest
    if command == "jobs":
        sub = _skip_connection_flags(rest, 0)
        return sub is not None and rest[sub] in JOBS_READING
    return False
