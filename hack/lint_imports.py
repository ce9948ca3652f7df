#!/usr/bin/env python3
"""Check the import contracts of pyproject.toml (``[tool.importlinter]``) over the package as it installs.

agent/ and tui/ install as ``kubectl_rollout.agent`` and ``kubectl_rollout.tui``
through setuptools' package-dir. import-linter (grimp) reads a package from
the one directory it is found in and accepts only top-level packages, so the
editable install hides those two from it. This copies the tree into a
temporary directory laid out as pyproject's package-dir installs it, and runs
lint-imports with that copy first on the path.

    .venv/bin/python hack/lint_imports.py [--tree DIR] [lint-imports options...]

``--tree`` checks another checkout (the unit test checks a modified copy);
the exit code is lint-imports' own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path


def lay_out_as_installed(tree: Path, into: Path) -> None:
    """Copy each package of ``tree`` to where ``package-dir`` installs it, parents first."""
    setuptools = tomllib.loads((tree / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir: dict[str, str] = setuptools.get("package-dir", {})
    for package in sorted(package_dir, key=lambda name: name.count(".")):
        shutil.copytree(
            tree / package_dir[package],
            into.joinpath(*package.split(".")),
            ignore=shutil.ignore_patterns("__pycache__"),
            dirs_exist_ok=True,
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    args, lint_args = parser.parse_known_args(argv)
    tree = args.tree.resolve()
    lint_imports = Path(sys.executable).parent / "lint-imports"
    with tempfile.TemporaryDirectory(prefix="lint-imports-") as tmp:
        lay_out_as_installed(tree, Path(tmp))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [tmp, os.environ.get("PYTHONPATH")])))
        # No cache: the copy is new every time, and the graph of this tree builds in well under a second.
        command = [str(lint_imports), "--config", str(tree / "pyproject.toml"), "--no-cache", *lint_args]
        return subprocess.run(command, env=env, cwd=tmp, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
