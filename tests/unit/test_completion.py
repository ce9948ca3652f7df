from __future__ import annotations

import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

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


# --- the scripts in real shells ---------------------------------------------------------------------------------

#: (words typed after the command, the one completion the shell must offer)
TYPED = [(["dr"], "drain"), (["drain", "--ign"], "--ignore-daemonsets"), (["drain", "--dry-run", "s"], "server")]


def real_shell(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is missing: run hack/install-system-packages.sh (make setup does)", pytrace=False)
    return path


def shell_environment() -> dict[str, str]:
    """The installed commands (``kubectl-rollout_plus`` beside this Python) first on PATH, as after an install."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_the_bash_script_completes_in_a_real_bash() -> None:
    # As the help says: `source <(kubectl-rollout_plus completion bash)`; then bash's own programmable completion
    # calls the registered function with COMP_WORDS and COMP_CWORD, as it does on TAB.
    lines = ["source <(kubectl-rollout_plus completion bash) || exit 3", "complete -p kubectl-rollout_plus"]
    for words, _ in TYPED:
        lines += [
            f"COMP_WORDS=(kubectl-rollout_plus {shlex.join(words)}); COMP_CWORD={len(words)}; COMPREPLY=()",
            "_kubectl_rollout_plus_completion kubectl-rollout_plus",
            'printf "reply %s\\n" "${COMPREPLY[*]}"',
        ]
    shell = subprocess.run(
        [real_shell("bash"), "--norc", "--noprofile", "-c", "\n".join(lines)],
        capture_output=True,
        text=True,
        env=shell_environment(),
        timeout=60,
    )

    assert shell.returncode == 0, shell.stderr
    out = shell.stdout.splitlines()
    assert out[0] == "complete -o nosort -F _kubectl_rollout_plus_completion kubectl-rollout_plus"
    assert out[1:] == [f"reply {offered}" for _, offered in TYPED], shell.stdout


class Terminal:
    """A program on a pseudo-terminal: what is typed goes in as keys, what it shows is read back."""

    def __init__(self, *command: str, env: dict[str, str]) -> None:
        self._fd, child = os.openpty()
        self.process = subprocess.Popen(
            command, stdin=child, stdout=child, stderr=child, env=env, start_new_session=True
        )
        os.close(child)
        self.shown = ""

    def type(self, keys: str) -> None:
        os.write(self._fd, keys.encode())

    def until(self, pattern: str, *, timeout: float = 30) -> re.Match[str]:
        """Read what it shows until ``pattern`` matches the output not yet consumed; consume up to the match."""
        deadline = time.monotonic() + timeout
        while (found := re.search(pattern, self.shown)) is None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                raise AssertionError(f"no {pattern!r} within {timeout} s; the terminal showed {self.shown!r}")
            try:
                self.shown += os.read(self._fd, 4096).decode(errors="replace")
            except OSError as err:  # the program ended
                raise AssertionError(f"the terminal closed before {pattern!r}: {self.shown!r}") from err
        self.shown = self.shown[found.end() :]
        return found

    def close(self) -> None:
        self.process.kill()
        self.process.wait(10)
        os.close(self._fd)


def test_the_zsh_script_completes_in_a_real_zsh() -> None:
    # An interactive zsh with its completion system, the script sourced as the help says; each line is typed
    # with a TAB, then a key bound to a widget that shows the line editor's buffer (what TAB made of it) and
    # empties it in the same step: a Ctrl-U typed after it could land in a completion menu still open on a
    # loaded machine and leave the line for the next one.
    zsh = Terminal(real_shell("zsh"), "-f", "-i", env={**shell_environment(), "TERM": "xterm"})
    try:
        zsh.type(
            "autoload -Uz compinit && compinit -u -D && source <(kubectl-rollout_plus completion zsh) && "
            "shown() { zle -I; print -r -- \"<<$BUFFER>>\"; BUFFER=; CURSOR=0 }; zle -N shown; bindkey '^X^B' shown; "
            "print ready-$((6*7))\n"
        )
        zsh.until(r"ready-42")
        for words, offered in TYPED:
            line = shlex.join(["kubectl-rollout_plus", *words])
            zsh.type(f"{line}\t\x18\x02")
            buffer = zsh.until(r"<<([^<>\r\n]*)>>").group(1)
            assert buffer == f"{shlex.join(['kubectl-rollout_plus', *words[:-1], offered])} ", (
                f"TAB after {line!r} left {buffer!r}"
            )
    finally:
        zsh.close()
