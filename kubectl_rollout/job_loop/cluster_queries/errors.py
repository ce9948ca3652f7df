"""What a cluster query refuses, worded for people; the agent's transport maps each to its protocol's code.

This layer may not import the agent (its protocol included), so the queries say *which kind* of refusal
it is, and the transport says it on the wire: ``BadQuery`` as ``INVALID_PARAMS``, ``ClusterRefused`` as
``CLUSTER_ERROR`` (nothing was changed), ``UnknownQuery`` as ``METHOD_NOT_FOUND``.
"""

from __future__ import annotations


class QueryError(Exception):
    """A query that was not answered; ``message`` says why and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadQuery(QueryError):
    """The query's params do not say what to read (a missing name, a connection that does not decode)."""


class ClusterRefused(QueryError):
    """The cluster refused the query or does not have what it names; nothing was changed."""


class UnknownQuery(QueryError):
    """No query of that name."""
