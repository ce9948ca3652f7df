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
import math
import re
import threading
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_rollout.jobs.events import rollout as ev
from kubectl_rollout.jobs.events.base import decode_dataclass, encode_value
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.events.job import JobState

SPEC_VERSION = 1

#: exit codes of the CLI contract
EXIT_OK, EXIT_FAILED = 0, 1


class JobKind(enum.StrEnum):
    CAMPAIGN = "campaign"
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


class NodeOrder(enum.StrEnum):
    """In which order a campaign takes its nodes."""

    #: fewest pods to remove first (then by name)
    LEAST_LOADED = "least-loaded"
    #: as named, then as the selector lists them
    GIVEN = "given"


class OnBlocked(enum.StrEnum):
    """What a campaign does with a node that cannot be drained within its bound (``--timeout``)."""

    #: no bound: wait for as long as it takes
    WAIT = "wait"
    #: uncordon it, report it, go on with the others
    SKIP = "skip"
    #: leave it cordoned and labelled (``rollout-plus.io/campaign-kept``), report it, go on
    KEEP = "keep"
    #: drain it again with ``--surge`` (extra replicas first); kept as with ``keep`` if that fails too
    SURGE = "surge"


class OnHookFailure(enum.StrEnum):
    """What a campaign does when a hook exits non-zero."""

    #: stop the campaign (the node stays as it is)
    STOP = "stop"
    #: leave the node (a pre-hook: never cordoned; an after-hook: left cordoned), go on with the others
    SKIP = "skip"


class AtWindowEnd(enum.StrEnum):
    """What the nodes in progress do when the window closes (none starts after it)."""

    #: their drains go on to the end
    FINISH = "finish"
    #: their drains stop; the nodes stay cordoned and are drained again at the next window
    STOP = "stop"


@dataclass(frozen=True, kw_only=True)
class CampaignJob:
    """Drain a pool of nodes in waves: a budget out at once, zones, a rate, soak, hooks, windows."""

    #: the nodes by name; a selector adds the nodes it picks (the CLI resolves it into this list at submission,
    #: so that the job claims every node from its start)
    nodes: tuple[str, ...] = ()
    selector: str = ""
    #: nodes out at once: "N" or "P%" of the campaign's nodes (a percentage rounds up, as karpenter's)
    budget: str = "1"
    #: one zone (topology.kubernetes.io/zone) at a time
    per_zone: bool = False
    #: nodes of one zone in a wave at most: "N" or "P%" of that zone's nodes; "" for no such cap
    zone_budget: str = ""
    #: "N/PERIOD": at most N nodes start per PERIOD; "" for no rate
    rate: str = ""
    #: seconds the workloads that lost pods must stay fully available after a wave, before the next one
    soak: float = 0.0
    order: NodeOrder = NodeOrder.LEAST_LOADED
    #: "[DAYS] START-END [ZONE]" each; none: always open
    windows: tuple[str, ...] = ()
    at_window_end: AtWindowEnd = AtWindowEnd.FINISH
    #: commands run with ``sh -c`` before and after each node (ROLLOUT_PLUS_NODE, ROLLOUT_PLUS_JOB set)
    pre_hook: str = ""
    post_hook: str = ""
    #: seconds a hook may run before it counts as failed
    hook_timeout: float = 600.0
    on_hook_failure: OnHookFailure = OnHookFailure.STOP
    #: labels set on a node before its cordon, and after its drain: "key=value", or "key-" to remove one
    pre_labels: tuple[str, ...] = ()
    post_labels: tuple[str, ...] = ()
    on_blocked: OnBlocked = OnBlocked.WAIT
    #: uncordon each node once its after-hook succeeded (False: leave it cordoned for someone else)
    uncordon: bool = True
    #: put a soft taint (rollout-plus.io/campaign, PreferNoSchedule) on every node still to drain, so that the
    #: pods evicted from a wave go to nodes done or outside the pool rather than to one next in line
    taint_pending: bool = True
    #: how each node is drained (``timeout`` is the per-node bound ``on_blocked`` acts on)
    drain: DrainOptions = DrainOptions()
    #: --plan: compute and emit the plan, change nothing
    plan_only: bool = False
    #: nodes finished before the job was interrupted (filled in by its resume, from its journal)
    done: tuple[str, ...] = ()
    #: nodes whose wave had started (pre-hook passed, cordoned) but that were not finished when the job was
    #: interrupted: their pre-hook and pre-labels are not run again (filled in by its resume)
    started: tuple[str, ...] = ()
    #: nodes a person asked to drain through a surge (``jobs surge``) that were not finished when the job was
    #: interrupted: the resumed job drains them with ``--surge`` from their start (filled in by its resume)
    surge_nodes: tuple[str, ...] = ()


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
    #: canary steps (rollout/canary/): go past the current step (``full``: past every step), abort, start again
    PROMOTE = "promote"
    ABORT = "abort"
    RETRY = "retry"


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
    #: promote: every remaining canary step, not only the current one
    full: bool = False
    drive: DriveOptions = field(default_factory=DriveOptions)

    @property
    def workload(self) -> str:
        if self.kind is ActionKind.APPLY and self.manifest is not None:
            return str((self.manifest.get("metadata") or {}).get("name", ""))
        return self.name

    @property
    def named_namespace(self) -> str | None:
        """The namespace the action names itself: ``-n``, else an applied manifest's ``metadata.namespace``.
        None: the connection's (``-n``, then the context's). Everyone who needs the workload's namespace (the
        job, its claims, its resume) asks here, so that they never disagree."""
        if self.namespace:
            return self.namespace
        if self.kind is ActionKind.APPLY and self.manifest is not None:
            given = (self.manifest.get("metadata") or {}).get("namespace")
            return str(given) if given else None
        return None

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
    campaign: CampaignJob | None = None
    drain: DrainJob | None = None
    restart: RestartJob | None = None
    rollout: RolloutAction | None = None
    version: int = SPEC_VERSION

    def __post_init__(self) -> None:
        given = {kind for kind in JobKind if getattr(self, kind.value, None) is not None}
        if given != {self.kind}:
            raise ValueError(f"a {self.kind.value} job needs exactly its own section, not {sorted(given)}")

    def as_dict(self) -> dict[str, Any]:
        return {f.name: encode_value(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: Any) -> JobSpec:
        """Decode a spec from JSON, checked first (``check_spec``): a ``SpecError`` names the field at fault."""
        check_spec(data)
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

    @classmethod
    def ended(cls, summary: str, *, ok: bool, cancelled: bool) -> JobResult:
        """How a job's body ended: succeeded; else cancelled if its cancel signal was set, failed if not."""
        if ok:
            return cls(state=JobState.SUCCEEDED, exit_code=EXIT_OK, summary=summary)
        state = JobState.CANCELLED if cancelled else JobState.FAILED
        return cls(state=state, exit_code=EXIT_FAILED, summary=summary)


# --- the schema of a spec as JSON --------------------------------------------------------------------------------
#
# A spec comes from the wire (the agent's ``submit``) and from the journal. Decoding takes JSON values as they
# are, so each is checked against its field's type and bounds first: a string where a list of nodes belongs
# would otherwise become one node per character, and a word where seconds belong would reach an engine.
# Kubernetes' own name and selector rules are the agent's to apply (``agent/request_schema.py``): this module
# may not import ``kube``.

#: the longest duration Go (and so kubectl) can express, in seconds; as ``kube.api_bounds`` (not importable here)
LONGEST_SECONDS = min((2**63 - 1) / 1e9, threading.TIMEOUT_MAX)
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
#: nodes one drain may name (a cluster has at most 5000); more are picked with a selector
MAX_NODES = 5000
#: a manifest as JSON; etcd refuses an object past 1.5 MiB, so a larger one could never be stored
MAX_MANIFEST_BYTES = 1536 * 1024
#: a string with no bound of its own (paths, contexts, selectors, images)
MAX_STRING = 4096


class SpecError(ValueError):
    """A job spec that does not decode: ``field`` says where (``drain.nodes[2]``), ``problem`` what is wrong."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True, kw_only=True)
class Bound:
    """What a field's value may be beyond its type: a range, a length, a count of items (and their own bound)."""

    low: float = -INT64_MAX
    high: float = INT64_MAX
    max_length: int = MAX_STRING
    max_items: int = 64
    items: Bound | None = None
    what: str = ""


_SECONDS = Bound(low=0, high=LONGEST_SECONDS, what="seconds")
_GRACE = Bound(low=-INT64_MAX, high=INT64_MAX, what="seconds (negative: each pod's own)")
_COUNT32 = Bound(low=0, high=INT32_MAX)
_COUNT64 = Bound(low=0, high=INT64_MAX)
_NAME = Bound(max_length=253)

#: per (class, field), where the default bound (an int64, a string of MAX_STRING, 64 items) does not fit
BOUNDS: dict[tuple[type, str], Bound] = {
    (Connection, "kubeconfig"): Bound(max_items=64, items=Bound(max_length=MAX_STRING, what="a file path")),
    (Connection, "context"): _NAME,
    (Connection, "namespace"): Bound(max_length=63),
    (Connection, "request_timeout"): _SECONDS,
    (DrainOptions, "grace_period"): _GRACE,
    (DrainOptions, "timeout"): _SECONDS,
    (DrainOptions, "skip_wait_for_delete_timeout"): _COUNT64,
    (DrainOptions, "chunk_size"): _COUNT64,
    (DrainOptions, "max_concurrent_evictions"): _COUNT32,
    (DrainOptions, "node_batch"): _COUNT32,
    (DrainOptions, "surge_max"): Bound(max_length=16),
    (DrainOptions, "surge_wait"): _SECONDS,
    (DrainJob, "nodes"): Bound(max_items=MAX_NODES, items=_NAME),
    (CampaignJob, "nodes"): Bound(max_items=MAX_NODES, items=_NAME),
    (CampaignJob, "done"): Bound(max_items=MAX_NODES, items=_NAME),
    (CampaignJob, "started"): Bound(max_items=MAX_NODES, items=_NAME),
    (CampaignJob, "surge_nodes"): Bound(max_items=MAX_NODES, items=_NAME),
    (CampaignJob, "budget"): Bound(max_length=16),
    (CampaignJob, "zone_budget"): Bound(max_length=16),
    (CampaignJob, "rate"): Bound(max_length=64),
    (CampaignJob, "soak"): _SECONDS,
    (CampaignJob, "windows"): Bound(max_items=64, items=Bound(max_length=128, what="a window")),
    (CampaignJob, "hook_timeout"): _SECONDS,
    (CampaignJob, "pre_labels"): Bound(max_items=64, items=Bound(max_length=317, what="a label")),
    (CampaignJob, "post_labels"): Bound(max_items=64, items=Bound(max_length=317, what="a label")),
    (RestartJob, "workload"): Bound(max_length=300),
    (RestartJob, "grace_period"): _GRACE,
    (RestartJob, "timeout"): _SECONDS,
    (DriveOptions, "timeout"): _SECONDS,
    (DriveOptions, "fail_after_restarts"): _COUNT32,
    (RolloutAction, "name"): _NAME,
    (RolloutAction, "namespace"): Bound(max_length=63),
    (RolloutAction, "manifest"): Bound(max_length=MAX_MANIFEST_BYTES),
    (RolloutAction, "images"): Bound(max_items=256),
    (RolloutAction, "replicas"): _COUNT32,
    (RolloutAction, "to_revision"): _COUNT64,
    (ev.ContainerImage, "container"): Bound(max_length=63),
    (JobSpec, "version"): Bound(low=1, high=SPEC_VERSION),
}

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def json_type(value: Any) -> str:
    """``value``'s type as JSON names it, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    return "an object"


def _shown(value: Any) -> str:
    """A value in a message: short, and quoted so that no control character reaches a log or a terminal."""
    text = json.dumps(value, ensure_ascii=True, default=str) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _has_control(text: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)


def check_value(value: Any, hint: Any, path: str, bound: Bound) -> None:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return
        options = [a for a in args if a is not type(None)]
        if len(options) != 1:  # no spec field is a union of two types; refuse rather than guess
            raise SpecError(path, "has a type this version cannot check")
        check_value(value, options[0], path, bound)
        return
    if origin is tuple:
        item_hint = typing.get_args(hint)[0]
        if not isinstance(value, list):
            raise SpecError(path, f"must be a list, not {json_type(value)} ({_shown(value)})")
        if len(value) > bound.max_items:
            raise SpecError(path, f"has {len(value)} items; at most {bound.max_items}")
        for index, item in enumerate(value):
            check_value(item, item_hint, f"{path}[{index}]", bound.items or Bound())
        return
    if origin is not None and issubclass(origin, Mapping):
        if not isinstance(value, dict):
            raise SpecError(path, f"must be an object, not {json_type(value)}")
        try:
            size = len(json.dumps(value, separators=(",", ":"), allow_nan=False))
        except ValueError as err:  # NaN or Infinity: no JSON reader but Python's takes them
            raise SpecError(path, "must not contain NaN or Infinity") from err
        if size > bound.max_length:
            raise SpecError(path, f"is {size} bytes as JSON; at most {bound.max_length}")
        return
    if hint is bool:
        if not isinstance(value, bool):
            raise SpecError(path, f"must be true or false, not {json_type(value)} ({_shown(value)})")
        return
    if hint is int or hint is float:
        _check_number(value, path, bound, integer=hint is int)
        return
    if hint is str:
        if not isinstance(value, str):
            raise SpecError(path, f"must be a string, not {json_type(value)} ({_shown(value)})")
        if len(value) > bound.max_length:
            raise SpecError(path, f"is {len(value)} characters long; at most {bound.max_length}")
        if _has_control(value):
            raise SpecError(path, f"must not contain control characters ({_shown(value)})")
        return
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if not isinstance(value, str) or value not in hint._value2member_map_:
            allowed = ", ".join(str(member.value) for member in hint)
            raise SpecError(path, f"must be one of {allowed}, not {_shown(value)}")
        return
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        check_fields(value, hint, path)
        return
    raise SpecError(path, "has a type this version cannot check")


def _check_number(value: Any, path: str, bound: Bound, *, integer: bool) -> None:
    kind = "an integer" if integer else "a number"
    if bound.what:
        kind = f"{kind} of {bound.what}"
    if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
        raise SpecError(path, f"must be {kind}, not {json_type(value)} ({_shown(value)})")
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(path, f"must be {kind}, not {_shown(value)}")
    if not bound.low <= value <= bound.high:
        low = int(bound.low) if float(bound.low).is_integer() else bound.low
        high = int(bound.high) if float(bound.high).is_integer() else bound.high
        raise SpecError(path, f"must be {kind} from {low} to {high}, not {_shown(value)}")


def check_fields(data: Any, cls: type, path: str) -> None:
    if not isinstance(data, dict):
        raise SpecError(path, f"must be an object, not {json_type(data)} ({_shown(data)})")
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise SpecError(f"{path}.{f.name}", "is required")
            continue
        check_value(data[f.name], hints[f.name], f"{path}.{f.name}", BOUNDS.get((cls, f.name), Bound()))
    # Fields this version does not know are ignored: a newer client may send them (PROTOCOL.md's rules).


def check_spec(data: Any, *, path: str = "spec") -> None:
    """Refuse, with a ``SpecError`` naming the field, a spec as JSON that does not decode to a runnable job."""
    if not isinstance(data, dict):
        raise SpecError(path, f"must be an object, not {json_type(data)} ({_shown(data)})")
    version = data.get("version", SPEC_VERSION)
    if isinstance(version, int) and not isinstance(version, bool) and version > SPEC_VERSION:
        raise SpecError(
            f"{path}.version",
            f"job spec version {version} is newer than this version understands ({SPEC_VERSION}); upgrade the agent",
        )
    check_fields(data, JobSpec, path)
    kind = JobKind(data["kind"])
    for other in JobKind:
        section = data.get(other.value)
        if other is kind and section is None:
            raise SpecError(f"{path}.{other.value}", f"is required: a {kind.value} job's own section")
        if other is not kind and section is not None:
            raise SpecError(f"{path}.{other.value}", f"must be absent or null in a {kind.value} job")
    if kind is JobKind.CAMPAIGN:
        _check_campaign(data["campaign"], f"{path}.campaign")
    elif kind is JobKind.DRAIN:
        drain = data["drain"]
        nodes, selector = drain.get("nodes") or [], drain.get("selector") or ""
        if not nodes and not selector:
            raise SpecError(f"{path}.drain.nodes", "a drain needs node names or a selector (drain.selector)")
        if nodes and selector:
            raise SpecError(f"{path}.drain", "give node names or a selector, not both (as the CLI refuses both)")
    elif kind is JobKind.RESTART:
        workload = data["restart"]["workload"]
        if workload.count("/") != 1 or not all(workload.split("/")):
            raise SpecError(f"{path}.restart.workload", f"must be KIND/NAME (deployment/web), not {_shown(workload)}")
    else:
        rollout = data["rollout"]
        action = ActionKind(rollout["kind"])
        if action is ActionKind.APPLY and not isinstance(rollout.get("manifest"), dict):
            raise SpecError(f"{path}.rollout.manifest", "is required by apply: the Deployment manifest")
        if action is not ActionKind.APPLY and not rollout.get("name"):
            raise SpecError(f"{path}.rollout.name", f"is required by {action.value}: the workload's name")


_CAMPAIGN_BUDGET = re.compile(r"[1-9]\d{0,8}|([1-9]\d?|100)%")


def _check_campaign(campaign: dict[str, Any], path: str) -> None:
    """What a campaign's own fields must be beyond their types. The windows, the rate and the labels are read
    by the campaign's body before any write (``campaign.settings``): this module may not import it."""
    if not campaign.get("nodes") and not campaign.get("selector"):
        raise SpecError(f"{path}.nodes", "a campaign needs node names or a selector (campaign.selector)")
    for name in ("budget", "zone_budget"):
        value = campaign.get(name, "1" if name == "budget" else "")
        if (value or name == "budget") and not _CAMPAIGN_BUDGET.fullmatch(value):
            raise SpecError(
                f"{path}.{name}", f"must be a count from 1 or a percentage from 1% to 100%, not {_shown(value)}"
            )
