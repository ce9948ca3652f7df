"""The commands that must answer at once import neither the kubernetes client nor Textual.

Each runs in a fresh interpreter (an import in this test process would hide
one in the command), the way kubectl runs the plugin: ``main()`` with the
program's name in ``argv[0]``.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from kubectl_rollout.cli import rollout_commands
from kubectl_rollout.cli.main import LAZY_COMMANDS, _package_version, cli

#: Runs main() with argv[1:] as its argv, then writes the names of every module imported to argv[1].
RUN_AND_LIST_MODULES = """
import json, sys
report, sys.argv = sys.argv[1], sys.argv[2:]
from kubectl_rollout.cli.main import main
try:
    main()
except SystemExit as exit:
    if exit.code not in (None, 0):
        raise
with open(report, "w") as out:
    json.dump(sorted(sys.modules), out)
"""

HEAVY = ("kubernetes", "textual")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["kubectl-rollout_plus", "--help"], "Commands:"),
        (["kubectl-rollout_plus", "drain", "--help"], "--ignore-daemonsets"),
        (["kubectl-rollout_plus", "apply", "--help"], "--auto-rollback"),
        (["kubectl-rollout_plus", "agent", "--help"], "logs"),
        (["kubectl-rollout_plus", "jobs", "attach", "--help"], "--from-seq"),
        (["kubectl-rollout_plus", "version", "--client"], "Client Version: v"),
        (["kubectl-rollout_plus", "completion", "bash"], "_KUBECTL_ROLLOUT_PLUS_COMPLETE"),
        # kubectl's plugin completion of command names: `kubectl rollout-plus <TAB>`
        (["kubectl_complete-rollout_plus", ""], "drain\tDrain NODE..."),
        (["kubectl_complete-rollout_plus", "dr"], "drain\tDrain NODE..."),
        (["kubectl_complete-rollout_plus", "drain", "--ign"], "--ignore-daemonsets"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_answers_without_importing_the_client_or_textual(argv: list[str], expected: str, tmp_path: Path) -> None:
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES, str(report), *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
    imported = json.loads(report.read_text())
    heavy = [name for name in imported if name.split(".")[0] in HEAVY]
    assert heavy == [], f"{' '.join(argv)} imported {heavy[:5]}"


def test_running_a_command_still_imports_what_it_needs(tmp_path: Path) -> None:
    """The check above can fail: a command that needs the client imports it (here through node completion)."""
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES, str(report), "kubectl_complete-rollout_plus", "drain", ""],
        capture_output=True,
        text=True,
        timeout=60,
        env={"KUBECONFIG": str(tmp_path / "missing"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "kubernetes" in json.loads(report.read_text())


@pytest.mark.parametrize("name", sorted(LAZY_COMMANDS))
@pytest.mark.parametrize("limit", [45, 60, 200])
def test_the_registry_summary_is_the_commands_own(name: str, limit: int) -> None:
    """--help and TAB show the registry's summary; it must say what the command's help says."""
    command = LAZY_COMMANDS[name].load()
    assert command.get_short_help_str(limit) == LAZY_COMMANDS[name].short_help(limit)
    assert not command.hidden


def test_every_command_is_registered() -> None:
    eager = {"version", "completion"}
    # cli.commands also holds the lazy commands that other tests ran
    assert set(cli.commands) - set(LAZY_COMMANDS) == eager, "other commands belong in LAZY_COMMANDS"
    rollout = {command.name for command in rollout_commands.COMMANDS}
    assert rollout | {"campaign", "drain", "cordon", "uncordon", "agent", "jobs", "tui"} == set(LAZY_COMMANDS)
    context = click.Context(cli)
    assert cli.list_commands(context) == sorted(eager | set(LAZY_COMMANDS))


@pytest.mark.parametrize("name", ["kubernetes", "click", "PyYAML", "typing-extensions", "python-dateutil", "absent"])
def test_version_reads_the_same_package_versions_as_importlib_metadata(name: str) -> None:
    try:
        expected = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        expected = "unknown"
    assert _package_version(name) == expected


def test_an_api_error_is_still_printed_kubectl_style(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Group recognises the client's ApiException without importing the client itself; anything else unforeseen
    is one line naming the log that holds its traceback, never a traceback on the terminal."""
    monkeypatch.setenv("ROLLOUT_PLUS_AGENT_DIR", str(tmp_path))
    from click.testing import CliRunner
    from kubernetes.client.exceptions import ApiException

    from kubectl_rollout.cli.options import Group

    @click.group(cls=Group)
    def group() -> None:
        pass

    @group.command()
    def forbidden() -> None:
        raise ApiException(status=403, reason="Forbidden")

    @group.command()
    def broken() -> None:
        raise RuntimeError("not an API error")

    result = CliRunner().invoke(group, ["forbidden"])
    assert result.exit_code == 1
    assert result.output.startswith("error: ")
    unforeseen = CliRunner().invoke(group, ["broken"])
    assert unforeseen.exit_code == 1
    log = tmp_path / "state" / "cli-errors.log"
    assert unforeseen.output == f"error: unexpected error: RuntimeError: not an API error (details in {log})\n"
    assert "Traceback" not in unforeseen.output
    logged = log.read_text()
    assert "Traceback (most recent call last)" in logged
    assert 'raise RuntimeError("not an API error")' in logged
