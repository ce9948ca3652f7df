"""What a job runs, and how it ended: plain data that serialises to JSON and back.

A ``JobSpec`` names the cluster by kubeconfig path(s), context and namespace,
never by a credential: whoever runs the job (this process, or the agent after
a restart) reads the credentials again from those files. The agent journals
specs as they are here, so a field added later needs a default.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.jobs.events.base import decode_dataclass, encode_value
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.events.job import JobState

SPEC_VERSION = 1


class JobKind(enum.StrEnum):
    DRAIN = "drain"
    RESTART = "restart"
    ROLLOUT = "rollout"


@dataclass(frozen=True, kw_only=True)
class Connection:
    """Which cluster, as kubectl's global flags resolved when the job was submitted."""

    #: the kubeconfig files, in kubectl's precedence order (--kubeconfig, else $KUBECONFIG, else ~/.kube/config)
    kubeconfig: tuple[str, ...] = ()
    #: resolved at submission, so that a later change of current-context never redirects the job
    context: str | None = None
    namespace: str | None = None
    #: seconds; 0 means no timeout
    request_timeout: float = 0.0


@dataclass(frozen=True, kw_only=True)
class DrainOptions:
    """kubectl drain's options, and ours."""

    force: bool = False
    ignore_daemonsets: bool = False
    delete_emptydir_data: bool = False
    #: seconds; -1 uses each pod's own terminationGracePeriodSeconds
    grace_period: int = -1
    #: seconds per node; 0 waits forever (kubectl's --timeout)
    timeout: float = 0.0
    pod_selector: str = ""
    disable_eviction: bool = False
    skip_wait_for_delete_timeout: int = 0
    chunk_size: int = 500
    dry_run: DryRun = DryRun.NONE
    #: evictions in flight at once (requested, pod not gone yet); 0 means no limit
    max_concurrent_evictions: int = 50
    #: 0: cordon every node first, then drain them one by one (kubectl);
    #: N: cordon and drain N nodes at a time, then wait for evicted workloads
    node_batch: int = 0
    uncordon_on_failure: bool = False


@dataclass(frozen=True, kw_only=True)
class DrainJob:
    nodes: tuple[str, ...] = ()
    #: -l/--selector: drain the nodes it selects (resolved when the job starts)
    selector: str = ""
    options: DrainOptions = DrainOptions()
    #: --plan: compute and emit the plan, change nothing
    plan_only: bool = False


@dataclass(frozen=True, kw_only=True)
class RestartJob:
    """Replace every pod of a workload the plugin does not own by evicting them one at a time."""

    #: "deployment/NAME", "statefulset/NAME" or "daemonset/NAME" (kubectl's short kinds work too)
    workload: str
    grace_period: int = -1
    dry_run: DryRun = DryRun.NONE
    #: seconds; 0 waits for as long as it takes
    timeout: float = 0.0
    resume: bool = False


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    kind: JobKind
    connection: Connection
    drain: DrainJob | None = None
    restart: RestartJob | None = None
    version: int = SPEC_VERSION

    def __post_init__(self) -> None:
        given = {kind for kind in JobKind if getattr(self, kind.value, None) is not None}
        if given != {self.kind}:
            raise ValueError(f"a {self.kind.value} job needs exactly its own section, not {sorted(given)}")

    @property
    def target(self) -> str:
        """What the job acts on, for a person: ``node/a, node/b``, ``-l pool=blue``, ``deployment/web``."""
        if self.drain is not None:
            return ", ".join(f"node/{n}" for n in self.drain.nodes) or f"-l {self.drain.selector}"
        if self.restart is not None:
            return self.restart.workload
        return ""

    def as_dict(self) -> dict[str, Any]:
        return {f.name: encode_value(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobSpec:
        version = int(data.get("version", SPEC_VERSION))
        if version > SPEC_VERSION:
            raise ValueError(f"job spec version {version} is newer than this version understands ({SPEC_VERSION})")
        spec: JobSpec = decode_dataclass(cls, data)
        return spec

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        return cls.from_dict(json.loads(text))


@dataclass(frozen=True, kw_only=True)
class JobResult:
    state: JobState
    #: the CLI's exit code for this outcome: 0 succeeded, 1 failed, 2 bad usage, 130 cancelled
    exit_code: int
    #: one line for a person
    summary: str = ""
    #: set when the job ended on an error the engine raised rather than reported (printed ``error: ...``)
    error: str = ""

    @property
    def succeeded(self) -> bool:
        return self.state is JobState.SUCCEEDED
