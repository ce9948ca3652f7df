"""What a person can do next, worded as the command that does it.

Engines word their messages with these instead of spelling command lines
themselves, so that every hint the CLI, the agent or the TUI shows names a
command that exists, spelled one way.
"""

from __future__ import annotations

PROGRAM = "kubectl rollout-plus"


def command(*words: str) -> str:
    return " ".join((PROGRAM, *words))


def follow_rollout(name: str) -> str:
    return command("status", name, "-w")


def resume_workload(name: str) -> str:
    return command("resume", name)


def restart_workload(workload: str, namespace: str, *, resume: bool = False) -> str:
    return command("restart", workload, "-n", namespace, *(["--resume"] if resume else []))
