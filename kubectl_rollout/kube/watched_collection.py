"""A collection kept current by list-then-watch in a background thread.

One watch serves every waiter: a drain of thirty pods under three PDBs holds
one watch on PDBs and one on the node's pods, instead of polling each object.
Waiters block on a condition variable and are woken on every change; a watch
that expires (410 Gone) or drops is resumed with a fresh list, so no change is
lost between the two.

A collection holds the client's models unless it is given a ``transform``:
then it reads lists and watch events as plain JSON and keeps only what the
transform makes of each object. A pod's model takes about 17 KiB in Python
(as much as its JSON as a dict), so a rollout of 2000 replicas held 35-45 MiB
of pods, most of it never read; a list of them all at once, as bytes, dicts
and models together, added 50 MiB more for a moment. So a transformed
collection lists in pages (``PAGE_SIZE`` objects; client-go's reflector
pages its lists too) and never builds a model.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_outage import ApiUnreachableError
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.json_pages import json_pages

log = logging.getLogger(__name__)

Key = tuple[str, str]

#: The server ends each watch after this long; we then resume from the last
#: resourceVersion seen. Short enough that a stopped collection's thread ends soon.
WATCH_SECONDS = 240

#: objects per list request of a transformed collection: what is held at once while it lists. Listing 2000
#: pods grew the process by 25 MiB in pages of 500, 13 MiB in pages of 250, 7 MiB in pages of 100 (what a page
#: leaves behind: its pages of memory, pinned by the few objects kept from it); it costs a request per page,
#: once per (re)list.
PAGE_SIZE = 100

#: what a transformed collection keeps of each object, from its JSON (camelCase keys, as the server sent it)
Transform = Callable[[dict[str, Any]], Any]


def stop_watch(stream: watch.Watch) -> None:
    """Stop a watch now, not at its next event: also shut its socket down.

    The client's ``Watch.stop`` only sets a flag checked between events, so a
    quiet watch would hold its thread until the server's timeout.
    """
    stream.stop()
    shut_down(getattr(stream, "_resp", None))


def shut_down(response: Any) -> None:
    """Shut the socket of a streaming response down, so that the thread reading it gets its end at once."""
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def key_of(obj: Any) -> Key:
    return (obj.metadata.namespace or "", obj.metadata.name)


def json_key_of(obj: dict[str, Any]) -> Key:
    """``key_of`` for an object as JSON."""
    metadata = obj["metadata"]
    return (metadata.get("namespace") or "", metadata["name"])


class _JsonWatch(watch.Watch):  # type: ignore[misc]  # the client is untyped
    """A watch whose events carry their objects as JSON: the client builds no model.

    The client's own ``deserialize=False`` would skip its handling of ERROR
    events (410 Gone among them), which reads a key only this path sets.
    """

    def get_return_type(self, func: Callable[..., Any]) -> str:
        return ""


class WatchedCollection:
    def __init__(
        self,
        list_func: Callable[..., Any],
        *,
        description: str,
        on_change: Callable[[], None] | None = None,
        watch_seconds: int = WATCH_SECONDS,
        transform: Transform | None = None,
        **list_kwargs: Any,
    ) -> None:
        """``transform``: keep what it makes of each object's JSON instead of the client's model (see above)."""
        self._list_func = list_func
        self._transform = transform
        self._watch_seconds = watch_seconds
        #: called (from the watch thread) after every change, e.g. to wake a loop watching several collections
        self._on_change = on_change
        self._list_kwargs = list_kwargs
        self.description = description
        self._objects: dict[Key, Any] = {}
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._synced = threading.Event()
        self._watch: watch.Watch | None = None
        #: the watch's streaming response, once its request has returned (``_open_stream``)
        self._stream_response: Any = None
        self._stream_lock = threading.Lock()

        # The client reads the list function's docstring for what to build of each event: the wrapper keeps it.
        @functools.wraps(list_func)
        def open_stream(*args: Any, **kwargs: Any) -> Any:
            return self._opened_stream(*args, **kwargs)

        self._open_stream = open_stream
        self._thread = threading.Thread(target=self._run, name=f"watch {description}", daemon=True)
        #: the last error that interrupted the watch, for diagnostics
        self.last_error: BaseException | None = None
        #: bookmarks received: the server sends them about once a minute and before each watch ends
        self.bookmarks = 0

    def start(self, *, wait_synced: float | None = 30.0) -> WatchedCollection:
        """Start watching; unless ``wait_synced`` is None, wait that long for the first list (``wait_synced``)."""
        self._thread.start()
        if wait_synced is not None:
            self.wait_synced(wait_synced)
        return self

    def wait_synced(self, timeout: float = 30.0) -> None:
        """Wait for the first list, so that several collections started together list at the same time."""
        if not self._synced.wait(timeout):
            raise TimeoutError(f"could not list {self.description} within {timeout:.0f}s: {self.last_error}")

    def stop(self) -> None:
        self._stopping.set()
        current = self._watch
        if current is not None:
            stop_watch(current)
        # A stop that came while the watch's request was on its way (the client has no response to shut yet):
        # either this sees the response, or the request's return sees the stop (``_opened_stream``).
        with self._stream_lock:
            response = self._stream_response
        shut_down(response)
        with self._changed:
            self._changed.notify_all()

    def get(self, key: Key) -> Any | None:
        with self._changed:
            return self._objects.get(key)

    def snapshot(self) -> list[Any]:
        with self._changed:
            return list(self._objects.values())

    def wait_until(
        self, predicate: Callable[[WatchedCollection], bool], timeout: float | None, cancel: threading.Event | None
    ) -> bool:
        """Block until ``predicate(self)`` holds (True), or timeout/cancel/stop (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while True:
                if predicate(self):
                    return True
                if self._stopping.is_set() or (cancel is not None and cancel.is_set()):
                    return False
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                # Wake at least once a second to notice a cancel from another thread.
                self._changed.wait(1.0 if remaining is None else min(remaining, 1.0))

    @property
    def condition(self) -> threading.Condition:
        """Held while the collection changes; predicates of ``wait_until`` run under it."""
        return self._changed

    def objects_locked(self) -> dict[Key, Any]:
        """The live mapping; only for predicates running under ``wait_until``."""
        return self._objects

    def notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # --- the background thread -------------------------------------------------------

    def _relist(self) -> str:
        if self._transform is None:
            listing = call_with_retry(self._list_func, **self._list_kwargs)
            objects = {key_of(item): item for item in listing.items}
            version = str(listing.metadata.resource_version)
        else:
            objects, version = self._list_json(self._transform)
        with self._changed:
            self._objects = objects
            self._changed.notify_all()
        self._synced.set()
        if self._on_change is not None:
            self._on_change()
        return version

    def _list_json(self, transform: Transform) -> tuple[dict[Key, Any], str]:
        """Every object, transformed, a page at a time; and the list's resourceVersion.

        The pages are one consistent snapshot (the continue token pins the first
        page's resourceVersion); a token that expired midway is a 410, and the
        watch thread lists again from the start.
        """
        objects: dict[Key, Any] = {}
        version = ""
        for page in json_pages(self._list_func, limit=PAGE_SIZE, **self._list_kwargs):
            for item in page.get("items") or []:
                objects[json_key_of(item)] = transform(item)
            version = str((page.get("metadata") or {}).get("resourceVersion"))
        return objects, version

    def _opened_stream(self, *args: Any, **kwargs: Any) -> Any:
        """The watch request (``list_func`` with watch=True), its response kept for ``stop``: a collection
        stopped before the response came would otherwise stream until the server's timeout."""
        response = self._list_func(*args, **kwargs)
        with self._stream_lock:
            self._stream_response = response
            stopping = self._stopping.is_set()
        if stopping:
            shut_down(response)
        return response

    def _run(self) -> None:
        resource_version: str | None = None
        failures = 0
        while not self._stopping.is_set():
            try:
                if resource_version is None:
                    resource_version = self._relist()
                transform = self._transform
                self._watch = watch.Watch() if transform is None else _JsonWatch()
                for event in self._watch.stream(
                    self._open_stream,
                    resource_version=resource_version,
                    timeout_seconds=self._watch_seconds,
                    allow_watch_bookmarks=True,
                    **self._list_kwargs,
                ):
                    obj = event["object"]
                    if event["type"] == "BOOKMARK":
                        # Bookmarks arrive as plain dicts: the client does not deserialize them.
                        resource_version = obj["metadata"]["resourceVersion"]
                        self.bookmarks += 1
                        continue
                    if transform is None:
                        resource_version = obj.metadata.resource_version
                        key, kept = key_of(obj), obj
                    else:
                        resource_version = obj["metadata"]["resourceVersion"]
                        key = json_key_of(obj)
                        kept = None if event["type"] == "DELETED" else transform(obj)
                    with self._changed:
                        if event["type"] == "DELETED":
                            self._objects.pop(key, None)
                        else:
                            self._objects[key] = kept
                        self._changed.notify_all()
                    if self._on_change is not None:
                        self._on_change()
                failures = 0
            except ApiException as err:
                self.last_error = err
                if err.status == 410:  # our resourceVersion is too old: list again
                    resource_version = None
                    continue
                failures += 1
            except (urllib3.exceptions.HTTPError, OSError, ValueError, ApiUnreachableError) as err:
                # A dropped connection, or an API server gone for longer than the job waits
                # (the job fails with that; this thread only keeps trying until it is stopped).
                self.last_error = err
                failures += 1
            except Exception as err:
                log.warning("watch of %s failed (%r); listing again", self.description, err)
                self.last_error = err
                failures += 1
                resource_version = None
            if failures:
                if self._stopping.is_set():
                    break
                log.debug("watch of %s interrupted (%s); resuming", self.description, self.last_error)
                self._stopping.wait(min(5.0, 0.2 * 2**failures))
                if failures > 3:
                    resource_version = None
