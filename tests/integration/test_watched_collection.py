"""WatchedCollection against the real API server: it outlives bookmarks and the end of each watch.

The API server sends a BOOKMARK shortly before a watch's timeout and about
once a minute otherwise; the Python client hands them over as plain dicts. A
collection that choked on one froze a 2000-replica rollout after a minute, so
this test watches with a short timeout until bookmarks have come and gone,
then proves changes still arrive.
"""

from __future__ import annotations

import time

from kubernetes import client

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
