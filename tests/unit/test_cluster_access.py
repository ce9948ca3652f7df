"""Kubeconfig resolution as kubectl does it, and the one-line error when no cluster answers."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from kubeconfigs import write_kubeconfig
from plugin import run_plugin

from kubectl_rollout.kube.cluster_access import ClusterAccessError, ConnectionSettings, connect, kubeconfig_paths


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("explicit", "env", "expected"),
    [
        ("/a/config", {"KUBECONFIG": "/b:/c"}, ["/a/config"]),
        (None, {"KUBECONFIG": f"/b{os.pathsep}/c"}, ["/b", "/c"]),
        (None, {"KUBECONFIG": f"/b{os.pathsep}{os.pathsep}/c"}, ["/b", "/c"]),
        (None, {}, [str(Path("~/.kube/config").expanduser())]),
        (None, {"KUBECONFIG": ""}, [str(Path("~/.kube/config").expanduser())]),
    ],
)
def test_kubeconfig_precedence(explicit: str | None, env: dict[str, str], expected: list[str]) -> None:
    assert [str(p) for p in kubeconfig_paths(explicit, env)] == expected


def test_kubeconfig_list_is_merged_and_first_file_wins(tmp_path: Path) -> None:
    first = write_kubeconfig(tmp_path / "a", contexts={"prod": ("https://10.0.0.1:6443", "shop")}, current="prod")
    second = write_kubeconfig(
        tmp_path / "b",
        contexts={"prod": ("https://10.9.9.9:6443", None), "dev": ("https://10.0.0.2:6443", None)},
        current="dev",
    )
    env = {"KUBECONFIG": f"{first}{os.pathsep}{tmp_path / 'missing'}{os.pathsep}{second}"}

    current = connect(ConnectionSettings(), env)
    dev = connect(ConnectionSettings(context="dev"), env)
    other_ns = connect(ConnectionSettings(namespace="ops"), env)

    assert (current.context, current.server, current.namespace) == ("prod", "https://10.0.0.1:6443", "shop")
    assert (dev.context, dev.server, dev.namespace) == ("dev", "https://10.0.0.2:6443", "default")
    assert other_ns.namespace == "ops"


def test_a_relative_certificate_path_resolves_against_its_own_kubeconfig_file(tmp_path: Path) -> None:
    """Each file is parsed once, but an entry's relative paths still resolve against the file it came from."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "pki").mkdir(parents=True)
    (tmp_path / "b" / "pki" / "ca.crt").write_text("not read until a request\n")
    (tmp_path / "a" / "config").write_text("apiVersion: v1\nkind: Config\ncurrent-context: dev\n")
    (tmp_path / "b" / "config").write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: c, cluster: {server: 'https://10.0.0.3:6443', certificate-authority: pki/ca.crt}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: dev, context: {cluster: c, user: u}}]\n"
    )
    env = {"KUBECONFIG": f"{tmp_path / 'a' / 'config'}{os.pathsep}{tmp_path / 'b' / 'config'}"}

    cluster = connect(ConnectionSettings(), env)

    assert (cluster.context, cluster.server) == ("dev", "https://10.0.0.3:6443")
    assert cluster.api_client.configuration.ssl_ca_cert == str(tmp_path / "b" / "pki" / "ca.crt")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (ConnectionSettings(context="nope"), 'context "nope" not found in kubeconfig .*available contexts: prod'),
        (ConnectionSettings(kubeconfig="/does/not/exist"), "kubeconfig /does/not/exist does not exist"),
    ],
)
def test_unusable_kubeconfig_gives_an_actionable_error(
    tmp_path: Path, settings: ConnectionSettings, message: str
) -> None:
    config = write_kubeconfig(tmp_path / "c", contexts={"prod": ("https://10.0.0.1:6443", None)}, current="prod")
    with pytest.raises(ClusterAccessError, match=message):
        connect(settings, {"KUBECONFIG": str(config)})


def test_no_kubeconfig_at_all_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(ClusterAccessError, match=r"no kubeconfig found .*make cluster-up"):
        connect(ConnectionSettings(), {"KUBECONFIG": str(tmp_path / "absent")})


def test_unreachable_cluster_is_one_line_naming_the_server_and_what_to_do(tmp_path: Path) -> None:
    port = closed_port()
    config = write_kubeconfig(tmp_path / "c", contexts={"local": (f"https://127.0.0.1:{port}", None)}, current="local")

    result = run_plugin("version", "--kubeconfig", str(config))

    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: cannot reach the Kubernetes API server at ")
    assert f"127.0.0.1:{port}" in lines[0]
    assert "connection refused" in lines[0]
    assert "make cluster-up" in lines[0]
    assert "Traceback" not in result.stderr


def test_global_flags_work_before_and_after_the_subcommand(tmp_path: Path) -> None:
    port = closed_port()
    config = write_kubeconfig(
        tmp_path / "c",
        contexts={"a": ("https://127.0.0.1:1", None), "b": (f"https://127.0.0.1:{port}", None)},
        current="a",
    )
    before = run_plugin("--kubeconfig", str(config), "--context", "b", "version")
    after = run_plugin("version", "--kubeconfig", str(config), "--context", "b")
    for result in (before, after):
        assert result.returncode == 1
        assert f"127.0.0.1:{port}" in result.stderr
        assert '(context "b")' in result.stderr


def test_bad_request_timeout_is_a_usage_error() -> None:
    result = run_plugin("version", "--request-timeout", "soon")
    assert result.returncode == 2
    assert "invalid duration 'soon'" in result.stderr


def test_client_version_needs_no_cluster(tmp_path: Path) -> None:
    from kubectl_rollout import __version__

    result = run_plugin("version", "--client", env={"KUBECONFIG": str(tmp_path / "absent")})
    assert result.returncode == 0
    assert f"Client Version: v{__version__}" in result.stdout


def test_request_timeout_bounds_a_server_that_never_answers(tmp_path: Path) -> None:
    import time

    def timed(kubeconfig: Path) -> tuple[subprocess.CompletedProcess[str], float]:
        started = time.monotonic()
        result = run_plugin("version", "--kubeconfig", str(kubeconfig), "--request-timeout", "1s")
        return result, time.monotonic() - started

    with socket.socket() as closed, socket.socket() as silent:
        # The baseline: the same command against a port that refuses at once (the interpreter, the client's
        # import), measured before and after, the slower kept (the machine's load changes meanwhile).
        closed.bind(("127.0.0.1", 0))  # bound, never listening: refused
        refused = write_kubeconfig(
            tmp_path / "r", contexts={"r": (f"https://127.0.0.1:{closed.getsockname()[1]}", None)}, current="r"
        )
        silent.bind(("127.0.0.1", 0))  # accepts connections (the kernel does), never answers
        silent.listen(8)
        config = write_kubeconfig(
            tmp_path / "c", contexts={"s": (f"https://127.0.0.1:{silent.getsockname()[1]}", None)}, current="s"
        )

        def beside_its_baseline() -> tuple[subprocess.CompletedProcess[str], float, float]:
            before, before_took = timed(refused)
            result, elapsed = timed(config)
            after, after_took = timed(refused)
            assert before.returncode == after.returncode == 1, (before.stderr, after.stderr)
            return result, elapsed, max(before_took, after_took)

        result, elapsed, baseline = beside_its_baseline()
        # One first contact of at most --request-timeout (1 s), no retry, beyond the baseline; a loaded machine's
        # second on top. Over it, once more beside a fresh baseline (a CI rehearsal at load ~10 once put it 1.1 s
        # over): a command that waits or retries does so both times.
        if elapsed >= baseline + 1.0 + 1.0:
            result, elapsed, baseline = beside_its_baseline()

    assert result.returncode == 1
    assert "did not answer in time" in result.stderr
    assert elapsed < baseline + 1.0 + 1.0, (elapsed, baseline)
