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
- `kubectl version --client` and `kubectl version` (.bin/kubectl) for reference.

Every command runs in a user's clean environment (HOME in a temporary folder,
no PYTHON* variables); the Krew executable runs on the first python3 on PATH,
as it would for a user. The cluster: --kubeconfig, else
$ROLLOUT_PLUS_TEST_KUBECONFIG (a running test cluster), else one started in
.cluster/bench-start and stopped at the end. The archive is built with
hack/dist/build_archives.py unless --archive names a folder holding it.
"""

from __future__ import annotations

import argparse
import os
import shutil
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

    Taking turns puts both sides of a comparison under the same load; one
    untimed round first writes bytecode and fills the page cache.
    """
    times: list[list[float]] = [[] for _ in commands]
    for round_ in range(runs + 1):
        for index, (command, env) in enumerate(commands):
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
    return figures + krew_figures


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
