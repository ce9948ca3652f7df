"""What the cluster did, in the order it did it: several watches at once, merged into one sequence of writes.

Each kind (pods, nodes, a Lease...) comes on its own watch stream, and two streams deliver in no common order:
the watch of pods may hand over an eviction before the watch of nodes hands over the cordon made just before it.
The order is still known: the test cluster keeps every object in one etcd, and an object's resourceVersion is
the etcd revision of the write that made that version, so sorting by it puts the writes of every kind in the
order the cluster committed them. (Kubernetes asks clients in general to treat resourceVersions as opaque
strings; a test of its own single-etcd cluster may read them as revisions, and that is what turns "node B was
cordoned before any pod of node A was evicted" into a fact rather than a race between two streams.)

The watches are ``watching.Follower`` threads: they resume after a dropped connection, catch up with the
cluster on ``stop`` and fail the test if they stopped watching before it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from watching import Follower

#: one object's state per (namespace, name), per kind, as replayed up to a write
State = dict[str, dict[tuple[str, str], Any]]


@dataclass(frozen=True)
class Write:
    """One version of one object as a watch delivered it (``LISTED``: as the first list showed it)."""

    revision: int
    kind: str
    type: str
    obj: Any
    #: time.monotonic() when the watch delivered it
    at: float

    @property
    def name(self) -> str:
        return str(self.obj.metadata.name)


class _Stream(Follower):
    def __init__(self, timeline: Timeline, kind: str, list_func: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        super().__init__()
        self.timeline, self.kind, self.list_func, self.kwargs = timeline, kind, list_func, kwargs

    def _listing(self) -> tuple[Callable[..., Any], dict[str, Any]]:
        return self.list_func, self.kwargs

    def _seed(self, items: list[Any]) -> None:
        for obj in items:
            self.timeline._add(self.kind, "LISTED", obj)

    def _apply(self, kind: str, obj: Any) -> None:
        self.timeline._add(self.kind, kind, obj)

    def start(self) -> _Stream:
        self._follow()
        return self

    def stop(self) -> None:
        self._end()


class Timeline:
    """``watch`` each kind the test needs before acting; ``stop`` after; then read the writes in commit order."""

    def __init__(self) -> None:
        self._streams: list[_Stream] = []
        self._writes: list[Write] = []
        self._lock = threading.Lock()

    def watch(self, kind: str, list_func: Callable[..., Any], **list_kwargs: Any) -> Timeline:
        """Follow ``list_func(**list_kwargs)`` from now on, its writes named ``kind``."""
        self._streams.append(_Stream(self, kind, list_func, list_kwargs).start())
        return self

    def _add(self, kind: str, type_: str, obj: Any) -> None:
        write = Write(int(obj.metadata.resource_version), kind, type_, obj, time.monotonic())
        with self._lock:
            self._writes.append(write)

    def stop(self) -> Timeline:
        """Stop watching once every stream has delivered what the cluster holds now; raise what broke one."""
        errors = []
        for stream in self._streams:
            try:
                stream.stop()
            except AssertionError as err:
                errors.append(err)
        if errors:
            raise errors[0]
        return self

    def writes(self, kind: str | None = None) -> list[Write]:
        """Every write seen (of ``kind``), in the order the cluster committed them."""
        with self._lock:
            found = [w for w in self._writes if kind is None or w.kind == kind]
        return sorted(found, key=lambda w: (w.revision, w.type != "LISTED"))

    def replay(self) -> Iterator[tuple[Write, State]]:
        """Each write in commit order, with every watched object as it stood right after it (the first lists
        first). The state is the same dict each time, updated in place: copy what must outlive the step."""
        state: State = {stream.kind: {} for stream in self._streams}
        seen: set[tuple[str, str, str, int]] = set()
        for write in self.writes():
            key = (write.obj.metadata.namespace or "", write.name)
            # A version listed and then delivered again by the watch (a resumed stream) is one write.
            if (write.kind, *key, write.revision) in seen:
                continue
            seen.add((write.kind, *key, write.revision))
            if write.type == "DELETED":
                state[write.kind].pop(key, None)
            else:
                state[write.kind][key] = write.obj
            yield write, state

    def state_after(self, write: Write) -> State:
        """Every watched object as it stood right after ``write``."""
        for seen, state in self.replay():
            if seen == write:
                return {kind: dict(objects) for kind, objects in state.items()}
        raise AssertionError(f"{write.kind} {write.name} at {write.revision} is not in the timeline")

    def first(self, predicate: Callable[[Write, State], bool]) -> Write | None:
        """The first write (in commit order) after which ``predicate`` holds."""
        return next((write for write, state in self.replay() if predicate(write, state)), None)


def cordoned(node: Any) -> bool:
    return bool(node.spec.unschedulable)


def marked_for_deletion(write: Write) -> bool:
    """A pod's deletion begun (evicted or deleted), or its end."""
    return write.type == "DELETED" or write.obj.metadata.deletion_timestamp is not None
