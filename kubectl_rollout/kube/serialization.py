"""Client models as plain JSON values (dicts, lists, ISO dates), as the API server writes them."""

from __future__ import annotations

import functools
from typing import Any

from kubernetes import client


@functools.cache
def _serializer() -> Any:
    # Serialising touches no connection, but every ApiClient builds a connection
    # pool; one for the whole process, not one per call.
    return client.ApiClient()


def to_plain(obj: Any) -> Any:
    """A client model (or a list or dict of them) as the JSON the API server would send."""
    return _serializer().sanitize_for_serialization(obj)
