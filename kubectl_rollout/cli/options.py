"""Click plumbing every command shares: kubectl's global flags, and errors printed kubectl-style.

Nothing here imports the kubernetes client at import time: ``--help``, ``version
--client`` and TAB completion go through this module and must stay fast
(the client alone takes longer to import than kubectl takes to answer).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kubectl_rollout.jobs.spec import Connection
from kubectl_rollout.kube.durations import parse_duration
from kubectl_rollout.kube.errors import UserFacingError

if TYPE_CHECKING:
    from kubectl_rollout.kube.cluster_access import Cluster
    from kubectl_rollout.kube.connection_settings import ConnectionSettings

F = TypeVar("F", bound=Callable[..., Any])


class Failure(click.ClickException):
    """A UserFacingError on its way out, printed kubectl-style: ``error: ...``."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click declares it on the class

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UserFacingError as err:
            raise Failure(err.message, err.exit_code) from err
        except Exception as err:
            if not _is_api_exception(err):
                raise
            from kubectl_rollout.kube.cluster_access import describe_api_error

            raise Failure(describe_api_error(err), 1) from err


def _is_api_exception(err: Exception) -> bool:
    # Only a command that imported the client can have raised its ApiException;
    # looking it up in sys.modules keeps the client out of every other command.
    exceptions = sys.modules.get("kubernetes.client.exceptions")
    return exceptions is not None and isinstance(err, exceptions.ApiException)


def duration_callback(_ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """Click callback for a DURATION option (``90s``, ``1m30s``): seconds, or None when not given."""
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
        callback=duration_callback,
        help="How long to wait for a single API request before giving up, e.g. 1s, 2m. "
        "0 means no timeout. [default: 0]",
    ),
)


def global_options(command: F) -> F:
    """Attach the connection flags so they work after the subcommand too."""
    for option in reversed(_GLOBAL_OPTIONS):
        command = option(command)
    return command


def settings_from(ctx: click.Context, **overrides: Any) -> ConnectionSettings:
    """Merge the flags given before the subcommand with those given after it."""
    from kubectl_rollout.kube.connection_settings import ConnectionSettings

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
    from kubectl_rollout.kube.cluster_access import connect

    cluster = connect(settings_from(ctx, **flags))
    ctx.call_on_close(cluster.close)
    return cluster


def connection_of(ctx: click.Context, cluster: Cluster, flags: dict[str, Any]) -> Connection:
    """The job's cluster as the flags resolved it: absolute kubeconfig paths, the context and namespace used."""
    from kubectl_rollout.kube.cluster_access import kubeconfig_paths

    settings = settings_from(ctx, **flags)
    paths = [p for p in kubeconfig_paths(settings.kubeconfig, os.environ) if p.is_file()]
    return Connection(
        kubeconfig=tuple(str(p.resolve()) for p in paths),
        context=cluster.context,
        namespace=cluster.namespace,
        request_timeout=settings.request_timeout,
    )
