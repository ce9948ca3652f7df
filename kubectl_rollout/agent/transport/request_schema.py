"""The one schema every request's params are checked against before the agent acts on them.

Each method lists its params: type, bounds, default. A value that is not what
its param takes is refused with ``INVALID_PARAMS`` naming the param
(``from_seq must be an integer from 1 to ...``), so that nothing the client got
wrong reaches a job, the journal or the cluster, and nothing it got wrong is
answered as the agent's own failure (``INTERNAL_ERROR``) with a traceback in the
log. Names are checked as the API server checks them (a node's name is a
DNS-1123 subdomain of at most 253 characters, a namespace a DNS-1123 label of at
most 63), selectors with its grammar. Params a method does not know are
ignored: a newer client may send them (PROTOCOL.md's rules for versions).

A job spec's types and bounds are ``kubectl_rollout.jobs.spec``'s (``check_spec``); the
Kubernetes rules on its names and selectors are added here, where ``kube`` may be imported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_rollout.agent.protocol import ErrorCode, Method, ProtocolError
from kubectl_rollout.jobs.spec import (
    INT32_MAX,
    INT64_MAX,
    MAX_NODES,
    MAX_STRING,
    Bound,
    Connection,
    DrainOptions,
    JobSpec,
    SpecError,
    check_fields,
    check_value,
    json_type,
)
from kubectl_rollout.kube.label_selectors import validate_label_selector
from kubectl_rollout.kube.names import name_problem
from kubectl_rollout.kube.workload_kinds import workload_kind

#: a namespace: a DNS-1123 label (IsDNS1123Label)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_LABEL = 63
#: a job id: ours are 12 hex digits; anything of this shape is looked up (and may be NO_SUCH_JOB)
_JOB_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
#: `--surge-max`: a count or a percentage
_SURGE_MAX = re.compile(r"^\d{1,10}%?$")
#: jobs one ``list`` may ask for
MAX_LIST = 1000
#: pods named per ReplicaSet in one ``pods`` answer
MAX_PODS = 1000
#: the name a client gives itself in hello (it is logged, quoted)
MAX_CLIENT_NAME = 64

#: (value, param name) → the value to use; raises ProtocolError(INVALID_PARAMS)
Check = Callable[[Any, str], Any]


def invalid(message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID_PARAMS, message)


def _spec_error(err: SpecError) -> ProtocolError:
    return invalid(str(err))


def integer(low: int, high: int) -> Check:
    def check(value: Any, name: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            shown = json_type(value) if not isinstance(value, int | float) or isinstance(value, bool) else value
            raise invalid(f"{name} must be an integer from {low} to {high}, not {shown}")
        return value

    return check


def boolean(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise invalid(f"{name} must be true or false, not {json_type(value)}")
    return value


def text(max_length: int) -> Check:
    def check(value: Any, name: str) -> str:
        try:
            check_value(value, str, name, Bound(max_length=max_length))
        except SpecError as err:
            raise _spec_error(err) from err
        return str(value)

    return check


def job_id(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise invalid(f"{name} must be a job id (a string), not {json_type(value)}")
    if not _JOB_ID.match(value):
        raise invalid(f"{name} must be a job id: letters, digits, '.', '_' and '-', at most 64 characters")
    return value


def object_name(value: Any, name: str) -> str:
    """An object's name (a node, a workload): a DNS-1123 subdomain of at most 253 characters."""
    if not isinstance(value, str):
        raise invalid(f"{name} must be a name (a string), not {json_type(value)}")
    problem = name_problem(value)
    if problem is not None:
        raise invalid(f"{name} is not a valid name: {problem}")
    return value


def namespace_name(value: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise invalid(f"{name} must be a namespace (a string), not {json_type(value)}")
    if len(value) > _MAX_LABEL or not _DNS_LABEL.match(value):
        raise invalid(
            f"{name} is not a valid namespace: lowercase letters, digits and '-', starting and ending with a "
            f"letter or digit, at most {_MAX_LABEL} characters (RFC 1123 label)"
        )
    return value


def selector(value: Any, name: str) -> str:
    found: str = text(MAX_STRING)(value, name)
    if found:
        try:
            validate_label_selector(found)
        except ValueError as err:
            raise invalid(f"{name} is not a valid label selector: {err}") from err
    return found


def node_names(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise invalid(f"{name} must be a non-empty list of node names, not {json_type(value)}")
    if len(value) > MAX_NODES:
        raise invalid(f"{name} has {len(value)} nodes; at most {MAX_NODES} (pick more with a selector)")
    return [object_name(item, f"{name}[{index}]") for index, item in enumerate(value)]


def connection(value: Any, name: str) -> dict[str, Any]:
    """Which cluster, as a job spec names it; kept as JSON (the cluster methods decode it themselves)."""
    if not isinstance(value, dict):
        raise invalid(f"{name} (kubeconfig, context, namespace) is required: which cluster? not {json_type(value)}")
    try:
        check_fields(value, Connection, name)
    except SpecError as err:
        raise _spec_error(err) from err
    namespace_name(value.get("namespace"), f"{name}.namespace")
    return value


def drain_options(value: Any, name: str) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        check_fields(value, DrainOptions, name)
    except SpecError as err:
        raise _spec_error(err) from err
    selector(value.get("pod_selector", ""), f"{name}.pod_selector")
    surge_max = value.get("surge_max", DrainOptions.surge_max)
    if not _SURGE_MAX.match(surge_max):
        raise invalid(f"{name}.surge_max must be a count or a percentage (2, 50%)")
    return dict(value)


def spec(value: Any, name: str) -> JobSpec:
    """A job spec: its types and bounds (``check_spec``), then Kubernetes' rules on its names."""
    try:
        decoded = JobSpec.from_dict(value)
    except SpecError as err:
        raise _spec_error(err) from err
    connection(value["connection"], f"{name}.connection")
    if decoded.drain is not None:
        for index, node in enumerate(decoded.drain.nodes):
            object_name(node, f"{name}.drain.nodes[{index}]")
        selector(decoded.drain.selector, f"{name}.drain.selector")
        drain_options(value["drain"].get("options"), f"{name}.drain.options")
    if decoded.campaign is not None:
        # Its budget, rate, windows and labels are the campaign's body's to read, before its first write.
        for field_name in ("nodes", "done", "started", "surge_nodes"):
            for index, node in enumerate(getattr(decoded.campaign, field_name)):
                object_name(node, f"{name}.campaign.{field_name}[{index}]")
        selector(decoded.campaign.selector, f"{name}.campaign.selector")
        drain_options(value["campaign"].get("drain"), f"{name}.campaign.drain")
    if decoded.restart is not None:
        kind, _, workload = decoded.restart.workload.partition("/")
        if workload_kind(kind) is None:
            raise invalid(f"{name}.restart.workload must name a deployment, statefulset or daemonset, not {kind!r}")
        object_name(workload, f"{name}.restart.workload")
    if decoded.rollout is not None:
        if decoded.rollout.name:
            object_name(decoded.rollout.name, f"{name}.rollout.name")
        namespace_name(decoded.rollout.namespace, f"{name}.rollout.namespace")
    return decoded


@dataclass(frozen=True)
class Param:
    name: str
    check: Check
    required: bool = False
    default: Any = None


def _job() -> tuple[Param, ...]:
    return (Param("job", job_id, required=True),)


_CLUSTER = Param("connection", connection, required=True)
_WORKLOAD = Param("workload", object_name, required=True)
_NAMESPACE = Param("namespace", namespace_name)

#: every method's params; a method missing here is unknown (METHOD_NOT_FOUND)
PARAMS: Mapping[str, tuple[Param, ...]] = {
    Method.HELLO: (
        Param("protocol", integer(1, INT32_MAX), required=True),
        Param("oldest", integer(1, INT32_MAX)),
        Param("client", text(MAX_CLIENT_NAME), default="?"),
    ),
    Method.SUBMIT: (Param("spec", spec, required=True),),
    Method.LIST: (Param("limit", integer(1, MAX_LIST), default=100),),
    Method.SHOW: _job(),
    Method.CANCEL: _job(),
    Method.PAUSE: _job(),
    Method.RESUME: _job(),
    Method.SURGE: (*_job(), Param("nodes", node_names, required=True)),
    Method.ATTACH: (
        *_job(),
        Param("from_seq", integer(1, INT64_MAX), default=1),
        Param("follow", boolean, default=True),
        Param("coalesce", boolean, default=False),
    ),
    Method.SHUTDOWN: (Param("force", boolean, default=False),),
    Method.NODES: (
        _CLUSTER,
        Param("selector", selector, default=""),
        Param("plan", boolean, default=False),
        Param("options", drain_options),
    ),
    Method.PLAN: (_CLUSTER, Param("nodes", node_names, required=True), Param("options", drain_options)),
    Method.CORDON: (_CLUSTER, Param("node", object_name, required=True)),
    Method.UNCORDON: (_CLUSTER, Param("node", object_name, required=True)),
    Method.WORKLOADS: (_CLUSTER, _NAMESPACE),
    Method.HISTORY: (_CLUSTER, _WORKLOAD, _NAMESPACE),
    Method.PODS: (_CLUSTER, _WORKLOAD, _NAMESPACE, Param("limit", integer(0, MAX_PODS), default=20)),
    Method.ABORT: (_CLUSTER, _WORKLOAD, _NAMESPACE),
}


def validate(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` checked against ``method``'s schema, defaults filled in; ProtocolError if they do not fit.

    A param given as ``null`` is checked like any value: only those that may be null (a namespace, drain
    options) take it.
    """
    schema = PARAMS.get(method)
    if schema is None:
        raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, f"no method {method!r}; the agent knows {', '.join(Method)}")
    checked: dict[str, Any] = {}
    for param in schema:
        if param.name not in params:
            if param.required:
                raise invalid(f"{method} needs {param.name}")
            if param.default is not None:
                checked[param.name] = param.default
            continue
        checked[param.name] = param.check(params[param.name], param.name)
    if method == Method.HELLO:
        checked.setdefault("oldest", checked["protocol"])
    return checked
