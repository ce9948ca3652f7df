"""The ``kubectl rollout-plus`` command line.

kubectl runs this as ``kubectl-rollout_plus ARGS``. Like kubectl, the global
connection flags (``--kubeconfig``, ``--context``, ``-n``, ``--request-timeout``)
are accepted before or after the subcommand.

Exit codes: 0 success; 1 the operation failed (or the cluster could not be
reached); 2 bad usage.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

import click

from kubectl_rollout import __version__
from kubectl_rollout.cli.completion import COMPLETE_VAR, invoked_for_completion, kubectl_complete, shell_source
from kubectl_rollout.cli.lazy_group import LazyCommand, LazyGroup
from kubectl_rollout.cli.options import global_options, open_cluster, settings_from

_ROLLOUT = "kubectl_rollout.cli.rollout_commands"
_DRAIN = "kubectl_rollout.cli.drain_commands"

#: Every command but ``version`` and ``completion`` (defined below), imported
#: only when it runs. The summary is the first paragraph of the command's help
#: (tests/unit/test_lazy_commands.py keeps the two equal); `--help` and TAB
#: show it without importing the command's module and the kubernetes client.
LAZY_COMMANDS = {
    "apply": LazyCommand(
        f"{_ROLLOUT}:apply", "Create or update a managed workload from an apps/v1 Deployment manifest, and roll it out."
    ),
    "set": LazyCommand(f"{_ROLLOUT}:set_group", "Change one field of a managed workload and roll it out."),
    "scale": LazyCommand(
        f"{_ROLLOUT}:scale",
        "Set the number of replicas of managed workload NAME (mid-rollout: proportionally, like the controller).",
    ),
    "status": LazyCommand(
        f"{_ROLLOUT}:status", "Show the rollout status of managed workload NAME, worded like kubectl rollout status."
    ),
    "history": LazyCommand(
        f"{_ROLLOUT}:history",
        "List the revisions of managed workload NAME with their change-cause, as kubectl rollout history does.",
    ),
    "undo": LazyCommand(
        f"{_ROLLOUT}:undo",
        "Return managed workload NAME to a previous revision's pod template (its ReplicaSet is reused).",
    ),
    "pause": LazyCommand(
        f"{_ROLLOUT}:pause",
        "Pause managed workload NAME: no rollout progress, no deadline, until resumed (scaling still applies).",
    ),
    "resume": LazyCommand(f"{_ROLLOUT}:resume", "Resume paused managed workload NAME and drive its rollout."),
    "restart": LazyCommand(f"{_ROLLOUT}:restart", "Replace every pod of a workload."),
    "delete": LazyCommand(
        f"{_ROLLOUT}:delete", "Delete managed workload NAME: its record, and through it every ReplicaSet and pod."
    ),
    "adopt": LazyCommand(f"{_ROLLOUT}:adopt", "Turn Deployment NAME into a managed workload, with zero pod restarts."),
    "release": LazyCommand(
        f"{_ROLLOUT}:release", "Hand managed workload NAME back to a real Deployment, with zero pod restarts."
    ),
    "promote": LazyCommand(
        f"{_ROLLOUT}:promote",
        "Move the canary of managed workload NAME past its current step (a pause, a gate, a weight).",
    ),
    "abort": LazyCommand(
        f"{_ROLLOUT}:abort",
        "Abort the canary of managed workload NAME: the stable ReplicaSet back at full size, the canary at 0.",
    ),
    "retry": LazyCommand(
        f"{_ROLLOUT}:retry", "Start the aborted canary of managed workload NAME again from its first step."
    ),
    "drain": LazyCommand(
        f"{_DRAIN}:drain", "Drain NODE... in preparation for maintenance: cordon, then evict its pods."
    ),
    "campaign": LazyCommand(
        "kubectl_rollout.cli.campaign_commands:campaign",
        "Drain a pool of nodes in waves: a budget out at once, zones, a rate, soak, hooks and windows.",
    ),
    "cordon": LazyCommand(f"{_DRAIN}:cordon", "Mark NODE... as unschedulable (new pods will not be placed there)."),
    "uncordon": LazyCommand(f"{_DRAIN}:uncordon", "Mark NODE... as schedulable."),
    "agent": LazyCommand(
        "kubectl_rollout.cli.agent_commands:agent_group",
        "The local agent that runs jobs, so that they survive a closed terminal.",
    ),
    "tui": LazyCommand(
        "kubectl_rollout.cli.tui_command:tui",
        "Watch and steer the agent's jobs live in a terminal UI (drains, rollouts, restarts).",
    ),
    "jobs": LazyCommand(
        "kubectl_rollout.cli.agent_commands:jobs_group",
        "The agent's jobs: list them, show one, follow it, pause, resume, surge or cancel it, print its events.",
    ),
}


@click.group(
    cls=LazyGroup,
    lazy_commands=LAZY_COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@global_options
def cli(**_flags: Any) -> None:
    """Voluntary disruptions, done safely: PDB-aware node drains and client-side rollouts.

    \b
    Examples:
      kubectl rollout-plus version
      kubectl rollout-plus version --context staging
    """


def _package_version(name: str) -> str:
    """The installed version of distribution ``name``, as importlib.metadata would find it.

    A wheel installs its metadata as ``NAME-VERSION.dist-info`` beside the
    package, so the first such folder along sys.path names the version that
    imports. importlib.metadata, asked only when there is none, costs more to
    import (email parsing, zipfile, csv) than the rest of ``version --client``.
    """
    prefix = name.lower().replace("-", "_") + "-"
    for entry in sys.path:
        try:
            found = [f for f in os.listdir(entry or ".") if f.lower().startswith(prefix) and f.endswith(".dist-info")]
        except OSError:  # not a folder (a zip), or gone
            continue
        if found:
            return found[0][len(prefix) : -len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

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
        from kubectl_rollout.kube.version_probe import probe_server_version

        # The light path first (no kubernetes client to import); the client words any failure.
        probed = probe_server_version(settings_from(ctx, **flags))
        if probed is not None:
            versions["serverVersion"], versions["server"] = probed.git_version, probed.server
        else:
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


def complete() -> None:
    """Console-script entry point ``kubectl_complete-rollout_plus``: kubectl's plugin completion."""
    kubectl_complete(cli)


def main() -> None:
    """Console-script entry point: ``kubectl-rollout_plus`` (or, linked, ``kubectl_complete-rollout_plus``)."""
    if invoked_for_completion():
        complete()
        return
    # complete_var: click would derive it from the program's name, space included, which no script sets.
    cli.main(prog_name="kubectl rollout-plus", complete_var=COMPLETE_VAR)


if __name__ == "__main__":  # pragma: no cover
    main()
