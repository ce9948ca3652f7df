"""kubectl's global connection flags, and which kubeconfig files they name: plain data, no client."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class ConnectionSettings:
    """The global flags every command shares, as kubectl names them."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    #: seconds; 0 means no timeout, as for kubectl's --request-timeout
    request_timeout: float = 0.0


def kubeconfig_paths(explicit: str | None, environ: Mapping[str, str]) -> list[Path]:
    """The kubeconfig files kubectl would read, in precedence order."""
    if explicit:
        return [Path(explicit).expanduser()]
    listed = environ.get("KUBECONFIG", "")
    if listed:
        return [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]
