"""``s`` on the Drain screen starts the same drain again with --surge: the spec it submits."""

from __future__ import annotations

import pytest

from kubectl_rollout.jobs.spec import (
    ActionKind,
    Connection,
    DrainJob,
    DrainOptions,
    JobKind,
    JobSpec,
    RolloutAction,
)
from kubectl_rollout.tui.drain_with_surge import with_surge

CONNECTION = Connection(kubeconfig=("/k",), context="prod", namespace="shop")


@pytest.mark.parametrize(
    "drain",
    [
        pytest.param(DrainJob(nodes=("n1", "n2"), options=DrainOptions(timeout=300, force=True)), id="nodes"),
        pytest.param(DrainJob(selector="pool=a", options=DrainOptions(node_batch=2, surge_max="1")), id="selector"),
    ],
)
def test_the_same_drain_with_surge_and_nothing_else_changed(drain: DrainJob) -> None:
    spec = JobSpec(kind=JobKind.DRAIN, connection=CONNECTION, drain=drain)
    again = with_surge(JobSpec.from_dict(spec.as_dict()))
    assert again.drain is not None
    assert again.drain.options.surge is True
    assert again.drain.options == DrainOptions(**{**drain.options.__dict__, "surge": True})
    assert (again.kind, again.connection, again.drain.nodes, again.drain.selector) == (
        JobKind.DRAIN,
        CONNECTION,
        drain.nodes,
        drain.selector,
    )


def test_a_job_that_is_no_drain_is_refused() -> None:
    spec = JobSpec(
        kind=JobKind.ROLLOUT, connection=CONNECTION, rollout=RolloutAction(kind=ActionKind.PAUSE, name="web")
    )
    with pytest.raises(ValueError, match="no drain"):
        with_surge(spec)
