"""The cluster screens' dialogs, driven headless with plain data: what each key answers, and bad input refused."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Select, Static

from kubectl_rollout.jobs.cluster_rows import RevisionRow
from kubectl_rollout.jobs.events.base import PodRef
from kubectl_rollout.jobs.events.drain import NodePlan, PodPlan, Verdict
from kubectl_rollout.jobs.events.rollout import ContainerImage
from kubectl_rollout.tui.screens.dialogs.drain_plan import DrainPlanDialog
from kubectl_rollout.tui.screens.dialogs.image_form import ImageForm
from kubectl_rollout.tui.screens.dialogs.revision import RevisionDialog

NO_ANSWER = object()


class DialogHost(App[None]):
    def __init__(self, dialog: ModalScreen[Any]) -> None:
        super().__init__()
        self.dialog = dialog
        self.answer: Any = NO_ANSWER

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self._answered)

    def _answered(self, answer: Any) -> None:
        self.answer = answer


def _drive(dialog: ModalScreen[Any], steps: Callable[[Pilot[Any]], Awaitable[None]]) -> Any:
    app = DialogHost(dialog)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await steps(pilot)
            await pilot.pause()

    asyncio.run(scenario())
    return app.answer


def _keys(*keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def press(pilot: Pilot[Any]) -> None:
        await pilot.press(*keys)

    return press


def _plan(*pods: PodPlan, errors: tuple[str, ...] = ()) -> NodePlan:
    return NodePlan(node="n1", cordoned=False, pods=pods, errors=errors)


def _pod(name: str, verdict: Verdict, reason: str = "") -> PodPlan:
    return PodPlan(pod=PodRef(namespace="shop", name=name, node="n1"), verdict=verdict, reason=reason)


def test_drain_plan_dialog_drains_on_y_and_says_why_for_the_highlighted_pod() -> None:
    plan = _plan(_pod("web-1", Verdict.EVICT), _pod("db-0", Verdict.BLOCKED, "PodDisruptionBudget shop/db allows 0"))
    seen: list[str] = []

    async def steps(pilot: Pilot[Any]) -> None:
        await pilot.press("down")
        await pilot.pause()
        seen.append(str(pilot.app.screen.query_one(".why", Static).render()))
        await pilot.press("y")

    assert _drive(DrainPlanDialog(plan), steps) is True
    assert seen == ["db-0: PodDisruptionBudget shop/db allows 0"]
    assert _drive(DrainPlanDialog(plan), _keys("n")) is False


def test_drain_plan_dialog_refuses_a_node_the_drain_would_refuse() -> None:
    plan = _plan(_pod("lonely", Verdict.ERROR, "cannot delete Pods declare no controller"))
    assert _drive(DrainPlanDialog(plan), _keys("y")) is NO_ANSWER  # y does nothing: the dialog stays
    errors = ("cannot delete Pods with local storage (use --delete-emptydir-data to override): shop/cache",)
    assert _drive(DrainPlanDialog(_plan(errors=errors)), _keys("y", "n")) is False


def test_revision_dialog_offers_every_revision_but_the_current_one() -> None:
    revisions = [
        RevisionRow(number=1, replica_set="web-a", images=("app=v1",)),
        RevisionRow(number=2, replica_set="web-b", images=("app=v2",)),
        RevisionRow(number=3, replica_set="web-c", images=("app=v3",), current=True),
    ]
    assert _drive(RevisionDialog("workload/web", revisions), _keys("enter")) == 2
    assert _drive(RevisionDialog("workload/web", revisions), _keys("down", "enter")) == 1
    assert _drive(RevisionDialog("workload/web", revisions), _keys("escape")) is None

    async def disabled(pilot: Pilot[Any]) -> None:
        options = pilot.app.screen.query_one(OptionList)
        assert [options.get_option_at_index(i).disabled for i in range(3)] == [True, False, False]
        await pilot.press("escape")

    _drive(RevisionDialog("workload/web", revisions), disabled)


@pytest.mark.parametrize(
    ("typed", "error"),
    [
        ("", "an image is a reference without spaces, e.g. registry.example/app:v2"),
        ("app v2", "an image is a reference without spaces, e.g. registry.example/app:v2"),
        ("img:v1", "app runs img:v1 already"),
    ],
)
def test_image_form_refuses_bad_input_and_stays_open(typed: str, error: str) -> None:
    said: list[str] = []

    async def steps(pilot: Pilot[Any]) -> None:
        pilot.app.screen.query_one("#image", Input).value = typed
        await pilot.press("enter")
        await pilot.pause()
        said.append(str(pilot.app.screen.query_one("#error", Static).render()))

    assert _drive(ImageForm("workload/web", ("app=img:v1",)), steps) is NO_ANSWER
    assert said == [error]


def test_image_form_sets_the_chosen_container() -> None:
    async def steps(pilot: Pilot[Any]) -> None:
        form = pilot.app.screen
        assert form.query_one("#image", Input).value == "img:v1"
        form.query_one("#container", Select).value = "sidecar"
        await pilot.pause()
        assert form.query_one("#image", Input).value == "proxy:v1"
        form.query_one("#image", Input).value = "proxy:v2"
        form.query_one("#image", Input).focus()
        await pilot.press("enter")

    answer = _drive(ImageForm("workload/web", ("app=img:v1", "sidecar=proxy:v1")), steps)
    assert answer == ContainerImage(container="sidecar", image="proxy:v2")
