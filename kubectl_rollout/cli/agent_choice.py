"""Whether a job command runs in the agent or in its own process: from its flags, the environment, the terminal.

Standard library only: the warm command client (``cli/warm/eligibility.py``)
decides with it before anything heavier is imported, and the job commands
(``cli/job_commands.py``) with the same function, so the two never disagree.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

#: 1 runs job commands in the agent, 0 in-process; unset: the agent when stdout is a terminal
ENV_AGENT = "ROLLOUT_PLUS_AGENT"


def wants_agent(choice: bool | None, environ: Mapping[str, str] | None = None, *, terminal: bool | None = None) -> bool:
    """The flag if given (``--agent``/``--in-process``), else $ROLLOUT_PLUS_AGENT, else whether stdout is a terminal."""
    if choice is not None:
        return choice
    env = os.environ if environ is None else environ
    given = env.get(ENV_AGENT, "").strip().lower()
    if given in ("1", "true", "yes", "on"):
        return True
    if given in ("0", "false", "no", "off"):
        return False
    if terminal is not None:
        return terminal
    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except ValueError:  # a closed stdout
        return False
