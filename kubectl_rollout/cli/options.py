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


#: where ``open_cluster`` leaves the command's cluster, so that a lost connection is worded with its server
_CLUSTER_KEY = "kubectl_rollout.cluster"


class Group(click.Group):
    """The root group: whatever a command raises reaches the user as one line, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except UserFacingError as err:
            raise Failure(err.message, err.exit_code) from err
        except Exception as err:
            raise Failure(_one_line(ctx, err), 1) from err


def _one_line(ctx: click.Context, err: Exception) -> str:
    # Only a command that imported the client can have raised its errors;
    # looking them up in sys.modules keeps the client out of every other command.
    exceptions = sys.modules.get("kubernetes.client.exceptions")
    if exceptions is not None and isinstance(err, exceptions.ApiException):
        from kubectl_rollout.kube.cluster_access import describe_api_error

        return describe_api_error(err)
    cluster = ctx.find_root().meta.get(_CLUSTER_KEY)
    if cluster is not None and "urllib3" in sys.modules:
        from kubectl_rollout.kube.api_outage import is_connection_error
        from kubectl_rollout.kube.cluster_access import describe_transport_failure

        if is_connection_error(err):
            return describe_transport_failure(err, cluster).message
    from kubectl_rollout.cli.unexpected_errors import report_unexpected

    return report_unexpected(err)


def duration_callback(_ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """Click callback for a DURATION option (``90s``, ``1m30s``): seconds, or None when not given."""
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err), param=param) from err


#: kubectl's connection flags, as (declarations, settings): decorators on most commands, added parameters on the rest
_CONNECTION_FLAGS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (
        ("--kubeconfig",),
        dict(
            metavar="PATH",
            default=None,
            help="Path to the kubeconfig file to use (default: $KUBECONFIG, then ~/.kube/config).",
        ),
    ),
    (("--context",), dict(metavar="NAME", default=None, help="The name of the kubeconfig context to use.")),
    (
        ("-n", "--namespace"),
        dict(
            metavar="NAME",
            default=None,
            help="The namespace scope for this request (default: the context's, then 'default').",
        ),
    ),
    (
        ("--request-timeout",),
        dict(
            metavar="DURATION",
            default=None,
            callback=duration_callback,
            help="How long to wait for a single API request before giving up, e.g. 1s, 2m. "
            "0 means no timeout. [default: 0]",
        ),
    ),
)


def global_options(command: F) -> F:
    """Attach the connection flags so they work after the subcommand too."""
    for declarations, attributes in reversed(_CONNECTION_FLAGS):
        command = click.option(*declarations, **attributes)(command)
    return command


def accept_connection_flags(command: click.Command) -> None:
    """Let ``command`` (and every command of a group) take the connection flags it does not declare.

    kubectl takes ``--context`` and its siblings on every command, and so do
    we, even where a command has no use for them (``jobs list --context x``):
    a flag that works on one command and is refused on the next is a trap.
    The value goes where ``settings_from`` reads the flags given before the
    command, so a command that does connect uses it.
    """
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_connection_flags(sub)
    if any(param.name == "kubeconfig" for param in command.params):
        return
    for declarations, attributes in _CONNECTION_FLAGS:
        convert = attributes.get("callback")

        def remember(ctx: click.Context, param: click.Parameter, value: Any, convert: Any = convert) -> Any:
            if convert is not None:
                value = convert(ctx, param, value)
            if value is not None and param.name is not None:
                ctx.find_root().params[param.name] = value
            return value

        command.params.append(click.Option(declarations, **{**attributes, "callback": remember, "expose_value": False}))


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
    ctx.find_root().meta[_CLUSTER_KEY] = cluster
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
