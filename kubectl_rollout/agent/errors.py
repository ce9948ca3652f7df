"""The agent's errors for people: what failed, on which object, and what to do next."""

from __future__ import annotations


class AgentError(Exception):
    """A failure of the agent or of talking to it, worded for the person at the terminal."""

    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class AgentUnavailable(AgentError):
    """No agent answers and none could be started: the CLI runs the job in-process instead."""
