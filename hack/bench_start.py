#!/usr/bin/env python3
"""Benchmark: how long `kubectl rollout-plus` takes to start, beside `kubectl version --client`.

    .venv/bin/python hack/bench_start.py [--kubeconfig PATH] [--runs N] [--archive DIR]

Prints the median of N runs (default 11) of each command, its target and
whether it is met:

- from the venv (`.venv/bin`): `version --client`, `drain --help`, `--help`,
  the completion of command names (`kubectl_complete-rollout_plus ''`, what
  kubectl runs on `kubectl rollout-plus <TAB>`) and `version` against a cluster;
- the Krew executable, installed by krew from the release archive into a
  temporary KREW_ROOT and run as installed (not through kubectl, so that only
  the plugin is timed): its first run, with an empty shiv cache each time,
  and later runs, as a ratio to the venv's time for the same command;
- `kubectl version --client` and `kubectl version` (.bin/kubectl) for reference;
- the commands that read the cluster, with an agent running (so its warm
  command server, cli/warm/), each warm, in-process (ROLLOUT_PLUS_WARM=0) and
  beside the nearest kubectl command, the three taking turns: `version`,
  `status` and `history` of a managed workload (kubectl: `rollout status` and
  `rollout history` of a Deployment), `jobs list` and `jobs show` (kubectl:
  `get nodes`), `cordon` and `uncordon` (kubectl's), `drain --plan` (kubectl:
  `drain --dry-run=client`) and the completion of node names (kubectl:
  `__complete cordon ''`). `--warm-only` measures only these.

Every command runs in a user's clean environment (HOME in a temporary folder,
no PYTHON* variables); the Krew executable runs on the first python3 on PATH,
as it would for a user. The cluster: --kubeconfig, else
$ROLLOUT_PLUS_TEST_KUBECONFIG (a running test cluster), else one started in
.cluster/bench-start and stopped at the end. The archive is built with
hack/dist/build_archives.py unless --archive names a folder holding it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hack" / "dist"))

from build_archives import EXECUTABLE, archive_name, version  # noqa: E402

BENCH_DIR = ROOT / ".cluster" / "bench-start"
BIN = ROOT / ".bin"
VENV_BIN = Path(sys.executable).parent
PLUGIN = VENV_BIN / "kubectl-rollout_plus"
COMPLETE = VENV_BIN / "kubectl_complete-rollout_plus"


@dataclass
class Figure:
    what: str
    seconds: float
    target: str = ""
    met: bool | None = None
    note: str = ""


def run_once(command: list[str | Path], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([str(c) for c in command], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed ({done.returncode}): {done.stderr[-1000:]}")
    return elapsed


def medians(*commands: tuple[list[str | Path], dict[str, str]], runs: int) -> list[float]:
    """Median wall time of each command over ``runs`` rounds, the commands taking turns within a round.

    Taking turns (each round starting with the next command) puts every side
    of a comparison under the same load; one untimed round first writes
    bytecode and fills the page cache.
    """
    times: list[list[float]] = [[] for _ in commands]
    for round_ in range(runs + 1):
        for turn in range(len(commands)):
            index = (round_ + turn) % len(commands)
            command, env = commands[index]
            elapsed = run_once(command, env)
            if round_:
                times[index].append(elapsed)
    return [statistics.median(t) for t in times]


def clean_env(home: Path, *path: Path, **extra: str) -> dict[str, str]:
    """A user's shell: no venv, no PYTHON* variables; python3 and kubectl from PATH."""
    system_python = Path(sys.base_prefix) / "bin"
    dirs = [*(str(p) for p in path), str(BIN), "/usr/local/bin", "/usr/bin", "/bin", str(system_python)]
    return {"HOME": str(home), "PATH": os.pathsep.join(dirs), "LANG": "C.UTF-8", **extra}


def cluster_kubeconfig(given: Path | None) -> tuple[Path, bool]:
    """The cluster to run `version` against, and whether this script started it."""
    if given is not None:
        return given, False
    if os.environ.get("ROLLOUT_PLUS_TEST_KUBECONFIG"):
        return Path(os.environ["ROLLOUT_PLUS_TEST_KUBECONFIG"]), False
    up = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "cluster.py"), "up", "--dir", str(BENCH_DIR)],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    return Path(up.stdout.strip().splitlines()[-1]), True


def archives(given: Path | None, scratch: Path) -> Path:
    if given is not None:
        return given
    out = scratch / "dist"
    subprocess.run(
        [sys.executable, str(ROOT / "hack" / "dist" / "build_archives.py"), "--out", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return out


def krew_install(dist: Path, krew_root: Path, env: dict[str, str]) -> Path:
    """Install the plugin with krew from the local archive; the executable as Krew links it."""
    manifest = dist / "rollout-plus.yaml"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "hack" / "dist" / "render_krew_manifest.py"),
            "--archives",
            str(dist),
            "--out",
            str(manifest),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    archive = dist / archive_name(version(), "linux", "amd64")
    subprocess.run(
        [str(BIN / "kubectl"), "krew", "install", f"--manifest={manifest}", f"--archive={archive}"],
        env=env,
        check=True,
        capture_output=True,
    )
    installed = krew_root / "bin" / EXECUTABLE
    # As README says to link it for `kubectl rollout-plus <TAB>`.
    (krew_root / "bin" / "kubectl_complete-rollout_plus").symlink_to(installed)
    return installed


def ratio_figure(what: str, krew: float, venv: float, limit: float) -> Figure:
    ratio = krew / venv
    return Figure(what, krew, f"<= {limit:.1f}x venv", ratio <= limit, f"{ratio:.2f}x the venv's {venv:.3f} s")


def under(what: str, seconds: float, limit: float, note: str = "") -> Figure:
    return Figure(what, seconds, f"<= {limit:g} s", seconds <= limit, note)


def run(args: argparse.Namespace, scratch: Path) -> list[Figure]:
    if args.warm_only:
        return warm_figures(args.cluster[0], scratch, args.runs)
    runs, home = args.runs, scratch / "home"
    home.mkdir()
    env = clean_env(home)
    kubeconfig, _ = args.cluster
    remote = ["--kubeconfig", str(kubeconfig)]

    krew_root, shiv_root = scratch / "krew", scratch / "shiv"
    krew_env = clean_env(home, krew_root / "bin", KREW_ROOT=str(krew_root), SHIV_ROOT=str(shiv_root))
    installed = krew_install(archives(args.archive, scratch), krew_root, krew_env)
    python3 = shutil.which("python3", path=krew_env["PATH"])

    # The first run of the Krew executable, each time with an empty cache: it unpacks itself.
    firsts = []
    for _ in range(runs):
        shutil.rmtree(shiv_root, ignore_errors=True)
        firsts.append(run_once([installed, "version", *remote], krew_env))
    figures = [
        Figure(
            "kubectl version --client (reference)", *medians(([BIN / "kubectl", "version", "--client"], env), runs=runs)
        ),
        Figure("kubectl version (reference)", *medians(([BIN / "kubectl", "version", *remote], env), runs=runs)),
    ]
    # Then each command from the venv and as Krew installed it, taking turns.
    compared = [
        ("version --client", [PLUGIN, "version", "--client"], [installed, "version", "--client"], 0.15),
        ("drain --help", [PLUGIN, "drain", "--help"], [installed, "drain", "--help"], 0.15),
        ("--help", [PLUGIN, "--help"], [installed, "--help"], None),
        (
            "completion of command names",
            [COMPLETE, ""],
            [krew_root / "bin" / "kubectl_complete-rollout_plus", ""],
            0.15,
        ),
        ("version (against the cluster)", [PLUGIN, "version", *remote], [installed, "version", *remote], 0.45),
    ]
    krew_figures = [under("Krew: first run, version (unpacks)", statistics.median(firsts), 8.0, f"python3: {python3}")]
    for what, venv_command, krew_command, limit in compared:
        venv, krew = medians((venv_command, env), (krew_command, krew_env), runs=runs)
        figures.append(Figure(f"venv: {what}", venv) if limit is None else under(f"venv: {what}", venv, limit))
        krew_figures.append(ratio_figure(f"Krew: {what}, later runs", krew, venv, 1.2))
    return figures + krew_figures + warm_figures(kubeconfig, scratch, runs)


#: what a command that reads the cluster may take with the agent running (issue 21)
WARM_TARGET = 0.2


def _kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run(
        [str(BIN / "kubectl"), "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def warm_agent(directory: Path, env: dict[str, str]) -> None:
    """Start an agent in ``directory`` and wait until its warm command server answers."""
    subprocess.run([PLUGIN, "agent", "start"], env=env, check=True, capture_output=True)
    sock = directory / "run" / "commands.sock"
    deadline = time.monotonic() + 60
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(sock))
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the warm command server never answered on {sock}") from None
        time.sleep(0.05)


def warm_setup(kubeconfig: Path, namespace: str, scratch: Path, env: dict[str, str]) -> tuple[str, str]:
    """A managed workload ``shop`` and a Deployment ``shop-ref`` in ``namespace``; a node for cordon and plans."""
    _kubectl(kubeconfig, "create", "namespace", namespace)
    manifest = scratch / "shop.json"
    pod = {"containers": [{"name": "app", "image": "registry.example/app:v1"}]}
    labels = {"app": "shop"}
    manifest.write_text(
        json.dumps(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "shop"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": pod},
                },
            }
        )
    )
    remote = ["--kubeconfig", str(kubeconfig), "-n", namespace]
    subprocess.run([PLUGIN, "apply", "-f", str(manifest), "--in-process", *remote], env=env, check=True)
    _kubectl(kubeconfig, "-n", namespace, "create", "deployment", "shop-ref", "--image=registry.example/app:v1")
    _kubectl(kubeconfig, "-n", namespace, "rollout", "status", "deployment/shop-ref", "--timeout=120s")
    node = _kubectl(kubeconfig, "get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").strip()
    job = subprocess.run(
        [PLUGIN, "drain", node, "--plan", "--detach", *remote], env=env, check=True, capture_output=True, text=True
    )
    return node, job.stdout.split()[-1]


def warm_figures(kubeconfig: Path, scratch: Path, runs: int) -> list[Figure]:
    """Each command that reads the cluster: warm, in-process and kubectl's nearest, taking turns."""
    home = scratch / "warm-home"
    home.mkdir()
    directory = Path(tempfile.mkdtemp(prefix="rpb-", dir="/tmp"))  # a socket path has ~100 bytes
    warm_env = clean_env(home, ROLLOUT_PLUS_AGENT_DIR=str(directory))
    cold_env = {**warm_env, "ROLLOUT_PLUS_WARM": "0"}
    namespace = f"bench-start-{os.getpid()}"
    kubectl_env = clean_env(home)
    try:
        warm_agent(directory, warm_env)
        node, job = warm_setup(kubeconfig, namespace, scratch, warm_env)
        remote = ["--kubeconfig", str(kubeconfig), "-n", namespace]
        rows: list[tuple[str, list[str | Path], str]] = [
            ("version", [PLUGIN, "version", *remote], "version"),
            ("status shop", [PLUGIN, "status", "shop", *remote], "-n NS rollout status deployment/shop-ref"),
            ("history shop", [PLUGIN, "history", "shop", *remote], "-n NS rollout history deployment/shop-ref"),
            ("jobs list", [PLUGIN, "jobs", "list"], "get nodes"),
            ("jobs show ID", [PLUGIN, "jobs", "show", job], "get nodes"),
            ("cordon NODE", [PLUGIN, "cordon", node, *remote], "cordon NODE"),
            ("uncordon NODE", [PLUGIN, "uncordon", node, *remote], "uncordon NODE"),
            (
                "drain NODE --plan",
                [PLUGIN, "drain", node, "--plan", *remote],
                "drain NODE --dry-run=client --ignore-daemonsets --force",
            ),
            ("TAB: node names (drain '')", [COMPLETE, *remote, "drain", ""], "__complete cordon ''"),
            (
                "TAB: workload names (status '')",
                [COMPLETE, *remote, "status", ""],
                "__complete get deployment -n NS ''",
            ),
        ]
        figures = []
        for what, ours, nearest in rows:
            words = nearest.replace("NS", namespace).replace("NODE", node).replace("''", "").split(" ")
            # kubectl takes no flag before __complete, and completes the last word: the flag goes before it.
            theirs: list[str | Path] = [BIN / "kubectl", *words[:-1], "--kubeconfig", str(kubeconfig), words[-1]]
            warm, cold, kubectl = medians((ours, warm_env), (ours, cold_env), (theirs, kubectl_env), runs=runs)
            note = f"in-process {cold:.3f} s; kubectl {nearest} {kubectl:.3f} s ({warm / kubectl:.1f}x)"
            figures.append(under(f"warm: {what}", warm, WARM_TARGET, note))
            print(f"{what}: warm {warm:.3f} s, {note}", file=sys.stderr, flush=True)
        return figures
    finally:
        subprocess.run([PLUGIN, "agent", "stop", "--force"], env=warm_env, capture_output=True)
        subprocess.run(
            [
                *[str(BIN / "kubectl"), "--kubeconfig", str(kubeconfig)],
                "delete",
                "namespace",
                namespace,
                "--wait=false",
            ],
            capture_output=True,
        )
        shutil.rmtree(directory, ignore_errors=True)


def print_table(figures: list[Figure], runs: int) -> None:
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"\n== start time: median of {runs} runs each, {os.cpu_count()} cores, load average {load} ==")
    print(f"{'':48} {'median':>9}  {'target':<16} {'met':<4} ")
    for f in figures:
        met = "" if f.met is None else ("yes" if f.met else "NO")
        print(f"{f.what:48} {f.seconds:7.3f} s  {f.target:<16} {met:<4} {f.note}".rstrip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", type=Path, help="the cluster for `version` (default: see above)")
    parser.add_argument("--runs", type=int, default=11, help="runs per figure (default 11)")
    parser.add_argument("--archive", type=Path, help="a folder with the built Krew archives (default: build them)")
    parser.add_argument("--warm-only", action="store_true", help="only the commands that read the cluster (above)")
    args = parser.parse_args()
    if args.runs < 10:
        parser.error("--runs must be at least 10")
    for tool in ("kubectl", "kubectl-krew"):
        if not (BIN / tool).exists():
            raise SystemExit(f"{BIN / tool} is missing; run `make binaries` first")
    args.cluster = cluster_kubeconfig(args.kubeconfig)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-start-") as scratch:
            figures = run(args, Path(scratch))
    finally:
        if args.cluster[1]:
            subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down", "--dir", str(BENCH_DIR)])
    print_table(figures, args.runs)
    return 0 if all(f.met is not False for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
