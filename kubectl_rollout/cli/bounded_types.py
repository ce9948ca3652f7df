"""Click types for numbers and names, bounded as the API server bounds them.

Each refuses, as a usage error (exit 2) naming the option, what the API
server would refuse or what would mean nothing: a replica count past int32,
a negative revision, a node name that cannot exist. Nothing is sent first.
"""

from __future__ import annotations

from typing import Any

import click

from kubectl_rollout.kube.api_bounds import INT32_MAX, INT64_MAX
from kubectl_rollout.kube.names import name_problem

#: a replica count: int32, never negative (apps/v1 spec.replicas)
REPLICAS = click.IntRange(0, INT32_MAX)
#: a revision number (the deployment.kubernetes.io/revision annotation is an int64); 0: the default
REVISION = click.IntRange(0, INT64_MAX)
#: seconds a pod gets to stop (DeleteOptions.gracePeriodSeconds is an int64); negative: the pod's own
GRACE_PERIOD = click.IntRange(-INT64_MAX, INT64_MAX)
#: a count of things at once or a number of seconds the API takes as an int64, where 0 has its own meaning
NON_NEGATIVE_INT64 = click.IntRange(0, INT64_MAX)


def count(*, at_least: int) -> click.IntRange:
    """A count of things (nodes at a time, restarts): ``at_least`` up to int32's largest."""
    return click.IntRange(at_least, INT32_MAX)


class ObjectName(click.ParamType[str, Any]):
    """The name of an object: a DNS-1123 subdomain of at most 253 characters, as the API server requires."""

    name = "name"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        problem = name_problem(text)
        if problem is not None:
            shown = text if len(text) <= 60 else text[:57] + "..."
            self.fail(f"{shown!r} is not a valid name: {problem}", param, ctx)
        return text


OBJECT_NAME = ObjectName()
