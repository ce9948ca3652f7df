from __future__ import annotations

import pytest

from kubectl_rollout.cli.completion import cobra_candidates, shell_source
from kubectl_rollout.cli.main import cli


@pytest.mark.parametrize(
    ("shell", "marker"), [("bash", "complete -o nosort -F"), ("zsh", "#compdef kubectl-rollout_plus")]
)
def test_shell_scripts(shell: str, marker: str) -> None:
    source = shell_source(cli, shell)
    assert marker in source
    assert "_KUBECTL_ROLLOUT_PLUS_COMPLETE" in source


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["dr"], "drain\tDrain NODE... in preparation for..."),
        (["drain", "--ign"], "--ignore-daemonsets\tIgnore DaemonSet-managed pods."),
        (["drain", "--dry-run", "s"], "server"),
    ],
)
def test_kubectl_plugin_completion_speaks_cobras_format(args: list[str], first: str) -> None:
    lines = cobra_candidates(cli, args).splitlines()
    assert lines[0] == first
    assert lines[-1] == ":4"  # no file-name fallback


def test_every_command_is_offered_for_an_empty_word() -> None:
    lines = cobra_candidates(cli, [""]).splitlines()
    offered = {line.split("\t")[0] for line in lines[:-1]}
    assert {"apply", "adopt", "drain", "cordon", "status", "undo", "version", "completion"} <= offered
    assert lines[-1] == ":4"
