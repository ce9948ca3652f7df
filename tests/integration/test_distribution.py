"""Distribution as users get it: Krew (krew and its validator built from sigs.k8s.io/krew), pipx, completion.

The installed plugin runs from a clean environment: only python3, kubectl and
what Krew or pipx put on PATH; never the project's venv or sources.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import manifests
import pytest
import watching

from kubectl_rollout import __version__
from kubectl_rollout.kube.cluster_access import Cluster

#: pytest-xdist: the archives are built once for the module: one worker builds and tests them
pytestmark = pytest.mark.xdist_group("distribution")

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".bin"
PLATFORM_ARCHIVE = f"kubectl-rollout_plus-v{__version__}-linux-amd64.tar.gz"


def run(
    *command: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)


def clean_env(home: Path, *path: Path, **extra: str) -> dict[str, str]:
    """No venv, no PYTHONPATH, no project: a user's shell with python3 and kubectl."""
    system_python = Path(sys.base_prefix) / "bin"
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join(
            [*(str(p) for p in path), str(BIN), "/usr/local/bin", "/usr/bin", "/bin", str(system_python)]
        ),
        "LANG": "C.UTF-8",
        **extra,
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = run(sys.executable, ROOT / "hack" / "dist" / "build_archives.py", "--out", out)
    assert built.returncode == 0, built.stderr
    return out


@pytest.mark.timeout(900)  # two builds of every archive (the fixture's and this one): 137 s and 163 s at a CI's load
def test_archives_are_reproducible_and_hold_an_executable_and_the_license(archives: Path, tmp_path: Path) -> None:
    again = run(sys.executable, ROOT / "hack" / "dist" / "build_archives.py", "--out", tmp_path)
    assert again.returncode == 0, again.stderr
    names = sorted(p.name for p in archives.glob("*.tar.gz"))
    assert names == sorted(p.name for p in tmp_path.glob("*.tar.gz"))
    assert {n.rsplit("-", 2)[-2] + "-" + n.rsplit("-", 1)[-1] for n in names} >= {
        "linux-amd64.tar.gz",
        "linux-arm64.tar.gz",
        "darwin-amd64.tar.gz",
        "darwin-arm64.tar.gz",
    }
    for name in names:
        assert sha256(archives / name) == sha256(tmp_path / name), name
    with tarfile.open(archives / PLATFORM_ARCHIVE) as tar:
        members = {m.name: m for m in tar.getmembers()}
        executable = tar.extractfile("kubectl-rollout_plus")
        assert executable is not None
        zipapp = zipfile.ZipFile(io.BytesIO(executable.read()))
    assert set(members) == {"kubectl-rollout_plus", "LICENSE"}
    assert members["kubectl-rollout_plus"].mode & 0o111 == 0o111
    assert members["LICENSE"].mode == 0o644
    # A shiv zipapp whose __main__ knows shiv's build id (its fast path to the unpacked tree).
    build_id = json.loads(zipapp.read("environment.json"))["build_id"]
    assert f'BUILD_ID = "{build_id}"' in zipapp.read("__main__.py").decode()
    names = zipapp.namelist()
    assert "site-packages/kubectl_rollout/cli/standalone.py" in names
    assert not [n for n in names if n.startswith("site-packages/kubernetes/aio/")]


def test_committed_manifest_matches_the_archives_and_passes_krews_validator(archives: Path, tmp_path: Path) -> None:
    rendered = run(
        sys.executable, ROOT / "hack" / "dist" / "render_krew_manifest.py", "--archives", archives, "--out", "-"
    )
    assert rendered.returncode == 0, rendered.stderr
    assert rendered.stdout == (ROOT / "krew-manifest.yaml").read_text(), (
        "krew-manifest.yaml is stale: run `make dist` and commit it"
    )
    # The validator insists that the file is named after the plugin.
    candidate = tmp_path / "rollout-plus.yaml"
    shutil.copy(ROOT / "krew-manifest.yaml", candidate)
    validated = run(BIN / "validate-krew-manifest", "-manifest", candidate, "-skip-install")
    assert validated.returncode == 0, validated.stderr
    assert "structural validation OK" in validated.stderr


@pytest.fixture(scope="module")
def manifest(archives: Path) -> Path:
    """The manifest rendered for the archives this test run built (as a release would)."""
    path = archives / "rollout-plus.yaml"
    rendered = run(
        sys.executable, ROOT / "hack" / "dist" / "render_krew_manifest.py", "--archives", archives, "--out", path
    )
    assert rendered.returncode == 0, rendered.stderr
    return path


@pytest.fixture
def krew_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "krew"
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_krew_install_runs_the_plugin_through_kubectl_then_uninstalls(
    archives: Path,
    manifest: Path,
    krew_root: Path,
    tmp_path: Path,
    kubeconfig: Path,
    cluster: Cluster,
    namespace: str,
    dedicated_nodes: Any,
) -> None:
    shiv_root = tmp_path / "shiv"  # where the executable unpacks itself; kept inside the test
    env = clean_env(tmp_path, krew_root / "bin", KREW_ROOT=str(krew_root), SHIV_ROOT=str(shiv_root))
    installed = run(
        "kubectl",
        "krew",
        "install",
        f"--manifest={manifest}",
        f"--archive={archives / PLATFORM_ARCHIVE}",
        env=env,
    )
    assert installed.returncode == 0, installed.stderr
    assert (krew_root / "bin" / "kubectl-rollout_plus").exists()

    # The first run unpacks into SHIV_ROOT, the second runs from there, on bytecode the first one cached
    # (even under PYTHONDONTWRITEBYTECODE, which is for the user's own projects).
    no_bytecode = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
    for attempt in ("first", "second"):
        version = run("kubectl", "rollout-plus", "version", "--kubeconfig", kubeconfig, env=no_bytecode)
        assert version.returncode == 0, f"{attempt} run: {version.stderr}"
        assert f"Client Version: v{__version__}" in version.stdout
        assert "Server Version: v1.36" in version.stdout
        (unpacked,) = shiv_root.glob("kubectl-rollout_plus_*/site-packages")
        # version asks the server without the kubernetes client; click and our own modules are what it loads.
        for package in ("click", "kubectl_rollout/cli"):
            cached = list(unpacked.glob(f"{package}/__pycache__/*.pyc"))
            assert cached, f"no bytecode of {package} cached after the {attempt} run"

    # Without SHIV_ROOT it unpacks into the user's cache directory, never into ~/.shiv.
    xdg = tmp_path / "xdg-cache"
    unset = {k: v for k, v in env.items() if k != "SHIV_ROOT"}
    for cache_env, cache in ((unset, tmp_path / ".cache"), ({**unset, "XDG_CACHE_HOME": str(xdg)}, xdg)):
        client = run("kubectl", "rollout-plus", "version", "--client", env=cache_env)
        assert client.returncode == 0, client.stderr
        assert list((cache / "kubectl-rollout-plus" / "shiv").glob("kubectl-rollout_plus_*/site-packages"))
    assert not (tmp_path / ".shiv").exists()

    (node,) = dedicated_nodes(1)
    cluster.apps.create_namespaced_deployment(
        namespace, manifests.deployment("web", replicas=2, pod_spec=manifests.placement(namespace))
    )
    watching.until(
        cluster.apps.list_namespaced_deployment,
        lambda d: (d.status.available_replicas or 0) == 2,
        namespace=namespace,
        timeout=60,
        what="web available",
    )
    before = cluster.core.read_node(node).metadata.resource_version
    dry = run("kubectl", "rollout-plus", "drain", node, "--dry-run", "--kubeconfig", kubeconfig, env=env)
    assert dry.returncode == 0, dry.stderr
    assert f"node/{node} cordoned (dry run)" in dry.stdout
    assert dry.stdout.count(f"evicting pod {namespace}/web-") == 2
    assert cluster.core.read_node(node).metadata.resource_version == before

    # kubectl's plugin completion, through a link named as kubectl looks for it.
    (krew_root / "bin" / "kubectl_complete-rollout_plus").symlink_to(krew_root / "bin" / "kubectl-rollout_plus")
    completed = run("kubectl", "__complete", "rollout-plus", "dr", env=env)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[0].startswith("drain\t")
    (krew_root / "bin" / "kubectl_complete-rollout_plus").unlink()

    # `krew uninstall` insists on a local index (a git clone of krew-index that
    # `krew update` fetches from GitHub, out of this machine's reach); it does
    # not read it, so an empty local repository stands in.
    index = krew_root / "index" / "default"
    index.mkdir(parents=True)
    assert run("git", "init", "-q", index).returncode == 0
    removed = run("kubectl", "krew", "uninstall", "rollout-plus", env=env)
    assert removed.returncode == 0, removed.stderr
    assert not (krew_root / "bin" / "kubectl-rollout_plus").exists()
    gone = run("kubectl", "rollout-plus", "version", "--client", env=env)
    assert gone.returncode != 0


def test_krew_rejects_an_archive_whose_sha256_does_not_match(
    archives: Path, manifest: Path, krew_root: Path, tmp_path: Path
) -> None:
    text = manifest.read_text()
    true_sum = sha256(archives / PLATFORM_ARCHIVE)
    assert true_sum in text
    tampered = tmp_path / "rollout-plus.yaml"
    tampered.write_text(text.replace(true_sum, "0" * 64))

    env = clean_env(tmp_path, krew_root / "bin", KREW_ROOT=str(krew_root))
    refused = run(
        "kubectl", "krew", "install", f"--manifest={tampered}", f"--archive={archives / PLATFORM_ARCHIVE}", env=env
    )

    assert refused.returncode != 0
    assert "checksum" in (refused.stderr + refused.stdout).lower() or "sha256" in refused.stderr.lower()
    assert not (krew_root / "bin" / "kubectl-rollout_plus").exists()


def test_pipx_installs_the_wheel_into_a_fresh_venv(tmp_path: Path, kubeconfig: Path) -> None:
    wheels = tmp_path / "wheels"
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", wheels, ROOT)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("kubectl_rollout_plus-*.whl")
    pipx_home, pipx_bin = tmp_path / "pipx", tmp_path / "pipx-bin"
    env = clean_env(tmp_path, pipx_bin, PIPX_HOME=str(pipx_home), PIPX_BIN_DIR=str(pipx_bin))
    installed = run(
        sys.executable,
        "-m",
        "pipx",
        "install",
        "--python",
        Path(sys.base_prefix) / "bin" / "python3",
        wheel,
        env={**env, "PATH": env["PATH"]},
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr + installed.stdout
    assert (pipx_bin / "kubectl-rollout_plus").exists()
    assert (pipx_bin / "kubectl_complete-rollout_plus").exists()

    version = run("kubectl", "rollout-plus", "version", "--kubeconfig", kubeconfig, env=env)
    assert version.returncode == 0, version.stderr
    assert "Server Version: v1.36" in version.stdout
    completed = run("kubectl", "__complete", "rollout-plus", "ver", env=env)
    assert completed.stdout.splitlines()[0].startswith("version\t")
