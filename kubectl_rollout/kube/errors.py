"""Errors meant for the person at the terminal.

Each carries a message that says what failed, on which object, and what to do
next; the CLI prints it as one line and exits with the error's code, never
with a traceback.
"""

from __future__ import annotations


class UserFacingError(Exception):
    """A failure the user can act on. ``exit_code`` follows our CLI contract."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(UserFacingError):
    """The command line itself is wrong (exit code 2, like click's own)."""

    exit_code = 2
