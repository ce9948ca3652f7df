"""The agent's cluster methods: the job loop's cluster queries, answered on worker threads, their refusals
in the protocol's error codes.

The queries (``job_loop.cluster_queries``) block on the cluster; here they run
on a pool of their own, so that the event loop goes on serving job streams
meanwhile, and every call has a bound (``call_timeout``). What they refuse
comes back as a ``ProtocolError``: ``BadQuery`` as ``INVALID_PARAMS``,
``ClusterRefused`` as ``CLUSTER_ERROR``, ``UnknownQuery`` as
``METHOD_NOT_FOUND``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

from kubectl_rollout.agent.protocol import ErrorCode, Method, ProtocolError
from kubectl_rollout.agent.settings import seconds_from
from kubectl_rollout.job_loop.cluster_queries.errors import BadQuery, ClusterRefused, UnknownQuery
from kubectl_rollout.job_loop.cluster_queries.queries import ClusterQueries, connection_of
from kubectl_rollout.jobs.kinds.drain import node_claim
from kubectl_rollout.jobs.next_steps import command

CLUSTER_METHODS = frozenset(
    {Method.NODES, Method.PLAN, Method.CORDON, Method.UNCORDON, Method.WORKLOADS, Method.HISTORY, Method.PODS}
)
#: worker threads answering cluster methods; a cluster that never answers holds one each until its bound
CLUSTER_WORKERS = 8
#: the longest one request of a cluster method may take when its connection sets no --request-timeout. The
#: TUI asks again within seconds; a worker thread held by a server that stopped answering would hold up
#: every later call instead.
CALL_TIMEOUT = 20.0
#: seconds, overriding CALL_TIMEOUT (the tests shorten it)
ENV_CALL_TIMEOUT = "ROLLOUT_PLUS_AGENT_CALL_TIMEOUT"


def call_timeout(environ: Mapping[str, str] = os.environ) -> float:
    """CALL_TIMEOUT, or the positive number of seconds ENV_CALL_TIMEOUT gives."""
    return seconds_from(environ, ENV_CALL_TIMEOUT, CALL_TIMEOUT)


@contextlib.contextmanager
def as_protocol_errors() -> Iterator[None]:
    try:
        yield
    except BadQuery as err:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, err.message) from err
    except ClusterRefused as err:
        raise ProtocolError(ErrorCode.CLUSTER_ERROR, err.message) from err
    except UnknownQuery as err:
        raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, err.message) from err


class ClusterService:
    """Runs the cluster queries for the agent's loop; ``busy``: calls not answered yet."""

    def __init__(self) -> None:
        self.queries = ClusterQueries(call_timeout=call_timeout())
        # Its own pool, not asyncio's default one: asyncio.run() waits for the default pool's threads at exit,
        # and a thread stuck in a cluster call would keep a stopped agent alive with its pid lock.
        self._pool = concurrent.futures.ThreadPoolExecutor(CLUSTER_WORKERS, thread_name_prefix="cluster")
        self.busy = 0

    async def call(self, method: str, params: dict[str, Any], claims: Mapping[str, str]) -> Any:
        """A cluster method, answered from a worker thread; ``claims``: what the running jobs drive (claim → job
        id)."""
        if method == Method.UNCORDON:
            with as_protocol_errors():
                connection = connection_of(params)
            node = params["node"]
            other = claims.get(node_claim(connection.context, node))
            if other is not None:
                raise ProtocolError(
                    ErrorCode.CONFLICT,
                    f"job {other} is draining node/{node}; uncordoning it now would let pods back while they are "
                    f"evicted. Cancel the drain first (`{command('jobs', 'cancel', other)}`); nothing was changed",
                    {"job": other, "object": f"node/{node}"},
                )
        self.busy += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, self._answer, method, params, claims)
        finally:
            self.busy -= 1

    def _answer(self, method: str, params: dict[str, Any], claims: Mapping[str, str]) -> Any:
        with as_protocol_errors():
            return self.queries.answer(method, params, claims)

    def stop(self) -> bool:
        """Stop taking calls; False when some are still unanswered (their connections are then left to the
        process exit: closing one a stuck call holds could wait for that call)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self.busy:
            return False
        self.queries.close()
        return True
