"""Workload kinds as kubectl reads them on a command line: ``deployment/web``, ``deploy/web``, ``sts/db``."""

from __future__ import annotations

#: kubectl's names for each kind: singular, plural and short name
_ALIASES = {
    "deployment": "Deployment",
    "deployments": "Deployment",
    "deploy": "Deployment",
    "statefulset": "StatefulSet",
    "statefulsets": "StatefulSet",
    "sts": "StatefulSet",
    "daemonset": "DaemonSet",
    "daemonsets": "DaemonSet",
    "ds": "DaemonSet",
}


def workload_kind(text: str) -> str | None:
    """The kind ("Deployment", "StatefulSet", "DaemonSet") that ``text`` names, group suffix allowed
    (``deployments.apps``), any case; None for anything else."""
    return _ALIASES.get(text.lower().split(".")[0])
