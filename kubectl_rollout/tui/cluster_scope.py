"""What the cluster screens look at and may do: which cluster, namespace and nodes, and whether read-only."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubectl_rollout.jobs.spec import Connection, DrainOptions


@dataclass(frozen=True, kw_only=True)
class ClusterScope:
    #: the cluster, as a job spec names it (kubeconfig paths, context resolved, namespace)
    connection: Connection
    #: the Workloads screen's namespace (None: the connection's, else "default")
    namespace: str | None = None
    #: the Nodes screen shows the nodes this label selector selects ("" : every node)
    node_selector: str = ""
    #: the drain the Nodes screen plans and starts; the TUI's default is k9s' (DaemonSet pods stay)
    drain_options: DrainOptions = field(default_factory=lambda: DrainOptions(ignore_daemonsets=True))
    #: --readonly: every action is hidden and refused
    readonly: bool = False
    #: seconds between two refreshes of a screen's table (0: only on `g`)
    refresh_every: float = 5.0

    @property
    def workload_namespace(self) -> str:
        return self.namespace or self.connection.namespace or "default"
