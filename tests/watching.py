"""Waiting on the cluster by watching it, never by sleeping and sampling.

``until`` lists once, then follows a watch from that list's resourceVersion,
so no change between the two is missed; it returns the first object for which
the predicate holds, and fails the test with the last state seen otherwise.

Every watch here is a ``ResumedWatch``: when its connection drops (the API
server ends the response early: urllib3's "Response ended prematurely", or
its timeout ends it) it watches again from the last resourceVersion it
delivered, so a dropped stream neither ends a wait early nor loses an event.
A ``Follower`` watches in a thread for the length of a test; if that thread
stops before the test is done with it, the test fails with the reason.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any, ClassVar, TypeVar

import pytest
import urllib3
from kubernetes import watch
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.watched_collection import stop_watch

T = TypeVar("T")

#: how long a watch may go without a connection (an API server restarting) before it gives up
RECONNECT_FOR = 60.0
#: server-side timeout of one watch request, when the caller sets no deadline
REQUEST_SECONDS = 300


class WatchLost(AssertionError):
    """The watch can no longer show every change: the history it would resume from is gone (410), or the API
    server stayed out of reach. A test that relies on it fails instead of passing on what it did not see."""


#: what a follower keeps of each object it is sent (the raw JSON in, the part to build the model from out)
Trim = Callable[[dict[str, Any]], dict[str, Any]]


class _TrimmedWatch(watch.Watch):
    """A watch that builds each object's model from the part ``trim`` keeps: a pod's full model costs ~1.6 ms to
    build here, its metadata and conditions ~0.2 ms, and a follower of 600 pods on a loaded machine fell minutes
    behind the API server building them."""

    def __init__(self, trim: Trim) -> None:
        super().__init__()
        self._trim = trim

    def unmarshal_event(self, data: str, return_type: Any) -> Any:
        try:
            event = json.loads(data) if data and not data.isspace() else None
        except json.JSONDecodeError:
            event = None
        if not isinstance(event, dict) or event.get("type") in ("BOOKMARK", "ERROR") or not return_type:
            return super().unmarshal_event(data, return_type)  # as the client has them
        kept = self._trim(event["object"])
        event["raw_object"] = kept
        event["object"] = self._api_client.deserialize(SimpleNamespace(data=json.dumps(kept)), return_type)
        return event


class ResumedWatch:
    """A watch of ``list_func`` from ``resource_version`` that outlives its connections.

    ``events`` yields (type, object) in the API server's order, bookmarks taken for their resourceVersion
    only; a dropped connection is opened again from the last resourceVersion delivered. ``stop`` (from any
    thread) ends it at once. ``trim``: the part of each object to build its model from (all of it by default).
    """

    def __init__(
        self, list_func: Callable[..., Any], resource_version: str, *, trim: Trim | None = None, **list_kwargs: Any
    ) -> None:
        self.list_func = list_func
        self.resource_version = resource_version
        self.trim = trim
        self.list_kwargs = list_kwargs
        #: connections opened again after a drop (a test may print it)
        self.reconnects = 0
        self._stopped = threading.Event()
        self._watch: watch.Watch | None = None

    def stop(self) -> None:
        self._stopped.set()
        if self._watch is not None:
            stop_watch(self._watch)

    def events(self, *, deadline: float | None = None) -> Iterator[tuple[str, Any]]:
        """Until ``stop`` (or ``deadline``, a ``time.monotonic()``): every event after ``resource_version``."""
        unreachable_since: float | None = None
        while not self._stopped.is_set():
            seconds = REQUEST_SECONDS
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                seconds = max(1, min(seconds, int(left + 0.999)))
            self._watch = watch.Watch() if self.trim is None else _TrimmedWatch(self.trim)
            try:
                for event in self._watch.stream(
                    self.list_func,
                    resource_version=self.resource_version,
                    timeout_seconds=seconds,
                    allow_watch_bookmarks=True,
                    **self.list_kwargs,
                ):
                    unreachable_since = None
                    if event["type"] == "BOOKMARK":
                        self.resource_version = event["raw_object"]["metadata"]["resourceVersion"]
                        continue
                    obj = event["object"]
                    self.resource_version = obj.metadata.resource_version
                    yield event["type"], obj
                # The server's timeout ended the response: watch on from where it stopped.
            except ApiException as err:
                if self._stopped.is_set():
                    return
                if err.status == 410:
                    raise WatchLost(
                        f"the watch can no longer resume from resourceVersion {self.resource_version}: {err.reason}"
                    ) from err
                if err.status not in (429, 500, 502, 503, 504):
                    raise
                unreachable_since = self._pause(unreachable_since, err)
            except (urllib3.exceptions.HTTPError, OSError) as err:
                # ProtocolError ("Response ended prematurely"), a reset connection, or no connection at all.
                if self._stopped.is_set():
                    return
                unreachable_since = self._pause(unreachable_since, err)

    def _pause(self, since: float | None, err: BaseException) -> float:
        """Before connecting again: at once after a first drop, then a little longer each time the server
        stays out of reach, for at most ``RECONNECT_FOR`` s in all."""
        now = time.monotonic()
        since = now if since is None else since
        if now - since > RECONNECT_FOR:
            raise WatchLost(f"the API server stayed out of reach for {RECONNECT_FOR:.0f} s: {err}") from err
        self.reconnects += 1
        self._stopped.wait(min(1.0, now - since))
        return since


def _listed(list_func: Callable[..., Any], **list_kwargs: Any) -> Any:
    # A throttling API server may refuse the list (429); the watch is long-running and exempt.
    return call_with_retry(list_func, **list_kwargs)


def until(
    list_func: Callable[..., Any],
    predicate: Callable[[Any], bool],
    *,
    timeout: float,
    what: str,
    **list_kwargs: Any,
) -> Any:
    deadline = time.monotonic() + timeout
    listing = _listed(list_func, **list_kwargs)
    last: Any = None
    for item in listing.items:
        last = item
        if predicate(item):
            return item
    stream = ResumedWatch(list_func, listing.metadata.resource_version, **list_kwargs)
    for kind, obj in stream.events(deadline=deadline):
        if kind == "DELETED":
            continue
        last = obj
        if predicate(obj):
            stream.stop()
            return obj
    pytest.fail(f"timed out after {timeout}s waiting for {what}; last seen: {_summary(last)}")


def _summary(obj: Any) -> str:
    if obj is None:
        return "nothing"
    status = getattr(obj, "status", None)
    return f"{obj.metadata.name}: {status}"


def until_deleted(list_func: Callable[..., Any], name: str, *, timeout: float, **list_kwargs: Any) -> None:
    """Return once object NAME no longer exists (already gone counts)."""
    deadline = time.monotonic() + timeout
    selector = f"metadata.name={name}"
    listing = _listed(list_func, field_selector=selector, **list_kwargs)
    if not listing.items:
        return
    stream = ResumedWatch(list_func, listing.metadata.resource_version, field_selector=selector, **list_kwargs)
    for kind, _obj in stream.events(deadline=deadline):
        if kind == "DELETED":
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
    listing = _listed(list_func, **list_kwargs)
    objects = {(o.metadata.namespace, o.metadata.name): o for o in listing.items}
    if predicate(list(objects.values())):
        return list(objects.values())
    stream = ResumedWatch(list_func, listing.metadata.resource_version, **list_kwargs)
    for kind, obj in stream.events(deadline=deadline):
        key = (obj.metadata.namespace, obj.metadata.name)
        if kind == "DELETED":
            objects.pop(key, None)
        else:
            objects[key] = obj
        if predicate(list(objects.values())):
            stream.stop()
            return list(objects.values())
    seen = ", ".join(sorted(_summary(o) for o in objects.values()))
    pytest.fail(f"timed out after {timeout}s waiting for {what}; last seen: {seen or 'nothing'}")


def eventually(check: Callable[[], T], *, timeout: float, what: str, every: float = 0.05) -> T:
    """For what no watch shows (the API server's metrics, a process's state): ask again every ``every`` s until
    ``check`` answers something true; that answer."""
    deadline = time.monotonic() + timeout
    while not (answer := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)
    return answer


class Follower:
    """Lists once, then follows a ``ResumedWatch`` from that list's resourceVersion in a thread (no change
    between the two is missed) until ``stop``.

    Subclasses say what to list (``_listing``), take the list (``_seed``) and each event (``_apply``). The
    thread ends only through ``stop``; if it ends otherwise (its watch lost, ``_apply`` failed), ``stop``
    and ``check`` raise why. A follower a test started and never stopped is stopped when the test ends
    (``stop_followers``, from conftest), and what broke it fails that test.
    """

    #: started and not stopped yet
    _running: ClassVar[list[Follower]] = []

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self._stream: ResumedWatch | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=type(self).__name__)
        self._stopping = False
        #: (namespace, name, resourceVersion) of each object as delivered (the list's included), for ``catch_up``
        self._delivered: set[tuple[str, str, str]] = set()
        self._progress = threading.Condition()

    def _listing(self) -> tuple[Callable[..., Any], dict[str, Any]]:
        """The list function and its arguments."""
        raise NotImplementedError

    def _seed(self, items: list[Any]) -> None:
        raise NotImplementedError

    def _apply(self, kind: str, obj: Any) -> None:
        raise NotImplementedError

    #: the part of each watched object ``_apply`` reads (None: all of it); its metadata's name, namespace and
    #: resourceVersion must be in it
    _trim: ClassVar[Trim | None] = None

    def _follow(self) -> None:
        func, kwargs = self._listing()
        listing = _listed(func, **kwargs)
        self._seed(listing.items)
        self._delivered.update(_version(o) for o in listing.items)
        self._stream = ResumedWatch(func, listing.metadata.resource_version, trim=type(self)._trim, **kwargs)
        Follower._running.append(self)
        self._thread.start()

    def _run(self) -> None:
        assert self._stream is not None
        try:
            for kind, obj in self._stream.events():
                with self._progress:  # what ``wait``'s predicates read changes under this lock only
                    self._apply(kind, obj)
                    self._delivered.add(_version(obj))
                    self._progress.notify_all()
            if not self._stopping:
                raise WatchLost("the watch ended on its own")
        except BaseException as err:
            if not self._stopping:
                self.error = err
        finally:
            with self._progress:
                self._progress.notify_all()

    def check(self) -> None:
        """Raise what stopped the watch, if it stopped."""
        if self.error is not None:
            raise AssertionError(f"{type(self).__name__} stopped watching: {self.error!r}") from self.error

    def wait(self, predicate: Callable[[], bool], *, timeout: float) -> bool:
        """Whether ``predicate`` (called under the follower's lock, after each event) held within ``timeout``;
        raises at once if the watch stops."""
        with self._progress:
            held = self._progress.wait_for(lambda: self.error is not None or predicate(), timeout)
        self.check()
        return held

    def catch_up(self, timeout: float = RECONNECT_FOR + 30) -> None:
        """Wait until the watch has delivered every object as a fresh list shows it now: what the test
        saw happen by other means is in what this follower recorded. As long as the watch may spend connecting
        again, and more: a CI rehearsal's 600-pod follower was still 15 events short after 30 s; a watch that
        gives up raises at once."""
        func, kwargs = self._listing()
        now = {_version(o) for o in _listed(func, **kwargs).items}
        if not self.wait(lambda: now <= self._delivered, timeout=timeout):
            missing = sorted(now - self._delivered)
            raise AssertionError(f"{type(self).__name__}: the watch never delivered {missing} in {timeout} s")

    def _end(self, *, catch_up: bool = True) -> None:
        try:
            if catch_up and self.error is None:
                self.catch_up()
        finally:
            self._stopping = True
            if self._stream is not None:
                self._stream.stop()
            self._thread.join(10)
            if self in Follower._running:
                Follower._running.remove(self)
        self.check()


def _version(obj: Any) -> tuple[str, str, str]:
    return (obj.metadata.namespace or "", obj.metadata.name, obj.metadata.resource_version)


def stop_followers() -> None:
    """At the end of a test: stop every follower it left running; what broke any of them fails the test."""
    errors = []
    for follower in list(Follower._running):
        try:
            follower._end(catch_up=False)
        except AssertionError as err:
            errors.append(str(err))
    if errors:
        pytest.fail("; ".join(errors), pytrace=False)
