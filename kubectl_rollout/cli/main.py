"""The ``kubectl rollout-plus`` command line.

kubectl runs this as ``kubectl-rollout_plus ARGS``. Like kubectl, the global
connection flags (``--kubeconfig``, ``--context``, ``-n``, ``--request-timeout``)
are accepted before or after the subcommand.

Exit codes: 0 success; 1 the operation failed (or the cluster could not be
reached); 2 bad usage.
"""

from __future__ import annotations

import json
import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import click

from kubectl_rollout import __version__
from kubectl_rollout.cli.completion import invoked_for_completion, kubectl_complete, shell_source
from kubectl_rollout.cli.drain_commands import cordon, drain, uncordon
from kubectl_rollout.cli.options import Group, global_options, open_cluster
from kubectl_rollout.cli.rollout_commands import COMMANDS as ROLLOUT_COMMANDS


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@global_options
def cli(**_flags: Any) -> None:
    """Voluntary disruptions, done safely: PDB-aware node drains and client-side rollouts.

    \b
    Examples:
      kubectl rollout-plus version
      kubectl rollout-plus version --context staging
    """


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


@cli.command("version")
@click.option(
    "--client", "client_only", is_flag=True, help="Print the client version only; do not contact the cluster."
)
@click.option(
    "-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format."
)
@global_options
@click.pass_context
def version_command(ctx: click.Context, /, client_only: bool, output: str, **flags: Any) -> None:
    """Print the plugin's version and the API server's.

    Exits 1 with one line naming the server it tried when the cluster cannot
    be reached.
    """
    versions: dict[str, str] = {
        "clientVersion": f"v{__version__}",
        "python": platform.python_version(),
        "kubernetesClient": _package_version("kubernetes"),
    }
    if not client_only:
        cluster = open_cluster(ctx, **flags)
        versions["serverVersion"] = cluster.server_version()
        versions["server"] = cluster.server
    if output == "json":
        click.echo(json.dumps(versions, indent=2))
        return
    click.echo(f"Client Version: {versions['clientVersion']}")
    click.echo(f"Python Version: {versions['python']} (kubernetes client {versions['kubernetesClient']})")
    if not client_only:
        click.echo(f"Server Version: {versions['serverVersion']}")


@cli.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh"]))
def completion_command(shell: str) -> None:
    """Print the completion script for SHELL.

    \b
    bash:  source <(kubectl-rollout_plus completion bash)
    zsh:   source <(kubectl-rollout_plus completion zsh)

    For `kubectl rollout-plus <TAB>`, kubectl (1.26+) runs
    kubectl_complete-rollout_plus from PATH; pip and pipx install it, and with
    Krew link it to the plugin:
    ln -s "$(command -v kubectl-rollout_plus)" ~/.krew/bin/kubectl_complete-rollout_plus
    """
    click.echo(shell_source(cli, shell), nl=False)


for command in ROLLOUT_COMMANDS:
    cli.add_command(command)
cli.add_command(drain)
cli.add_command(cordon)
cli.add_command(uncordon)


def complete() -> None:
    """Console-script entry point ``kubectl_complete-rollout_plus``: kubectl's plugin completion."""
    kubectl_complete(cli)


def main() -> None:
    """Console-script entry point: ``kubectl-rollout_plus`` (or, linked, ``kubectl_complete-rollout_plus``)."""
    if invoked_for_completion():
        complete()
        return
    cli.main(prog_name="kubectl rollout-plus")


if __name__ == "__main__":  # pragma: no cover
    main()
