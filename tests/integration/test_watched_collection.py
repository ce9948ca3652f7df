"""WatchedCollection against the real API server: it outlives bookmarks and the end of each watch.

The API server sends a BOOKMARK shortly before a watch's timeout and about
once a minute otherwise; the Python client hands them over as plain dicts. A
collection that choked on one froze a 2000-replica rollout after a minute, so
this test watches with a short timeout until bookmarks have come and gone,
then proves changes still arrive.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubernetes import client

from kubectl_rollout.kube import watched_collection
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.watched_collection import WatchedCollection


def _config_map(name: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"k": "v"})


def test_changes_still_arrive_after_bookmarks_and_expired_watches(cluster: Cluster, namespace: str) -> None:
    cluster.core.create_namespaced_config_map(namespace, _config_map("before"))
    collection = WatchedCollection(
        cluster.core.list_namespaced_config_map,
        namespace=namespace,
        description="config maps",
        watch_seconds=4,
    ).start()
    # Bookmarks are best effort: the server sends one when config maps changed elsewhere since the
    # watcher's last event. A config map updated in another namespace provides such changes.
    churn = f"churn-{namespace}"
    cluster.core.create_namespaced_config_map("default", _config_map(churn))
    try:
        assert collection.wait_until(lambda c: (namespace, "before") in c.objects_locked(), 10, None)
        deadline = time.monotonic() + 90
        tick = 0
        while collection.bookmarks < 2 and time.monotonic() < deadline:
            tick += 1
            cluster.core.patch_namespaced_config_map(churn, "default", {"data": {"k": str(tick)}})
            time.sleep(0.5)
        assert collection.bookmarks >= 1, f"no bookmark in 90 s (last error: {collection.last_error})"
        cluster.core.create_namespaced_config_map(namespace, _config_map("after"))
        cluster.core.delete_namespaced_config_map("before", namespace)

        def caught_up(c: WatchedCollection) -> bool:
            names = {name for _, name in c.objects_locked()}
            return "after" in names and "before" not in names

        assert collection.wait_until(caught_up, 10, None), (
            f"changes after the bookmarks never arrived: {sorted(cm.metadata.name for cm in collection.snapshot())}"
        )
    finally:
        collection.stop()
        cluster.core.delete_namespaced_config_map(churn, "default")


def _labelled(name: str) -> client.V1ConfigMap:
    """A config map of these tests (the namespace holds the API server's own kube-root-ca.crt too)."""
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={LABEL: "yes"}), data={"k": "v"})


LABEL = "rollout-plus.test/paged"


def test_a_transformed_collection_lists_in_pages_and_keeps_only_what_it_is_given(
    cluster: Cluster, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watched_collection, "PAGE_SIZE", 2)
    for index in range(5):
        cluster.core.create_namespaced_config_map(namespace, _labelled(f"cm-{index}"))
    seen: list[dict[str, Any]] = []

    def keep(config_map: dict[str, Any]) -> str:
        seen.append(config_map)
        return str(config_map["data"]["k"])

    pages: list[int] = []

    def listing(**kwargs: Any) -> Any:
        if not kwargs.get("watch"):
            pages.append(kwargs["limit"])
        return cluster.core.list_namespaced_config_map(**kwargs)

    collection = WatchedCollection(
        listing,
        namespace=namespace,
        description="config maps",
        transform=keep,
        label_selector=f"{LABEL}=yes",
    ).start()
    try:
        # Five objects in pages of two: one snapshot, every object once, as JSON (camelCase keys).
        assert sorted(collection.objects_locked()) == [(namespace, f"cm-{i}") for i in range(5)]
        assert pages == [2, 2, 2]
        assert collection.snapshot() == ["v"] * 5
        assert all("resourceVersion" in cm["metadata"] for cm in seen)
        cluster.core.patch_namespaced_config_map("cm-1", namespace, {"data": {"k": "changed"}})
        cluster.core.delete_namespaced_config_map("cm-2", namespace)
        cluster.core.create_namespaced_config_map(namespace, _labelled("cm-5"))

        def caught_up(c: WatchedCollection) -> bool:
            objects = c.objects_locked()
            return (
                objects.get((namespace, "cm-1")) == "changed"
                and (namespace, "cm-2") not in objects
                and (namespace, "cm-5") in objects
            )

        assert collection.wait_until(caught_up, 10, None), collection.objects_locked()
        assert collection.get((namespace, "cm-5")) == "v"
    finally:
        collection.stop()


def test_a_transformed_collection_lists_again_when_its_watch_expires(cluster: Cluster, namespace: str) -> None:
    """A resourceVersion too old (410 Gone, as after etcd's compaction) ends in a fresh list, not an error."""
    cluster.core.create_namespaced_config_map(namespace, _labelled("first"))
    collection = WatchedCollection(
        cluster.core.list_namespaced_config_map,
        namespace=namespace,
        description="config maps",
        transform=lambda cm: cm["metadata"]["name"],
        label_selector=f"{LABEL}=yes",
    )
    lists = 0
    real_list = collection._list_json

    def counted(transform: Any) -> Any:
        nonlocal lists
        lists += 1
        objects, version = real_list(transform)
        # The first watch starts from a version long compacted: the server answers 410 Gone.
        return objects, ("1" if lists == 1 else version)

    collection._list_json = counted  # type: ignore[method-assign]
    collection.start()
    try:
        cluster.core.create_namespaced_config_map(namespace, _labelled("second"))
        assert collection.wait_until(lambda c: (namespace, "second") in c.objects_locked(), 20, None), (
            collection.last_error
        )
        assert lists >= 2
        assert getattr(collection.last_error, "status", None) == 410, collection.last_error
        assert sorted(collection.snapshot()) == ["first", "second"]
    finally:
        collection.stop()


def test_a_collection_stopped_right_after_its_first_list_ends_at_once(cluster: Cluster, namespace: str) -> None:
    """Stopped between its list and its watch's response (a job that ends as it starts): the thread used to
    stream on until the server's timeout (240 s), holding a connection and calling back a stopped owner."""
    woken: list[str] = []
    for attempt in range(10):
        collection = WatchedCollection(
            cluster.core.list_namespaced_config_map,
            namespace=namespace,
            description=f"stopped-at-once {attempt}",
            on_change=lambda: woken.append("change"),
        ).start()  # returns once the first list is in: the watch's request is on its way
        (thread,) = [t for t in threading.enumerate() if t.name == f"watch stopped-at-once {attempt}"]
        collection.stop()
        thread.join(timeout=5)
        assert not thread.is_alive(), f"attempt {attempt}: the watch went on after stop"
    woken.clear()  # (each first list wakes its owner once)
    cluster.core.create_namespaced_config_map(namespace, _config_map("after-stop"))
    assert woken == []
