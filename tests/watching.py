"""Waiting on the cluster by watching it, never by sleeping and sampling.

``until`` lists once, then follows a watch from that list's resourceVersion,
so no change between the two is missed; it returns the first object for which
the predicate holds, and fails the test with the last state seen otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import watch

from kubectl_rollout.kube.api_retry import call_with_retry


def until(
    list_func: Callable[..., Any],
    predicate: Callable[[Any], bool],
    *,
    timeout: float,
    what: str,
    **list_kwargs: Any,
) -> Any:
    deadline = time.monotonic() + timeout
    # A throttling API server may refuse the list (429); the watch is long-running and exempt.
    listing = call_with_retry(list_func, **list_kwargs)
    last: Any = None
    for item in listing.items:
        last = item
        if predicate(item):
            return item
    resource_version = listing.metadata.resource_version
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"timed out after {timeout}s waiting for {what}; last seen: {_summary(last)}")
        stream = watch.Watch()
        for event in stream.stream(
            list_func,
            resource_version=resource_version,
            timeout_seconds=max(1, int(remaining)),
            **list_kwargs,
        ):
            obj = event["object"]
            resource_version = obj.metadata.resource_version
            if event["type"] == "DELETED":
                continue
            last = obj
            if predicate(obj):
                stream.stop()
                return obj


def _summary(obj: Any) -> str:
    if obj is None:
        return "nothing"
    status = getattr(obj, "status", None)
    return f"{obj.metadata.name}: {status}"


def until_deleted(list_func: Callable[..., Any], name: str, *, timeout: float, **list_kwargs: Any) -> None:
    """Return once object NAME no longer exists (already gone counts)."""
    selector = f"metadata.name={name}"
    listing = list_func(field_selector=selector, **list_kwargs)
    if not listing.items:
        return
    stream = watch.Watch()
    for event in stream.stream(
        list_func,
        field_selector=selector,
        resource_version=listing.metadata.resource_version,
        timeout_seconds=max(1, int(timeout)),
        **list_kwargs,
    ):
        if event["type"] == "DELETED":
            stream.stop()
            return
    pytest.fail(f"timed out after {timeout}s waiting for {name} to be deleted")


def until_collection(
    list_func: Callable[..., Any],
    predicate: Callable[[list[Any]], bool],
    *,
    timeout: float,
    what: str,
    **list_kwargs: Any,
) -> list[Any]:
    """Like ``until``, over the whole collection: the first state (after any event) for which ``predicate``
    holds on every object listed; fails the test with the last state seen otherwise."""
    deadline = time.monotonic() + timeout
    listing = call_with_retry(list_func, **list_kwargs)
    objects = {(o.metadata.namespace, o.metadata.name): o for o in listing.items}
    if predicate(list(objects.values())):
        return list(objects.values())
    resource_version = listing.metadata.resource_version
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            seen = ", ".join(sorted(_summary(o) for o in objects.values()))
            pytest.fail(f"timed out after {timeout}s waiting for {what}; last seen: {seen or 'nothing'}")
        stream = watch.Watch()
        for event in stream.stream(
            list_func, resource_version=resource_version, timeout_seconds=max(1, int(remaining)), **list_kwargs
        ):
            obj = event["object"]
            resource_version = obj.metadata.resource_version
            key = (obj.metadata.namespace, obj.metadata.name)
            if event["type"] == "DELETED":
                objects.pop(key, None)
            else:
                objects[key] = obj
            if predicate(list(objects.values())):
                stream.stop()
                return list(objects.values())
