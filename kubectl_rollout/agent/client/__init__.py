"""The agent's client: one asyncio core (``core``), a thin synchronous wrapper over it (``sync``), starting
the agent on demand (``starting``), and the cluster methods as data (``cluster_calls``).

Standard library, the protocol and ``jobs`` only: the CLI imports it before
every job command (it must start fast: no kubernetes client, no Textual, no
engine) and the TUI imports it (it may import no engine). The
``agent-client-is-light`` contract in pyproject.toml holds it to that.
"""

from kubectl_rollout.agent.client.core import (
    ENV_HELLO_TIMEOUT,
    HELLO_TIMEOUT,
    START_TIMEOUT,
    AsyncAgentClient,
    Lagged,
    Trace,
    hello_timeout,
)
from kubectl_rollout.agent.client.core import connect as connect_async
from kubectl_rollout.agent.client.starting import agent_pid, agent_running
from kubectl_rollout.agent.client.sync import AgentClient, connect

__all__ = [
    "ENV_HELLO_TIMEOUT",
    "HELLO_TIMEOUT",
    "START_TIMEOUT",
    "AgentClient",
    "AsyncAgentClient",
    "Lagged",
    "Trace",
    "agent_pid",
    "agent_running",
    "connect",
    "connect_async",
    "hello_timeout",
]
