"""``version`` asks the real API server without loading the kubernetes client, and agrees with the client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_rollout.kube.cluster_access import ClusterAccessError, ConnectionSettings, connect
from kubectl_rollout.kube.version_probe import probe_server_version


@pytest.mark.parametrize("context", ["rollout-plus-local", "rollout-plus-operator", "rollout-plus-viewer"])
def test_the_light_path_agrees_with_the_client(kubeconfig: Path, context: str) -> None:
    settings = ConnectionSettings(kubeconfig=str(kubeconfig), context=context)
    probed = probe_server_version(settings)
    cluster = connect(settings)
    try:
        assert probed is not None
        assert (probed.git_version, probed.server) == (cluster.server_version(), cluster.server)
    finally:
        cluster.close()


def test_credentials_only_the_client_handles_take_the_client_path(kubeconfig: Path, tmp_path: Path) -> None:
    document = json.loads(kubeconfig.read_text())
    for user in document["users"]:
        user["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "false"}}
    exec_config = tmp_path / "exec-kubeconfig"
    exec_config.write_text(json.dumps(document))
    assert probe_server_version(ConnectionSettings(kubeconfig=str(exec_config))) is None


def test_a_wrong_token_is_named_by_the_light_path_itself(kubeconfig: Path, tmp_path: Path) -> None:
    document = json.loads(kubeconfig.read_text())
    for user in document["users"]:
        user["user"] = {"token": "not-a-valid-token"}
    wrong = tmp_path / "wrong-kubeconfig"
    wrong.write_text(json.dumps(document))
    # The API server's 401 is worded where it is met, as the client's first contact words it: no second try.
    with pytest.raises(ClusterAccessError, match=r"rejected the credentials \(401 Unauthorized\)"):
        probe_server_version(ConnectionSettings(kubeconfig=str(wrong)))
    done = subprocess.run(
        [sys.executable, "-m", "kubectl_rollout", "version", "--kubeconfig", str(wrong)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "rejected the credentials (401 Unauthorized)" in done.stderr


def test_version_against_the_cluster_imports_no_kubernetes_client(kubeconfig: Path) -> None:
    code = (
        "import sys\n"
        "from kubectl_rollout.cli.main import main\n"
        f"sys.argv = ['kubectl-rollout_plus', 'version', '--kubeconfig', {str(kubeconfig)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('LOADED', 'kubernetes' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "Server Version: v1." in done.stdout, done.stderr
    assert "LOADED False" in done.stdout
