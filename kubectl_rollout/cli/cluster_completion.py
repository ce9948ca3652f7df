"""TAB candidates read from the cluster: node names, managed workload names, Deployment names.

A completion asks the cluster with a short timeout (3 s) and says nothing when
it cannot: no candidate is better than a traceback printed into the user's
prompt. The kubernetes client is imported only when TAB asks, so that
``--help`` and the completion of flags do without it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click
from click.shell_completion import CompletionItem

from kubectl_rollout.cli.options import settings_from
from kubectl_rollout.kube.errors import UserFacingError

if TYPE_CHECKING:
    from kubectl_rollout.kube.cluster_access import Cluster

log = logging.getLogger(__name__)

#: how long TAB waits for the cluster before offering nothing
COMPLETION_TIMEOUT = 3.0


def _names_from_cluster(
    ctx: click.Context, incomplete: str, what: str, list_names: Callable[[Cluster], list[str]]
) -> list[CompletionItem]:
    import urllib3
    import yaml
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException

    from kubectl_rollout.kube.cluster_access import connect

    # what asking the cluster can raise: no usable kubeconfig, an API error, no connection
    unreachable = (
        UserFacingError,
        ConfigException,
        yaml.YAMLError,
        ApiException,
        urllib3.exceptions.HTTPError,
        OSError,
    )
    flags: dict[str, Any] = {k: ctx.params.get(k) for k in ("kubeconfig", "context", "namespace")}
    try:
        settings = replace(settings_from(ctx, **flags), request_timeout=COMPLETION_TIMEOUT)
        cluster = connect(settings)
        try:
            names = list_names(cluster)
        finally:
            cluster.close()
    except unreachable as err:
        log.debug("no %s names to complete: %s", what, err)
        return []
    return [CompletionItem(name) for name in sorted(set(names)) if name.startswith(incomplete)]


def complete_nodes(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Node names, for ``drain``, ``cordon`` and ``uncordon``."""
    return _names_from_cluster(
        ctx, incomplete, "node", lambda cluster: [n.metadata.name for n in cluster.core.list_node().items]
    )


def _managed_workloads(cluster: Cluster) -> list[str]:
    from kubectl_rollout.kube.record_names import WORKLOAD_LABEL, record_name

    records = cluster.core.list_namespaced_config_map(cluster.namespace, label_selector=WORKLOAD_LABEL)
    names = (item.metadata.labels[WORKLOAD_LABEL] for item in records.items)
    return [name for name, item in zip(names, records.items, strict=True) if item.metadata.name == record_name(name)]


def complete_workloads(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Managed workload names in the command's namespace (their records' workload label)."""
    return _names_from_cluster(ctx, incomplete, "workload", _managed_workloads)


def _kind_names(cluster: Cluster, kinds: tuple[str, ...]) -> list[str]:
    listers = {
        "deployment": cluster.apps.list_namespaced_deployment,
        "statefulset": cluster.apps.list_namespaced_stateful_set,
        "daemonset": cluster.apps.list_namespaced_daemon_set,
    }
    return [f"{kind}/{item.metadata.name}" for kind in kinds for item in listers[kind](cluster.namespace).items]


def complete_deployments(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """``deployment/NAME`` of the namespace's Deployments, for ``adopt``."""
    if "/" not in incomplete:
        return [CompletionItem("deployment/")] if "deployment/".startswith(incomplete) else []
    return _names_from_cluster(ctx, incomplete, "deployment", lambda cluster: _kind_names(cluster, ("deployment",)))


def complete_restart_targets(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """For ``restart``: managed workload names, or KIND/NAME once a kind is typed."""
    if "/" in incomplete:
        kind = incomplete.split("/", 1)[0]
        if kind not in ("deployment", "statefulset", "daemonset"):
            return []
        return _names_from_cluster(ctx, incomplete, kind, lambda cluster: _kind_names(cluster, (kind,)))
    kinds = [CompletionItem(f"{kind}/") for kind in ("daemonset", "deployment", "statefulset")]
    return [*complete_workloads(ctx, _param, incomplete), *(k for k in kinds if k.value.startswith(incomplete))]
