"""Kubeconfig files for tests that need one naming a server of their own (a refusing, silent or fake one)."""

from __future__ import annotations

import json
from pathlib import Path


def write_kubeconfig(path: Path, *, contexts: dict[str, tuple[str, str | None]], current: str | None) -> Path:
    """A kubeconfig at ``path`` with one cluster, user (a token) and context per entry of ``contexts``:
    name -> (server, namespace or None); TLS not verified."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": f"{n}-cluster", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
            for n, (server, _) in contexts.items()
        ],
        "users": [{"name": f"{n}-user", "user": {"token": "t"}} for n in contexts],
        "contexts": [
            {
                "name": n,
                "context": {"cluster": f"{n}-cluster", "user": f"{n}-user", **({"namespace": ns} if ns else {})},
            }
            for n, (_, ns) in contexts.items()
        ],
    }
    if current:
        doc["current-context"] = current
    path.write_text(json.dumps(doc))
    return path
