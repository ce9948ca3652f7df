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
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import click

from kubectl_rollout import __version__
from kubectl_rollout.cluster_access import Cluster, ConnectionSettings, connect
from kubectl_rollout.durations import parse_duration
from kubectl_rollout.errors import UserFacingError

F = TypeVar("F", bound=Callable[..., Any])


class _Failure(click.ClickException):
    """A UserFacingError on its way out, printed kubectl-style: ``error: ...``."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click declares it on the class

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UserFacingError as err:
            raise _Failure(err.message, err.exit_code) from err


def _parse_request_timeout(_ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err), param=param) from err


_GLOBAL_OPTIONS = (
    click.option(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="Path to the kubeconfig file to use (default: $KUBECONFIG, then ~/.kube/config).",
    ),
    click.option("--context", metavar="NAME", default=None, help="The name of the kubeconfig context to use."),
    click.option(
        "-n",
        "--namespace",
        metavar="NAME",
        default=None,
        help="The namespace scope for this request (default: the context's, then 'default').",
    ),
    click.option(
        "--request-timeout",
        metavar="DURATION",
        default=None,
        callback=_parse_request_timeout,
        help="How long to wait for a single API request before giving up, e.g. 1s, 2m. "
        "0 means no timeout. [default: 0]",
    ),
)


def global_options(command: F) -> F:
    """Attach the connection flags so they work after the subcommand too."""
    for option in reversed(_GLOBAL_OPTIONS):
        command = option(command)
    return command


def _settings(ctx: click.Context, **overrides: Any) -> ConnectionSettings:
    """Merge the flags given before the subcommand with those given after it."""
    merged: dict[str, Any] = {}
    for level in (ctx.find_root().params, overrides):
        merged.update({k: v for k, v in level.items() if v is not None})
    return ConnectionSettings(
        kubeconfig=merged.get("kubeconfig"),
        context=merged.get("context"),
        namespace=merged.get("namespace"),
        request_timeout=merged.get("request_timeout", 0.0),
    )


def open_cluster(ctx: click.Context, **flags: Any) -> Cluster:
    cluster = connect(_settings(ctx, **flags))
    ctx.call_on_close(cluster.close)
    return cluster


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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


def main() -> None:
    """Console-script entry point: ``kubectl-rollout_plus``."""
    cli.main(prog_name="kubectl rollout-plus")


if __name__ == "__main__":  # pragma: no cover
    main()
