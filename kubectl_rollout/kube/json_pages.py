"""A list call read a page at a time as the server's JSON, never as the client's models.

The client's model of a pod takes about ten times its JSON in memory; callers that keep only a few fields
(``slim_pods``, a watched collection's transform) decode each page themselves and keep what they need.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from kubectl_rollout.kube.api_retry import call_with_retry


def json_pages(list_func: Callable[..., Any], *, limit: int | None, **list_kwargs: Any) -> Iterator[dict[str, Any]]:
    """Each page of ``list_func(**list_kwargs)``, decoded, following the continue token to the last page (whose
    ``metadata.resourceVersion`` is the list's). ``limit``: objects per page; None: the server's whole list."""
    token: str | None = None
    while True:
        page_kwargs: dict[str, Any] = {"_preload_content": False}
        if limit:
            page_kwargs["limit"] = limit
        if token:
            page_kwargs["_continue"] = token
        response = call_with_retry(list_func, **list_kwargs, **page_kwargs)
        try:
            page: dict[str, Any] = json.loads(response.data)
        finally:
            response.release_conn()
        yield page
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return
