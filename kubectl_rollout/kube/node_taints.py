"""One taint of ours put on a node or taken off it, every other taint kept as it is.

A node's ``spec.taints`` is one list without a merge key: any patch of it replaces the whole list. So the
edit reads the node, changes only the entries of our key, and writes the list back in a patch that carries
the resourceVersion it read. If anyone wrote the node in between (a person's ``kubectl taint``, the node
lifecycle controller's not-ready taint, kwok's heartbeat), the API server answers 409 instead of losing that
change, and the edit starts again from a fresh read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.serialization import to_plain

#: a node written this many times in a row between our read and our write: give up (something is looping)
MAX_CONFLICTS = 20

PlainTaint = Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"

    def as_plain(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}


def _is_ours(entry: PlainTaint, *, key: str, effect: str) -> bool:
    return entry.get("key") == key and entry.get("effect") == effect


def with_taint(taints: Sequence[PlainTaint], taint: Taint) -> list[dict[str, Any]] | None:
    """``taints`` with ``taint`` in it (an entry of its key and effect with another value takes its value);
    None when it is there already. Every other entry is kept, in its place."""
    edited: list[dict[str, Any]] = []
    found = False
    for entry in taints:
        if _is_ours(entry, key=taint.key, effect=taint.effect):
            if found:
                continue  # a duplicate the API server would refuse: keep one
            found = True
            if entry.get("value") == taint.value:
                edited.append(dict(entry))
                continue
            edited.append(taint.as_plain())
        else:
            edited.append(dict(entry))
    if not found:
        edited.append(taint.as_plain())
    return None if [dict(e) for e in taints] == edited else edited


def without_taint(
    taints: Sequence[PlainTaint], *, key: str, effect: str, value: str | None = None
) -> list[dict[str, Any]] | None:
    """``taints`` without the entries of ``key`` and ``effect`` (of that ``value`` only, when given); None when
    there is none. Every other entry is kept, in its place."""
    edited = [
        dict(e)
        for e in taints
        if not (_is_ours(e, key=key, effect=effect) and (value is None or e.get("value") == value))
    ]
    return None if len(edited) == len(taints) else edited


def taints_of(node: Any) -> list[dict[str, Any]]:
    """A node's taints as the API server writes them (``timeAdded`` of a NoExecute taint included)."""
    return list(to_plain(node.spec.taints or [])) if node.spec is not None else []


def edit_taints(
    cluster: Cluster, node: str, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None]
) -> bool:
    """Apply ``edit`` to ``node``'s taints (None from it: nothing to change); True when the node changed, False
    when it had nothing to change or is gone. A conflict reads the node again and edits again."""
    for _attempt in range(MAX_CONFLICTS):
        try:
            fresh = call_with_retry(cluster.core.read_node, node)
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        edited = edit(taints_of(fresh))
        if edited is None:
            return False
        body = {"metadata": {"resourceVersion": fresh.metadata.resource_version}, "spec": {"taints": edited}}
        try:
            call_with_retry(cluster.core.patch_node, node, body)
        except ApiException as err:
            if err.status == 409:
                continue  # written meanwhile: what we read is stale
            if err.status == 404:
                return False
            raise
        return True
    raise UserFacingError(f"node/{node} changed {MAX_CONFLICTS} times while its taints were being edited; try again")
