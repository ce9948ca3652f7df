"""Fixtures shared by every test.

Integration tests (marked ``integration``) run against the real local control
plane of hack/cluster.py. The session fixture starts it in ``.cluster/tests``
(or reuses it there when it is already healthy), unless
``ROLLOUT_PLUS_TEST_KUBECONFIG`` points at a running cluster. A cluster the
fixture started is stopped at the end of the session unless
``ROLLOUT_PLUS_KEEP_CLUSTER=1``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import manifests
import pytest
import watching
from cluster_setup import create_namespace, delete_pods, delete_workloads
from kubernetes import client

from kubectl_rollout.kube.cluster_access import Cluster, ConnectionSettings, connect

ROOT = Path(__file__).resolve().parent.parent
TEST_CLUSTER_DIR = ROOT / ".cluster" / "tests"


def _cluster_is_healthy(workdir: Path) -> bool:
    status = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "cluster.py"), "status", "--dir", str(workdir)], capture_output=True
    )
    return status.returncode == 0


@pytest.fixture(autouse=True)
def _followers_end_with_their_test() -> Iterator[None]:
    """A watcher (``watching.Follower``) whose thread stopped before its test was done fails the test: one
    the test stops raises then; one it left running is stopped here, and raises here."""
    yield
    watching.stop_followers()


@pytest.fixture(scope="session")
def kubeconfig() -> Iterator[Path]:
    """Path of an admin kubeconfig for the real local control plane."""
    given = os.environ.get("ROLLOUT_PLUS_TEST_KUBECONFIG")
    if given:
        yield Path(given)
        return
    was_running = _cluster_is_healthy(TEST_CLUSTER_DIR)
    up = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "cluster.py"), "up", "--dir", str(TEST_CLUSTER_DIR)],
        stdout=subprocess.PIPE,
        text=True,
    )
    if up.returncode != 0:
        pytest.fail(
            f"the local control plane did not start (hack/cluster.py up exited {up.returncode}); "
            f"see {TEST_CLUSTER_DIR / 'logs'}",
            pytrace=False,
        )
    yield Path(up.stdout.strip().splitlines()[-1])
    if not was_running and os.environ.get("ROLLOUT_PLUS_KEEP_CLUSTER") != "1":
        subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(TEST_CLUSTER_DIR)])


@pytest.fixture(scope="session")
def cluster(kubeconfig: Path) -> Iterator[Cluster]:
    """Our own cluster access layer, connected as the admin user."""
    connection = connect(ConnectionSettings(kubeconfig=str(kubeconfig)))
    yield connection
    connection.close()


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, deleted afterwards (without waiting for it)."""
    stem = request.node.name.lower().replace("_", "-")
    stem = "".join(ch for ch in stem if ch.isalnum() or ch == "-")[:40].strip("-")
    name = f"{stem}-{uuid.uuid4().hex[:6]}"
    create_namespace(cluster, name)
    yield name
    try:
        cluster.core.delete_namespace(name)
    except client.ApiException as err:
        if err.status != 404:
            raise


@pytest.fixture
def dedicated_nodes(cluster: Cluster, namespace: str) -> Iterator[Callable[[int], list[str]]]:
    """Make kwok nodes for this test alone: tainted so that only the test's pods
    (placed with ``manifests.placement(namespace)``) run there, and labelled so
    that ``-l rollout-plus.test/pool=NAMESPACE`` selects them."""
    created: list[str] = []

    def make(count: int) -> list[str]:
        names = [f"{namespace}-n{i}" for i in range(len(created), len(created) + count)]
        for name in names:
            cluster.core.create_node(manifests.dedicated_node(name, pool=namespace))
        created.extend(names)
        for name in names:
            watching.until(
                cluster.core.list_node,
                lambda n, want=name: (
                    n.metadata.name == want
                    and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
                ),
                timeout=30,
                what=f"node {name} Ready",
            )
        return names

    yield make
    # Pods first, once no controller makes them again, while kwok still plays their kubelet; then the nodes.
    delete_workloads(cluster, namespace)
    delete_pods(cluster, namespace)
    for name in created:
        try:
            cluster.core.delete_node(name)
        except client.ApiException as err:
            if err.status != 404:
                raise


#: hack/run-suite.sh runs the tests marked ``serial`` in two streams, each one test at a time on a control plane
#: of its own (ROLLOUT_PLUS_SERIAL_STREAM names the stream), beside the other tests on theirs: these modules'
#: on one, the others on another.
#: The side-by-side rollouts and the count of the API server's 403s go here, the surge drains (a killed one's
#: record is restored by any later drain in the cluster) and the rest there.
SERIAL_STREAMS = {
    "rollouts": ("integration/test_rollouts.py", "integration/test_drain.py"),
}
#: The stream of the tests that need the machine to themselves (hundreds of pods made and moved on a 2-core
#: machine): hack/run-suite.sh runs it last, once the other runs have ended and their control planes stopped.
#: A test joins it with ``@pytest.mark.serial_stream("alone")``.
ALONE = "alone"


def _serial_stream(item: pytest.Item) -> str:
    """The stream of a test: its own ``serial_stream`` mark, else its module's (the two take about as long)."""
    chosen = item.get_closest_marker("serial_stream")
    if chosen is not None:
        return str(chosen.args[0])
    path = Path(str(item.fspath)).as_posix()
    return next((name for name, modules in SERIAL_STREAMS.items() if path.endswith(modules)), "others")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Everything under tests/integration needs the cluster; mark it so that
    # `-m "not integration"` selects the unit tests alone.
    for item in items:
        if "integration" in Path(str(item.fspath)).parts:
            item.add_marker(pytest.mark.integration)
    stream = os.environ.get("ROLLOUT_PLUS_SERIAL_STREAM")
    if stream:
        known = [*SERIAL_STREAMS, "others", ALONE]
        if stream not in known:
            raise pytest.UsageError(f"ROLLOUT_PLUS_SERIAL_STREAM={stream}: not one of {known}")
        elsewhere = [item for item in items if _serial_stream(item) != stream]
        if elsewhere:
            config.hook.pytest_deselected(items=elsewhere)
            items[:] = [item for item in items if _serial_stream(item) == stream]


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, and in each stream of the serial tests: each worker gets an agent directory of its
    own, so that two workers' tests never share an agent (its jobs, its journal, its claims). A test that sets
    ROLLOUT_PLUS_AGENT_DIR itself keeps its own. Otherwise nothing changes.

    Ctrl-C as a terminal delivers it: a suite started in the background by a non-interactive shell (`make test &`,
    `setsid ... &`) inherits SIGINT ignored, and so would every command a test interrupts (an ignored signal
    stays ignored across exec, and Python then installs no KeyboardInterrupt), so that `agent logs -f` and the
    warm client's Ctrl-C tests waited out their timeouts in such a run. A handler of our own is reset by exec."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    worker = os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("ROLLOUT_PLUS_SERIAL_STREAM")
    if worker and "ROLLOUT_PLUS_AGENT_DIR" not in os.environ:
        import tempfile

        # Short and under /tmp: the agent's socket path must fit a Unix socket's 107 bytes.
        directory = tempfile.mkdtemp(prefix=f"rpa-{worker}-", dir="/tmp")
        os.environ["ROLLOUT_PLUS_AGENT_DIR"] = directory
        config.stash[_WORKER_AGENT_DIR] = directory


def pytest_unconfigure(config: pytest.Config) -> None:
    """The worker's agent, if a test started one there, goes with the worker (it would idle for minutes)."""
    directory = config.stash.get(_WORKER_AGENT_DIR, None)
    if directory is None:
        return
    subprocess.run(
        [sys.executable, "-m", "kubectl_rollout", "agent", "stop", "--force"],
        env={**os.environ, "ROLLOUT_PLUS_AGENT_DIR": directory},
        capture_output=True,
        timeout=60,
    )
    import shutil

    shutil.rmtree(directory, ignore_errors=True)


_WORKER_AGENT_DIR = pytest.StashKey[str]()
