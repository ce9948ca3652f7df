"""The eviction-based restart's human output: what it will do, and how to go on when it stops early."""

from __future__ import annotations

import io

from kubectl_rollout.cli.restart_output import restart_printer
from kubectl_rollout.jobs.events import restart as restart_events
from kubectl_rollout.jobs.events.base import Event, PodRef
from kubectl_rollout.jobs.events.stream import EventStream

POD = PodRef(namespace="shop", name="web-1", node="node-a")


def render(*events: Event) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    stream = EventStream("job", restart_printer(out, err))
    for event in events:
        stream.emit(event)
    return out.getvalue(), err.getvalue()


def test_a_full_restart_names_the_order_and_each_replacement() -> None:
    out, err = render(
        restart_events.RestartPlanned(workload="deployment/web", namespace="shop", pods=("web-1", "web-2")),
        restart_events.PodReplaced(pod=POD, index=1, total=2, seconds=1.25),
        restart_events.RestartFinished(workload="deployment/web", namespace="shop", replaced=2),
    )
    assert out.splitlines() == [
        "restarting deployment/web by eviction, one pod at a time: web-1, web-2",
        "pod/web-1 replaced (1/2, 1.2s)",
        "deployment/web restarted: 2 pods replaced",
    ]
    assert err == ""


def test_a_restart_that_stops_after_replacing_pods_says_how_to_resume() -> None:
    _, err = render(
        restart_events.RestartFinished(
            workload="deployment/web", namespace="shop", replaced=1, failure="cancelled", resumable=True
        ),
    )
    assert err.splitlines() == [
        "error: deployment/web restart stopped after 1 pod: cancelled",
        "the pods replaced so far are recorded on deployment/web: continue with "
        "kubectl rollout-plus restart deployment/web -n shop --resume",
    ]


def test_a_restart_that_replaced_nothing_does_not_offer_to_resume() -> None:
    _, err = render(restart_events.RestartFinished(workload="sts/db", namespace="shop", replaced=0, failure="timeout"))
    assert "--resume" not in err


def test_resuming_counts_the_pods_already_replaced() -> None:
    out, _ = render(
        restart_events.RestartPlanned(
            workload="deployment/web", namespace="shop", pods=("web-3",), resumed=True, already_replaced=2
        ),
    )
    assert out == "resuming the restart of deployment/web by eviction, one pod at a time: web-3 (2 already replaced)\n"


def test_starting_over_warns_that_an_earlier_restart_was_unfinished() -> None:
    _, err = render(
        restart_events.RestartPlanned(
            workload="deployment/web", namespace="shop", pods=("web-1",), supersedes_unfinished=True
        ),
    )
    assert "an earlier restart of deployment/web stopped unfinished; this one starts over" in err
