"""The agent's tunables, from the environment a client passes to the agent it starts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.agent.errors import AgentError

ENV_IDLE = "ROLLOUT_PLUS_AGENT_IDLE_SECONDS"
ENV_RETENTION = "ROLLOUT_PLUS_AGENT_RETENTION_DAYS"
ENV_STALL = "ROLLOUT_PLUS_AGENT_STALL_SECONDS"


@dataclass(frozen=True, kw_only=True)
class Settings:
    #: exit after this long with no job running and no client connected
    idle_seconds: float = 600.0
    #: finished jobs older than this are pruned from the journal when the agent starts
    retention_days: float = 30.0
    #: a client whose socket accepts nothing for this long is dropped
    stall_seconds: float = 30.0
    #: a client this many events behind gets its backlog coalesced (superseded events left out)
    lag_events: int = 2000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        given: dict[str, Any] = {}
        for name, variable in (
            ("idle_seconds", ENV_IDLE),
            ("retention_days", ENV_RETENTION),
            ("stall_seconds", ENV_STALL),
        ):
            if env.get(variable):
                try:
                    given[name] = float(env[variable])
                except ValueError as err:
                    raise AgentError(
                        f"{variable}={env[variable]!r} is not a number; unset it or give seconds/days"
                    ) from err
        return cls(**given)


def seconds_from(environ: Mapping[str, str], variable: str, default: float) -> float:
    """``default``, or the positive number of seconds ``variable`` gives, at most 30 times ``default``
    (a bound a person may lengthen on a slow machine and the tests shorten; anything else is ignored)."""
    try:
        seconds = float(environ.get(variable, ""))
    except ValueError:
        return default
    return seconds if 0 < seconds <= default * 30 else default
