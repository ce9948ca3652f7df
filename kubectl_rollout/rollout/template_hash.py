"""The ``pod-template-hash`` that names a managed workload's ReplicaSets (``NAME-HASH``).

The Deployment controller hashes the pod template with FNV-1a (32 bit), adds
the collision count when it is set, and spells the number with the
"safe" alphabet of apimachinery's rand.SafeEncodeString (no vowels, no
look-alikes), so names never spell words. We do the same over the
template's canonical JSON; the value differs from the controller's (which
hashes Go's printed struct), the shape and the collision handling do not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

#: apimachinery/pkg/util/rand: the characters SafeEncodeString maps onto
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
HASH_LABEL = "pod-template-hash"


def fnv1a_32(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value ^= byte
        value = (value * _FNV_PRIME) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in text)


def without_hash_label(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template as the user wrote it: the controller-added hash label removed."""
    copy = json.loads(json.dumps(template))
    labels = (copy.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(HASH_LABEL, None)
    return dict(copy)


def pod_template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    canonical = json.dumps(without_hash_label(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        # The controller writes the count's 4 bytes, little-endian, into the hash.
        canonical += collision_count.to_bytes(4, "little", signed=False)
    return safe_encode(str(fnv1a_32(canonical)))


def template_identity(template: Mapping[str, Any]) -> str:
    """What makes two pod templates the same template (EqualIgnoreHash): their canonical JSON, hash label aside.

    Compare only templates the API server has defaulted (a ReplicaSet's own,
    or a spec's through ``server_defaults``): a manifest that spells out a
    default, or leaves one out, is the same template.
    """
    canonical = json.dumps(without_hash_label(template), sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(canonical).hexdigest()[:20]
