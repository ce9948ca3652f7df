"""Shell completion: scripts for bash and zsh, and kubectl's plugin completion protocol.

``kubectl rollout-plus <TAB>`` is completed by kubectl itself (1.26+), which
runs ``kubectl_complete-rollout_plus ARGS... PARTIAL`` from PATH and reads
Cobra's format: one candidate per line (``value<TAB>description``), then a
``:DIRECTIVE`` line. The same click machinery answers both.
"""

from __future__ import annotations

import os
import sys

import click
from click.shell_completion import ShellComplete, get_completion_class

PROGRAM = "kubectl-rollout_plus"
COMPLETE_VAR = "_KUBECTL_ROLLOUT_PLUS_COMPLETE"
#: cobra.ShellCompDirectiveNoFileComp: offer no file names when we have no candidate
NO_FILE_COMPLETION = 4


def shell_source(command: click.Command, shell: str) -> str:
    completion_class = get_completion_class(shell)
    if completion_class is None:
        raise click.BadParameter(f"unsupported shell {shell!r}; use bash or zsh")
    return completion_class(command, {}, PROGRAM, COMPLETE_VAR).source()


def cobra_candidates(command: click.Command, args: list[str]) -> str:
    """Answer kubectl's plugin completion request for ``args`` (the last one is being typed)."""
    incomplete = args[-1] if args else ""
    completer = ShellComplete(command, {}, "kubectl rollout-plus", COMPLETE_VAR)
    lines = []
    for item in completer.get_completions(args[:-1], incomplete):
        help_text = (item.help or "").splitlines()[0] if item.help else ""
        lines.append(f"{item.value}\t{help_text}" if help_text else str(item.value))
    lines.append(f":{NO_FILE_COMPLETION}")
    return "\n".join(lines) + "\n"


def kubectl_complete(command: click.Command) -> None:
    """Answer kubectl's completion request in ``sys.argv`` for ``command`` (the whole command line)."""
    # Completion must never print a traceback into the user's prompt.
    try:
        sys.stdout.write(cobra_candidates(command, sys.argv[1:]))
    except Exception:
        sys.stdout.write(f":{NO_FILE_COMPLETION}\n")


def invoked_for_completion() -> bool:
    """True when the zipapp runs under the name kubectl looks for (a symlink)."""
    return os.path.basename(sys.argv[0]).startswith("kubectl_complete-")
