"""The tests' own watchers (tests/watching.py) against the real API server: a dropped stream is resumed with no
event lost, and a watcher that stops before its test ends fails the test instead of letting it pass blind."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from kubernetes import client
from watching import Follower, ResumedWatch, WatchLost, stop_followers

from kubectl_rollout.kube.cluster_access import Cluster


class ConfigMapNames(Follower):
    """The names of the namespace's ConfigMaps, as created."""

    def __init__(self, cluster: Cluster, namespace: str, *, fail_on: str | None = None) -> None:
        super().__init__()
        self.cluster, self.namespace, self.fail_on = cluster, namespace, fail_on
        self.names: list[str] = []

    def _listing(self) -> tuple[Any, dict[str, Any]]:
        return self.cluster.core.list_namespaced_config_map, {"namespace": self.namespace}

    def _seed(self, items: list[Any]) -> None:
        self.names = [cm.metadata.name for cm in items]

    def _apply(self, kind: str, obj: Any) -> None:
        if obj.metadata.name == self.fail_on:
            raise RuntimeError(f"cannot take {obj.metadata.name}")
        if kind == "ADDED":
            self.names.append(obj.metadata.name)

    def start(self) -> ConfigMapNames:
        self._follow()
        return self

    def stop(self) -> list[str]:
        self._end()
        return self.names


def _create(cluster: Cluster, namespace: str, name: str) -> None:
    cluster.core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"k": "v"})
    )


def test_a_dropped_stream_is_resumed_from_its_last_resource_version(cluster: Cluster, namespace: str) -> None:
    names = ConfigMapNames(cluster, namespace).start()
    _create(cluster, namespace, "before-the-drop")
    assert names.wait(lambda: "before-the-drop" in names.names, timeout=30)

    # The response ends under the watch, as when the API server cuts it: urllib3's "Response ended prematurely".
    assert names._stream is not None
    assert names._stream._watch is not None
    response = names._stream._watch._resp
    response.connection.sock.shutdown(socket.SHUT_RDWR)
    _create(cluster, namespace, "during-the-drop")
    _create(cluster, namespace, "after-the-drop")

    assert names.wait(lambda: "after-the-drop" in names.names, timeout=30)
    assert names._stream.reconnects >= 1
    made = [name for name in names.stop() if name != "kube-root-ca.crt"]  # every namespace gets that one
    assert made == ["before-the-drop", "during-the-drop", "after-the-drop"]


def test_a_watcher_that_dies_fails_when_stopped(cluster: Cluster, namespace: str) -> None:
    names = ConfigMapNames(cluster, namespace, fail_on="poison").start()
    _create(cluster, namespace, "poison")
    with pytest.raises(AssertionError, match="ConfigMapNames stopped watching: RuntimeError"):
        names.wait(lambda: False, timeout=30)
    with pytest.raises(AssertionError, match="cannot take poison"):
        names.stop()


def test_a_watcher_left_running_fails_its_test_at_the_end(cluster: Cluster, namespace: str) -> None:
    names = ConfigMapNames(cluster, namespace, fail_on="poison").start()
    _create(cluster, namespace, "poison")
    with pytest.raises(AssertionError):  # returns as soon as the thread dies (raising why), never stopped here
        names.wait(lambda: False, timeout=30)
    # What conftest's autouse fixture calls when a test ends: a follower still registered is stopped, and fails it.
    with pytest.raises(pytest.fail.Exception, match="cannot take poison"):
        stop_followers()


def test_a_watch_that_cannot_resume_fails_instead_of_relisting(cluster: Cluster, namespace: str) -> None:
    # A resourceVersion long compacted away: the history between it and now is gone (410), so a watcher resumed
    # from it could not show every change; it says so.
    stream = ResumedWatch(cluster.core.list_namespaced_config_map, "1", namespace=namespace)
    with pytest.raises(WatchLost, match="can no longer resume"):
        next(stream.events(deadline=time.monotonic() + 30))
