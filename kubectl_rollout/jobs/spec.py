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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_rollout.jobs.events import rollout as ev
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
    #: --surge: raise the owners of PDB-blocked pods first (kubectl_rollout.drain.surge), restore them after
    surge: bool = False
    #: --surge-max: extra replicas per workload, a count or a percentage of its replicas ("N" or "P%")
    surge_max: str = "100%"
    #: seconds to wait for a surge's extra pods to be Ready before giving it up (they stay Pending: no room)
    surge_wait: float = 60.0


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
class DriveOptions:
    """How a job drives a rollout once it has recorded its change."""

    #: drive the rollout to its end; False only records the change
    wait: bool = True
    #: give up driving after this many seconds (the rollout goes on with the next driver)
    timeout: float | None = None
    #: when the rollout fails (progress deadline, failing pods), return to the last good revision
    auto_rollback: bool = False
    #: shrink old ReplicaSets as the Deployment controller would, past what the workload's PDBs allow
    ignore_pdb: bool = False
    #: fail once a new pod crash-loops this many restarts (image pull failures fail at once)
    fail_after_restarts: int = 3


class ActionKind(enum.StrEnum):
    APPLY = "apply"
    SET_IMAGE = "set-image"
    SCALE = "scale"
    RESTART = "restart"
    UNDO = "undo"
    PAUSE = "pause"
    RESUME = "resume"
    #: ``status -w``: drive the rollout, or follow the driver that holds it
    WATCH = "watch"


@dataclass(frozen=True, kw_only=True)
class RolloutAction:
    """What a rollout job does; plain data, so that a job spec can carry it as JSON (``as_dict``)."""

    kind: ActionKind
    #: the workload (apply: taken from the manifest)
    name: str = ""
    #: None: the connection's namespace (-n, then the context's); apply: the manifest's, if it names one
    namespace: str | None = None
    #: apply: the apps/v1 Deployment manifest
    manifest: Mapping[str, Any] | None = None
    #: set image
    images: tuple[ev.ContainerImage, ...] = ()
    #: scale
    replicas: int = 0
    #: undo: 0 means the revision before the current one
    to_revision: int = 0
    drive: DriveOptions = field(default_factory=DriveOptions)

    @property
    def workload(self) -> str:
        if self.kind is ActionKind.APPLY and self.manifest is not None:
            return str((self.manifest.get("metadata") or {}).get("name", ""))
        return self.name

    def as_dict(self) -> dict[str, Any]:
        return {f.name: encode_value(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RolloutAction:
        action: RolloutAction = decode_dataclass(cls, data)
        return action


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    kind: JobKind
    connection: Connection
    drain: DrainJob | None = None
    restart: RestartJob | None = None
    rollout: RolloutAction | None = None
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
        if self.rollout is not None:
            return f"workload/{self.rollout.workload}"
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
