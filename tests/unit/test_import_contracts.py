"""The import contracts of pyproject.toml hold on this tree, and each one breaks when its rule is broken.

Each case copies the package to a temporary tree, adds one forbidden import
and runs lint-imports (as ``make lint`` does) on the copy: that proves the
contract is enforced where it matters, the agent and the TUI included.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _copy_tree(into: Path) -> Path:
    shutil.copy2(ROOT / "pyproject.toml", into / "pyproject.toml")
    shutil.copytree(ROOT / "kubectl_rollout", into / "kubectl_rollout", ignore=shutil.ignore_patterns("__pycache__"))
    return into


def _lint(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The copy first on the path, ahead of the installed package; wide enough that rich does not wrap a
    # contract's name.
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(tree))
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache", "--no-logo", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
        timeout=60,
        check=False,
    )


def _add_import(tree: Path, module: str, statement: str) -> None:
    path = tree / module
    path.write_text(path.read_text() + f"\n{statement}\n")


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    result = _lint(_copy_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


#: (module, the import added to it, the contract it breaks, what the report says)
CASES = [
    (
        "kubectl_rollout/drain/engine.py",
        "import click",
        "engines-have-no-front-end",
        "kubectl_rollout.drain is not allowed to import click",
    ),
    (
        "kubectl_rollout/tui/__init__.py",
        "from kubectl_rollout.drain import engine",
        "tui-is-a-client",
        "kubectl_rollout.tui is not allowed to import kubectl_rollout.drain",
    ),
    (
        "kubectl_rollout/agent/__init__.py",
        "from kubectl_rollout.cli import main",
        "agent-has-no-front-end",
        "kubectl_rollout.agent is not allowed to import kubectl_rollout.cli",
    ),
    (
        "kubectl_rollout/jobs/events/base.py",
        "from kubernetes import client",
        "events-and-views-are-pure",
        "kubectl_rollout.jobs.events is not allowed to import kubernetes",
    ),
    (
        "kubectl_rollout/jobs/spec.py",
        "from kubectl_rollout.drain import cordon",
        "job-specs-are-data",
        "kubectl_rollout.jobs is not allowed to import kubectl_rollout.drain",
    ),
    (
        "kubectl_rollout/drain/cordon.py",
        "from kubectl_rollout.job_loop import loop",
        "layers",
        "kubectl_rollout.drain is not allowed to import kubectl_rollout.job_loop",
    ),
    (
        "kubectl_rollout/restart/record.py",
        "from kubectl_rollout.drain import cordon",
        "layers",
        "kubectl_rollout.restart is not allowed to import kubectl_rollout.drain",
    ),
    (
        "kubectl_rollout/kube/errors.py",
        "from kubectl_rollout.eviction import order",
        "no-cycles",
        "No cycles are allowed in kubectl_rollout",
    ),
]


@pytest.mark.parametrize(("module", "statement", "contract", "broken"), CASES, ids=[case[2] for case in CASES])
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, statement: str, contract: str, broken: str
) -> None:
    tree = _copy_tree(tmp_path)
    _add_import(tree, module, statement)
    result = _lint(tree, "--contract", contract)
    assert result.returncode != 0, result.stdout + result.stderr
    assert " BROKEN" in result.stdout
    assert broken in result.stdout, result.stdout
